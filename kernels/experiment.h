/* The experiments of the lecture as plain C data: what a job asks for (its spec)
 * and what running it produced (its result). Shared by the JSON codec (api/), the
 * engine (server/) and the backends (kernels/); knows neither JSON, HTTP nor CUDA. */
#ifndef GPULAB_EXPERIMENT_H
#define GPULAB_EXPERIMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum exp_type {
  EXP_TRANSPOSE,
  EXP_GEMM,
  EXP_STENCIL,
  EXP_PIPELINE,
  EXP_TYPE_COUNT
};

/* Variants, numbered per type in their canonical ("all") order. */
/* The lecture's variants, then each job's `best` (and gemm's `tf32`), appended so
 * that the lecture's numbering stays. */
enum exp_transpose_variant {
  TRANSPOSE_NAIVE, TRANSPOSE_SHARED32, TRANSPOSE_PADDED33, TRANSPOSE_COPY, TRANSPOSE_BEST
};
enum exp_gemm_variant { GEMM_NAIVE, GEMM_TILED, GEMM_CUBLAS, GEMM_BEST, GEMM_TF32 };
enum exp_stencil_variant { STENCIL_NAIVE, STENCIL_SHARED, STENCIL_BEST };

#define EXP_MAX_VARIANTS 8   /* variants of one type, also runs of one job */
#define EXP_MAX_STREAM_COUNTS 8
#define EXP_MAX_STREAMS 32   /* largest stream count a pipeline run may use */
#define EXP_MAX_BATCHES 100

/* Order of variants across batches. ALTERNATING (the default of every type, "order":
 * "interleaved"): one timed window around all runs, batch b over the runs forwards
 * when b is even, backwards when odd, so that drift (clocks, heat, other tenants)
 * falls on every variant alike. SEQUENTIAL ("order": "sequential", how the lecture
 * timed transpose and GEMM): one window per run, all its batches in a row. */
enum exp_order { EXP_ORDER_SEQUENTIAL, EXP_ORDER_ALTERNATING };

/* Where one input of a job comes from: generated from a seed, an uploaded buffer,
 * or another job's output. */
enum exp_input_kind { EXP_INPUT_SEED, EXP_INPUT_BUFFER, EXP_INPUT_JOB };
struct exp_input {
  enum exp_input_kind kind;
  uint64_t value; /* the seed, buffer id or job id */
};
#define EXP_MAX_INPUTS 2 /* slot 0: a (transpose, gemm) or x (stencil, pipeline); 1: gemm's b */

/* A tensor shape: 1-D (dims[0]) or 2-D (rows, columns). */
struct exp_shape {
  int ndim;
  int64_t dims[2];
};

/* Bits of exp_spec.dims_given: which size params the request set explicitly. */
#define EXP_DIM_M 1u
#define EXP_DIM_N 2u
#define EXP_DIM_K 4u
#define EXP_DIM_CHUNK 8u

struct exp_timing_params {
  int warmup;  /* untimed launches per variant before the batches (graph: launches
                  of the captured graph, each of reps kernels) */
  int batches; /* timed samples; each sample is one batch's mean per launch */
  int reps;    /* launches per batch */
};

/* When a run's batches stop. max_noise 0 (the default): after timing.batches, the
 * lecture's fixed count. max_noise > 0: once at least min_samples (and 2) samples
 * have a relative stdev (stdev / mean) under max_noise, or the run's timed batches
 * took max_time_s, or EXP_MAX_BATCHES samples were taken (exp_timing_stop). */
struct exp_stop_params {
  int min_samples;   /* 0: timing.batches */
  double max_noise;  /* relative stdev, 0..1; 0 = off */
  double max_time_s; /* wall seconds of one run's timed batches; 0 = no limit */
};

struct exp_spec {
  enum exp_type type;
  uint64_t seed; /* default seed of every input given no other source */
  struct exp_input inputs[EXP_MAX_INPUTS]; /* SEED inputs use gen.h with value as seed */
  unsigned dims_given; /* EXP_DIM_* */
  bool graph;          /* time the reps of a batch as one captured CUDA Graph */
  bool fault;          /* tests (gpulabd --allow-fault-injection): lose the device */
  struct exp_timing_params timing;
  struct exp_stop_params stop;
  enum exp_order order; /* exp_spec_default: exp_type_order(type) */
  bool cold;            /* flush the L2 before every timed launch (kernel experiments) */
  int n_variants;                     /* transpose/gemm/stencil: runs in this order */
  int variants[EXP_MAX_VARIANTS];     /* values of the type's variant enum */
  union {
    struct { int m, n; } transpose;               /* A is m x n, B = A^T is n x m */
    struct { int m, n, k; } gemm;                 /* C[m,n] = A[m,k] B[k,n] */
    struct { int n, radius; } stencil;            /* y[i] = sum x[i-r..i+r] / (2r+1) */
    struct {
      int chunk, chunks, terms;
      int n_stream_counts;
      int stream_counts[EXP_MAX_STREAM_COUNTS];   /* one run per entry */
    } pipeline;
  } u;
};

