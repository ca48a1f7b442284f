/* HTTP tests of reduce, scan and histogram on the CPU backend: POST /reduce, /scan and
 * /histogram with their runs, figures and work counts; their params' errors named by
 * field with the range; x's shape setting n; a reduce's output chained into a scan; a
 * histogram's uint32 counts kept, listed and downloaded as a '<u4' .npy; and those
 * counts refused as any job's input (400 dtype_mismatch). Small sizes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_client.h"
#include "runner.h"

#define FAST "\"warmup\":0,\"batches\":1,\"reps\":1"

static struct gpulabd D;

/* POSTs body to path; expects the problem with the field, its detail containing part. */
static void refused(const char *path, const char *body, long status, const char *code,
                    const char *field, const char *part) {
  struct http_reply r;
  http_post_json(&D, path, body, &r);
  fprintf(stderr, "  POST %s %s -> %ld %.300s\n", path, body, r.status, r.body);
  CHECK_ERROR(&r, status, code, field);
  if (part && !strstr(JSTR(r.json, "detail"), part))
    CHECK_FAIL_("message \"%s\" lacks \"%s\"", JSTR(r.json, "detail"), part);
  http_reply_free(&r);
}

/* Every variant of each; cub is listed, unavailable here, with the reason. Returns the
 * job ids (reduce's and histogram's outputs kept). */
static void check_jobs(long long *reduce_id, long long *histogram_id) {
  json_t *job = job_post_done(&D, "cpu", "/reduce", "reduce",
                              "{\"n\":1000003,\"keep_output\":true," FAST "}");
  static const char *const reduce_runs[] = {"naive", "shared", "warp", "best", "cub"};
  check_run_labels(job, reduce_runs, 5);
  CHECK_STR_EQ(JSTR(job, "result.unit"), "GB/s");
  CHECK(JNUM(job, "result.work") == 4 * 1000003LL);
  CHECK_STR_EQ(JSTR(job, "result.runs[4].reason"), "CUB needs the CUDA backend");
  CHECK(!JBOOL(job, "result.runs[4].available"));
  CHECK_STR_EQ(JSTR(job, "result.runs[3].kernel.name"), "cpu_reduce_best");
  CHECK_STR_EQ(JSTR(job, "result.runs[0].check.reference"), "cpu fp64 sum");
  CHECK_STR_EQ(JSTR(job, "output.dtype"), "float32");
  CHECK_INT_EQ(JINT(job, "output.shape[0]"), 1);
  *reduce_id = JINT(job, "id");
  json_decref(job);

  job = job_post_done(&D, "cpu", "/scan", "scan",
                      "{\"n\":4097,\"variant\":[\"best\",\"naive\",\"cub\"]," FAST "}");
  static const char *const scan_runs[] = {"best", "naive", "cub"};
  check_run_labels(job, scan_runs, 3);
  CHECK(JNUM(job, "result.work") == 8 * 4097LL);
  CHECK_INT_EQ(JINT(job, "result.runs[0].check.compared"), 4097);
  json_decref(job);

  job = job_post_done(&D, "cpu", "/histogram", "histogram",
                      "{\"n\":100003,\"bins\":65536,\"keep_output\":true," FAST "}");
  static const char *const histogram_runs[] = {"naive", "shared", "best", "cub"};
  check_run_labels(job, histogram_runs, 4);
  CHECK_INT_EQ(JINT(job, "params.bins"), 65536);
  CHECK(JNUM(job, "result.work") == 4 * 100003LL + 4 * 65536LL);
  CHECK_INT_EQ(JINT(job, "result.runs[2].check.compared"), 65536);
  CHECK(JNUM(job, "result.runs[2].check.tolerance") == 0);
  CHECK_STR_EQ(JSTR(job, "output.dtype"), "uint32");
  CHECK_INT_EQ(JINT(job, "output.shape[0]"), 65536);
  *histogram_id = JINT(job, "id");
  json_decref(job);

  job = job_post_done(&D, "cpu", "/jobs?wait=30", "histogram",
                      "{\"type\":\"histogram\",\"params\":{\"n\":1,\"bins\":1," FAST "}}");
  CHECK_INT_EQ(JINT(job, "params.n"), 1);
  json_decref(job);
}

/* The kept counts: listed as uint32, downloaded as a '<u4' .npy whose counts sum to n
 * (every generated value lies in [-1, 1)). */
