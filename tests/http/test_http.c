/* HTTP tests against a real gpulabd on the CPU backend: every route, every job type
 * at sizes with tails, the job list. Every error the API promises is
 * test_http_errors.c's, queueing, cancellation and 200 clients waiting at once
 * test_http_queue.c's; the helpers http_common.c's. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http_client.h"
#include "http_common.h"
#include "kernels/core/experiment.h"
#include "runner.h"

/* ---- routes ---- */

static void test_index_health_device(void) {
  json_t *index = http_get_json(&A, "/");
  CHECK_STR_EQ(JSTR(index, "service"), "gpulabd");
  static const char *const routes[] = {"POST /jobs",        "GET /jobs",   "GET /jobs/{id}",
                                       "DELETE /jobs/{id}", "GET /device", "GET /health"};
  char *text = json_dumps(json_at(index, "routes"), 0);
  for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) CHECK(strstr(text, routes[i]));
  free(text);
  for (int t = 0; t < EXP_TYPE_COUNT; t++) { /* first, one per experiment of the registry */
    char route[80];
    snprintf(route, sizeof route, "POST %s", exp_type_route((enum exp_type)t));
    CHECK_STR_EQ(json_string_value(json_array_get(json_at(index, "routes"), (size_t)t)), route);
  }
  json_decref(index);

  json_t *health = http_get_json(&A, "/health");
  CHECK_STR_EQ(JSTR(health, "status"), "ok");
  CHECK_STR_EQ(JSTR(health, "backend"), "cpu");
  CHECK(JNUM(health, "uptime_s") >= 0);
  static const char *const states[] = {"queued", "waiting", "running",
                                       "done",   "failed",  "canceled"};
  for (size_t i = 0; i < 6; i++)
    CHECK(json_is_integer(json_object_get(json_at(health, "jobs"), states[i])));
  json_decref(health);

  struct http_reply r;
  http_request(&A, "HEAD", "/health", NULL, NULL, 0, &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK_INT_EQ(r.body_len, 0);
  http_reply_free(&r);

  json_t *device = http_get_json(&A, "/device");
  CHECK_STR_EQ(JSTR(device, "backend"), "cpu");
  CHECK(JINT(device, "cpu_cores") > 0);
  CHECK(*JSTR(device, "name"));
  CHECK_INT_EQ(JINT(device, "streams"), 2);
  CHECK(JINT(device, "job_memory_limit_bytes") > 0);
  CHECK(JBOOL(device, "healthy"));
  CHECK(json_at(device, "compute_capability") == NULL);
  json_decref(device);
}

/* ---- experiments at sizes that are not multiples of any tile ---- */

static void test_transpose(void) {
  json_t *job = run_ok("transpose", SMALL_TRANSPOSE, transpose_all, N_TRANSPOSE);
  CHECK_INT_EQ(JINT(job, "params.m"), 33);
  CHECK_INT_EQ(JINT(job, "params.n"), 47);
  CHECK_INT_EQ(JINT(job, "params.batches"), 2);
  for (int i = 0; i < 4; i++)
    CHECK(json_is_true(json_at(json_array_get(json_at(job, "result.runs"), i), "available")));
  CHECK_STR_EQ(JSTR(job, "result.work_unit"), "bytes");
  CHECK_NEAR(JNUM(job, "result.work"), 8.0 * 33 * 47, 0);
  CHECK_STR_EQ(JSTR(job, "client"), "127.0.0.1");
  CHECK(JINT(job, "stream") >= 0 && JINT(job, "stream") < 2);
  json_decref(job);
  static const char *const two[] = {"padded33", "naive"};
  json_decref(run_ok("transpose",
                     "{\"m\":33,\"n\":47,\"variant\":[\"padded33\",\"naive\"]," FAST "}", two, 2));
  json_decref(run_ok("transpose", "{\"m\":47,\"n\":33,\"variant\":\"all\"," FAST "}", transpose_all,
                     N_TRANSPOSE));
  json_decref(
      run_ok("transpose", "{\"m\":1,\"n\":1,\"variant\":\"copy\"," FAST "}", transpose_all + 3, 1));
}