/* Inputs: how many slots a type has and their names ("a", "b", "x"). */
int exp_input_count(enum exp_type type);
const char *exp_input_name(enum exp_type type, int slot);
/* The shape spec's dims give input slot, and the output (the first run's). */
void exp_input_shape(const struct exp_spec *spec, int slot, struct exp_shape *shape);
void exp_output_shape(const struct exp_spec *spec, struct exp_shape *shape);
/* Takes spec's dims from the shape of an input given as data (a buffer or a job's
 * output). Returns 0, or -1 with a message naming both shapes when the shape does
 * not fit the job or disagrees with a dim the request gave (or another input). */
int exp_spec_fit_input(struct exp_spec *spec, int slot, const struct exp_shape *shape,
                       char *msg, size_t msg_len);
/* "(4096, 1024)" or "(1000,)", as NumPy writes shapes. */
void exp_shape_format(const struct exp_shape *shape, char *buf, size_t len);
int64_t exp_shape_count(const struct exp_shape *shape);

/* Names and defaults. Lookups return NULL / -1 for unknown input. */
const char *exp_type_name(enum exp_type type);
int exp_type_from_name(const char *name); /* -1 if unknown */
int exp_variant_count(enum exp_type type); /* 0 for pipeline (runs are stream counts) */
const char *exp_variant_name(enum exp_type type, int variant);
int exp_variant_from_name(enum exp_type type, const char *name); /* -1 if unknown */
enum exp_order exp_type_order(enum exp_type type); /* ALTERNATING for every type */

/* Fills spec with the lecture's defaults for type (all variants). Cannot fail. */
void exp_spec_default(enum exp_type type, struct exp_spec *spec);

/* Bytes of device (or, on the CPU, host) memory one job of this spec needs at once:
 * its inputs, one output per run and the job's output, and the tf32 variant's copy
 * of B (transposed for wgmma). Library workspaces and the pipeline's pinned host
 * copies are not counted. */
uint64_t exp_spec_bytes(const struct exp_spec *spec);

/* Work counted for a run's figure: bytes moved (transpose, stencil, pipeline) or
 * floating-point operations (gemm). The figure is work / median time. */
double exp_spec_work(const struct exp_spec *spec);
const char *exp_figure_unit(enum exp_type type); /* "GB/s" or "GFLOP/s" */

/* Both counts behind a run's figure, so a student sees what the figure divides:
 * transpose 8mn bytes and no flops; gemm 2mnk flops and the minimal bytes
 * 4(mk + kn + mn); stencil 8n bytes and (2r + 1)n adds; pipeline the bytes moved
 * (8 chunk chunks) and terms x n sin terms. counted says so in words (static). */
struct exp_work {
  double bytes, flops;
  const char *counted;
};
void exp_spec_work_counts(const struct exp_spec *spec, struct exp_work *work);

/* Runs of a job (variants, or pipeline stream-count entries) and run i's label
 * ("padded33", "streams=3", "best", "best_graph"), as both backends name them. */
int exp_run_count(const struct exp_spec *spec);
void exp_run_label(const struct exp_spec *spec, int i, char *buf, size_t len);

/* ---- the pipeline's plans ---- */

/* Stream-count entries that are not counts: "best" in the request's streams asks for
 * both, the best overlap the copy engines allow (chunking and streams chosen from
 * the total size, issued chunk by chunk) and the same pass as one CUDA Graph. */
#define EXP_STREAMS_BEST 0
#define EXP_STREAMS_BEST_GRAPH (-1)
#define EXP_BEST_CHUNK_MIN_BYTES (1 << 20)  /* best's chunks: total / 24, clamped */
#define EXP_BEST_CHUNK_MAX_BYTES (16 << 20)
#define EXP_BEST_STREAMS 4

