/* The JSON contract: defaults, every field's type and range, errors that name the field. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/encode.h"
#include "api/params.h"
#include "kernels/gemm/gemm.h"
#include "kernels/pipeline/pipeline.h"
#include "kernels/reduce/reduce.h"
#include "kernels/stencil/stencil.h"
#include "kernels/transpose/transpose.h"
#include "tests/runner.h"

static struct api_job_options opts;

static struct api_error parse_fail(enum exp_type type, const char *body) {
  struct exp_spec spec;
  struct api_error err;
  memset(&err, 0, sizeof err);
  CHECK_INT_EQ(api_params_parse(type, body, strlen(body), &spec, &opts, &err), -EINVAL);
  return err;
}

static void expect_error(enum exp_type type, const char *body, int status, const char *code,
                         const char *field) {
  struct api_error err = parse_fail(type, body);
  if (err.status != status || strcmp(err.code, code) || strcmp(err.field, field))
    fprintf(stderr, "body %s -> %d %s field '%s': %s\n", body, err.status, err.code, err.field,
            err.message);
  CHECK_INT_EQ(err.status, status);
  CHECK_STR_EQ(err.code, code);
  CHECK_STR_EQ(err.field, field);
  CHECK(err.message[0] != '\0');
}

static void test_defaults(void) {
  struct exp_spec spec;
  struct api_error err;
  CHECK_INT_EQ(api_params_parse(EXP_TRANSPOSE, "{}", 2, &spec, &opts, &err), 0);
  CHECK_INT_EQ(spec.p[TRANSPOSE_M], 4096);
  CHECK_INT_EQ(spec.p[TRANSPOSE_N], 4096);
  CHECK_INT_EQ(spec.n_variants, 5); /* naive, shared32, padded33, copy, best */
  CHECK_INT_EQ(spec.timing.warmup, 3);
  CHECK_INT_EQ(spec.timing.batches, 5);
  CHECK_INT_EQ(spec.timing.reps, 20);
  CHECK_INT_EQ(api_params_parse(EXP_STENCIL, "  \n", 3, &spec, &opts, &err), 0); /* blank = {} */
  CHECK_INT_EQ(spec.p[STENCIL_N], 1 << 22);
  CHECK_INT_EQ(spec.p[STENCIL_RADIUS], 32);
  CHECK_INT_EQ(spec.timing.warmup, 20);
  CHECK_INT_EQ(spec.timing.reps, 100);
  CHECK_INT_EQ(api_params_parse(EXP_PIPELINE, "", 0, &spec, &opts, &err), 0);
  CHECK_INT_EQ(spec.p[PIPELINE_CHUNK], 1 << 20);
  CHECK_INT_EQ(spec.p[PIPELINE_CHUNKS], 3);
  CHECK_INT_EQ(spec.p[PIPELINE_TERMS], 64);
  CHECK_INT_EQ(spec.n_variants, 2);
  CHECK_INT_EQ(spec.variants[1], 3);
  CHECK_INT_EQ(spec.timing.batches, 9);
  CHECK_INT_EQ(api_params_parse(EXP_GEMM, "{}", 2, &spec, &opts, &err), 0);
  CHECK_INT_EQ(spec.p[GEMM_K], 1024);
  CHECK_INT_EQ(spec.n_variants, 6); /* naive, tiled, cublas, best, tf32, cublas_tf32 */
}

static void test_values(void) {
  struct exp_spec spec;
  struct api_error err;
  const char *body =
      "{\"m\":33,\"n\":47,\"k\":18,\"variant\":[\"tiled\",\"naive\"],\"seed\":7,"
      "\"warmup\":0,\"batches\":2,\"reps\":1}";
  CHECK_INT_EQ(api_params_parse(EXP_GEMM, body, strlen(body), &spec, &opts, &err), 0);
  CHECK_INT_EQ(spec.p[GEMM_M], 33);
  CHECK_INT_EQ(spec.p[GEMM_K], 18);
  CHECK_INT_EQ(spec.n_variants, 2);
  CHECK_INT_EQ(spec.variants[0], GEMM_TILED);
  CHECK_INT_EQ(spec.variants[1], GEMM_NAIVE);
  CHECK_INT_EQ(spec.seed, 7);
  CHECK_INT_EQ(spec.timing.warmup, 0);
  body = "{\"variant\":\"padded33\"}";
  CHECK_INT_EQ(api_params_parse(EXP_TRANSPOSE, body, strlen(body), &spec, &opts, &err), 0);
  CHECK_INT_EQ(spec.n_variants, 1);
  CHECK_INT_EQ(spec.variants[0], TRANSPOSE_PADDED33);
  body = "{\"streams\":4}";
  CHECK_INT_EQ(api_params_parse(EXP_PIPELINE, body, strlen(body), &spec, &opts, &err), 0);
  CHECK_INT_EQ(spec.n_variants, 1);
  CHECK_INT_EQ(spec.variants[0], 4);
  /* Not NUL-terminated: only len bytes count. */
  CHECK_INT_EQ(api_params_parse(EXP_STENCIL, "{\"radius\":2}garbage", 12, &spec, &opts, &err), 0);
  CHECK_INT_EQ(spec.p[STENCIL_RADIUS], 2);
}

