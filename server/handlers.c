/* The routes: what each URL and method does, in terms of the engine and api/. */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/encode.h"
#include "api/openapi.h"
#include "api/params.h"
#include "server/http_priv.h"
#include "server/job_json.h"
#include "server/auth.h"
#include "server/metrics.h"
#include "server/store.h"
#include "server/static.h"

enum route_id {
  ROUTE_INDEX, ROUTE_HEALTH, ROUTE_METRICS, ROUTE_DEVICE, ROUTE_DEVICES, ROUTE_JOBS, ROUTE_JOB, ROUTE_JOB_EVENTS, ROUTE_EVENTS,
  ROUTE_BUFFERS, ROUTE_BUFFER, ROUTE_EXPERIMENT, ROUTE_STATIC, ROUTE_OPENAPI, ROUTE_SWEEPS, ROUTE_SWEEP
};

struct route_match {
  enum route_id id;
  const char *allow;
  const char *pattern; /* e.g. "/jobs/{id}": the route's name in metrics and logs */
  int exp_type;        /* ROUTE_EXPERIMENT */
  char id_text[24];    /* ROUTE_JOB, ROUTE_JOB_EVENTS, ROUTE_BUFFER: the id as written */
};

#define LIST_LIMIT_DEFAULT 50
#define LIST_LIMIT_MAX 1000

/* Matches "/<prefix>/<id><suffix>" with a non-empty id of at most 23 characters. */
static bool match_id(const char *url, const char *prefix, const char *suffix, char *id, size_t len) {
  size_t p = strlen(prefix), s = strlen(suffix);
  if (strncmp(url, prefix, p) != 0) return false;
  const char *start = url + p, *slash = strchr(start, '/');
  size_t n = slash ? (size_t)(slash - start) : strlen(start);
  if (n == 0 || n >= len || strcmp(start + n, suffix) != 0 || (s == 0 && slash)) return false;
  memcpy(id, start, n);
  id[n] = '\0';
  return true;
}

static bool match_route(const char *url, struct route_match *m) {
  static const struct { const char *path; enum route_id id; const char *allow; } fixed[] = {
      {"/", ROUTE_INDEX, "GET, HEAD"},         {"/health", ROUTE_HEALTH, "GET, HEAD"},
      {"/device", ROUTE_DEVICE, "GET, HEAD"},  {"/devices", ROUTE_DEVICES, "GET, HEAD"},
      {"/jobs", ROUTE_JOBS, "GET, HEAD, POST"},
      {"/events", ROUTE_EVENTS, "GET"},        {"/buffers", ROUTE_BUFFERS, "GET, HEAD, POST"},
      {"/metrics", ROUTE_METRICS, "GET, HEAD"},  {"/openapi.json", ROUTE_OPENAPI, "GET, HEAD"},
      {"/sweeps", ROUTE_SWEEPS, "GET, HEAD, POST"}, /* handlers_sweeps.c */
  };
  memset(m, 0, sizeof *m);
  m->exp_type = -1;
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    if (strcmp(url, fixed[i].path) == 0) {
      m->id = fixed[i].id;
      m->allow = fixed[i].allow;
      m->pattern = fixed[i].path;
      return true;
    }
  /* Routes with an id: "<prefix><id><suffix>", tried in this order. */
  static const struct {
    const char *prefix, *suffix, *pattern;
    enum route_id id;
    const char *allow;
  } with_id[] = {
      {"/jobs/", "/events", "/jobs/{id}/events", ROUTE_JOB_EVENTS, "GET"},
      {"/jobs/", "", "/jobs/{id}", ROUTE_JOB, "GET, HEAD, DELETE"},
      {"/sweeps/", "", "/sweeps/{id}", ROUTE_SWEEP, "GET, HEAD, DELETE"},
      {"/buffers/", "", "/buffers/{id}", ROUTE_BUFFER, "GET, HEAD, DELETE"},
  };
  for (size_t i = 0; i < sizeof with_id / sizeof with_id[0]; i++)
    if (match_id(url, with_id[i].prefix, with_id[i].suffix, m->id_text, sizeof m->id_text)) {
      m->id = with_id[i].id;
      m->allow = with_id[i].allow;
      m->pattern = with_id[i].pattern;
      return true;
    }
  if (strncmp(url, "/static/", 8) == 0) { /* the dashboard's files (static.c) */
    m->id = ROUTE_STATIC;
    m->allow = "GET, HEAD";
    m->pattern = "/static/*";
  } else if (url[0] == '/' && exp_type_from_name(url + 1) >= 0) {
    m->id = ROUTE_EXPERIMENT;
    m->allow = "POST";
    m->exp_type = exp_type_from_name(url + 1);
    m->pattern = exp_type_route(m->exp_type);
  } else {
    return false;
  }
  return true;
}