/* How one pass of a pipeline run moves the input: total floats in chunks of chunk
 * floats (the last may be shorter), chunk c on stream c % streams; issued op by op
 * over all chunks (the lecture's breadth-first order) or chunk by chunk
 * (depth_first: chunk c's download and chunk c+1's upload can use both copy
 * engines at once); graph: captured once, replayed per pass. */
struct exp_pipeline_plan {
  int64_t total, chunk;
  int chunks, streams;
  bool depth_first, graph, best;
};
/* The plan of stream-count entry `entry` (a count, or EXP_STREAMS_BEST*) of spec.
 * Cannot fail; a total of 0 gives 0 chunks. */
void exp_pipeline_plan(const struct exp_spec *spec, int entry, struct exp_pipeline_plan *plan);
/* Floats in chunk c of plan. */
int64_t exp_pipeline_chunk_len(const struct exp_pipeline_plan *plan, int c);

/* ---- results ---- */

/* A device's ceilings, measured once at start-up (backend_measure_ceilings): what
 * a run's figure is compared with. GB/s count bytes read + written (the pinned
 * ones: bytes moved over the bus); 0 = not measured. */
struct exp_ceilings {
  double copy_gbps;    /* device-to-device copy */
  double sgemm_gflops; /* cuBLAS SGEMM, FP32, TF32 off */
  double tf32_gflops;  /* cuBLAS SGEMM with CUBLAS_TF32_TENSOR_OP_MATH */
  double h2d_gbps, d2h_gbps; /* pinned host <-> device, one direction at a time */
  double bidir_gbps;   /* both directions at once, on two streams: bytes both ways / t */
};

/* NVML's clock-event (throttle) reason bits, as nvml.h numbers them. */
#define EXP_CLOCK_GPU_IDLE 0x1ull
#define EXP_CLOCK_APPLICATIONS_CLOCKS 0x2ull
#define EXP_CLOCK_SW_POWER_CAP 0x4ull
#define EXP_CLOCK_HW_SLOWDOWN 0x8ull
#define EXP_CLOCK_SYNC_BOOST 0x10ull
#define EXP_CLOCK_SW_THERMAL 0x20ull
#define EXP_CLOCK_HW_THERMAL 0x40ull
#define EXP_CLOCK_HW_POWER_BRAKE 0x80ull
#define EXP_CLOCK_DISPLAY_CLOCKS 0x100ull
/* The reasons that mean "this measurement ran slowed by something outside the
 * kernel": thermal limits, hardware slowdown and power brake, and sync boost (held
 * to a group's clock). Not: gpu_idle (says only that no work ran at the instant of
 * the reading), applications_clocks_setting and display_clock_setting (configured
 * caps, the same for every run), sw_power_cap (a power-bound kernel at the board's
 * limit: the sustained speed of that work, which is what it measures). */
#define EXP_CLOCK_THROTTLED                                                               \
  (EXP_CLOCK_HW_SLOWDOWN | EXP_CLOCK_SYNC_BOOST | EXP_CLOCK_SW_THERMAL |                  \
   EXP_CLOCK_HW_THERMAL | EXP_CLOCK_HW_POWER_BRAKE)
/* The name of reason bit `bit` ("sw_power_cap", ...), or NULL for unknown bits. */
const char *exp_clock_reason_name(uint64_t bit);

/* The device's clocks around a run's timed window, through NVML (valid false
 * without it). before: after the warm-ups, as the first batch starts; after: once
 * the last batch completed. reasons: NVML's bits seen in either reading, gpu_idle
 * left out. */
struct exp_clocks {
  bool valid;
  int sm_mhz_before, sm_mhz_after;
  int temp_c;     /* the higher of the two readings */
  double power_w; /* after */
  uint64_t reasons;
  bool throttled; /* reasons & EXP_CLOCK_THROTTLED */
};

struct exp_timing {
  double median_ms, min_ms, max_ms, mean_ms, stdev_ms; /* over samples_ms */
  int n_samples;
  double samples_ms[EXP_MAX_BATCHES]; /* per batch: mean time of one launch (or one pipeline pass) */
  int warmup, batches, reps;          /* what was used */
  int warmup_requested, reps_requested;
  const char *capped_by; /* NULL, or why fewer reps/warm-ups than requested were used */
  const char *method;    /* static text: how the samples were timed */
  const char *stopped_by; /* the rule that ended the batches (exp_timing_stop) */
  double relstdev;        /* stdev_ms / mean_ms of the samples */
  bool cold;              /* each launch was timed after an L2 flush */
};

