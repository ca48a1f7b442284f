/* The experiment model: what a job asks for (its spec), what running it produced (its
 * result), and what an experiment is (its descriptor, struct exp_desc), looked up in one
 * registry built from kernels/core/experiments.def. Shared by the JSON codec (api/), the
 * engine (server/) and the backends (kernels/backends/); knows neither JSON, HTTP nor
 * CUDA. Nothing here names an experiment: each one's folder, kernels/<name>/, describes
 * itself. */
#ifndef GPULAB_EXPERIMENT_H
#define GPULAB_EXPERIMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/core/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An experiment's index in the registry, EXP_<ID> for each line of experiments.def. */
enum exp_type {
#define EXPERIMENT(ID, name) EXP_##ID,
#include "kernels/core/experiments.def"
#undef EXPERIMENT
  EXP_TYPE_COUNT,
  /* A problem a user defined (kernels/problem/problem_plan.h): one more type past the
   * lecture's, so that a loop over the registry (routes, forms, the test matrix) never
   * meets it; exp_desc(EXP_PROBLEM) is its one generic descriptor, and what the problem
   * is comes from its plan, by spec.problem. */
  EXP_PROBLEM = EXP_TYPE_COUNT
};

#define EXP_MAX_PARAMS 8   /* size params of one experiment */
#define EXP_MAX_INPUTS 2   /* input slots of one experiment */
#define EXP_MAX_VARIANTS 8 /* variants of one experiment, also runs of one job */
#define EXP_MAX_BATCHES 100
#define EXP_PROBLEM_MAX_PARAMS 16 /* a problem's params (api/problem_def.h) */
#define EXP_PROBLEM_MAX_INPUTS 8  /* a problem's inputs (api/problem_def.h) */
/* Buffers one job reads: a built-in's input slots, or a problem's inputs. */
#define EXP_MAX_JOB_BUFFERS EXP_PROBLEM_MAX_INPUTS
#define EXP_COUNT_OF(a) ((int)(sizeof(a) / sizeof((a)[0]))) /* a descriptor's tables */
/* An exp_desc's three tables (static arrays of the experiment's file), each with its
 * count: in an initializer, EXP_TABLES(params, variants, inputs). */
#define EXP_TABLES(params_, variants_, inputs_)                                                  \
  .n_params = EXP_COUNT_OF(params_), .params = (params_), .n_variants = EXP_COUNT_OF(variants_), \
  .variants = (variants_), .n_inputs = EXP_COUNT_OF(inputs_), .inputs = (inputs_)

/* A user's kernel as a run of a job ("kernel:<id>", kernels/user/): variant values from
 * EXP_USER_VARIANT_BASE on are EXP_USER_VARIANT_BASE + the kernel's id, so that the
 * spec stays plain data; what the kernel is the backends look up by its id
 * (kernels/user/ukreg.h). Only an experiment with a user block (exp_desc.user) takes
 * them. */
#define EXP_USER_VARIANT_BASE (1 << 24)
#define EXP_USER_KERNEL_MAX_ID (0x7fffffff - EXP_USER_VARIANT_BASE)
static inline bool exp_variant_is_user(int variant) { return variant >= EXP_USER_VARIANT_BASE; }
/* The variant of kernel id (1..EXP_USER_KERNEL_MAX_ID), and back. */
static inline int exp_user_variant(long long id) { return EXP_USER_VARIANT_BASE + (int)id; }
static inline long long exp_user_kernel_id(int variant) {
  return (long long)variant - EXP_USER_VARIANT_BASE;
}

/* Order of runs across batches. ALTERNATING (the default of every experiment, "order":
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

/* A tensor shape: 1-D (dims[0]) or 2-D (rows, columns). */
struct exp_shape {
  int ndim;
  int64_t dims[2];
};
/* The shape (n,). */
static inline struct exp_shape exp_shape_1d(int64_t n) { return (struct exp_shape){1, {n, 0}}; }

struct exp_timing_params {
  int warmup;  /* untimed launches per variant before the batches (graph: launches
                  of the captured graph, each of reps kernels) */
  int batches; /* timed samples; each sample is one batch's mean per launch */
  int reps;    /* launches per batch */
};
/* The lecture's defaults: 3 warm-ups and 5 batches of 20 for its transpose and GEMM; 20
 * warm-ups and 5 batches of 100 for its stencil, and for the kernels as short as it
 * (reduce, scan, histogram). */
#define EXP_TIMING_LECTURE \
  { 3, 5, 20 }
#define EXP_TIMING_SHORT \
  { 20, 5, 100 }

/* When a run's batches stop. max_noise 0 (the default): after timing.batches, the
 * lecture's fixed count. max_noise > 0: once at least min_samples (and 2) samples
 * have a relative stdev (stdev / mean) under max_noise, or the run's timed batches
 * took max_time_s, or EXP_MAX_BATCHES samples were taken (exp_timing_stop). */
struct exp_stop_params {
  int min_samples;   /* 0: timing.batches */
  double max_noise;  /* relative stdev, 0..1; 0 = off */
  double max_time_s; /* wall seconds of one run's timed batches; 0 = no limit */
};

