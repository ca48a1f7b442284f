/* "profile" on a real gpulabd's CPU backend: GET /device says how profiles are served
 * here, a job asking for one is taken and each run says why it has no counters, the
 * request's forms (body, /jobs' params, ?profile=) and their refusals; and the encoder's
 * profile of a run that has counters, from a recorded one. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api/encode.h"
#include "tests/http_client.h"
#include "tests/runner.h"

static struct gpulabd d;

#define FAST "\"m\":33,\"n\":47,\"warmup\":0,\"batches\":1,\"reps\":1"

static void refused(const char *path, const char *body, long status, const char *code,
                    const char *field) {
  struct http_reply r;
  http_post_json(&d, path, body, &r);
  CHECK_ERROR(&r, status, code, field);
  http_reply_free(&r);
}

static void test_device_says(void) {
  json_t *dev = http_get_json(&d, "/device");
  CHECK(!JBOOL(dev, "profiling.available"));
  CHECK_STR_EQ(JSTR(dev, "profiling.jobs"), "marked_unavailable");
  CHECK(strstr(JSTR(dev, "profiling.reason"), "CPU backend has no hardware counters"));
  json_decref(dev);
}

/* Every run of a job that asked says why it has none; the params echo the mode. */
static void check_marked(json_t *job, const char *mode) {
  CHECK_STR_EQ(JSTR(job, "state"), "done");
  CHECK_STR_EQ(JSTR(job, "params.profile"), mode);
  CHECK(JBOOL(job, "result.passed")); /* the timed runs are untouched */
  json_t *runs = json_at(job, "result.runs");
  CHECK(json_array_size(runs) >= 2);
  int marked = 0;
  for (size_t i = 0; i < json_array_size(runs); i++) {
    json_t *run = json_array_get(runs, i), *p = json_object_get(run, "profile");
    if (!json_is_true(json_object_get(run, "available"))) { /* nothing ran: no profile */
      CHECK(p == NULL);
      continue;
    }
    marked++;
    CHECK(json_is_object(p));
    CHECK(json_is_false(json_object_get(p, "available")));
    CHECK(strstr(json_string_value(json_object_get(p, "reason")), "no hardware counters"));
    CHECK_INT_EQ(json_object_size(p), 2);
  }
  CHECK(marked >= 2);
}

static void test_marked_per_run(void) {
  json_t *job = HTTP_POST_EXPECT(&d, "/transpose", "{" FAST ",\"profile\":true}", 200);
  check_marked(job, "counters");
  json_decref(job);
  job = HTTP_POST_EXPECT(
      &d, "/jobs?wait=60",
      "{\"type\":\"gemm\",\"params\":{\"m\":40,\"n\":24,\"k\":8,\"warmup\":0,\"batches\":1,"
      "\"reps\":1,\"profile\":\"full\"}}",
      200);
  check_marked(job, "full");
  json_decref(job);
}

static void test_query_overrides_body(void) {
  json_t *job = HTTP_POST_EXPECT(&d, "/transpose?profile=full", "{" FAST ",\"profile\":false}",
                                 200);
  check_marked(job, "full");
  json_decref(job);
  job = HTTP_POST_EXPECT(&d, "/transpose?profile=0", "{" FAST ",\"profile\":true}", 200);
  CHECK(json_is_false(json_at(job, "params.profile")));
  CHECK(json_at(job, "result.runs[0].profile") == NULL);
  json_decref(job);
}

static void test_off_by_default(void) {
  json_t *job = HTTP_POST_EXPECT(&d, "/transpose", "{" FAST "}", 200);
  CHECK(json_is_false(json_at(job, "params.profile")));
  CHECK(json_at(job, "result.runs[0].profile") == NULL);
  json_decref(job);
  job = HTTP_POST_EXPECT(&d, "/transpose", "{" FAST ",\"profile\":\"off\"}", 200);
  CHECK(json_is_false(json_at(job, "params.profile")));
  json_decref(job);
}

static void test_refusals(void) {
  refused("/transpose", "{" FAST ",\"profile\":\"yes\"}", 400, "out_of_range", "profile");
  refused("/transpose", "{" FAST ",\"profile\":1}", 400, "wrong_type", "profile");
  refused("/transpose", "{" FAST ",\"profile\":null}", 400, "wrong_type", "profile");
  refused("/jobs", "{\"type\":\"transpose\",\"params\":{\"profile\":[true]}}", 400, "wrong_type",
          "params.profile");
  refused("/transpose?profile=2", "{" FAST "}", 400, "out_of_range", "profile");
  refused("/transpose?profile=", "{" FAST "}", 400, "out_of_range", "profile");
  /* refused, nothing was queued */
  json_t *list = http_get_json(&d, "/jobs?limit=100");
  size_t n = json_array_size(json_object_get(list, "jobs"));
  json_decref(list);
  refused("/transpose", "{" FAST ",\"profile\":\"Full\"}", 400, "out_of_range", "profile");
  list = http_get_json(&d, "/jobs?limit=100");
  CHECK_INT_EQ(json_array_size(json_object_get(list, "jobs")), n);
  json_decref(list);
}