static bool method_allowed(const char *method, const char *allow) {
  size_t n = strlen(method);
  for (const char *p = allow; (p = strstr(p, method)); p += n)
    if ((p == allow || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0')) return true;
  return false;
}

static bool is_json_route(const struct route_match *m, const char *method) {
  return strcmp(method, "POST") == 0 &&
         (m->id == ROUTE_EXPERIMENT || m->id == ROUTE_JOBS || m->id == ROUTE_SWEEPS);
}

/* The media type of a Content-Type (parameters and trailing blanks dropped) is one
 * of names (NULL-terminated), case-insensitively. */
static bool media_type_in(const char *ct, const char *const *names, size_t *type_len) {
  size_t len = strcspn(ct, ";");
  while (len && isspace((unsigned char)ct[len - 1])) len--;
  *type_len = len;
  for (; *names; names++)
    if (len == strlen(*names) && strncasecmp(ct, *names, len) == 0) return true;
  return false;
}

static bool npy_content_type(const char *ct) {
  static const char *const ok[] = {"application/x-npy", "application/octet-stream", NULL};
  size_t len;
  return ct && media_type_in(ct, ok, &len);
}

/* JSON, or curl -d's default form type (the README's examples send JSON that way). */
static bool json_content_type(const char *ct) {
  static const char *const ok[] = {"application/json", "application/x-www-form-urlencoded", NULL};
  size_t len;
  if (!ct || media_type_in(ct, ok, &len)) return true;
  return len > 5 && strncasecmp(ct + len - 5, "+json", 5) == 0;
}

bool request_sees_all(const struct request *r) {
  return !r->srv->opts.auth || (r->who && r->who->admin);
}

bool request_may_see(const struct request *r, const char *owner) {
  return request_sees_all(r) || strcmp(r->client, owner) == 0;
}

/* With --tokens, every route but /health, the dashboard's files and the API's
 * description (/openapi.json) needs a token:
 * "Authorization: Bearer T", or ?access_token=T for an EventSource (which cannot
 * set headers). Sets r->who and r->client. Returns false after answering 401. */
static bool authenticate(struct request *r, const struct route_match *m, enum MHD_Result *result) {
  const struct auth *auth = r->srv->opts.auth;
  if (!auth) return true;
  bool public_route = m->id == ROUTE_HEALTH || m->id == ROUTE_STATIC || m->id == ROUTE_INDEX ||
                      m->id == ROUTE_OPENAPI;
  const char *header = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
  const char *token = NULL;
  if (header && strncasecmp(header, "Bearer ", 7) == 0) token = header + 7;
  if (!token) token = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "access_token");
  r->who = token ? auth_check(auth, token) : NULL;
  if (r->who) snprintf(r->client, sizeof r->client, "%s", r->who->name);
  if (r->who || public_route) return true;
  r->www_authenticate = token ? "Bearer realm=\"gpulab\", error=\"invalid_token\"" : "Bearer realm=\"gpulab\"";
  *result = respond_fail(r, 401, token ? "invalid_token" : "missing_token", NULL,
                         token ? "the token is not valid" : "send Authorization: Bearer <token>");
  return false;
}

bool handle_precheck(struct request *r, const char *url, enum MHD_Result *result) {
  struct route_match m;
  if (!match_route(url, &m)) {
    *result = respond_fail(r, 404, "not_found", NULL, "no route %.8s %.200s", r->method, url);
    return true;
  }
  if (!authenticate(r, &m, result)) return true;
  r->allow = m.allow;
  r->route = m.pattern;
  const char *method = strcmp(r->method, "HEAD") == 0 ? "GET" : r->method;
  if (!method_allowed(method, m.allow)) {
    *result = respond_fail(r, 405, "method_not_allowed", NULL, "%.8s is not allowed on %.200s; allowed: %s",
                           r->method, url, m.allow);
    return true;
  }
  bool upload = m.id == ROUTE_BUFFERS && strcmp(method, "POST") == 0;
  if (!is_json_route(&m, method) && !upload) return false;
  const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
  if (upload && !npy_content_type(ct)) {
    *result = respond_fail(r, 415, "unsupported_media_type", NULL,
                           "send a .npy file (Content-Type: application/x-npy) or raw float32 "
                           "(application/octet-stream with ?shape=m,n), got '%.100s'", ct ? ct : "");
    return true;
  }
  if (!upload && !json_content_type(ct)) {
    *result = respond_fail(r, 415, "unsupported_media_type", NULL,
                           "the body must be JSON (Content-Type: application/json), got '%.100s'", ct);
    return true;
  }
  if (upload) r->body_limit = r->srv->opts.max_upload;
  const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  unsigned long long length = cl ? strtoull(cl, NULL, 10) : 0;
  if (length > r->body_limit) {
    *result = respond_fail(r, 413, "body_too_large", NULL,
                           "the request body has %llu bytes; %s allows %zu", length,
                           upload ? "--max-upload" : "--max-body", r->body_limit);
    return true;
  }
  return false;
}

/* A job the client waits for may run on this thread (engine_run_inline) when it is
 * small and short: at most --inline-max-bytes of data and 256 timed or warm-up
 * launches per variant, with no noise rule that could extend it. Longer jobs would
 * hold an HTTP thread that other connections need. */
static bool job_may_run_inline(struct request *r, struct job *job) {
  if (r->srv->opts.inline_max_bytes <= 0) return false;
  struct job_view v; /* its spec as resolved: sizes taken from input buffers too */
  job_get_view(r->srv->engine, job, &v);
  const struct exp_timing_params *t = &v.spec.timing;
  long long launches = ((long long)t->warmup + (long long)t->batches) * (t->reps > 0 ? t->reps : 1);
  return exp_spec_bytes(&v.spec) <= (uint64_t)r->srv->opts.inline_max_bytes &&
         v.spec.stop.max_noise == 0 && launches <= 256;
}

/* 200 with a finished job; 202 and where to look while it is still going. What the
 * client is told is in the store first (accepted jobs survive a crash). */
static enum MHD_Result respond_job(struct request *r, struct job *job, unsigned status_done) {
  struct job_view v;
  job_get_view(r->srv->engine, job, &v);
  if (r->srv->opts.store) store_flush(r->srv->opts.store);
  bool final = job_state_final(v.state);
  if (!final) snprintf(r->location, sizeof r->location, "/jobs/%" PRIu64, v.id);
  return respond_json(r, final ? status_done : 202, job_json(&v, true));
}

enum MHD_Result handle_resumed(struct request *r) {
  return r->sweep_id ? sweep_resumed(r) : respond_job(r, r->job, 200);
}

const char *request_client(struct request *r, char *buf, size_t len) {
  if (r->client[0]) {
    snprintf(buf, len, "%s", r->client);
    return buf;
  }
  const union MHD_ConnectionInfo *info =
      MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  buf[0] = '\0';
  if (!info || !info->client_addr) return buf;
  const struct sockaddr *sa = info->client_addr;
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, (socklen_t)len);
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, (socklen_t)len);
  return buf;
}