static void test_errors(void) {
  expect_error(EXP_TRANSPOSE, "{\"m\":", 400, "invalid_json", "");
  expect_error(EXP_TRANSPOSE, "{\"m\":NaN}", 400, "invalid_json", "");
  expect_error(EXP_TRANSPOSE, "{\"m\":1,\"m\":2}", 400, "invalid_json", "");
  expect_error(EXP_TRANSPOSE, "{\"m\":100000000000000000000000}", 400, "invalid_json", "");
  expect_error(EXP_TRANSPOSE, "[1]", 400, "wrong_type", "");
  expect_error(EXP_TRANSPOSE, "33", 400, "wrong_type", "");
  expect_error(EXP_TRANSPOSE, "null", 400, "wrong_type", "");
  expect_error(EXP_TRANSPOSE, "{\"m\":\"x\"}", 400, "wrong_type", "m");
  expect_error(EXP_TRANSPOSE, "{\"m\":4.5}", 400, "wrong_type", "m");
  expect_error(EXP_TRANSPOSE, "{\"m\":null}", 400, "wrong_type", "m");
  expect_error(EXP_TRANSPOSE, "{\"m\":0}", 400, "out_of_range", "m");
  expect_error(EXP_TRANSPOSE, "{\"n\":-5}", 400, "out_of_range", "n");
  expect_error(EXP_TRANSPOSE, "{\"m\":2147483648}", 400, "out_of_range", "m");
  expect_error(EXP_TRANSPOSE, "{\"foo\":1}", 400, "unknown_field", "foo");
  expect_error(EXP_TRANSPOSE, "{\"k\":1}", 400, "unknown_field", "k");
  expect_error(EXP_TRANSPOSE, "{\"variant\":\"tiled\"}", 400, "unknown_variant", "variant");
  expect_error(EXP_TRANSPOSE, "{\"variant\":[]}", 400, "out_of_range", "variant");
  expect_error(EXP_TRANSPOSE, "{\"variant\":[\"naive\",\"naive\"]}", 400, "duplicate_variant",
               "variant");
  expect_error(EXP_TRANSPOSE, "{\"variant\":[1]}", 400, "wrong_type", "variant");
  expect_error(EXP_TRANSPOSE, "{\"variant\":3}", 400, "wrong_type", "variant");
  expect_error(EXP_STENCIL, "{\"radius\":100000}", 400, "out_of_range", "radius");
  expect_error(EXP_STENCIL, "{\"radius\":-1}", 400, "out_of_range", "radius");
  expect_error(EXP_STENCIL, "{\"batches\":0}", 400, "out_of_range", "batches");
  expect_error(EXP_STENCIL, "{\"batches\":101}", 400, "out_of_range", "batches");
  expect_error(EXP_STENCIL, "{\"seed\":-1}", 400, "out_of_range", "seed");
  expect_error(EXP_PIPELINE, "{\"streams\":[]}", 400, "out_of_range", "streams");
  expect_error(EXP_PIPELINE, "{\"streams\":[1,33]}", 400, "out_of_range", "streams");
  expect_error(EXP_PIPELINE, "{\"streams\":\"3\"}", 400, "wrong_type", "streams");
  expect_error(EXP_PIPELINE, "{\"variant\":\"all\"}", 400, "unknown_field", "variant");
  struct api_error err = parse_fail(EXP_TRANSPOSE, "{\"variant\":\"nope\"}");
  CHECK(strstr(err.message, "naive, shared32, padded33, copy") != NULL);
  err = parse_fail(EXP_TRANSPOSE, "{\"m\": 1,\n \"n\": }");
  CHECK(strstr(err.message, "byte") != NULL);
  err = parse_fail(EXP_TRANSPOSE, "{\"m\":0}");
  CHECK(strstr(err.message, "between 1 and 1048576") != NULL);
}