/* A recorded profile of the lecture's naive transpose at 4096^2 (Nsight Compute on
 * the H200: 4 load and 32 store sectors per request) through the encoder: the derived
 * ratios, the sums, the roofline against given ceilings, NVIDIA's names beside. */
static void test_encoded_counters(void) {
  struct exp_spec spec;
  CHECK_INT_EQ(exp_spec_default(EXP_TRANSPOSE, &spec), 0);
  spec.profile = EXP_PROFILE_COUNTERS;
  static struct exp_result res;
  memset(&res, 0, sizeof res);
  res.n_runs = 1;
  res.ceilings.copy_gbps = 4000;
  res.ceilings.sgemm_gflops = 50000;
  struct exp_run *r = &res.runs[0];
  r->available = true;
  snprintf(r->label, sizeof r->label, "naive");
  struct exp_profile *p = &r->profile;
  p->requested = p->available = p->clocks_locked = true;
  p->n_kernels = p->n_kernels_seen = 1;
  struct exp_profile_kernel *k = &p->kernels[0];
  snprintf(k->name, sizeof k->name, "transpose_naive_kernel");
  for (int m = 0; m < EXP_METRIC_COUNT; m++) k->value[m] = NAN;
  k->value[EXP_METRIC_LOAD_SECTORS] = 2097152;
  k->value[EXP_METRIC_LOAD_REQUESTS] = 524288;
  k->value[EXP_METRIC_STORE_SECTORS] = 16777216;
  k->value[EXP_METRIC_STORE_REQUESTS] = 524288;
  k->value[EXP_METRIC_DRAM_READ_BYTES] = 67108864;
  k->value[EXP_METRIC_DRAM_WRITE_BYTES] = 52428800;
  k->value[EXP_METRIC_FP32_FLOPS] = 0;
  k->value[EXP_METRIC_DURATION_NS] = 100000;
  json_t *j = api_result_to_json(&spec, &res);
  json_t *prof = json_at(j, "runs[0].profile");
  CHECK(JBOOL(prof, "available"));
  CHECK_STR_EQ(JSTR(prof, "clocks"), "locked_to_base");
  CHECK_STR_EQ(JSTR(prof, "caches"), "as_left");
  CHECK_INT_EQ(JINT(prof, "kernels_launched"), 1);
  json_t *m = json_at(prof, "kernels[0].metrics");
  CHECK(JNUM(m, "global_load_sectors_per_request.value") == 4.0);
  CHECK(JNUM(m, "global_store_sectors_per_request.value") == 32.0);
  CHECK_STR_EQ(JSTR(m, "dram_bytes_read.metric"), "dram__bytes_read.sum");
  CHECK(strstr(JSTR(m, "global_store_sectors_per_request.metric"),
               "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum / "));
  CHECK(json_is_null(json_at(m, "l2_hit_pct.value"))); /* not read: null, not 0 */
  CHECK(json_is_null(json_at(prof, "kernels[0].occupancy_limiter")));
  CHECK(JNUM(prof, "totals.dram_bytes") == 119537664.0);
  CHECK(JNUM(prof, "totals.flops_per_byte") == 0.0);
  /* no flops: on the memory side of the ridge (50000 / 4000 = 12.5 flops per byte) */
  CHECK_STR_EQ(JSTR(prof, "roofline.bound"), "memory");
  CHECK(fabs(JNUM(prof, "roofline.attained_gbps") - 1195.37664) < 1e-6);
  CHECK(JNUM(prof, "roofline.ridge_flops_per_byte") == 12.5);
  CHECK(fabs(JNUM(prof, "roofline.percent_of_roof") - 29.884416) < 1e-6); /* of 4000 GB/s */
  CHECK(JNUM(prof, "roofline.roof_gflops") == 0.0);
  json_decref(j);
  /* A kernel without a DRAM count: no roofline, totals null. */
  k->value[EXP_METRIC_DRAM_WRITE_BYTES] = NAN;
  j = api_result_to_json(&spec, &res);
  CHECK(json_is_null(json_at(j, "runs[0].profile.roofline")));
  CHECK(json_is_null(json_at(j, "runs[0].profile.totals.dram_bytes")));
  json_decref(j);
}

static int start(void) {
  const char *args[] = {"--backend", "cpu", NULL};
  gpulabd_start(args, &d);
  return 0;
}

static void stop(void) { gpulabd_stop(&d); }

static const struct test_case cases[] = {
    TEST(test_device_says),
    TEST(test_marked_per_run),
    TEST(test_query_overrides_body),
    TEST(test_off_by_default),
    TEST(test_refusals),
    TEST(test_encoded_counters),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = start, .teardown = stop};
