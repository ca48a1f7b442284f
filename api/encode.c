/* Result encoding: the lecture's tables as JSON. */
#include "api/encode.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api/json_writer.h"
#include "api/utf8.h"
#include "kernels/problem/problem_plan.h"

/* n as width decimal digits at out. */
static void digits(char *out, int width, long long n) {
  for (int i = width - 1; i >= 0; i--, n /= 10) out[i] = (char)('0' + n % 10);
}

void api_format_time(double unix_s, char *buf, size_t len) {
  time_t secs = (time_t)unix_s;
  int ms = (int)((unix_s - (double)secs) * 1000.0);
  if (ms < 0) ms = 0;
  if (ms > 999) ms = 999;
  if (secs >= 0 && secs < 253402300800 && len >= 25) { /* 1970 to 9999: by arithmetic */
    /* The civil date of a day count (Howard Hinnant's civil_from_days, for days >= 0):
     * gmtime_r takes glibc's time zone lock, strftime and snprintf parse formats, and a
     * job's document has four of these. The same text as below. */
    long long day = secs / 86400 + 719468, of_day = secs % 86400;
    long long era = day / 146097, doe = day - era * 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    long long d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
    long long y = yoe + era * 400 + (m <= 2);
    memcpy(buf, "0000-00-00T00:00:00.000Z", 25);
    digits(buf, 4, y);
    digits(buf + 5, 2, m);
    digits(buf + 8, 2, d);
    digits(buf + 11, 2, of_day / 3600);
    digits(buf + 14, 2, of_day / 60 % 60);
    digits(buf + 17, 2, of_day % 60);
    digits(buf + 20, 3, ms);
    return;
  }
  struct tm tm;
  gmtime_r(&secs, &tm);
  char base[24];
  strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf, len, "%s.%03dZ", base, ms);
}

/* A finite double, or null: JSON has no NaN or infinity. */
static void real_or_null(struct jw *w, const char *key, double x) {
  if (isfinite(x))
    jw_real(w, key, x);
  else
    jw_null(w, key);
}

/* The runs list as a request gives it: the word once for the runs it stands for. */
static void runs_write(struct jw *w, const struct exp_runs_param *rp, const struct exp_spec *spec) {
  jw_array_begin(w, rp->name);
  for (int i = 0; i < spec->n_variants; i++) {
    int entry = spec->variants[i], n = 0;
    while (rp->word && n < rp->n_word_runs && entry != rp->word_runs[n]) n++;
    if (!rp->word || n == rp->n_word_runs)
      jw_integer(w, NULL, entry);
    else if (n == 0)
      jw_string(w, NULL, rp->word);
  }
  jw_array_end(w);
}

/* A problem's params by their names, in its order (known here from the job's
 * submission or recovery: problem_plan_names). */
static void problem_params_write(struct jw *w, const struct exp_spec *spec) {
  char names[EXP_PROBLEM_MAX_PARAMS][PROBLEM_PLAN_NAME];
  int n = 0;
  if (!problem_plan_names(spec, names, &n)) return;
  for (int i = 0; i < n; i++) jw_integer(w, names[i], spec->problem.values[i]);
}

/* A problem's inputs given as buffers, by name ({"x": {"buffer": 3}}); none when every
 * input is generated from the job's seed. */
static void problem_inputs_write(struct jw *w, const struct exp_spec *spec) {
  char names[PROBLEM_PLAN_MAX_BUFFERS][PROBLEM_PLAN_NAME];
  int n = 0;
  bool any = false;
  for (int k = 0; k < EXP_PROBLEM_MAX_INPUTS; k++) any |= spec->problem.input_buffer[k] != 0;
  if (!any || !problem_plan_input_names(spec, names, &n)) return;
  jw_object_begin_whole(w, "inputs");
  for (int k = 0; k < n; k++) {
    if (!spec->problem.input_buffer[k]) continue;
    jw_object_begin_whole(w, names[k]);
    jw_integer(w, "buffer", (long long)spec->problem.input_buffer[k]);
    jw_object_end(w);
  }
  jw_object_end(w);
}

