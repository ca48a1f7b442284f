/* Result encoding: the lecture's tables as JSON. */
#include "api/encode.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api/utf8.h"

void api_format_time(double unix_s, char *buf, size_t len) {
  time_t secs = (time_t)unix_s;
  int ms = (int)((unix_s - (double)secs) * 1000.0);
  if (ms < 0) ms = 0;
  if (ms > 999) ms = 999;
  struct tm tm;
  gmtime_r(&secs, &tm);
  char base[24];
  strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf, len, "%s.%03dZ", base, ms);
}

/* A finite double, or null: JSON has no NaN or infinity. */
static json_t *number_or_null(double x) { return isfinite(x) ? json_real(x) : json_null(); }

/* The runs list as a request gives it: the word once for the runs it stands for. */
static json_t *runs_to_json(const struct exp_runs_param *rp, const struct exp_spec *spec) {
  json_t *list = json_array();
  for (int i = 0; i < spec->n_variants; i++) {
    int entry = spec->variants[i], w = 0;
    while (rp->word && w < rp->n_word_runs && entry != rp->word_runs[w]) w++;
    if (!rp->word || w == rp->n_word_runs) json_array_append_new(list, json_integer(entry));
    else if (w == 0) json_array_append_new(list, json_string(rp->word));
  }
  return list;
}

json_t *api_spec_to_json(const struct exp_spec *spec) {
  const struct exp_desc *d = exp_desc(spec->type);
  if (!d) return NULL;
  json_t *o = json_object();
  for (int i = 0; i < d->n_params; i++)
    json_object_set_new(o, d->params[i].name, json_integer(spec->p[i]));
  if (d->runs) {
    json_object_set_new(o, d->runs->name, runs_to_json(d->runs, spec));
  } else {
    json_t *variants = json_array();
    for (int i = 0; i < spec->n_variants; i++) { /* names, and users' kernels as kernel:<id> */
      char label[32];
      exp_run_label(spec, i, label, sizeof label);
      json_array_append_new(variants, json_string(label));
    }
    json_object_set_new(o, "variant", variants);
  }
  static const char *const sources[] = {"seed", "buffer", "job"};
  for (int i = 0; i < d->n_inputs; i++)
    json_object_set_new(o, d->inputs[i].name,
                        json_pack("{s:I}", sources[spec->inputs[i].kind], (json_int_t)spec->inputs[i].value));
  json_object_set_new(o, "graph", json_boolean(spec->graph));
  json_object_set_new(o, "seed", json_integer((json_int_t)spec->seed));
  json_object_set_new(o, "warmup", json_integer(spec->timing.warmup));
  json_object_set_new(o, "batches", json_integer(spec->timing.batches));
  json_object_set_new(o, "reps", json_integer(spec->timing.reps));
  if (!(d->flags & EXP_NO_COLD)) json_object_set_new(o, "cold", json_boolean(spec->cold));
  json_object_set_new(o, "order", json_string(spec->order == EXP_ORDER_SEQUENTIAL ? "sequential" : "interleaved"));
  json_object_set_new(o, "min_samples", json_integer(spec->stop.min_samples > 0 ? spec->stop.min_samples
                                                                                 : spec->timing.batches));
  json_object_set_new(o, "max_noise", json_real(spec->stop.max_noise));
  json_object_set_new(o, "max_time", json_real(spec->stop.max_time_s));
  return o;
}

static json_t *check_to_json(const struct exp_check *c) {
  if (!c->done) return json_null();
  json_t *o = json_object();
  json_object_set_new(o, "passed", json_boolean(c->passed));
  json_object_set_new(o, "checked", json_string(c->sampled ? "sample" : "all"));
  if (c->sampled) json_object_set_new(o, "rows_checked", json_integer(c->rows_checked));
  json_object_set_new(o, "compared", json_integer(c->compared));
  json_object_set_new(o, "mismatches", json_integer(c->mismatches));
  json_object_set_new(o, "max_abs_err", number_or_null(c->max_abs_err));
  json_object_set_new(o, "max_rel_err", number_or_null(c->max_rel_err));
  json_object_set_new(o, "tolerance", number_or_null(c->tolerance));
  json_object_set_new(o, "tolerance_rule", json_string(c->tolerance_rule));
  json_object_set_new(o, "reference", json_string(c->reference));
  return o;
}

