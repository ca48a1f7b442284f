/* The JSON contract: defaults, every field's type and range, errors that name the field. */
#include <string.h>

#include "api/encode.h"
#include "api/params.h"
#include "tests/check.h"

static struct api_job_options opts;

static struct api_error parse_fail(enum exp_type type, const char *body) {
  struct exp_spec spec;
  struct api_error err;
  memset(&err, 0, sizeof err);
  CHECK_INT_EQ(api_params_parse(type, body, strlen(body), &spec, &opts, &err), -1);
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
  CHECK_INT_EQ(spec.u.transpose.m, 4096);
  CHECK_INT_EQ(spec.u.transpose.n, 4096);
  CHECK_INT_EQ(spec.n_variants, 5); /* naive, shared32, padded33, copy, best */
  CHECK_INT_EQ(spec.timing.warmup, 3);
  CHECK_INT_EQ(spec.timing.batches, 5);
  CHECK_INT_EQ(spec.timing.reps, 20);
  CHECK_INT_EQ(api_params_parse(EXP_STENCIL, "  \n", 3, &spec, &opts, &err), 0); /* blank = {} */
  CHECK_INT_EQ(spec.u.stencil.n, 1 << 22);
  CHECK_INT_EQ(spec.u.stencil.radius, 32);
  CHECK_INT_EQ(spec.timing.warmup, 20);
  CHECK_INT_EQ(spec.timing.reps, 100);
  CHECK_INT_EQ(api_params_parse(EXP_PIPELINE, "", 0, &spec, &opts, &err), 0);
  CHECK_INT_EQ(spec.u.pipeline.chunk, 1 << 20);
  CHECK_INT_EQ(spec.u.pipeline.chunks, 3);
  CHECK_INT_EQ(spec.u.pipeline.terms, 64);
  CHECK_INT_EQ(spec.u.pipeline.n_stream_counts, 2);
  CHECK_INT_EQ(spec.u.pipeline.stream_counts[1], 3);
  CHECK_INT_EQ(spec.timing.batches, 9);
  CHECK_INT_EQ(api_params_parse(EXP_GEMM, "{}", 2, &spec, &opts, &err), 0);
  CHECK_INT_EQ(spec.u.gemm.k, 1024);
  CHECK_INT_EQ(spec.n_variants, 5); /* naive, tiled, cublas, best, tf32 */
}

static void test_values(void) {
  struct exp_spec spec;
  struct api_error err;
  const char *body = "{\"m\":33,\"n\":47,\"k\":18,\"variant\":[\"tiled\",\"naive\"],\"seed\":7,"
                     "\"warmup\":0,\"batches\":2,\"reps\":1}";
  CHECK_INT_EQ(api_params_parse(EXP_GEMM, body, strlen(body), &spec, &opts, &err), 0);
  CHECK_INT_EQ(spec.u.gemm.m, 33);
  CHECK_INT_EQ(spec.u.gemm.k, 18);
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
  CHECK_INT_EQ(spec.u.pipeline.n_stream_counts, 1);
  CHECK_INT_EQ(spec.u.pipeline.stream_counts[0], 4);
  /* Not NUL-terminated: only len bytes count. */
  CHECK_INT_EQ(api_params_parse(EXP_STENCIL, "{\"radius\":2}garbage", 12, &spec, &opts, &err), 0);
  CHECK_INT_EQ(spec.u.stencil.radius, 2);
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
  expect_error(EXP_TRANSPOSE, "{\"variant\":[\"naive\",\"naive\"]}", 400, "duplicate_variant", "variant");
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
  const char *body = "{\"a\":{\"buffer\":3},\"b\":{\"job\":9},\"k\":18,\"priority\":5,"
                     "\"isolation\":\"shared\",\"keep_output\":true,\"depends_on\":[1,2],"
                     "\"dependency\":\"host\",\"graph\":true,\"seed\":11}";
  CHECK_INT_EQ(api_params_parse(EXP_GEMM, body, strlen(body), &spec, &opts, &err), 0);
  CHECK_INT_EQ(spec.inputs[0].kind, EXP_INPUT_BUFFER);
  CHECK_INT_EQ(spec.inputs[0].value, 3);
  CHECK_INT_EQ(spec.inputs[1].kind, EXP_INPUT_JOB);
  CHECK_INT_EQ(spec.inputs[1].value, 9);
  CHECK_INT_EQ(spec.dims_given, EXP_DIM_K);
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
  CHECK_INT_EQ(api_job_request_parse(body, strlen(body), &req, &err), -1);
  CHECK_STR_EQ(err.field, "params.priority");
}

static void expect_job_error(const char *body, const char *code, const char *field) {
  struct api_job_request req;
  struct api_error err;
  CHECK_INT_EQ(api_job_request_parse(body, strlen(body), &req, &err), -1);
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
  CHECK_INT_EQ(req.spec.u.stencil.radius, 2);
  body = "{\"type\":\"gemm\"}";
  CHECK_INT_EQ(api_job_request_parse(body, strlen(body), &req, &err), 0);
  CHECK_INT_EQ(req.spec.u.gemm.m, 1024);
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
  CHECK_INT_EQ(api_wait_parse("abc", 60, &w, &err), -1);
  CHECK_STR_EQ(err.field, "wait");
  CHECK_INT_EQ(api_wait_parse("-1", 60, &w, &err), -1);
  CHECK_STR_EQ(err.code, "out_of_range");
  CHECK_INT_EQ(api_wait_parse("nan", 60, &w, &err), -1);
  CHECK_INT_EQ(api_wait_parse("1e9", 60, &w, &err), -1);
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
  j = api_error_to_json(&err);
  json_t *e = json_object_get(j, "error");
  CHECK_INT_EQ(json_integer_value(json_object_get(e, "status")), 404);
  CHECK(json_is_null(json_object_get(e, "field")));
  CHECK_STR_EQ(json_string_value(json_object_get(e, "message")), "no route /x");
  json_decref(j);
  char buf[40];
  api_format_time(1764428645.25, buf, sizeof buf);
  CHECK_STR_EQ(buf, "2025-11-29T15:04:05.250Z");
}

int main(void) {
  test_defaults();
  test_values();
  test_errors();
  test_job_request();
  test_inputs_and_options();
  test_wait();
  test_encode();
  printf("test_params: ok\n");
  return 0;
}