static long long check_counts(long long histogram_id) {
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", histogram_id);
  json_t *job = http_get_json(&D, path);
  long long buffer = JINT(job, "output.buffer");
  json_decref(job);
  snprintf(path, sizeof path, "/buffers/%lld", buffer);
  struct http_reply r;
  http_get(&D, path, &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK_STR_EQ(r.content_type, "application/x-npy");
  CHECK(r.body_len == 128 + 65536 * 4);
  CHECK(memmem(r.body, 128, "'descr': '<u4'", 14) != NULL);
  CHECK(memmem(r.body, 128, "'shape': (65536,)", 17) != NULL);
  unsigned long long sum = 0;
  for (size_t b = 0; b < 65536; b++) {
    uint32_t count;
    memcpy(&count, r.body + 128 + 4 * b, 4);
    sum += count;
  }
  CHECK_INT_EQ(sum, 100003);
  http_reply_free(&r);
  json_t *list = http_get_json(&D, "/buffers");
  bool listed = false;
  for (size_t i = 0; i < json_array_size(json_object_get(list, "buffers")); i++) {
    json_t *b = json_array_get(json_object_get(list, "buffers"), i);
    if (JINT(b, "id") != buffer) continue;
    CHECK_STR_EQ(JSTR(b, "dtype"), "uint32");
    CHECK_INT_EQ(JINT(b, "bytes"), 65536 * 4);
    listed = true;
  }
  CHECK(listed);
  json_decref(list);
  return buffer;
}

/* Inputs: x's shape sets n (a 2-D buffer: its element count); a reduce's one float
 * chains into a scan; counts are no input of any job, as a buffer or a job's output. */
static void check_inputs(long long reduce_id, long long histogram_id, long long counts) {
  static const float x[6] = {0.5f, -0.25f, 1.5f, 0.75f, -1.0f, 0.125f};
  struct http_reply r;
  http_request(&D, "POST", "/buffers?shape=2,3", "application/octet-stream", (const char *)x,
               sizeof x, &r);
  CHECK_STATUS(&r, 201);
  long long buf = JINT(r.json, "id");
  CHECK_STR_EQ(JSTR(r.json, "dtype"), "float32");
  http_reply_free(&r);
  char body[256];
  snprintf(body, sizeof body, "{\"x\":{\"buffer\":%lld},\"bins\":4," FAST "}", buf);
  json_t *job = job_post_done(&D, "cpu", "/histogram", "histogram", body);
  CHECK_INT_EQ(JINT(job, "params.n"), 6);
  json_decref(job);
  snprintf(body, sizeof body, "{\"x\":{\"buffer\":%lld},\"variant\":\"best\"," FAST "}", buf);
  job = job_post_done(&D, "cpu", "/reduce", "reduce", body);
  CHECK_INT_EQ(JINT(job, "params.n"), 6);
  json_decref(job);
  snprintf(body, sizeof body, "{\"x\":{\"buffer\":%lld},\"n\":5," FAST "}", buf);
  refused("/scan", body, 400, "shape_mismatch", "x", "(2, 3)");
  snprintf(body, sizeof body, "{\"x\":{\"job\":%lld}," FAST "}", reduce_id);
  job = job_post_done(&D, "cpu", "/scan", "scan", body);
  CHECK_INT_EQ(JINT(job, "params.n"), 1);
  json_decref(job);

  snprintf(body, sizeof body, "{\"x\":{\"job\":%lld}," FAST "}", histogram_id);
  refused("/scan", body, 400, "dtype_mismatch", "x", "uint32");
  snprintf(body, sizeof body, "{\"x\":{\"buffer\":%lld}," FAST "}", counts);
  refused("/histogram", body, 400, "dtype_mismatch", "x", "a histogram job reads float32");
  snprintf(body, sizeof body, "{\"type\":\"stencil\",\"params\":{\"x\":{\"buffer\":%lld}}}",
           counts);
  refused("/jobs", body, 400, "dtype_mismatch", "params.x", "buffer");
}

/* Params: named with their range, or as unknown. */
static void test_errors(void) {
  refused("/reduce", "{\"n\":0}", 400, "out_of_range", "n", "between 1 and 1073741824, got 0");
  refused("/scan", "{\"n\":268435457}", 400, "out_of_range", "n", "between 1 and 268435456");
  refused("/histogram", "{\"bins\":0}", 400, "out_of_range", "bins", "between 1 and 65536, got 0");
  refused("/histogram", "{\"bins\":65537}", 400, "out_of_range", "bins", "between 1 and 65536");
  refused("/histogram", "{\"bins\":\"7\"}", 400, "wrong_type", "bins", "integer");
  refused("/reduce", "{\"bins\":3}", 400, "unknown_field", "bins", NULL);
  refused("/scan", "{\"variant\":\"warp\"}", 400, "unknown_variant", "variant",
          "naive, shared, best, cub");
  refused("/jobs", "{\"type\":\"histogram\",\"params\":{\"bins\":70000}}", 400, "out_of_range",
          "params.bins", NULL);
  refused("/jobs", "{\"type\":\"reduce\",\"params\":{\"n\":2147483648}}", 400, "out_of_range",
          "params.n", NULL);
}

/* The dashboard's source: each type with its variants, inputs, params and ranges. */
static void test_experiments_json(void) {
  json_t *x = http_get_json(&D, "/static/experiments.json");
  CHECK_STR_EQ(JSTR(x, "types.reduce.variants[2]"), "warp");
  CHECK_STR_EQ(JSTR(x, "types.scan.variants[3]"), "cub");
  CHECK_STR_EQ(JSTR(x, "types.histogram.inputs[0]"), "x");
  CHECK_INT_EQ(JINT(x, "types.histogram.defaults.bins"), 256);
  CHECK_INT_EQ(JINT(x, "types.scan.defaults.n"), 1 << 22);
  json_decref(x);
}

static int start(void) {
  static const char *const args[] = {"--backend", "cpu", NULL};
  gpulabd_start(args, &D);
  return 0;
}

static void stop(void) { gpulabd_stop(&D); }

/* What the cases after test_jobs start from: its two jobs and the counts' buffer. */
static long long reduce_id, histogram_id, counts_id;

static void test_jobs(void) { check_jobs(&reduce_id, &histogram_id); }
static void test_counts(void) { counts_id = check_counts(histogram_id); }
static void test_inputs(void) { check_inputs(reduce_id, histogram_id, counts_id); }

static const struct test_case cases[] = {
    TEST(test_jobs),   TEST_AFTER(test_counts, test_jobs), TEST_AFTER(test_inputs, test_counts),
    TEST(test_errors), TEST(test_experiments_json),        TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = start, .teardown = stop};
