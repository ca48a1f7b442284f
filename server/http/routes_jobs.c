/* The job routes: POST /jobs (a job of any experiment), GET /jobs (newest first, from
 * the store when there is one), GET and DELETE /jobs/{id}, and the event streams of a
 * job and of every job (sse.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/params.h"
#include "server/engine/events.h"
#include "server/http/routes.h"
#include "server/http/sse.h"
#include "server/http/submit.h"

#define LIST_LIMIT_DEFAULT 50
#define LIST_LIMIT_MAX 1000

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
  if (job) r->job_id = id; /* the access log's "job" */
  return job;
}

/* A job older than memory (or of a previous run) as the store recorded it; NULL
 * when there is none the requester may see. */
static json_t *stored_job(struct request *r, const char *id_text) {
  uint64_t id;
  char *text = parse_id(id_text, &id) ? service_job_record(r->srv->opts.service, id) : NULL;
  json_t *j = text ? json_loads(text, 0, NULL) : NULL;
  free(text);
  const char *owner = json_string_value(json_object_get(j, "client"));
  if (j && !request_may_see(r, owner ? owner : "")) {
    json_decref(j);
    j = NULL;
  }
  if (j) r->job_id = id;
  return j;
}

/* DELETE of a job the store holds but memory does not (a fleet's other node's):
 * canceled in the store when no node holds it, else left to its node (durable_cancel):
 * 200 with the job as it is then, as a local cancel answers. */
static enum MHD_Result cancel_stored(struct request *r, const char *id_text, json_t *stored) {
  uint64_t id = (uint64_t)json_integer_value(json_object_get(stored, "id"));
  char *record = json_dumps(stored, JSON_COMPACT);
  json_t *canceled = NULL;
  int rc = record ? service_cancel_stored(r->srv->opts.service, id, record, &canceled) : -ENOMEM;
  free(record);
  if (rc == 0) {
    json_decref(stored);
    return respond_json(r, 200, canceled);
  }
  if (rc == 1) return respond_json(r, 200, stored);
  json_decref(stored);
  if (rc == -EALREADY)
    return respond_fail(r, 409, "job_finished", "id", "job %s has already finished", id_text);
  if (rc == -ENOENT) return respond_fail(r, 404, "job_not_found", "id", "no job '%.40s'", id_text);
  return respond_storage(r, rc);
}

/* GET or DELETE of a job the store holds but memory does not. */
static enum MHD_Result stored_job_route(struct request *r, const char *id_text) {
  json_t *stored = stored_job(r, id_text);
  if (!stored) return respond_fail(r, 404, "job_not_found", "id", "no job '%.40s'", id_text);
  const char *state = json_string_value(json_object_get(stored, "state"));
  bool finished = state && job_state_from_name(state) >= JOB_DONE;
  if (strcmp(r->method, "DELETE") == 0) {
    if (!finished) return cancel_stored(r, id_text, stored);
    json_decref(stored);
    return respond_fail(r, 409, "job_finished", "id", "job %s has already finished", id_text);
  }
  return respond_json(r, 200, stored);
}

enum MHD_Result route_job(struct request *r, const struct route_args *a) {
  struct engine *e = r->srv->engine;
  struct job *job = find_visible_job(r, a->id);
  if (!job) return stored_job_route(r, a->id);
  enum MHD_Result ret;
  if (strcmp(r->method, "DELETE") == 0 && engine_job_cancel(e, job) == -EALREADY) {
    ret = respond_fail(r, 409, "job_finished", "id", "job %s has already finished", a->id);
  } else {
    struct job_view v;
    job_get_view(e, job, &v);
    /* The state it is told is on disk first, as a submission's answer is (the store
     * writes a row nobody waits for a moment later): a job a client saw running is
     * failed `interrupted` after a crash, never run again. */
    service_sync(r->srv->opts.service, v.record_ticket);
    /* A finished job is the document its record holds (never changes again). */
    ret = job_state_final(v.state) && v.doc ? respond_json_text(r, 200, v.doc)
                                            : respond_json(r, 200, job_json(&v, true));
  }
  job_unref(job);
  return ret;
}

struct stored_page {
  json_t *list;
  bool with_result;
  struct engine *engine;
};

/* Appends a stored job to a listing, summarized like the in-memory ones. A job still
 * in memory is shown as it is now (the stored record may be a change behind:
 * durable.c), others (a fleet's other nodes' too) as their record. */
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

