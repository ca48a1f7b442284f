/* HTTP tests against a real gpulabd on the CPU backend: every route, every job type
 * at sizes with tails, every error the API promises, cancellation, and 200 clients
 * waiting at once on two HTTP threads. Sizes and timing are kept small for CI. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner.h"
#include "http_client.h"
#include "kernels/core/experiment.h"

#define FAST "\"warmup\":1,\"batches\":2,\"reps\":1"
#define SMALL_TRANSPOSE "{\"m\":33,\"n\":47," FAST "}"
#define MAX_BODY 4096 /* A's --max-body */
#define N_CLIENTS 200
#define MAX_QUEUED 202 /* B's --max-queued */
#define MAX_QUEUED_ARG "202"

static struct gpulabd A; /* --streams 2 --max-body 4096: most tests */
static struct gpulabd B; /* --streams 1 --max-queued 202: queueing, cancel, concurrency */

static const char *const transpose_all[] = {"naive", "shared32", "padded33", "copy", "best"};
static const char *const gemm_all[] = {"naive", "tiled", "cublas", "best", "tf32", "cublas_tf32"};
static const char *const stencil_all[] = {"naive", "shared", "best"};
enum { N_TRANSPOSE = 5, N_GEMM = 6, N_STENCIL = 3 }; /* the lists above, "all" */

static long long health_int(struct gpulabd *d, const char *path) {
  json_t *health = http_get_json(d, "/health");
  CHECK_STR_EQ(JSTR(health, "status"), "ok");
  long long n = JINT(health, path);
  json_decref(health);
  return n;
}

static size_t jobs_listed(struct gpulabd *d) {
  json_t *list = http_get_json(d, "/jobs?limit=1000");
  size_t n = json_array_size(json_at(list, "jobs"));
  json_decref(list);
  return n;
}

/* POSTs to /type on A and checks the finished job's runs; returns it (caller decrefs). */
static json_t *run_ok(const char *type, const char *body, const char *const *labels, int n) {
  char path[32];
  snprintf(path, sizeof path, "/%s", type);
  json_t *job = job_post_done(&A, "cpu", path, type, body);
  check_run_labels(job, labels, n);
  return job;
}

/* ---- routes ---- */