static json_t *timing_to_json(const struct exp_timing *t) {
  if (t->n_samples == 0) return json_null();
  json_t *o = json_object();
  json_object_set_new(o, "median_ms", json_real(t->median_ms));
  json_object_set_new(o, "min_ms", json_real(t->min_ms));
  json_object_set_new(o, "max_ms", json_real(t->max_ms));
  json_object_set_new(o, "mean_ms", json_real(t->mean_ms));
  json_object_set_new(o, "stdev_ms", json_real(t->stdev_ms));
  json_t *samples = json_array();
  for (int i = 0; i < t->n_samples; i++) json_array_append_new(samples, json_real(t->samples_ms[i]));
  json_object_set_new(o, "samples_ms", samples);
  json_object_set_new(o, "warmup", json_integer(t->warmup));
  json_object_set_new(o, "batches", json_integer(t->batches));
  json_object_set_new(o, "reps", json_integer(t->reps));
  if (t->capped_by) {
    json_object_set_new(o, "warmup_requested", json_integer(t->warmup_requested));
    json_object_set_new(o, "reps_requested", json_integer(t->reps_requested));
    json_object_set_new(o, "capped_by", json_string(t->capped_by));
  }
  json_object_set_new(o, "method", json_string(t->method ? t->method : ""));
  json_object_set_new(o, "cold", json_boolean(t->cold));
  json_object_set_new(o, "stopped_by", json_string(t->stopped_by ? t->stopped_by : "batches"));
  json_object_set_new(o, "relstdev", number_or_null(t->relstdev));
  return o;
}

static json_t *triple(const int v[3]) { return json_pack("[iii]", v[0], v[1], v[2]); }

static json_t *kernel_to_json(const struct exp_kernel_info *k) {
  json_t *o = json_object();
  json_object_set_new(o, "name", json_string(k->name));
  json_object_set_new(o, "description", json_string(k->description));
  if (k->has_launch) {
    json_object_set_new(o, "grid", triple(k->grid));
    json_object_set_new(o, "block", triple(k->block));
    json_object_set_new(o, "registers", json_integer(k->registers));
    json_object_set_new(o, "static_shared_bytes", json_integer(k->static_shared_bytes));
    json_object_set_new(o, "dynamic_shared_bytes", json_integer(k->dynamic_shared_bytes));
    json_object_set_new(o, "local_bytes", json_integer(k->local_bytes));
  }
  if (k->has_occupancy)
    json_object_set_new(o, "occupancy", json_pack("{s:i,s:i,s:i,s:f}", "blocks_per_sm", k->blocks_per_sm,
                                                  "warps_per_sm", k->warps_per_sm, "max_warps_per_sm",
                                                  k->max_warps_per_sm, "fraction", k->occupancy));
  if (k->has_work) {
    json_t *w = json_pack("{s:f,s:f,s:s}", "bytes", k->work.bytes, "flops", k->work.flops, "counted",
                          k->work.counted ? k->work.counted : "");
    if (k->work.bytes > 0) /* arithmetic intensity: flops per byte counted */
      json_object_set_new(w, "flops_per_byte", json_real(k->work.flops / k->work.bytes));
    json_object_set_new(o, "work", w);
  }
  return o;
}

/* How a pipeline run's passes moved the data (experiment.h's exp_pipeline_plan). */
static json_t *plan_to_json(const struct exp_pipeline_plan *p) {
  return json_pack("{s:I,s:i,s:i,s:s,s:b,s:b}", "chunk", (json_int_t)p->chunk, "chunks", p->chunks,
                   "streams", p->streams, "order", p->depth_first ? "depth_first" : "breadth_first",
                   "graph", p->graph, "best", p->best);
}

/* NVML's reason bits as names, lowest bit first. */
static json_t *reasons_to_json(uint64_t reasons) {
  json_t *a = json_array();
  for (int b = 0; b < 64; b++) {
    const char *name = reasons >> b & 1 ? exp_clock_reason_name(1ull << b) : NULL;
    if (name) json_array_append_new(a, json_string(name));
  }
  return a;
}

static json_t *clocks_to_json(const struct exp_clocks *c) {
  if (!c->valid) return json_null();
  return json_pack("{s:i,s:i,s:i,s:f,s:o,s:b}", "sm_mhz_before", c->sm_mhz_before, "sm_mhz_after",
                   c->sm_mhz_after, "temp_c", c->temp_c, "power_w", c->power_w, "reasons",
                   reasons_to_json(c->reasons), "throttled", c->throttled);
}

