/* GET /leaderboard/{experiment}?size=...: the best verified result of every variant
 * (the built-ins and users' kernels) at one size of an experiment that takes users'
 * kernels, from the jobs that measured them (the store's, or memory's with --db none),
 * ranked, each row linking its job. Only runs that passed their check, were not refused
 * as implausible and ran uncontended count; a baseline (transpose's copy) is not
 * ranked; users' kernels only where the asking client may see them, measured under
 * today's rules (user_kernel.rules, EXP_USER_RULES), and a user's run with uneven
 * samples (warnings: uneven_samples) only once another job of the same kernel and size
 * reproduced its median within EXP_REPRODUCED. The size sets the experiment's
 * dimension params; the others stay at their defaults. /leaderboard/problem:<name> is a
 * problem's: its newest version's (or ?version=) at its params (?size= gives them in
 * order), its reference and users' kernels of it ranked alike. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http/routes.h"
#include "server/service/job_json.h"
#include "server/service/problems.h"
#include "server/service/ukernels.h"

#define BOARD_SCAN_LIMIT 5000 /* jobs read, newest first */

struct board {
  struct request *r;
  enum exp_type type;
  const struct exp_desc *exp;
  long long want[EXP_MAX_PARAMS]; /* every param's value the rows were measured at */
  json_t *best;                   /* label -> row */
  json_t *medians;                /* label -> [[job, median_ms], ...] of every rankable run */
  json_t *pending;                /* [row, ...]: runs with uneven samples, not yet reproduced */
  json_t *visible;                /* "<id>@<version>" -> whether the client may see it */
  /* A problem's board (/leaderboard/problem:<name>): its name and version, and its
   * params' names and the values the rows were measured at. */
  const char *problem;
  int version, n_pparams;
  char pnames[EXP_PROBLEM_MAX_PARAMS][PROBLEM_IDENT_MAX + 1];
  long long pwant[EXP_PROBLEM_MAX_PARAMS];
};

static const char *str_of(json_t *o, const char *key) {
  const char *v = json_string_value(json_object_get(o, key));
  return v ? v : "";
}
static json_t *or_null(json_t *v) { return v ? v : json_null(); }

/* Whether the version of a kernel that a run's user_kernel names (its kernel's id, and
 * its version where the run says; else the newest) may be shown to the asking client;
 * asked of the store once per version a board meets. */
static bool kernel_visible(struct board *b, json_t *uk) {
  json_int_t id = json_integer_value(json_object_get(uk, "id"));
  int version = (int)json_integer_value(json_object_get(uk, "version"));
  char key[48];
  snprintf(key, sizeof key, "%lld@%d", (long long)id, version);
  json_t *known = json_object_get(b->visible, key);
  if (known) return json_is_true(known);
  struct store_kernel k;
  bool ok = false;
  if (ukernels_version(b->r->srv->opts.service->ukernels, id, version, &k, NULL) == 0) {
    ok = k.is_public || request_may_see(b->r, k.owner);
    ukernels_clear(&k);
  }
  json_object_set_new(b->visible, key, json_boolean(ok));
  return ok;
}

/* Whether a run of the job (label, its user_kernel or NULL) may take a row. */
static bool rankable(struct board *b, json_t *run, const char *label, json_t *uk) {
  json_t *fig = json_object_get(run, "figure");
  if (!json_is_true(json_object_get(run, "available")) || !json_is_number(fig) ||
      !json_is_true(json_object_get(json_object_get(run, "check"), "passed")) ||
      json_object_get(run, "refused") || json_is_true(json_object_get(run, "contended")))
    return false;
  if (uk) /* measured under today's rules, and visible to the asking client */
    return json_integer_value(json_object_get(uk, "rules")) >= EXP_USER_RULES &&
           kernel_visible(b, uk);
  int v = exp_variant_from_name(b->type, label);
  return v >= 0 && !(b->exp->variants[v].flags & EXP_VARIANT_BASELINE);
}

/* Whether a problem's job ran b's problem and version at b's params. */
static bool problem_matches(const struct board *b, json_t *params) {
  json_t *p = json_object_get(params, "problem");
  if (strcmp(str_of(p, "name"), b->problem) != 0 ||
      json_integer_value(json_object_get(p, "version")) != b->version)
    return false;
  for (int i = 0; i < b->n_pparams; i++)
    if (json_integer_value(json_object_get(params, b->pnames[i])) != b->pwant[i]) return false;
  return true;
}