void api_spec_write(struct jw *w, const char *key, const struct exp_spec *spec) {
  const struct exp_desc *d = exp_desc(spec->type);
  if (!d) return;
  jw_object_begin(w, key);
  for (int i = 0; i < d->n_params; i++) jw_integer(w, d->params[i].name, spec->p[i]);
  if (spec->type == EXP_PROBLEM) problem_params_write(w, spec);
  if (d->runs) {
    runs_write(w, d->runs, spec);
  } else {
    jw_array_begin(w, "variant");
    for (int i = 0; i < spec->n_variants; i++) { /* names, and users' kernels as kernel:<id> */
      char label[32];
      exp_run_label(spec, i, label, sizeof label);
      jw_string(w, NULL, label);
    }
    jw_array_end(w);
  }
  static const char *const sources[] = {"seed", "buffer", "job"};
  for (int i = 0; i < d->n_inputs; i++) {
    jw_object_begin_whole(w, d->inputs[i].name);
    jw_integer(w, sources[spec->inputs[i].kind], (long long)spec->inputs[i].value);
    jw_object_end(w);
  }
  jw_bool(w, "graph", spec->graph);
  jw_integer(w, "seed", (long long)spec->seed);
  jw_integer(w, "warmup", spec->timing.warmup);
  jw_integer(w, "batches", spec->timing.batches);
  jw_integer(w, "reps", spec->timing.reps);
  if (!(d->flags & EXP_NO_COLD)) jw_bool(w, "cold", spec->cold);
  if (spec->type == EXP_PROBLEM) {
    jw_object_begin_whole(w, "problem");
    jw_string(w, "name", spec->problem.name);
    jw_integer(w, "version", spec->problem.version);
    jw_object_end(w);
    problem_inputs_write(w, spec);
  }
  if (spec->profile)
    jw_string(w, "profile", exp_profile_mode_name(spec->profile));
  else
    jw_bool(w, "profile", false);
  jw_string(w, "order", spec->order == EXP_ORDER_SEQUENTIAL ? "sequential" : "interleaved");
  jw_integer(w, "min_samples",
             spec->stop.min_samples > 0 ? spec->stop.min_samples : spec->timing.batches);
  jw_real(w, "max_noise", spec->stop.max_noise);
  jw_real(w, "max_time", spec->stop.max_time_s);
  jw_object_end(w);
}

json_t *api_spec_to_json(const struct exp_spec *spec) {
  struct jw w;
  jw_tree_begin(&w);
  api_spec_write(&w, NULL, spec);
  return jw_tree_end(&w);
}

static void check_write(struct jw *w, const struct exp_check *c) {
  if (!c->done) {
    jw_null(w, "check");
    return;
  }
  jw_object_begin(w, "check");
  jw_bool(w, "passed", c->passed);
  jw_string(w, "checked", c->sampled ? "sample" : "all");
  if (c->sampled) jw_integer(w, "rows_checked", c->rows_checked);
  jw_integer(w, "compared", c->compared);
  jw_integer(w, "mismatches", c->mismatches);
  real_or_null(w, "max_abs_err", c->max_abs_err);
  real_or_null(w, "max_rel_err", c->max_rel_err);
  real_or_null(w, "tolerance", c->tolerance);
  jw_string(w, "tolerance_rule", c->tolerance_rule);
  jw_string(w, "reference", c->reference);
  if (c->failure[0]) jw_string(w, "failure", c->failure);
  if (c->has_precision) {
    jw_object_begin(w, "precision");
    jw_bool(w, "passed", !c->precision_failed);
    real_or_null(w, "rms_rel_err", c->precision_rms);
    if (c->precision_limit > 0)
      jw_real(w, "limit", c->precision_limit);
    else
      jw_null(w, "limit");
    jw_string(w, "rule",
              c->precision_limit > 0
                  ? "rms(c - ref) / rms(ref) over the elements compared, at most the limit: FP32 "
                    "arithmetic in any summation order stays under it, TF32, FP16 or BF16 "
                    "operands do not"
                  : "rms(c - ref) / rms(ref) over the elements compared: reported, not enforced "
                    "(inputs not generated by gpulab, or operands not FP32 by design)");
    jw_object_end(w);
  }
  jw_object_end(w);
}

