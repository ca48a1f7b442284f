/* HTTP tests of the job engine on the CPU backend: the fair queue and priorities,
 * exclusive and shared timing, and graph on the CPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs_common.h"
#include "runner.h"

/* ---- the fair queue ---- */

#define SMALL_JOB "{\"type\":\"transpose\",\"params\":{\"m\":33,\"n\":47," FAST2 "}%s}"

/* Reads ev until n jobs other than `skip` went running; fills their ids in order. */
static void running_order(struct sse_stream *ev, long long skip, long long *order, int n) {
  int seen = 0;
  while (seen < n) {
    struct sse_event e;
    if (sse_next(ev, 30, &e) != 1) CHECK_FAIL_("only %d of %d jobs went running", seen, n);
    if (strcmp(e.event, "state") == 0 && e.json && strcmp(JSTR(e.json, "state"), "running") == 0 &&
        JINT(e.json, "job") != skip)
      order[seen++] = JINT(e.json, "job");
    sse_event_free(&e);
  }
}

static void check_order(struct gpulabd *d, const long long *got, const long long *want, int n,
                        const char *what) {
  for (int i = 0; i < n; i++)
    if (got[i] != want[i]) {
      fprintf(stderr, "%s: started", what);
      for (int k = 0; k < n; k++) fprintf(stderr, " %lld", got[k]);
      fprintf(stderr, ", expected");
      for (int k = 0; k < n; k++) fprintf(stderr, " %lld", want[k]);
      CHECK_FAIL_("%s: order differs at %d", what, i);
    }
  /* started_at agrees with the order of the events. */
  char prev[40] = "";
  for (int i = 0; i < n; i++) {
    json_t *job = job_wait_final(d, got[i], 30);
    CHECK_JOB_DONE(job, "transpose", "cpu");
    CHECK(strcmp(JSTR(job, "started_at"), prev) >= 0);
    snprintf(prev, sizeof prev, "%s", JSTR(job, "started_at"));
    json_decref(job);
  }
}

/* Client A (127.0.0.2) floods the queue, client B (127.0.0.1) comes later: they
 * take turns. A's sixth queued job is refused, B's are not. */
static void test_fairness(void) {
  struct http_client ca, cblk;
  http_client_open_from(&ca, ONE.port, "127.0.0.2");
  http_client_open_from(&cblk, ONE.port, "127.0.0.3");
  long long blocker = blocker_start_on(&cblk);
  json_t *job = job_get(&ONE, blocker);
  CHECK_STR_EQ(JSTR(job, "client"), "127.0.0.3");
  json_decref(job);
  struct sse_stream ev;
  sse_open(&ev, ONE.port, "/events", NULL, 10);

  char body[256];
  snprintf(body, sizeof body, SMALL_JOB, "");
  long long a[MAX_QUEUED], b[2];
  for (int i = 0; i < MAX_QUEUED; i++) {
    job = submit_on(&ca, "queued", body);
    CHECK_STR_EQ(JSTR(job, "client"), "127.0.0.2");
    a[i] = JINT(job, "id");
    json_decref(job);
  }
  struct http_reply r;
  http_client_request(&ca, "POST", "/jobs?wait=0", "application/json", body, strlen(body), 0, &r);
  CHECK_ERROR(&r, 429, "queue_full", NULL);
  CHECK(r.retry_after != NULL && atoi(r.retry_after) >= 1);
  http_reply_free(&r);
  http_client_request(&ca, "POST", "/transpose", "application/json", "{}", 2, 0, &r);
  CHECK_ERROR(&r, 429, "queue_full", NULL);
  http_reply_free(&r);
  for (int i = 0; i < 2; i++) {
    job = submit_on(&ONE.http, "queued", body);
    CHECK_STR_EQ(JSTR(job, "client"), "127.0.0.1");
    b[i] = JINT(job, "id");
    json_decref(job);
  }
  CHECK_INT_EQ(health_jobs(&ONE, "queued"), MAX_QUEUED + 2);

  cancel_running(&ONE, blocker);
  long long got[MAX_QUEUED + 2];
  running_order(&ev, blocker, got, MAX_QUEUED + 2);
  long long want[] = {a[0], b[0], a[1], b[1], a[2], a[3], a[4]};
  check_order(&ONE, got, want, MAX_QUEUED + 2, "round robin");
  sse_close(&ev);
  http_client_close(&ca);
  http_client_close(&cblk);
}

/* Within one client, a higher priority goes first; equal ones in order. */
static void test_priority(void) {
  long long blocker = blocker_start();
  struct sse_stream ev;
  sse_open(&ev, ONE.port, "/events", NULL, 10);
  char body[256];
  snprintf(body, sizeof body, SMALL_JOB, "");
  long long low1 = submit(&ONE, "queued", "%s", body);
  long long low2 = submit(&ONE, "queued", "%s", body);
  snprintf(body, sizeof body, SMALL_JOB, ",\"priority\":-5");
  long long neg = submit(&ONE, "queued", "%s", body);
  snprintf(body, sizeof body, SMALL_JOB, ",\"priority\":10");
  json_t *job = submit_on(&ONE.http, "queued", body);
  long long high = JINT(job, "id");
  CHECK_INT_EQ(JINT(job, "priority"), 10);
  json_decref(job);
  cancel_running(&ONE, blocker);
  long long got[4], want[] = {high, low1, low2, neg};
  running_order(&ev, blocker, got, 4);
  check_order(&ONE, got, want, 4, "priority");
  sse_close(&ev);
}

/* ---- exclusive and shared timing ---- */