static void consider(struct board *b, json_t *job) {
  if (!job || strcmp(str_of(job, "type"), b->exp->name) != 0 ||
      strcmp(str_of(job, "state"), "done") != 0)
    return;
  json_t *params = json_object_get(job, "params");
  if (b->problem && !problem_matches(b, params)) return;
  for (int i = 0; i < b->exp->n_params; i++)
    if (json_integer_value(json_object_get(params, b->exp->params[i].name)) != b->want[i]) return;
  size_t i;
  json_t *run;
  json_array_foreach(json_object_get(json_object_get(job, "result"), "runs"), i, run) {
    const char *label = json_string_value(json_object_get(run, "variant"));
    json_t *uk = json_object_get(run, "user_kernel"), *fig = json_object_get(run, "figure");
    if (!label || !rankable(b, run, label, uk)) continue;
    json_int_t id = json_integer_value(json_object_get(job, "id"));
    json_t *median = json_object_get(json_object_get(run, "timing"), "median_ms");
    json_t *seen = json_object_get(b->medians, label);
    if (!seen && (seen = json_array())) json_object_set_new(b->medians, label, seen);
    json_array_append_new(seen, json_pack("[I,O]", id, or_null(median)));
    bool uneven = json_array_size(json_object_get(run, "warnings")) > 0;
    json_t *have = json_object_get(b->best, label);
    if (!uneven && have &&
        json_number_value(json_object_get(have, "figure")) >= json_number_value(fig))
      continue;
    char href[48]; /* under the prefix the request came by */
    snprintf(href, sizeof href, "%s/jobs/%lld", b->r->api_prefix ? b->r->api_prefix : "",
             (long long)id);
    json_t *row = json_pack(
        "{s:s,s:O,s:O,s:O,s:O,s:I,s:s,s:O,s:O}", "variant", label, "figure", fig, "unit",
        or_null(json_object_get(run, "unit")), "median_ms",
        or_null(json_object_get(json_object_get(run, "timing"), "median_ms")), "percent_of_ceiling",
        or_null(json_object_get(run, "percent_of_ceiling")), "job", id, "href", href, "device",
        or_null(json_object_get(json_object_get(job, "result"), "device")), "finished_at",
        or_null(json_object_get(job, "finished_at")));
    if (row && uk) { /* its href under the prefix the request came by, as the row's */
      json_t *copy = json_copy(uk);
      const char *kh = json_string_value(json_object_get(uk, "href"));
      if (copy && kh && b->r->api_prefix && b->r->api_prefix[0])
        json_object_set_new(copy, "href", json_sprintf("%s%s", b->r->api_prefix, kh));
      json_object_set_new(row, "user_kernel", copy);
    }
    if (row && uneven) /* decided once every job was read: reproduced or not */
      json_array_append_new(b->pending, row);
    else if (row)
      json_object_set_new(b->best, label, row);
  }
}

/* Whether another job measured label within EXP_REPRODUCED of row's median. */
static bool reproduced(struct board *b, json_t *row) {
  json_int_t job = json_integer_value(json_object_get(row, "job"));
  double median = json_number_value(json_object_get(row, "median_ms"));
  size_t i;
  json_t *m;
  json_array_foreach(
      json_object_get(b->medians, json_string_value(json_object_get(row, "variant"))), i, m) {
    double other = json_number_value(json_array_get(m, 1));
    if (json_integer_value(json_array_get(m, 0)) != job && median > 0 &&
        fabs(other / median - 1) <= EXP_REPRODUCED)
      return true;
  }
  return false;
}

/* The runs with uneven samples that another job reproduced take their place. */
static void settle_pending(struct board *b) {
  size_t i;
  json_t *row;
  json_array_foreach(b->pending, i, row) {
    const char *label = json_string_value(json_object_get(row, "variant"));
    json_t *have = json_object_get(b->best, label);
    if (!reproduced(b, row) || (have && json_number_value(json_object_get(have, "figure")) >=
                                            json_number_value(json_object_get(row, "figure"))))
      continue;
    json_object_set(b->best, label, row);
  }
}

static void from_store(void *arg, uint64_t id, const char *record) {
  (void)id;
  json_t *job = json_loads(record, 0, NULL);
  consider(arg, job);
  json_decref(job);
}