static void test_inputs_and_options(void) {
  struct exp_spec spec;
  struct api_error err;
  const char *body =
      "{\"a\":{\"buffer\":3},\"b\":{\"job\":9},\"k\":18,\"priority\":5,"
      "\"isolation\":\"shared\",\"keep_output\":true,\"depends_on\":[1,2],"
      "\"dependency\":\"host\",\"graph\":true,\"seed\":11}";
  CHECK_INT_EQ(api_params_parse(EXP_GEMM, body, strlen(body), &spec, &opts, &err), 0);
  CHECK_INT_EQ(spec.inputs[0].kind, EXP_INPUT_BUFFER);
  CHECK_INT_EQ(spec.inputs[0].value, 3);
  CHECK_INT_EQ(spec.inputs[1].kind, EXP_INPUT_JOB);
  CHECK_INT_EQ(spec.inputs[1].value, 9);
  CHECK_INT_EQ(spec.dims_given, 1u << GEMM_K);
  CHECK(spec.graph);
  CHECK_INT_EQ(opts.priority, 5);
  CHECK(!opts.exclusive);
  CHECK(opts.keep_output);
  CHECK(opts.host_sync);
  CHECK_INT_EQ(opts.n_depends, 2);
  CHECK_INT_EQ(opts.depends_on[1], 2);
  /* Inputs nobody named take the job's seed, wherever it stands. */
  body = "{\"x\":{\"seed\":4},\"seed\":11}";
  CHECK_INT_EQ(api_params_parse(EXP_STENCIL, body, strlen(body), &spec, &opts, &err), 0);
  CHECK_INT_EQ(spec.inputs[0].value, 4);
  CHECK(opts.exclusive); /* the default */
  body = "{\"seed\":11}";
  CHECK_INT_EQ(api_params_parse(EXP_TRANSPOSE, body, strlen(body), &spec, &opts, &err), 0);
  CHECK_INT_EQ(spec.inputs[0].kind, EXP_INPUT_SEED);
  CHECK_INT_EQ(spec.inputs[0].value, 11);
  expect_error(EXP_TRANSPOSE, "{\"a\":{\"buffer\":0}}", 400, "out_of_range", "a");
  expect_error(EXP_TRANSPOSE, "{\"a\":{\"file\":1}}", 400, "unknown_field", "a");
  expect_error(EXP_TRANSPOSE, "{\"a\":{\"buffer\":1,\"job\":2}}", 400, "wrong_type", "a");
  expect_error(EXP_TRANSPOSE, "{\"a\":7}", 400, "wrong_type", "a");
  expect_error(EXP_TRANSPOSE, "{\"b\":{\"seed\":1}}", 400, "unknown_field", "b");
  expect_error(EXP_TRANSPOSE, "{\"isolation\":\"alone\"}", 400, "out_of_range", "isolation");
  expect_error(EXP_TRANSPOSE, "{\"priority\":1001}", 400, "out_of_range", "priority");
  expect_error(EXP_TRANSPOSE, "{\"depends_on\":[0]}", 400, "out_of_range", "depends_on");
  expect_error(EXP_TRANSPOSE, "{\"depends_on\":3}", 400, "wrong_type", "depends_on");
  expect_error(EXP_TRANSPOSE, "{\"keep_output\":1}", 400, "wrong_type", "keep_output");
  expect_error(EXP_TRANSPOSE, "{\"graph\":\"yes\"}", 400, "wrong_type", "graph");
  /* Under /jobs the options stand beside type and params, not inside params. */
  struct api_job_request req;
  body = "{\"type\":\"transpose\",\"params\":{\"m\":8},\"priority\":-3,\"isolation\":\"shared\"}";
  CHECK_INT_EQ(api_job_request_parse(body, strlen(body), &req, &err), 0);
  CHECK_INT_EQ(req.opts.priority, -3);
  CHECK(!req.opts.exclusive);
  body = "{\"type\":\"transpose\",\"params\":{\"priority\":1}}";
  CHECK_INT_EQ(api_job_request_parse(body, strlen(body), &req, &err), -EINVAL);
  CHECK_STR_EQ(err.field, "params.priority");
}