static int runs_contended(json_t *job, int *n_runs) {
  size_t i;
  json_t *run;
  int n = 0;
  *n_runs = 0;
  json_array_foreach(json_at(job, "result.runs"), i, run) {
    if (!json_is_true(json_object_get(run, "available"))) continue;
    (*n_runs)++;
    n += JBOOL(run, "contended");
  }
  return n;
}

/* Waits for the jobs; checks they passed with this isolation. Fills jobs (decref). */
static void wait_all(long long *ids, int n, const char *isolation, json_t **jobs) {
  for (int i = 0; i < n; i++) {
    jobs[i] = job_wait_final(&THREE, ids[i], 60);
    if (strcmp(JSTR(jobs[i], "state"), "done") != 0)
      CHECK_FAIL_("job %lld is %s", ids[i], JSTR(jobs[i], "state"));
    CHECK(JBOOL(jobs[i], "result.passed"));
    CHECK_STR_EQ(JSTR(jobs[i], "isolation"), isolation);
  }
}

#define SHARED_STENCIL                                                                      \
  "{\"type\":\"stencil\",\"params\":{\"n\":262144,\"radius\":8,\"warmup\":1,\"batches\":5," \
  "\"reps\":2},\"isolation\":\"%s\"}"

static void test_isolation(void) {
  /* Exclusive (the default): every timed window alone, so never contended. */
  long long ex[4];
  ex[0] = submit(&THREE, NULL,
                 "{\"type\":\"stencil\",\"params\":{\"n\":65536,\"radius\":8," FAST2 "}}");
  ex[1] = submit(&THREE, NULL, SHARED_STENCIL, "exclusive");
  ex[2] = submit(&THREE, NULL, "{\"type\":\"transpose\",\"params\":{\"m\":64,\"n\":64," FAST2 "}}");
  ex[3] = submit(&THREE, NULL,
                 "{\"type\":\"gemm\",\"params\":{\"m\":16,\"n\":16,\"k\":16," FAST2
                 "},"
                 "\"isolation\":\"exclusive\"}");
  json_t *jobs[4];
  wait_all(ex, 4, "exclusive", jobs);
  for (int i = 0; i < 4; i++) {
    int n;
    if (runs_contended(jobs[i], &n) != 0) CHECK_FAIL_("exclusive job %lld was contended", ex[i]);
    CHECK(n > 0);
    json_decref(jobs[i]);
  }

  /* Shared: three at once overlap and see each other. */
  long long sh[3];
  for (int i = 0; i < 3; i++) sh[i] = submit(&THREE, NULL, SHARED_STENCIL, "shared");
  wait_all(sh, 3, "shared", jobs);
  int contended = 0;
  const char *last_start = "", *first_end = NULL;
  for (int i = 0; i < 3; i++) {
    int n;
    contended += runs_contended(jobs[i], &n);
    const char *s = JSTR(jobs[i], "started_at"), *f = JSTR(jobs[i], "finished_at");
    if (strcmp(s, last_start) > 0) last_start = s;
    if (!first_end || strcmp(f, first_end) < 0) first_end = f;
    fprintf(stderr, "  shared job %lld: %s .. %s, %d of %d runs contended\n", sh[i], s, f,
            runs_contended(jobs[i], &n), n);
  }
  CHECK(contended > 0);
  if (strcmp(last_start, first_end) >= 0)
    CHECK_FAIL_("the shared jobs did not overlap: the last started %s, the first ended %s",
                last_start, first_end);
  for (int i = 0; i < 3; i++) json_decref(jobs[i]);

  /* An exclusive job among shared ones is still alone in its windows. */
  long long mixed[3];
  mixed[0] = submit(&THREE, NULL, SHARED_STENCIL, "shared");
  mixed[1] = submit(&THREE, NULL, SHARED_STENCIL, "exclusive");
  mixed[2] = submit(&THREE, NULL, SHARED_STENCIL, "shared");
  wait_all(mixed + 1, 1, "exclusive", jobs);
  int n;
  CHECK_INT_EQ(runs_contended(jobs[0], &n), 0);
  json_decref(jobs[0]);
  wait_all(mixed, 1, "shared", jobs);
  json_decref(jobs[0]);
  wait_all(mixed + 2, 1, "shared", jobs);
  json_decref(jobs[0]);
}

/* ---- graph on the CPU ---- */

static void check_graph_runs(json_t *job, bool graph) {
  CHECK(JBOOL(job, "params.graph") == graph);
  size_t i;
  json_t *run;
  json_array_foreach(json_at(job, "result.runs"), i, run) {
    const char *method = JSTR(run, "timing.method");
    bool says = strstr(method, "graph: not applicable on the CPU backend") != NULL;
    if (says != graph) CHECK_FAIL_("graph %d, method: %s", graph, method);
    CHECK(json_object_get(run, "launch") == NULL);
  }
}

static void test_graph(void) {
  json_t *job = job_post_done(&THREE, "cpu", "/transpose", "transpose",
                              "{\"m\":33,\"n\":47,\"graph\":true," FAST2 "}");
  check_graph_runs(job, true);
  json_decref(job);
  job = job_post_done(
      &THREE, "cpu", "/jobs", "stencil",
      "{\"type\":\"stencil\",\"params\":{\"n\":1000,\"radius\":2,\"graph\":true," FAST2 "}}");
  check_graph_runs(job, true);
  json_decref(job);
  job = job_post_done(&THREE, "cpu", "/transpose", "transpose", "{\"m\":5,\"n\":7," FAST2 "}");
  check_graph_runs(job, false);
  json_decref(job);
}

static const struct test_case cases[] = {
    TEST(test_fairness), TEST(test_priority), TEST(test_isolation), TEST(test_graph), TEST_END,
};
const struct test_suite test_suite = {
    .cases = cases, .setup = jobs_servers_start, .teardown = jobs_servers_stop};
