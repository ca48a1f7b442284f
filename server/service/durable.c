/* The engine's jobs kept in the store. */
#include "server/service/durable.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json_text.h"
#include "kernels/problem/problem_plan.h"
#include "server/engine/events.h"
#include "server/log.h"
#include "server/service/job_json.h"
#include "server/service/ukernels.h"

/* The request as stored, to run the job again after a restart: tagged, so a
 * database written by another build of gpulabd is not misread. */
struct stored_request {
  uint32_t magic, size;
  struct engine_job_request req;
};
#define STORED_REQUEST_MAGIC 0x67706c31u /* "gpl1" */

/* The record of a job not yet final, made by the store as it writes the row (a
 * copy of its job_view: without a result, nothing in it points elsewhere). */
static char *pending_record(const void *arg) { return job_text(arg, false, NULL); }

/* Every accepted job and change of state goes to the store (queued by the thread that
 * made the change once it released the engine's lock, each job's rows in the order of
 * its states and after its parents' first rows: engine.h). The record (JSON) is rewritten
 * on every change but `running` in a store of one gpulabd: a running job is in
 * memory, where listings read it (routes_jobs.c), and after a restart it is marked
 * from its state column alone; in a shared store the other nodes of a fleet read it
 * (fleet.h). A job's record before it is final is made when its row is written, so
 * never when a later row replaces it in the store's queue (a tiny job's first row,
 * its running one and its final one). A final state's record goes back to the engine
 * (out->doc): the same text answers the request that waited for the job, not built a
 * second time. */
void durable_record(void *arg, const struct job_view *v, const struct engine_job_request *req,
                    bool first, struct engine_recorded *out) {
  struct stored_request stored;
  if (first) stored = (struct stored_request){STORED_REQUEST_MAGIC, sizeof stored, *req};
  bool final = job_state_final(v->state);
  bool pending = !final && !v->result && (v->state != JOB_RUNNING || store_shared(arg));
  char *record = final ? job_text(v, true, NULL) : NULL;
  struct store_row row = {.id = v->id,
                          .client = v->client,
                          .type = exp_type_name(v->spec.type),
                          .state = job_state_name(v->state),
                          .created = v->created_at,
                          .finished = v->finished_at,
                          /* Inserted once; an update keeps it: no copy for later rows */
                          .request = first ? &stored : NULL,
                          .request_len = first ? sizeof stored : 0,
                          .record = record,
                          .make_record = pending ? pending_record : NULL,
                          .record_arg = v,
                          .record_arg_len = sizeof *v,
                          .create = first,
                          .parents = req->depends_on,
                          .n_parents = first ? req->n_depends : 0};
  if (store_put(arg, &row) == 0) out->ticket = store_ticket(arg);
  if (final)
    out->doc = record;
  else
    free(record);
}

uint64_t durable_buffer(void *arg, uint64_t id, const char *client, double created_at,
                        bool listed) {
  return store_buffer_put(arg, id, client, created_at, listed);
}

/* job_json(v, true) has this member and job_json(v, false) has not, for a job without a
 * result: "result" comes right before "error", the last member. Never inside a string
 * (its quotes would be escaped), and "error" holds no member of that name. */
static const char null_result[] = ",\"result\":null,\"error\":";

/* The record job_json(v, false) makes, from the answer's text (len bytes): the same less
 * "result":null (malloc'd; NULL when it is not there, or out of memory). */
static char *record_of_answer(const char *answer, size_t len) {
  const size_t skip = strlen("\"result\":null,"), n = sizeof null_result - 1;
  const char *at = NULL;
  for (const char *p = answer + len; !at && p >= answer + n; p--)
    if (memcmp(p - n, null_result, n) == 0) at = p - n + 1; /* after its comma */
  char *record = at ? malloc(len - skip + 1) : NULL;
  if (!record) return NULL;
  size_t head = (size_t)(at - answer);
  memcpy(record, answer, head);
  memcpy(record + head, at + skip, len - head - skip + 1);
  return record;
}

char *durable_accepted_text(struct store *s, const struct job_view *v, uint64_t ticket) {
  size_t len = 0;
  char *answer = job_text(v, true, &len);
  char *record = s && answer && !v->result ? record_of_answer(answer, len) : NULL;
  if (record) store_give_record(s, ticket, record);
  return answer;
}

int durable_cancel(struct store *s, uint64_t id, const char *record, json_t **canceled) {
  json_t *j = job_json_ended(id, record, JOB_CANCELED, "canceled", "canceled before it ran");
  char *text = json_dumps(j, JSON_COMPACT);
  int rc = text ? store_job_cancel(s, id, text) : -ENOMEM;
  free(text);
  if (canceled && rc == 0)
    *canceled = j;
  else
    json_decref(j);
  return rc;
}

