/* The experiment model's functions (experiment.h): defaults, shapes, work counts,
 * labels and results of a spec, each read from its experiment's descriptor. */
#include "kernels/core/experiment.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/stats.h"

static const struct exp_desc *desc_of(const struct exp_spec *spec) { return exp_desc(spec->type); }

/* ---- specs ---- */

int exp_spec_default(enum exp_type type, struct exp_spec *spec) {
  const struct exp_desc *d = exp_desc(type);
  memset(spec, 0, sizeof *spec);
  spec->type = type; /* an unknown one stays unknown: every lookup then fails */
  if (!d) return -EINVAL;
  spec->seed = 2026;
  for (int i = 0; i < EXP_MAX_INPUTS; i++)
    spec->inputs[i] = (struct exp_input){EXP_INPUT_SEED, spec->seed};
  for (int i = 0; i < d->n_params; i++) spec->p[i] = d->params[i].def;
  if (d->runs) {
    spec->n_variants = d->runs->n_defaults;
    for (int i = 0; i < spec->n_variants; i++) spec->variants[i] = d->runs->defaults[i];
  } else {
    spec->n_variants = d->n_variants;
    for (int i = 0; i < spec->n_variants; i++) spec->variants[i] = i;
  }
  /* Every experiment interleaves its runs across batches; the lecture's one-variant-
   * after-another order stays available as "order": "sequential". */
  spec->order = EXP_ORDER_ALTERNATING;
  spec->stop = (struct exp_stop_params){0, 0.0, 10.0}; /* fixed batches; 10 s with max_noise */
  spec->timing = d->timing;
  return 0;
}

int exp_variant_count(enum exp_type type) {
  const struct exp_desc *d = exp_desc(type);
  return d ? d->n_variants : 0;
}

const char *exp_variant_name(enum exp_type type, int variant) {
  const struct exp_desc *d = exp_desc(type);
  return d && variant >= 0 && variant < d->n_variants ? d->variants[variant].name : NULL;
}

int exp_variant_from_name(enum exp_type type, const char *name) {
  const struct exp_desc *d = exp_desc(type);
  for (int i = 0; d && i < d->n_variants; i++)
    if (strcmp(name, d->variants[i].name) == 0) return i;
  return -1;
}

const struct exp_variant *exp_variant_of(const struct exp_spec *spec, int entry) {
  const struct exp_desc *d = desc_of(spec);
  return d && !d->runs && entry >= 0 && entry < d->n_variants ? &d->variants[entry] : NULL;
}

const struct exp_user *exp_user_of(enum exp_type type) {
  const struct exp_desc *d = exp_desc(type);
  return d ? d->user : NULL;
}

int exp_param_index(enum exp_type type, const char *name) {
  const struct exp_desc *d = exp_desc(type);
  for (int i = 0; d && i < d->n_params; i++)
    if (strcmp(name, d->params[i].name) == 0) return i;
  return -1;
}

/* ---- inputs and shapes ---- */

int exp_input_count(enum exp_type type) {
  const struct exp_desc *d = exp_desc(type);
  return d ? d->n_inputs : 0;
}

bool exp_spec_reads_data(const struct exp_spec *spec) {
  for (int s = 0; s < EXP_MAX_INPUTS; s++)
    if (spec->inputs[s].kind != EXP_INPUT_SEED) return true;
  for (int k = 0; spec->type == EXP_PROBLEM && k < EXP_PROBLEM_MAX_INPUTS; k++)
    if (spec->problem.input_buffer[k]) return true;
  return false;
}

const char *exp_input_name(enum exp_type type, int slot) {
  const struct exp_desc *d = exp_desc(type);
  return d && slot >= 0 && slot < d->n_inputs ? d->inputs[slot].name : NULL;
}

void exp_input_shape(const struct exp_spec *spec, int slot, struct exp_shape *shape) {
  const struct exp_desc *d = desc_of(spec);
  *shape = (struct exp_shape){1, {0, 0}};
  if (!d || slot < 0 || slot >= d->n_inputs) return;
  if (d->input_shape)
    d->input_shape(spec, slot, shape);
  else
    *shape = exp_shape_1d(spec->p[d->vector_n]);
}

