/* A run's profile: the hardware counters of its kernels, replayed once more after its
 * timed batches under NVIDIA's profiler, so that a figure comes with its mechanism
 * (sectors per request, bank conflicts, occupancy, DRAM bytes). Plain data and the one
 * table of metrics: each friendly name beside NVIDIA's metric, which a backend asks the
 * profiler for and the API shows. Knows no profiler and no JSON. */
#ifndef GPULAB_PROFILE_H
#define GPULAB_PROFILE_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a job asks for ("profile" in its params). */
enum exp_profile_mode {
  EXP_PROFILE_OFF,
  EXP_PROFILE_COUNTERS, /* true or "counters": each run's kernels' counters */
  EXP_PROFILE_FULL,     /* "full": the counters and Nsight Compute's report per run */
};

/* The counters of one kernel, by index into exp_profile_metrics. */
enum exp_profile_metric {
  EXP_METRIC_DURATION_NS,
  EXP_METRIC_DRAM_READ_BYTES,
  EXP_METRIC_DRAM_WRITE_BYTES,
  EXP_METRIC_DRAM_PEAK_PCT,
  EXP_METRIC_L2_HIT_PCT,
  EXP_METRIC_LOAD_SECTORS,
  EXP_METRIC_LOAD_REQUESTS,
  EXP_METRIC_STORE_SECTORS,
  EXP_METRIC_STORE_REQUESTS,
  EXP_METRIC_SHARED_LOAD_CONFLICTS,
  EXP_METRIC_SHARED_STORE_CONFLICTS,
  EXP_METRIC_SHARED_LOAD_REQUESTS,
  EXP_METRIC_SHARED_STORE_REQUESTS,
  EXP_METRIC_ACHIEVED_OCCUPANCY_PCT,
  EXP_METRIC_THEORETICAL_OCCUPANCY_PCT,
  EXP_METRIC_SM_THROUGHPUT_PCT,
  EXP_METRIC_FP32_FLOPS,
  EXP_METRIC_TENSOR_PIPE_PCT,
  EXP_METRIC_COUNT
};

/* One metric: the API's name, NVIDIA's (Nsight Compute's and CUPTI's name for the
 * same counter or formula, to look up in their documentation), its unit, and one line
 * on what it says. Static. */
struct exp_profile_metric_def {
  const char *name;   /* "dram_bytes_read" */
  const char *nvidia; /* "dram__bytes_read.sum" */
  const char *unit;   /* "bytes", "%", "ns", "sectors", "requests", "conflicts", "flops" */
  const char *what;
};
extern const struct exp_profile_metric_def exp_profile_metrics[EXP_METRIC_COUNT];

/* A run's kernels kept (a cub or best run launches two or three); more are counted in
 * n_kernels_seen. */
#define EXP_PROFILE_MAX_KERNELS 4

struct exp_profile_kernel {
  char name[64];
  int grid[3], block[3];
  /* NaN: not read (the profiler or the device lacks the metric). */
  double value[EXP_METRIC_COUNT];
  /* What limits the theoretical occupancy (occupancy.h's limiter), or "" when not
   * known. */
  char occupancy_limiter[16];
};

/* A run's profile. requested false: the job did not ask (no "profile" in the run). */
struct exp_profile {
  bool requested;
  bool available;   /* false: reason says why this run has no counters */
  char reason[192]; /* e.g. the CPU backend has no hardware counters */
  /* The replay's conditions, so a reader knows how the counters relate to the timed
   * run: SM clocks locked to base (Nsight Compute's default) or free, caches flushed
   * before each pass or not. */
  bool clocks_locked, caches_flushed;
  int n_kernels, n_kernels_seen;
  struct exp_profile_kernel kernels[EXP_PROFILE_MAX_KERNELS];
};

/* The mode's name in a job's params: "counters" or "full"; NULL for OFF. */
const char *exp_profile_mode_name(enum exp_profile_mode mode);
/* Marks p requested and unavailable, reason copied. */
void exp_profile_unavailable(struct exp_profile *p, const char *reason);

#ifdef __cplusplus
}
#endif
#endif
