/* Names, defaults and work counts of the lecture's experiments. */
#include "kernels/experiment.h"

#include <stdio.h>
#include <string.h>
#include "kernels/core/stats.h"

/* A pipeline job has one run per stream count, in the same runs[] array. */
_Static_assert(EXP_MAX_STREAM_COUNTS <= EXP_MAX_VARIANTS, "runs[] holds every stream count");

static const char *const type_names[EXP_TYPE_COUNT] = {"transpose", "gemm", "stencil",
                                                       "pipeline"};
static const char *const transpose_variants[] = {"naive", "shared32", "padded33", "copy",
                                                 "best"};
static const char *const gemm_variants[] = {"naive", "tiled", "cublas", "best", "tf32"};
static const char *const stencil_variants[] = {"naive", "shared", "best"};
#define COUNT_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))
_Static_assert(COUNT_OF(transpose_variants) == TRANSPOSE_BEST + 1, "one name per variant");
_Static_assert(COUNT_OF(gemm_variants) == GEMM_TF32 + 1, "one name per variant");
_Static_assert(COUNT_OF(stencil_variants) == STENCIL_BEST + 1, "one name per variant");
_Static_assert(COUNT_OF(transpose_variants) <= EXP_MAX_VARIANTS, "runs[] holds every variant");

struct variant_table {
  const char *const *names;
  int count;
};

static struct variant_table variants_of(enum exp_type type) {
  switch (type) {
  case EXP_TRANSPOSE: return (struct variant_table){transpose_variants, COUNT_OF(transpose_variants)};
  case EXP_GEMM: return (struct variant_table){gemm_variants, COUNT_OF(gemm_variants)};
  case EXP_STENCIL: return (struct variant_table){stencil_variants, COUNT_OF(stencil_variants)};
  default: return (struct variant_table){NULL, 0};
  }
}

const char *exp_type_name(enum exp_type type) {
  return (unsigned)type < EXP_TYPE_COUNT ? type_names[type] : NULL;
}

int exp_type_from_name(const char *name) {
  for (int i = 0; i < EXP_TYPE_COUNT; i++)
    if (strcmp(name, type_names[i]) == 0) return i;
  return -1;
}

int exp_variant_count(enum exp_type type) { return variants_of(type).count; }

const char *exp_variant_name(enum exp_type type, int variant) {
  struct variant_table t = variants_of(type);
  return variant >= 0 && variant < t.count ? t.names[variant] : NULL;
}

int exp_variant_from_name(enum exp_type type, const char *name) {
  struct variant_table t = variants_of(type);
  for (int i = 0; i < t.count; i++)
    if (strcmp(name, t.names[i]) == 0) return i;
  return -1;
}

/* Every type interleaves its variants across batches; the lecture's one-variant-
 * after-another order for transpose and GEMM stays available as "order":
 * "sequential". */
enum exp_order exp_type_order(enum exp_type type) {
  (void)type;
  return EXP_ORDER_ALTERNATING;
}

void exp_spec_default(enum exp_type type, struct exp_spec *spec) {
  memset(spec, 0, sizeof *spec);
  spec->type = type;
  spec->seed = 2026;
  for (int i = 0; i < EXP_MAX_INPUTS; i++) spec->inputs[i] = (struct exp_input){EXP_INPUT_SEED, spec->seed};
  spec->n_variants = exp_variant_count(type);
  for (int i = 0; i < spec->n_variants; i++) spec->variants[i] = i;
  spec->order = exp_type_order(type);
  spec->stop = (struct exp_stop_params){0, 0.0, 10.0}; /* fixed batches; 10 s with max_noise */
  /* The lecture's timing: transpose and GEMM warm up 3 times and time 5 batches of
   * 20; stencil 20 and 5 x 100; the stream pipeline 5 warm-ups and 9 samples. */
  switch (type) {
  case EXP_TRANSPOSE:
    spec->u.transpose.m = spec->u.transpose.n = 4096;
    spec->timing = (struct exp_timing_params){3, 5, 20};
    break;
  case EXP_GEMM:
    spec->u.gemm.m = spec->u.gemm.n = spec->u.gemm.k = 1024;
    spec->timing = (struct exp_timing_params){3, 5, 20};
    break;
  case EXP_STENCIL:
    spec->u.stencil.n = 1 << 22;
    spec->u.stencil.radius = 32;
    spec->timing = (struct exp_timing_params){20, 5, 100};
    break;
  case EXP_PIPELINE:
    spec->u.pipeline.chunk = 1 << 20;
    spec->u.pipeline.chunks = 3;
    spec->u.pipeline.terms = 64;
    spec->u.pipeline.n_stream_counts = 2;
    spec->u.pipeline.stream_counts[0] = 1;
    spec->u.pipeline.stream_counts[1] = 3;
    spec->timing = (struct exp_timing_params){5, 9, 1};
    break;
  default: break;
  }
}