/* The timing trust params: cold, order, the noise rule; their ranges and errors. */
static void test_trust_params(void) {
  struct exp_spec spec;
  struct api_error err;
  CHECK_INT_EQ(api_params_parse(EXP_TRANSPOSE, "{}", 2, &spec, &opts, &err), 0);
  CHECK(!spec.cold);
  CHECK_INT_EQ(spec.order, EXP_ORDER_ALTERNATING); /* every type interleaves by default */
  CHECK_INT_EQ(spec.stop.min_samples, 0);          /* = batches */
  CHECK(spec.stop.max_noise == 0 && spec.stop.max_time_s == 10);
  const char *body =
      "{\"cold\":true,\"order\":\"sequential\",\"min_samples\":7,"
      "\"max_noise\":0.02,\"max_time\":2.5}";
  CHECK_INT_EQ(api_params_parse(EXP_GEMM, body, strlen(body), &spec, &opts, &err), 0);
  CHECK(spec.cold);
  CHECK_INT_EQ(spec.order, EXP_ORDER_SEQUENTIAL);
  CHECK_INT_EQ(spec.stop.min_samples, 7);
  CHECK_NEAR(spec.stop.max_noise, 0.02, 0);
  CHECK_NEAR(spec.stop.max_time_s, 2.5, 0);
  body = "{\"max_noise\":1,\"max_time\":600,\"order\":\"interleaved\",\"cold\":false}";
  CHECK_INT_EQ(api_params_parse(EXP_PIPELINE, body, strlen(body), &spec, &opts, &err), 0);
  CHECK_INT_EQ(spec.order, EXP_ORDER_ALTERNATING);
  json_t *j = api_spec_to_json(&spec); /* effective values, min_samples = batches */
  CHECK_INT_EQ(json_integer_value(json_object_get(j, "min_samples")), 9);
  CHECK_STR_EQ(json_string_value(json_object_get(j, "order")), "interleaved");
  CHECK(json_object_get(j, "cold") == NULL); /* not a pipeline param */
  json_decref(j);
  expect_error(EXP_TRANSPOSE, "{\"cold\":1}", 400, "wrong_type", "cold");
  expect_error(EXP_PIPELINE, "{\"cold\":true}", 400, "out_of_range", "cold");
  expect_error(EXP_TRANSPOSE, "{\"graph\":true,\"cold\":true}", 400, "out_of_range", "cold");
  expect_error(EXP_TRANSPOSE, "{\"order\":\"random\"}", 400, "out_of_range", "order");
  expect_error(EXP_TRANSPOSE, "{\"order\":1}", 400, "wrong_type", "order");
  expect_error(EXP_STENCIL, "{\"min_samples\":0}", 400, "out_of_range", "min_samples");
  expect_error(EXP_STENCIL, "{\"min_samples\":101}", 400, "out_of_range", "min_samples");
  expect_error(EXP_STENCIL, "{\"min_samples\":2.5}", 400, "wrong_type", "min_samples");
  expect_error(EXP_STENCIL, "{\"max_noise\":-0.1}", 400, "out_of_range", "max_noise");
  expect_error(EXP_STENCIL, "{\"max_noise\":1.5}", 400, "out_of_range", "max_noise");
  expect_error(EXP_STENCIL, "{\"max_noise\":\"2%\"}", 400, "wrong_type", "max_noise");
  expect_error(EXP_STENCIL, "{\"max_time\":0}", 400, "out_of_range", "max_time");
  expect_error(EXP_STENCIL, "{\"max_time\":601}", 400, "out_of_range", "max_time");
  expect_error(EXP_STENCIL, "{\"max_time\":null}", 400, "wrong_type", "max_time");
  struct api_error e = parse_fail(EXP_STENCIL, "{\"max_noise\":2}");
  CHECK(strstr(e.message, "between 0 and 1") != NULL);
  e = parse_fail(EXP_GEMM, "{\"bogus\":1}"); /* the accepted list names them */
  CHECK(strstr(e.message, "cold, order, min_samples, max_noise, max_time") != NULL);
  struct api_job_request req;
  body = "{\"type\":\"gemm\",\"params\":{\"cold\":true,\"graph\":true}}";
  CHECK_INT_EQ(api_job_request_parse(body, strlen(body), &req, &err), -EINVAL);
  CHECK_STR_EQ(err.field, "params.cold");
}

static void expect_job_error(const char *body, const char *code, const char *field) {
  struct api_job_request req;
  struct api_error err;
  CHECK_INT_EQ(api_job_request_parse(body, strlen(body), &req, &err), -EINVAL);
  CHECK_INT_EQ(err.status, 400);
  CHECK_STR_EQ(err.code, code);
  CHECK_STR_EQ(err.field, field);
}

static void test_job_request(void) {
  struct api_job_request req;
  struct api_error err;
  const char *body = "{\"type\":\"stencil\",\"params\":{\"radius\":2}}";
  CHECK_INT_EQ(api_job_request_parse(body, strlen(body), &req, &err), 0);
  CHECK_INT_EQ(req.spec.type, EXP_STENCIL);
  CHECK_INT_EQ(req.spec.p[STENCIL_RADIUS], 2);
  body = "{\"type\":\"gemm\"}";
  CHECK_INT_EQ(api_job_request_parse(body, strlen(body), &req, &err), 0);
  CHECK_INT_EQ(req.spec.p[GEMM_M], 1024);
  expect_job_error("{}", "missing_field", "type");
  expect_job_error("{\"type\":\"fft\"}", "unknown_type", "type");
  expect_job_error("{\"type\":3}", "wrong_type", "type");
  expect_job_error("{\"type\":\"gemm\",\"params\":{\"m\":0}}", "out_of_range", "params.m");
  expect_job_error("{\"type\":\"gemm\",\"params\":[]}", "wrong_type", "params");
  expect_job_error("{\"type\":\"gemm\",\"extra\":1}", "unknown_field", "extra");
}