static void test_gemm(void) {
  json_t *job = run_ok("gemm", "{\"m\":33,\"n\":47,\"k\":18," FAST "}", gemm_all, N_GEMM);
  CHECK(JBOOL(job, "result.runs[0].available"));
  CHECK(JBOOL(job, "result.runs[1].available"));
  CHECK(!JBOOL(job, "result.runs[2].available"));
  CHECK(*JSTR(job, "result.runs[2].reason"));
  CHECK_STR_EQ(JSTR(job, "result.work_unit"), "flop");
  CHECK_NEAR(JNUM(job, "result.work"), 2.0 * 33 * 47 * 18, 0);
  CHECK_INT_EQ(JINT(job, "params.k"), 18);
  json_decref(job);
  json_decref(run_ok("gemm", "{\"m\":1,\"n\":65,\"k\":17,\"variant\":[\"tiled\"]," FAST "}",
                     gemm_all + 1, 1));
}

static void test_stencil(void) {
  static const int radii[] = {0, 2, 32};
  for (size_t i = 0; i < 3; i++) {
    char body[256];
    snprintf(body, sizeof body, "{\"n\":1000,\"radius\":%d," FAST "}", radii[i]);
    json_t *job = run_ok("stencil", body, stencil_all, N_STENCIL);
    CHECK_INT_EQ(JINT(job, "params.radius"), radii[i]);
    CHECK_INT_EQ(JINT(job, "params.n"), 1000);
    json_decref(job);
  }
  /* A radius wider than the whole array: every neighbour is boundary. */
  json_decref(run_ok("stencil", "{\"n\":7,\"radius\":40," FAST "}", stencil_all, N_STENCIL));
}

static void test_pipeline(void) {
  static const char *const streams_1_3[] = {"streams=1", "streams=3"};
  json_t *job = run_ok("pipeline",
                       "{\"chunk\":1000,\"chunks\":3,\"streams\":[1,3],\"terms\":8," FAST "}",
                       streams_1_3, 2);
  CHECK_INT_EQ(JINT(job, "result.runs[0].streams"), 1);
  CHECK_INT_EQ(JINT(job, "result.runs[1].streams"), 3);
  CHECK_INT_EQ(JINT(job, "params.chunk"), 1000);
  CHECK_INT_EQ(JINT(job, "params.chunks"), 3);
  CHECK_INT_EQ(JINT(job, "params.terms"), 8);
  CHECK_INT_EQ(JINT(job, "params.streams[1]"), 3);
  CHECK(json_at(job, "params.variant") == NULL);
  json_decref(job);
  static const char *const streams_2[] = {"streams=2"}; /* a count, not a list */
  json_decref(run_ok("pipeline", "{\"chunk\":777,\"chunks\":2,\"streams\":2,\"terms\":1," FAST "}",
                     streams_2, 1));
}

static void test_post_jobs(void) {
  json_t *job = job_post_done(&A, "cpu", "/jobs", "stencil",
                              "{\"type\":\"stencil\",\"params\":{\"n\":1000,\"radius\":2," FAST
                              "}}");
  CHECK_INT_EQ(JINT(job, "params.radius"), 2);
  /* GET /jobs/{id} gives the same finished job, and DELETE can no longer cancel it. */
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", JINT(job, "id"));
  json_t *again = http_get_json(&A, path);
  CHECK(json_equal(again, job));
  json_decref(again);
  struct http_reply r;
  http_request(&A, "HEAD", path, NULL, NULL, 0, &r);
  CHECK_INT_EQ(r.status, 200);
  http_reply_free(&r);
  HTTP_EXPECT(&A, "DELETE", path, 409, "job_finished", "id");
  again = http_get_json(&A, path);
  CHECK_STR_EQ(JSTR(again, "state"), "done");
  json_decref(again);
  json_decref(job);

  json_decref(job_post_done(&A, "cpu", "/jobs", "gemm",
                            "{\"params\":{\"m\":3,\"n\":5,\"k\":7," FAST "},\"type\":\"gemm\"}"));
  job = job_post_done(
      &A, "cpu", "/jobs", "pipeline",
      "{\"type\":\"pipeline\",\"params\":{\"chunk\":1000,\"chunks\":3,\"terms\":8," FAST "}}");
  CHECK_INT_EQ(json_array_size(json_at(job, "params.streams")), 2); /* default [1, 3] */
  json_decref(job);
}

