/* HTTP tests of sweeps on the CPU backend: a transpose m x variant sweep as six
 * ordinary jobs and one table; axes' errors named; the per-client queue limit met
 * before any job exists; waiting and canceling; a pipeline sweep with the best
 * runs; and every run's kernel.work (the counts behind its figure). Small sizes. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http_client.h"
#include "runner.h"
#include "test_db.h"

#define FAST "\"warmup\":0,\"batches\":1,\"reps\":1"
#define MAX_QUEUED 8
/* Keeps the one stream busy until canceled (~100 ms batches, 100 of them). */
#define BLOCKER                                                               \
  "{\"type\":\"stencil\",\"params\":{\"n\":100000,\"radius\":2,\"warmup\":0," \
  "\"batches\":100,\"reps\":10000}}"

static struct gpulabd D; /* --streams 1 --max-queued MAX_QUEUED */

/* ---- helpers ---- */

static long long submitted(void) {
  json_t *h = http_get_json(&D, "/health");
  long long n = JINT(h, "jobs_submitted");
  json_decref(h);
  return n;
}

/* POSTs body to /sweeps<query>; expects status; returns the reply's JSON. */
static json_t *sweep_post(const char *query, long status, const char *body) {
  char path[64];
  snprintf(path, sizeof path, "/sweeps%s", query);
  struct http_reply r;
  http_post_json(&D, path, body, &r);
  if (r.status != status)
    CHECK_FAIL_("POST %s %s: HTTP %ld, expected %ld: %.3000s", path, body, r.status, status,
                r.body);
  if (status == 202) {
    char location[64];
    snprintf(location, sizeof location, "/sweeps/%lld", JINT(r.json, "id"));
    CHECK_STR_EQ(r.location, location);
  }
  json_t *j = json_incref(r.json);
  http_reply_free(&r);
  return j;
}

static void sweep_error(long status, const char *code, const char *field, const char *part,
                        const char *body) {
  long long before = submitted();
  struct http_reply r;
  http_post_json(&D, "/sweeps", body, &r);
  fprintf(stderr, "  POST /sweeps %.120s -> %ld %.300s\n", body, r.status, r.body);
  CHECK_ERROR(&r, status, code, field);
  if (part && !strstr(JSTR(r.json, "detail"), part))
    CHECK_FAIL_("detail \"%s\" lacks \"%s\"", JSTR(r.json, "detail"), part);
  http_reply_free(&r);
  CHECK_INT_EQ(submitted(), before); /* refused whole: no job was created */
}

static json_t *sweep_get(long long id) {
  char path[64];
  snprintf(path, sizeof path, "/sweeps/%lld", id);
  return http_get_json(&D, path);
}

static json_t *job_get(long long id) {
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", id);
  return http_get_json(&D, path);
}

static long long blocker_start(void) {
  struct http_reply r;
  http_post_json(&D, "/jobs?wait=0", BLOCKER, &r);
  CHECK(r.status == 202 || r.status == 200);
  long long id = JINT(r.json, "id");
  http_reply_free(&r);
  job_wait_state(&D, id, "running", 30);
  return id;
}

static void cancel_job(long long id) {
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", id);
  HTTP_EXPECT(&D, "DELETE", path, 200, NULL, NULL);
  json_decref(job_wait_final(&D, id, 30));
}

/* ---- tests ---- */

/* m x variant: 6 jobs, 6 rows in the axes' order, all passed; each job is an
 * ordinary one, its params the point's, listed in GET /jobs. */
