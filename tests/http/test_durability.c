/* Nothing accepted is lost: jobs answered 201/202 are on disk first. A gpulabd
 * killed with -9 and started again on the same --db finds every job: finished ones
 * readable as they were, queued ones run again, running ones failed `interrupted`,
 * ones whose inputs lived in memory failed `interrupted` with the reason; so under
 * both --durability modes (group commits: many answered jobs at once, too). What
 * --durability full changes is the database's PRAGMA synchronous (FULL: an fsync
 * per commit), which /health and /metrics report as the database says it. SIGTERM
 * lets a running job finish within --grace and keeps the queued ones for the next
 * start; one still running past --grace ends `interrupted`. The same on PostgreSQL
 * (ctest's test_durability_pg), but for one gpulabd per database, SQLite's alone. */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/http_client.h"
#include "tests/runner.h"
#include "tests/test_db.h"

static char db[512]; /* an SQLite file, or with $GPULAB_TEST_DB a PostgreSQL database */
static const char *durability = "normal"; /* --durability of every start() */

#define SMALL "{\"m\":33,\"n\":47,\"variant\":\"naive\",\"warmup\":0,\"batches\":1,\"reps\":1}"
/* Keeps the one stream busy for seconds. */
#define SLOW \
  "{\"n\":2000000,\"radius\":64,\"variant\":\"naive\",\"warmup\":0,\"batches\":40,\"reps\":1}"

static json_t *get_job(struct gpulabd *d, long long id) {
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", id);
  return http_get_json(d, path);
}

static void start(struct gpulabd *d, const char *grace) {
  const char *args[] = {"--backend", "cpu", "--streams",    "1",        "--db", db,
                        "--grace",   grace, "--durability", durability, NULL};
  gpulabd_start(args, d);
}

static void remove_db(void) { test_db_reset(db); }

static void test_crash(void) {
  struct gpulabd d;
  start(&d, "0");
  long long done = HTTP_POST_ID(&d, "/transpose", SMALL, 200);
  long long running = HTTP_POST_ID(&d, "/stencil?wait=0", SLOW, 202);
  job_wait_state(&d, running, "running", 30);
  long long queued = HTTP_POST_ID(&d, "/transpose?wait=0", SMALL, 202);
  char body[256];
  snprintf(body, sizeof body, "{\"type\":\"transpose\",\"params\":" SMALL ",\"depends_on\":[%lld]}",
           queued);
  long long child = HTTP_POST_ID(&d, "/jobs?wait=0", body, 202);
  snprintf(body, sizeof body,
           "{\"x\":{\"job\":%lld},\"radius\":1,\"warmup\":0,\"batches\":1,\"reps\":1}", running);
  long long reads_memory = HTTP_POST_ID(&d, "/stencil?wait=0", body, 202);
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
  long long accepted[] = {done, running, queued, child, reads_memory};
  int lost = 0;
  for (int i = 0; i < 5; i++) {
    char path[64];
    struct http_reply r;
    snprintf(path, sizeof path, "/jobs/%lld", accepted[i]);
    http_get(&d, path, &r);
    lost += r.status != 200;
    http_reply_free(&r);
  }
  printf("crash (--durability %s): %d jobs accepted before kill -9, %d lost\n", durability, 5,
         lost);
  CHECK_INT_EQ(lost, 0);
  /* New jobs get new ids, past every id the crashed run may have handed out (it
   * reserved them ahead); the listing holds all six jobs. */
  long long fresh = HTTP_POST_ID(&d, "/transpose", SMALL, 200);
  CHECK(fresh > reads_memory);
  json_t *list = http_get_json(&d, "/jobs?limit=100");
  CHECK_INT_EQ(json_array_size(json_at(list, "jobs")), 6);
  json_decref(list);
  gpulabd_stop(&d);
}

/* Many jobs answered in a burst, waited for and not (their rows share commits), then
 * kill -9 at once: every one answered is there after the restart, the finished ones
 * as they were answered (the same document), the others run again. */