struct exp_check {
  bool done;      /* false: not compared (the run failed or was unavailable) */
  bool passed;
  bool sampled;   /* true: only rows_checked whole rows were compared */
  int rows_checked;
  int64_t compared; /* elements compared */
  int64_t mismatches;
  double max_abs_err, max_rel_err;
  double tolerance;         /* per element, absolute; 0 = exact */
  char tolerance_rule[96];  /* how tolerance was set, for humans */
  char reference[64];       /* what the output was compared against */
};

struct exp_kernel_info {
  char name[64];       /* kernel or CPU function that ran */
  char description[96];/* one line: mapping or library */
  bool has_launch;     /* grid/block and resources below are meaningful */
  int grid[3], block[3];
  int registers, static_shared_bytes, dynamic_shared_bytes, local_bytes;
  /* Theoretical occupancy from cudaOccupancyMaxActiveBlocksPerMultiprocessor (CUDA
   * kernels only: has_occupancy is false for cuBLAS and on the CPU). */
  bool has_occupancy;
  int blocks_per_sm, warps_per_sm, max_warps_per_sm;
  double occupancy; /* warps_per_sm / max_warps_per_sm */
  /* The work counted for the run's figure (exp_spec_work_counts); has_work false
   * when the backend did not fill it. */
  bool has_work;
  struct exp_work work;
};

/* The pipeline's timeline: when each op of one pass ran on its stream, in ms from
 * the pass's start, for the first EXP_TIMELINE_CHUNKS chunks. */
#define EXP_TIMELINE_CHUNKS 16
enum exp_pipeline_op { EXP_OP_UPLOAD, EXP_OP_KERNEL, EXP_OP_DOWNLOAD, EXP_OP_COUNT };
struct exp_timeline_op {
  uint8_t stream, op; /* op: enum exp_pipeline_op */
  uint16_t chunk;
  float start_ms, end_ms;
};

struct exp_run {
  int variant;        /* the type's variant enum; for pipeline, the stream count */
  char label[32];     /* "padded33", "streams=3", ... */
  bool available;     /* false: this backend cannot run it; reason says why */
  bool contended;     /* another job's device work overlapped this run's timed window */
  /* graph: per-launch time of the same reps launched one by one and as a graph;
   * both 0 without graph, graph_us 0 when capture failed */
  double stream_us_per_launch, graph_us_per_launch;
  char reason[128];
  char mapped_to[64]; /* non-empty: ran a substitute of this backend, named here */
  struct exp_check check;
  struct exp_timing timing;
  double figure;      /* work / median; reported as null when the check failed */
  double speedup;     /* first available run's median / this median; 0 if n/a */
  /* The speedup's spread from the samples: [q1 first / q3 this, q3 first / q1 this]
   * (min / max when either has under 4 samples); both 0 when speedup is. */
  double speedup_lo, speedup_hi;
  struct exp_clocks clocks;
  struct exp_kernel_info kernel;
  struct exp_pipeline_plan plan; /* pipeline: how its passes ran (CPU: the threads) */
  /* pipeline: the last sample's last pass; entry c * EXP_OP_COUNT + op is chunk c's
   * op. n_timeline: 0 when none was recorded (other types, graph-only passes). */
  int n_timeline;
  struct exp_timeline_op timeline[EXP_OP_COUNT * EXP_TIMELINE_CHUNKS];
};

struct exp_result {
  int n_runs;
  struct exp_run runs[EXP_MAX_VARIANTS];
  char backend[8];       /* "cuda" or "cpu" */
  char input_path[8];    /* data inputs from another device came by "peer" copy or
                            through "host" memory; "local" when all were here */
  char device_name[96];
  struct exp_ceilings ceilings; /* the device's at the time of the run; zeros: none */
};

/* Fills timing's summary fields from samples_ms[0..n_samples); the caller sets
 * n_samples. */
void exp_timing_summarize(struct exp_timing *timing);
/* After a run's latest sample (timing->n_samples counts it): the rule that stops
 * its batches now ("batches", "noise", "time", "max_batches", see exp_stop_params),
 * or NULL to time another batch. elapsed_s: wall seconds of its timed batches so
 * far. Sets timing->relstdev. Cannot fail. */
const char *exp_timing_stop(const struct exp_spec *spec, struct exp_timing *timing,
                            double elapsed_s);
/* True when at least one run ran and every run that ran was checked and passed. */
bool exp_result_passed(const struct exp_result *result);
/* Sets every run's figure and speedup from its timing and check. */
void exp_result_finish(const struct exp_spec *spec, struct exp_result *result);

#ifdef __cplusplus
}
#endif
#endif
