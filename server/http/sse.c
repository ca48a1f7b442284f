/* Server-Sent Events: job state changes and progress, streamed without a thread
 * per listener. A stream with nothing to send suspends its connection and waits
 * on the event bus (until an event or the next keep-alive), which resumes it. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/encode.h"
#include "api/json_text.h"
#include "server/http/sse.h"

#define SSE_KEEPALIVE_S 15.0
#define SSE_READ_BATCH 32

struct sse_stream {
  struct MHD_Connection *conn;
  struct events *bus;
  uint64_t job_id;   /* 0: every job */
  char client[64];   /* non-empty: only this client's jobs (a client without admin) */
  uint64_t next_seq; /* events after this one are still to send */
  json_t *first;     /* the job's state when the stream opened (its event's data) */
  char state[12];    /* a job's stream: the last state sent */
  bool send_first, ended;
  bool listener;                /* counted in events_listener_add: wants other nodes' events */
  const struct service *stored; /* a job held elsewhere: the service that reads its record */
  double next_keepalive, next_read;
  struct events_waiter waiter;
  atomic_bool parked; /* suspended, its waiter registered; cleared by resume() */
  char buf[SSE_READ_BATCH * 512];
  size_t len, off;
};

static void append(struct sse_stream *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void append(struct sse_stream *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(s->buf + s->len, sizeof s->buf - s->len, fmt, ap);
  va_end(ap);
  if (n > 0) s->len += (size_t)n < sizeof s->buf - s->len ? (size_t)n : sizeof s->buf - s->len - 1;
}

/* One SSE message: "id", "event" and one line of JSON data. */
static void append_event(struct sse_stream *s, uint64_t seq, const char *name, json_t *data) {
  char *text = json_text(data, NULL);
  json_decref(data);
  if (!text) return;
  if (seq)
    append(s, "id: %" PRIu64 "\nevent: %s\ndata: %s\n\n", seq, name, text);
  else
    append(s, "event: %s\ndata: %s\n\n", name, text);
  free(text);
}

static bool final_state(const char *state) {
  return !strcmp(state, "done") || !strcmp(state, "failed") || !strcmp(state, "canceled");
}

/* How far a job has gone: unstarted 0, running 1, ended 2. */
static int state_rank(const char *state) {
  return final_state(state) ? 2 : strcmp(state, "running") == 0 ? 1 : 0;
}

/* A job's stream says each state once and never goes back: another node's job's
 * change may reach the bus after the stream opened on the store's newer view. */
static bool already_said(struct sse_stream *s, const char *state) {
  if (!s->job_id || !s->state[0]) return false;
  return strcmp(state, s->state) == 0 || state_rank(state) < state_rank(s->state);
}

static void append_bus_event(struct sse_stream *s, const struct event *ev) {
  if (s->client[0] && strcmp(s->client, ev->client) != 0) return; /* not this client's */
  if (ev->kind == EVENT_STATE && already_said(s, ev->state)) return;
  json_t *o = json_pack("{s:I,s:o,s:I,s:s,s:s}", "seq", (json_int_t)ev->seq, "time",
                        time_json(ev->time), "job", (json_int_t)ev->job_id, "type", ev->job_type,
                        "client", ev->client);
  if (ev->kind == EVENT_STATE) {
    json_object_set_new(o, "state", json_string(ev->state));
    if (ev->error_code[0]) json_object_set_new(o, "error", json_string(ev->error_code));
    snprintf(s->state, sizeof s->state, "%s", ev->state);
  } else {
    json_object_set_new(o, "run", json_integer(ev->run));
    json_object_set_new(o, "batch", json_integer(ev->batch));
    json_object_set_new(o, "sample_ms", json_real(ev->sample_ms));
  }
  if (ev->remote) json_object_set_new(o, "node", ev->node[0] ? json_string(ev->node) : json_null());
  append_event(s, ev->seq, ev->kind == EVENT_STATE ? "state" : "progress", o);
  if (s->job_id && ev->kind == EVENT_STATE && final_state(ev->state)) s->ended = true;
}

/* The opening state event's data. */
static json_t *first_state(uint64_t id, const char *type, const char *client, const char *state,
                           const char *error_code) {
  json_t *o = json_pack("{s:I,s:s,s:s,s:s}", "job", (json_int_t)id, "type", type, "client", client,
                        "state", state);
  if (o && error_code && error_code[0]) json_object_set_new(o, "error", json_string(error_code));
  return o;
}

/* The same from a job's stored record (JSON), for a job held elsewhere. */
static json_t *record_state(uint64_t id, const json_t *record) {
  const char *type = json_string_value(json_object_get(record, "type"));
  const char *client = json_string_value(json_object_get(record, "client"));
  const char *state = json_string_value(json_object_get(record, "state"));
  const char *error = json_string_value(json_object_get(json_object_get(record, "error"), "code"));
  return first_state(id, type ? type : "", client ? client : "", state ? state : "", error);
}

/* A job held elsewhere, as the store has it now, when it moved on from what was said:
 * what the fleet's events missed (the node listened late, or its connection was lost
 * meanwhile) is said within a second. */
static void append_stored_change(struct sse_stream *s, double now) {
  s->next_read = now + 1.0;
  char *text = service_job_record(s->stored, s->job_id);
  json_t *record = text ? json_loads(text, 0, NULL) : NULL;
  free(text);
  const char *state = json_string_value(json_object_get(record, "state"));
  if (state && !already_said(s, state)) {
    json_t *o = record_state(s->job_id, record);
    if (o && json_is_string(json_object_get(record, "node")))
      json_object_set(o, "node", json_object_get(record, "node"));
    snprintf(s->state, sizeof s->state, "%s", state);
    if (final_state(state)) s->ended = true;
    if (o) append_event(s, 0, "state", o);
  }
  json_decref(record);
}

/* Fills the buffer with what is due: the opening state, new events, a keep-alive. */
static void fill(struct sse_stream *s) {
  s->len = s->off = 0;
  if (s->send_first) {
    s->send_first = false;
    const char *state = json_string_value(json_object_get(s->first, "state"));
    snprintf(s->state, sizeof s->state, "%s", state ? state : "");
    if (final_state(s->state)) s->ended = true;
    append_event(s, 0, "state", s->first);
    s->first = NULL;
    return;
  }
  struct event evs[SSE_READ_BATCH];
  bool lost;
  uint64_t next;
  int n = events_read(s->bus, s->next_seq, s->job_id, evs, SSE_READ_BATCH, &next, &lost);
  if (lost) append(s, ": some events were dropped (the listener fell behind)\n\n");
  for (int i = 0; i < n && !s->ended; i++) append_bus_event(s, &evs[i]);
  s->next_seq = next;
  double now = engine_now_mono();
  if (s->len == 0 && s->stored && now >= s->next_read) append_stored_change(s, now);
  if (s->len == 0 && now >= s->next_keepalive) append(s, ": keep-alive\n\n");
  if (s->len > 0) s->next_keepalive = now + SSE_KEEPALIVE_S;
  if (s->len == 0 && events_closed(s->bus)) s->ended = true; /* gpulabd is stopping */
}

static void resume(void *arg) {
  struct sse_stream *s = arg;
  atomic_store(&s->parked, false);
  MHD_resume_connection(s->conn);
}

static ssize_t sse_read(void *cls, uint64_t pos, char *out, size_t max) {
  struct sse_stream *s = cls;
  /* Parked: libmicrohttpd may call again before the suspension takes hold; the
   * waiter is still registered and will resume us. Doing anything now would
   * register it twice or resume a connection that is not suspended. */
  if (atomic_load(&s->parked)) return 0;
  if (s->off == s->len && !s->ended) fill(s);
  if (s->off < s->len) {
    size_t n = s->len - s->off < max ? s->len - s->off : max;
    memcpy(out, s->buf + s->off, n);
    s->off += n;
    return (ssize_t)n;
  }
  if (s->ended) return MHD_CONTENT_READER_END_OF_STREAM;
  /* Nothing to send: park the connection until an event or the next keep-alive. */
  atomic_store(&s->parked, true);
  MHD_suspend_connection(s->conn);
  /* At least once a second, so that a wake-up lost on the way costs a second, not
   * the stream (CI saw 1 of 20 streams never end; the cause is not pinned down). */
  double wake = engine_now_mono() + 1.0;
  events_wait(s->bus, &s->waiter, s->next_seq, s->job_id,
              wake < s->next_keepalive ? wake : s->next_keepalive, resume, s);
  return 0;
}

static void sse_free(void *cls) {
  struct sse_stream *s = cls;
  if (s->listener) events_listener_remove(s->bus);
  json_decref(s->first);
  free(s);
}

/* A stream that starts with the job's state (first, taken) when job_id is not 0,
 * its events after seq after; every job's r may see after seq after when 0. */
static enum MHD_Result respond_stream(struct request *r, uint64_t job_id, json_t *first,
                                      uint64_t after, const struct service *stored) {
  struct sse_stream *s = calloc(1, sizeof *s);
  if (!s || (job_id && !first)) {
    free(s);
    json_decref(first);
    return respond_fail(r, 503, "out_of_memory", NULL, "no memory for an event stream");
  }
  s->conn = r->conn;
  s->bus = engine_events(r->srv->engine);
  s->next_keepalive = engine_now_mono() + SSE_KEEPALIVE_S;
  s->next_seq = after;
  s->job_id = job_id;
  s->first = first;
  s->send_first = job_id != 0;
  s->stored = stored;
  s->next_read = engine_now_mono() + 1.0;
  if (!job_id && !request_sees_all(r)) snprintf(s->client, sizeof s->client, "%s", r->client);
  /* A reconnecting EventSource says where it stopped. */
  const char *last = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Last-Event-ID");
  uint64_t last_id;
  if (last && parse_id(last, &last_id) && last_id <= s->next_seq) {
    s->next_seq = last_id;
    s->send_first = false;
  }
  struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, sizeof s->buf,
                                                                sse_read, s, sse_free);
  if (!resp) {
    free(s);
    return MHD_NO;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
  s->listener = !job_id || stored; /* other nodes' events are for these only */
  if (s->listener) events_listener_add(s->bus);
  return request_queue(r, 200, resp, 0); /* a stream: its length is not known */
}

enum MHD_Result sse_respond(struct request *r, struct job *job) {
  struct engine *e = r->srv->engine;
  if (!job) return respond_stream(r, 0, NULL, events_last_seq(engine_events(e)), NULL);
  struct job_view v;
  uint64_t after;
  engine_job_snapshot(e, job, &v, &after);
  return respond_stream(r, v.id,
                        first_state(v.id, exp_type_name(v.spec.type), v.client,
                                    job_state_name(v.state), v.error_code),
                        after, NULL);
}

enum MHD_Result sse_respond_stored(struct request *r, uint64_t id, uint64_t after,
                                   const json_t *record) {
  return respond_stream(r, id, record_state(id, record), after, r->srv->opts.service);
}
