/* Queueing and cancellation against a real gpulabd on the CPU backend with one stream
 * (B): canceling queued and running jobs, a full queue, 200 clients waiting at once on
 * two HTTP threads, and the clients still waiting at shutdown. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http_client.h"
#include "http_common.h"
#include "kernels/core/experiment.h"
#include "runner.h"

/* ---- queueing and cancellation (B: one stream) ---- */

/* A job that keeps B's only stream busy until canceled: the CPU backend cuts a
 * batch to ~100 ms, so 2 variants x 100 batches last ~20 s. */
static long long start_blocker(void) {
  struct http_reply r;
  http_post_json(&B, "/stencil?wait=0",
                 "{\"n\":100000,\"radius\":2,\"warmup\":0,\"batches\":100,"
                 "\"reps\":10000}",
                 &r);
  long long id = job_check_accepted(&r, "stencil");
  http_reply_free(&r);
  job_wait_state(&B, id, "running", 30);
  return id;
}

/* DELETE of a running job: 200 now, canceled at its next batch. */
static void cancel_running(long long id) {
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", id);
  struct http_reply r;
  http_request(&B, "DELETE", path, NULL, NULL, 0, &r);
  CHECK_STATUS(&r, 200);
  CHECK_INT_EQ(JINT(r.json, "id"), id);
  http_reply_free(&r);
  json_t *job = job_wait_final(&B, id, 10);
  CHECK_STR_EQ(JSTR(job, "state"), "canceled");
  CHECK_STR_EQ(JSTR(job, "error.code"), "canceled");
  CHECK(is_rfc3339_utc(JSTR(job, "started_at")));
  CHECK(is_rfc3339_utc(JSTR(job, "finished_at")));
  json_decref(job);
}

/* DELETE of a queued job: canceled at once, never started; a second DELETE is 409. */
static void cancel_queued(long long id) {
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", id);
  struct http_reply r;
  http_request(&B, "DELETE", path, NULL, NULL, 0, &r);
  CHECK_STATUS(&r, 200);
  CHECK_STR_EQ(JSTR(r.json, "state"), "canceled");
  CHECK_STR_EQ(JSTR(r.json, "error.code"), "canceled");
  CHECK(*JSTR(r.json, "error.message"));
  CHECK(json_is_null(json_at(r.json, "started_at")));
  CHECK(is_rfc3339_utc(JSTR(r.json, "finished_at")));
  CHECK(json_is_null(json_at(r.json, "run_ms")));
  CHECK(JNUM(r.json, "queue_ms") >= 0);
  CHECK(json_is_null(json_at(r.json, "result")));
  http_reply_free(&r);
  json_t *job = http_get_json(&B, path);
  CHECK_STR_EQ(JSTR(job, "state"), "canceled");
  json_decref(job);
  HTTP_EXPECT(&B, "DELETE", path, 409, "job_finished", "id");
}

/* A client on its own thread and connection. */
struct client {
  int port;
  const char *path, *body;
  unsigned flags;
  struct http_reply reply;
  pthread_t thread;
};

static void *client_main(void *arg) {
  struct client *c = arg;
  struct http_client h;
  http_client_open(&h, c->port);
  http_client_request(&h, "POST", c->path, "application/json", c->body, strlen(c->body), c->flags,
                      &c->reply);
  http_client_close(&h);
  return NULL;
}

static void client_start(struct client *c, int port, const char *path, const char *body,
                         unsigned flags) {
  *c = (struct client){.port = port, .path = path, .body = body, .flags = flags};
  CHECK(pthread_create(&c->thread, NULL, client_main, c) == 0);
}

/* Waits (30 s at most) until B's /health counts n queued jobs. */
static void wait_queued(int n) {
  for (int tries = 0; health_int(&B, "jobs.queued") != n; tries++) {
    if (tries == 3000) CHECK_FAIL_("never %d queued jobs", n);
    usleep(10000);
  }
}

static void test_cancel(void) {
  long long blocker = start_blocker();
  struct http_reply r;
  /* Queued behind it: 202, then DELETE cancels it before it runs. */
  http_post_json(&B, "/transpose?wait=0", SMALL_TRANSPOSE, &r);
  long long queued = job_check_accepted(&r, "transpose");
  CHECK_STR_EQ(JSTR(r.json, "state"), "queued");
  http_reply_free(&r);
  CHECK_INT_EQ(health_int(&B, "jobs.running"), 1);
  cancel_queued(queued);

  /* A client waiting on a queued job hears of its cancellation at once. */
  struct client waiter;
  client_start(&waiter, B.port, "/transpose", SMALL_TRANSPOSE, 0);
  wait_queued(1);
  json_t *q = list(&B, "/jobs?state=queued");
  CHECK_INT_EQ(json_array_size(json_at(q, "jobs")), 1);
  cancel_queued(JINT(q, "jobs[0].id"));
  json_decref(q);
  pthread_join(waiter.thread, NULL);
  CHECK_STATUS(&waiter.reply, 200);
  CHECK_STR_EQ(JSTR(waiter.reply.json, "state"), "canceled");
  http_reply_free(&waiter.reply);

  /* The defaults of jobs too slow for a CPU, accepted and canceled before they run. */
  http_post_json(&B, "/gemm?wait=0", "{}", &r);
  long long gemm = job_check_accepted(&r, "gemm");
  CHECK_INT_EQ(JINT(r.json, "params.m"), 1024);
  CHECK_INT_EQ(JINT(r.json, "params.n"), 1024);
  CHECK_INT_EQ(JINT(r.json, "params.k"), 1024);
  CHECK_INT_EQ(json_array_size(json_at(r.json, "params.variant")), N_GEMM);
  http_reply_free(&r);
  http_post_json(&B, "/jobs?wait=0", "{\"type\":\"pipeline\"}", &r);
  long long pipeline = job_check_accepted(&r, "pipeline");
  CHECK_INT_EQ(JINT(r.json, "params.chunk"), 1 << 20);
  CHECK_INT_EQ(JINT(r.json, "params.chunks"), 3);
  CHECK_INT_EQ(JINT(r.json, "params.terms"), 64);
  CHECK_INT_EQ(JINT(r.json, "params.streams[0]"), 1);
  CHECK_INT_EQ(JINT(r.json, "params.streams[1]"), 3);
  http_reply_free(&r);
  cancel_queued(gemm);
  cancel_queued(pipeline);
  json_t *canceled = list(&B, "/jobs?state=canceled");
  CHECK_INT_EQ(json_array_size(json_at(canceled, "jobs")), 4);
  json_decref(canceled);

  /* ?wait=0.3 on a job that cannot start yet: 202 after about 0.3 s. */
  http_post_json(&B, "/stencil?wait=0.3", "{\"n\":1000,\"radius\":2," FAST "}", &r);
  long long late = job_check_accepted(&r, "stencil");
  CHECK(r.total_s >= 0.25 && r.total_s < 5);
  http_reply_free(&r);
  cancel_running(blocker);
  json_t *job = job_wait_final(&B, late, 30);
  CHECK_JOB_DONE(job, "stencil", "cpu");
  CHECK(JNUM(job, "queue_ms") >= 250);
  json_decref(job);
}