static void timing_write(struct jw *w, const struct exp_timing *t) {
  if (t->n_samples == 0) {
    jw_null(w, "timing");
    return;
  }
  jw_object_begin(w, "timing");
  jw_real(w, "median_ms", t->median_ms);
  jw_real(w, "min_ms", t->min_ms);
  jw_real(w, "max_ms", t->max_ms);
  jw_real(w, "mean_ms", t->mean_ms);
  jw_real(w, "stdev_ms", t->stdev_ms);
  jw_array_begin(w, "samples_ms");
  for (int i = 0; i < t->n_samples; i++) jw_real(w, NULL, t->samples_ms[i]);
  jw_array_end(w);
  jw_integer(w, "warmup", t->warmup);
  jw_integer(w, "batches", t->batches);
  jw_integer(w, "reps", t->reps);
  if (t->capped_by) {
    jw_integer(w, "warmup_requested", t->warmup_requested);
    jw_integer(w, "reps_requested", t->reps_requested);
    jw_string(w, "capped_by", t->capped_by);
  }
  jw_string(w, "method", t->method ? t->method : "");
  jw_bool(w, "cold", t->cold);
  jw_string(w, "stopped_by", t->stopped_by ? t->stopped_by : "batches");
  real_or_null(w, "relstdev", t->relstdev);
  jw_object_end(w);
}

static void triple_write(struct jw *w, const char *key, const int v[3]) {
  jw_array_begin_whole(w, key);
  for (int i = 0; i < 3; i++) jw_integer(w, NULL, v[i]);
  jw_array_end(w);
}

static void kernel_write(struct jw *w, const struct exp_kernel_info *k) {
  jw_object_begin(w, "kernel");
  jw_string(w, "name", k->name);
  jw_string(w, "description", k->description);
  if (k->has_launch) {
    triple_write(w, "grid", k->grid);
    triple_write(w, "block", k->block);
    jw_integer(w, "registers", k->registers);
    jw_integer(w, "static_shared_bytes", k->static_shared_bytes);
    jw_integer(w, "dynamic_shared_bytes", k->dynamic_shared_bytes);
    jw_integer(w, "local_bytes", k->local_bytes);
  }
  if (k->has_occupancy) {
    jw_object_begin_whole(w, "occupancy");
    jw_integer(w, "blocks_per_sm", k->blocks_per_sm);
    jw_integer(w, "warps_per_sm", k->warps_per_sm);
    jw_integer(w, "max_warps_per_sm", k->max_warps_per_sm);
    jw_real(w, "fraction", k->occupancy);
    jw_object_end(w);
  }
  if (k->has_work) {
    jw_object_begin_whole(w, "work");
    jw_real(w, "bytes", k->work.bytes);
    jw_real(w, "flops", k->work.flops);
    jw_string(w, "counted", k->work.counted ? k->work.counted : "");
    /* arithmetic intensity: flops per byte counted; an infinite one is left out alone
     * (work's other members stay) */
    double intensity = k->work.bytes > 0 ? k->work.flops / k->work.bytes : NAN;
    if (isfinite(intensity)) jw_real(w, "flops_per_byte", intensity);
    jw_object_end(w);
  }
  jw_object_end(w);
}

static void metric_write(struct jw *w, const char *name, double v, const char *nvidia,
                         const char *unit) {
  jw_object_begin_whole(w, name);
  real_or_null(w, "value", v);
  jw_string(w, "metric", nvidia);
  jw_string(w, "unit", unit);
  jw_object_end(w);
}

/* A derived metric: a / b, with NVIDIA's names of both. */
static void ratio_write(struct jw *w, const char *name, const double *v, enum exp_profile_metric a,
                        enum exp_profile_metric b, const char *unit) {
  char formula[160];
  snprintf(formula, sizeof formula, "%s / %s", exp_profile_metrics[a].nvidia,
           exp_profile_metrics[b].nvidia);
  metric_write(w, name, v[b] > 0 ? v[a] / v[b] : NAN, formula, unit);
}