/* A chunked run's last pass: one entry per op, as recorded (chunk by chunk). */
static json_t *timeline_to_json(const struct exp_run *r) {
  static const char *const ops[EXP_OP_COUNT] = {"upload", "kernel", "download"};
  json_t *a = json_array();
  for (int i = 0; i < r->n_timeline; i++) {
    const struct exp_timeline_op *t = &r->timeline[i];
    json_array_append_new(a, json_pack("{s:i,s:i,s:s,s:f,s:f}", "stream", t->stream, "chunk", t->chunk,
                                       "op", ops[t->op % EXP_OP_COUNT], "start_ms", (double)t->start_ms,
                                       "end_ms", (double)t->end_ms));
  }
  return a;
}

static json_t *run_to_json(const struct exp_spec *spec, const struct exp_run *r,
                           const struct exp_ceilings *ceilings) {
  const struct exp_runs_param *runs = exp_desc(spec->type)->runs;
  json_t *o = json_object();
  json_object_set_new(o, "variant", json_string(r->label));
  if (runs) /* the list's entry; best runs: the stream count their plan chose */
    json_object_set_new(o, runs->name, json_integer(r->plan.streams > 0 ? r->plan.streams : r->variant));
  json_object_set_new(o, "available", json_boolean(r->available));
  if (r->user.id > 0) { /* a user's kernel: who wrote what */
    char href[48];
    snprintf(href, sizeof href, "/kernels/%lld", r->user.id);
    json_object_set_new(o, "user_kernel",
                        json_pack("{s:I,s:s,s:s,s:s,s:s}", "id", (json_int_t)r->user.id, "name", r->user.name,
                                  "owner", r->user.owner, "source_sha256", r->user.source_sha256, "href", href));
  }
  if (!r->available) {
    json_object_set_new(o, "reason", json_string(r->reason));
    return o;
  }
  if (r->mapped_to[0]) json_object_set_new(o, "mapped_to", json_string(r->mapped_to));
  if (r->refused[0]) json_object_set_new(o, "refused", json_string(r->refused)); /* implausible */
  json_object_set_new(o, "check", check_to_json(&r->check));
  json_object_set_new(o, "timing", timing_to_json(&r->timing));
  /* A run whose check failed has no figure: a fast wrong answer is not a result. */
  json_object_set_new(o, "figure", r->figure > 0 ? json_real(r->figure) : json_null());
  json_object_set_new(o, "unit", json_string(exp_figure_unit(spec->type)));
  json_object_set_new(o, "speedup", r->speedup > 0 ? json_real(r->speedup) : json_null());
  json_object_set_new(o, "speedup_range", r->speedup_lo > 0 ? json_pack("[f,f]", r->speedup_lo, r->speedup_hi)
                                                            : json_null());
  /* The device ceiling the figure is compared with: its key in GET /device's
   * "ceilings" and its value (0: none measured). */
  enum exp_ceiling which = exp_run_ceiling(spec, r->variant);
  double ceiling = exp_ceiling_value(ceilings, which);
  json_object_set_new(o, "ceiling", ceiling > 0 ? json_string(exp_ceiling_name(which)) : json_null());
  json_object_set_new(o, "percent_of_ceiling",
                      ceiling > 0 && r->figure > 0 ? json_real(100.0 * r->figure / ceiling) : json_null());
  json_object_set_new(o, "clocks", clocks_to_json(&r->clocks));
  json_object_set_new(o, "contended", json_boolean(r->contended));
  if (r->graph_us_per_launch > 0)
    json_object_set_new(o, "launch", json_pack("{s:f,s:f,s:f}", "stream_us", r->stream_us_per_launch,
                                               "graph_us", r->graph_us_per_launch, "saved_us",
                                               r->stream_us_per_launch - r->graph_us_per_launch));
  json_object_set_new(o, "kernel", kernel_to_json(&r->kernel));
  if (r->plan.streams > 0) json_object_set_new(o, "plan", plan_to_json(&r->plan));
  if (r->n_timeline > 0) {
    json_object_set_new(o, "timeline", timeline_to_json(r));
    json_object_set_new(o, "timeline_chunks", json_integer(r->n_timeline / EXP_OP_COUNT));
  }
  return o;
}