static void test_wait(void) {
  double w;
  struct api_error err;
  CHECK_INT_EQ(api_wait_parse(NULL, 60, &w, &err), 0);
  CHECK_NEAR(w, 60, 0);
  CHECK_INT_EQ(api_wait_parse("0.5", 60, &w, &err), 0);
  CHECK_NEAR(w, 0.5, 0);
  CHECK_INT_EQ(api_wait_parse("abc", 60, &w, &err), -EINVAL);
  CHECK_STR_EQ(err.field, "wait");
  CHECK_INT_EQ(api_wait_parse("-1", 60, &w, &err), -EINVAL);
  CHECK_STR_EQ(err.code, "out_of_range");
  CHECK_INT_EQ(api_wait_parse("nan", 60, &w, &err), -EINVAL);
  CHECK_INT_EQ(api_wait_parse("1e9", 60, &w, &err), -EINVAL);
}

static void test_encode(void) {
  struct exp_spec spec;
  exp_spec_default(EXP_PIPELINE, &spec);
  json_t *j = api_spec_to_json(&spec);
  CHECK_INT_EQ(json_integer_value(json_object_get(j, "chunk")), 1 << 20);
  CHECK_INT_EQ(json_array_size(json_object_get(j, "streams")), 2);
  json_decref(j);
  struct api_error err;
  api_error_set(&err, 404, "not_found", "", "no route %s", "/x");
  j = api_error_to_json(&err, "/x y\xc3\xa9");
  CHECK_INT_EQ(json_object_size(j), 7);
  CHECK_STR_EQ(json_string_value(json_object_get(j, "type")),
               "/openapi.json#/components/x-problem-types/not_found");
  CHECK_STR_EQ(json_string_value(json_object_get(j, "title")), "No such route");
  CHECK_INT_EQ(json_integer_value(json_object_get(j, "status")), 404);
  CHECK_STR_EQ(json_string_value(json_object_get(j, "detail")), "no route /x");
  CHECK_STR_EQ(json_string_value(json_object_get(j, "instance")),
               "/x%20y%C3%A9"); /* a URI reference */
  json_decref(j);
  j = api_error_to_json(&err, "/jobs/%ff%zz"); /* as sent: a triplet kept, a stray % encoded */
  CHECK_STR_EQ(json_string_value(json_object_get(j, "instance")), "/jobs/%ff%25zz");
  CHECK_STR_EQ(json_string_value(json_object_get(j, "code")), "not_found");
  CHECK(json_is_null(json_object_get(j, "field")));
  json_decref(j);
  /* A message cut inside a character (as a long one is: the cut character dropped),
   * and a stray byte (U+FFFD): valid UTF-8 still. */
  api_error_set(&err, 400, "unknown_field", "x\xff", "unknown field 'caf\xc3");
  j = api_error_to_json(&err, "/jobs");
  CHECK(j != NULL);
  CHECK_STR_EQ(json_string_value(json_object_get(j, "detail")), "unknown field 'caf");
  CHECK_STR_EQ(json_string_value(json_object_get(j, "field")), "x\xef\xbf\xbd");
  json_decref(j);
  api_error_set(&err, 418, "teapot", "m",
                "short and stout"); /* a code without a title of its own */
  j = api_error_to_json(&err, "/");
  CHECK_STR_EQ(json_string_value(json_object_get(j, "title")), "Client Error");
  CHECK_STR_EQ(json_string_value(json_object_get(j, "field")), "m");
  json_decref(j);
  char buf[40];
  api_format_time(1764428645.25, buf, sizeof buf);
  CHECK_STR_EQ(buf, "2025-11-29T15:04:05.250Z");
  /* By arithmetic from 1970 to 9999, as gmtime_r and strftime write it; before and after,
   * and into a buffer too short for all of it, through them. */
  uint64_t rng = 0x9E3779B97F4A7C15u;
  for (int i = 0; i < 300000; i++) {
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    uint64_t r = rng * 2685821657736338717u;
    double t = i < 1000 ? 253402300800.0 - 500 + i + 0.9995
                        : (double)(r % 253402400000u) + (double)(r >> 54) / 1024.0;
    if (i % 7 == 0) t = (double)(r % 4000000000u); /* whole seconds, this century's */
    time_t secs = (time_t)t;
    int ms = (int)((t - (double)secs) * 1000.0);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char base[24], want[40];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(want, sizeof want, "%s.%03dZ", base, ms < 0 ? 0 : ms > 999 ? 999 : ms);
    api_format_time(t, buf, sizeof buf);
    CHECK_STR_EQ(buf, want);
  }
  api_format_time(1764428645.25, buf, 12);
  CHECK_STR_EQ(buf, "2025-11-29T");
}

