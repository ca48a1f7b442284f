/* The sweep routes: POST /sweeps runs the cartesian product of a job's params over
 * the request's axes as ordinary jobs (each parsed and checked like POST /jobs, or
 * like POST /problems/{name}/jobs for "type": "problem:<name>";
 * queued and limited like any other), and GET /sweeps/{id} answers them as one
 * table, a row per point; DELETE cancels the unfinished ones. sweeps.c keeps the
 * job ids; the engine never hears of sweeps. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/encode.h"
#include "api/params.h"
#include "server/http/auth.h"
#include "server/http/routes.h"
#include "server/http/submit.h"
#include "server/service/problem_jobs.h"
#include "server/service/problems.h"
#include "server/service/sweeps.h"

#define SWEEP_MAX_POINTS 256
#define SWEEP_LIST_MAX 100

/* ---- parsing: a job request per point ---- */

/* The points of one POST /sweeps, parsed. desc is what sweeps.c keeps: type,
 * params, axes, the run labels (figure columns) and whether every point has one
 * run ("single": its columns are then unprefixed). */
struct sweep_plan {
  int n_points;
  struct api_job_request *points;
  json_t *desc;
};

static void plan_free(struct sweep_plan *p) {
  free(p->points);
  json_decref(p->desc);
  memset(p, 0, sizeof *p);
}

/* Point i's index along each axis: the first axis varies slowest. */
static void point_index(json_t *axes, int i, size_t *idx) {
  size_t n = json_object_size(axes), k = n;
  const char *key;
  json_t *values;
  size_t sizes[64];
  json_object_foreach(axes, key, values) sizes[n - k--] = json_array_size(values);
  for (size_t a = n; a-- > 0;) {
    idx[a] = (size_t)i % sizes[a];
    i /= (int)sizes[a];
  }
}

/* The axes: an object of 1..64 params, each a non-empty list; returns the point
 * count (0 with err on a malformed axis, or more than SWEEP_MAX_POINTS). */
static int axes_points(json_t *axes, struct api_error *err) {
  if (!axes)
    return api_error_set(err, 400, "missing_field", "axes",
                         "axes is required: {\"param\": [values...], ...}"),
           0;
  if (!json_is_object(axes) || json_object_size(axes) == 0 || json_object_size(axes) > 64)
    return api_error_set(err, 400, json_is_object(axes) ? "out_of_range" : "wrong_type", "axes",
                         "axes must be an object naming 1 to 64 params, each with a list of "
                         "values"),
           0;
  const char *key;
  json_t *values;
  long long points = 1;
  json_object_foreach(axes, key, values) {
    char field[64];
    snprintf(field, sizeof field, "axes.%.40s", key);
    if (!json_is_array(values) || json_array_size(values) == 0)
      return api_error_set(err, 400, json_is_array(values) ? "out_of_range" : "wrong_type", field,
                           "%s must be a non-empty list of values", field),
             0;
    points *= (long long)json_array_size(values);
    if (points > SWEEP_MAX_POINTS)
      return api_error_set(err, 400, "out_of_range", "axes",
                           "this sweep has more than %d points (the axes' sizes multiplied); a "
                           "sweep may have at most %d",
                           SWEEP_MAX_POINTS, SWEEP_MAX_POINTS),
             0;
  }
  return (int)points;
}

/* A point's parse error, renamed after the axis that caused it: "params.m" becomes
 * "axes.m" with the value in the message. Errors of other fields stay as they are. */
static void blame_axis(json_t *axes, const size_t *idx, struct api_error *err) {
  const char *key;
  json_t *values;
  size_t a = 0;
  json_object_foreach(axes, key, values) {
    char param[64];
    snprintf(param, sizeof param, "params.%.40s", key);
    if (strcmp(err->field, param) == 0) {
      char *value = json_dumps(json_array_get(values, idx[a]), JSON_ENCODE_ANY | JSON_COMPACT);
      char message[sizeof err->message];
      if (strcmp(err->code, "unknown_field") == 0)
        snprintf(message, sizeof message, "unknown axis '%.40s': %.200s", key, err->message);
      else
        snprintf(message, sizeof message, "axes.%.40s[%zu] = %.40s: %.200s", key, idx[a],
                 value ? value : "?", err->message);
      free(value);
      snprintf(err->message, sizeof err->message, "%s", message);
      snprintf(err->field, sizeof err->field, "axes.%.40s", key);
      return;
    }
    a++;
  }
}