/* Fills B's queue (N_CLIENTS are queued now) and expects 429 beyond MAX_QUEUED.
 * Returns the id of a job left queued. */
static long long test_queue_full(void) {
  long long submitted = health_int(&B, "jobs_submitted");
  struct http_reply r;
  long long first = 0, last = 0;
  for (int i = N_CLIENTS; i < MAX_QUEUED; i++) {
    http_post_json(&B, "/transpose?wait=0", SMALL_TRANSPOSE, &r);
    last = job_check_accepted(&r, "transpose");
    if (!first) first = last;
    http_reply_free(&r);
  }
  http_post_json(&B, "/transpose?wait=0", SMALL_TRANSPOSE, &r);
  CHECK_ERROR(&r, 429, "queue_full", NULL);
  CHECK(r.retry_after != NULL);
  http_reply_free(&r);
  http_post_json(&B, "/jobs", "{\"type\":\"gemm\",\"params\":{\"m\":2,\"n\":2,\"k\":2}}", &r);
  CHECK_ERROR(&r, 429, "queue_full", NULL);
  http_reply_free(&r);
  CHECK_INT_EQ(health_int(&B, "jobs_submitted"), submitted + (MAX_QUEUED - N_CLIENTS));
  cancel_queued(last); /* makes room again */
  http_post_json(&B, "/transpose?wait=0", SMALL_TRANSPOSE, &r);
  cancel_queued(job_check_accepted(&r, "transpose"));
  http_reply_free(&r);
  return first;
}

/* N_CLIENTS clients wait at once behind a blocker on two HTTP threads: all are
 * queued (so a waiting client holds no thread), /health still answers, and once
 * the blocker goes every one gets its finished job. */
static void test_concurrency(void) {
  long long blocker = start_blocker();
  static struct client clients[N_CLIENTS];
  for (int i = 0; i < N_CLIENTS; i++)
    client_start(&clients[i], B.port, i % 2 ? "/transpose" : "/jobs",
                 i % 2 ? SMALL_TRANSPOSE
                       : "{\"type\":\"stencil\",\"params\":{\"n\":1000,\"radius\":3," FAST "}}",
                 0);
  wait_queued(N_CLIENTS);
  struct http_reply r;
  http_get(&B, "/health", &r);
  CHECK_STATUS(&r, 200);
  CHECK(r.total_s < 1.0);
  http_reply_free(&r);
  long long extra = test_queue_full();
  cancel_running(blocker);
  for (int i = 0; i < N_CLIENTS; i++) {
    pthread_join(clients[i].thread, NULL);
    CHECK_STATUS(&clients[i].reply, 200);
    CHECK_JOB_DONE(clients[i].reply.json, i % 2 ? "transpose" : "stencil", "cpu");
    http_reply_free(&clients[i].reply);
  }
  json_t *job = job_wait_final(&B, extra, 30);
  CHECK_JOB_DONE(job, "transpose", "cpu");
  json_decref(job);
  CHECK_INT_EQ(health_int(&B, "jobs.queued"), 0);
  CHECK_INT_EQ(health_int(&B, "jobs.running"), 0);
}

/* SIGTERM while a job runs and a client waits on a queued one: the running job
 * gets --grace (1 s here) and is then stopped; the queued one stays queued for the
 * next start (the store keeps it); the waiting client is answered 202 with it, and
 * gpulabd exits 0 (checked by gpulabd_stop). */
static void test_shutdown(void) {
  start_blocker();
  struct client waiter;
  client_start(&waiter, B.port, "/transpose", SMALL_TRANSPOSE, HTTP_TRANSPORT_OK);
  wait_queued(1);
  gpulabd_stop(&B);
  pthread_join(waiter.thread, NULL);
  if (waiter.reply.status == 0)
    CHECK_FAIL_("a client waiting at shutdown got no reply: %s", waiter.reply.body);
  CHECK_STATUS(&waiter.reply, 202);
  CHECK_STR_EQ(JSTR(waiter.reply.json, "state"), "queued");
  http_reply_free(&waiter.reply);
}

static void stop(void) { gpulabd_stop(&B); }

static const struct test_case cases[] = {
    TEST(test_cancel),
    TEST(test_concurrency),
    TEST(test_shutdown), /* last: it stops B */
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = http_start_b, .teardown = stop};