json_t *api_result_to_json(const struct exp_spec *spec, const struct exp_result *result) {
  json_t *o = json_object();
  json_object_set_new(o, "backend", json_string(result->backend));
  json_object_set_new(o, "device", json_string(result->device_name));
  json_object_set_new(o, "unit", json_string(exp_figure_unit(spec->type)));
  json_object_set_new(o, "work", json_real(exp_spec_work(spec)));
  json_object_set_new(o, "work_unit", json_string(exp_work_unit(spec->type)));
  json_t *runs = json_array();
  for (int i = 0; i < result->n_runs; i++)
    json_array_append_new(runs, run_to_json(spec, &result->runs[i], &result->ceilings));
  json_object_set_new(o, "passed", json_boolean(exp_result_passed(result)));
  if (result->input_path[0]) json_object_set_new(o, "input_path", json_string(result->input_path));
  json_object_set_new(o, "runs", runs);
  return o;
}

/* The measured ceilings (0: not measured, null), their method; null when none. */
static json_t *ceilings_to_json(const struct backend_device_info *d) {
  json_t *o = json_object();
  bool any = false;
  for (int which = EXP_CEILING_DEFAULT + 1; which < EXP_CEILING_COUNT; which++) {
    double value = exp_ceiling_value(&d->ceilings, (enum exp_ceiling)which);
    any = any || value > 0;
    json_object_set_new(o, exp_ceiling_name((enum exp_ceiling)which), value > 0 ? json_real(value) : json_null());
  }
  if (!any) {
    json_decref(o);
    return json_null();
  }
  json_object_set_new(o, "method", json_string(d->ceilings_method));
  return o;
}

json_t *api_device_to_json(const struct backend_device_info *d) {
  json_t *o = json_object();
  json_object_set_new(o, "backend", json_string(d->backend));
  json_object_set_new(o, "name", json_string(d->name));
  json_object_set_new(o, "index", json_integer(d->index));
  json_object_set_new(o, "memory_total_bytes", json_integer((json_int_t)d->mem_total_bytes));
  json_object_set_new(o, "memory_free_bytes", json_integer((json_int_t)d->mem_free_bytes));
  if (d->cpu_cores) json_object_set_new(o, "cpu_cores", json_integer(d->cpu_cores));
  if (d->backend[0] == 'c' && d->backend[1] == 'u') {
    char cc[16];
    snprintf(cc, sizeof cc, "%d.%d", d->cc_major, d->cc_minor);
    json_object_set_new(o, "compute_capability", json_string(cc));
    json_object_set_new(o, "sms", json_integer(d->sms));
    json_object_set_new(o, "sm_clock_mhz", json_integer(d->sm_clock_mhz));
    json_object_set_new(o, "memory_clock_mhz", json_integer(d->mem_clock_mhz));
    json_object_set_new(o, "memory_bus_bits", json_integer(d->mem_bus_bits));
    json_object_set_new(o, "l2_bytes", json_integer(d->l2_bytes));
    char v[16];
    snprintf(v, sizeof v, "%d.%d", d->runtime_version / 1000, d->runtime_version % 1000 / 10);
    json_object_set_new(o, "cuda_runtime", json_string(v));
    snprintf(v, sizeof v, "%d.%d", d->driver_version / 1000, d->driver_version % 1000 / 10);
    json_object_set_new(o, "cuda_driver", json_string(v));
  }
  json_object_set_new(o, "ceilings", ceilings_to_json(d));
  if (d->nvml) {
    json_object_set_new(o, "nvml", json_string("available"));
    json_object_set_new(o, "clocks", json_pack("{s:i,s:i,s:f,s:o,s:b}", "sm_mhz", d->sm_mhz_now, "temp_c",
                                               d->temp_c, "power_w", d->power_w, "reasons",
                                               reasons_to_json(d->clock_reasons), "throttled",
                                               (d->clock_reasons & EXP_CLOCK_THROTTLED) != 0));
  } else {
    char why[160];
    snprintf(why, sizeof why, "unavailable: %s", d->nvml_why[0] ? d->nvml_why : "unknown");
    json_object_set_new(o, "nvml", json_string(why));
    json_object_set_new(o, "clocks", json_null());
  }
  return o;
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
    } else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr(keep, *p))
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
                   "instance", where, "code", err->code, "field", field[0] ? json_string(field) : json_null());
}