/* Adds run labels of spec not yet in labels. */
static void add_labels(json_t *labels, const struct exp_spec *spec) {
  for (int i = 0; i < exp_run_count(spec); i++) {
    char label[32];
    exp_run_label(spec, i, label, sizeof label);
    bool seen = false;
    for (size_t k = 0; k < json_array_size(labels) && !seen; k++)
      seen = strcmp(json_string_value(json_array_get(labels, k)), label) == 0;
    if (!seen) json_array_append_new(labels, json_string(label));
  }
}

/* Parses one point's job (job: the sweep's body without "axes", its "params" holding
 * the point's values) into out: 0 or -EINVAL with err. */
typedef int (*point_fn)(void *ctx, json_t *job, struct api_job_request *out, struct api_error *err);

/* The points of root (a POST /sweeps body without "type" when drop_type), each parsed
 * by parse; then plan->desc from type and unit (NULL: the first point's type's).
 * Returns 0 or -1 with err. */
static int plan_points(json_t *root, bool drop_type, point_fn parse, void *ctx, const char *type,
                       struct sweep_plan *plan, struct api_error *err) {
  json_t *axes = json_object_get(root, "axes");
  int n = axes_points(axes, err);
  if (n == 0) return -1;
  json_t *job = json_deep_copy(root), *params = NULL, *labels = json_array();
  json_object_del(job, "axes");
  if (drop_type) json_object_del(job, "type");
  if (!(params = json_object_get(job, "params")))
    json_object_set_new(job, "params", params = json_object());
  json_t *base = json_deep_copy(params);
  plan->points = calloc((size_t)n, sizeof *plan->points);
  int rc = plan->points ? 0 : api_error_set(err, 500, "out_of_memory", "", "out of memory");
  bool single = true;
  for (int i = 0; i < n && rc == 0; i++) {
    size_t idx[64];
    point_index(axes, i, idx);
    const char *key;
    json_t *values;
    size_t a = 0;
    json_object_foreach(axes, key, values) /* params that are not objects fail below */
        if (json_is_object(params)) json_object_set(params, key, json_array_get(values, idx[a++]));
    rc = parse(ctx, job, &plan->points[i], err);
    if (rc) blame_axis(axes, idx, err);
    if (rc == 0) add_labels(labels, &plan->points[i].spec);
    if (rc == 0) single = single && exp_run_count(&plan->points[i].spec) == 1;
  }
  if (rc == 0) {
    const struct exp_spec *first = &plan->points[0].spec;
    plan->n_points = n;
    plan->desc = json_pack("{s:s,s:O,s:O,s:O,s:b,s:s}", "type",
                           type ? type : exp_type_name(first->type), "params", base, "axes", axes,
                           "labels", labels, "single", single, "unit", exp_spec_figure_unit(first));
  }
  json_decref(labels);
  json_decref(base);
  json_decref(job);
  if (rc) plan_free(plan);
  return rc ? -1 : 0;
}

/* A point of an experiment's sweep: a POST /jobs body, parsed by api/params.c. */
static int job_point(void *ctx, json_t *job, struct api_job_request *out, struct api_error *err) {
  char *text = json_dumps(job, JSON_COMPACT);
  int rc = text ? api_job_request_parse_with(text, strlen(text), out, ctx, err)
                : api_error_set(err, 500, "out_of_memory", "", "out of memory");
  free(text);
  return rc;
}

struct problem_point {
  const struct store_problem *row;
  const struct problem_def *def;
  const struct api_kernel_resolver *kr;
};

/* A point of a problem's sweep: a POST /problems/{name}/jobs body. */
static int problem_point(void *ctx, json_t *job, struct api_job_request *out,
                         struct api_error *err) {
  const struct problem_point *p = ctx;
  if (json_object_get(job, "inputs"))
    return api_error_set(err, 400, "unknown_field", "inputs",
                         "a sweep's points differ in their params, so in their inputs' shapes: "
                         "inputs given as buffers are for a single job (POST "
                         "/problems/{name}/jobs)");
  return problem_jobs_spec(p->row, p->def, job, p->kr, &out->spec, &out->opts, err);
}

/* A sweep of a problem's params ("type": "problem:<name>", its newest version, which r
 * may see), whose kernels its variants may name. Returns 0 or -1 with err. */
