/* libFuzzer target for the request codec (api/params.c): the input is a request body
 * for POST /transpose, /gemm, /stencil, /pipeline (api_params_parse) and POST /jobs
 * (api_job_request_parse), and a ?wait= value. Beside memory errors and UB it checks
 * that an error names a 400 with a code and a message, and that an accepted spec
 * survives encoding (api_spec_to_json) and parsing back unchanged. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/encode.h"
#include "api/params.h"
#include "api/utf8.h"
#include "kernels/core/experiment.h"
#include "kernels/gemm/gemm.h"
#include "kernels/pipeline/pipeline.h"
#include "kernels/stencil/stencil.h"
#include "kernels/transpose/transpose.h"
#include "tests/fuzz/fuzz_check.h"

/* A refusal: a 400 with a code and a message, which make an RFC 9457 problem (as
 * gpulabd answers it) whose members are those, in valid UTF-8 however the message
 * was cut (once a 500: a truncation inside a character made it invalid). */
static void check_error(const struct api_error *err) {
  FUZZ_CHECK(err->status == 400);
  FUZZ_CHECK(memchr(err->code, '\0', sizeof err->code) && err->code[0]);
  FUZZ_CHECK(memchr(err->message, '\0', sizeof err->message) && err->message[0]);
  FUZZ_CHECK(memchr(err->field, '\0', sizeof err->field));
  FUZZ_CHECK(utf8_valid(err->message) && utf8_valid(err->field)); /* JSON can carry them */
  json_t *p = api_error_to_json(err, "/jobs");
  FUZZ_CHECK(p != NULL && json_object_size(p) == 7);
  FUZZ_CHECK(json_integer_value(json_object_get(p, "status")) == 400);
  FUZZ_CHECK(strcmp(json_string_value(json_object_get(p, "code")), err->code) == 0);
  json_t *message = json_string(err->message); /* api_error_set left it valid UTF-8: never NULL */
  FUZZ_CHECK(message && json_equal(message, json_object_get(p, "detail")));
  json_decref(message);
  const char *type = json_string_value(json_object_get(p, "type"));
  FUZZ_CHECK(type && strlen(type) > strlen(err->code) &&
             strcmp(type + strlen(type) - strlen(err->code), err->code) == 0);
  FUZZ_CHECK(json_string_value(json_object_get(p, "title"))[0]);
  FUZZ_CHECK(err->field[0] ? json_is_string(json_object_get(p, "field"))
                           : json_is_null(json_object_get(p, "field")));
  json_decref(p);
}

/* An accepted spec: in range, and the same after a round trip through its JSON. */
static void check_spec(const struct exp_spec *spec) {
  FUZZ_CHECK(spec->timing.batches >= 1 && spec->timing.batches <= EXP_MAX_BATCHES);
  FUZZ_CHECK(spec->timing.reps >= 1 && spec->timing.reps <= API_MAX_REPS);
  FUZZ_CHECK(spec->timing.warmup >= 0 && spec->timing.warmup <= API_MAX_WARMUP);
  if (spec->type == EXP_PIPELINE)
    FUZZ_CHECK(spec->n_variants >= 1 && spec->n_variants <= EXP_MAX_VARIANTS);
  else
    FUZZ_CHECK(spec->n_variants >= 1 && spec->n_variants <= exp_variant_count(spec->type));
  (void)exp_spec_bytes(spec);
  (void)exp_spec_work(spec);

  json_t *json = api_spec_to_json(spec);
  FUZZ_CHECK(json != NULL);
  char *text = json_dumps(json, JSON_COMPACT | JSON_SORT_KEYS);
  FUZZ_CHECK(text != NULL);
  struct exp_spec again;
  struct api_job_options opts;
  struct api_error err;
  int rc = api_params_parse(spec->type, text, strlen(text), &again, &opts, &err);
  if (rc != 0) fprintf(stderr, "round trip of %s refused: %s\n", text, err.message);
  FUZZ_CHECK(rc == 0);
  json_t *json2 = api_spec_to_json(&again);
  char *text2 = json_dumps(json2, JSON_COMPACT | JSON_SORT_KEYS);
  if (strcmp(text, text2) != 0)
    fprintf(stderr, "round trip: %s\n         became %s\n", text, text2);
  FUZZ_CHECK(strcmp(text, text2) == 0);
  free(text2);
  json_decref(json2);
  free(text);
  json_decref(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *body = (const char *)data;
  for (int t = 0; t < EXP_TYPE_COUNT; t++) {
    struct exp_spec spec;
    struct api_job_options opts;
    struct api_error err;
    memset(&err, 0, sizeof err);
    if (api_params_parse((enum exp_type)t, body, size, &spec, &opts, &err) == 0) {
      FUZZ_CHECK(spec.type == (enum exp_type)t);
      FUZZ_CHECK(opts.n_depends >= 0 && opts.n_depends <= API_MAX_DEPENDS);
      check_spec(&spec);
    } else {
      check_error(&err);
    }
  }

  struct api_job_request req;
  struct api_error err;
  memset(&err, 0, sizeof err);
  if (api_job_request_parse(body, size, &req, &err) == 0) {
    FUZZ_CHECK(req.spec.type >= 0 && req.spec.type < EXP_TYPE_COUNT);
    FUZZ_CHECK(req.opts.n_depends >= 0 && req.opts.n_depends <= API_MAX_DEPENDS);
    check_spec(&req.spec);
  } else {
    check_error(&err);
  }

  /* The same bytes as a ?wait= value (a C string there). */
  if (size <= 64) {
    char text[65];
    memcpy(text, data, size);
    text[size] = '\0';
    double wait_s = -1;
    memset(&err, 0, sizeof err);
    if (api_wait_parse(text, 60, &wait_s, &err) == 0)
      FUZZ_CHECK(wait_s >= 0 && wait_s <= API_MAX_WAIT_S);
    else
      check_error(&err);
  }
  return 0;
}