static const char *sequence(enum engine_ids kind) {
  return kind == ENGINE_IDS_JOBS ? "jobs" : "buffers";
}

int durable_reserve_ids(void *arg, enum engine_ids kind, uint64_t *next, uint64_t upto) {
  int rc = store_ids_take(arg, sequence(kind), next, upto);
  return rc == -EFBIG || rc == -EDQUOT ? -ENOSPC : rc;
}

void durable_first_ids(struct store *s, uint64_t *job, uint64_t *buffer) {
  uint64_t stored = store_max_id(s), floor = store_ids_floor(s, "jobs");
  *job = (stored > floor ? stored : floor) + 1;
  *buffer = store_ids_floor(s, "buffers") + 1;
}

void durable_release_ids(struct engine *e, struct store *s) {
  for (int k = ENGINE_IDS_JOBS; k <= ENGINE_IDS_BUFFERS; k++)
    store_ids_reserve(s, sequence((enum engine_ids)k), engine_next_id(e, (enum engine_ids)k) - 1);
}

/* After a restart: queued and waiting jobs run again under their ids, with their
 * inputs if those were generated (buffers and other jobs' outputs did not survive).
 * Running ones are marked failed, `interrupted`: not run again, since they may be
 * what stopped gpulabd. */
struct recovery {
  struct engine *engine;
  struct store *store;
  struct durable_recovery *counts;
  bool claimed; /* a fleet's node claimed the job (fleet.h), no restart */
};

static void mark_failed(struct recovery *rc, uint64_t id, const char *code, const char *why) {
  char *record = store_record(rc->store, id);
  json_t *j = job_json_ended(id, record, JOB_FAILED, code, why);
  free(record);
  char *text = json_dumps(j, JSON_COMPACT);
  const char *client = json_string_value(json_object_get(j, "client"));
  const char *type = json_string_value(json_object_get(j, "type"));
  struct store_row row = {.id = id,
                          .client = client ? client : "",
                          .type = type ? type : "",
                          .state = "failed",
                          .finished = engine_now_unix(),
                          .record = text};
  store_put(rc->store, &row);
  free(text);
  json_decref(j);
  rc->counts->interrupted++;
}

static void mark_interrupted(struct recovery *rc, uint64_t id, const char *why) {
  mark_failed(rc, id, "interrupted", why);
}

/* A claimed job's parent that no engine here holds ended elsewhere (the claim took
 * the job only so: fleet.c): false when it ended done; else the job fails as a
 * child of a failed parent does on one node, why saying so. */
static bool parent_failed(struct recovery *rc, uint64_t parent, char *why, size_t len) {
  char *record = store_record(rc->store, parent);
  json_t *j = record ? json_loads(record, 0, NULL) : NULL;
  free(record);
  const char *state = json_string_value(json_object_get(j, "state"));
  const char *code = json_string_value(json_object_get(json_object_get(j, "error"), "code"));
  if (code && strcmp(code, "canceled") == 0) code = NULL; /* not "was canceled: canceled" */
  bool failed = true;
  if (!state)
    snprintf(why, len, "parent job %" PRIu64 " is not in the store", parent);
  else if (strcmp(state, "failed") == 0 || strcmp(state, "canceled") == 0)
    snprintf(why, len, "parent job %" PRIu64 " %s%s%s", parent,
             state[0] == 'c' ? "was canceled" : "failed", code ? ": " : "", code ? code : "");
  else if (strcmp(state, "done") != 0)
    snprintf(why, len, "parent job %" PRIu64 " is %s on another node", parent, state);
  else
    failed = false;
  json_decref(j);
  return failed;
}

/* The users' kernels a job names, from the store into the backends' table: a job
 * claimed from the fleet may name one stored after this node started (submit.c does
 * the same for a job accepted here). False when one is no longer stored. */
static bool load_kernels(struct store *s, const struct exp_spec *spec) {
  for (int i = 0; i < spec->n_variants; i++) {
    if (!exp_variant_is_user(spec->variants[i])) continue;
    struct store_kernel k;
    if (store_kernel_get(s, exp_user_kernel_id(spec->variants[i]), &k)) return false;
    ukernels_register(&k);
    store_kernel_clear(&k);
  }
  return true;
}