/* The API error for an engine refusal. */
/* The API error for an engine refusal. Input fields are params: under /jobs they
 * are named "params.<input>" like every other param there. */
enum MHD_Result respond_refusal(struct request *r, const struct exp_spec *spec,
                                       const struct engine_error *e, const char *params_prefix) {
  char named[64];
  const char *field = e->field[0] ? e->field : NULL;
  for (int s = 0; field && s < exp_input_count(spec->type); s++)
    if (strcmp(field, exp_input_name(spec->type, s)) == 0) {
      snprintf(named, sizeof named, "%s%s", params_prefix, field);
      field = named;
    }
  switch (-e->code) {
  case ENOENT: {
    bool buffer = false;
    for (int s = 0; s < exp_input_count(spec->type); s++)
      if (strcmp(e->field, exp_input_name(spec->type, s)) == 0)
        buffer = spec->inputs[s].kind == EXP_INPUT_BUFFER;
    return respond_fail(r, 404, buffer ? "buffer_not_found" : "job_not_found", field, "%s", e->message);
  }
  case EINVAL:
    return respond_fail(r, 400,
                        field && (!strcmp(field, "depends_on") || !strcmp(field, "device")) ? "out_of_range"
                                                                                          : "shape_mismatch",
                        field, "%s", e->message);
  case EPIPE: return respond_fail(r, 409, "output_not_kept", field, "%s", e->message);
  case EPROTOTYPE: return respond_fail(r, 400, "dtype_mismatch", field, "%s", e->message);
  case EFBIG: return respond_fail(r, 413, "job_too_large", NULL, "%s", e->message);
  case EAGAIN:
    r->retry_after_s = 1; /* queues drain at job speed; a second is a fair first guess */
    return respond_fail(r, 429, "queue_full", NULL, "%s", e->message);
  default: return respond_fail(r, 503, "unavailable", NULL, "cannot queue the job: %s", e->message);
  }
}