static int problem_plan_parse(struct request *r, const char *type, json_t *root,
                              struct sweep_plan *plan, const struct api_kernel_resolver *kr,
                              struct api_error *err) {
  struct store_problem row;
  struct problem_def *def = NULL;
  int rc = route_problem_visible(r, type + 8, 0, &row, &def);
  if (rc)
    return api_error_set(err, rc == -ENOENT ? 404 : 503,
                         rc == -ENOENT ? "problem_not_found" : "store_unavailable", "type",
                         rc == -ENOENT ? "no problem '%.63s'" : "the store cannot be read (%.63s)",
                         type + 8),
           -1;
  struct problem_point p = {&row, def, kr};
  r->kernels_of = type;
  rc = plan_points(root, true, problem_point, &p, type, plan, err);
  r->kernels_of = NULL;
  problems_row_clear(&row);
  problem_def_free(def);
  return rc;
}

/* Parses root (a POST /sweeps body) into one job request per point: the body
 * without "axes" is a POST /jobs body, parsed by api/params.c once per point with
 * the point's values set in its params; "type": "problem:<name>" sweeps a problem's
 * params (problem_plan_parse). Returns 0 or -1 with err. */
static int plan_parse(struct request *r, json_t *root, struct sweep_plan *plan,
                      const struct api_kernel_resolver *kr, struct api_error *err) {
  memset(plan, 0, sizeof *plan);
  if (!json_is_object(root))
    return api_error_set(err, 400, "wrong_type", "", "the body must be a JSON object");
  const char *type = json_string_value(json_object_get(root, "type"));
  if (type && !strncmp(type, "problem:", 8) && strlen(type) < 80)
    return problem_plan_parse(r, type, root, plan, kr, err);
  return plan_points(root, false, job_point, (void *)kr, NULL, plan, err);
}

/* ---- the table ---- */

static const char *const FIGURE_COLUMNS[] = {"figure", "median_ms", "passed"};

static json_t *columns_json(json_t *desc) {
  json_t *cols = json_array(), *labels = json_object_get(desc, "labels");
  bool single = json_is_true(json_object_get(desc, "single"));
  const char *key;
  json_t *values;
  json_object_foreach(json_object_get(desc, "axes"), key, values)
      json_array_append_new(cols, json_string(key));
  json_array_append_new(cols, json_string("job"));
  json_array_append_new(cols, json_string("state"));
  for (size_t l = 0; l < (single ? 1 : json_array_size(labels)); l++)
    for (int f = 0; f < 3; f++) {
      char name[64];
      if (single)
        snprintf(name, sizeof name, "%s", FIGURE_COLUMNS[f]);
      else
        snprintf(name, sizeof name, "%s.%s", json_string_value(json_array_get(labels, l)),
                 FIGURE_COLUMNS[f]);
      json_array_append_new(cols, json_string(name));
    }
  json_array_append_new(cols, json_string("error"));
  return cols;
}

/* A run's three figure cells, null where it has none. */
static void set_run_cells(json_t *row, const struct exp_run *run, const char *prefix) {
  char name[64];
  bool ran = run->available && run->timing.n_samples > 0;
  snprintf(name, sizeof name, "%s%s", prefix, "figure");
  json_object_set_new(row, name, ran && run->figure > 0 ? json_real(run->figure) : json_null());
  snprintf(name, sizeof name, "%s%s", prefix, "median_ms");
  json_object_set_new(row, name, ran ? json_real(run->timing.median_ms) : json_null());
  snprintf(name, sizeof name, "%s%s", prefix, "passed");
  json_object_set_new(
      row, name, run->available && run->check.done ? json_boolean(run->check.passed) : json_null());
}

/* A run's three cells from its JSON in a stored job record (a job of a previous
 * run, no longer in memory), as set_run_cells makes them. */
static void set_stored_cells(json_t *row, json_t *run, const char *prefix) {
  char name[64];
  bool available = json_is_true(json_object_get(run, "available"));
  json_t *median = json_object_get(json_object_get(run, "timing"), "median_ms");
  json_t *passed = json_object_get(json_object_get(run, "check"), "passed");
  snprintf(name, sizeof name, "%s%s", prefix, "figure");
  json_object_set(row, name,
                  json_is_number(json_object_get(run, "figure")) ? json_object_get(run, "figure")
                                                                 : json_null());
  snprintf(name, sizeof name, "%s%s", prefix, "median_ms");
  json_object_set_new(row, name,
                      available && json_is_number(median) ? json_incref(median) : json_null());
  snprintf(name, sizeof name, "%s%s", prefix, "passed");
  json_object_set_new(row, name,
                      available && json_is_boolean(passed) ? json_incref(passed) : json_null());
}