static void recover_job(void *arg, uint64_t id, const char *state, const void *blob, size_t len) {
  struct recovery *rc = arg;
  struct stored_request stored;
  if (strcmp(state, "running") == 0)
    return mark_interrupted(rc, id, "gpulabd stopped while it ran; it is not run again");
  if (len != sizeof stored ||
      (memcpy(&stored, blob, sizeof stored), stored.magic != STORED_REQUEST_MAGIC))
    return mark_interrupted(rc, id,
                            "gpulabd restarted, and this job was stored by another version");
  struct engine_job_request *req = &stored.req;
  if (exp_spec_reads_data(&req->spec))
    return mark_interrupted(rc, id,
                            "gpulabd restarted, and this job's input (a buffer or another "
                            "job's output) did not survive it");
  if (!load_kernels(rc->store, &req->spec))
    return mark_interrupted(rc, id, "a user's kernel this job runs is no longer stored");
  struct problem_plan plan; /* a problem's: its version read again, its names known here */
  char why[160];
  if (req->spec.type == EXP_PROBLEM && problem_plan_of(&req->spec, &plan, why, sizeof why))
    return mark_interrupted(rc, id, why);
  int kept = 0; /* parents that finished before the restart (or elsewhere) are done with */
  for (int i = 0; i < req->n_depends; i++) {
    struct job *p = engine_job_get(rc->engine, req->depends_on[i]);
    char why[160];
    if (p) req->depends_on[kept++] = req->depends_on[i];
    job_unref(p);
    if (!p && rc->claimed && parent_failed(rc, req->depends_on[i], why, sizeof why))
      return mark_failed(rc, id, "parent_failed", why);
  }
  req->n_depends = kept;
  req->restore_id = id;
  struct job *job;
  struct engine_error err;
  if (engine_submit(rc->engine, req, &job, &err)) return mark_interrupted(rc, id, err.message);
  job_unref(job);
  rc->counts->rerun++;
}

int durable_recover(struct engine *e, struct store *s, struct durable_recovery *out) {
  *out = (struct durable_recovery){0, 0};
  struct recovery rc = {.engine = e, .store = s, .counts = out};
  return store_unfinished(s, recover_job, &rc);
}

/* ---- a fleet's node (fleet.h) ---- */

/* A job queued this long here may be handed to the fleet: one just accepted may be
 * about to get a waiter (engine_jobs_release leaves those). */
#define RELEASE_AFTER_S 0.1

static int fleet_capacity(void *arg) {
  struct durable_fleet *df = arg;
  struct engine_counts c;
  engine_counts(df->engine, &c);
  /* A lane's worth queued besides: a lane finishing between two claims finds work. */
  return 2 * df->lanes - c.by_state[JOB_QUEUED] - c.by_state[JOB_RUNNING];
}

/* A claimed job runs as a recovered one: under its id, from its stored request. */
static void fleet_run_claimed(void *arg, uint64_t id, const void *request, size_t len) {
  struct durable_fleet *df = arg;
  struct recovery rc = {
      .engine = df->engine, .store = df->store, .counts = &df->claimed, .claimed = true};
  recover_job(&rc, id, "queued", request, len);
}

static char *fleet_interrupted_record(void *arg, uint64_t id, const char *record, const char *why) {
  (void)arg;
  json_t *j = job_json_ended(id, record, JOB_FAILED, "interrupted", why);
  char *text = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  return text;
}

/* Taken over: the jobs the take-over moved (queued again for any node, or failed)
 * are canceled here, with writes the store's fence turns into nothing; those accepted
 * since are still this node's and go on. */
static void fleet_taken_over(void *arg) {
  struct durable_fleet *df = arg;
  struct engine_list_filter all = {.state = -1, .type = -1};
  struct job *jobs[256];
  int n;
  store_flush(df->store); /* every job's first row in the database */
  do {
    n = engine_jobs_list(df->engine, &all, jobs, 256);
    for (int i = 0; i < n; i++) {
      struct job_view v;
      job_get_view(df->engine, jobs[i], &v);
      if (!job_state_final(v.state) && !store_job_held(df->store, v.id))
        engine_job_cancel(df->engine, jobs[i]);
      all.before_id = v.id;
      job_unref(jobs[i]);
    }
  } while (n == 256);
}

static void fleet_cancel(void *arg, uint64_t id) {
  struct durable_fleet *df = arg;
  struct job *job = engine_job_get(df->engine, id);
  if (job) engine_job_cancel(df->engine, job);
  job_unref(job);
}

/* Past the lanes' worth queued here, jobs that waited a lane's tick go to the queue. */
static int fleet_release(void *arg, uint64_t *ids, int max) {
  struct durable_fleet *df = arg;
  int n = engine_jobs_release(df->engine, df->lanes, RELEASE_AFTER_S, ids, max);
  if (n) store_flush(df->store); /* their first rows are in the database */
  return n;
}

/* Another node's job changed state: on this node's event bus, as its own jobs' are
 * (events.h), with the node's name. A payload not as store_pg.c's trigger makes it is
 * dropped. */
