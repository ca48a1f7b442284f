/* HTTP tests of the job engine on the CPU backend: Server-Sent Events (one job's, all
 * jobs', many listeners). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs_common.h"
#include "runner.h"

/* ---- Server-Sent Events ---- */

/* The next message of s (10 s at most), which must be a state event; returns its
 * state (a static copy). */
static const char *next_state(struct sse_stream *s, long long job, bool with_id) {
  static char state[16];
  struct sse_event e;
  CHECK_INT_EQ(sse_next(s, 10, &e), 1);
  if (strcmp(e.event, "state") != 0 || !e.json)
    CHECK_FAIL_("expected a state event, got %s: %s", e.event, e.data);
  CHECK(with_id ? e.id > 0 : e.id == -1);
  CHECK_INT_EQ(JINT(e.json, "job"), job);
  snprintf(state, sizeof state, "%s", JSTR(e.json, "state"));
  sse_event_free(&e);
  return state;
}

/* Reads a job's events after its opening: running, progress (runs x batches, in
 * the interleaved order: batch b over the runs, forwards when b is even, backwards
 * when odd), done, with increasing ids; then the stream ends. */
static void read_job_run(struct sse_stream *s, long long job, int runs, int batches) {
  long long last_id = 0;
  int progress = 0;
  bool running = false, done = false;
  while (!done) {
    struct sse_event e;
    if (sse_next(s, 30, &e) != 1) CHECK_FAIL_("job %lld: the stream stopped early", job);
    CHECK(e.json != NULL);
    CHECK(e.id > last_id);
    last_id = e.id;
    CHECK_INT_EQ(JINT(e.json, "seq"), e.id);
    CHECK_INT_EQ(JINT(e.json, "job"), job);
    CHECK(is_rfc3339_utc(JSTR(e.json, "time")));
    if (strcmp(e.event, "progress") == 0) {
      CHECK(running);
      int b = progress / runs, k = progress % runs;
      CHECK_INT_EQ(JINT(e.json, "batch"), b);
      CHECK_INT_EQ(JINT(e.json, "run"), b % 2 == 0 ? k : runs - 1 - k);
      CHECK(JNUM(e.json, "sample_ms") >= 0);
      progress++;
    } else {
      CHECK_STR_EQ(e.event, "state");
      const char *state = JSTR(e.json, "state");
      if (!running) {
        CHECK_STR_EQ(state, "running");
        running = true;
      } else {
        CHECK_STR_EQ(state, "done");
        done = true;
      }
    }
    sse_event_free(&e);
  }
  CHECK_INT_EQ(progress, runs * batches);
  struct sse_event e;
  CHECK_INT_EQ(sse_next(s, 10, &e), 0);
}

static void test_sse_job(void) {
  long long blocker = blocker_start();
  long long j = submit(&ONE, "queued",
                       "{\"type\":\"transpose\",\"params\":{\"m\":33,\"n\":47," FAST2 "}}");
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld/events", j);
  struct sse_stream s;
  sse_open(&s, ONE.port, path, NULL, 10);
  CHECK_INT_EQ(s.status, 200);
  CHECK(s.content_type && strncmp(s.content_type, "text/event-stream", 17) == 0);
  CHECK_STR_EQ(next_state(&s, j, false), "queued"); /* the opening state */
  cancel_running(&ONE, blocker);
  read_job_run(&s, j, 5, 2); /* transpose's variants: the lecture's 4 and best */
  sse_close(&s);

  /* A finished job: its state, then the end. */
  sse_open(&s, ONE.port, path, NULL, 10);
  CHECK_STR_EQ(next_state(&s, j, false), "done");
  struct sse_event e;
  CHECK_INT_EQ(sse_next(&s, 10, &e), 0);
  sse_close(&s);
  snprintf(path, sizeof path, "/jobs/%lld/events", blocker);
  sse_open(&s, ONE.port, path, NULL, 10);
  CHECK_INT_EQ(sse_next(&s, 10, &e), 1);
  CHECK_STR_EQ(JSTR(e.json, "state"), "canceled");
  CHECK_STR_EQ(JSTR(e.json, "error"), "canceled");
  sse_event_free(&e);
  CHECK_INT_EQ(sse_next(&s, 10, &e), 0);
  sse_close(&s);

  HTTP_EXPECT(&ONE, "GET", "/jobs/999999/events", 404, "job_not_found", "id");
  HTTP_EXPECT(&ONE, "DELETE", "/events", 405, "method_not_allowed", NULL);
}