static void from_memory(struct board *b) {
  struct engine_list_filter f = {.state = job_state_from_name("done"), .type = (int)b->type};
  struct job **jobs = malloc(sizeof *jobs * BOARD_SCAN_LIMIT);
  int n = jobs ? engine_jobs_list(b->r->srv->engine, &f, jobs, BOARD_SCAN_LIMIT) : 0;
  for (int i = 0; i < n; i++) {
    struct job_view v;
    job_get_view(b->r->srv->engine, jobs[i], &v);
    json_t *j = job_json(&v, true);
    consider(b, j);
    json_decref(j);
    job_unref(jobs[i]);
  }
  free(jobs);
}

static int by_figure(const void *a, const void *b) {
  double fa = json_number_value(json_object_get(*(json_t *const *)a, "figure"));
  double fb = json_number_value(json_object_get(*(json_t *const *)b, "figure"));
  return fa < fb ? 1 : fa > fb ? -1 : 0;
}

/* ?size=: one integer for every dimension param, or one per dimension param in order
 * ("4096", "4096,2048"); each within its param's range. */
static int parse_size(struct board *b, const char *size, struct api_error *err) {
  int dims[EXP_MAX_PARAMS], n_dims = 0;
  for (int i = 0; i < b->exp->n_params; i++)
    if (b->exp->params[i].flags & EXP_PARAM_DIM) dims[n_dims++] = i;
  long long v[EXP_MAX_PARAMS];
  int n = 0;
  const char *p = size;
  while (*p && n < n_dims) {
    char *end;
    v[n] = strtoll(p, &end, 10);
    if (end == p || (*end && *end != ',')) break;
    n++;
    p = *end ? end + 1 : end;
  }
  if (*p || n < 1 || (n > 1 && n != n_dims))
    return api_error_set(err, 400, "wrong_type", "size",
                         "size is one integer or %d, comma-separated (e.g. size=4096), got '%.40s'",
                         n_dims, size);
  for (int k = 0; k < n_dims; k++) {
    const struct exp_param *prm = &b->exp->params[dims[k]];
    long long x = v[n == 1 ? 0 : k];
    if (x < prm->min || x > prm->max)
      return api_error_set(err, 400, "out_of_range", "size",
                           "%s must be between %d and %d, got %lld", prm->name, prm->min, prm->max,
                           x);
    b->want[dims[k]] = x;
  }
  return 0;
}

/* The rows of b, best figure first, ranked; and the size they were measured at. */
static json_t *board_json(struct board *b) {
  size_t n = json_object_size(b->best), k = 0;
  json_t **rows = malloc(sizeof *rows * (n ? n : 1));
  if (!rows) return NULL;
  const char *key;
  json_t *row;
  json_object_foreach(b->best, key, row) rows[k++] = row;
  qsort(rows, k, sizeof *rows, by_figure);
  json_t *list = json_array(), *size = json_object();
  for (size_t i = 0; i < k; i++) {
    json_object_set_new(rows[i], "rank", json_integer((json_int_t)i + 1));
    json_array_append(list, rows[i]);
  }
  free(rows);
  for (int i = 0; i < b->exp->n_params; i++)
    json_object_set_new(size, b->exp->params[i].name, json_integer(b->want[i]));
  for (int i = 0; i < b->n_pparams; i++)
    json_object_set_new(size, b->pnames[i], json_integer(b->pwant[i]));
  if (!b->problem)
    return json_pack("{s:s,s:o,s:o}", "experiment", b->exp->name, "size", size, "rows", list);
  return json_pack("{s:s+,s:{s:s,s:i},s:o,s:o}", "experiment", "problem:", b->problem, "problem",
                   "name", b->problem, "version", b->version, "size", size, "rows", list);
}

static json_t *board_of(struct board *b0, struct api_error *err);

/* A problem's ?size=: its params' values in their order, comma-separated ("4096,1024"),
 * each within its range; params not given stay at their defaults. */