void exp_output_shape(const struct exp_spec *spec, struct exp_shape *shape) {
  const struct exp_desc *d = desc_of(spec);
  *shape = (struct exp_shape){1, {0, 0}};
  if (d && d->output_shape)
    d->output_shape(spec, shape);
  else if (d)
    exp_input_shape(spec, 0, shape);
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

int exp_fit_mismatch(const struct exp_spec *spec, int slot, const struct exp_shape *got,
                     const char *why, char *msg, size_t len) {
  char want[48], have[48];
  struct exp_shape expected;
  exp_input_shape(spec, slot, &expected);
  exp_shape_format(&expected, want, sizeof want);
  exp_shape_format(got, have, sizeof have);
  const char *input = exp_input_name(spec->type, slot), *type = exp_type_name(spec->type);
  snprintf(msg, len, "input %s has shape %s but this %s job needs %s%s%s", input ? input : "?",
           have, type ? type : "?", want, why ? ": " : "", why ? why : "");
  return -1;
}

/* Sets *dim to value unless the request (or another input) fixed it to another. */
static bool fit_dim(int *dim, int64_t value, bool given) {
  if (value < 1 || value > INT32_MAX) return false;
  if (given && *dim != value) return false;
  *dim = (int)value;
  return true;
}

int exp_fit_dims(struct exp_spec *spec, int slot, const struct exp_shape *shape, const int *dims,
                 int ndim, const char *why, char *msg, size_t msg_len) {
  const struct exp_spec before = *spec; /* messages quote the shape asked before fitting */
  int64_t value[2];
  if (ndim == 1) {
    value[0] = exp_shape_count(shape);
  } else {
    value[0] = shape->ndim == 2 ? shape->dims[0] : 1; /* a 1-D shape is one row */
    value[1] = shape->ndim == 2 ? shape->dims[1] : shape->dims[0];
  }
  bool ok = ndim == 1 || ndim == 2;
  for (int i = 0; ok && i < ndim; i++)
    ok = fit_dim(&spec->p[dims[i]], value[i], (spec->dims_given >> dims[i]) & 1u);
  if (ok) {
    for (int i = 0; i < ndim; i++) spec->dims_given |= 1u << dims[i];
    return 0;
  }
  *spec = before;
  return exp_fit_mismatch(spec, slot, shape, why, msg, msg_len);
}

int exp_spec_fit_input(struct exp_spec *spec, int slot, const struct exp_shape *shape, char *msg,
                       size_t msg_len) {
  const struct exp_desc *d = desc_of(spec);
  if (!d || slot < 0 || slot >= d->n_inputs) {
    snprintf(msg, msg_len, "a %s job has no input slot %d", d ? d->name : "?", slot);
    return -1;
  }
  if (d->fit_input) return d->fit_input(spec, slot, shape, msg, msg_len);
  const int dims[] = {d->vector_n}; /* EXP_VECTOR: x of any shape, its count is n */
  return exp_fit_dims(spec, slot, shape, dims, 1, NULL, msg, msg_len);
}

/* ---- memory and work ---- */

uint64_t exp_spec_bytes(const struct exp_spec *spec) {
  /* Inputs, one output per run (each is checked after all timing), the job's own
   * output, computed once before timing, and every run's scratch (the CUDA backend
   * keeps a run's for all its launches, cuda_launch.d_temp; where a launch takes its
   * own instead, gemm's, the sum over-counts: its launches run one at a time). */
  const struct exp_desc *d = desc_of(spec);
  if (!d) return 0;
  if (d->spec_bytes) return d->spec_bytes(spec);
  struct exp_shape in, out;
  uint64_t inputs = 0, scratch = 0;
  for (int s = 0; s < d->n_inputs; s++) {
    exp_input_shape(spec, s, &in);
    inputs += (uint64_t)exp_shape_count(&in);
  }
  exp_output_shape(spec, &out);
  bool users = false;
  for (int r = 0; r < spec->n_variants; r++) {
    users = users || (d->user && exp_variant_is_user(spec->variants[r]));
    scratch += d->scratch_floats ? d->scratch_floats(spec, spec->variants[r]) : 0;
  }
  uint64_t floats = (users ? 2 : 1) * inputs +
                    (uint64_t)(spec->n_variants + 1) * (uint64_t)exp_shape_count(&out);
  return sizeof(float) * (floats + scratch);
}

void exp_spec_work_counts(const struct exp_spec *spec, struct exp_work *w) {
  const struct exp_desc *d = desc_of(spec);
  *w = (struct exp_work){0, 0, ""};
  if (d) d->work(spec, w);
}

enum exp_figure exp_spec_figure(const struct exp_spec *spec) {
  const struct exp_desc *d = desc_of(spec);
  return !d ? EXP_FIGURE_GBPS : d->figure_of ? d->figure_of(spec) : d->figure;
}

const char *exp_spec_figure_unit(const struct exp_spec *spec) {
  if (!desc_of(spec)) return NULL;
  return exp_spec_figure(spec) == EXP_FIGURE_GFLOPS ? "GFLOP/s" : "GB/s";
}

double exp_spec_work(const struct exp_spec *spec) {
  const struct exp_desc *d = desc_of(spec);
  struct exp_work w;
  exp_spec_work_counts(spec, &w);
  return !d ? 0 : exp_spec_figure(spec) == EXP_FIGURE_GFLOPS ? w.flops : w.bytes;
}

const char *exp_figure_unit(enum exp_type type) {
  const struct exp_desc *d = exp_desc(type);
  return !d ? NULL : d->figure == EXP_FIGURE_GFLOPS ? "GFLOP/s" : "GB/s";
}

const char *exp_work_unit(enum exp_type type) {
  const struct exp_desc *d = exp_desc(type);
  return !d ? NULL : d->figure == EXP_FIGURE_GFLOPS ? "flop" : "bytes";
}

enum exp_ceiling exp_run_ceiling(const struct exp_spec *spec, int entry) {
  const struct exp_desc *d = desc_of(spec);
  const struct exp_variant *v = exp_variant_of(spec, entry);
  if (v && v->ceiling != EXP_CEILING_DEFAULT) return v->ceiling;
  if (d && d->figure_of) /* a problem's: by what its figure counts */
    return exp_spec_figure(spec) == EXP_FIGURE_GFLOPS ? EXP_CEILING_SGEMM : EXP_CEILING_COPY;
  return d ? d->ceiling : EXP_CEILING_DEFAULT;
}

const char *exp_ceiling_name(enum exp_ceiling which) {
  static const char *const names[EXP_CEILING_COUNT] = {
      NULL, "copy_gbps", "sgemm_gflops", "tf32_gflops", "h2d_gbps", "d2h_gbps", "bidir_gbps"};
  return (unsigned)which < EXP_CEILING_COUNT ? names[which] : NULL;
}

double exp_ceiling_value(const struct exp_ceilings *c, enum exp_ceiling which) {
  switch (which) {
  case EXP_CEILING_COPY: return c->copy_gbps;
  case EXP_CEILING_SGEMM: return c->sgemm_gflops;
  case EXP_CEILING_TF32: return c->tf32_gflops;
  case EXP_CEILING_H2D: return c->h2d_gbps;
  case EXP_CEILING_D2H: return c->d2h_gbps;
  case EXP_CEILING_BIDIR: return c->bidir_gbps;
  default: return 0;
  }
}

/* ---- the limit at a run's size ---- */

const char *exp_limit_mode_name(enum exp_limit_mode mode) {
  static const char *const names[EXP_LIMIT_MODES] = {"batch", "alone", "cold"};
  return (unsigned)mode < EXP_LIMIT_MODES ? names[mode] : NULL;
}

int exp_limit_class(double bytes) {
  if (!(bytes > 0)) return -1;
  int e;
  double m = frexp(bytes, &e);        /* bytes = m 2^e, m in [0.5, 1) */
  int k = m >= M_SQRT1_2 ? e : e - 1; /* the nearer of 2^(e-1) and 2^e, by ratio */
  return k < EXP_LIMIT_MIN_LOG2 || k > EXP_LIMIT_MAX_LOG2 ? -1 : k - EXP_LIMIT_MIN_LOG2;
}

void exp_limit_of(const struct exp_spec *spec, const struct exp_limits *limits, bool alone,
                  struct exp_limit *out) {
  *out = (struct exp_limit){0};
  if (exp_spec_figure(spec) != EXP_FIGURE_GBPS) return;
  int c = exp_limit_class(exp_spec_work(spec));
  enum exp_limit_mode mode = spec->cold ? EXP_LIMIT_COLD
                             : alone    ? EXP_LIMIT_ALONE
                                        : EXP_LIMIT_BATCH;
  if (c < 0 || !(limits->gbps[mode][c] > 0)) return;
  *out = (struct exp_limit){(int64_t)1 << (EXP_LIMIT_MIN_LOG2 + c), limits->gbps[mode][c], mode};
}

/* ---- runs ---- */

int exp_run_count(const struct exp_spec *spec) { return spec->n_variants; }

static void (*user_label)(long long version_id, char *buf, size_t len);

void exp_set_user_label(void (*fn)(long long version_id, char *buf, size_t len)) {
  user_label = fn;
}

void exp_run_label(const struct exp_spec *spec, int i, char *buf, size_t len) {
  const struct exp_desc *d = desc_of(spec);
  int entry = spec->variants[i];
  if (d && d->user && exp_variant_is_user(entry)) {
    if (user_label)
      user_label(exp_user_kernel_id(entry), buf, len);
    else
      snprintf(buf, len, "kernel:%lld", exp_user_kernel_id(entry));
    return;
  }
  if (!d || !d->runs) {
    const char *name = exp_variant_name(spec->type, entry);
    snprintf(buf, len, "%s", name ? name : "?");
    return;
  }
  const struct exp_runs_param *r = d->runs;
  for (int w = 0; r->word && w < r->n_word_runs; w++)
    if (entry == r->word_runs[w]) {
      snprintf(buf, len, "%s", r->word_labels[w]);
      return;
    }
  snprintf(buf, len, "%s=%d", r->name, entry);
}

/* ---- timing and results ---- */

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

/* A user's run whose timed samples hold one apart from the others beyond their noise
 * (a kernel that works in some launches only, or stages its time) says so. A slow
 * first launch is no sample: warm-ups are untimed. */
static void uneven_samples(struct exp_run *run) {
  const struct exp_timing *t = &run->timing;
  double apart;
  int i = stats_apart(t->samples_ms, t->n_samples, &apart);
  if (i >= 0)
    snprintf(run->uneven, sizeof run->uneven,
             "batch %d of %d took %.4g ms against a median of %.4g ms (%.0f%% apart, beyond the "
             "others' noise)",
             i + 1, t->n_samples, t->samples_ms[i], t->median_ms, 100 * apart);
}

void exp_result_finish(const struct exp_spec *spec, struct exp_result *result) {
  double work = exp_spec_work(spec), base_ms = 0;
  const struct exp_timing *base = NULL;
  for (int i = 0; i < result->n_runs; i++) {
    struct exp_run *run = &result->runs[i];
    run->figure = 0;
    run->speedup = run->speedup_lo = run->speedup_hi = 0;
    run->uneven[0] = '\0';
    if (run->launch_failure[0] && run->check.done) { /* the last output may be right: no matter */
      run->check.passed = false;
      snprintf(run->check.failure, sizeof run->check.failure, "%s", run->launch_failure);
    }
    if (!run->available || run->timing.n_samples == 0 || run->timing.median_ms <= 0) continue;
    if (exp_variant_is_user(run->variant)) uneven_samples(run);
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
  exp_result_refuse_implausible(spec, result);
}

int exp_result_refuse_implausible(const struct exp_spec *spec, struct exp_result *result) {
  const char *unit = exp_figure_unit(spec->type);
  int refused = 0;
  for (int i = 0; i < result->n_runs; i++) {
    struct exp_run *r = &result->runs[i];
    enum exp_ceiling which = exp_run_ceiling(spec, r->variant);
    double ceiling = exp_ceiling_value(&result->ceilings, which);
    /* Where the data fits the L2 a copy beats the large-size ceiling: the bound is then
     * the copy of as many bytes, timed the same way (the limit at this size). */
    bool at_limit = which == EXP_CEILING_COPY && ceiling > 0 && result->limit.gbps > ceiling;
    double bound = at_limit ? result->limit.gbps : ceiling;
    if (!r->available || !exp_variant_is_user(r->variant) || !(bound > 0) ||
        !(r->figure > bound * EXP_IMPLAUSIBLE_MARGIN))
      continue;
    snprintf(r->refused, sizeof r->refused, "implausible_result: %.0f %s is above %s (%.0f %s)",
             r->figure, unit ? unit : "",
             at_limit ? "a copy of as many bytes on this device, timed the same way"
                      : "this device's measured ceiling",
             bound, unit ? unit : "");
    r->check.passed = false;
    r->figure = r->speedup = r->speedup_lo = r->speedup_hi = 0;
    refused++;
  }
  return refused;
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

struct exp_result *exp_result_kept(const struct exp_result *result) {
  int n = result->n_runs < 0                  ? 0
          : result->n_runs > EXP_MAX_VARIANTS ? EXP_MAX_VARIANTS
                                              : result->n_runs;
  size_t size = offsetof(struct exp_result, runs) + (size_t)n * sizeof result->runs[0];
  struct exp_result *kept = malloc(size);
  if (kept) memcpy(kept, result, size);
  return kept;
}

/* ---- clocks ---- */

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

void exp_clocks_fill(struct exp_clocks *c, const struct exp_clock_reading *before,
                     const struct exp_clock_reading *after) {
  c->valid = true;
  c->sm_mhz_before = before->sm_mhz;
  c->sm_mhz_after = after->sm_mhz;
  c->temp_c = before->temp_c > after->temp_c ? before->temp_c : after->temp_c;
  c->power_w = after->power_w;
  c->reasons = (before->reasons | after->reasons) & ~EXP_CLOCK_GPU_IDLE;
  c->throttled = (c->reasons & EXP_CLOCK_THROTTLED) != 0;
}