/* The state and cells of a job the store holds (NULL when it holds none). */
static const char *stored_row(const struct service *svc, uint64_t job_id, json_t *row, bool single,
                              bool *passed, json_t **record) {
  char *text = service_job_record(svc, job_id);
  *record = text ? json_loads(text, 0, NULL) : NULL;
  free(text);
  const char *state = json_string_value(json_object_get(*record, "state"));
  if (!state) return NULL;
  json_t *result = json_object_get(*record, "result"), *run;
  size_t r;
  json_array_foreach(json_object_get(result, "runs"), r, run) {
    char prefix[48] = "";
    if (!single)
      snprintf(prefix, sizeof prefix, "%s.", json_string_value(json_object_get(run, "variant")));
    set_stored_cells(row, run, prefix);
  }
  json_t *code = json_object_get(json_object_get(*record, "error"), "code");
  if (json_is_string(code)) json_object_set(row, "error", code);
  *passed = *passed && json_is_true(json_object_get(result, "passed"));
  return state;
}

/* Point i's row: its axis values, its job, and its runs' figures (null until done),
 * from memory, or from the store for a job of a previous run. Adds the job's state
 * to counts and clears *passed unless it passed. */
static json_t *row_json(struct engine *e, const struct service *svc, json_t *desc, int i,
                        uint64_t job_id, json_t *counts, bool *passed) {
  json_t *row = json_object(), *axes = json_object_get(desc, "axes"), *cols = columns_json(desc);
  size_t idx[64], a = 0;
  point_index(axes, i, idx);
  const char *key;
  json_t *values, *record = NULL;
  json_object_foreach(axes, key, values)
      json_object_set(row, key, json_array_get(values, idx[a++]));
  for (size_t c = a; c < json_array_size(cols); c++)
    json_object_set_new(row, json_string_value(json_array_get(cols, c)), json_null());
  json_decref(cols);
  json_object_set_new(row, "job", json_integer((json_int_t)job_id));
  bool single = json_is_true(json_object_get(desc, "single"));
  struct job *job = engine_job_get(e, job_id);
  const char *state = "forgotten"; /* past --max-jobs-kept, and not (or no longer) stored */
  struct job_view v;
  if (job) {
    job_get_view(e, job, &v);
    state = job_state_name(v.state);
    for (int r = 0; v.result && r < v.result->n_runs; r++) {
      char prefix[48] = "";
      if (!single) snprintf(prefix, sizeof prefix, "%s.", v.result->runs[r].label);
      set_run_cells(row, &v.result->runs[r], prefix);
    }
    if (v.error_code[0]) json_object_set_new(row, "error", json_string(v.error_code));
    *passed = *passed && v.result && exp_result_passed(v.result);
  } else {
    const char *stored = stored_row(svc, job_id, row, single, passed, &record);
    if (stored)
      state = stored;
    else
      *passed = false;
  }
  json_object_set_new(row, "state", json_string(state));
  json_object_set_new(counts, state,
                      json_integer(json_integer_value(json_object_get(counts, state)) + 1));
  json_decref(record); /* state pointed into it */
  job_unref(job);
  return row;
}

/* The sweep's state from its jobs': queued while none has started, running until
 * all are final, then done (all done), failed (any failed) or canceled. */
static const char *sweep_state(json_t *counts, int n) {
  long long done = json_integer_value(json_object_get(counts, "done"));
  long long failed = json_integer_value(json_object_get(counts, "failed"));
  long long canceled = json_integer_value(json_object_get(counts, "canceled"));
  long long gone = json_integer_value(json_object_get(counts, "forgotten"));
  long long queued = json_integer_value(json_object_get(counts, "queued")) +
                     json_integer_value(json_object_get(counts, "waiting"));
  if (done + failed + canceled + gone < n) return queued == n ? "queued" : "running";
  if (failed) return "failed";
  return canceled ? "canceled" : "done";
}

static bool state_final(const char *state) {
  return !strcmp(state, "done") || !strcmp(state, "failed") || !strcmp(state, "canceled");
}