static void profile_kernel_write(struct jw *w, const struct exp_profile_kernel *k) {
  jw_object_begin(w, NULL);
  jw_string(w, "name", k->name);
  triple_write(w, "grid", k->grid);
  triple_write(w, "block", k->block);
  if (k->occupancy_limiter[0])
    jw_string(w, "occupancy_limiter", k->occupancy_limiter);
  else
    jw_null(w, "occupancy_limiter");
  jw_object_begin_whole(w, "metrics");
  for (int m = 0; m < EXP_METRIC_COUNT; m++)
    metric_write(w, exp_profile_metrics[m].name, k->value[m], exp_profile_metrics[m].nvidia,
                 exp_profile_metrics[m].unit);
  ratio_write(w, "global_load_sectors_per_request", k->value, EXP_METRIC_LOAD_SECTORS,
              EXP_METRIC_LOAD_REQUESTS, "sectors/request");
  ratio_write(w, "global_store_sectors_per_request", k->value, EXP_METRIC_STORE_SECTORS,
              EXP_METRIC_STORE_REQUESTS, "sectors/request");
  /* The lecture's n-way conflict is n - 1 extra wavefronts per request. */
  ratio_write(w, "shared_load_conflicts_per_request", k->value, EXP_METRIC_SHARED_LOAD_CONFLICTS,
              EXP_METRIC_SHARED_LOAD_REQUESTS, "conflicts/request");
  ratio_write(w, "shared_store_conflicts_per_request", k->value, EXP_METRIC_SHARED_STORE_CONFLICTS,
              EXP_METRIC_SHARED_STORE_REQUESTS, "conflicts/request");
  jw_object_end(w);
  jw_object_end(w);
}

/* A metric summed over a run's kernels; NaN when any kernel lacks it. */
static double profile_sum(const struct exp_profile *p, enum exp_profile_metric m) {
  double sum = 0;
  for (int i = 0; i < p->n_kernels; i++) sum += p->kernels[i].value[m];
  return p->n_kernels > 0 ? sum : NAN;
}

/* The run's place on the device's roofline: its FP32 flops per DRAM byte against the
 * measured copy and SGEMM ceilings (GET /device), the attained rate over the kernels'
 * profiled time. */
static void roofline_write(struct jw *w, const struct exp_profile *p,
                           const struct exp_ceilings *c) {
  double bytes = profile_sum(p, EXP_METRIC_DRAM_READ_BYTES) +
                 profile_sum(p, EXP_METRIC_DRAM_WRITE_BYTES);
  double flops = profile_sum(p, EXP_METRIC_FP32_FLOPS), ns = profile_sum(p, EXP_METRIC_DURATION_NS);
  jw_object_begin_whole(w, "totals");
  real_or_null(w, "dram_bytes", bytes);
  real_or_null(w, "fp32_flops", flops);
  real_or_null(w, "duration_ns", ns);
  real_or_null(w, "flops_per_byte", bytes > 0 ? flops / bytes : NAN);
  jw_object_end(w);
  if (!(c->copy_gbps > 0 && c->sgemm_gflops > 0 && bytes > 0 && ns > 0 && isfinite(flops))) {
    jw_null(w, "roofline");
    return;
  }
  double intensity = flops / bytes, ridge = c->sgemm_gflops / c->copy_gbps;
  double roof = fmin(c->sgemm_gflops, intensity * c->copy_gbps), attained = flops / ns;
  bool memory = intensity < ridge;
  /* Left of the ridge the roof is bandwidth: bytes / ns against the copy ceiling (the
   * same ratio as flops against intensity * copy, and defined with no flops at all). */
  double percent = memory ? 100.0 * (bytes / ns) / c->copy_gbps : 100.0 * attained / roof;
  jw_object_begin_whole(w, "roofline");
  jw_real(w, "flops_per_byte", intensity);
  jw_real(w, "attained_gflops", attained);
  jw_real(w, "attained_gbps", bytes / ns);
  jw_real(w, "ridge_flops_per_byte", ridge);
  jw_string(w, "bound", memory ? "memory" : "compute");
  jw_real(w, "roof_gflops", roof);
  jw_real(w, "percent_of_roof", percent);
  jw_string(w, "ceilings", "copy_gbps and sgemm_gflops of GET /device");
  jw_object_end(w);
}

