/* Nothing accepted is lost: jobs answered 201/202 are on disk first. A gpulabd
 * killed with -9 and started again on the same --db finds every job: finished ones
 * readable as they were, queued ones run again, running ones failed `interrupted`,
 * ones whose inputs lived in memory failed `interrupted` with the reason. SIGTERM
 * lets a running job finish within --grace and keeps the queued ones for the next
 * start. Old jobs are pruned with --keep-days. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/check.h"
#include "tests/http_client.h"

static char db[96];

#define SMALL "{\"m\":33,\"n\":47,\"variant\":\"naive\",\"warmup\":0,\"batches\":1,\"reps\":1}"
/* Keeps the one stream busy for seconds. */
#define SLOW "{\"n\":2000000,\"radius\":64,\"variant\":\"naive\",\"warmup\":0,\"batches\":40,\"reps\":1}"

static long long post(struct gpulabd *d, const char *path, const char *body, long status) {
  struct http_reply r;
  http_post_json(d, path, body, &r);
  CHECK_STATUS(&r, status);
  long long id = JINT(r.json, "id");
  http_reply_free(&r);
  return id;
}

static json_t *get_job(struct gpulabd *d, long long id) {
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", id);
  return http_get_json(d, path);
}

static void start(struct gpulabd *d, const char *grace) {
  const char *args[] = {"--backend", "cpu", "--streams", "1", "--db", db, "--grace", grace, NULL};
  gpulabd_start(args, d);
}

static void test_crash(void) {
  struct gpulabd d;
  start(&d, "0");
  long long done = post(&d, "/transpose", SMALL, 200);
  long long running = post(&d, "/stencil?wait=0", SLOW, 202);
  job_wait_state(&d, running, "running", 30);
  long long queued = post(&d, "/transpose?wait=0", SMALL, 202);
  char body[256];
  snprintf(body, sizeof body, "{\"type\":\"transpose\",\"params\":" SMALL ",\"depends_on\":[%lld]}", queued);
  long long child = post(&d, "/jobs?wait=0", body, 202);
  snprintf(body, sizeof body, "{\"x\":{\"job\":%lld},\"radius\":1,\"warmup\":0,\"batches\":1,\"reps\":1}", running);
  long long reads_memory = post(&d, "/stencil?wait=0", body, 202);
  json_t *before = get_job(&d, done);
  gpulabd_kill(&d);

  start(&d, "0");
  /* The finished job reads back as it was, result and all. */
  json_t *after = get_job(&d, done);
  CHECK(json_equal(json_at(before, "result"), json_at(after, "result")));
  CHECK_STR_EQ(JSTR(after, "state"), "done");
  json_decref(before);
  json_decref(after);
  /* The running one is failed, not run again; so is the one whose input was in memory. */
  json_t *j = get_job(&d, running);
  CHECK_STR_EQ(JSTR(j, "state"), "failed");
  CHECK_STR_EQ(JSTR(j, "error.code"), "interrupted");
  json_decref(j);
  j = job_wait_final(&d, reads_memory, 30);
  CHECK_STR_EQ(JSTR(j, "state"), "failed");
  CHECK_STR_EQ(JSTR(j, "error.code"), "interrupted");
  CHECK(strstr(JSTR(j, "error.message"), "input") != NULL);
  json_decref(j);
  /* The queued one and its child ran again, under their ids, and passed. */
  j = job_wait_final(&d, queued, 60);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK(JBOOL(j, "result.passed"));
  json_decref(j);
  j = job_wait_final(&d, child, 60);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  json_decref(j);
  /* New jobs get new ids; the listing holds all of them. */
  long long fresh = post(&d, "/transpose", SMALL, 200);
  CHECK(fresh > reads_memory);
  json_t *list = http_get_json(&d, "/jobs?limit=100");
  CHECK_INT_EQ(json_array_size(json_at(list, "jobs")), fresh);
  json_decref(list);
  gpulabd_stop(&d);
}

/* SIGTERM: the running job finishes within the grace; a queued one survives. */
static void test_sigterm(void) {
  struct gpulabd d;
  start(&d, "30");
  /* running for about half a second, so that the 10 ms polls below see it running */
  long long running = post(&d, "/transpose?wait=0",
                           "{\"m\":512,\"n\":512,\"variant\":\"naive\",\"warmup\":0,\"batches\":20,\"reps\":100}", 202);
  job_wait_state(&d, running, "running", 30);
  long long queued = post(&d, "/transpose?wait=0", SMALL, 202);
  gpulabd_stop(&d); /* exit status 0 checked there */
  start(&d, "30");
  json_t *j = get_job(&d, running);
  CHECK_STR_EQ(JSTR(j, "state"), "done"); /* it was let finish */
  json_decref(j);
  j = job_wait_final(&d, queued, 60);
  CHECK_STR_EQ(JSTR(j, "state"), "done"); /* and this one ran after the restart */
  json_decref(j);
  gpulabd_stop(&d);
}

/* Two gpulabd on one database: the second refuses to start. */
static void test_one_per_db(void) {
  struct gpulabd a, b;
  start(&a, "0");
  const char *args[] = {"--backend", "cpu", "--db", db, NULL};
  char log[8192];
  int status;
  CHECK_INT_EQ(gpulabd_try_start(args, &b, log, sizeof log, &status), -1);
  CHECK(strstr(log, "--db") != NULL);
  gpulabd_stop(&a);
}

int main(void) {
  snprintf(db, sizeof db, "/tmp/gpulab-durability-%d.db", (int)getpid());
  test_crash();
  test_sigterm();
  test_one_per_db();
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -f %s %s-wal %s-shm", db, db, db);
  (void)!system(cmd);
  printf("test_durability: ok\n");
  return 0;
}