/* Up to n jobs of memory that pass f into list; -1 when out of memory. */
static int list_in_memory(struct request *r, const struct engine_list_filter *f, int n,
                          bool with_result, json_t *list) {
  struct job **jobs = malloc((size_t)n * sizeof *jobs);
  if (!jobs) return -1;
  int got = engine_jobs_list(r->srv->engine, f, jobs, n);
  for (int i = 0; i < got; i++) {
    struct job_view v;
    job_get_view(r->srv->engine, jobs[i], &v);
    json_array_append_new(list, job_json(&v, with_result));
    job_unref(jobs[i]);
  }
  free(jobs);
  return 0;
}

/* The listing's filters from the query: 0, or an answered 400 (*result). */
static bool list_filters(struct request *r, struct engine_list_filter *f, const char **state,
                         const char **type, const char **fields, enum MHD_Result *result) {
  *state = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "state");
  *type = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "type");
  if (*state && (f->state = job_state_from_name(*state)) < 0) {
    *result = respond_fail(r, 400, "unknown_state", "state",
                           "unknown state '%.40s'; valid: queued, waiting, running, done, failed, "
                           "canceled",
                           *state);
    return true;
  }
  char types[160];
  exp_type_list(types, sizeof types);
  if (*type && (f->type = exp_type_from_name(*type)) < 0) {
    *result = respond_fail(r, 400, "unknown_type", "type", "unknown type '%.40s'; valid: %s", *type,
                           types);
    return true;
  }
  /* ?fields=result: each job with its result (the dashboard's history, in one request). */
  *fields = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "fields");
  if (*fields && strcmp(*fields, "result") != 0) {
    *result = respond_fail(r, 400, "unknown_field", "fields",
                           "unknown fields '%.40s'; valid: result", *fields);
    return true;
  }
  return false;
}

static enum MHD_Result list_jobs(struct request *r) {
  struct api_error err;
  long long limit, cursor;
  if (query_int(r, "limit", 1, LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT, &limit, &err) ||
      query_int(r, "cursor", 1, INT64_MAX, 0, &cursor, &err))
    return respond_error(r, &err);
  struct engine_list_filter f = {.state = -1,
                                 .type = -1,
                                 .before_id = (uint64_t)cursor,
                                 .client = request_sees_all(r) ? NULL : r->client};
  const char *state, *type, *fields;
  enum MHD_Result refused;
  if (list_filters(r, &f, &state, &type, &fields, &refused)) return refused;
  /* One more than asked tells whether a next page exists. The store holds every
   * job (those of earlier runs too) in its current state; without one, memory. */
  json_t *list = json_array();
  struct stored_page page = {list, fields != NULL, r->srv->engine};
  if (service_jobs_page(r->srv->opts.service, (uint64_t)cursor, state, type,
                        request_sees_all(r) ? NULL : r->client, (int)limit + 1, add_stored,
                        &page) == -ENOENT &&
      list_in_memory(r, &f, (int)limit + 1, fields != NULL, list)) {
    json_decref(list);
    return respond_json(r, 500, NULL);
  }
  json_t *next = json_null();
  if ((int)json_array_size(list) > limit) {
    json_array_remove(list, json_array_size(list) - 1);
    next = json_incref(json_object_get(json_array_get(list, json_array_size(list) - 1), "id"));
  }
  return respond_json(r, 200, json_pack("{s:o,s:o}", "jobs", list, "next_cursor", next));
}

static enum MHD_Result post_jobs(struct request *r) {
  struct api_job_request req;
  struct api_error err;
  struct api_kernel_resolver kr = submit_kernel_resolver(r);
  if (api_job_request_parse_with(r->body ? r->body : "", r->body_len, &req, &kr, &err))
    return respond_error(r, &err);
  return submit_job(r, &req.spec, &req.opts, "params.");
}

enum MHD_Result route_jobs(struct request *r, const struct route_args *a) {
  return strcmp(r->method, "POST") == 0 ? post_jobs(r) : list_jobs(r);
}

enum MHD_Result route_job_events(struct request *r, const struct route_args *a) {
  struct job *job = find_visible_job(r, a->id);
  if (job) {
    enum MHD_Result ret = sse_respond(r, job);
    job_unref(job);
    return ret;
  }
  /* A job of a fleet's other node (or of an earlier run): its stored state first, then
   * what the fleet says of it, from the bus's events since before the store was read. */
  uint64_t after = events_last_seq(engine_events(r->srv->engine));
  json_t *stored = stored_job(r, a->id);
  if (!stored) return respond_fail(r, 404, "job_not_found", "id", "no job '%.40s'", a->id);
  enum MHD_Result ret = sse_respond_stored(
      r, (uint64_t)json_integer_value(json_object_get(stored, "id")), after, stored);
  json_decref(stored);
  return ret;
}

enum MHD_Result route_events(struct request *r, const struct route_args *a) {
  return sse_respond(r, NULL);
}