static enum MHD_Result submit_job(struct request *r, const struct exp_spec *spec,
                                  const struct api_job_options *opts, const char *params_prefix) {
  struct api_error err;
  double wait_s;
  const char *wait_text = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "wait");
  if (api_wait_parse(wait_text, r->srv->opts.default_wait_s, &wait_s, &err))
    return respond_error(r, &err);
  struct engine *e = r->srv->engine;
  if (!engine_healthy(e))
    return respond_fail(r, 503, "backend_unavailable", NULL,
                        "the device failed and gpulabd is not accepting jobs; see /health");
  struct engine_job_request req = {.spec = *spec, .device = opts->device, .priority = opts->priority,
                                   .exclusive = opts->exclusive, .keep_output = opts->keep_output,
                                   .host_sync = opts->host_sync, .n_depends = opts->n_depends};
  memcpy(req.depends_on, opts->depends_on, sizeof req.depends_on);
  request_client(r, req.client, sizeof req.client);
  req.admin = !r->srv->opts.auth || (r->who && r->who->admin);
  req.max_queued = r->who ? r->who->max_queued : 0;
  double wait_for_rate = r->who ? rate_take_n(r->srv, r->who, 1) : 0;
  if (wait_for_rate > 0) {
    r->retry_after_s = (int)wait_for_rate + 1;
    return respond_fail(r, 429, "rate_limited", NULL,
                        "this client may submit %g jobs per second; retry in %.1f s", r->who->rate,
                        wait_for_rate);
  }
  struct job *job;
  struct engine_error refusal;
  if (engine_submit(e, &req, &job, &refusal)) return respond_refusal(r, spec, &refusal, params_prefix);
  enum MHD_Result ret;
  if (wait_s > 0 && job_may_run_inline(r, job) && engine_run_inline(e, job)) {
    ret = respond_job(r, job, 200); /* it ran here, to its end */
  } else if (wait_s > 0) {
    request_wait_for_job(r, job, wait_s);
    ret = MHD_YES;
  } else {
    ret = respond_job(r, job, 200);
  }
  job_unref(job);
  return ret;
}

static enum MHD_Result post_experiment(struct request *r, int type) {
  struct exp_spec spec;
  struct api_job_options opts;
  struct api_error err;
  if (api_params_parse((enum exp_type)type, r->body ? r->body : "", r->body_len, &spec, &opts, &err))
    return respond_error(r, &err);
  return submit_job(r, &spec, &opts, "");
}

static enum MHD_Result post_jobs(struct request *r) {
  struct api_job_request req;
  struct api_error err;
  if (api_job_request_parse(r->body ? r->body : "", r->body_len, &req, &err))
    return respond_error(r, &err);
  return submit_job(r, &req.spec, &req.opts, "params.");
}

bool parse_id(const char *text, uint64_t *id) {
  if (!*text || *text == '0' || strlen(text) > 19) return false;
  for (const char *p = text; *p; p++)
    if (!isdigit((unsigned char)*p)) return false;
  *id = strtoull(text, NULL, 10);
  return true;
}

/* A job the requester may see: its own, or any for an admin; others' are "not
 * found" (404, not 403), so ids do not leak. */
static struct job *find_visible_job(struct request *r, const char *id_text) {
  uint64_t id;
  struct job *job = parse_id(id_text, &id) ? engine_job_get(r->srv->engine, id) : NULL;
  if (job) {
    struct job_view v;
    job_get_view(r->srv->engine, job, &v);
    if (!request_may_see(r, v.client)) {
      job_unref(job);
      job = NULL;
    }
  }
  return job;
}