/* An EXP_PROBLEM job's problem: the version it runs, by name and number, and its
 * params' values in the problem's order; what they mean, its plan
 * (kernels/problem/problem_plan.h). And what its plan gave when the job was accepted,
 * so that the engine and the codec never need the plan: the figure's counts and the
 * device memory the job takes. Zero in every other spec. */
struct exp_problem {
  char name[64];
  int32_t version;
  int32_t values[EXP_PROBLEM_MAX_PARAMS];
  bool figure_flops;     /* the figure divides flops (the problem gives no bytes) */
  int64_t bytes, flops;  /* the figure's counts at the values (0: not counted) */
  uint64_t device_bytes; /* one job's device memory (problem_plan_bytes) */
  /* Input k given as an uploaded buffer of its dtype and shape (the request's "inputs"):
   * its id; 0: generated from the job's seed. */
  uint64_t input_buffer[EXP_PROBLEM_MAX_INPUTS];
};

/* One job's request, its sizes resolved. Plain data: copy it freely. */
struct exp_spec {
  enum exp_type type;                      /* the experiment: exp_desc(type) */
  uint64_t seed;                           /* default seed of every input given no other source */
  struct exp_input inputs[EXP_MAX_INPUTS]; /* SEED inputs use gen.h with value as seed */
  /* The experiment's params by the indices its header names (kernels/gemm/gemm.h:
   * GEMM_M, ...); entries past its n_params are 0. Never negative in a spec a
   * backend accepts. */
  int p[EXP_MAX_PARAMS];
  /* Bit i: param i, an EXP_PARAM_DIM, was fixed by the request or by the shape of an
   * input given as data (exp_spec_fit_input keeps later inputs to it). */
  unsigned dims_given;
  bool graph; /* time the reps of a batch as one captured CUDA Graph */
  bool fault; /* tests (gpulabd --allow-fault-injection): lose the device */
  struct exp_timing_params timing;
  struct exp_stop_params stop;
  enum exp_order order; /* exp_spec_default: ALTERNATING */
  bool cold;            /* flush the L2 before every timed launch (not with EXP_NO_COLD) */
  /* Replay each run's kernels under the profiler after its timed batches (profile.h). */
  enum exp_profile_mode profile;
  /* The job's runs, in this order: a variant index each, or, for an experiment whose
   * runs come from a list param (exp_desc.runs: the pipeline's "streams"), that list's
   * entries. */
  int n_variants;
  int variants[EXP_MAX_VARIANTS];
  struct exp_problem problem; /* EXP_PROBLEM only */
};

/* ---- results ---- */

/* A device's ceilings, measured once at start-up (backend_measure_ceilings): what
 * a run's figure is compared with. GB/s count bytes read + written (the pinned
 * ones: bytes moved over the bus); 0 = not measured. */
struct exp_ceilings {
  double copy_gbps;          /* device-to-device copy */
  double sgemm_gflops;       /* cuBLAS SGEMM, FP32, TF32 off */
  double tf32_gflops;        /* cuBLAS SGEMM with CUBLAS_TF32_TENSOR_OP_MATH */
  double h2d_gbps, d2h_gbps; /* pinned host <-> device, one direction at a time */
  double bidir_gbps;         /* both directions at once, on two streams: bytes both ways / t */
};

/* Which ceiling a figure is compared with; DEFAULT (on a variant): its experiment's. */
enum exp_ceiling {
  EXP_CEILING_DEFAULT,
  EXP_CEILING_COPY,  /* copy_gbps */
  EXP_CEILING_SGEMM, /* sgemm_gflops */
  EXP_CEILING_TF32,  /* tf32_gflops */
  EXP_CEILING_H2D,   /* h2d_gbps */
  EXP_CEILING_D2H,   /* d2h_gbps */
  EXP_CEILING_BIDIR, /* bidir_gbps */
  EXP_CEILING_COUNT
};
/* The ceiling's key in GET /device's "ceilings" ("copy_gbps"), NULL for DEFAULT or
 * out of range; its value in c (0: not measured). */
const char *exp_ceiling_name(enum exp_ceiling which);
double exp_ceiling_value(const struct exp_ceilings *c, enum exp_ceiling which);

/* The limit at a run's own size: what a device-to-device copy reaches when it moves as
 * many bytes (read + written) as the run's figure counts, rounded to the nearest power
 * of two (its class, 2^EXP_LIMIT_MIN_LOG2 .. 2^EXP_LIMIT_MAX_LOG2 bytes), timed the way
 * the job times its launches. Below a few MiB a fixed launch and drain cost and the L2
 * make the large-size ceiling say little; this says what the same bytes can cost there.
 * Measured once per device with its ceilings (backend_measure_ceilings); 0: not
 * measured (the CPU backend, --no-ceilings, a class too large for the device). */