static void test_table(void) {
  json_t *s = sweep_post("", 200,
                         "{\"type\":\"transpose\",\"params\":{\"n\":47," FAST
                         "},\"priority\":3,"
                         "\"isolation\":\"shared\",\"axes\":{\"m\":[33,64,100],"
                         "\"variant\":[\"naive\",\"padded33\"]}}");
  CHECK_STR_EQ(JSTR(s, "type"), "transpose");
  CHECK_STR_EQ(JSTR(s, "state"), "done");
  CHECK(JBOOL(s, "passed"));
  CHECK_STR_EQ(JSTR(s, "unit"), "GB/s");
  CHECK_INT_EQ(JINT(s, "counts.done"), 6);
  CHECK_INT_EQ(json_array_size(json_at(s, "jobs")), 6);
  CHECK_INT_EQ(json_array_size(json_at(s, "rows")), 6);
  static const char *const cols[] = {"m",      "variant",   "job",    "state",
                                     "figure", "median_ms", "passed", "error"};
  CHECK_INT_EQ(json_array_size(json_at(s, "columns")), 8);
  for (int c = 0; c < 8; c++)
    CHECK_STR_EQ(json_string_value(json_array_get(json_at(s, "columns"), c)), cols[c]);
  static const int ms[] = {33, 64, 100};
  static const char *const variants[] = {"naive", "padded33"};
  json_t *listed = http_get_json(&D, "/jobs?limit=100");
  for (int i = 0; i < 6; i++) {
    json_t *row = json_array_get(json_at(s, "rows"), (size_t)i);
    CHECK_INT_EQ(JINT(row, "m"), ms[i / 2]);
    CHECK_STR_EQ(JSTR(row, "variant"), variants[i % 2]);
    CHECK_STR_EQ(JSTR(row, "state"), "done");
    CHECK(JBOOL(row, "passed"));
    CHECK(JNUM(row, "figure") > 0 && JNUM(row, "median_ms") > 0);
    CHECK(json_is_null(json_at(row, "error")));
    long long id = JINT(row, "job");
    CHECK_INT_EQ(id, json_integer_value(json_array_get(json_at(s, "jobs"), (size_t)i)));
    json_t *job = job_get(id);
    CHECK_JOB_DONE(job, "transpose", "cpu");
    CHECK_INT_EQ(JINT(job, "params.m"), ms[i / 2]);
    CHECK_INT_EQ(JINT(job, "params.n"), 47);
    CHECK_INT_EQ(json_array_size(json_at(job, "params.variant")), 1);
    CHECK_STR_EQ(JSTR(job, "params.variant[0]"), variants[i % 2]);
    CHECK_INT_EQ(JINT(job, "priority"), 3);
    CHECK_STR_EQ(JSTR(job, "isolation"), "shared");
    CHECK_NEAR(JNUM(job, "result.runs[0].figure"), JNUM(row, "figure"), 1e-9);
    json_decref(job);
    bool seen = false;
    for (size_t k = 0; k < json_array_size(json_at(listed, "jobs")); k++)
      seen = seen || JINT(json_array_get(json_at(listed, "jobs"), k), "id") == id;
    CHECK(seen);
  }
  json_decref(listed);
  /* GET answers the same table; the list has it. */
  long long id = JINT(s, "id");
  json_t *again = sweep_get(id);
  CHECK(json_equal(json_at(again, "rows"), json_at(s, "rows")));
  json_decref(again);
  json_t *list = http_get_json(&D, "/sweeps");
  CHECK_INT_EQ(JINT(list, "sweeps[0].id"), id);
  CHECK(json_at(list, "sweeps[0].rows") == NULL);
  json_decref(list);
  json_decref(s);
}