/* A run's ceiling and percentage, speedup range, clocks and stopping rule as JSON;
 * a device's ceilings and NVML status. */
static void test_encode_trust(void) {
  struct exp_spec spec;
  exp_spec_default(EXP_GEMM, &spec);
  struct exp_result *r = calloc(1, sizeof *r);
  CHECK(r != NULL);
  r->n_runs = 2;
  r->ceilings = (struct exp_ceilings){
      .copy_gbps = 4000, .sgemm_gflops = 50000, .tf32_gflops = 400000};
  int variants[2] = {GEMM_CUBLAS, GEMM_TF32};
  for (int i = 0; i < 2; i++) {
    struct exp_run *run = &r->runs[i];
    run->variant = variants[i];
    run->available = true;
    run->check.done = run->check.passed = true;
    run->timing.n_samples = 4;
    for (int k = 0; k < 4; k++)
      run->timing.samples_ms[k] = (i ? 1.0 : 10.0) + k * 0.1 * (i ? 0.1 : 1);
    exp_timing_summarize(&run->timing);
    run->timing.stopped_by = exp_timing_stop(&spec, &run->timing, 0.1); /* 4 of 5 batches: NULL */
  }
  r->runs[1].clocks = (struct exp_clocks){
      true, 1980, 1755, 71, 650.5, EXP_CLOCK_SW_POWER_CAP | EXP_CLOCK_HW_THERMAL, true};
  exp_result_finish(&spec, r);
  CHECK(r->runs[0].speedup_lo < 1 && r->runs[0].speedup_hi > 1); /* a run against itself */
  CHECK(r->runs[1].speedup_lo > 1 && r->runs[1].speedup_lo <= r->runs[1].speedup);
  CHECK(r->runs[1].speedup_hi >= r->runs[1].speedup);
  json_t *j = api_result_to_json(&spec, r);
  json_t *cublas = json_array_get(json_object_get(j, "runs"), 0),
         *tf32 = json_array_get(json_object_get(j, "runs"), 1);
  CHECK_STR_EQ(json_string_value(json_object_get(cublas, "ceiling")), "sgemm_gflops");
  CHECK_STR_EQ(json_string_value(json_object_get(tf32, "ceiling")), "tf32_gflops");
  double fig = json_real_value(json_object_get(tf32, "figure"));
  CHECK_NEAR(json_real_value(json_object_get(tf32, "percent_of_ceiling")), 100 * fig / 400000,
             1e-9);
  CHECK_INT_EQ(json_array_size(json_object_get(tf32, "speedup_range")), 2);
  CHECK(json_is_null(json_object_get(cublas, "clocks")));
  json_t *clocks = json_object_get(tf32, "clocks");
  CHECK(json_is_true(json_object_get(clocks, "throttled")));
  CHECK_INT_EQ(json_integer_value(json_object_get(clocks, "sm_mhz_after")), 1755);
  json_t *reasons = json_object_get(clocks, "reasons");
  CHECK_INT_EQ(json_array_size(reasons), 2);
  CHECK_STR_EQ(json_string_value(json_array_get(reasons, 0)), "sw_power_cap");
  CHECK_STR_EQ(json_string_value(json_array_get(reasons, 1)), "hw_thermal_slowdown");
  json_t *timing = json_object_get(cublas, "timing");
  CHECK(json_real_value(json_object_get(timing, "relstdev")) > 0);
  CHECK(json_is_false(json_object_get(timing, "cold")));
  json_decref(j);
  r->ceilings = (struct exp_ceilings){0}; /* the CPU, or --no-ceilings: no percentage */
  j = api_result_to_json(&spec, r);
  cublas = json_array_get(json_object_get(j, "runs"), 0);
  CHECK(json_is_null(json_object_get(cublas, "percent_of_ceiling")));
  CHECK(json_is_null(json_object_get(cublas, "ceiling")));
  json_decref(j);
  free(r);
  struct backend_device_info d = {.backend = "cpu", .nvml_why = "cpu backend"};
  j = api_device_to_json(&d);
  CHECK(json_is_null(json_object_get(j, "ceilings")));
  CHECK_STR_EQ(json_string_value(json_object_get(j, "nvml")), "unavailable: cpu backend");
  CHECK(json_is_null(json_object_get(j, "clocks")));
  json_decref(j);
  d.ceilings.copy_gbps = 4100;
  d.nvml = true;
  d.sm_mhz_now = 1980;
  j = api_device_to_json(&d);
  CHECK_NEAR(json_real_value(json_object_get(json_object_get(j, "ceilings"), "copy_gbps")), 4100,
             0);
  CHECK(json_is_null(json_object_get(json_object_get(j, "ceilings"), "sgemm_gflops")));
  CHECK_STR_EQ(json_string_value(json_object_get(j, "nvml")), "available");
  CHECK_INT_EQ(json_integer_value(json_object_get(json_object_get(j, "clocks"), "sm_mhz")), 1980);
  json_decref(j);
}