uint64_t exp_spec_bytes(const struct exp_spec *spec) {
  /* Inputs, one output per run (each is checked after all timing), and the job's
   * own output, computed once before timing. */
  struct exp_shape in, out;
  uint64_t inputs = 0;
  for (int s = 0; s < exp_input_count(spec->type); s++) {
    exp_input_shape(spec, s, &in);
    inputs += (uint64_t)exp_shape_count(&in);
  }
  exp_output_shape(spec, &out);
  int runs = spec->type == EXP_PIPELINE ? spec->u.pipeline.n_stream_counts : spec->n_variants;
  uint64_t floats = inputs + (uint64_t)(runs + 1) * (uint64_t)exp_shape_count(&out);
  /* gemm tf32 may take the Hopper kernel, which transposes B into a k x n scratch of
   * its own around each launch (one at a time: a job's launches share one stream). */
  for (int r = 0; spec->type == EXP_GEMM && r < spec->n_variants; r++)
    if (spec->variants[r] == GEMM_TF32) {
      floats += (uint64_t)spec->u.gemm.k * (uint64_t)spec->u.gemm.n;
      break;
    }
  return sizeof(float) * floats;
}

double exp_spec_work(const struct exp_spec *spec) {
  switch (spec->type) {
  case EXP_TRANSPOSE: return 8.0 * spec->u.transpose.m * (double)spec->u.transpose.n;
  case EXP_GEMM: return 2.0 * spec->u.gemm.m * (double)spec->u.gemm.n * spec->u.gemm.k;
  case EXP_STENCIL: return 8.0 * spec->u.stencil.n;
  case EXP_PIPELINE: /* uploaded and downloaded bytes */
    return 8.0 * spec->u.pipeline.chunk * (double)spec->u.pipeline.chunks;
  default: return 0;
  }
}

const char *exp_figure_unit(enum exp_type type) {
  return type == EXP_GEMM ? "GFLOP/s" : "GB/s";
}

void exp_timing_summarize(struct exp_timing *t) {
  struct stats_summary s;
  stats_summarize(t->samples_ms, t->n_samples, &s);
  t->median_ms = s.median;
  t->min_ms = s.min;
  t->max_ms = s.max;
  t->mean_ms = s.mean;
  t->stdev_ms = s.stdev;
}

const char *exp_timing_stop(const struct exp_spec *spec, struct exp_timing *t, double elapsed_s) {
  struct stats_summary s;
  int n = t->n_samples;
  stats_summarize(t->samples_ms, n, &s);
  t->relstdev = s.mean > 0 ? s.stdev / s.mean : 0;
  const struct exp_stop_params *p = &spec->stop;
  if (p->max_noise <= 0) return n >= spec->timing.batches ? "batches" : NULL;
  int need = p->min_samples > 0 ? p->min_samples : spec->timing.batches;
  if (n >= (need > 2 ? need : 2) && t->relstdev < p->max_noise) return "noise";
  if (n >= EXP_MAX_BATCHES) return "max_batches";
  if (p->max_time_s > 0 && elapsed_s >= p->max_time_s) return "time";
  return NULL;
}

/* A timing's spread: its sample quartiles, or with few samples its extremes. */
static void spread(const struct exp_timing *t, bool few, double *lo, double *hi) {
  *lo = few ? t->min_ms : stats_quantile(t->samples_ms, t->n_samples, 0.25);
  *hi = few ? t->max_ms : stats_quantile(t->samples_ms, t->n_samples, 0.75);
}