/* Bad axes are 400s that name the axis (and the value), before any job exists. */
static void test_errors(void) {
  sweep_error(400, "unknown_field", "axes.q", "unknown axis 'q'",
              "{\"type\":\"transpose\",\"axes\":{\"q\":[1]}}");
  sweep_error(400, "unknown_field", "axes.priority", "priority",
              "{\"type\":\"transpose\",\"axes\":{\"priority\":[1,2]}}");
  sweep_error(400, "out_of_range", "axes.m", "axes.m[2] = 99999999",
              "{\"type\":\"transpose\",\"params\":{" FAST "},\"axes\":{\"m\":[8,16,99999999]}}");
  sweep_error(400, "wrong_type", "axes.n", "axes.n[0] = \"x\"",
              "{\"type\":\"transpose\",\"axes\":{\"n\":[\"x\"]}}");
  sweep_error(400, "unknown_variant", "axes.variant", "'nope'",
              "{\"type\":\"transpose\",\"axes\":{\"variant\":[\"naive\",\"nope\"]}}");
  sweep_error(400, "out_of_range", "axes.m", "non-empty",
              "{\"type\":\"transpose\",\"axes\":{\"m\":[]}}");
  sweep_error(400, "wrong_type", "axes.m", "non-empty",
              "{\"type\":\"transpose\",\"axes\":{\"m\":4}}");
  sweep_error(400, "missing_field", "axes", NULL, "{\"type\":\"transpose\"}");
  sweep_error(400, "out_of_range", "axes", NULL, "{\"type\":\"transpose\",\"axes\":{}}");
  sweep_error(400, "wrong_type", "axes", NULL, "{\"type\":\"transpose\",\"axes\":[1,2]}");
  sweep_error(400, "out_of_range", "axes", "at most 256",
              "{\"type\":\"transpose\",\"axes\":{\"m\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17],"
              "\"n\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}}");
  sweep_error(400, "unknown_type", "type", NULL, "{\"type\":\"fft\",\"axes\":{\"m\":[1]}}");
  sweep_error(400, "out_of_range", "params.n", NULL,
              "{\"type\":\"transpose\",\"params\":{\"n\":0},\"axes\":{\"m\":[1]}}");
  sweep_error(400, "invalid_json", NULL, NULL, "{\"type\":");
  struct http_reply r;
  HTTP_EXPECT(&D, "GET", "/sweeps/999", 404, "sweep_not_found", "id");
  http_request(&D, "PUT", "/sweeps", "application/json", "{}", 2, &r);
  CHECK_ERROR(&r, 405, "method_not_allowed", NULL);
  http_reply_free(&r);
}

/* A sweep refused by the engine (a parent or buffer that does not exist, an input
 * that fits one point but not another) creates nothing: no job (none canceled
 * after), no id used, nothing listed. */
static void test_refused_whole(void) {
  json_t *before = http_get_json(&D, "/jobs?limit=1000");
  size_t listed = json_array_size(json_at(before, "jobs"));
  json_decref(before);
  sweep_error(404, "job_not_found", "depends_on", "no job 999999",
              "{\"type\":\"transpose\",\"params\":{" FAST
              "},\"depends_on\":[999999],"
              "\"axes\":{\"m\":[4,8,16]}}");
  sweep_error(404, "buffer_not_found", "params.a", "no buffer 999999",
              "{\"type\":\"transpose\",\"params\":{\"a\":{\"buffer\":999999}," FAST
              "},"
              "\"axes\":{\"variant\":[\"naive\",\"padded33\"]}}");
  float data[20] = {0};
  struct http_reply r;
  http_request(&D, "POST", "/buffers?shape=4,5", "application/octet-stream", (const char *)data,
               sizeof data, &r);
  CHECK_STATUS(&r, 201);
  char body[256];
  snprintf(body, sizeof body,
           "{\"type\":\"transpose\",\"params\":{\"a\":{\"buffer\":%lld}," FAST
           "},"
           "\"axes\":{\"m\":[4,7]}}",
           JINT(r.json, "id"));
  http_reply_free(&r);
  sweep_error(400, "shape_mismatch", "params.a", "point 1", body); /* m=4 fits, m=7 does not */
  json_t *after = http_get_json(&D, "/jobs?limit=1000");
  CHECK_INT_EQ(json_array_size(json_at(after, "jobs")), listed);
  json_decref(after);
}

/* The client's --max-queued counts every point, checked before any is created:
 * 9 points > 8 refused whole; with jobs already queued, what is left. */