static int parse_problem_size(struct board *b, const struct problem_def *d, const char *size,
                              struct api_error *err) {
  const char *p = size;
  for (int i = 0; i < d->n_params && *p; i++) {
    char *end;
    long long x = strtoll(p, &end, 10);
    if (end == p || (*end && *end != ','))
      return api_error_set(err, 400, "wrong_type", "size",
                           "size is the problem's params in order, comma-separated (%s%s), got "
                           "'%.40s'",
                           d->params[0].name, d->n_params > 1 ? ", ..." : "", size);
    if (x < d->params[i].min || x > d->params[i].max)
      return api_error_set(err, 400, "out_of_range", "size",
                           "%s must be between %d and %d, got %lld", d->params[i].name,
                           d->params[i].min, d->params[i].max, x);
    b->pwant[i] = x;
    p = *end ? end + 1 : end;
  }
  if (*p)
    return api_error_set(err, 400, "out_of_range", "size", "problem %s has %d params", d->name,
                         d->n_params);
  return 0;
}

/* GET /leaderboard/problem:<name>: the board of its newest version (or ?version=), which
 * the client may see. */
static enum MHD_Result problem_board(struct request *r, const char *name) {
  const char *vtext = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "version");
  const char *size = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "size");
  int version = vtext ? atoi(vtext) : 0;
  if (vtext && version < 1)
    return respond_fail(r, 400, "out_of_range", "version", "version is 1, 2, ..., got '%.20s'",
                        vtext);
  struct store_problem row;
  struct problem_def *d = NULL;
  int rc = route_problem_visible(r, name, version, &row, &d);
  if (rc)
    return rc == -ENOENT
               ? respond_fail(r, 404, "problem_not_found", "experiment", "no problem '%.63s'%s",
                              name, version ? " of that version" : "")
               : respond_storage(r, rc);
  struct board b = {.r = r, .type = EXP_PROBLEM, .exp = exp_desc(EXP_PROBLEM)};
  b.problem = name;
  b.version = row.version;
  b.n_pparams = d->n_params;
  for (int i = 0; i < d->n_params; i++) {
    snprintf(b.pnames[i], sizeof b.pnames[i], "%s", d->params[i].name);
    b.pwant[i] = d->params[i].def;
  }
  problems_row_clear(&row);
  struct api_error err;
  rc = size ? parse_problem_size(&b, d, size, &err) : 0;
  problem_def_free(d);
  if (rc) return respond_error(r, &err);
  json_t *out = board_of(&b, &err);
  return out ? respond_json(r, 200, out) : respond_error(r, &err);
}

/* b's rows from the jobs that measured them, as the board's document; NULL with err. */
static json_t *board_of(struct board *b0, struct api_error *err) {
  struct board b = *b0;
  b.best = json_object(), b.medians = json_object(), b.pending = json_array();
  b.visible = json_object();
  json_t *out = NULL;
  if (b.best && b.medians && b.pending && b.visible) {
    if (service_jobs_page(b.r->srv->opts.service, 0, "done", b.exp->name, NULL, BOARD_SCAN_LIMIT,
                          from_store, &b) == -ENOENT)
      from_memory(&b);
    settle_pending(&b);
    out = board_json(&b);
  }
  json_decref(b.best);
  json_decref(b.medians);
  json_decref(b.pending);
  json_decref(b.visible);
  if (!out) api_error_set(err, 500, "out_of_memory", NULL, "out of memory");
  return out;
}

json_t *route_leaderboard_board(struct request *r, int type, const char *size,
                                struct api_error *err) {
  struct board b = {.r = r, .type = (enum exp_type)type, .exp = exp_desc((enum exp_type)type)};
  for (int i = 0; i < b.exp->n_params; i++) b.want[i] = b.exp->params[i].def;
  if (size && parse_size(&b, size, err)) return NULL;
  return board_of(&b, err);
}

enum MHD_Result route_leaderboard(struct request *r, const struct route_args *a) {
  const char *experiment = a->id;
  if (!strncmp(experiment, "problem:", 8)) return problem_board(r, experiment + 8);
  int type = exp_type_from_name(experiment);
  if (type < 0 || !exp_user_of((enum exp_type)type)) {
    char names[96] = "";
    for (int t = 0, used = 0; t < EXP_TYPE_COUNT; t++)
      if (exp_user_of((enum exp_type)t))
        used += snprintf(names + used, sizeof names - (size_t)used, "%s%s", used ? ", " : "",
                         exp_type_name((enum exp_type)t));
    return respond_fail(r, 404, "not_found", "experiment", "no leaderboard '%.40s'; valid: %s",
                        experiment, names);
  }
  const char *size = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "size");
  struct api_error err;
  json_t *out = route_leaderboard_board(r, type, size, &err);
  return out ? respond_json(r, 200, out) : respond_error(r, &err);
}