void exp_result_finish(const struct exp_spec *spec, struct exp_result *result) {
  double work = exp_spec_work(spec), base_ms = 0;
  const struct exp_timing *base = NULL;
  for (int i = 0; i < result->n_runs; i++) {
    struct exp_run *run = &result->runs[i];
    run->figure = 0;
    run->speedup = run->speedup_lo = run->speedup_hi = 0;
    if (!run->available || run->timing.n_samples == 0 || run->timing.median_ms <= 0) continue;
    if (base_ms == 0) base_ms = run->timing.median_ms, base = &run->timing;
    run->speedup = base_ms / run->timing.median_ms;
    /* Under 4 samples on either side, quartiles mean little: the extremes instead. */
    bool few = base->n_samples < 4 || run->timing.n_samples < 4;
    double b_lo, b_hi, r_lo, r_hi;
    spread(base, few, &b_lo, &b_hi);
    spread(&run->timing, few, &r_lo, &r_hi);
    if (r_hi > 0 && r_lo > 0) run->speedup_lo = b_lo / r_hi, run->speedup_hi = b_hi / r_lo;
    /* work per ms / 1e6 = work per s / 1e9: GB/s or GFLOP/s */
    if (run->check.done && run->check.passed) run->figure = work / run->timing.median_ms / 1e6;
  }
}

const char *exp_clock_reason_name(uint64_t bit) {
  switch (bit) {
  case EXP_CLOCK_GPU_IDLE: return "gpu_idle";
  case EXP_CLOCK_APPLICATIONS_CLOCKS: return "applications_clocks_setting";
  case EXP_CLOCK_SW_POWER_CAP: return "sw_power_cap";
  case EXP_CLOCK_HW_SLOWDOWN: return "hw_slowdown";
  case EXP_CLOCK_SYNC_BOOST: return "sync_boost";
  case EXP_CLOCK_SW_THERMAL: return "sw_thermal_slowdown";
  case EXP_CLOCK_HW_THERMAL: return "hw_thermal_slowdown";
  case EXP_CLOCK_HW_POWER_BRAKE: return "hw_power_brake_slowdown";
  case EXP_CLOCK_DISPLAY_CLOCKS: return "display_clock_setting";
  default: return NULL;
  }
}

bool exp_result_passed(const struct exp_result *result) {
  int ran = 0;
  for (int i = 0; i < result->n_runs; i++) {
    const struct exp_run *r = &result->runs[i];
    if (!r->available) continue;
    if (!(r->check.done && r->check.passed)) return false;
    ran++;
  }
  return ran > 0; /* nothing ran, nothing passed */
}

/* ---- inputs and shapes ---- */

int exp_input_count(enum exp_type type) { return type == EXP_GEMM ? 2 : 1; }

const char *exp_input_name(enum exp_type type, int slot) {
  if (slot == 0) return type == EXP_TRANSPOSE || type == EXP_GEMM ? "a" : "x";
  return slot == 1 && type == EXP_GEMM ? "b" : NULL;
}

static void shape2(struct exp_shape *s, int64_t rows, int64_t cols) {
  *s = (struct exp_shape){2, {rows, cols}};
}
static void shape1(struct exp_shape *s, int64_t n) { *s = (struct exp_shape){1, {n, 0}}; }

void exp_input_shape(const struct exp_spec *spec, int slot, struct exp_shape *shape) {
  switch (spec->type) {
  case EXP_TRANSPOSE: shape2(shape, spec->u.transpose.m, spec->u.transpose.n); break;
  case EXP_GEMM:
    if (slot == 0)
      shape2(shape, spec->u.gemm.m, spec->u.gemm.k);
    else
      shape2(shape, spec->u.gemm.k, spec->u.gemm.n);
    break;
  case EXP_STENCIL: shape1(shape, spec->u.stencil.n); break;
  default: shape1(shape, (int64_t)spec->u.pipeline.chunk * spec->u.pipeline.chunks); break;
  }
}

void exp_output_shape(const struct exp_spec *spec, struct exp_shape *shape) {
  switch (spec->type) {
  case EXP_TRANSPOSE: /* the output is the first run's: copy keeps A's shape */
    if (spec->n_variants > 0 && spec->variants[0] == TRANSPOSE_COPY)
      shape2(shape, spec->u.transpose.m, spec->u.transpose.n);
    else
      shape2(shape, spec->u.transpose.n, spec->u.transpose.m);
    break;
  case EXP_GEMM: shape2(shape, spec->u.gemm.m, spec->u.gemm.n); break;
  default: exp_input_shape(spec, 0, shape); break;
  }
}