/* The sweep as it stands; *final tells whether every job has ended. */
static json_t *sweep_json(struct engine *e, const struct service *svc, const struct sweep_copy *s,
                          bool with_rows, bool *final) {
  json_t *desc = json_loads(s->desc, 0, NULL);
  if (!desc) return NULL;
  json_t *o = json_object(), *jobs = json_array(), *rows = json_array(), *counts = json_object();
  bool passed = true;
  for (int i = 0; i < s->n_jobs; i++) {
    json_array_append_new(jobs, json_integer((json_int_t)s->jobs[i]));
    json_array_append_new(rows, row_json(e, svc, desc, i, s->jobs[i], counts, &passed));
  }
  const char *state = sweep_state(counts, s->n_jobs);
  *final = state_final(state);
  int type = exp_type_from_name(json_string_value(json_object_get(desc, "type")));
  const char *unit = json_string_value(json_object_get(desc, "unit")); /* a problem's */
  json_object_set_new(o, "id", json_integer((json_int_t)s->id));
  json_object_set(o, "type", json_object_get(desc, "type"));
  json_object_set_new(o, "client", json_string(s->client));
  json_object_set_new(o, "created_at", time_json(s->created_at));
  json_object_set(o, "params", json_object_get(desc, "params"));
  json_object_set(o, "axes", json_object_get(desc, "axes"));
  json_object_set_new(o, "jobs", jobs);
  json_object_set_new(o, "state", json_string(state));
  json_object_set_new(o, "counts", counts);
  json_object_set_new(o, "passed", json_boolean(*final && passed));
  json_object_set_new(o, "unit",
                      json_string(unit        ? unit
                                  : type >= 0 ? exp_figure_unit((enum exp_type)type)
                                              : "GB/s"));
  if (with_rows) {
    json_object_set_new(o, "columns", columns_json(desc));
    json_object_set_new(o, "rows", rows);
  } else {
    json_decref(rows);
  }
  json_decref(desc);
  return o;
}

/* Sweep id into *out: this node's table, else (a fleet) the store. 0 or -ENOENT. */
static int find_sweep(struct request *r, uint64_t id, struct sweep_copy *out) {
  if (sweeps_get(r->srv->opts.service->sweeps, id, out) == 0) return 0;
  if (id < UINT64_MAX && service_sweeps_page(r->srv->opts.service, id + 1, NULL, 1, out) == 1) {
    if (out->id == id) return 0;
    sweep_copy_free(out);
  }
  return -ENOENT;
}

/* The sweep's table: 200, or after a POST, 202 and where to look while it is still
 * going (as POST /jobs answers). */
static enum MHD_Result respond_sweep(struct request *r, uint64_t id, bool posted) {
  struct sweep_copy s;
  if (find_sweep(r, id, &s))
    return respond_fail(r, 404, "sweep_not_found", "id", "no sweep %" PRIu64, id);
  bool final = false;
  json_t *o = sweep_json(r->srv->engine, r->srv->opts.service, &s, true, &final);
  sweep_copy_free(&s);
  if (!o) return respond_json(r, 500, NULL);
  /* Its jobs are durable as shown: after the views (a job shown final has its final
   * record queued by then, job_get_view), not before them. */
  if (posted) service_flush(r->srv->opts.service);
  if (posted && !final) snprintf(r->location, sizeof r->location, "/sweeps/%" PRIu64, id);
  return respond_json(r, posted && !final ? 202 : 200, o);
}

/* ---- waiting for a whole sweep: one engine watch at a time ---- */

static void sweep_watch_fired(void *arg);

/* Watches the sweep's first unfinished job until the deadline; resumes r when
 * there is none left (or the sweep is gone). */
static void sweep_watch_next(struct request *r, double deadline) {
  struct engine *e = r->srv->engine;
  struct sweep_copy s;
  struct job *next = NULL;
  if (deadline > engine_now_mono() &&
      sweeps_get(r->srv->opts.service->sweeps, r->sweep_id, &s) == 0) {
    for (int i = 0; i < s.n_jobs && !next; i++) {
      struct job *job = engine_job_get(e, s.jobs[i]);
      struct job_view v;
      if (job) job_get_view(e, job, &v);
      if (job && !job_state_final(v.state))
        next = job;
      else
        job_unref(job);
    }
    sweep_copy_free(&s);
  }
  if (!next) {
    MHD_resume_connection(r->conn);
    return;
  }
  engine_watch_add(e, next, &r->watch, deadline, sweep_watch_fired, r);
  job_unref(next);
}

static void sweep_watch_fired(void *arg) {
  struct request *r = arg;
  sweep_watch_next(r, r->watch.deadline);
}