static void profile_write(struct jw *w, const struct exp_profile *p, const struct exp_ceilings *c) {
  jw_object_begin_whole(w, "profile");
  jw_bool(w, "available", p->available);
  if (!p->available) {
    jw_string(w, "reason", p->reason);
    jw_object_end(w);
    return;
  }
  jw_string(w, "clocks", p->clocks_locked ? "locked_to_base" : "free");
  jw_string(w, "caches", p->caches_flushed ? "flushed_before_each_pass" : "as_left");
  jw_array_begin_whole(w, "kernels");
  for (int i = 0; i < p->n_kernels; i++) profile_kernel_write(w, &p->kernels[i]);
  jw_array_end(w);
  jw_integer(w, "kernels_launched",
             p->n_kernels_seen > p->n_kernels ? p->n_kernels_seen : p->n_kernels);
  roofline_write(w, p, c);
  jw_object_end(w);
}

/* How a pipeline run's passes moved the data (experiment.h's exp_pipeline_plan). */
static void plan_write(struct jw *w, const struct exp_pipeline_plan *p) {
  jw_object_begin_whole(w, "plan");
  jw_integer(w, "chunk", (long long)p->chunk);
  jw_integer(w, "chunks", p->chunks);
  jw_integer(w, "streams", p->streams);
  jw_string(w, "order", p->depth_first ? "depth_first" : "breadth_first");
  jw_bool(w, "graph", p->graph);
  jw_bool(w, "best", p->best);
  jw_object_end(w);
}

/* NVML's reason bits as names, lowest bit first. */
static void reasons_write(struct jw *w, uint64_t reasons) {
  jw_array_begin(w, "reasons");
  for (int b = 0; b < 64; b++) {
    const char *name = reasons >> b & 1 ? exp_clock_reason_name(1ull << b) : NULL;
    if (name) jw_string(w, NULL, name);
  }
  jw_array_end(w);
}

static void clocks_write(struct jw *w, const struct exp_clocks *c) {
  if (!c->valid) {
    jw_null(w, "clocks");
    return;
  }
  jw_object_begin_whole(w, "clocks");
  jw_integer(w, "sm_mhz_before", c->sm_mhz_before);
  jw_integer(w, "sm_mhz_after", c->sm_mhz_after);
  jw_integer(w, "temp_c", c->temp_c);
  jw_real(w, "power_w", c->power_w);
  reasons_write(w, c->reasons);
  jw_bool(w, "throttled", c->throttled);
  jw_object_end(w);
}

/* A chunked run's last pass: one entry per op, as recorded (chunk by chunk). */
static void timeline_write(struct jw *w, const struct exp_run *r) {
  static const char *const ops[EXP_OP_COUNT] = {"upload", "kernel", "download"};
  jw_array_begin(w, "timeline");
  for (int i = 0; i < r->n_timeline; i++) {
    const struct exp_timeline_op *t = &r->timeline[i];
    jw_object_begin_whole(w, NULL);
    jw_integer(w, "stream", t->stream);
    jw_integer(w, "chunk", t->chunk);
    jw_string(w, "op", ops[t->op % EXP_OP_COUNT]);
    jw_real(w, "start_ms", (double)t->start_ms);
    jw_real(w, "end_ms", (double)t->end_ms);
    jw_object_end(w);
  }
  jw_array_end(w);
}

/* A user's kernel that ran: who wrote what, and which version of it. The href has no
 * prefix: a job's document is written once, whatever path it is read by (the
 * leaderboard's rows put the request's prefix on theirs). */