int64_t exp_shape_count(const struct exp_shape *shape) {
  return shape->ndim == 2 ? shape->dims[0] * shape->dims[1] : shape->dims[0];
}

void exp_shape_format(const struct exp_shape *shape, char *buf, size_t len) {
  if (shape->ndim == 2)
    snprintf(buf, len, "(%lld, %lld)", (long long)shape->dims[0], (long long)shape->dims[1]);
  else
    snprintf(buf, len, "(%lld,)", (long long)shape->dims[0]);
}

/* Sets *dim to value unless the request fixed it to something else. */
static bool fit_dim(int *dim, int64_t value, bool given) {
  if (value < 1 || value > INT32_MAX) return false;
  if (given && *dim != value) return false;
  *dim = (int)value;
  return true;
}

static int shape_mismatch(const struct exp_spec *spec, int slot, const struct exp_shape *got,
                          const char *why, char *msg, size_t len) {
  char want[48], have[48];
  struct exp_shape expected;
  exp_input_shape(spec, slot, &expected);
  exp_shape_format(&expected, want, sizeof want);
  exp_shape_format(got, have, sizeof have);
  snprintf(msg, len, "input %s has shape %s but this %s job needs %s%s%s",
           exp_input_name(spec->type, slot), have, exp_type_name(spec->type), want,
           why ? ": " : "", why ? why : "");
  return -1;
}

int exp_spec_fit_input(struct exp_spec *spec, int slot, const struct exp_shape *shape,
                       char *msg, size_t msg_len) {
  const struct exp_spec before = *spec; /* messages quote the shape asked before fitting */
  unsigned g = spec->dims_given;
  int64_t count = exp_shape_count(shape);
  int64_t rows = shape->ndim == 2 ? shape->dims[0] : 1, cols = shape->ndim == 2 ? shape->dims[1] : shape->dims[0];
  bool ok = true;
  switch (spec->type) {
  case EXP_TRANSPOSE:
    ok = fit_dim(&spec->u.transpose.m, rows, g & EXP_DIM_M) && fit_dim(&spec->u.transpose.n, cols, g & EXP_DIM_N);
    if (ok) spec->dims_given |= EXP_DIM_M | EXP_DIM_N;
    break;
  case EXP_GEMM: {
    bool k_fixed = (g & EXP_DIM_K) != 0; /* by the request or by the other input */
    if (slot == 0)
      ok = fit_dim(&spec->u.gemm.m, rows, g & EXP_DIM_M) && fit_dim(&spec->u.gemm.k, cols, k_fixed);
    else
      ok = fit_dim(&spec->u.gemm.k, rows, k_fixed) && fit_dim(&spec->u.gemm.n, cols, g & EXP_DIM_N);
    int64_t k_of_input = slot == 0 ? cols : rows;
    if (!ok && k_fixed && k_of_input != spec->u.gemm.k) {
      *spec = before;
      return shape_mismatch(spec, slot, shape, "the inner dimensions (k) of a and b must agree", msg, msg_len);
    }
    if (ok) spec->dims_given |= EXP_DIM_K | (slot == 0 ? EXP_DIM_M : EXP_DIM_N);
    break;
  }
  case EXP_STENCIL:
    ok = fit_dim(&spec->u.stencil.n, count, g & EXP_DIM_N);
    if (ok) spec->dims_given |= EXP_DIM_N;
    break;
  case EXP_PIPELINE: {
    struct { int chunk, chunks; } d = {spec->u.pipeline.chunk, spec->u.pipeline.chunks};
    if (g & EXP_DIM_CHUNK)
      ok = count % d.chunk == 0 && count / d.chunk <= 64 && fit_dim(&d.chunks, count / d.chunk, false);
    else
      ok = count % d.chunks == 0 && fit_dim(&d.chunk, count / d.chunks, false);
    if (!ok)
      return shape_mismatch(spec, slot, shape, "its length must be chunk * chunks", msg, msg_len);
    spec->u.pipeline.chunk = d.chunk;
    spec->u.pipeline.chunks = d.chunks;
    spec->dims_given |= EXP_DIM_CHUNK;
    break;
  }
  default: ok = false;
  }
  if (ok) return 0;
  *spec = before;
  return shape_mismatch(spec, slot, shape, NULL, msg, msg_len);
}

/* ---- work counts, run labels and the pipeline's plans ---- */

