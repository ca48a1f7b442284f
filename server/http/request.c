/* The helpers every route uses (request.h): answers as JSON or RFC 9457 problems,
 * the store's and the engine's refusals, who asks and what they may see, rates,
 * ids and query integers. A leaf of server/http/: of it only the headers of the types
 * it builds on (options.h: the options; auth.h: a token's client). */
#include "server/http/request.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/encode.h"
#include "api/json_text.h"
#include "server/http/auth.h"

enum MHD_Result request_queue(struct request *r, unsigned status, struct MHD_Response *resp,
                              uint64_t bytes) {
  r->status = status;
  r->bytes = bytes;
  enum MHD_Result ret = MHD_queue_response(r->conn, status, resp);
  MHD_destroy_response(resp);
  return ret;
}

/* json (consumed) as the body, of this media type; NULL: a 500 out_of_memory. */
static enum MHD_Result respond_text(struct request *r, unsigned status, char *text,
                                    const char *media_type);

static enum MHD_Result respond_body(struct request *r, unsigned status, json_t *json,
                                    const char *media_type) {
  char *text = json_text(json, NULL); /* NULL json: NULL */
  json_decref(json);
  return respond_text(r, status, text, media_type);
}

/* text (malloc'd JSON, NUL-terminated, taken over) as the body; NULL: a 500
 * out_of_memory. */
static enum MHD_Result respond_text(struct request *r, unsigned status, char *text,
                                    const char *media_type) {
  struct MHD_Response *resp;
  size_t len = 0;
  if (text) {
    len = strlen(text);
    text[len++] = '\n'; /* replaces the NUL: friendlier in a terminal */
    resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
  } else {
    static const char oom[] =
        "{\"type\":\"/openapi.json#/components/x-problem-types/out_of_memory\",\"title\":\"Out of memory\","
        "\"status\":500,\"detail\":\"gpulabd ran out of memory answering this request\",\"instance\":\"/\","
        "\"code\":\"out_of_memory\",\"field\":null}\n";
    status = 500;
    media_type = "application/problem+json";
    len = sizeof oom - 1;
    resp = MHD_create_response_from_buffer(len, (void *)oom, MHD_RESPMEM_PERSISTENT);
  }
  if (!resp) return MHD_NO;
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, media_type);
  if (status == 405 && r->allow) MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
  if (r->redirect[0]) {
    MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, r->redirect);
  } else if (r->location[0]) { /* under the prefix the request came by */
    char location[sizeof r->location + 8];
    snprintf(location, sizeof location, "%s%s", r->api_prefix ? r->api_prefix : "", r->location);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, location);
  }
  if (r->www_authenticate)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, r->www_authenticate);
  if (r->retry_after_s > 0) {
    char seconds[16];
    snprintf(seconds, sizeof seconds, "%d", r->retry_after_s);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, seconds);
  }
  return request_queue(r, status, resp, len);
}

enum MHD_Result respond_json(struct request *r, unsigned status, json_t *json) {
  return respond_body(r, status, json, "application/json");
}

enum MHD_Result respond_json_text(struct request *r, unsigned status, const char *text) {
  return respond_text(r, status, text ? strdup(text) : NULL, "application/json");
}

enum MHD_Result respond_error(struct request *r, const struct api_error *err) {
  /* The message quotes the request (its path, an id, a query value): any bytes;
   * api_error_to_json makes detail and field valid UTF-8. */
  return respond_body(r, (unsigned)err->status, api_error_to_json(err, r->path),
                      "application/problem+json");
}

enum MHD_Result respond_problem(struct request *r, const struct api_error *err, json_t *extra) {
  json_t *body = api_error_to_json(err, r->path);
  if (body && extra) json_object_update_missing(body, extra); /* the problem's own members win */
  json_decref(extra);
  return respond_body(r, (unsigned)err->status, body, "application/problem+json");
}

enum MHD_Result respond_fail(struct request *r, int status, const char *code, const char *field,
                             const char *fmt, ...) {
  struct api_error err = {.status = status};
  snprintf(err.code, sizeof err.code, "%s", code);
  snprintf(err.field, sizeof err.field, "%s", field ? field : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err.message, sizeof err.message, fmt, ap);
  va_end(ap);
  return respond_error(r, &err);
}

enum MHD_Result respond_storage(struct request *r, int err) {
  struct store_status st;
  service_store_status(r->srv->opts.service, &st);
  bool space = err == -ENOSPC || err == -EFBIG || err == -EDQUOT;
  r->retry_after_s = space ? 30 : 5;
  return respond_fail(r, space ? 507 : 503, space ? "insufficient_storage" : "store_unavailable",
                      NULL,
                      "the job store (--db) cannot be written (%s%s%.150s): nothing was accepted; "
                      "see /health",
                      strerror(-err), st.message[0] ? ": " : "", st.message);
}

enum MHD_Result respond_buffer_gone(struct request *r, uint64_t id, const char *field) {
  return respond_fail(r, 410, "gone", field,
                      "buffer %" PRIu64
                      " was made before gpulabd last restarted: buffers live "
                      "in memory and did not survive it; upload it again",
                      id);
}

enum MHD_Result respond_elsewhere(struct request *r, const char *base, const char *what,
                                  uint64_t id) {
  snprintf(r->redirect, sizeof r->redirect, "%s%s%s", base, r->path, r->query);
  char code[32];
  snprintf(code, sizeof code, "%s_elsewhere", what);
  /* A job that reads it is sent where it is; a buffer's own route, where it lives. */
  bool job = strcmp(r->method, "POST") == 0;
  return respond_fail(r, 307, code, NULL,
                      "%s %" PRIu64
                      " is held by another node of the fleet, at %s: %s; repeat the "
                      "request at Location",
                      what, id, base,
                      job ? "a job that reads it runs there"
                          : "buffers live in the memory of the node that made them");
}