/* GET /events: every job's events, interleaved, seq increasing; Last-Event-ID
 * replays what a listener missed. */
static void test_sse_all(void) {
  struct sse_stream s;
  sse_open(&s, THREE.port, "/events", NULL, 10);
  CHECK_INT_EQ(s.status, 200);
  long long ids[2];
  ids[0] = submit(&THREE, NULL,
                  "{\"type\":\"transpose\",\"params\":{\"m\":33,\"n\":47," FAST2 "}}");
  ids[1] = submit(&THREE, NULL,
                  "{\"type\":\"stencil\",\"params\":{\"n\":1000,\"radius\":2," FAST2 "}}");
  static const char *const types[] = {"transpose", "stencil"};
  int stage[2] = {0, 0}, progress[2] = {0, 0}, n_events = 0;
  long long last = 0, first_seq = 0, seqs[256];
  while (stage[0] < 3 || stage[1] < 3) {
    struct sse_event e;
    if (sse_next(&s, 30, &e) != 1) CHECK_FAIL_("%s", "GET /events stopped early");
    CHECK(e.json != NULL && e.id > last);
    last = e.id;
    if (!first_seq) first_seq = e.id;
    if (n_events < 256) seqs[n_events++] = e.id;
    int k = JINT(e.json, "job") == ids[0] ? 0 : JINT(e.json, "job") == ids[1] ? 1 : -1;
    CHECK(k >= 0);
    CHECK_STR_EQ(JSTR(e.json, "type"), types[k]);
    CHECK_STR_EQ(JSTR(e.json, "client"), "127.0.0.1");
    if (strcmp(e.event, "progress") == 0) {
      CHECK_INT_EQ(stage[k], 2);
      progress[k]++;
    } else {
      static const char *const order[] = {"queued", "running", "done"};
      CHECK(stage[k] < 3);
      CHECK_STR_EQ(JSTR(e.json, "state"), order[stage[k]]);
      stage[k]++;
    }
    sse_event_free(&e);
  }
  CHECK_INT_EQ(progress[0], 5 * 2); /* runs x batches: transpose has 5 variants */
  CHECK_INT_EQ(progress[1], 3 * 2); /* stencil 3 */
  sse_close(&s);

  /* Reconnecting after the first event: the rest again, the same ids. */
  char last_id[32];
  snprintf(last_id, sizeof last_id, "%lld", first_seq);
  sse_open(&s, THREE.port, "/events", last_id, 10);
  for (int i = 1; i < n_events; i++) {
    struct sse_event e;
    CHECK_INT_EQ(sse_next(&s, 10, &e), 1);
    CHECK_INT_EQ(e.id, seqs[i]);
    sse_event_free(&e);
  }
  sse_close(&s);
}

/* N_LISTENERS streams on a job while it runs, on two HTTP threads: none holds a
 * thread, /health answers at once, and every stream ends with the job. */
static void test_sse_listeners(void) {
  long long blocker = blocker_start();
  static struct sse_stream s[N_LISTENERS];
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld/events", blocker);
  for (int i = 0; i < N_LISTENERS; i++) {
    sse_open(&s[i], ONE.port, path, NULL, 10);
    CHECK_STR_EQ(next_state(&s[i], blocker, false), "running");
  }
  for (int i = 0; i < 3; i++) {
    struct http_reply r;
    http_get(&ONE, "/health", &r);
    CHECK_STATUS(&r, 200);
    if (r.total_s >= 1.0)
      CHECK_FAIL_("/health took %.3f s with %d listeners", r.total_s, N_LISTENERS);
    http_reply_free(&r);
  }
  check_state(&ONE, blocker, "running");
  cancel_running(&ONE, blocker);
  for (int i = 0; i < N_LISTENERS; i++) {
    struct sse_event e;
    for (;;) {
      CHECK_INT_EQ(sse_next(&s[i], 10, &e), 1);
      bool state = strcmp(e.event, "state") == 0;
      if (state) CHECK_STR_EQ(JSTR(e.json, "state"), "canceled");
      sse_event_free(&e);
      if (state) break;
    }
    CHECK_INT_EQ(sse_next(&s[i], 10, &e), 0);
    sse_close(&s[i]);
  }
}

static const struct test_case cases[] = {
    TEST(test_sse_job),
    TEST(test_sse_all),
    TEST(test_sse_listeners),
    TEST_END,
};
const struct test_suite test_suite = {
    .cases = cases, .setup = jobs_servers_start, .teardown = jobs_servers_stop};