static enum MHD_Result sweep_resumed(struct request *r) {
  return respond_sweep(r, r->sweep_id, true);
}

/* ---- POST /sweeps ---- */

/* Jobs of client queued or waiting now, counted up to cap. */
static int client_pending(struct engine *e, const char *client, int cap) {
  struct job **jobs = malloc((size_t)cap * sizeof *jobs);
  if (!jobs) return cap;
  int pending = 0;
  static const enum job_state states[] = {JOB_QUEUED, JOB_WAITING};
  for (int s = 0; s < 2 && pending < cap; s++) {
    struct engine_list_filter f = {.state = (int)states[s], .type = -1, .client = client};
    int n = engine_jobs_list(e, &f, jobs, cap - pending);
    for (int i = 0; i < n; i++) job_unref(jobs[i]);
    pending += n;
  }
  free(jobs);
  return pending;
}

/* The checks every point would meet at submission that a sweep makes first, so
 * that it is refused whole: the device, the store, the rate, the client's queue, the
 * memory. */
static enum MHD_Result refuse_early(struct request *r, const struct sweep_plan *p,
                                    const char *client, bool *refused) {
  struct engine *e = r->srv->engine;
  *refused = true;
  if (!engine_healthy(e))
    return respond_fail(r, 503, "backend_unavailable", NULL,
                        "the device failed and gpulabd is not accepting jobs; see /health");
  /* Refused as a job is while the store's writes fail, even where this sweep's own
   * write might fit (a checkpoint freed part of a full disk meanwhile). */
  enum MHD_Result stored;
  if (request_store_refuses(r, &stored)) return stored;
  if (r->who && r->who->rate > 0) {
    if (p->n_points > 2 * r->who->rate) {
      r->retry_after_s = 1;
      return respond_fail(r, 429, "rate_limited", NULL,
                          "this sweep has %d points, more than this client's burst (%g jobs "
                          "per second, 2 s worth)",
                          p->n_points, r->who->rate);
    }
    double wait = rate_take_n(r->srv, r->who, p->n_points);
    if (wait > 0) {
      r->retry_after_s = (int)wait + 1;
      return respond_fail(r, 429, "rate_limited", NULL,
                          "this client may submit %g jobs per second; a sweep of %d may go in "
                          "%.1f s",
                          r->who->rate, p->n_points, wait);
    }
  }
  int limit = r->who && r->who->max_queued ? r->who->max_queued : r->srv->opts.max_queued;
  int pending = limit > 0 ? client_pending(e, client, limit + 1) : 0;
  if (limit > 0 && pending + p->n_points > limit) {
    r->retry_after_s = 1;
    return respond_fail(r, 429, "queue_full", NULL,
                        "this sweep has %d points; with the %d jobs this client already has "
                        "queued or waiting it would pass its limit of %d",
                        p->n_points, pending, limit);
  }
  for (int i = 0; i < p->n_points; i++) {
    uint64_t bytes = exp_spec_bytes(&p->points[i].spec);
    if (bytes > engine_memory_limit(e))
      return respond_fail(r, 413, "job_too_large", NULL,
                          "point %d of this sweep needs %llu bytes of memory; the limit per job "
                          "is %llu bytes",
                          i, (unsigned long long)bytes, (unsigned long long)engine_memory_limit(e));
  }
  *refused = false;
  return MHD_YES;
}

/* Submits every point, all or none (engine_submit_all): a refusal of any point (a
 * parent or input that does not exist, a shape that does not fit, a race with the
 * client's other submissions) is answered, naming the point, and nothing is created. */