#define EXP_LIMIT_MIN_LOG2 12 /* 4 KiB */
#define EXP_LIMIT_MAX_LOG2 34 /* 16 GiB */
#define EXP_LIMIT_CLASSES (EXP_LIMIT_MAX_LOG2 - EXP_LIMIT_MIN_LOG2 + 1)
enum exp_limit_mode {
  EXP_LIMIT_BATCH, /* launches back to back between two events, as the built-ins' batches */
  EXP_LIMIT_ALONE, /* each launch alone between its events (a job with users' kernels) */
  EXP_LIMIT_COLD,  /* each alone after an L2 flush (cold) */
  EXP_LIMIT_MODES
};
struct exp_limits {
  double gbps[EXP_LIMIT_MODES][EXP_LIMIT_CLASSES];
};
/* "batch", "alone", "cold"; NULL out of range. */
const char *exp_limit_mode_name(enum exp_limit_mode mode);
/* The class of a figure that counts bytes (read + written): the index of the nearest
 * power of two in [2^EXP_LIMIT_MIN_LOG2, 2^EXP_LIMIT_MAX_LOG2], or -1 outside (or 0
 * bytes). Its bytes: 2^(EXP_LIMIT_MIN_LOG2 + class). */
int exp_limit_class(double bytes);
/* A result's limit (exp_result.limit): the class's bytes, the copy's rate there in the
 * job's mode; bytes 0 when there is none (the figure counts flops, or none measured). */
struct exp_limit {
  int64_t bytes;
  double gbps;
  enum exp_limit_mode mode;
};
/* spec's limit from the device's table (how the job times: cold, or alone when
 * alone is set, else batch) into *out; none when spec's figure is not GB/s. */
void exp_limit_of(const struct exp_spec *spec, const struct exp_limits *limits, bool alone,
                  struct exp_limit *out);

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
#define EXP_CLOCK_THROTTLED                                                                     \
  (EXP_CLOCK_HW_SLOWDOWN | EXP_CLOCK_SYNC_BOOST | EXP_CLOCK_SW_THERMAL | EXP_CLOCK_HW_THERMAL | \
   EXP_CLOCK_HW_POWER_BRAKE)
/* The name of reason bit `bit` ("sw_power_cap", ...), or NULL for unknown bits. */
const char *exp_clock_reason_name(uint64_t bit);

/* One reading of a device's clocks (NVML's, through the CUDA backend). */
struct exp_clock_reading {
  int sm_mhz, temp_c;
  double power_w;
  uint64_t reasons; /* EXP_CLOCK_* bits */
};

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
/* clocks from the readings before and after a window. Cannot fail. */
void exp_clocks_fill(struct exp_clocks *clocks, const struct exp_clock_reading *before,
                     const struct exp_clock_reading *after);

struct exp_timing {
  double median_ms, min_ms, max_ms, mean_ms, stdev_ms; /* over samples_ms */
  int n_samples;
  double samples_ms[EXP_MAX_BATCHES]; /* per batch: mean time of one launch (or one pass) */
  int warmup, batches, reps;          /* what was used */
  int warmup_requested, reps_requested;
  const char *capped_by;  /* NULL, or why fewer reps/warm-ups than requested were used */
  const char *method;     /* static text: how the samples were timed */
  const char *stopped_by; /* the rule that ended the batches (exp_timing_stop) */
  double relstdev;        /* stdev_ms / mean_ms of the samples */
  bool cold;              /* each launch was timed after an L2 flush */
};

struct exp_check {
  bool done; /* false: not compared (the run failed or was unavailable) */
  bool passed;
  bool sampled; /* true: only rows_checked whole rows were compared */
  int rows_checked;
  int64_t compared; /* elements compared */
  int64_t mismatches;
  double max_abs_err, max_rel_err;
  double tolerance;        /* per element, absolute; 0 = exact */
  char tolerance_rule[96]; /* how tolerance was set, for humans */
  char reference[64];      /* what the output was compared against */
  /* Non-empty: a timed launch on fresh inputs failed the runner's own check (the run's
   * launch_failure, set by exp_result_finish): which launch, what and where. */
  char failure[192];
  /* Precision as claimed (gemm's FP32 rule): the RMS of the errors over the RMS of the
   * reference, over the elements compared, against a limit that FP32 arithmetic in any
   * summation order stays under and TF32, FP16 or BF16 operands do not. has_precision
   * false where the experiment keeps no such statistic; precision_limit 0: reported,
   * not enforced (inputs not generated, on which the limit was not measured; a TF32
   * variant). precision_failed: past the limit, and passed is false. */
  bool has_precision, precision_failed;
  double precision_rms, precision_limit;
};

/* Both counts behind a run's figure, so a student sees what the figure divides
 * (exp_desc.work). counted says so in words (static). */
struct exp_work {
  double bytes, flops;
  const char *counted;
};