void exp_spec_work_counts(const struct exp_spec *spec, struct exp_work *w) {
  *w = (struct exp_work){0, 0, ""};
  switch (spec->type) {
  case EXP_TRANSPOSE:
    w->bytes = 8.0 * spec->u.transpose.m * (double)spec->u.transpose.n;
    w->counted = "bytes: each element read once and written once (4 + 4 bytes); no flops";
    break;
  case EXP_GEMM: {
    double m = spec->u.gemm.m, n = spec->u.gemm.n, k = spec->u.gemm.k;
    w->flops = 2.0 * m * n * k;
    w->bytes = 4.0 * (m * k + k * n + m * n);
    w->counted = "flops: one multiply and one add per term (2mnk); bytes: the minimum, A, B "
                 "and C once each";
    break;
  }
  case EXP_STENCIL:
    w->bytes = 8.0 * spec->u.stencil.n;
    w->flops = (2.0 * spec->u.stencil.radius + 1) * spec->u.stencil.n;
    w->counted = "bytes: x read once and y written once (the minimum); flops: 2r+1 adds per "
                 "output";
    break;
  case EXP_PIPELINE: {
    double n = (double)spec->u.pipeline.chunk * spec->u.pipeline.chunks;
    w->bytes = 8.0 * n;
    w->flops = (double)spec->u.pipeline.terms * n;
    w->counted = "bytes: uploaded and downloaded over the bus; flops: sin terms (terms per "
                 "sample), not counted in the figure";
    break;
  }
  default: break;
  }
}

int exp_run_count(const struct exp_spec *spec) {
  return spec->type == EXP_PIPELINE ? spec->u.pipeline.n_stream_counts : spec->n_variants;
}

void exp_run_label(const struct exp_spec *spec, int i, char *buf, size_t len) {
  if (spec->type != EXP_PIPELINE) {
    const char *name = exp_variant_name(spec->type, spec->variants[i]);
    snprintf(buf, len, "%s", name ? name : "?");
    return;
  }
  int entry = spec->u.pipeline.stream_counts[i];
  if (entry == EXP_STREAMS_BEST) snprintf(buf, len, "best");
  else if (entry == EXP_STREAMS_BEST_GRAPH) snprintf(buf, len, "best_graph");
  else snprintf(buf, len, "streams=%d", entry);
}

/* best: chunks of about total / 24 (between 1 and 16 MiB, whole KiB), enough that
 * filling and draining the pipeline costs little, big enough that each copy runs at
 * the bus's speed; four streams, so that the upload of chunk c+3 never queues behind
 * the download of chunk c on its stream. */
static void best_plan(int64_t total, struct exp_pipeline_plan *p) {
  int64_t bytes = total * (int64_t)sizeof(float), target = bytes / 24;
  if (target < EXP_BEST_CHUNK_MIN_BYTES) target = EXP_BEST_CHUNK_MIN_BYTES;
  if (target > EXP_BEST_CHUNK_MAX_BYTES) target = EXP_BEST_CHUNK_MAX_BYTES;
  int64_t chunk = (target / (int64_t)sizeof(float) + 1023) / 1024 * 1024;
  if (chunk > total) chunk = total;
  p->chunk = chunk;
  p->chunks = chunk > 0 ? (int)((total + chunk - 1) / chunk) : 0;
  p->streams = p->chunks < EXP_BEST_STREAMS ? (p->chunks > 0 ? p->chunks : 1) : EXP_BEST_STREAMS;
  p->depth_first = true;
  p->best = true;
}

void exp_pipeline_plan(const struct exp_spec *spec, int entry, struct exp_pipeline_plan *p) {
  memset(p, 0, sizeof *p);
  p->total = (int64_t)spec->u.pipeline.chunk * spec->u.pipeline.chunks;
  if (entry == EXP_STREAMS_BEST || entry == EXP_STREAMS_BEST_GRAPH) {
    best_plan(p->total, p);
    p->graph = entry == EXP_STREAMS_BEST_GRAPH;
    return;
  }
  p->chunk = spec->u.pipeline.chunk;
  p->chunks = spec->u.pipeline.chunks;
  p->streams = entry;
}

int64_t exp_pipeline_chunk_len(const struct exp_pipeline_plan *p, int c) {
  int64_t start = (int64_t)c * p->chunk, left = p->total - start;
  return left < 0 ? 0 : left < p->chunk ? left : p->chunk;
}