static enum MHD_Result submit_points(struct request *r, const struct sweep_plan *p,
                                     const char *client, uint64_t *ids, bool *refused) {
  struct engine *e = r->srv->engine;
  struct engine_job_request *reqs = calloc((size_t)p->n_points, sizeof *reqs);
  struct job **jobs = calloc((size_t)p->n_points, sizeof *jobs);
  *refused = true;
  if (!reqs || !jobs) {
    free(reqs);
    free(jobs);
    return respond_json(r, 500, NULL);
  }
  for (int i = 0; i < p->n_points; i++) {
    const struct api_job_request *pt = &p->points[i];
    reqs[i] = (struct engine_job_request){.spec = pt->spec,
                                          .device = pt->opts.device,
                                          .priority = pt->opts.priority,
                                          .exclusive = pt->opts.exclusive,
                                          .keep_output = pt->opts.keep_output,
                                          .host_sync = pt->opts.host_sync,
                                          .n_depends = pt->opts.n_depends,
                                          .admin = request_sees_all(r),
                                          .max_queued = r->who ? r->who->max_queued : 0};
    memcpy(reqs[i].depends_on, pt->opts.depends_on, sizeof reqs[i].depends_on);
    snprintf(reqs[i].client, sizeof reqs[i].client, "%s", client);
  }
  struct engine_error refusal;
  int failed;
  enum MHD_Result ret = MHD_YES;
  if (engine_submit_all(e, reqs, p->n_points, jobs, &refusal, &failed) == 0) {
    for (int i = 0; i < p->n_points; i++) {
      struct job_view v;
      job_get_view(e, jobs[i], &v);
      ids[i] = v.id;
      job_unref(jobs[i]);
    }
    *refused = false;
  } else {
    const struct exp_spec *spec = &p->points[failed >= 0 ? failed : 0].spec;
    if (failed >= 0 && p->n_points > 1) { /* which point: its index in the sweep's order */
      char message[sizeof refusal.message];
      snprintf(message, sizeof message, "point %d of this sweep: %.280s", failed, refusal.message);
      snprintf(refusal.message, sizeof refusal.message, "%s", message);
    }
    if (!submit_elsewhere(r, &refusal, "params.", &ret))
      ret = respond_refusal(r, spec, &refusal, "params.");
  }
  free(reqs);
  free(jobs);
  return ret;
}

/* Takes back a sweep that could not be kept: its jobs withdrawn (engine.h: they do
 * not run on and are recorded no further), the sweep forgotten. */
static void take_back(struct request *r, const uint64_t *ids, int n, uint64_t sweep_id) {
  for (int i = 0; i < n; i++) {
    struct job *job = engine_job_get(r->srv->engine, ids[i]);
    if (job) engine_job_withdraw(r->srv->engine, job);
    job_unref(job);
  }
  if (sweep_id) sweeps_remove(r->srv->opts.service->sweeps, sweep_id);
}

/* Creates the sweep: its jobs (all or none), its entry and its row, which reach the
 * store in one transaction with the jobs' first rows (store_hold), or not at all.
 * Returns its id, or 0 with *ret answering why nothing was created. */
static uint64_t create_sweep(struct request *r, const struct sweep_plan *plan, const char *client,
                             enum MHD_Result *ret) {
  const struct service *svc = r->srv->opts.service;
  uint64_t *ids = calloc((size_t)plan->n_points, sizeof *ids), id = 0, ticket = 0;
  if (!ids) {
    *ret = respond_json(r, 500, NULL);
    return 0;
  }
  bool refused;
  double created = engine_now_unix();
  char *desc = NULL;
  int rc = 0;
  service_hold(svc);
  *ret = submit_points(r, plan, client, ids, &refused);
  if (!refused) {
    desc = json_dumps(plan->desc, JSON_COMPACT);
    rc = desc ? sweeps_add(r->srv->opts.service->sweeps, client, ids, plan->n_points, desc, created,
                           &id)
              : -ENOMEM;
    if (rc == 0 &&
        (rc = service_sweep_put(svc, id, client, created, plan->desc, ids, plan->n_points)) == 0)
      ticket = service_ticket(svc);
  }
  service_release(svc);
  if (!refused && rc == 0) rc = service_sync(svc, ticket); /* jobs and sweep alike */
  if (!refused && rc) {
    take_back(r, ids, plan->n_points, rc == 0 ? 0 : id);
    *ret = rc == -ENOMEM ? respond_json(r, 500, NULL) : respond_storage(r, rc);
  }
  free(desc);
  free(ids);
  return refused || rc ? 0 : id;
}