static void test_index_health_device(void) {
  json_t *index = http_get_json(&A, "/");
  CHECK_STR_EQ(JSTR(index, "service"), "gpulabd");
  static const char *const routes[] = {"POST /jobs", "GET /jobs", "GET /jobs/{id}",
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
  json_decref(
      run_ok("transpose", "{\"m\":47,\"n\":33,\"variant\":\"all\"," FAST "}", transpose_all,
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
  json_t *job =
      run_ok("pipeline", "{\"chunk\":1000,\"chunks\":3,\"streams\":[1,3],\"terms\":8," FAST "}",
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
  json_t *job =
      job_post_done(&A, "cpu", "/jobs", "stencil",
                    "{\"type\":\"stencil\",\"params\":{\"n\":1000,\"radius\":2," FAST "}}");
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
  http_request(&A, "DELETE", path, NULL, NULL, 0, &r);
  CHECK_ERROR(&r, 409, "job_finished", "id");
  http_reply_free(&r);
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
  json_t *job = job_wait_final(&A, ids[0], 60);
  CHECK_JOB_DONE(job, "transpose", "cpu");
  check_run_labels(job, transpose_all, N_TRANSPOSE);
  json_decref(job);
  job = job_wait_final(&A, ids[1], 60);
  CHECK_JOB_DONE(job, "stencil", "cpu");
  check_run_labels(job, stencil_all, N_STENCIL);
  CHECK_INT_EQ(JINT(job, "result.runs[0].timing.batches"), 5);
  json_decref(job);
}

/* ---- errors ---- */

struct bad_request {
  const char *path, *body;
  int status;
  const char *code, *field; /* field NULL: null */
};

/* Every one is refused before a job exists. */
static const struct bad_request bad_bodies[] = {
    {"/transpose", "{\"m\":33,", 400, "invalid_json", NULL},
    {"/transpose", "{\"m\":33,}", 400, "invalid_json", NULL},
    {"/transpose", "{\"m\":33} x", 400, "invalid_json", NULL},
    {"/transpose", "{\"m\":NaN}", 400, "invalid_json", NULL},
    {"/transpose", "{\"m\":Infinity}", 400, "invalid_json", NULL},
    {"/transpose", "{\"m\":1000000000000000000000000000000}", 400, "invalid_json", NULL},
    {"/transpose", "{\"m\":33,\"m\":34}", 400, "invalid_json", NULL},
    {"/transpose", "{\"\xff\":1}", 400, "invalid_json", NULL},
    {"/transpose", "'m'", 400, "invalid_json", NULL},
    {"/transpose", "[1]", 400, "wrong_type", NULL},
    {"/transpose", "[]", 400, "wrong_type", NULL},
    {"/transpose", "{\"m\":\"x\"}", 400, "wrong_type", "m"},
    {"/transpose", "{\"m\":\"33\"}", 400, "wrong_type", "m"},
    {"/transpose", "{\"m\":4.5}", 400, "wrong_type", "m"},
    {"/transpose", "{\"m\":1e3}", 400, "wrong_type", "m"},
    {"/transpose", "{\"m\":null}", 400, "wrong_type", "m"},
    {"/transpose", "{\"n\":true}", 400, "wrong_type", "n"},
    {"/transpose", "{\"m\":[33]}", 400, "wrong_type", "m"},
    {"/transpose", "{\"m\":0}", 400, "out_of_range", "m"},
    {"/transpose", "{\"m\":-5}", 400, "out_of_range", "m"},
    {"/transpose", "{\"m\":2147483648}", 400, "out_of_range", "m"},
    {"/transpose", "{\"m\":4294967329}", 400, "out_of_range", "m"}, /* 2^32 + 33 */
    {"/transpose", "{\"m\":-9223372036854775808}", 400, "out_of_range", "m"},
    {"/transpose", "{\"n\":1048577}", 400, "out_of_range", "n"},
    {"/transpose", "{\"seed\":-1}", 400, "out_of_range", "seed"},
    {"/transpose", "{\"warmup\":-1}", 400, "out_of_range", "warmup"},
    {"/transpose", "{\"batches\":0}", 400, "out_of_range", "batches"},
    {"/transpose", "{\"batches\":101}", 400, "out_of_range", "batches"},
    {"/transpose", "{\"reps\":0}", 400, "out_of_range", "reps"},
    {"/transpose", "{\"foo\":1}", 400, "unknown_field", "foo"},
    {"/transpose", "{\"m\":33,\"k\":3}", 400, "unknown_field", "k"},
    {"/transpose", "{\"streams\":1}", 400, "unknown_field", "streams"},
    {"/transpose", "{\"variant\":\"bogus\"}", 400, "unknown_variant", "variant"},
    {"/transpose", "{\"variant\":[\"naive\",\"bogus\"]}", 400, "unknown_variant", "variant"},
    {"/transpose", "{\"variant\":\"cublas\"}", 400, "unknown_variant", "variant"},
    {"/transpose", "{\"variant\":[\"naive\",\"naive\"]}", 400, "duplicate_variant", "variant"},
    {"/transpose", "{\"variant\":[]}", 400, "out_of_range", "variant"},
    {"/transpose", "{\"variant\":3}", 400, "wrong_type", "variant"},
    {"/transpose", "{\"variant\":[3]}", 400, "wrong_type", "variant"},
    {"/gemm", "{\"k\":0}", 400, "out_of_range", "k"},
    {"/gemm", "{\"radius\":1}", 400, "unknown_field", "radius"},
    {"/stencil", "{\"radius\":100000}", 400, "out_of_range", "radius"},
    {"/stencil", "{\"radius\":-1}", 400, "out_of_range", "radius"},
    {"/stencil", "{\"n\":0}", 400, "out_of_range", "n"},
    {"/stencil", "{\"variant\":\"tiled\"}", 400, "unknown_variant", "variant"},
    {"/pipeline", "{\"variant\":\"naive\"}", 400, "unknown_field", "variant"},
    {"/pipeline", "{\"streams\":[1,33]}", 400, "out_of_range", "streams"},
    {"/pipeline", "{\"streams\":0}", 400, "out_of_range", "streams"},
    {"/pipeline", "{\"streams\":[]}", 400, "out_of_range", "streams"},
    {"/pipeline", "{\"streams\":[1,2,3,4,5,6,7,8,9]}", 400, "out_of_range", "streams"},
    {"/pipeline", "{\"streams\":\"x\"}", 400, "wrong_type", "streams"},
    {"/pipeline", "{\"streams\":[1,\"x\"]}", 400, "wrong_type", "streams"},
    {"/pipeline", "{\"chunk\":0}", 400, "out_of_range", "chunk"},
    {"/pipeline", "{\"chunks\":65}", 400, "out_of_range", "chunks"},
    {"/pipeline", "{\"terms\":0}", 400, "out_of_range", "terms"},
    {"/jobs", "", 400, "missing_field", "type"},
    {"/jobs", "{}", 400, "missing_field", "type"},
    {"/jobs", "{\"params\":{}}", 400, "missing_field", "type"},
    {"/jobs", "{\"type\":\"fft\"}", 400, "unknown_type", "type"},
    {"/jobs", "{\"type\":1}", 400, "wrong_type", "type"},
    {"/jobs", "{\"type\":null}", 400, "wrong_type", "type"},
    {"/jobs", "{\"type\":\"gemm\",\"extra\":1}", 400, "unknown_field", "extra"},
    {"/jobs", "{\"type\":\"gemm\",\"params\":{\"m\":0}}", 400, "out_of_range", "params.m"},
    {"/jobs", "{\"type\":\"gemm\",\"params\":{\"m\":\"x\"}}", 400, "wrong_type", "params.m"},
    {"/jobs", "{\"type\":\"gemm\",\"params\":{\"foo\":1}}", 400, "unknown_field", "params.foo"},
    {"/jobs", "{\"type\":\"gemm\",\"params\":{\"variant\":\"x\"}}", 400, "unknown_variant",
     "params.variant"},
    {"/jobs", "{\"type\":\"stencil\",\"params\":{\"radius\":100000}}", 400, "out_of_range",
     "params.radius"},
    {"/jobs", "{\"type\":\"gemm\",\"params\":[1]}", 400, "wrong_type", "params"},
    {"/jobs", "[]", 400, "wrong_type", NULL},
    {"/jobs", "{\"type\":", 400, "invalid_json", NULL},
    {"/transpose?wait=abc", SMALL_TRANSPOSE, 400, "wrong_type", "wait"},
    {"/transpose?wait=-1", SMALL_TRANSPOSE, 400, "out_of_range", "wait"},
    {"/transpose?wait=601", SMALL_TRANSPOSE, 400, "out_of_range", "wait"},
    {"/transpose?wait=nan", SMALL_TRANSPOSE, 400, "wrong_type", "wait"},
    {"/jobs?wait=abc", "{\"type\":\"transpose\",\"params\":" SMALL_TRANSPOSE "}", 400, "wrong_type",
     "wait"},
    {"/transpose", "{\"m\":1048576,\"n\":1048576}", 413, "job_too_large", NULL},
    {"/gemm", "{\"m\":1048576,\"n\":1048576,\"k\":1048576}", 413, "job_too_large", NULL},
    {"/jobs", "{\"type\":\"transpose\",\"params\":{\"m\":1048576,\"n\":1048576}}", 413,
     "job_too_large", NULL},
};

static void test_bad_bodies(void) {
  for (size_t i = 0; i < sizeof bad_bodies / sizeof bad_bodies[0]; i++) {
    const struct bad_request *b = &bad_bodies[i];
    struct http_reply r;
    http_post_json(&A, b->path, b->body, &r);
    const char *code = json_string_value(json_at(r.json, "code"));
    fprintf(stderr, "  POST %s %s -> %ld %s\n", b->path, b->body, r.status, code ? code : "-");
    CHECK_ERROR(&r, b->status, b->code, b->field);
    http_reply_free(&r);
  }
  /* Messages that must say more than the code. */
  struct http_reply r;
  http_post_json(&A, "/transpose", "{\"m\":33,,}", &r);
  CHECK_ERROR(&r, 400, "invalid_json", NULL);
  CHECK(strstr(JSTR(r.json, "detail"), "byte"));
  http_reply_free(&r);
  http_post_json(&A, "/transpose", "{\"variant\":\"bogus\"}", &r);
  const char *msg = JSTR(r.json, "detail");
  CHECK(strstr(msg, "bogus") && strstr(msg, "naive") && strstr(msg, "shared32") &&
        strstr(msg, "padded33") && strstr(msg, "copy"));
  http_reply_free(&r);
  http_post_json(&A, "/transpose", "{\"m\":1048576,\"n\":1048576}", &r);
  msg = JSTR(r.json, "detail");
  CHECK(strstr(msg, "bytes") && strstr(msg, "30786325577728")); /* (a + 5 run outputs + the job output) * 4 * 2^40 */
  http_reply_free(&r);
  http_post_json(&A, "/transpose", "{\"m\":0}", &r);
  CHECK(strstr(JSTR(r.json, "detail"), "1048576")); /* the allowed range */
  http_reply_free(&r);
  /* A NUL byte inside the body. */
  http_request(&A, "POST", "/transpose", "application/json", "{\"m\":33}\0", 9, &r);
  CHECK_ERROR(&r, 400, "invalid_json", NULL);
  http_reply_free(&r);
}

/* Bodies around --max-body, sized and chunked. */
static void test_body_limit(void) {
  static char body[10001];
  struct http_reply r;
  size_t sizes[] = {MAX_BODY - 1, MAX_BODY, MAX_BODY + 1, 10000};
  for (size_t i = 0; i < 4; i++) {
    /* {"foo":"xxx..."}: a valid object whose only fault is its unknown field */
    size_t n = sizes[i];
    memset(body, 'x', n);
    memcpy(body, "{\"foo\":\"", 8);
    memcpy(body + n - 2, "\"}", 2);
    body[n] = '\0';
    for (unsigned flags = 0; flags <= HTTP_CHUNKED; flags += HTTP_CHUNKED) {
      http_client_request(&A.http, "POST", "/transpose", "application/json", body, n, flags, &r);
      fprintf(stderr, "  POST /transpose with %zu bytes%s -> %ld\n", n, flags ? " (chunked)" : "",
              r.status);
      if (n <= MAX_BODY)
        CHECK_ERROR(&r, 400, "unknown_field", "foo");
      else
        CHECK_ERROR(&r, 413, "body_too_large", NULL);
      http_reply_free(&r);
      /* The connection (or a new one) still serves. */
      http_get(&A, "/health", &r);
      CHECK_STATUS(&r, 200);
      http_reply_free(&r);
    }
  }
  /* A big value that is not a string, just under the limit: a normal 400. */
  memset(body, ' ', MAX_BODY);
  memcpy(body, "{\"m\":", 5);
  memcpy(body + MAX_BODY - 3, "-1}", 3);
  http_request(&A, "POST", "/transpose", "application/json", body, MAX_BODY, &r);
  CHECK_ERROR(&r, 400, "out_of_range", "m");
  http_reply_free(&r);
  /* Nesting deeper than the parser allows. */
  memset(body, '[', 3000);
  http_request(&A, "POST", "/transpose", "application/json", body, 3000, &r);
  CHECK_ERROR(&r, 400, "invalid_json", NULL);
  http_reply_free(&r);
}

struct bad_call {
  const char *method, *path, *content_type;
  int status;
  const char *code, *field, *allow; /* allow: methods the Allow header must list */
};

static const struct bad_call bad_calls[] = {
    {"GET", "/nope", NULL, 404, "not_found", NULL, NULL},
    {"POST", "/nope", "text/plain", 404, "not_found", NULL, NULL},
    {"GET", "/transpose/x", NULL, 404, "not_found", NULL, NULL},
    {"GET", "/jobs/", NULL, 404, "not_found", NULL, NULL},
    {"GET", "/jobs/1/result", NULL, 404, "not_found", NULL, NULL},
    {"GET", "/health/", NULL, 404, "not_found", NULL, NULL},
    {"GET", "/jobs/999999", NULL, 404, "job_not_found", "id", NULL},
    {"DELETE", "/jobs/999999", NULL, 404, "job_not_found", "id", NULL},
    {"GET", "/jobs/abc", NULL, 404, "job_not_found", "id", NULL},
    {"GET", "/jobs/0", NULL, 404, "job_not_found", "id", NULL},
    {"GET", "/jobs/-1", NULL, 404, "job_not_found", "id", NULL},
    {"GET", "/jobs/01", NULL, 404, "job_not_found", "id", NULL},
    {"GET", "/jobs/99999999999999999999999", NULL, 404, "job_not_found", "id", NULL},
    {"DELETE", "/transpose", NULL, 405, "method_not_allowed", NULL, "POST"},
    {"GET", "/transpose", NULL, 405, "method_not_allowed", NULL, "POST"},
    {"PUT", "/gemm", "application/json", 405, "method_not_allowed", NULL, "POST"},
    {"PUT", "/jobs", "application/json", 405, "method_not_allowed", NULL, "GET POST"},
    {"DELETE", "/jobs", NULL, 405, "method_not_allowed", NULL, "GET POST"},
    {"OPTIONS", "/jobs", NULL, 405, "method_not_allowed", NULL, "GET POST"},
    {"POST", "/health", "application/json", 405, "method_not_allowed", NULL, "GET"},
    {"POST", "/device", "application/json", 405, "method_not_allowed", NULL, "GET"},
    {"DELETE", "/", NULL, 405, "method_not_allowed", NULL, "GET"},
    {"POST", "/jobs/1", "application/json", 405, "method_not_allowed", NULL, "GET DELETE"},
    {"POST", "/transpose", "application/xml", 415, "unsupported_media_type", NULL, NULL},
    {"POST", "/transpose", "multipart/form-data; boundary=x", 415, "unsupported_media_type", NULL,
     NULL},
    {"POST", "/transpose", "application/jsonx", 415, "unsupported_media_type", NULL, NULL},
    {"POST", "/jobs", "text/html", 415, "unsupported_media_type", NULL, NULL},
};

/* A browser's fetch() with a string body and no Content-Type sends
 * "text/plain;charset=UTF-8": taken when the body parses as JSON, else 415. */
static void test_plain_text(void) {
  struct http_reply r;
  http_request(&A, "POST", "/transpose", "text/plain;charset=UTF-8", SMALL_TRANSPOSE, strlen(SMALL_TRANSPOSE), &r);
  CHECK_STATUS(&r, 200);
  CHECK_STR_EQ(JSTR(r.json, "state"), "done");
  http_reply_free(&r);
  const char *job = "{\"type\":\"transpose\",\"params\":{\"m\":3,\"n\":2}}";
  http_request(&A, "POST", "/jobs", "Text/Plain", job, strlen(job), &r);
  CHECK_STATUS(&r, 200);
  http_reply_free(&r);
  http_request(&A, "POST", "/transpose", "text/plain;charset=UTF-8", "m=4&n=4", 7, &r);
  CHECK_ERROR(&r, 415, "unsupported_media_type", NULL);
  CHECK(strstr(JSTR(r.json, "detail"), "text/plain"));
  http_reply_free(&r);
  http_request(&A, "POST", "/transpose", "text/plain", "{\"m\":0}", 7, &r); /* JSON: then checked as such */
  CHECK_ERROR(&r, 400, "out_of_range", "m");
  http_reply_free(&r);
}

/* Each method named in `want` (space-separated) is a token of the Allow header. */
static void check_allow(const char *allow, const char *want) {
  char methods[64];
  snprintf(methods, sizeof methods, "%s", want);
  for (char *save, *m = strtok_r(methods, " ", &save); m; m = strtok_r(NULL, " ", &save)) {
    bool found = false;
    const char *p = allow;
    size_t n = strlen(m);
    for (; !found && (p = strstr(p, m)); p += n)
      found = (p == allow || p[-1] == ' ' || p[-1] == ',') && (p[n] == ',' || p[n] == '\0');
    if (!found) CHECK_FAIL_("Allow: %s lacks %s", allow, m);
  }
}

static void test_bad_calls(void) {
  for (size_t i = 0; i < sizeof bad_calls / sizeof bad_calls[0]; i++) {
    const struct bad_call *b = &bad_calls[i];
    struct http_reply r;
    const char *body = b->content_type ? SMALL_TRANSPOSE : NULL;
    http_request(&A, b->method, b->path, b->content_type, body, body ? strlen(body) : 0, &r);
    fprintf(stderr, "  %s %s (%s) -> %ld\n", b->method, b->path,
            b->content_type ? b->content_type : "no body", r.status);
    CHECK_ERROR(&r, b->status, b->code, b->field);
    if (b->allow) {
      CHECK(r.allow != NULL);
      check_allow(r.allow, b->allow);
    }
    http_reply_free(&r);
  }
}

static void test_errors(void) {
  long long submitted = health_int(&A, "jobs_submitted");
  size_t listed = jobs_listed(&A);
  test_bad_bodies();
  test_body_limit();
  test_bad_calls();
  /* Not one refused request left a job behind, and the service is fine. */
  CHECK_INT_EQ(health_int(&A, "jobs_submitted"), submitted);
  CHECK_INT_EQ(jobs_listed(&A), listed);
  test_plain_text(); /* two accepted, two refused */
  CHECK_INT_EQ(health_int(&A, "jobs_submitted"), submitted + 2);
}

/* ---- GET /jobs ---- */

/* GET path: a list newest first, of summaries (no result). Caller decrefs. */
static json_t *list(struct gpulabd *d, const char *path) {
  json_t *page = http_get_json(d, path);
  json_t *jobs = json_at(page, "jobs"), *next = json_at(page, "next_cursor"), *job;
  CHECK(json_is_array(jobs));
  CHECK(next && (json_is_null(next) || json_is_integer(next)));
  size_t i;
  json_array_foreach(jobs, i, job) {
    CHECK(i == 0 || JINT(job, "id") < JINT(json_array_get(jobs, i - 1), "id"));
    CHECK(json_object_get(job, "result") == NULL);
    CHECK(json_is_object(json_object_get(job, "params")));
    CHECK(is_rfc3339_utc(JSTR(job, "created_at")));
    if (strcmp(JSTR(job, "state"), "done") == 0) CHECK(JBOOL(job, "passed"));
  }
  return page;
}

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
  http_request(&B, "DELETE", path, NULL, NULL, 0, &r);
  CHECK_ERROR(&r, 409, "job_finished", "id");
  http_reply_free(&r);
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

static int start(void) {
  static const char *const args_a[] = {
      "--backend", "cpu", "--streams", "2", "--max-body", "4096", "--http-threads", "2", NULL};
  static const char *const args_b[] = {
      "--backend", "cpu",          "--streams",    "1", "--http-threads",
      "2",         "--max-queued", MAX_QUEUED_ARG, "--grace", "1", NULL};
  gpulabd_start(args_a, &A);
  gpulabd_start(args_b, &B);
  return 0;
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
  gpulabd_stop(&B);
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
    TEST(test_errors),
    TEST(test_cancel),
    TEST(test_concurrency),
    TEST_AFTER(test_defaults_finish, test_defaults_start),
    TEST_AFTER_ALL(test_list), /* the jobs of the cases before */
    TEST_AFTER_ALL(test_none_failed),
    TEST(test_shutdown), /* last: it stops B */
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = start, .teardown = stop};