/* The pipeline's "best" stream entry: two runs (best, best_graph), at most once,
 * counted against the 8 runs; it encodes back as one "best". */
static void test_streams_best(void) {
  struct exp_spec spec;
  struct api_error err;
  const char *body = "{\"streams\":[1,\"best\",3]}";
  CHECK_INT_EQ(api_params_parse(EXP_PIPELINE, body, strlen(body), &spec, &opts, &err), 0);
  CHECK_INT_EQ(spec.n_variants, 4);
  CHECK_INT_EQ(spec.variants[0], 1);
  CHECK_INT_EQ(spec.variants[1], PIPELINE_STREAMS_BEST);
  CHECK_INT_EQ(spec.variants[2], PIPELINE_STREAMS_BEST_GRAPH);
  CHECK_INT_EQ(spec.variants[3], 3);
  char label[32];
  exp_run_label(&spec, 2, label, sizeof label);
  CHECK_STR_EQ(label, "best_graph");
  json_t *j = api_spec_to_json(&spec);
  char *text = json_dumps(json_object_get(j, "streams"), JSON_COMPACT);
  CHECK_STR_EQ(text, "[1,\"best\",3]");
  free(text);
  json_decref(j);
  body = "{\"streams\":\"best\"}";
  CHECK_INT_EQ(api_params_parse(EXP_PIPELINE, body, strlen(body), &spec, &opts, &err), 0);
  CHECK_INT_EQ(spec.n_variants, 2);
  expect_error(EXP_PIPELINE, "{\"streams\":[\"best\",\"best\"]}", 400, "out_of_range", "streams");
  expect_error(EXP_PIPELINE, "{\"streams\":[\"fast\"]}", 400, "wrong_type", "streams");
  expect_error(EXP_PIPELINE, "{\"streams\":[1,2,3,4,5,6,7,\"best\"]}", 400, "out_of_range",
               "streams");
  body = "{\"streams\":[1,2,3,4,5,6,\"best\"]}"; /* 7 entries, 8 runs */
  CHECK_INT_EQ(api_params_parse(EXP_PIPELINE, body, strlen(body), &spec, &opts, &err), 0);
  CHECK_INT_EQ(spec.n_variants, 8);
  /* The plans: best covers the whole input, chunk by chunk. */
  struct exp_pipeline_plan p;
  spec.p[PIPELINE_CHUNK] = 1 << 22;
  spec.p[PIPELINE_CHUNKS] = 12; /* 192 MiB: 24 chunks of 8 MiB */
  pipeline_plan(&spec, PIPELINE_STREAMS_BEST, &p);
  CHECK(p.best && p.depth_first && !p.graph);
  CHECK_INT_EQ(p.chunk, 2 << 20);
  CHECK_INT_EQ(p.chunks, 24);
  CHECK_INT_EQ(p.streams, PIPELINE_BEST_STREAMS);
  spec.p[PIPELINE_CHUNK] = 1000003;
  spec.p[PIPELINE_CHUNKS] = 3; /* a short last chunk */
  pipeline_plan(&spec, PIPELINE_STREAMS_BEST_GRAPH, &p);
  CHECK(p.graph && p.chunk % 1024 == 0);
  int64_t sum = 0;
  for (int c = 0; c < p.chunks; c++) sum += pipeline_chunk_len(&p, c);
  CHECK_INT_EQ(sum, 3000009);
  CHECK(pipeline_chunk_len(&p, p.chunks - 1) < p.chunk);
  pipeline_plan(&spec, 3, &p);
  CHECK(!p.best && !p.depth_first && p.chunk == 1000003 && p.chunks == 3 && p.streams == 3);
}

/* The limit at a run's size (issue 36): its class is the nearest power of two of the
 * bytes the figure counts, looked up in the job's timing mode; percent_of_limit beside
 * percent_of_ceiling where the copy is the ceiling, null for flops or none measured. */