bool request_buffer_elsewhere(struct request *r, uint64_t id, const char *field,
                              enum MHD_Result *ret) {
  struct store_buffer_home home;
  int rc = service_buffer_home(r->srv->opts.service, id, &home);
  if (rc == -ENOENT || !request_may_see(r, home.client)) return false; /* ids do not leak */
  if (rc == 0)
    *ret = respond_elsewhere(r, home.url, "buffer", id);
  else
    *ret = respond_fail(r, 410, "buffer_lost", field,
                        "buffer %" PRIu64
                        " lived in the memory of node %s of the fleet, which is gone (its lease "
                        "ran out): the buffer was lost with it; upload it again",
                        id, home.node);
  return true;
}

/* A refused input that names a buffer or a job (ENOENT): 410 for a buffer of a
 * previous run, else 404 buffer_not_found or job_not_found. */
static enum MHD_Result respond_missing_input(struct request *r, const struct engine_error *e,
                                             const char *field) {
  if (e->missing_buffer && e->missing_buffer < engine_first_id(r->srv->engine, ENGINE_IDS_BUFFERS))
    return respond_buffer_gone(r, e->missing_buffer, field);
  return respond_fail(r, 404, e->missing_buffer ? "buffer_not_found" : "job_not_found", field, "%s",
                      e->message);
}

enum MHD_Result respond_refusal(struct request *r, const struct exp_spec *spec,
                                const struct engine_error *e, const char *params_prefix) {
  if (strcmp(e->field, "store") == 0) return respond_storage(r, e->code); /* id not recorded */
  char named[64];
  const char *field = e->field[0] ? e->field : NULL;
  for (int s = 0; field && s < exp_input_count(spec->type); s++)
    if (strcmp(field, exp_input_name(spec->type, s)) == 0) {
      snprintf(named, sizeof named, "%s%s", params_prefix, field);
      field = named;
    }
  switch (-e->code) {
  case ENOENT: return respond_missing_input(r, e, field);
  case EINVAL: {
    bool range = field && (!strcmp(field, "depends_on") || !strcmp(field, "device"));
    return respond_fail(r, 400, range ? "out_of_range" : "shape_mismatch", field, "%s", e->message);
  }
  case EPIPE: return respond_fail(r, 409, "output_not_kept", field, "%s", e->message);
  case EPROTOTYPE: return respond_fail(r, 400, "dtype_mismatch", field, "%s", e->message);
  case EFBIG: return respond_fail(r, 413, "job_too_large", NULL, "%s", e->message);
  case EOPNOTSUPP:
    snprintf(named, sizeof named, "%sprofile", params_prefix);
    return respond_fail(r, 503, "profiling_unavailable", named, "%s", e->message);
  case EAGAIN:
    r->retry_after_s = 1; /* queues drain at job speed; a second is a fair first guess */
    return respond_fail(r, 429, "queue_full", NULL, "%s", e->message);
  default: return respond_fail(r, 503, "unavailable", NULL, "cannot queue the job: %s", e->message);
  }
}

static void on_job_ready(void *arg) {
  struct request *r = arg;
  MHD_resume_connection(r->conn);
}

void request_wait_for_job(struct request *r, struct job *job, double wait_s,
                          request_resume_fn resume) {
  job_ref(job);
  r->job = job;
  r->suspended = true;
  r->resume = resume;
  MHD_suspend_connection(r->conn);
  /* Added after suspending: a job that ends meanwhile resumes at once. */
  engine_watch_add(r->srv->engine, job, &r->watch, engine_now_mono() + wait_s, on_job_ready, r);
}

bool request_store_refuses(struct request *r, enum MHD_Result *result) {
  int err = service_writable(r->srv->opts.service);
  if (err) *result = respond_storage(r, err);
  return err != 0;
}

const char *request_client(struct request *r, char *buf, size_t len) {
  if (r->client[0]) {
    snprintf(buf, len, "%s", r->client);
    return buf;
  }
  const union MHD_ConnectionInfo *info = MHD_get_connection_info(
      r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  buf[0] = '\0';
  if (!info || !info->client_addr) return buf;
  const struct sockaddr *sa = info->client_addr;
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, (socklen_t)len);
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, (socklen_t)len);
  return buf;
}

/* A token's client sees all when it is an admin; a Unix user on the socket when it
 * is root or gpulabd's own; anyone else only without --tokens (a TCP client, as
 * before the socket existed). */
bool request_sees_all(const struct request *r) {
  if (r->who) return r->who->admin;
  if (r->local) return r->local_admin;
  return !r->srv->opts.auth;
}

bool request_may_see(const struct request *r, const char *owner) {
  return request_sees_all(r) || strcmp(r->client, owner) == 0;
}

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

bool parse_id(const char *text, uint64_t *id) {
  if (!*text || *text == '0' || strlen(text) > 19) return false;
  for (const char *p = text; *p; p++)
    if (!isdigit((unsigned char)*p)) return false;
  *id = strtoull(text, NULL, 10);
  return true;
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
    return api_error_set(err, 400, "out_of_range", name, "%s must be between %lld and %lld", name,
                         lo, hi);
  if (end == text || *end || errno)
    return api_error_set(err, 400, "wrong_type", name, "%s must be an integer, got '%.40s'", name,
                         text);
  if (v < lo || v > hi)
    return api_error_set(err, 400, "out_of_range", name,
                         "%s must be between %lld and %lld, got %lld", name, lo, hi, v);
  *out = v;
  return 0;
}
