/* Every error the API promises, against a real gpulabd on the CPU backend (A, its
 * --max-body 4096): bad bodies, the body limit, bad calls and their Allow, plain text;
 * no refused request leaves a job behind. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http_client.h"
#include "http_common.h"
#include "kernels/core/experiment.h"
#include "runner.h"

/* ---- errors ---- */

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
  CHECK(strstr(msg, "bytes") &&
        strstr(msg, "30786325577728")); /* (a + 5 run outputs + the job output) * 4 * 2^40 */
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
      HTTP_EXPECT(&A, "GET", "/health", 200, NULL, NULL);
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
  http_request(&A, "POST", "/transpose", "text/plain;charset=UTF-8", SMALL_TRANSPOSE,
               strlen(SMALL_TRANSPOSE), &r);
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
  http_request(&A, "POST", "/transpose", "text/plain", "{\"m\":0}", 7,
               &r); /* JSON: then checked as such */
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

static void stop(void) { gpulabd_stop(&A); }

static const struct test_case cases[] = {
    TEST(test_errors),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = http_start_a, .teardown = stop};