struct exp_kernel_info {
  char name[64];         /* kernel or CPU function that ran */
  char description[192]; /* one line: mapping or library (best: configuration and why) */
  bool has_launch;       /* grid/block and resources below are meaningful */
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

/* How one pass of a run that moves its data in chunks over streams went (the
 * pipeline's runs): total floats in chunks of chunk floats (the last may be shorter),
 * chunk c on stream c % streams; issued op by op over all chunks (breadth first) or
 * chunk by chunk (depth_first); graph: captured once, replayed per pass; best: sizes
 * chosen from the data. All zero for runs of other experiments. */
struct exp_pipeline_plan {
  int64_t total, chunk;
  int chunks, streams;
  bool depth_first, graph, best;
};

/* Such a run's timeline: when each op of one pass ran on its stream, in ms from the
 * pass's start, for the first EXP_TIMELINE_CHUNKS chunks. */
#define EXP_TIMELINE_CHUNKS 16
enum exp_pipeline_op { EXP_OP_UPLOAD, EXP_OP_KERNEL, EXP_OP_DOWNLOAD, EXP_OP_COUNT };
struct exp_timeline_op {
  uint8_t stream, op; /* op: enum exp_pipeline_op */
  uint16_t chunk;
  float start_ms, end_ms;
};

/* The rules a user's run was measured under (its user_kernel.rules): 2 puts the
 * module's variables back and zeroes the scratch before every launch, refuses the
 * device heap and __managed__, runs every timed launch on fresh inputs checked by the
 * runner, verifies the inputs unchanged, checks gemm's precision and samples its rows
 * secretly. The leaderboard ranks only runs of the current rules. */
#define EXP_USER_RULES 2
/* How close a second job's median must come to rank a run with uneven samples. */
#define EXP_REPRODUCED 0.05

/* Who wrote the kernel of a user's run (variant kernel:<id>), as the backend found it
 * in its table when the job ran; id 0 for every other run. */
struct exp_run_user {
  long long id; /* the kernel's */
  int version;  /* which version of it ran; 0: not known */
  char name[64], owner[64];
  char source_sha256[65]; /* lower-case hex of the source's SHA-256 */
};

struct exp_run {
  int variant;    /* spec->variants[i]: the variant index, or the runs list's entry */
  char label[32]; /* "padded33", "streams=3", "kernel:7@2", ... (exp_run_label) */
  bool available; /* false: this backend cannot run it; reason says why */
  bool contended; /* another job's device work overlapped this run's timed window */
  /* graph: per-launch time of the same reps launched one by one and as a graph;
   * both 0 without graph, graph_us 0 when capture failed */
  double stream_us_per_launch, graph_us_per_launch;
  char reason[128];
  char mapped_to[64]; /* non-empty: ran a substitute of this backend, named here */
  /* Non-empty: its figure was refused (exp_result_refuse_implausible): why. */
  char refused[128];
  /* Non-empty: a user's run whose timed samples look staged (one batch apart from the
   * others beyond their noise, stats_apart): what was seen. The leaderboard ranks such
   * a run only once another job reproduces its median within EXP_REPRODUCED. */
  char uneven[160];
  /* Non-empty: a user's timed launch on fresh inputs failed the runner's check (set by
   * the backend while it times the run): exp_result_finish fails the run's check with it. */
  char launch_failure[192];
  struct exp_run_user user;
  struct exp_check check;
  struct exp_timing timing;
  double figure;  /* work / median; reported as null when the check failed */
  double speedup; /* first available run's median / this median; 0 if n/a */
  /* The speedup's spread from the samples: [q1 first / q3 this, q3 first / q1 this]
   * (min / max when either has under 4 samples); both 0 when speedup is. */
  double speedup_lo, speedup_hi;
  struct exp_clocks clocks;
  struct exp_kernel_info kernel;
  struct exp_profile profile;    /* requested false unless the job asked (spec.profile) */
  struct exp_pipeline_plan plan; /* chunked runs: how its passes ran (CPU: the threads) */
  /* chunked runs: the last sample's last pass; entry c * EXP_OP_COUNT + op is chunk
   * c's op. n_timeline: 0 when none was recorded. */
  int n_timeline;
  struct exp_timeline_op timeline[EXP_OP_COUNT * EXP_TIMELINE_CHUNKS];
};

struct exp_result {
  int n_runs;
  char backend[8];    /* "cuda" or "cpu" */
  char input_path[8]; /* data inputs from another device came by "peer" copy or
                            through "host" memory; "local" when all were here */
  char device_name[96];
  struct exp_ceilings ceilings; /* the device's at the time of the run; zeros: none */
  /* The copy at the job's size (exp_limit_of): what a run compared with the copy
   * ceiling is also compared with (percent_of_limit); bytes 0: none. */
  struct exp_limit limit;
  /* Last, so that a result kept after its job holds only its n_runs runs
   * (exp_result_kept). */
  struct exp_run runs[EXP_MAX_VARIANTS];
};

/* ---- the descriptor: what an experiment is ---- */

struct reference; /* kernels/core/reference.h */

/* A size param, a request field of type integer. */
enum exp_param_flag {
  /* A size an input given as data may set (its shape; exp_desc.fit_input); a request
   * that gives it sets its bit in exp_spec.dims_given. */
  EXP_PARAM_DIM = 1u,
};
struct exp_param {
  const char *name; /* the request's field, e.g. "m" */
  int min, max;     /* what a request may give, inclusive (quoted in its 400) */
  int def;          /* the lecture's default */
  unsigned flags;   /* EXP_PARAM_* */
  /* A small size with tails against every tile of the experiment's kernels, which
   * tests/unit/test_experiments.c runs every variant at, on every backend. */
  int odd;
  const char *doc; /* for people, the form's hint: "rows of A"; NULL: none */
};

/* A list param whose entries are the job's runs, for an experiment without variants
 * (the pipeline's "streams": stream counts, and "best"). A request gives one entry or
 * a list; entries are integers in [min, max], or `word` (at most once), which stands
 * for n_word_runs runs. At most EXP_MAX_VARIANTS runs in all. */
struct exp_runs_param {
  const char *name; /* the request's field, also the label of an integer run: "streams=3" */
  const char *noun; /* one integer entry, in messages: "stream count" */
  int min, max;
  const char *word;           /* NULL: none */
  int n_word_runs;            /* 1 or 2 */
  int word_runs[2];           /* the entries the word adds (outside [min, max]) */
  const char *word_labels[2]; /* their run labels */
  const char *word_gives;     /* in the too-many message: "\"best\" gives two: ..." */
  int n_defaults;
  int defaults[EXP_MAX_VARIANTS];
};

/* An input slot. A generated input is gen_uniform(seed, stream, i) * scale (gen.h),
 * on both backends bit for bit. */
struct exp_input_desc {
  const char *name; /* the request's field and the name in messages: "a" */
  uint32_t stream;  /* gen.h's stream (GEN_A, ...) */
  float scale;      /* 1, or e.g. the pipeline's phases: pi */
};

/* One call of a CPU stand-in, as the CPU backend makes it. Stand-ins never allocate;
 * every pointer is borrowed for the call. */
struct exp_cpu_call {
  const struct exp_spec *spec;
  const float *const *in;   /* the inputs, by slot */
  float *out;               /* the run's output: exp_output_shape's count of floats */
  float *scratch;           /* exp_desc.cpu_scratch_floats(spec) floats, the job's; or NULL */
  int entry;                /* the run's spec->variants[] value */
  struct exp_run *timeline; /* non-NULL: record this call's timeline there (the last
                               sample's calls; experiments without one ignore it) */
  char *err;                /* on failure: one line */
  size_t err_len;
};
/* Returns 0, or a negative errno value (-ENOMEM: a thread could not start) with err.
 * An experiment's header declares its stand-ins with the type:
 * exp_cpu_stand_in cpu_reduce_naive, cpu_reduce_shared; */
typedef int exp_cpu_stand_in(const struct exp_cpu_call *call);
typedef exp_cpu_stand_in *exp_cpu_fn;

/* What the CPU backend runs for a variant. */
struct exp_cpu_variant {
  exp_cpu_fn fn;           /* NULL: unavailable on the CPU, `reason` says why */
  const char *name;        /* the C function: the run's kernel.name */
  const char *description; /* its kernel.description */
  const char *mapped_to;   /* "" or the stand-in's name, when it substitutes for a GPU
                              algorithm the CPU cannot run as such */
  const char *reason;      /* fn NULL: why */
};
/* A variant's stand-in fn (named after it) and its description; EXP_CPU_MAPPED: one
 * that substitutes for a GPU algorithm the CPU cannot run as such. */
#define EXP_CPU(fn, description) \
  { (fn), #fn, (description), "", NULL }
#define EXP_CPU_MAPPED(fn, description) \
  { (fn), #fn, (description), #fn, NULL }
/* A variant the CPU backend cannot run (a library's), and why. */
#define EXP_CPU_NONE(why) \
  { NULL, NULL, NULL, NULL, (why) }

enum exp_variant_flag {
  /* cuBLAS runs it, no kernel of ours: the CUDA backend loads cuBLAS and the lane's
   * handle (cuda_exp.h); its kernel info has no launch shape. */
  EXP_VARIANT_CUBLAS = 1u,
  /* TF32 tensor-core math (the check's TF32 rule, the tf32 ceiling). */
  EXP_VARIANT_TF32 = 2u,
  /* A reference beside the experiment's algorithm, not one of it (transpose's copy):
   * the leaderboard does not rank it. */
  EXP_VARIANT_BASELINE = 4u,
};

struct exp_variant {
  const char *name;           /* the request's name: "padded33" */
  const char *doc;            /* one line for people: what it shows */
  unsigned flags;             /* EXP_VARIANT_* */
  enum exp_ceiling ceiling;   /* DEFAULT: the experiment's */
  struct exp_cpu_variant cpu; /* its CPU stand-in */
};

enum exp_figure {
  EXP_FIGURE_GBPS,   /* work counted in bytes: "GB/s", work_unit "bytes" */
  EXP_FIGURE_GFLOPS, /* work counted in flops: "GFLOP/s", work_unit "flop" */
};

/* The element type of an output or a buffer. A U32 output (counts: a histogram's) is
 * stored bit for bit, its reference reads it as such, GET /buffers/{id} writes it as a
 * '<u4' .npy. The built-ins' inputs read F32 only; the other types are uploads for a
 * problem's inputs of that dtype (api/problem_def.h), kept as sent. */
enum exp_dtype {
  EXP_DTYPE_F32,
  EXP_DTYPE_U32,
  EXP_DTYPE_F16,
  EXP_DTYPE_BF16,
  EXP_DTYPE_I32,
  EXP_DTYPE_I8,
  EXP_DTYPE_COUNT
};
const char *exp_dtype_name(enum exp_dtype d); /* "float32", "uint32", "float16", ... */
size_t exp_dtype_bytes(enum exp_dtype d);     /* 4, 4, 2, 2, 4, 1 */

enum exp_flag {
  /* "cold" must be false (a pass starts from host memory): no_cold_why says why. */
  EXP_NO_COLD = 1u,
  /* One input, a vector x of n elements, n the param vector_n (reduce, scan, stencil,
   * histogram): input_shape and fit_input may be NULL (x is (n,), and x given as data of
   * any shape sets n), and output_shape too when the output has x's shape. */
  EXP_VECTOR = 2u,
};
/* An EXP_VECTOR experiment whose x has p[n] elements, in an exp_desc initializer. */
#define EXP_VECTOR_OF(n) .flags = EXP_VECTOR, .vector_n = (n)

/* One argument of a user's kernel, in its signature's order: input slot `index`
 * (const float *), the run's output (float *), or param p[index] (int). */
enum exp_user_arg_kind { EXP_USER_ARG_INPUT, EXP_USER_ARG_OUTPUT, EXP_USER_ARG_PARAM };
/* How gpulab-runner checks each timed launch of such a kernel on inputs of its own
 * (kernels/user/runner_proto.h's enum runner_check, the same numbers; its params are
 * the signature's int arguments in order). */
enum exp_user_check {
  EXP_USER_CHECK_NONE,
  EXP_USER_CHECK_TRANSPOSE,
  EXP_USER_CHECK_GEMM,
  EXP_USER_CHECK_STENCIL,
  EXP_USER_CHECK_REDUCE,
  EXP_USER_CHECK_SCAN,
  EXP_USER_CHECK_HISTOGRAM,
};
struct exp_user_arg {
  enum exp_user_arg_kind kind;
  int index;
};
#define EXP_USER_MAX_ARGS 8

/* What a user's kernel of an experiment is (exp_desc.user; kernels/user/ compiles and
 * runs it): one fixed signature, how a kernel's tile (the outputs one block covers)
 * becomes its grid at a job's sizes, the template the dashboard's editor starts from,
 * and the built-in whose check its output gets. Constant data in the experiment's
 * folder. */
struct exp_user {
  /* The C declaration gpulab puts ahead of the user's source, "%s" for the entry:
   * "extern \"C\" __global__ void %s(const float *a, float *b, int m, int n);". */
  const char *declaration;
  const char *signature; /* as docs/kernels.md shows it, with the entry "kernel" */
  const char *meaning;   /* one line: the layouts and what to compute */
  int n_args;
  struct exp_user_arg args[EXP_USER_MAX_ARGS];
  /* grid.x = ceil(p[grid_x] / tile[0]); grid.y = ceil(p[grid_y] / tile[1]), or 1 when
   * grid_y is -1; grid.z = 1. */
  int grid_x, grid_y;
  const char *grid_rule; /* the same in words */
  int default_block[3], default_tile[2];
  const char *template_source; /* a correct, simple kernel to start from */
  /* The variant whose tolerance rule checks a user's output (exp_desc.ref_check is
   * called with it): the rule that holds for any correct kernel of the signature. It
   * may be n_variants, no variant's: a rule the experiment's ref_check keeps for users'
   * kernels alone (scan's for any summation order). */
  int check_variant;
  /* Before every launch the output is poisoned with NaN, so that a kernel must write
   * every element each time (false, the default); true: set to 0.0f instead, for
   * kernels that accumulate into it (atomics into a sum or a histogram's bins). */
  bool reset_zero;
  /* Every timed launch on fresh inputs, checked by the runner (NONE: the timed launches
   * reuse the job's inputs and only the last output is checked). */
  enum exp_user_check fresh_check;
};
/* The signature's arguments and their count, in an exp_user initializer:
 * EXP_USER_ARGS({EXP_USER_ARG_INPUT, 0}, {EXP_USER_ARG_OUTPUT, 0}, ...). */
#define EXP_USER_ARGS(...) \
  .n_args = EXP_COUNT_OF(((const struct exp_user_arg[]){__VA_ARGS__})), .args = {__VA_ARGS__}
/* The default block, x by y threads, and its tile: an element per thread. */
#define EXP_USER_BLOCK(x, y) .default_block = {(x), (y), 1}, .default_tile = {(x), (y)}
/* The grid of a user's kernel over a vector of p[n] elements (EXP_VECTOR): a block per
 * tile[0] of them, in an exp_user initializer. */
#define EXP_USER_GRID_1D(n) \
  .grid_x = (n), .grid_y = -1, .grid_rule = "grid = (ceil(n / tile[0]), 1, 1)"

/* One experiment. Constant data in its folder (kernels/<name>/<name>.c), registered by
 * its line in experiments.def; every hook is a plain function of the spec, called
 * from any thread. "spec" below is a spec of this experiment whose params lie in
 * their ranges or, from a backend's own callers, are at least non-negative. */
struct exp_desc {
  const char *name;  /* "transpose": the route /transpose and the job's "type" */
  const char *title; /* for people, the dashboard's tab: "GEMM"; NULL: the name */
  const char *doc;   /* one line for people: what it computes and its figure; NULL: none */
  unsigned flags;    /* EXP_* */
  const char *no_cold_why;
  int vector_n; /* EXP_VECTOR: the param that is x's length */

  /* Size params, in the order requests list them (and p[] holds them). */
  int n_params;
  const struct exp_param *params;
  /* Runs: the variants (n_variants > 0, runs NULL), or a list param (runs). */
  int n_variants;
  const struct exp_variant *variants;
  const struct exp_runs_param *runs;
  /* Inputs, in slot order. */
  int n_inputs;
  const struct exp_input_desc *inputs;

  /* Shapes (exp_input_shape, exp_output_shape); the output is the first run's. */
  enum exp_dtype out_dtype; /* F32 (0) unless the experiment says otherwise */
  void (*input_shape)(const struct exp_spec *spec, int slot, struct exp_shape *shape);
  void (*output_shape)(const struct exp_spec *spec, struct exp_shape *shape);
  /* Takes spec's dims from the shape of input slot given as data: returns 0, or -1
   * with msg (exp_fit_dims makes both), spec unchanged. */
  int (*fit_input)(struct exp_spec *spec, int slot, const struct exp_shape *shape, char *msg,
                   size_t msg_len);

  /* The lecture's timing for it. */
  struct exp_timing_params timing;
  /* The counts behind a run's figure (the same for every run of the job). */
  void (*work)(const struct exp_spec *spec, struct exp_work *work);
  enum exp_figure figure;   /* which count the figure divides */
  enum exp_ceiling ceiling; /* what its figures are compared with */
  /* Device floats that one launch of `variant` needs beyond the inputs and outputs
   * (gemm tf32's transposed B); NULL: none. */
  uint64_t (*scratch_floats)(const struct exp_spec *spec, int variant);

  /* The reference (kernels/core/reference.h has the contract): init computes what
   * check compares against from ref's inputs (NULL: check computes it), returning 0
   * or -ENOMEM; check compares out (exp_output_shape's count) for the run's entry and
   * fills c's counts, maxima, tolerance and texts (the caller clears c and sets done
   * and passed); fini frees what init kept in ref->state (NULL: state is one block, or
 * NULL, and reference_free frees it). */
  int (*ref_init)(struct reference *ref);
  void (*ref_check)(const struct reference *ref, int entry, const float *out, struct exp_check *c);
  void (*ref_fini)(struct reference *ref);

  /* The CPU backend: per variant exp_variant.cpu; an experiment with a runs list runs
   * every run with cpu_run. cpu_describe (NULL: none) adjusts run's identity after
   * the variant's (an entry the CPU cannot run: available false and a reason);
   * cpu_scratch_floats (NULL: none): floats a job's calls share as scratch. */
  exp_cpu_fn cpu_run;
  void (*cpu_describe)(const struct exp_spec *spec, struct exp_run *run);
  size_t (*cpu_scratch_floats)(const struct exp_spec *spec);

  /* Users' kernels (variants kernel:<id>): their signature, grid rule, template and
   * check; NULL: the experiment takes none. */
  const struct exp_user *user;

  /* What a spec's job is when the descriptor alone cannot say (EXP_PROBLEM's: its
   * problem's); NULL: figure and exp_spec_bytes' own count. */
  enum exp_figure (*figure_of)(const struct exp_spec *spec);
  uint64_t (*spec_bytes)(const struct exp_spec *spec);
};

/* ---- the registry ---- */

/* The descriptor of type, or NULL when type is not one (an error: nothing falls back
 * to some other experiment). Static; never freed. */
const struct exp_desc *exp_desc(enum exp_type type);
/* Its name ("gemm"), or NULL for an unknown type. */
const char *exp_type_name(enum exp_type type);
/* Its route ("/gemm", static), or NULL. */
const char *exp_type_route(enum exp_type type);
int exp_type_from_name(const char *name); /* -1 if unknown */
/* "transpose, gemm, stencil, pipeline": every name, in registry order, for messages. */
void exp_type_list(char *buf, size_t len);

/* ---- specs ---- */

/* Fills spec with type's defaults (its params' defaults, all variants or the runs
 * list's defaults, the lecture's timing, seed 2026, every input from the seed).
 * Returns 0, or -EINVAL for an unknown type (spec zeroed but for that type). */
int exp_spec_default(enum exp_type type, struct exp_spec *spec);

/* Variants: count, names, lookup (0 / NULL / -1 for an unknown type or name; an
 * experiment with a runs list has none). */
int exp_variant_count(enum exp_type type);
const char *exp_variant_name(enum exp_type type, int variant);
int exp_variant_from_name(enum exp_type type, const char *name);
/* The variant descriptor of a run's entry, NULL for runs-list entries and users'
 * kernels. */
const struct exp_variant *exp_variant_of(const struct exp_spec *spec, int entry);
/* The user block of type (exp_desc.user), or NULL when it takes no users' kernels. */
const struct exp_user *exp_user_of(enum exp_type type);
/* Params: the index of name in type's params, or -1. */
int exp_param_index(enum exp_type type, const char *name);

/* Inputs: how many slots a type has and their names ("a", "b", "x"; NULL past them). */
int exp_input_count(enum exp_type type);
const char *exp_input_name(enum exp_type type, int slot);
/* Whether spec reads data it does not generate: an input slot given a buffer or a job's
 * output, or a problem's input given a buffer. */
bool exp_spec_reads_data(const struct exp_spec *spec);
/* The shape spec's params give input slot, and the output (the first run's). */
void exp_input_shape(const struct exp_spec *spec, int slot, struct exp_shape *shape);
void exp_output_shape(const struct exp_spec *spec, struct exp_shape *shape);
/* Takes spec's dims from the shape of an input given as data (a buffer or a job's
 * output). Returns 0, or -1 with a message naming both shapes when the shape does
 * not fit the job or disagrees with a dim the request gave (or another input). */
int exp_spec_fit_input(struct exp_spec *spec, int slot, const struct exp_shape *shape, char *msg,
                       size_t msg_len);
/* The usual fit_input: the shape's dimensions set the params dims[0..ndim) (1-D: its
 * element count sets dims[0]; 2-D: a 1-D shape counts as one row), each unless fixed
 * to another value (dims_given); then their bits are set. On a mismatch spec is left
 * unchanged and msg says "input a has shape (3,) but this gemm job needs (2, 4)",
 * with ": <why>" appended when why is not NULL. Returns 0 or -1. */
int exp_fit_dims(struct exp_spec *spec, int slot, const struct exp_shape *shape, const int *dims,
                 int ndim, const char *why, char *msg, size_t msg_len);
/* That message alone, for a fit_input of its own: returns -1. */
int exp_fit_mismatch(const struct exp_spec *spec, int slot, const struct exp_shape *shape,
                     const char *why, char *msg, size_t msg_len);
/* "(4096, 1024)" or "(1000,)", as NumPy writes shapes. */
void exp_shape_format(const struct exp_shape *shape, char *buf, size_t len);
int64_t exp_shape_count(const struct exp_shape *shape);

/* Bytes of device (or, on the CPU, host) memory one job of this spec needs at once:
 * its inputs, one output per run and the job's output, and each run's scratch
 * (exp_desc.scratch_floats); with a user's kernel among the runs, the
 * inputs once more (the copies its runner opens). Library workspaces and pinned host
 * copies are not counted. */
uint64_t exp_spec_bytes(const struct exp_spec *spec);

/* Work counted for a run's figure: bytes moved or floating-point operations
 * (exp_desc.figure). The figure is work / median time. */
double exp_spec_work(const struct exp_spec *spec);
void exp_spec_work_counts(const struct exp_spec *spec, struct exp_work *work);
const char *exp_figure_unit(enum exp_type type); /* "GB/s" or "GFLOP/s"; NULL: unknown */
/* Which count spec's figure divides, and its unit: the type's, or its problem's. */
enum exp_figure exp_spec_figure(const struct exp_spec *spec);
const char *exp_spec_figure_unit(const struct exp_spec *spec);
const char *exp_work_unit(enum exp_type type); /* "bytes" or "flop"; NULL: unknown */
/* The ceiling run `entry` of spec is compared with. */
enum exp_ceiling exp_run_ceiling(const struct exp_spec *spec, int entry);

/* Runs of a job (spec->n_variants) and run i's label ("padded33", "streams=3",
 * "best", "best_graph", "kernel:7"), as both backends name them. */
int exp_run_count(const struct exp_spec *spec);
void exp_run_label(const struct exp_spec *spec, int i, char *buf, size_t len);
/* How a user's kernel's run is labelled, by the id its variant holds (a version's):
 * kernels/user/ukreg.h's ukreg_label, set at start. Without one: "kernel:<id>". */
void exp_set_user_label(void (*fn)(long long version_id, char *buf, size_t len));

/* ---- timing and results ---- */

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
/* A copy of result that holds only its n_runs runs (a run is kilobytes, most jobs have
 * one or two of EXP_MAX_VARIANTS), for a result kept after its job: read it, never
 * copy it whole or touch runs past n_runs. NULL when out of memory; free() frees it. */
struct exp_result *exp_result_kept(const struct exp_result *result);
/* Sets every run's figure and speedup from its timing and check, then refuses the
 * implausible ones (exp_result_refuse_implausible). */
void exp_result_finish(const struct exp_spec *spec, struct exp_result *result);
/* A user's kernel's figure more than EXP_IMPLAUSIBLE_MARGIN above the device's
 * measured ceiling for its run (exp_run_ceiling), or, for the copy ceiling, above the
 * limit at the job's size where that is higher (result.limit: data in the L2), is
 * refused rather than ranked: its check fails, its figure and speedup are 0, refused
 * says "implausible_result: ...".
 * Built-in runs are never judged; a ceiling not measured refuses nothing. Returns how
 * many runs were refused. */
#define EXP_IMPLAUSIBLE_MARGIN 1.05
int exp_result_refuse_implausible(const struct exp_spec *spec, struct exp_result *result);

#ifdef __cplusplus
}
#endif
#endif