#define BURST 60
static void test_crash_burst(void) {
  struct gpulabd d;
  start(&d, "0");
  long long ids[BURST];
  json_t *answered[BURST] = {0};
  for (int i = 0; i < BURST; i++) {
    struct http_reply r;
    http_post_json(&d, i % 2 ? "/transpose?wait=0" : "/transpose", SMALL, &r);
    CHECK(r.status == 200 || r.status == 202);
    ids[i] = JINT(r.json, "id");
    if (r.status == 200) answered[i] = json_incref(r.json);
    http_reply_free(&r);
  }
  /* Under NORMAL on SQLite the rows those answers waited for went to the accept
   * journal (most not yet committed at the kill: the restart applies them); FULL
   * and PostgreSQL keep none. */
  long long journaled = http_metric(&d, "gpulab_store_rows_journaled_total");
  if (strcmp(durability, "normal") == 0 && !test_db_is_pg(db))
    CHECK(journaled >= BURST / 2);
  else
    CHECK_INT_EQ(journaled, 0);
  gpulabd_kill(&d);
  start(&d, "0");
  int lost = 0, same = 0, finished = 0, interrupted = 0;
  for (int i = 0; i < BURST; i++) {
    json_t *j = job_wait_final(&d, ids[i], 60);
    lost += j == NULL;
    if (j && answered[i]) {
      finished++;
      same += json_equal(j, answered[i]);
    }
    /* Done, or (the one the single stream ran at the kill) failed `interrupted`. */
    if (j && strcmp(JSTR(j, "state"), "done") != 0) {
      CHECK(!answered[i]);
      CHECK_STR_EQ(JSTR(j, "error.code"), "interrupted");
      interrupted++;
    }
    json_decref(j);
    json_decref(answered[i]);
  }
  printf(
      "crash burst (--durability %s): %d jobs answered (%lld rows journaled), %d lost, %d of %d "
      "finished ones as answered, %d interrupted\n",
      durability, BURST, journaled, lost, same, finished, interrupted);
  CHECK_INT_EQ(lost, 0);
  CHECK(finished >= BURST / 2);
  CHECK_INT_EQ(same, finished);
  CHECK(interrupted <= 1);
  gpulabd_stop(&d);
}

/* What --durability says is what the database does: PRAGMA synchronous read back
 * (FULL: an fsync per commit), in /health and /metrics; it holds for the process
 * (a restart without the flag is NORMAL again); a wrong value is refused. */