static enum MHD_Result sweeps_post(struct request *r) {
  struct api_error err;
  double wait_s;
  const char *wait_text = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "wait");
  if (api_wait_parse(wait_text, r->srv->opts.default_wait_s, &wait_s, &err))
    return respond_error(r, &err);
  json_error_t je;
  json_t *root = json_loadb(r->body ? r->body : "", r->body_len, JSON_REJECT_DUPLICATES, &je);
  if (!root)
    return respond_fail(r, 400, "invalid_json", NULL,
                        "malformed JSON at byte %d (line %d, column %d): %s", je.position, je.line,
                        je.column, je.text);
  struct sweep_plan plan;
  struct api_kernel_resolver kr = submit_kernel_resolver(r);
  int rc = plan_parse(r, root, &plan, &kr, &err);
  json_decref(root);
  if (rc) return respond_error(r, &err);
  char client[64];
  request_client(r, client, sizeof client);
  bool refused;
  enum MHD_Result ret = refuse_early(r, &plan, client, &refused);
  uint64_t id = refused ? 0 : create_sweep(r, &plan, client, &ret);
  plan_free(&plan);
  if (!id) return ret;
  if (wait_s <= 0) return respond_sweep(r, id, true);
  r->sweep_id = id;
  r->suspended = true;
  r->resume = sweep_resumed;
  MHD_suspend_connection(r->conn);
  sweep_watch_next(r, engine_now_mono() + wait_s); /* resumes at once when all have ended */
  return MHD_YES;
}

/* ---- GET /sweeps, GET and DELETE /sweeps/{id} ---- */

static enum MHD_Result sweeps_index(struct request *r) {
  struct api_error err;
  long long limit, cursor;
  if (query_int(r, "limit", 1, SWEEP_LIST_MAX, 20, &limit, &err) ||
      query_int(r, "cursor", 1, INT64_MAX, 0, &cursor, &err))
    return respond_error(r, &err);
  struct sweep_copy *list = calloc((size_t)limit + 1, sizeof *list);
  const char *client = request_sees_all(r) ? NULL : r->client;
  int n = list ? service_sweeps_page(r->srv->opts.service, (uint64_t)cursor, client, (int)limit + 1,
                                     list)
               : -ENOMEM;
  if (n == -ENOTSUP) { /* one box: its table holds every sweep */
    n = sweeps_list(r->srv->opts.service->sweeps, client, (uint64_t)cursor, list, (int)limit + 1);
  }
  if (n < 0) {
    free(list);
    return respond_json(r, 500, NULL);
  }
  json_t *items = json_array(), *next = json_null();
  for (int i = 0; i < n && i < limit; i++) {
    bool final;
    json_t *o = sweep_json(r->srv->engine, r->srv->opts.service, &list[i], false, &final);
    if (o) json_array_append_new(items, o);
  }
  if (n > limit) next = json_integer((json_int_t)list[limit - 1].id);
  for (int i = 0; i < n; i++) sweep_copy_free(&list[i]);
  free(list);
  return respond_json(r, 200, json_pack("{s:o,s:o}", "sweeps", items, "next_cursor", next));
}

/* Cancels a sweep's job: in this engine, or (a fleet's job another node holds, or
 * none yet) in the store as DELETE /jobs/{id} does. 1 when it was (or will be). */
static int cancel_point(struct request *r, uint64_t id) {
  struct job *job = engine_job_get(r->srv->engine, id);
  if (job) {
    bool canceled = engine_job_cancel(r->srv->engine, job) == 0;
    job_unref(job);
    return canceled;
  }
  const struct service *svc = r->srv->opts.service;
  char *record = service_shared(svc) ? service_job_record(svc, id) : NULL;
  int rc = record ? service_cancel_stored(svc, id, record, NULL) : -ENOENT; /* -EALREADY: ended */
  free(record);
  return rc == 0 || rc == 1;
}

enum MHD_Result route_sweep(struct request *r, const struct route_args *a) {
  const char *id_text = a->id;
  uint64_t id;
  struct sweep_copy s;
  if (!parse_id(id_text, &id) || find_sweep(r, id, &s))
    return respond_fail(r, 404, "sweep_not_found", "id", "no sweep '%.40s'", id_text);
  bool visible = request_may_see(r, s.client);
  int canceled = 0;
  if (visible && strcmp(r->method, "DELETE") == 0)
    for (int i = 0; i < s.n_jobs; i++) canceled += cancel_point(r, s.jobs[i]);
  bool was_delete = strcmp(r->method, "DELETE") == 0;
  sweep_copy_free(&s);
  if (!visible) return respond_fail(r, 404, "sweep_not_found", "id", "no sweep '%.40s'", id_text);
  if (was_delete && canceled == 0)
    return respond_fail(r, 409, "sweep_finished", "id",
                        "every job of sweep %s has already finished", id_text);
  return respond_sweep(r, id, false);
}

enum MHD_Result route_sweeps(struct request *r, const struct route_args *a) {
  return strcmp(r->method, "POST") == 0 ? sweeps_post(r) : sweeps_index(r);
}
