/* A lost device (a sticky CUDA error; injected with --allow-fault-injection) fails
 * the jobs in flight with gpu_context_lost, turns /health to 503, and gpulabd exits
 * with status 3 for its supervisor to restart it; started again on the same --db,
 * the queue is intact and runs. Backend from the mode argument ("cpu" in CI, "cuda" with
 * the gpu label, skipped where CUDA is unavailable). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/http_client.h"
#include "tests/runner.h"
#include "tests/test_db.h"

#define EXIT_DEVICE_LOST 3
#define SMALL "\"m\":33,\"n\":47,\"variant\":\"naive\",\"warmup\":0,\"batches\":1,\"reps\":1"
/* Long on the CPU (seconds), long enough on a GPU too: many batches. */
#define SLOW \
  "{\"n\":1000000,\"radius\":64,\"variant\":\"naive\",\"warmup\":0,\"batches\":100,\"reps\":%s,\"isolation\":\"shared\"}"

static const char *backend = "cpu";
static char db[512]; /* an SQLite file, or with $GPULAB_TEST_DB a PostgreSQL database */

static void start(struct gpulabd *d) {
  const char *args[] = {
      "--backend", backend, "--streams", "2", "--db", db, "--grace", "0", "--allow-fault-injection",
      NULL};
  char log[1 << 14];
  int status;
  if (gpulabd_try_start(args, d, log, sizeof log, &status) == 0) return;
  if (strstr(log, "cuda backend unavailable")) {
    fprintf(stderr, "skip: %s\n", strstr(log, "cuda backend unavailable"));
    exit(CHECK_SKIP);
  }
  CHECK_FAIL_("gpulabd did not start (%d):\n%s", status, log);
}

static int setup(void) {
  if (test_mode) backend = test_mode;
  test_db_make("recovery", db, sizeof db);
  return 0;
}

static void teardown(void) { test_db_drop(db); }

/* What test_restart finds again: a job queued behind the lost device, and the fault. */
static long long queued, fault;

/* The fault injected: jobs in flight fail, /health 503, gpulabd exits with status 3. */
static void test_device_lost(void) {
  struct gpulabd d;
  start(&d);
  char body[512];
  snprintf(body, sizeof body, SLOW, strcmp(backend, "cpu") ? "200" : "1");
  long long slow = HTTP_POST_ID(&d, "/stencil?wait=0", body, 202);
  long long slow2 = HTTP_POST_ID(&d, "/stencil?wait=0", body, 202);
  job_wait_state(&d, slow, "running", 30);
  job_wait_state(&d, slow2, "running", 30);
  queued = HTTP_POST_ID(&d, "/transpose?wait=0", "{" SMALL "}", 202);
  fault = HTTP_POST_ID(&d, "/transpose?wait=0",
                       "{" SMALL ",\"fault\":\"device_lost\",\"priority\":10}", 202);
  /* Free a lane: the fault goes first (priority), the device is lost. */
  struct http_reply r;
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", slow2);
  http_request(&d, "DELETE", path, NULL, NULL, 0, &r);
  http_reply_free(&r);
  json_t *j = job_wait_final(&d, fault, 30);
  CHECK_STR_EQ(JSTR(j, "state"), "failed");
  CHECK_STR_EQ(JSTR(j, "error.code"), "gpu_context_lost");
  json_decref(j);
  http_get(&d, "/health", &r); /* within the 2 s gpulabd waits before it exits */
  CHECK_INT_EQ(r.status, 503);
  CHECK_STR_EQ(JSTR(r.json, "status"), "unhealthy");
  http_reply_free(&r);
  j = job_wait_final(&d, slow, 30); /* the job in flight on the lost device fails too */
  CHECK_STR_EQ(JSTR(j, "error.code"), "gpu_context_lost");
  json_decref(j);
  CHECK_INT_EQ(gpulabd_wait_exit(&d, 15), EXIT_DEVICE_LOST);
}

static void test_restart(void) {
  struct gpulabd d;
  json_t *j;
  char path[64];
  /* The supervisor's restart: the queue is intact and runs. */
  start(&d);
  HTTP_EXPECT(&d, "GET", "/health", 200, NULL, NULL);
  j = job_wait_final(&d, queued, 60);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK(JBOOL(j, "result.passed"));
  json_decref(j);
  snprintf(path, sizeof path, "/jobs/%lld", fault);
  j = http_get_json(&d, path);
  CHECK_STR_EQ(JSTR(j, "error.code"), "gpu_context_lost"); /* kept, as it ended */
  json_decref(j);
  gpulabd_stop(&d);
}

static const char *const modes[] = {"cpu", "cuda", NULL};
static const struct test_case cases[] = {
    TEST(test_device_lost),
    TEST_AFTER(test_restart, test_device_lost),
    TEST_END,
};
const struct test_suite test_suite = {
    .cases = cases, .modes = modes, .setup = setup, .teardown = teardown};