static void fleet_job_event(void *arg, const char *payload) {
  struct durable_fleet *df = arg;
  json_t *j = json_loads(payload, 0, NULL);
  const char *state = json_string_value(json_object_get(j, "state"));
  const char *node = json_string_value(json_object_get(j, "node"));
  const char *type = json_string_value(json_object_get(j, "type"));
  const char *client = json_string_value(json_object_get(j, "client"));
  const char *error = json_string_value(json_object_get(j, "error"));
  json_int_t id = json_integer_value(json_object_get(j, "job"));
  if (state && type && client && id > 0 && !(node && strcmp(node, df->node) == 0)) {
    struct event ev = {.job_id = (uint64_t)id, .kind = EVENT_STATE, .remote = true};
    snprintf(ev.job_type, sizeof ev.job_type, "%s", type);
    snprintf(ev.state, sizeof ev.state, "%s", state);
    snprintf(ev.client, sizeof ev.client, "%s", client);
    snprintf(ev.error_code, sizeof ev.error_code, "%s", error ? error : "");
    snprintf(ev.node, sizeof ev.node, "%s", node ? node : "");
    events_publish(engine_events(df->engine), &ev);
  }
  json_decref(j);
}

static bool fleet_wants_events(void *arg) {
  struct durable_fleet *df = arg;
  return events_listeners(engine_events(df->engine)) > 0;
}

static char *fleet_devices(void *arg) {
  struct durable_fleet *df = arg;
  json_t *list = devices_json(df->engine);
  char *text = json_text(list, NULL);
  json_decref(list);
  return text;
}

void durable_fleet_bind(struct durable_fleet *df, struct fleet_config *cfg) {
  snprintf(df->node, sizeof df->node, "%s", cfg->node);
  cfg->arg = df;
  cfg->job_event = fleet_job_event;
  cfg->devices = fleet_devices;
  cfg->wants_events = fleet_wants_events;
  cfg->capacity = fleet_capacity;
  cfg->run_claimed = fleet_run_claimed;
  cfg->interrupted_record = fleet_interrupted_record;
  cfg->taken_over = fleet_taken_over;
  cfg->cancel = fleet_cancel;
  cfg->release = fleet_release;
}

/* ---- the sweeps' table (sweeps.h), kept across restarts ---- */

static int reserve_sweep_ids(void *store, uint64_t *next, uint64_t upto) {
  return store_ids_take(store, "sweeps", next, upto);
}

int durable_sweep_read(uint64_t id, const char *client, double created, const char *record,
                       struct sweep_copy *out) {
  json_t *o = json_loads(record, 0, NULL), *jobs = json_object_get(o, "jobs"), *job;
  *out = (struct sweep_copy){.id = id, .created_at = created, .n_jobs = (int)json_array_size(jobs)};
  snprintf(out->client, sizeof out->client, "%s", client);
  out->desc = json_dumps(json_object_get(o, "desc"), JSON_COMPACT);
  out->jobs = calloc(json_array_size(jobs) + 1, sizeof *out->jobs);
  size_t i;
  json_array_foreach(jobs, i, job) if (out->jobs) out->jobs[i] = (uint64_t)json_integer_value(job);
  json_decref(o);
  if (out->desc && out->jobs) return 0;
  sweep_copy_free(out);
  return -ENOMEM;
}

/* store_sweeps' callback: a stored sweep back in the table. */
static void restore_sweep(void *arg, uint64_t id, const char *client, double created,
                          const char *record) {
  struct sweep_copy c;
  if (durable_sweep_read(id, client, created, record, &c) || sweeps_restore(arg, &c))
    log_warn("store: sweep %llu could not be read back", (unsigned long long)id);
  sweep_copy_free(&c);
}

int durable_sweeps_open(struct store *store, struct sweeps **out) {
  uint64_t first = 1;
  if (store) { /* past every stored sweep and every id a previous run reserved */
    uint64_t stored = store_max_sweep_id(store), floor = store_ids_floor(store, "sweeps");
    first = (stored > floor ? stored : floor) + 1;
  }
  int rc = sweeps_new(SWEEPS_KEPT_DEFAULT, first, store ? reserve_sweep_ids : NULL, store, out);
  if (rc == 0 && store) store_sweeps(store, SWEEPS_KEPT_DEFAULT, restore_sweep, *out);
  return rc;
}

void durable_sweeps_close(struct store *store, struct sweeps *sweeps) {
  /* At a clean stop the mark goes back to the last id handed out: no gap. */
  if (store && sweeps) store_ids_reserve(store, "sweeps", sweeps_next_id(sweeps) - 1);
  sweeps_free(sweeps);
}
