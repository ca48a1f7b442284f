/* Several devices in one gpulabd, tested on two CPU "devices" (--backend cpu
 * --devices 0,1): placement (pinned, where the data lives, least loaded), buffers
 * on a chosen device, chains that cross devices, and exclusive timing per device. */
#include <stdio.h>
#include <string.h>

#include "tests/http_client.h"
#include "tests/runner.h"

static struct gpulabd d;

#define SMALL "\"m\":33,\"n\":47,\"variant\":\"naive\",\"warmup\":0,\"batches\":1,\"reps\":1"
/* A stencil that keeps a CPU device busy for a while (about a second). */
#define SLOW \
  "\"n\":2000000,\"radius\":64,\"variant\":\"naive\",\"warmup\":0,\"batches\":6,\"reps\":1"

static void test_devices_route(void) {
  json_t *list = http_get_json(&d, "/devices");
  CHECK_INT_EQ(json_array_size(json_at(list, "devices")), 2);
  CHECK_INT_EQ(JINT(list, "devices[1].index"), 1);
  CHECK_STR_EQ(JSTR(list, "devices[1].backend"), "cpu");
  json_decref(list);
  json_t *one = http_get_json(&d, "/device");
  CHECK_INT_EQ(JINT(one, "device_count"), 2);
  json_decref(one);
}

static void test_pinned(void) {
  for (int dev = 0; dev < 2; dev++) {
    char body[256];
    snprintf(body, sizeof body, "{" SMALL ",\"device\":%d}", dev);
    json_t *job = HTTP_POST_EXPECT(&d, "/transpose", body, 200);
    CHECK_INT_EQ(JINT(job, "device"), dev);
    CHECK(JBOOL(job, "result.passed"));
    json_decref(job);
  }
  struct http_reply r;
  http_post_json(&d, "/transpose", "{" SMALL ",\"device\":2}", &r);
  CHECK_ERROR(&r, 400, "out_of_range", "device");
  http_reply_free(&r);
}

/* A job goes where its input buffer lives; a chain may cross devices. */
static void test_data_affinity_and_chain(void) {
  float data[6] = {1, 2, 3, 4, 5, 6};
  struct http_reply r;
  http_request(&d, "POST", "/buffers?shape=2,3&device=1", "application/octet-stream",
               (const char *)data, sizeof data, &r);
  CHECK_STATUS(&r, 201);
  long long buf = JINT(r.json, "id");
  CHECK_INT_EQ(JINT(r.json, "device"), 1);
  http_reply_free(&r);
  char body[256];
  snprintf(body, sizeof body,
           "{\"a\":{\"buffer\":%lld},\"variant\":\"naive\",\"warmup\":0,"
           "\"batches\":1,\"reps\":1,\"keep_output\":true}",
           buf);
  json_t *first = HTTP_POST_EXPECT(&d, "/transpose", body, 200);
  CHECK_INT_EQ(JINT(first, "device"), 1);
  /* The child is pinned to device 0 and reads device 1's output. */
  snprintf(body, sizeof body,
           "{\"a\":{\"job\":%lld},\"variant\":\"shared32\",\"warmup\":0,"
           "\"batches\":1,\"reps\":1,\"device\":0,\"keep_output\":true}",
           JINT(first, "id"));
  json_t *second = HTTP_POST_EXPECT(&d, "/transpose", body, 200);
  CHECK_INT_EQ(JINT(second, "device"), 0);
  CHECK(JBOOL(second, "result.passed"));
  char path[64];
  snprintf(path, sizeof path, "/buffers/%lld", JINT(second, "output.buffer"));
  http_request(&d, "GET", path, NULL, NULL, 0, &r);
  CHECK_INT_EQ(r.status, 200); /* a .npy, not JSON */
  CHECK(r.body_len >= sizeof data);
  CHECK(memcmp(r.body + r.body_len - sizeof data, data, sizeof data) == 0); /* A^T^T == A */
  http_reply_free(&r);
  json_decref(first);
  json_decref(second);
}

/* Independent jobs spread over the devices, and exclusive timing is per device:
 * two exclusive jobs on two devices run at the same time, each uncontended. */
static void test_spread_and_exclusive_per_device(void) {
  json_t *a = HTTP_POST_EXPECT(&d, "/stencil?wait=0", "{" SLOW "}", 202);
  json_t *b = HTTP_POST_EXPECT(&d, "/stencil?wait=0", "{" SLOW "}", 202);
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", JINT(a, "id"));
  json_decref(a);
  a = job_wait_final(&d, JINT(b, "id") - 1, 60);
  json_t *bb = job_wait_final(&d, JINT(b, "id"), 60);
  json_decref(b);
  CHECK_STR_EQ(JSTR(a, "state"), "done");
  CHECK_STR_EQ(JSTR(bb, "state"), "done");
  CHECK(JINT(a, "device") != JINT(bb, "device")); /* least loaded: one each */
  CHECK(!JBOOL(a, "result.runs[0].contended"));
  CHECK(!JBOOL(bb, "result.runs[0].contended"));
  double a0 = json_clock_s(a, "started_at"), a1 = json_clock_s(a, "finished_at");
  double b0 = json_clock_s(bb, "started_at"), b1 = json_clock_s(bb, "finished_at");
  CHECK(a0 < b1 && b0 < a1); /* their runs overlapped in time */
  json_decref(a);
  json_decref(bb);
}

static int start(void) {
  const char *args[] = {"--backend", "cpu", "--devices", "0,1", "--streams", "1", NULL};
  gpulabd_start(args, &d);
  return 0;
}

static void stop(void) { gpulabd_stop(&d); }

static const struct test_case cases[] = {
    TEST(test_devices_route),
    TEST(test_pinned),
    TEST(test_data_affinity_and_chain),
    TEST(test_spread_and_exclusive_per_device),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = start, .teardown = stop};