/* A token bucket per client: rate jobs per second, bursts of up to 2 s worth.
 * Returns 0 when n submissions may go now (taking them), else the seconds until
 * they may. */
double rate_take_n(struct http_server *srv, const struct auth_client *who, int n) {
  if (who->rate <= 0) return 0;
  double now = engine_now_mono(), wait = 0;
  pthread_mutex_lock(&srv->rates_lock);
  struct rate_bucket *b = NULL;
  for (int i = 0; i < srv->n_rates && !b; i++)
    if (srv->rates[i].who == who) b = &srv->rates[i];
  if (!b && srv->n_rates < HTTP_MAX_RATES) {
    b = &srv->rates[srv->n_rates++];
    *b = (struct rate_bucket){.who = who, .tokens = 2 * who->rate, .at = now};
  }
  if (b) {
    b->tokens += (now - b->at) * who->rate;
    if (b->tokens > 2 * who->rate) b->tokens = 2 * who->rate;
    b->at = now;
    if (b->tokens >= n)
      b->tokens -= n;
    else
      wait = (n - b->tokens) / who->rate;
  }
  pthread_mutex_unlock(&srv->rates_lock);
  return wait;
}

/* A job older than memory (or of a previous run) as the store recorded it; NULL
 * when there is none the requester may see. */
static json_t *stored_job(struct request *r, const char *id_text) {
  uint64_t id;
  char *text = r->srv->opts.store && parse_id(id_text, &id) ? store_record(r->srv->opts.store, id) : NULL;
  json_t *j = text ? json_loads(text, 0, NULL) : NULL;
  free(text);
  const char *owner = json_string_value(json_object_get(j, "client"));
  if (j && !request_may_see(r, owner ? owner : "")) {
    json_decref(j);
    j = NULL;
  }
  return j;
}

static enum MHD_Result job_route(struct request *r, const char *id_text) {
  struct engine *e = r->srv->engine;
  struct job *job = find_visible_job(r, id_text);
  if (!job) {
    json_t *stored = stored_job(r, id_text);
    if (!stored) return respond_fail(r, 404, "job_not_found", "id", "no job '%.40s'", id_text);
    const char *state = json_string_value(json_object_get(stored, "state"));
    bool finished = state && job_state_from_name(state) >= JOB_DONE;
    if (strcmp(r->method, "DELETE") == 0) {
      json_decref(stored);
      return finished ? respond_fail(r, 409, "job_finished", "id", "job %s has already finished", id_text)
                      : respond_fail(r, 404, "job_not_found", "id", "no job '%.40s'", id_text);
    }
    return respond_json(r, 200, stored);
  }
  enum MHD_Result ret;
  if (strcmp(r->method, "DELETE") == 0 && engine_job_cancel(e, job) == -EALREADY) {
    ret = respond_fail(r, 409, "job_finished", "id", "job %s has already finished", id_text);
  } else {
    struct job_view v;
    job_get_view(e, job, &v);
    ret = respond_json(r, 200, job_json(&v, true));
  }
  job_unref(job);
  return ret;
}

int query_int(struct request *r, const char *name, long long lo, long long hi, long long def,
              long long *out, struct api_error *err) {
  const char *text = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
  *out = def;
  if (!text) return 0;
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno == ERANGE)
    return api_error_set(err, 400, "out_of_range", name, "%s must be between %lld and %lld", name, lo, hi);
  if (end == text || *end || errno)
    return api_error_set(err, 400, "wrong_type", name, "%s must be an integer, got '%.40s'", name, text);
  if (v < lo || v > hi)
    return api_error_set(err, 400, "out_of_range", name, "%s must be between %lld and %lld, got %lld",
                         name, lo, hi, v);
  *out = v;
  return 0;
}

struct stored_page {
  json_t *list;
  bool with_result;
  struct engine *engine;
};

/* Appends a stored job to a listing, summarized like the in-memory ones. A job still
 * in memory is shown as it is now (the store keeps a running job's record of when
 * it was queued: durable.c), others as their record. */