/* Accepted Content-Types: JSON (any case, with parameters), curl -d's form type, none. */
static void test_content_types(void) {
  static const char *const ok[] = {"application/json", "application/json; charset=utf-8",
                                   "Application/JSON", "application/x-www-form-urlencoded", NULL};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    struct http_reply r;
    http_request(&A, "POST", "/transpose", ok[i], SMALL_TRANSPOSE, strlen(SMALL_TRANSPOSE), &r);
    CHECK_STATUS(&r, 200);
    CHECK_JOB_DONE(r.json, "transpose", "cpu");
    http_reply_free(&r);
  }
}

/* The defaults, with {} and with an empty body, on ?wait=0: 202 now, done later (the
 * jobs run while the other tests go on). Fills the two jobs' ids. */
static void start_defaults(long long ids[2]) {
  struct http_reply r;
  http_post_json(&A, "/transpose?wait=0", "{}", &r);
  ids[0] = job_check_accepted(&r, "transpose");
  CHECK_INT_EQ(JINT(r.json, "params.m"), 4096);
  CHECK_INT_EQ(JINT(r.json, "params.n"), 4096);
  CHECK_INT_EQ(json_array_size(json_at(r.json, "params.variant")), N_TRANSPOSE);
  CHECK_INT_EQ(JINT(r.json, "params.seed"), 2026);
  CHECK_INT_EQ(JINT(r.json, "params.warmup"), 3);
  CHECK_INT_EQ(JINT(r.json, "params.batches"), 5);
  CHECK_INT_EQ(JINT(r.json, "params.reps"), 20);
  http_reply_free(&r);

  http_request(&A, "POST", "/stencil?wait=0", "application/json", "", 0, &r);
  ids[1] = job_check_accepted(&r, "stencil");
  CHECK_INT_EQ(JINT(r.json, "params.n"), 1 << 22);
  CHECK_INT_EQ(JINT(r.json, "params.radius"), 32);
  CHECK_INT_EQ(JINT(r.json, "params.warmup"), 20);
  CHECK_INT_EQ(JINT(r.json, "params.reps"), 100);
  http_reply_free(&r);
}

static void finish_defaults(const long long ids[2]) {
  json_t *job = job_wait_final(&A, ids[0], 240);
  CHECK_JOB_DONE(job, "transpose", "cpu");
  check_run_labels(job, transpose_all, N_TRANSPOSE);
  json_decref(job);
  job = job_wait_final(&A, ids[1], 240);
  CHECK_JOB_DONE(job, "stencil", "cpu");
  check_run_labels(job, stencil_all, N_STENCIL);
  CHECK_INT_EQ(JINT(job, "result.runs[0].timing.batches"), 5);
  json_decref(job);
}

/* ---- GET /jobs ---- */

/* Pages through /jobs three at a time and checks the pages make up `all`. */
static void check_paging(json_t *all) {
  size_t seen = 0;
  char path[128] = "/jobs?limit=3";
  for (;;) {
    json_t *page = list(&A, path);
    json_t *jobs = json_at(page, "jobs"), *next = json_at(page, "next_cursor");
    for (size_t i = 0; i < json_array_size(jobs); i++, seen++)
      CHECK_INT_EQ(JINT(json_array_get(jobs, i), "id"),
                   JINT(json_array_get(json_at(all, "jobs"), seen), "id"));
    if (json_is_null(next)) {
      json_decref(page);
      break;
    }
    CHECK_INT_EQ(json_array_size(jobs), 3);
    CHECK_INT_EQ(json_integer_value(next), JINT(jobs, "[2].id"));
    snprintf(path, sizeof path, "/jobs?limit=3&cursor=%lld", (long long)json_integer_value(next));
    json_decref(page);
  }
  CHECK_INT_EQ(seen, json_array_size(json_at(all, "jobs")));
}