static void test_limit(void) {
  CHECK_INT_EQ(exp_limit_class(0), -1);
  CHECK_INT_EQ(exp_limit_class(4095), 0);  /* nearer 2^12 than 2^11, which is outside */
  CHECK_INT_EQ(exp_limit_class(2895), -1); /* 2^11.5 rounds to 2^11 */
  CHECK_INT_EQ(exp_limit_class(4096), 0);
  CHECK_INT_EQ(exp_limit_class(5792), 0); /* 2^12.4999: down */
  CHECK_INT_EQ(exp_limit_class(5793), 1); /* 2^12.5001: up */
  CHECK_INT_EQ(exp_limit_class(1 << 24), 12);
  CHECK_INT_EQ(exp_limit_class(8.0 * 4097 * 3001), 27 - 12); /* 2^26.55: nearer 2^27 */
  CHECK_INT_EQ(exp_limit_class(0x1p34), EXP_LIMIT_CLASSES - 1);
  CHECK_INT_EQ(exp_limit_class(0x1p35), -1);
  CHECK_STR_EQ(exp_limit_mode_name(EXP_LIMIT_ALONE), "alone");
  CHECK(exp_limit_mode_name(EXP_LIMIT_MODES) == NULL);

  struct exp_limits limits = {0};
  for (int m = 0; m < EXP_LIMIT_MODES; m++)
    for (int c = 0; c < EXP_LIMIT_CLASSES; c++) limits.gbps[m][c] = 1000.0 * (m + 1) + c;
  struct exp_spec spec;
  exp_spec_default(EXP_REDUCE, &spec);
  spec.p[REDUCE_N] = 1 << 22; /* 4n bytes: 2^24, class 12 */
  struct exp_limit l;
  exp_limit_of(&spec, &limits, false, &l);
  CHECK(l.bytes == 1 << 24 && l.gbps == 1012.0 && l.mode == EXP_LIMIT_BATCH);
  exp_limit_of(&spec, &limits, true, &l);
  CHECK(l.gbps == 2012.0 && l.mode == EXP_LIMIT_ALONE);
  spec.cold = true;
  exp_limit_of(&spec, &limits, true, &l);
  CHECK(l.gbps == 3012.0 && l.mode == EXP_LIMIT_COLD);
  spec.cold = false;
  limits.gbps[EXP_LIMIT_BATCH][12] = 0; /* not measured */
  exp_limit_of(&spec, &limits, false, &l);
  CHECK(l.bytes == 0);
  struct exp_spec gemm;
  exp_spec_default(EXP_GEMM, &gemm); /* flops: no limit */
  exp_limit_of(&gemm, &limits, false, &l);
  CHECK(l.bytes == 0);

  struct exp_result *r = calloc(1, sizeof *r);
  CHECK(r != NULL);
  r->n_runs = 1;
  r->ceilings.copy_gbps = 4000;
  r->limit = (struct exp_limit){1 << 24, 2000, EXP_LIMIT_BATCH};
  r->runs[0].variant = REDUCE_SHARED;
  r->runs[0].available = true;
  r->runs[0].check.done = r->runs[0].check.passed = true;
  r->runs[0].timing.n_samples = 1;
  r->runs[0].timing.samples_ms[0] = (double)(1 << 24) / 1500e6; /* 1500 GB/s */
  exp_timing_summarize(&r->runs[0].timing);
  exp_result_finish(&spec, r);
  json_t *j = api_result_to_json(&spec, r);
  json_t *run = json_array_get(json_object_get(j, "runs"), 0);
  CHECK_NEAR(json_real_value(json_object_get(run, "percent_of_ceiling")), 37.5, 1e-6);
  CHECK_NEAR(json_real_value(json_object_get(run, "percent_of_limit")), 75.0, 1e-6);
  json_t *lim = json_object_get(j, "limit");
  CHECK_INT_EQ(json_integer_value(json_object_get(lim, "bytes")), 1 << 24);
  CHECK_STR_EQ(json_string_value(json_object_get(lim, "mode")), "batch");
  json_decref(j);
  r->limit = (struct exp_limit){0}; /* none measured: both null */
  j = api_result_to_json(&spec, r);
  CHECK(json_is_null(json_object_get(j, "limit")));
  CHECK(json_is_null(
      json_object_get(json_array_get(json_object_get(j, "runs"), 0), "percent_of_limit")));
  json_decref(j);
  free(r);
  struct backend_device_info d = {.backend = "cuda", .limits = limits};
  j = api_device_to_json(&d);
  json_t *alone = json_object_get(json_object_get(j, "limits"), "alone");
  CHECK_INT_EQ(json_array_size(alone), EXP_LIMIT_CLASSES);
  CHECK_INT_EQ(json_integer_value(json_object_get(json_array_get(alone, 0), "bytes")), 4096);
  json_decref(j);
}

static const struct test_case cases[] = {
    TEST(test_defaults),     TEST(test_streams_best), TEST(test_values),
    TEST(test_errors),       TEST(test_job_request),  TEST(test_inputs_and_options),
    TEST(test_trust_params), TEST(test_wait),         TEST(test_encode),
    TEST(test_encode_trust), TEST(test_limit),        TEST_END,
};
const struct test_suite test_suite = {.cases = cases};