static void expect_durability(struct gpulabd *d, const char *mode) {
  json_t *h = http_get_json(d, "/health");
  CHECK_STR_EQ(JSTR(h, "store.durability"), mode);
  json_decref(h);
  struct http_reply r;
  http_get(d, "/metrics", &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK(strstr(r.body, strcmp(mode, "full") == 0 ? "\ngpulab_store_fsync_per_commit 1\n"
                                                 : "\ngpulab_store_fsync_per_commit 0\n") != NULL);
  http_reply_free(&r);
}

static void test_durability_modes(void) {
  struct gpulabd d;
  durability = "full";
  start(&d, "0");
  expect_durability(&d, "full");
  HTTP_POST_ID(&d, "/transpose", SMALL, 200);
  gpulabd_stop(&d);
  durability = "normal";
  start(&d, "0");
  expect_durability(&d, "normal");
  gpulabd_stop(&d);
  const char *args[] = {"--backend", "cpu", "--db", db, "--durability", "sometimes", NULL};
  char log[8192];
  int status;
  CHECK_INT_EQ(gpulabd_try_start(args, &d, log, sizeof log, &status), -1);
  CHECK_INT_EQ(status, 2);
  CHECK(strstr(log, "--durability must be normal or full") != NULL);
  /* --db none: no store, nothing to report. */
  const char *none[] = {"--backend", "cpu", "--db", "none", NULL};
  gpulabd_start(none, &d);
  json_t *h = http_get_json(&d, "/health");
  CHECK(json_is_null(json_at(h, "store")));
  json_decref(h);
  gpulabd_stop(&d);
}

/* SIGTERM: the running job finishes within the grace; a queued one survives. */
static void test_sigterm(void) {
  struct gpulabd d;
  start(&d, "30");
  /* running for about half a second, so that the 10 ms polls below see it running */
  long long running = HTTP_POST_ID(
      &d, "/transpose?wait=0",
      "{\"m\":512,\"n\":512,\"variant\":\"naive\",\"warmup\":0,\"batches\":20,\"reps\":100}", 202);
  job_wait_state(&d, running, "running", 30);
  long long queued = HTTP_POST_ID(&d, "/transpose?wait=0", SMALL, 202);
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

/* Sweeps survive a crash under their ids (their rows read from the store once
 * their jobs are no longer in memory), and a new one never takes an old id; a
 * buffer, which lives in memory, answers 410 gone after the restart, as an id and
 * as a job's input, and new buffers get new ids. */
static void test_sweeps_and_buffers(void) {
  struct gpulabd d;
  start(&d, "0");
  struct http_reply r;
  http_post_json(&d, "/sweeps",
                 "{\"type\":\"transpose\",\"params\":{\"n\":16,\"warmup\":0,\"batches\":1,"
                 "\"reps\":1},\"axes\":{\"m\":[8,16],\"variant\":[\"naive\",\"padded33\"]}}",
                 &r);
  CHECK_STATUS(&r, 200);
  long long sweep = JINT(r.json, "id");
  json_t *rows = json_incref(json_at(r.json, "rows"));
  http_reply_free(&r);
  float data[6] = {1, 2, 3, 4, 5, 6};
  http_request(&d, "POST", "/buffers?shape=2,3", "application/octet-stream", (const char *)data,
               sizeof data, &r);
  CHECK_STATUS(&r, 201);
  long long buffer = JINT(r.json, "id");
  http_reply_free(&r);
  gpulabd_kill(&d);

  start(&d, "0");
  char path[64];
  snprintf(path, sizeof path, "/sweeps/%lld", sweep);
  json_t *again = http_get_json(&d, path);
  CHECK_STR_EQ(JSTR(again, "state"), "done");
  CHECK_INT_EQ(JINT(again, "axes.m[1]"), 16);
  CHECK(json_equal(json_at(again, "rows"), rows)); /* figures and all, from the store */
  json_decref(again);
  json_decref(rows);
  http_post_json(&d, "/sweeps?wait=0",
                 "{\"type\":\"transpose\",\"params\":{\"n\":16,\"warmup\":0,"
                 "\"batches\":1,\"reps\":1},\"axes\":{\"m\":[4]}}",
                 &r);
  CHECK(r.status == 200 || r.status == 202);
  CHECK(JINT(r.json, "id") > sweep);
  http_reply_free(&r);
  json_t *list = http_get_json(&d, "/sweeps");
  CHECK_INT_EQ(json_array_size(json_at(list, "sweeps")), 2);
  json_decref(list);
  snprintf(path, sizeof path, "/buffers/%lld", buffer);
  HTTP_EXPECT(&d, "GET", path, 410, "gone", "id");
  char body[160];
  snprintf(body, sizeof body, "{\"a\":{\"buffer\":%lld},\"variant\":\"naive\"}", buffer);
  http_post_json(&d, "/transpose", body, &r);
  CHECK_ERROR(&r, 410, "gone", "a");
  http_reply_free(&r);
  http_request(&d, "POST", "/buffers?shape=2,3", "application/octet-stream", (const char *)data,
               sizeof data, &r);
  CHECK_STATUS(&r, 201);
  CHECK(JINT(r.json, "id") > buffer);
  http_reply_free(&r);
  http_get(&d, "/buffers/999999", &r); /* not one of a previous run: unknown */
  CHECK_ERROR(&r, 404, "buffer_not_found", "id");
  http_reply_free(&r);
  gpulabd_stop(&d);
}

/* A clean stop leaves no gap: the next run's ids go on from the last one. */
static void test_ids_after_clean_stop(void) {
  struct gpulabd d;
  start(&d, "0");
  long long last = HTTP_POST_ID(&d, "/transpose", SMALL, 200);
  gpulabd_stop(&d);
  start(&d, "0");
  CHECK_INT_EQ(HTTP_POST_ID(&d, "/transpose", SMALL, 200), last + 1);
  gpulabd_stop(&d);
}

/* SIGTERM with --grace 1 and a job that needs longer: it is stopped at its next
 * batch and ends failed `interrupted` (its owner did not cancel it), as read after
 * the restart; one canceled by its owner before stays canceled. */
static void test_sigterm_past_grace(void) {
  struct gpulabd d;
  const char *args[] = {"--backend", "cpu", "--streams", "2", "--db", db, "--grace", "1", NULL};
  gpulabd_start(args, &d);
  long long slow = HTTP_POST_ID(&d, "/stencil?wait=0", SLOW, 202);
  long long canceled = HTTP_POST_ID(&d, "/stencil?wait=0", SLOW, 202);
  job_wait_state(&d, slow, "running", 30);
  job_wait_state(&d, canceled, "running", 30);
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", canceled);
  HTTP_EXPECT(&d, "DELETE", path, 200, NULL, NULL);
  gpulabd_stop(&d);
  gpulabd_start(args, &d);
  json_t *j = get_job(&d, slow);
  CHECK_STR_EQ(JSTR(j, "state"), "failed");
  CHECK_STR_EQ(JSTR(j, "error.code"), "interrupted");
  CHECK(strstr(JSTR(j, "error.message"), "grace") != NULL);
  json_decref(j);
  j = get_job(&d, canceled);
  CHECK_STR_EQ(JSTR(j, "state"), "canceled");
  json_decref(j);
  gpulabd_stop(&d);
}

/* Two gpulabd on one database: the second refuses to start, saying why. SQLite's lock
 * file alone: on PostgreSQL several gpulabd may share a database. */
static void test_one_per_db(void) {
  struct gpulabd a, b;
  start(&a, "0");
  const char *args[] = {"--backend", "cpu", "--db", db, NULL};
  char log[8192];
  int status;
  CHECK_INT_EQ(gpulabd_try_start(args, &b, log, sizeof log, &status), -1);
  CHECK(strstr(log, "--db") != NULL);
  CHECK(strstr(log, "another gpulabd") != NULL);
  gpulabd_stop(&a);
}

/* PostgreSQL: the job rows a gpulabd creates carry its --node (the host name without). */
static void test_node(void) {
  struct gpulabd d;
  const char *args[] = {"--backend", "cpu", "--db", db, "--node", "box-7", NULL};
  gpulabd_start(args, &d);
  long long id = HTTP_POST_ID(&d, "/transpose", SMALL, 200);
  gpulabd_stop(&d);
  char hostname[64] = "";
  gethostname(hostname, sizeof hostname - 1);
  const char *plain[] = {"--backend", "cpu", "--db", db, NULL};
  gpulabd_start(plain, &d);
  long long id2 = HTTP_POST_ID(&d, "/transpose", SMALL, 200);
  gpulabd_stop(&d);
  PGconn *c = PQconnectdb(db);
  char sql[128];
  snprintf(sql, sizeof sql, "SELECT node FROM jobs WHERE id IN (%lld, %lld) ORDER BY id", id, id2);
  PGresult *res = PQexec(c, sql);
  CHECK_INT_EQ(PQntuples(res), 2);
  CHECK_STR_EQ(PQgetvalue(res, 0, 0), "box-7");
  CHECK_STR_EQ(PQgetvalue(res, 1, 0), hostname);
  PQclear(res);
  PQfinish(c);
}

/* PostgreSQL: two gpulabd on one database both take jobs, under ids neither gave out
 * twice (the second's blocks move past the first's), and each job reads back from
 * either one's store after both stopped. */
static void test_two_nodes(void) {
  struct gpulabd a, b;
  const char *args_a[] = {"--backend", "cpu", "--db", db, "--node", "a", NULL};
  const char *args_b[] = {"--backend", "cpu", "--db", db, "--node", "b", NULL};
  gpulabd_start(args_a, &a);
  gpulabd_start(args_b, &b);
  long long ids[8];
  for (int i = 0; i < 8; i++) ids[i] = HTTP_POST_ID(i % 2 ? &b : &a, "/transpose", SMALL, 200);
  for (int i = 0; i < 8; i++)
    for (int k = 0; k < i; k++)
      if (ids[i] == ids[k]) CHECK_FAIL_("id %lld handed out twice", ids[i]);
  /* kill -9 of b with a job running and one queued: a restarted a leaves them to b
   * (no claims across nodes yet), and b's restart recovers them as after any crash. */
  const char *one_b[] = {"--backend", "cpu", "--streams", "1", "--db", db, "--node", "b", NULL};
  gpulabd_stop(&b);
  gpulabd_start(one_b, &b);
  long long running = HTTP_POST_ID(&b, "/stencil?wait=0", SLOW, 202);
  job_wait_state(&b, running, "running", 30);
  long long queued = HTTP_POST_ID(&b, "/transpose?wait=0", SMALL, 202);
  gpulabd_kill(&b);
  gpulabd_stop(&a);
  gpulabd_start(args_a, &a);
  for (int i = 0; i < 8; i++) {
    json_t *j = get_job(&a, ids[i]);
    CHECK_STR_EQ(JSTR(j, "state"), "done");
    json_decref(j);
  }
  json_t *j = get_job(&a, queued);
  CHECK_STR_EQ(JSTR(j, "state"), "queued"); /* b's, as b left it */
  json_decref(j);
  gpulabd_start(one_b, &b);
  j = job_wait_final(&b, queued, 30);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  json_decref(j);
  j = get_job(&b, running);
  CHECK_STR_EQ(JSTR(j, "error.code"), "interrupted");
  json_decref(j);
  gpulabd_stop(&b);
  gpulabd_stop(&a);
  printf("two nodes: ids %lld %lld %lld %lld ... all distinct\n", ids[0], ids[1], ids[2], ids[3]);
}

static int setup(void) {
  test_db_make("durability", db, sizeof db);
  return 0;
}

static void teardown(void) { test_db_drop(db); }

/* The crashes under each --durability, each on a new database. */
static void crashes(const char *mode) {
  durability = mode;
  remove_db();
  test_crash();
  test_crash_burst();
  durability = "normal";
}
static void test_crash_normal(void) { crashes("normal"); }
static void test_crash_full(void) { crashes("full"); }

/* The cases after the crashes, on a new database; each starts its own gpulabd. */
static void test_new_db(void) { remove_db(); }

static void test_one_per_db_sqlite(void) {
  if (!test_db_is_pg(db)) test_one_per_db(); /* SQLite's file lock */
}
static void test_node_pg(void) {
  if (test_db_is_pg(db)) test_node(); /* PostgreSQL's alone */
}
static void test_two_nodes_pg(void) {
  if (test_db_is_pg(db)) test_two_nodes();
}

static const struct test_case cases[] = {
    TEST(test_crash_normal),
    TEST(test_crash_full),
    TEST(test_new_db),
    TEST_AFTER(test_durability_modes, test_new_db),
    TEST_AFTER(test_sigterm, test_durability_modes),
    TEST_AFTER(test_sigterm_past_grace, test_sigterm),
    TEST_AFTER(test_sweeps_and_buffers, test_sigterm_past_grace),
    TEST_AFTER(test_ids_after_clean_stop, test_sweeps_and_buffers),
    {"one_per_db", test_one_per_db_sqlite, NULL},
    {"node", test_node_pg, NULL},
    {"two_nodes", test_two_nodes_pg, NULL},
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = setup, .teardown = teardown};