static void user_kernel_write(struct jw *w, const struct exp_run *r) {
  char href[64];
  if (r->user.version > 0)
    snprintf(href, sizeof href, "/kernels/%lld/versions/%d", r->user.id, r->user.version);
  else
    snprintf(href, sizeof href, "/kernels/%lld", r->user.id);
  jw_object_begin_whole(w, "user_kernel");
  jw_integer(w, "id", (long long)r->user.id);
  if (r->user.version > 0) jw_integer(w, "version", r->user.version);
  jw_integer(w, "rules", EXP_USER_RULES);
  jw_string(w, "name", r->user.name);
  jw_string(w, "owner", r->user.owner);
  jw_string(w, "source_sha256", r->user.source_sha256);
  jw_string(w, "href", href);
  jw_object_end(w);
}

/* What the run measured, against what (the device ceiling it is compared with: its key
 * in GET /device's "ceilings" and its value, 0: none measured). */
static void figures_write(struct jw *w, const struct exp_spec *spec, const struct exp_run *r,
                          const struct exp_result *result) {
  const struct exp_ceilings *ceilings = &result->ceilings;
  /* A run whose check failed has no figure: a fast wrong answer is not a result. */
  if (r->figure > 0)
    jw_real(w, "figure", r->figure);
  else
    jw_null(w, "figure");
  jw_string(w, "unit", exp_spec_figure_unit(spec));
  if (r->speedup > 0)
    jw_real(w, "speedup", r->speedup);
  else
    jw_null(w, "speedup");
  if (r->speedup_lo > 0) {
    jw_array_begin_whole(w, "speedup_range");
    jw_real(w, NULL, r->speedup_lo);
    jw_real(w, NULL, r->speedup_hi);
    jw_array_end(w);
  } else {
    jw_null(w, "speedup_range");
  }
  enum exp_ceiling which = exp_run_ceiling(spec, r->variant);
  double ceiling = exp_ceiling_value(ceilings, which);
  if (ceiling > 0)
    jw_string(w, "ceiling", exp_ceiling_name(which));
  else
    jw_null(w, "ceiling");
  if (ceiling > 0 && r->figure > 0)
    jw_real(w, "percent_of_ceiling", 100.0 * r->figure / ceiling);
  else
    jw_null(w, "percent_of_ceiling");
  /* Against the copy at the job's size (result.limit), where the copy is its ceiling. */
  if (which == EXP_CEILING_COPY && result->limit.bytes > 0 && r->figure > 0)
    jw_real(w, "percent_of_limit", 100.0 * r->figure / result->limit.gbps);
  else
    jw_null(w, "percent_of_limit");
}

/* The copy at the job's size that percent_of_limit compares with; null when none. */
static void limit_write(struct jw *w, const struct exp_limit *l) {
  if (l->bytes <= 0) {
    jw_null(w, "limit");
    return;
  }
  jw_object_begin_whole(w, "limit");
  jw_integer(w, "bytes", (long long)l->bytes);
  jw_real(w, "gbps", l->gbps);
  jw_string(w, "mode", exp_limit_mode_name(l->mode));
  jw_object_end(w);
}

static void run_write(struct jw *w, const struct exp_spec *spec, const struct exp_run *r,
                      const struct exp_result *result) {
  const struct exp_ceilings *ceilings = &result->ceilings;
  const struct exp_runs_param *runs = exp_desc(spec->type)->runs;
  jw_object_begin(w, NULL);
  jw_string(w, "variant", r->label);
  if (runs) /* the list's entry; best runs: the stream count their plan chose */
    jw_integer(w, runs->name, r->plan.streams > 0 ? r->plan.streams : r->variant);
  jw_bool(w, "available", r->available);
  if (r->user.id > 0) user_kernel_write(w, r);
  if (!r->available) {
    jw_string(w, "reason", r->reason);
    jw_object_end(w);
    return;
  }
  if (r->mapped_to[0]) jw_string(w, "mapped_to", r->mapped_to);
  if (r->refused[0]) jw_string(w, "refused", r->refused); /* implausible */
  if (r->uneven[0]) {
    jw_array_begin(w, "warnings");
    jw_object_begin(w, NULL);
    jw_string(w, "code", "uneven_samples");
    jw_string(w, "detail", r->uneven);
    jw_object_end(w);
    jw_array_end(w);
  }
  check_write(w, &r->check);
  timing_write(w, &r->timing);
  figures_write(w, spec, r, result);
  clocks_write(w, &r->clocks);
  jw_bool(w, "contended", r->contended);
  if (r->graph_us_per_launch > 0) {
    jw_object_begin_whole(w, "launch");
    jw_real(w, "stream_us", r->stream_us_per_launch);
    jw_real(w, "graph_us", r->graph_us_per_launch);
    jw_real(w, "saved_us", r->stream_us_per_launch - r->graph_us_per_launch);
    jw_object_end(w);
  }
  kernel_write(w, &r->kernel);
  if (r->profile.requested) profile_write(w, &r->profile, ceilings);
  if (r->plan.streams > 0) plan_write(w, &r->plan);
  if (r->n_timeline > 0) {
    timeline_write(w, r);
    jw_integer(w, "timeline_chunks", r->n_timeline / EXP_OP_COUNT);
  }
  jw_object_end(w);
}