static void add_stored(void *arg, uint64_t id, const char *record) {
  struct stored_page *p = arg;
  struct job *live = engine_job_get(p->engine, id);
  if (live) {
    struct job_view v;
    job_get_view(p->engine, live, &v);
    job_unref(live);
    json_array_append_new(p->list, job_json(&v, p->with_result));
    return;
  }
  json_t *j = json_loads(record, 0, NULL);
  if (!j) return;
  if (!p->with_result) {
    json_t *result = json_object_get(j, "result");
    if (json_is_object(result)) json_object_set(j, "passed", json_object_get(result, "passed"));
    json_object_del(j, "result");
  }
  json_array_append_new(p->list, j);
}

static enum MHD_Result list_jobs(struct request *r) {
  struct api_error err;
  long long limit, cursor;
  if (query_int(r, "limit", 1, LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT, &limit, &err) ||
      query_int(r, "cursor", 1, INT64_MAX, 0, &cursor, &err))
    return respond_error(r, &err);
  struct engine_list_filter f = {.state = -1, .type = -1, .before_id = (uint64_t)cursor,
                                 .client = request_sees_all(r) ? NULL : r->client};
  const char *state = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "state");
  const char *type = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "type");
  if (state && (f.state = job_state_from_name(state)) < 0)
    return respond_fail(r, 400, "unknown_state", "state",
                        "unknown state '%.40s'; valid: queued, waiting, running, done, failed, canceled", state);
  char types[160];
  exp_type_list(types, sizeof types);
  if (type && (f.type = exp_type_from_name(type)) < 0)
    return respond_fail(r, 400, "unknown_type", "type", "unknown type '%.40s'; valid: %s", type, types);
  /* ?fields=result: each job with its result (the dashboard's history, in one request). */
  const char *fields = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "fields");
  if (fields && strcmp(fields, "result") != 0)
    return respond_fail(r, 400, "unknown_field", "fields", "unknown fields '%.40s'; valid: result", fields);
  /* One more than asked tells whether a next page exists. The store holds every
   * job (those of earlier runs too) in its current state; without one, memory. */
  json_t *list = json_array();
  if (r->srv->opts.store) {
    struct stored_page page = {list, fields != NULL, r->srv->engine};
    store_list(r->srv->opts.store, (uint64_t)cursor, state, type,
               request_sees_all(r) ? NULL : r->client, (int)limit + 1, add_stored, &page);
  } else {
    struct job **jobs = malloc(((size_t)limit + 1) * sizeof *jobs);
    if (!jobs) {
      json_decref(list);
      return respond_json(r, 500, NULL);
    }
    int n = engine_jobs_list(r->srv->engine, &f, jobs, (int)limit + 1);
    for (int i = 0; i < n; i++) {
      struct job_view v;
      job_get_view(r->srv->engine, jobs[i], &v);
      json_array_append_new(list, job_json(&v, fields != NULL));
      job_unref(jobs[i]);
    }
    free(jobs);
  }
  json_t *next = json_null();
  if ((int)json_array_size(list) > limit) {
    json_array_remove(list, json_array_size(list) - 1);
    next = json_incref(json_object_get(json_array_get(list, json_array_size(list) - 1), "id"));
  }
  return respond_json(r, 200, json_pack("{s:o,s:o}", "jobs", list, "next_cursor", next));
}

/* One device; "index" is its position in this gpulabd (the "device" of jobs). */
static json_t *device_json(struct engine *e, int index) {
  struct backend *b = engine_device(e, index);
  struct backend_device_info info;
  backend_device_info(b, &info);
  json_t *o = api_device_to_json(&info);
  json_object_set_new(o, "ordinal", json_integer(info.index));
  json_object_set_new(o, "index", json_integer(index));
  json_object_set_new(o, "streams", json_integer(backend_lanes(b)));
  json_object_set_new(o, "job_memory_limit_bytes", json_integer((json_int_t)backend_memory_limit(b)));
  json_object_set_new(o, "healthy", json_boolean(backend_healthy(b)));
  return o;
}