static void test_limit(void) {
  sweep_error(429, "queue_full", NULL, "9 points",
              "{\"type\":\"transpose\",\"params\":{" FAST
              "},\"axes\":{\"m\":[1,2,3,4,5,6,7,8,9]}}");
  long long blocker = blocker_start();
  json_t *queued = sweep_post(
      "?wait=0", 202, "{\"type\":\"transpose\",\"params\":{" FAST "},\"axes\":{\"m\":[1,2,3]}}");
  CHECK_STR_EQ(JSTR(queued, "state"), "queued");
  /* 3 queued + 6 > 8: refused, nothing created; 3 + 5 fits. */
  sweep_error(429, "queue_full", NULL, "3 jobs",
              "{\"type\":\"transpose\",\"params\":{" FAST
              "},\"axes\":{\"m\":[1,2,3],\"n\":[1,2]}}");
  json_t *fits = sweep_post("?wait=0", 202,
                            "{\"type\":\"transpose\",\"params\":{" FAST
                            "},\"axes\":{\"m\":[1,2,3,4,5]}}");
  cancel_job(blocker);
  for (int k = 0; k < 2; k++) { /* both ran once the stream was free */
    long long id = JINT(k ? fits : queued, "id");
    json_t *s = sweep_get(id);
    for (int tries = 0; tries < 300 && strcmp(JSTR(s, "state"), "done") != 0; tries++) {
      json_decref(s);
      usleep(100 * 1000);
      s = sweep_get(id);
    }
    CHECK_STR_EQ(JSTR(s, "state"), "done");
    CHECK(JBOOL(s, "passed"));
    json_decref(s);
  }
  json_decref(queued);
  json_decref(fits);
}

/* ?wait runs out: 202 with Location; DELETE cancels what has not finished; a
 * second DELETE finds nothing left (409). */
static void test_wait_and_cancel(void) {
  long long blocker = blocker_start();
  json_t *s = sweep_post("?wait=0.3", 202,
                         "{\"type\":\"stencil\",\"params\":{\"n\":1000," FAST
                         "},\"axes\":{\"radius\":[1,2],"
                         "\"variant\":[\"naive\",\"shared\"]}}");
  CHECK_STR_EQ(JSTR(s, "state"), "queued");
  CHECK_INT_EQ(JINT(s, "counts.queued"), 4);
  CHECK(json_is_null(json_at(s, "rows[0].figure")));
  long long id = JINT(s, "id");
  char path[64];
  snprintf(path, sizeof path, "/sweeps/%lld", id);
  struct http_reply r;
  http_request(&D, "DELETE", path, NULL, NULL, 0, &r);
  CHECK_STATUS(&r, 200);
  CHECK_STR_EQ(JSTR(r.json, "state"), "canceled");
  for (int i = 0; i < 4; i++) {
    json_t *row = json_array_get(json_at(r.json, "rows"), (size_t)i);
    CHECK_STR_EQ(JSTR(row, "state"), "canceled");
    CHECK_STR_EQ(JSTR(row, "error"), "canceled");
  }
  http_reply_free(&r);
  HTTP_EXPECT(&D, "DELETE", path, 409, "sweep_finished", "id");
  cancel_job(blocker);
  json_decref(s);
}

/* A pipeline sweep over streams with "best": per-run columns; best maps to CPU
 * threads and says so, best_graph is unavailable here. */