void api_result_write(struct jw *w, const char *key, const struct exp_spec *spec,
                      const struct exp_result *result) {
  jw_object_begin(w, key);
  jw_string(w, "backend", result->backend);
  jw_string(w, "device", result->device_name);
  jw_string(w, "unit", exp_spec_figure_unit(spec));
  jw_real(w, "work", exp_spec_work(spec));
  jw_string(w, "work_unit", exp_work_unit(spec->type));
  jw_bool(w, "passed", exp_result_passed(result));
  if (result->input_path[0]) jw_string(w, "input_path", result->input_path);
  limit_write(w, &result->limit);
  jw_array_begin(w, "runs");
  for (int i = 0; i < result->n_runs; i++) run_write(w, spec, &result->runs[i], result);
  jw_array_end(w);
  jw_object_end(w);
}

json_t *api_result_to_json(const struct exp_spec *spec, const struct exp_result *result) {
  struct jw w;
  jw_tree_begin(&w);
  api_result_write(&w, NULL, spec, result);
  return jw_tree_end(&w);
}

/* The measured ceilings (0: not measured, null), their method; null when none. */
static void ceilings_write(struct jw *w, const struct backend_device_info *d) {
  bool any = false;
  for (int which = EXP_CEILING_DEFAULT + 1; which < EXP_CEILING_COUNT; which++)
    any = any || exp_ceiling_value(&d->ceilings, (enum exp_ceiling)which) > 0;
  if (!any) {
    jw_null(w, "ceilings");
    return;
  }
  jw_object_begin(w, "ceilings");
  for (int which = EXP_CEILING_DEFAULT + 1; which < EXP_CEILING_COUNT; which++) {
    double value = exp_ceiling_value(&d->ceilings, (enum exp_ceiling)which);
    const char *name = exp_ceiling_name((enum exp_ceiling)which);
    if (value > 0)
      jw_real(w, name, value);
    else
      jw_null(w, name);
  }
  jw_string(w, "method", d->ceilings_method);
  jw_object_end(w);
}

/* The copy at each size and timing mode ({"batch": [{"bytes", "gbps"}, ...], ...,
 * "method"}); null when none was measured. */
static void limits_write(struct jw *w, const struct backend_device_info *d) {
  if (!(d->limits.gbps[EXP_LIMIT_BATCH][0] > 0)) {
    jw_null(w, "limits");
    return;
  }
  jw_object_begin(w, "limits");
  for (int mode = 0; mode < EXP_LIMIT_MODES; mode++) {
    jw_array_begin(w, exp_limit_mode_name((enum exp_limit_mode)mode));
    for (int c = 0; c < EXP_LIMIT_CLASSES; c++) {
      if (!(d->limits.gbps[mode][c] > 0)) continue;
      jw_object_begin(w, NULL);
      jw_integer(w, "bytes", 1ll << (EXP_LIMIT_MIN_LOG2 + c));
      jw_real(w, "gbps", d->limits.gbps[mode][c]);
      jw_object_end(w);
    }
    jw_array_end(w);
  }
  jw_string(w, "method", d->limits_method);
  jw_object_end(w);
}