static void test_list(void) {
  json_t *all = list(&A, "/jobs?limit=1000");
  size_t n = json_array_size(json_at(all, "jobs"));
  CHECK(n >= 10);
  CHECK(json_is_null(json_at(all, "next_cursor")));
  json_t *page = list(&A, "/jobs");
  CHECK_INT_EQ(json_array_size(json_at(page, "jobs")), n < 50 ? n : 50); /* default limit */
  json_decref(page);
  check_paging(all);

  json_t *done = list(&A, "/jobs?state=done&limit=1000");
  json_t *gemm = list(&A, "/jobs?type=gemm&limit=1000");
  size_t n_done = 0, n_gemm = 0, i;
  json_t *job;
  json_array_foreach(json_at(all, "jobs"), i, job) {
    n_done += strcmp(JSTR(job, "state"), "done") == 0;
    n_gemm += strcmp(JSTR(job, "type"), "gemm") == 0;
  }
  CHECK(n_gemm >= 3);
  CHECK_INT_EQ(json_array_size(json_at(done, "jobs")), n_done);
  CHECK_INT_EQ(json_array_size(json_at(gemm, "jobs")), n_gemm);
  json_array_foreach(json_at(done, "jobs"), i, job) CHECK_STR_EQ(JSTR(job, "state"), "done");
  json_array_foreach(json_at(gemm, "jobs"), i, job) CHECK_STR_EQ(JSTR(job, "type"), "gemm");
  json_decref(done);
  json_decref(gemm);
  json_decref(all);
  page = list(&A, "/jobs?type=gemm&state=done&limit=1");
  CHECK_INT_EQ(json_array_size(json_at(page, "jobs")), 1);
  CHECK_STR_EQ(JSTR(page, "jobs[0].type"), "gemm");
  CHECK(json_is_integer(json_at(page, "next_cursor")));
  json_decref(page);
  page = list(&A, "/jobs?state=canceled");
  CHECK_INT_EQ(json_array_size(json_at(page, "jobs")), 0);
  json_decref(page);

  static const struct bad_request bad[] = {
      {"/jobs?limit=0", NULL, 400, "out_of_range", "limit"},
      {"/jobs?limit=1001", NULL, 400, "out_of_range", "limit"},
      {"/jobs?limit=x", NULL, 400, "wrong_type", "limit"},
      {"/jobs?limit=2.5", NULL, 400, "wrong_type", "limit"},
      {"/jobs?cursor=0", NULL, 400, "out_of_range", "cursor"},
      {"/jobs?cursor=x", NULL, 400, "wrong_type", "cursor"},
      {"/jobs?state=bogus", NULL, 400, "unknown_state", "state"},
      {"/jobs?type=bogus", NULL, 400, "unknown_type", "type"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    struct http_reply r;
    http_get(&A, bad[k].path, &r);
    CHECK_ERROR(&r, bad[k].status, bad[k].code, bad[k].field);
    http_reply_free(&r);
  }
}

/* Two jobs with every default, submitted first and checked once the others ran. */
static long long defaults[2];
static bool defaults_finished;
static void test_defaults_start(void) { start_defaults(defaults); }
static void test_defaults_finish(void) {
  finish_defaults(defaults);
  defaults_finished = true;
}

static void stop(void) {
  /* Run alone, test_defaults_start leaves its long jobs running: cancel them. */
  for (int i = 0; i < 2 && defaults[i] && !defaults_finished; i++) {
    char path[64];
    struct http_reply r;
    snprintf(path, sizeof path, "/jobs/%lld", defaults[i]);
    http_request(&A, "DELETE", path, NULL, NULL, 0, &r);
    http_reply_free(&r);
  }
  gpulabd_stop(&A);
}

static void test_none_failed(void) { CHECK_INT_EQ(health_int(&A, "jobs.failed"), 0); }

static const struct test_case cases[] = {
    TEST(test_defaults_start),
    TEST(test_index_health_device),
    TEST(test_transpose),
    TEST(test_gemm),
    TEST(test_stencil),
    TEST(test_pipeline),
    TEST(test_post_jobs),
    TEST(test_content_types),
    TEST_AFTER(test_defaults_finish, test_defaults_start),
    TEST_AFTER_ALL(test_list), /* the jobs of the cases before */
    TEST_AFTER_ALL(test_none_failed),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = http_start_a, .teardown = stop};