/* Prometheus' text format, version 0.0.4. */
static enum MHD_Result metrics_page(struct request *r) {
  size_t len = 0;
  char *text = r->srv->opts.metrics ? metrics_render(r->srv->opts.metrics, r->srv->engine, &len) : NULL;
  if (!text) return respond_fail(r, 503, "unavailable", NULL, "metrics are not available");
  struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
  if (!resp) {
    free(text);
    return MHD_NO;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
  return request_queue(r, 200, resp, len);
}

/* GET /openapi.json: api/openapi.json as built in (api/openapi.h). */
static enum MHD_Result openapi_doc(struct request *r) {
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(api_openapi_json_len, (void *)api_openapi_json, MHD_RESPMEM_PERSISTENT);
  if (!resp) return MHD_NO;
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
  return request_queue(r, 200, resp, api_openapi_json_len);
}

static enum MHD_Result health(struct request *r) {
  struct engine *e = r->srv->engine;
  struct engine_counts c;
  engine_counts(e, &c);
  bool ok = engine_healthy(e);
  json_t *jobs = json_object();
  for (int s = 0; s < JOB_STATE_COUNT; s++)
    json_object_set_new(jobs, job_state_name((enum job_state)s), json_integer(c.by_state[s]));
  return respond_json(r, ok ? 200 : 503,
                      json_pack("{s:s,s:s,s:f,s:I,s:o}", "status", ok ? "ok" : "unhealthy", "backend",
                                backend_name(engine_device(e, 0)), "uptime_s",
                                engine_now_mono() - r->srv->started_mono, "jobs_submitted",
                                (json_int_t)c.submitted, "jobs", jobs));
}

static enum MHD_Result index_page(struct request *r) {
  static const char *const fixed[] = {
      "POST /jobs", "GET /jobs", "GET /jobs/{id}", "DELETE /jobs/{id}", "GET /jobs/{id}/events",
      "GET /events", "POST /buffers", "GET /buffers", "GET /buffers/{id}", "DELETE /buffers/{id}",
      "GET /device", "GET /devices", "GET /health", "GET /openapi.json", "POST /sweeps",
      "GET /sweeps", "GET /sweeps/{id}", "DELETE /sweeps/{id}"};
  json_t *routes = json_array();
  for (int t = 0; t < EXP_TYPE_COUNT; t++) /* POST /transpose, ...: one per experiment */
    json_array_append_new(routes, json_sprintf("POST %s", exp_type_route((enum exp_type)t)));
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) json_array_append_new(routes, json_string(fixed[i]));
  return respond_json(r, 200, json_pack("{s:s,s:o}", "service", "gpulabd", "routes", routes));
}

enum MHD_Result handle_request(struct request *r, const char *url) {
  struct route_match m;
  match_route(url, &m); /* handle_precheck already refused unknown routes */
  bool post = strcmp(r->method, "POST") == 0;
  switch (m.id) {
  case ROUTE_INDEX: /* browsers get the dashboard; API clients the list of routes */
    return static_wants_html(MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT))
               ? static_respond(r, url)
               : index_page(r);
  case ROUTE_STATIC: return static_respond(r, url);
  case ROUTE_HEALTH: return health(r);
  case ROUTE_METRICS: return metrics_page(r);
  case ROUTE_OPENAPI: return openapi_doc(r);
  case ROUTE_DEVICE: { /* the first device, and how many there are */
    json_t *o = device_json(r->srv->engine, 0);
    json_object_set_new(o, "device_count", json_integer(engine_device_count(r->srv->engine)));
    return respond_json(r, 200, o);
  }
  case ROUTE_DEVICES: {
    json_t *list = json_array();
    for (int d = 0; d < engine_device_count(r->srv->engine); d++)
      json_array_append_new(list, device_json(r->srv->engine, d));
    return respond_json(r, 200, json_pack("{s:o}", "devices", list));
  }
  case ROUTE_JOBS: return post ? post_jobs(r) : list_jobs(r);
  case ROUTE_JOB: return job_route(r, m.id_text);
  case ROUTE_JOB_EVENTS: {
    struct job *job = find_visible_job(r, m.id_text);
    if (!job) return respond_fail(r, 404, "job_not_found", "id", "no job '%.40s'", m.id_text);
    enum MHD_Result ret = sse_respond(r, job);
    job_unref(job);
    return ret;
  }
  case ROUTE_EVENTS: return sse_respond(r, NULL);
  case ROUTE_BUFFERS: return post ? buffers_post(r) : buffers_list(r);
  case ROUTE_BUFFER: return buffer_route(r, m.id_text);
  case ROUTE_SWEEPS: return post ? sweeps_post(r) : sweeps_index(r);
  case ROUTE_SWEEP: return sweep_route(r, m.id_text);
  case ROUTE_EXPERIMENT: return post_experiment(r, m.exp_type);
  }
  return respond_fail(r, 404, "not_found", NULL, "no route %.8s %.200s", r->method, url);
}