/* CUDA's versions as major.minor (12040: "12.4"). */
static void cuda_version_write(struct jw *w, const char *key, int version) {
  char v[16];
  snprintf(v, sizeof v, "%d.%d", version / 1000, version % 1000 / 10);
  jw_string(w, key, v);
}

void api_device_write(struct jw *w, const char *key, const struct backend_device_info *d) {
  jw_object_begin(w, key);
  jw_string(w, "backend", d->backend);
  jw_string(w, "name", d->name);
  jw_integer(w, "index", d->index);
  jw_integer(w, "memory_total_bytes", (long long)d->mem_total_bytes);
  jw_integer(w, "memory_free_bytes", (long long)d->mem_free_bytes);
  if (d->cpu_cores) jw_integer(w, "cpu_cores", d->cpu_cores);
  if (d->backend[0] == 'c' && d->backend[1] == 'u') {
    char cc[16];
    snprintf(cc, sizeof cc, "%d.%d", d->cc_major, d->cc_minor);
    jw_string(w, "compute_capability", cc);
    jw_integer(w, "sms", d->sms);
    jw_integer(w, "sm_clock_mhz", d->sm_clock_mhz);
    jw_integer(w, "memory_clock_mhz", d->mem_clock_mhz);
    jw_integer(w, "memory_bus_bits", d->mem_bus_bits);
    jw_integer(w, "l2_bytes", d->l2_bytes);
    cuda_version_write(w, "cuda_runtime", d->runtime_version);
    cuda_version_write(w, "cuda_driver", d->driver_version);
  }
  ceilings_write(w, d);
  limits_write(w, d);
  if (d->nvml) {
    jw_string(w, "nvml", "available");
    jw_object_begin_whole(w, "clocks");
    jw_integer(w, "sm_mhz", d->sm_mhz_now);
    jw_integer(w, "temp_c", d->temp_c);
    jw_real(w, "power_w", d->power_w);
    reasons_write(w, d->clock_reasons);
    jw_bool(w, "throttled", (d->clock_reasons & EXP_CLOCK_THROTTLED) != 0);
    jw_object_end(w);
  } else {
    char why[160];
    snprintf(why, sizeof why, "unavailable: %s", d->nvml_why[0] ? d->nvml_why : "unknown");
    jw_string(w, "nvml", why);
    jw_null(w, "clocks");
  }
  jw_object_end(w);
}

json_t *api_device_to_json(const struct backend_device_info *d) {
  struct jw w;
  jw_tree_begin(&w);
  api_device_write(&w, NULL, d);
  return jw_tree_end(&w);
}

/* path (as sent: percent-encoded already, or not) as a URI reference: a %XX triplet
 * kept, and other bytes that a path may not hold as they are (RFC 3986: beyond
 * unreserved, sub-delims, ':', '@', '/') percent-encoded; cut to fit len. */
static void uri_path(const char *path, char *out, size_t len) {
  static const char keep[] = "-._~!$&'()*+,;=:@/";
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)path; *p && n + 4 <= len; p++) {
    if (p[0] == '%' && isxdigit(p[1]) && isxdigit(p[2])) {
      memcpy(out + n, p, 3);
      n += 3;
      p += 2;
    } else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
               strchr(keep, *p))
      out[n++] = (char)*p;
    else
      n += (size_t)snprintf(out + n, len - n, "%%%02X", *p);
  }
  out[n] = '\0';
}

json_t *api_error_to_json(const struct api_error *err, const char *instance) {
  char type[96], where[3 * 128 + 1], detail[3 * sizeof err->message], field[3 * sizeof err->field];
  api_error_type(err->code, type, sizeof type);
  uri_path(instance ? instance : "", where, sizeof where);
  utf8_scrub(detail, sizeof detail, err->message); /* JSON needs valid UTF-8 */
  utf8_scrub(field, sizeof field, err->field);
  return json_pack("{s:s,s:s,s:i,s:s,s:s,s:s,s:o}", "type", type, "title",
                   api_error_title(err->code, err->status), "status", err->status, "detail", detail,
                   "instance", where, "code", err->code, "field",
                   field[0] ? json_string(field) : json_null());
}
