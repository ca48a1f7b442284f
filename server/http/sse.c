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
  uint64_t job_id;       /* 0: every job */
  char client[64];       /* non-empty: only this client's jobs (a client without admin) */
  uint64_t next_seq;     /* events after this one are still to send */
  struct job_view first; /* the job's state when the stream opened */
  bool send_first, ended;
  double next_keepalive;
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

static void append_bus_event(struct sse_stream *s, const struct event *ev) {
  if (s->client[0] && strcmp(s->client, ev->client) != 0) return; /* not this client's */
  json_t *o = json_pack("{s:I,s:o,s:I,s:s,s:s}", "seq", (json_int_t)ev->seq, "time",
                        time_json(ev->time), "job", (json_int_t)ev->job_id, "type", ev->job_type,
                        "client", ev->client);
  if (ev->kind == EVENT_STATE) {
    json_object_set_new(o, "state", json_string(ev->state));
    if (ev->error_code[0]) json_object_set_new(o, "error", json_string(ev->error_code));
  } else {
    json_object_set_new(o, "run", json_integer(ev->run));
    json_object_set_new(o, "batch", json_integer(ev->batch));
    json_object_set_new(o, "sample_ms", json_real(ev->sample_ms));
  }
  append_event(s, ev->seq, ev->kind == EVENT_STATE ? "state" : "progress", o);
  if (s->job_id && ev->kind == EVENT_STATE && final_state(ev->state)) s->ended = true;
}

/* Fills the buffer with what is due: the opening state, new events, a keep-alive. */
static void fill(struct sse_stream *s) {
  s->len = s->off = 0;
  if (s->send_first) {
    s->send_first = false;
    const struct job_view *v = &s->first;
    json_t *o = json_pack("{s:I,s:s,s:s,s:s}", "job", (json_int_t)v->id, "type",
                          exp_type_name(v->spec.type), "client", v->client, "state",
                          job_state_name(v->state));
    if (v->error_code[0]) json_object_set_new(o, "error", json_string(v->error_code));
    append_event(s, 0, "state", o);
    if (job_state_final(v->state)) s->ended = true;
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

static void sse_free(void *cls) { free(cls); }

enum MHD_Result sse_respond(struct request *r, struct job *job) {
  struct sse_stream *s = calloc(1, sizeof *s);
  if (!s) return respond_fail(r, 503, "out_of_memory", NULL, "no memory for an event stream");
  struct engine *e = r->srv->engine;
  s->conn = r->conn;
  s->bus = engine_events(e);
  s->next_keepalive = engine_now_mono() + SSE_KEEPALIVE_S;
  if (job) {
    engine_job_snapshot(e, job, &s->first, &s->next_seq);
    s->job_id = s->first.id;
    s->send_first = true;
  } else {
    s->next_seq = events_last_seq(s->bus);
    if (!request_sees_all(r)) snprintf(s->client, sizeof s->client, "%s", r->client);
  }
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
  return request_queue(r, 200, resp, 0); /* a stream: its length is not known */
}