static void test_pipeline_best(void) {
  json_t *s = sweep_post("", 200,
                         "{\"type\":\"pipeline\",\"params\":{\"chunks\":4,\"terms\":8,\"warmup\":1,"
                         "\"batches\":2,\"reps\":1},\"axes\":{\"chunk\":[1000,300000],"
                         "\"streams\":[[1,3],\"best\"]}}");
  CHECK_STR_EQ(JSTR(s, "state"), "done");
  CHECK(JBOOL(s, "passed"));
  static const char *const cols[] = {"chunk",
                                     "streams",
                                     "job",
                                     "state",
                                     "streams=1.figure",
                                     "streams=1.median_ms",
                                     "streams=1.passed",
                                     "streams=3.figure"};
  for (int c = 0; c < 8; c++)
    CHECK_STR_EQ(json_string_value(json_array_get(json_at(s, "columns"), c)), cols[c]);
  json_t *row = json_array_get(json_at(s, "rows"), 3); /* chunk 300000, best */
  /* cells are named "<run>.<figure>": read them by name, not as paths */
  CHECK(json_real_value(json_object_get(row, "best.figure")) > 0);
  CHECK(json_is_true(json_object_get(row, "best.passed")));
  CHECK(json_is_null(json_object_get(row, "best_graph.figure")));
  CHECK(json_is_null(json_object_get(row, "streams=1.figure")));
  row = json_array_get(json_at(s, "rows"), 0); /* chunk 1000, [1, 3] */
  CHECK(json_real_value(json_object_get(row, "streams=3.figure")) > 0);
  CHECK(json_is_null(json_object_get(row, "best.figure")));
  row = json_array_get(json_at(s, "rows"), 3);
  json_t *job = job_get(JINT(row, "job"));
  CHECK_STR_EQ(JSTR(job, "params.streams[0]"), "best");
  CHECK_STR_EQ(JSTR(job, "result.runs[0].variant"), "best");
  CHECK(strstr(JSTR(job, "result.runs[0].mapped_to"), "threads") != NULL);
  CHECK(JBOOL(job, "result.runs[0].plan.best"));
  CHECK_STR_EQ(JSTR(job, "result.runs[0].plan.order"), "depth_first");
  long long chunk = JINT(job, "result.runs[0].plan.chunk"),
            chunks = JINT(job, "result.runs[0].plan.chunks");
  CHECK(chunk * chunks >= 1200000 && (chunks - 1) * chunk < 1200000); /* the whole input */
  CHECK_INT_EQ(JINT(job, "result.runs[0].streams"), JINT(job, "result.runs[0].plan.streams"));
  CHECK_STR_EQ(JSTR(job, "result.runs[1].variant"), "best_graph");
  CHECK(!JBOOL(job, "result.runs[1].available"));
  CHECK(strstr(JSTR(job, "result.runs[1].reason"), "CUDA") != NULL);
  json_decref(job);
  json_decref(s);
}

/* kernel.work: both counts behind the figure; no occupancy on the CPU. */
static void test_work(void) {
  static const struct {
    const char *path, *body;
    double bytes, flops;
  } cases[] = {
      {"/transpose", "{\"m\":33,\"n\":47," FAST "}", 8.0 * 33 * 47, 0},
      {"/gemm", "{\"m\":33,\"n\":47,\"k\":18,\"variant\":[\"naive\",\"tiled\"]," FAST "}",
       4.0 * (33 * 18 + 18 * 47 + 33 * 47), 2.0 * 33 * 47 * 18},
      {"/stencil", "{\"n\":1000,\"radius\":5," FAST "}", 8.0 * 1000, 11.0 * 1000},
      {"/pipeline", "{\"chunk\":1000,\"chunks\":3,\"terms\":16,\"streams\":[1,\"best\"]," FAST "}",
       8.0 * 3000, 16.0 * 3000},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct http_reply r;
    http_post_json(&D, cases[i].path, cases[i].body, &r);
    CHECK_STATUS(&r, 200);
    json_t *runs = json_at(r.json, "result.runs");
    for (size_t k = 0; k < json_array_size(runs); k++) {
      json_t *run = json_array_get(runs, k);
      if (!JBOOL(run, "available")) continue;
      CHECK_NEAR(JNUM(run, "kernel.work.bytes"), cases[i].bytes, 0.5);
      CHECK_NEAR(JNUM(run, "kernel.work.flops"), cases[i].flops, 0.5);
      CHECK(strlen(JSTR(run, "kernel.work.counted")) > 0);
      CHECK(json_at(run, "kernel.occupancy") == NULL);
    }
    http_reply_free(&r);
  }
}

/* The default --db (./gpulab.db), or with $GPULAB_TEST_DB a PostgreSQL database. */
static char db[512];

static int start(void) {
  if (test_db_on_pg()) test_db_make("sweeps", db, sizeof db);
  const char *args[] = {
      "--backend",           "cpu", "--streams", "1", "--max-queued", "8", "--http-threads", "4",
      db[0] ? "--db" : NULL, db,    NULL};
  gpulabd_start(args, &D);
  return 0;
}

static void stop(void) {
  gpulabd_stop(&D);
  if (db[0]) test_db_drop(db);
}

static const struct test_case cases[] = {
    TEST(test_table),
    TEST(test_errors),
    TEST(test_refused_whole),
    TEST(test_limit),
    TEST(test_wait_and_cancel),
    TEST(test_pipeline_best),
    TEST(test_work),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = start, .teardown = stop};
