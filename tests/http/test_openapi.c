/* The API against its description: loads GET /openapi.json from a real gpulabd
 * (--backend cpu), makes real requests to every documented route and method (the
 * successes and the main errors), and checks each answer: its status is documented
 * for that path and method, its Content-Type is one the response lists, required
 * headers are there, and a JSON body validates against the documented schema
 * (closed objects refuse undocumented fields). JSON request bodies are checked too:
 * the schema accepts what gpulabd accepts and refuses what it refuses with 400.
 * Every documented operation must be exercised, and the Allow of every 405 must
 * list exactly the documented methods. An error is an RFC 9457 problem whose type
 * is its code's entry in components/x-problem-types, with that entry's title. The
 * store's answers (410 gone after a restart, 507 past --max-db-bytes, /health's 503)
 * come from a gpulabd of their own with a database file. The harness (requests, the
 * document, the checks of an answer) is openapi_common.c's; users' kernels' and
 * problems' routes are openapi_kernels.c's and openapi_problems.c's.
 *
 * The schemas are checked by ajv (JSON Schema 2020-12, as OpenAPI 3.1 has them),
 * not here: every body is recorded with the schema it must (or must not) match,
 * and at the end tests/openapi/validate.js validates them all ($GPULAB_NODE runs
 * it; $GPULAB_OPENAPI_VALIDATE names it). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "api/encode.h"
#include "http_client.h"
#include "runner.h"
#include "server/service/usass.h"

#include "openapi_common.h"

/* ---- the routes ---- */

static void test_validator(void) {
  /* The test fails on drift: an undocumented field in a closed object, a missing
   * required one, an undocumented enum value or status. */
  json_t *e = json_pack("{s:s,s:s,s:i,s:s,s:s,s:s,s:n}", "type",
                        "/openapi.json#/components/x-problem-types/job_not_found", "title",
                        "No such job", "status", 404, "detail", "no job 7", "instance", "/jobs/7",
                        "code", "job_not_found", "field");
  expect_schema(schema_named("Problem404"), e, true, NULL, "a 404 problem");
  json_object_set_new(e, "hint", json_string("extra"));
  expect_schema(schema_named("Problem404"), e, false, "hint",
                "a problem with an undocumented member");
  json_object_del(e, "hint");
  json_object_set_new(e, "code", json_string("queue_full"));
  expect_schema(schema_named("Problem404"), e, false, "code", "a 404 problem with a 429's code");
  json_object_del(e, "detail");
  expect_schema(schema_named("Problem"), e, false, "detail", "a problem without its detail");
  json_object_set_new(e, "detail", json_string("no job 7"));
  json_object_set_new(e, "field", json_integer(3));
  expect_schema(schema_named("Problem"), e, false, "field", "a problem whose field is a number");
  json_decref(e);
  json_t *job = json_pack("{s:n}", "next_cursor");
  expect_schema(schema_named("JobList"), job, false, "jobs", "a job list without its jobs");
  json_object_set_new(job, "jobs", json_array());
  expect_schema(schema_named("JobList"), job, true, NULL, "an empty job list, next_cursor null");
  json_decref(job);
  CHECK(json_object_get(json_object_get(doc_operation("/jobs/{id}", "GET"), "responses"), "418") ==
        NULL);
  /* A run's profile with counters, as the encoder writes it (the CPU backend's runs
   * only say why they have none). */
  struct exp_spec spec;
  static struct exp_result res;
  CHECK_INT_EQ(exp_spec_default(EXP_GEMM, &spec), 0);
  spec.profile = EXP_PROFILE_COUNTERS;
  res.n_runs = 1;
  res.runs[0].available = true;
  res.ceilings = (struct exp_ceilings){.copy_gbps = 4000, .sgemm_gflops = 50000};
  struct exp_profile *p = &res.runs[0].profile;
  *p = (struct exp_profile){.requested = true, .available = true, .n_kernels = 1};
  snprintf(p->kernels[0].occupancy_limiter, sizeof p->kernels[0].occupancy_limiter, "registers");
  for (int m = 0; m < EXP_METRIC_COUNT; m++) p->kernels[0].value[m] = m == 1 ? NAN : 1e6 * m;
  json_t *enc = api_result_to_json(&spec, &res);
  expect_schema(schema_named("RunProfile"), json_at(enc, "runs[0].profile"), true, NULL,
                "a run's profile with counters");
  json_decref(enc);
  CHECK(json_is_false(json_object_get(schema_named("Job"), "additionalProperties")));
}

static void test_service_routes(void) {
  static const char *const html[] = {"Accept: text/html", NULL};
  struct reply r;
  call("/", "GET", "/", 200, NULL, &r);
  /* Every route the index lists is documented. */
  size_t i;
  json_t *route;
  json_array_foreach(json_object_get(r.json, "routes"), i, route) {
    char method[8], path[64];
    CHECK(sscanf(json_string_value(route), "%7s %63s", method, path) == 2);
    if (!doc_operation(path, method))
      CHECK_FAIL_("the index lists %s, the document does not", json_string_value(route));
  }
  reply_free(&r);
  call("/", "HEAD", "/", 200, NULL, NULL);
  call_h(&S, "/", "GET", "/", html, NULL, 0, 200, NULL, &r);
  char etag[128], inm[160];
  snprintf(etag, sizeof etag, "%s", header(&r, "ETag") ? header(&r, "ETag") : "\"none\"");
  reply_free(&r);
  snprintf(inm, sizeof inm, "If-None-Match: %s", etag);
  const char *cached[] = {"Accept: text/html", inm, NULL};
  call_h(&S, "/", "GET", "/", cached, NULL, 0, 304, NULL, NULL);
  call("/static/{name}", "GET", "/static/app.js", 200, NULL, &r);
  snprintf(inm, sizeof inm, "If-None-Match: %s", header(&r, "ETag"));
  reply_free(&r);
  const char *cached_js[] = {inm, NULL};
  call_h(&S, "/static/{name}", "GET", "/static/app.js", cached_js, NULL, 0, 304, NULL, NULL);
  call("/static/{name}", "HEAD", "/static/app.css", 200, NULL, NULL);
  call("/static/{name}", "GET", "/static/no-such-file.js", 404, "not_found", NULL);
  call("/static/{name}", "GET", "/static/experiments.json", 200, NULL, NULL);
  for (const char *const *p = (const char *const[]){"/health", "/device", "/devices", "/metrics",
                                                    "/openapi.json", "/me", NULL};
       *p; p++) {
    call_get_head(*p, *p, 200, NULL);
  }
  /* The documented params, ranges and defaults of each experiment are its descriptor's:
   * tests/unit/test_openapi_registry.c. */
}

static long long histogram_job; /* test_experiments' histogram (its uint32 output kept) */

/* Each type with every variant: the runs, and the variant enums against what
 * gpulabd runs for "all". Returns the transpose job's id (its output kept). */
static long long check_experiments(long long *gemm_id) {
  static const char *const bodies[][2] = {
      {"/transpose", "{\"m\":33,\"n\":47,\"keep_output\":true," FAST "}"},
      {"/gemm", "{\"m\":17,\"n\":9,\"k\":5,\"variant\":\"all\",\"priority\":5," FAST "}"},
      {"/stencil",
       "{\"n\":2049,\"radius\":1024,\"isolation\":\"shared\",\"cold\":true,\"order\":\"sequential\","
       "\"max_noise\":0.5,\"min_samples\":2,\"max_time\":1," FAST "}"},
      {"/pipeline",
       "{\"chunk\":1000,\"chunks\":2,\"terms\":4,\"streams\":[1,2],\"graph\":true," FAST "}"},
      {"/reduce", "{\"n\":100003,\"keep_output\":true," FAST "}"},
      {"/scan", "{\"n\":5000,\"variant\":\"all\",\"graph\":true," FAST "}"},
      {"/histogram", "{\"n\":4099,\"bins\":65536,\"keep_output\":true," FAST "}"},
  };
  static const char *const enums[] = {"TransposeVariant", "GemmVariant", "StencilVariant",  NULL,
                                      "ReduceVariant",    "ScanVariant", "HistogramVariant"};
  enum { N_BODIES = sizeof bodies / sizeof bodies[0] };
  long long ids[N_BODIES];
  for (int t = 0; t < N_BODIES; t++) {
    json_t *job = post(bodies[t][0], bodies[t][0], bodies[t][1], 200, NULL, ACCEPTED);
    ids[t] = JINT(job, "id");
    if (!strcmp(bodies[t][0], "/histogram")) histogram_job = ids[t];
    CHECK_STR_EQ(JSTR(job, "state"), "done");
    if (enums[t] && !json_equal(json_at(job, "params.variant"),
                                json_object_get(schema_named(enums[t]), "enum")))
      CHECK_FAIL_("%s: gpulabd's variants differ from the document's", enums[t]);
    json_decref(job);
  }
  *gemm_id = ids[1];
  json_t *job = post(
      "/jobs", "/jobs?wait=30",
      "{\"type\":\"gemm\",\"params\":{\"m\":8,\"n\":8,\"k\":8,\"variant\":[\"tiled\",\"naive\"]," FAST
      "},\"dependency\":\"host\",\"depends_on\":[1]}",
      200, NULL, ACCEPTED);
  json_decref(job);
  job = post("/jobs", "/jobs?wait=0", "{\"type\":\"stencil\"}", 202, NULL, ACCEPTED);
  json_decref(job_wait(JINT(job, "id")));
  json_decref(job);
  job = post("/jobs", "/jobs?wait=20.5",
             "{\"type\":\"pipeline\",\"params\":{\"chunk\":64,\"streams\":3," FAST "}}", 200, NULL,
             ACCEPTED);
  json_decref(job);
  return ids[0];
}

static void check_job_errors(long long kept, long long not_kept) {
  char body[256];
  static const char *const plain[] = {"Content-Type: text/plain", NULL};
  struct {
    const char *path, *body;
    long status;
    const char *code;
    bool doc_ok;
  } cases[] = {
      {"/transpose", "{\"m\":", 400, "invalid_json", REFUSED},
      {"/transpose", "{\"m\":0}", 400, "out_of_range", REFUSED},
      {"/transpose", "{\"m\":1048577}", 400, "out_of_range", REFUSED},
      {"/transpose", "{\"m\":\"7\"}", 400, "wrong_type", REFUSED},
      {"/transpose", "{\"bogus\":1}", 400, "unknown_field", REFUSED},
      {"/transpose", "{\"variant\":\"tiled\"}", 400, "unknown_variant", REFUSED},
      {"/gemm", "{\"variant\":[\"naive\",\"naive\"]}", 400, "duplicate_variant", REFUSED},
      {"/stencil", "{\"radius\":1025}", 400, "out_of_range", REFUSED},
      {"/pipeline", "{\"streams\":[]}", 400, "out_of_range", REFUSED},
      {"/pipeline", "{\"variant\":\"naive\"}", 400, "unknown_field", REFUSED},
      {"/gemm", "{\"priority\":1001}", 400, "out_of_range", REFUSED},
      {"/gemm", "{\"max_noise\":1.5}", 400, "out_of_range", REFUSED},
      {"/gemm", "{\"order\":\"random\"}", 400, "out_of_range", REFUSED},
      {"/pipeline", "{\"cold\":true}", 400, "out_of_range", REFUSED},
      {"/stencil", "{\"cold\":true,\"graph\":true}", 400, "out_of_range",
       ACCEPTED}, /* across fields */
      {"/gemm", "{\"isolation\":\"alone\"}", 400, "out_of_range", REFUSED},
      {"/gemm", "{\"a\":{\"file\":1}}", 400, "unknown_field", REFUSED},
      {"/jobs", "{\"params\":{}}", 400, "missing_field", REFUSED},
      {"/jobs", "{\"type\":\"fft\"}", 400, "unknown_type", REFUSED},
      {"/jobs", "{\"type\":\"gemm\",\"params\":{\"priority\":1}}", 400, "unknown_field", REFUSED},
      {"/jobs", "[1]", 400, "wrong_type", REFUSED},
      {"/jobs", "{\"type\":\"gemm\",\"device\":7}", 400, "out_of_range",
       ACCEPTED}, /* only one device here */
      {"/transpose", "{\"m\":1048576,\"n\":1048576}", 413, "job_too_large", ACCEPTED},
      {"/transpose", "{\"depends_on\":[999999]," FAST "}", 404, "job_not_found", ACCEPTED},
      {"/gemm", "{\"b\":{\"buffer\":999999}}", 404, "buffer_not_found", ACCEPTED},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    json_decref(post(cases[i].path, cases[i].path, cases[i].body, cases[i].status, cases[i].code,
                     cases[i].doc_ok));
  snprintf(body, sizeof body, "{\"a\":{\"job\":%lld},\"m\":5," FAST "}",
           kept); /* its output is 47 x 33 */
  json_decref(post("/transpose", "/transpose", body, 400, "shape_mismatch", ACCEPTED));
  snprintf(body, sizeof body, "{\"x\":{\"job\":%lld}," FAST "}", histogram_job); /* counts */
  json_decref(post("/reduce", "/reduce", body, 400, "dtype_mismatch", ACCEPTED));
  snprintf(body, sizeof body, "{\"type\":\"gemm\",\"params\":{\"a\":{\"job\":%lld}}}", not_kept);
  json_decref(post("/jobs", "/jobs", body, 409, "output_not_kept", ACCEPTED));
  json_decref(post("/gemm", "/gemm?wait=soon", "{}", 400, "wrong_type", ACCEPTED));
  json_decref(post("/gemm", "/gemm?wait=601", "{}", 400, "out_of_range", ACCEPTED));
  call_h(&S, "/stencil", "POST", "/stencil", plain, "n=64", 4, 415, "unsupported_media_type", NULL);
  const char *small = "{\"n\":64," FAST
                      "}"; /* a browser's fetch without a Content-Type: text/plain */
  call_h(&S, "/stencil", "POST", "/stencil", plain, small, strlen(small), 200, NULL, NULL);
  char *big = malloc(MAX_BODY + 100);
  CHECK(big != NULL);
  memset(big, ' ', MAX_BODY + 100);
  big[0] = '{';
  big[MAX_BODY + 99] = '}';
  static const char *const json_ct[] = {"Content-Type: application/json", NULL};
  call_h(&S, "/jobs", "POST", "/jobs", json_ct, big, MAX_BODY + 100, 413, "body_too_large", NULL);
  free(big);
}

static void check_job_reads(long long kept) {
  char path[64];
  struct reply r;
  call_get_head("/jobs", "/jobs", 200, NULL);
  call("/jobs", "GET", "/jobs?fields=result&limit=3", 200, NULL, NULL);
  call("/jobs", "GET", "/jobs?state=done&type=gemm&limit=1", 200, NULL, &r);
  long long cursor = JINT(r.json, "next_cursor");
  reply_free(&r);
  snprintf(path, sizeof path, "/jobs?type=gemm&cursor=%lld", cursor);
  call("/jobs", "GET", path, 200, NULL, NULL);
  static const char *const bad[][2] = {{"/jobs?limit=0", "out_of_range"},
                                       {"/jobs?limit=ten", "wrong_type"},
                                       {"/jobs?state=lost", "unknown_state"},
                                       {"/jobs?type=fft", "unknown_type"},
                                       {"/jobs?fields=params", "unknown_field"}};
  for (size_t i = 0; i < 5; i++) call("/jobs", "GET", bad[i][0], 400, bad[i][1], NULL);
  snprintf(path, sizeof path, "/jobs/%lld", kept);
  call_get_head("/jobs/{id}", path, 200, NULL);
  call("/jobs/{id}", "DELETE", path, 409, "job_finished", NULL);
  call("/jobs/{id}", "GET", "/jobs/999999", 404, "job_not_found", NULL);
  call("/jobs/{id}", "HEAD", "/jobs/0", 404, NULL, NULL);
  call("/jobs/{id}", "DELETE", "/jobs/abc", 404, "job_not_found", NULL);
  call("/jobs/{id}/events", "GET", "/jobs/999999/events", 404, "job_not_found", NULL);
}

/* Sweeps: a table of single-run and of several-run points, one still going, the
 * list, and the errors. */
static void test_sweeps(void) {
  char path[64];
  json_t *sweep = post("/sweeps", "/sweeps?wait=30",
                       "{\"type\":\"transpose\",\"params\":{\"n\":8,\"variant\":\"naive\"," FAST
                       "},\"axes\":{\"m\":[8,16]}}",
                       200, NULL, ACCEPTED);
  long long done = JINT(sweep, "id");
  json_decref(sweep);
  json_decref(post("/sweeps", "/sweeps?wait=30",
                   "{\"type\":\"gemm\",\"params\":{" FAST "},\"axes\":{\"m\":[4,5],\"k\":[3]},"
                   "\"priority\":1}",
                   200, NULL, ACCEPTED));
  sweep = post("/sweeps", "/sweeps?wait=0", "{\"type\":\"stencil\",\"axes\":{\"radius\":[2,3]}}",
               202, NULL, ACCEPTED);
  snprintf(path, sizeof path, "/sweeps/%lld", JINT(sweep, "id"));
  json_decref(sweep);
  call_get_head("/sweeps/{id}", path, 200, NULL);
  call("/sweeps", "GET", "/sweeps", 200, NULL, NULL);
  call("/sweeps", "HEAD", "/sweeps?limit=1", 200, NULL, NULL);
  call("/sweeps", "GET", "/sweeps?limit=101", 400, "out_of_range", NULL);
  call("/sweeps/{id}", "DELETE", path, 200, NULL, NULL);
  snprintf(path, sizeof path, "/sweeps/%lld", done);
  call("/sweeps/{id}", "DELETE", path, 409, "sweep_finished", NULL);
  call("/sweeps/{id}", "GET", "/sweeps/999999", 404, "sweep_not_found", NULL);
  json_decref(post("/sweeps", "/sweeps", "{\"type\":\"gemm\"}", 400, "missing_field", REFUSED));
  json_decref(post("/sweeps", "/sweeps", "{\"type\":\"gemm\",\"axes\":{\"m\":[]}}", 400,
                   "out_of_range", REFUSED));
  json_decref(
      post("/sweeps", "/sweeps", "{\"type\":\"gemm\",\"axes\":{}}", 400, "out_of_range", REFUSED));
  json_decref(post("/sweeps", "/sweeps", "{\"type\":\"gemm\",\"axes\":{\"m\":[0]}}", 400,
                   "out_of_range", ACCEPTED));
}

/* A .npy file (version 1.0) of rows x cols float32 zeros; *len its size. */
static char *npy_file(int rows, int cols, size_t *len) {
  char dict[128];
  int n = snprintf(dict, sizeof dict,
                   "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", rows, cols);
  size_t header = 64 * (size_t)((10 + n + 1 + 63) / 64);
  *len = header + 4 * (size_t)rows * (size_t)cols;
  char *f = calloc(1, *len);
  CHECK(f != NULL);
  memcpy(f, "\x93NUMPY\x01\x00", 8);
  f[8] = (char)((header - 10) & 0xff);
  f[9] = (char)((header - 10) >> 8);
  memset(f + 10, ' ', header - 10);
  memcpy(f + 10, dict, (size_t)n);
  f[header - 1] = '\n';
  return f;
}

/* Returns the id of an uploaded 47 x 33 buffer. */
static long long check_buffers(void) {
  static const char *const npy[] = {"Content-Type: application/x-npy", NULL};
  static const char *const raw[] = {"Content-Type: application/octet-stream", NULL};
  static const char *const plain[] = {"Content-Type: text/plain", NULL};
  size_t len;
  char *file = npy_file(47, 33, &len), path[64];
  struct reply r;
  call_h(&S, "/buffers", "POST", "/buffers", npy, file, len, 201, NULL, &r);
  long long id = JINT(r.json, "id");
  reply_free(&r);
  float floats[15] = {0};
  call_h(&S, "/buffers", "POST", "/buffers?shape=3,5&device=0", raw, (const char *)floats,
         sizeof floats, 201, NULL, &r);
  long long raw_id = JINT(r.json, "id");
  reply_free(&r);
  call_h(&S, "/buffers", "POST", "/buffers", npy, "not a npy", 9, 400, "invalid_npy", NULL);
  call_h(&S, "/buffers", "POST", "/buffers", raw, (const char *)floats, sizeof floats, 400,
         "invalid_raw", NULL);
  /* float64 in Fortran order: converted, and the record says so. */
  static const char f8_dict[] = "{'descr': '<f8', 'fortran_order': True, 'shape': (3, 2), }";
  char f8[128 + 48] = "\x93NUMPY\x01\x00\x76\x00";
  memset(f8 + 10, ' ', 117);
  memcpy(f8 + 10, f8_dict, sizeof f8_dict - 1);
  f8[127] = '\n';
  for (int i = 0; i < 6; i++) {
    double v = 0.1 * i;
    memcpy(f8 + 128 + 8 * i, &v, 8);
  }
  call_h(&S, "/buffers", "POST", "/buffers", npy, f8, sizeof f8, 201, NULL, &r);
  long long f8_id = JINT(r.json, "id");
  if (strcmp(JSTR(json_object_get(r.json, "converted_from"), "dtype"), "float64") != 0 ||
      !json_is_true(json_object_get(json_object_get(r.json, "converted_from"), "fortran_order")))
    CHECK_FAIL_("a float64 Fortran-order upload's record: %s", r.body);
  reply_free(&r);
  call_h(&S, "/buffers", "POST", "/buffers?shape=4,5", raw, (const char *)floats, sizeof floats,
         400, "invalid_raw", NULL);
  call_h(&S, "/buffers", "POST", "/buffers?shape=3,5&device=9", raw, (const char *)floats,
         sizeof floats, 400, "out_of_range", NULL);
  call_h(&S, "/buffers", "POST", "/buffers", plain, file, len, 415, "unsupported_media_type", NULL);
  free(file);
  file = npy_file(129, 128, &len); /* past --max-upload */
  CHECK(len > MAX_UPLOAD);
  call_h(&S, "/buffers", "POST", "/buffers", npy, file, len, 413, "body_too_large", NULL);
  free(file);
  call("/buffers", "GET", "/buffers", 200, NULL, NULL);
  call("/buffers", "GET", "/buffers?limit=1", 200, NULL, &r);
  snprintf(path, sizeof path, "/buffers?cursor=%lld", JINT(r.json, "next_cursor"));
  reply_free(&r);
  call("/buffers", "GET", path, 200, NULL, NULL);
  call("/buffers", "HEAD", "/buffers", 200, NULL, NULL);
  call("/buffers", "GET", "/buffers?limit=1001", 400, "out_of_range", NULL);
  snprintf(path, sizeof path, "/buffers/%lld", id);
  call("/buffers/{id}", "GET", path, 200, NULL, &r);
  CHECK(r.body_len > 10 && memcmp(r.body, "\x93NUMPY", 6) == 0);
  reply_free(&r);
  call("/buffers/{id}", "HEAD", path, 200, NULL, NULL);
  /* Accept: raw float32, its shape in Gpulab-Shape; 406 for what it cannot send. */
  static const char *const want_raw[] = {"Accept: application/octet-stream", NULL};
  static const char *const want_json[] = {"Accept: application/json, text/*;q=0.5", NULL};
  snprintf(path, sizeof path, "/buffers/%lld", f8_id);
  call_h(&S, "/buffers/{id}", "GET", path, want_raw, NULL, 0, 200, NULL, &r);
  CHECK(r.body_len == 24 && strcmp(header(&r, "Gpulab-Shape"), "3,2") == 0);
  float back[6];
  memcpy(back, r.body, sizeof back);
  CHECK(back[1] == (float)(0.1 * 3) && back[2] == (float)(0.1 * 1)); /* (0, 1) was stored 4th */
  reply_free(&r);
  call_h(&S, "/buffers/{id}", "HEAD", path, want_raw, NULL, 0, 200, NULL, NULL);
  call_h(&S, "/buffers/{id}", "GET", path, want_json, NULL, 0, 406, "not_acceptable", NULL);
  call_h(&S, "/buffers/{id}", "HEAD", path, want_json, NULL, 0, 406, NULL, NULL);
  snprintf(path, sizeof path, "/buffers/%lld", raw_id);
  call("/buffers/{id}", "DELETE", path, 200, NULL, NULL);
  call("/buffers/{id}", "GET", path, 404, "buffer_not_found", NULL);
  call("/buffers/{id}", "HEAD", "/buffers/x", 404, NULL, NULL);
  call("/buffers/{id}", "DELETE", path, 404, "buffer_not_found", NULL);
  return id;
}

static void check_events(struct sse_stream *s, const char *tmpl, int want) {
  struct reply r = {.status = s->status};
  r.headers = calloc(1, 1);
  r.content_type = s->content_type ? strdup(s->content_type) : NULL;
  r.body = calloc(1, 1);
  check_reply(tmpl, "GET", &r);
  reply_free(&r);
  char media[64];
  media_type(s->content_type, media, sizeof media);
  json_t *events = json_object_get(
      json_object_get(
          json_object_get(
              json_object_get(json_object_get(doc_operation(tmpl, "GET"), "responses"), "200"),
              "content"),
          media),
      "x-events");
  CHECK(events != NULL);
  for (int got = 0; got < want;) {
    struct sse_event ev;
    int rc = sse_next(s, 20, &ev);
    if (rc == 0) break;
    if (rc < 0) CHECK_FAIL_("%s: no event within 20 s (%d seen)", tmpl, got);
    json_t *schema = json_object_get(events, ev.event);
    if (!schema) CHECK_FAIL_("%s: event '%s' is not documented", tmpl, ev.event);
    if (!ev.json) CHECK_FAIL_("%s: event %s is not JSON: %s", tmpl, ev.event, ev.data);
    expect_schema(schema, ev.json, true, NULL, "%s: event %s", tmpl, ev.event);
    sse_event_free(&ev);
    got++;
  }
}

/* With the only stream busy: queued jobs, buffer_in_use, queue_full, events,
 * and cancels of a queued and a running job. */
static void check_busy(long long buffer) {
  struct sse_stream all, one;
  char body[256], path[64];
  sse_open(&all, S.port, "/events", NULL, 10);
  json_t *blocker = post("/jobs", "/jobs?wait=0",
                         "{\"type\":\"stencil\",\"params\":{\"n\":100000,\"radius\":2,"
                         "\"warmup\":0,\"batches\":100,\"reps\":10000}}",
                         202, NULL, ACCEPTED);
  long long blocker_id = JINT(blocker, "id");
  json_decref(blocker);
  snprintf(path, sizeof path, "/jobs/%lld/events", blocker_id);
  sse_open(&one, S.port, path, NULL, 10);
  check_events(&one, "/jobs/{id}/events", 3); /* its state, running, a progress */
  check_events(&all, "/events", 3);
  snprintf(body, sizeof body, "{\"a\":{\"buffer\":%lld},\"variant\":\"naive\"," FAST "}", buffer);
  json_t *reader = post("/transpose", "/transpose?wait=0", body, 202, NULL, ACCEPTED);
  snprintf(path, sizeof path, "/buffers/%lld", buffer);
  call("/buffers/{id}", "DELETE", path, 409, "buffer_in_use", NULL);
  for (int i = 1; i < MAX_QUEUED; i++)
    json_decref(post("/stencil", "/stencil?wait=0", "{\"n\":64}", 202, NULL, ACCEPTED));
  json_t *full = post("/stencil", "/stencil?wait=0", "{\"n\":64}", 429, "queue_full", ACCEPTED);
  json_decref(full);
  snprintf(path, sizeof path, "/jobs/%lld", JINT(reader, "id"));
  json_decref(reader);
  call("/jobs/{id}", "DELETE", path, 200, NULL, NULL);
  snprintf(path, sizeof path, "/jobs/%lld", blocker_id);
  call("/jobs/{id}", "DELETE", path, 200, NULL, NULL);
  check_events(&one, "/jobs/{id}/events", 1000); /* until it ends */
  sse_close(&one);
  sse_close(&all);
  json_decref(job_wait(blocker_id));
}

/* Every path with a method it does not document: 405, and Allow lists exactly
 * the documented methods. A path the document lacks: 404. */
static void test_methods(void) {
  static const char *const methods[] = {"GET", "POST", "DELETE", "PUT", "PATCH"};
  const char *tmpl;
  json_t *item;
  json_object_foreach(json_object_get(DOC, "paths"), tmpl, item) {
    char path[128], allow[96] = "", got[16], list[96];
    const char *m;
    json_t *op;
    snprintf(path, sizeof path, "%s", tmpl);
    for (char *brace; (brace = strchr(path, '{'));) { /* each "{...}" a value */
      char rest[128];
      snprintf(rest, sizeof rest, "%s", strchr(brace, '}') + 1);
      snprintf(brace, sizeof path - (size_t)(brace - path), "%s%s",
               !strncmp(brace, "{name}", 6) ? "app.js" : "1", rest);
    }
    json_object_foreach(item, m, op) {
      if (!strcmp(m, "parameters")) continue;
      for (size_t i = 0; m[i] && i < sizeof got - 1; i++)
        got[i] = (char)(m[i] - 'a' + 'A'), got[i + 1] = '\0';
      snprintf(allow + strlen(allow), sizeof allow - strlen(allow), "%s%s", allow[0] ? ", " : "",
               got);
    }
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
      if (doc_operation(tmpl, methods[i])) continue;
      struct reply r;
      request(S.port, methods[i], path, NULL, NULL, 0, &r);
      if (r.status != 405 || !r.json)
        CHECK_FAIL_("%s %s: expected a documented 405, got %ld: %s", methods[i], path, r.status,
                    r.body);
      expect_schema(schema_named("Problem405"), r.json, true, NULL, "%s %s -> 405", methods[i],
                    path);
      /* The same set of methods, in any order. */
      const char *a = header(&r, "Allow");
      snprintf(list, sizeof list, "%s", a ? a : "");
      for (char *p = strtok(list, ", "); p; p = strtok(NULL, ", "))
        if (!strstr(allow, p)) CHECK_FAIL_("%s: Allow lists %s, the document does not", path, p);
      if (strlen(a ? a : "") != strlen(allow))
        CHECK_FAIL_("%s: Allow '%s', the document: '%s'", path, a ? a : "", allow);
      reply_free(&r);
    }
  }
  static const char *const unknown[] = {"/nope", "/jobs/1/result", "/transpose/1", "/static"};
  for (size_t i = 0; i < 4; i++) {
    struct reply r;
    request(S.port, "GET", unknown[i], NULL, NULL, 0, &r);
    CHECK(json_object_get(json_object_get(DOC, "paths"), unknown[i]) == NULL);
    if (r.status != 404 || !r.json)
      CHECK_FAIL_("GET %s: expected a documented 404, got %ld: %s", unknown[i], r.status, r.body);
    expect_schema(schema_named("Problem404"), r.json, true, NULL, "GET %s -> 404", unknown[i]);
    reply_free(&r);
  }
}

/* The store's answers, on a gpulabd of their own with a database file and a small
 * --max-db-bytes: a buffer of the run before a restart is 410 gone (as an id and as
 * an input); unfinished jobs past the bound are 507 insufficient_storage, and /health
 * then answers 503 with the store failing. */
static void check_store(const char *dir) {
  static const char *const json_ct[] = {"Content-Type: application/json", NULL};
  static const char *const raw[] = {"Content-Type: application/octet-stream", NULL};
  char db[64], path[80], body[256];
  snprintf(db, sizeof db, "%s/store.db", dir);
  const char *args[] = {"--backend",      "cpu",   "--streams", "1", "--db", db,
                        "--max-db-bytes", "65536", NULL};
  struct gpulabd u;
  struct reply r;
  gpulabd_start(args, &u);
  float floats[4] = {0};
  call_h(&u, "/buffers", "POST", "/buffers?shape=2,2", raw, (const char *)floats, sizeof floats,
         201, NULL, &r);
  long long buffer = JINT(r.json, "id");
  reply_free(&r);
  gpulabd_stop(&u);
  gpulabd_start(args, &u);
  snprintf(path, sizeof path, "/buffers/%lld", buffer);
  call_h(&u, "/buffers/{id}", "GET", path, NULL, NULL, 0, 410, "gone", NULL);
  call_h(&u, "/buffers/{id}", "HEAD", path, NULL, NULL, 0, 410, NULL, NULL);
  call_h(&u, "/buffers/{id}", "DELETE", path, NULL, NULL, 0, 410, "gone", NULL);
  snprintf(body, sizeof body, "{\"a\":{\"buffer\":%lld},\"variant\":\"naive\"," FAST "}", buffer);
  call_h(&u, "/transpose", "POST", "/transpose", json_ct, body, strlen(body), 410, "gone", NULL);
  const char *blocker =
      "{\"type\":\"stencil\",\"params\":{\"n\":2000000,\"radius\":64,\"variant\":\"naive\","
      "\"warmup\":0,\"batches\":100,\"reps\":1}}"; /* holds the one stream */
  call_h(&u, "/jobs", "POST", "/jobs?wait=0", json_ct, blocker, strlen(blocker), 202, NULL, NULL);
  bool refused = false;
  /* 300 at once, then one every 0.1 s for 20 s: accepted rows are written a batch at a
   * time (the accept journal holds them meanwhile), so on a busy machine the bound's
   * check may come some jobs after the bound. */
  for (int i = 0; i < 500 && !refused; i++) {
    if (i >= 300) usleep(100 * 1000);
    snprintf(body, sizeof body,
             "{\"type\":\"transpose\",\"params\":{\"m\":33,\"n\":47,\"variant\":\"naive\"," FAST
             ",\"seed\":%d}}",
             i);
    request(u.port, "POST", "/jobs?wait=0", json_ct, body, strlen(body), &r);
    refused = r.status == 507;
    if (r.status != 202 && !refused)
      CHECK_FAIL_("POST /jobs: HTTP %ld before the bound: %.2000s", r.status, r.body);
    check_reply("/jobs", "POST", &r);
    reply_free(&r);
  }
  if (!refused) CHECK_FAIL_("%s", "500 unfinished jobs and no 507 past --max-db-bytes 65536");
  call_h(&u, "/health", "GET", "/health", NULL, NULL, 0, 503, NULL, &r);
  CHECK_STR_EQ(JSTR(r.json, "store.status"), "failing");
  CHECK_STR_EQ(JSTR(r.json, "store.error.code"), "insufficient_storage");
  reply_free(&r);
  gpulabd_kill(&u); /* its queue is of no interest */
  for (const char *const *ext = (const char *const[]){"", "-wal", "-shm", NULL}; *ext; ext++) {
    snprintf(path, sizeof path, "%s%s", db, *ext);
    unlink(path);
  }
}

/* With --tokens: 401 on protected routes, public ones without a token, a
 * token's rate and buffer quota. */
static void test_tokens(void) {
  static const char *const all[] = {"Authorization: Bearer " TOKEN_ALL, NULL};
  static const char *const slow_json[] = {"Authorization: Bearer " TOKEN_SLOW,
                                          "Content-Type: application/json", NULL};
  static const char *const slow_raw[] = {"Authorization: Bearer " TOKEN_SLOW,
                                         "Content-Type: application/octet-stream", NULL};
  static const char *const wrong[] = {"Authorization: Bearer not-a-token-of-this-server", NULL};
  call_h(&T, "/jobs", "GET", "/jobs", NULL, NULL, 0, 401, "missing_token", NULL);
  call_h(&T, "/metrics", "GET", "/metrics", wrong, NULL, 0, 401, "invalid_token", NULL);
  call_h(&T, "/jobs/{id}/events", "GET", "/jobs/1/events", NULL, NULL, 0, 401, "missing_token",
         NULL);
  call_h(&T, "/jobs", "GET", "/jobs", all, NULL, 0, 200, NULL, NULL);
  call_h(&T, "/health", "GET", "/health", NULL, NULL, 0, 200, NULL, NULL);
  call_h(&T, "/openapi.json", "GET", "/openapi.json", NULL, NULL, 0, 200, NULL, NULL);
  call_h(&T, "/", "GET", "/", NULL, NULL, 0, 200, NULL, NULL);
  const char *small = "{\"m\":5,\"n\":3,\"variant\":\"naive\"," FAST "}";
  call_h(&T, "/transpose", "POST", "/transpose", slow_json, small, strlen(small), 200, NULL, NULL);
  call_h(&T, "/transpose", "POST", "/transpose", slow_json, small, strlen(small), 429,
         "rate_limited", NULL);
  float floats[32] = {0};
  call_h(&T, "/buffers", "POST", "/buffers?shape=32", slow_raw, (const char *)floats, sizeof floats,
         413, "quota_exceeded", NULL);
  call_h(&T, "/jobs/{id}", "GET", "/jobs/1", all, NULL, 0, 200, NULL, NULL);
}

/* Hands every recorded body to tests/openapi/validate.js (ajv), which must find each
 * valid or invalid as recorded. */
static void validate_records(const char *dir) {
  const char *node = getenv("GPULAB_NODE"), *script = getenv("GPULAB_OPENAPI_VALIDATE");
  if (!node || !*node || !script)
    CHECK_FAIL_(
        "%s",
        "node is not installed (apt-get install nodejs npm; scripts/gpulab test installs them): "
        "the schemas cannot be checked (GPULAB_NODE, GPULAB_OPENAPI_VALIDATE are set by ctest)");
  char doc[128], records[128], cmd[1024];
  snprintf(doc, sizeof doc, "%s/openapi.json", dir);
  snprintf(records, sizeof records, "%s/records.json", dir);
  CHECK(json_dump_file(DOC, doc, JSON_COMPACT) == 0);
  CHECK(json_dump_file(RECORDS, records, JSON_COMPACT) == 0);
  fprintf(stderr, "ajv: %zu bodies\n", json_array_size(RECORDS));
  snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' '%s'", node, script, doc, records);
  int rc = system(cmd);
  unlink(doc);
  unlink(records);
  if (rc != 0) CHECK_FAIL_("validate.js found bodies that do not match the document (exit %d)", rc);
}

static char dir[] = "/tmp/gpulab-openapi-XXXXXX", tokens[64];

/* S and T, and the document as S serves it (its answer checked and recorded too). */
static int start(void) {
  static const char *const s_args[] = {
      "--backend",  "cpu",  "--streams",    "1",     "--max-queued",  "3",
      "--max-body", "4096", "--max-upload", "65536", "--max-kernels", "3",
      NULL};
  CHECK(mkdtemp(dir) != NULL);
  snprintf(tokens, sizeof tokens, "%s/tokens", dir);
  FILE *f = fopen(tokens, "w");
  CHECK(f != NULL);
  fputs(TOKEN_ALL " root admin\n" TOKEN_SLOW " slow rate=0.5 max_buffer_bytes=64\n", f);
  fclose(f);
  const char *t_args[] = {"--backend", "cpu", "--tokens", tokens, NULL};
  gpulabd_start(s_args, &S);
  gpulabd_start(t_args, &T);

  struct reply r;
  request(S.port, "GET", "/openapi.json", NULL, NULL, 0, &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK(r.json != NULL && strncmp(JSTR(r.json, "openapi"), "3.1.", 4) == 0);
  DOC = json_incref(r.json);
  RECORDS = json_array();
  check_reply("/openapi.json", "GET", &r);
  reply_free(&r);
  return 0;
}

static void stop(void) {
  json_decref(RECORDS);
  json_decref(DOC);
  gpulabd_stop(&T);
  gpulabd_stop(&S);
  unlink(tokens);
  rmdir(dir);
}

static void test_refs(void) { check_refs(DOC, "$"); }

/* What the cases after test_experiments and test_buffers start from. */
static long long gemm_id, kept, buffer;
static void test_experiments(void) { kept = check_experiments(&gemm_id); }
static void test_job_errors(void) { check_job_errors(kept, gemm_id); }
static void test_job_reads(void) { check_job_reads(kept); }
static void test_buffers(void) { buffer = check_buffers(); }
static void test_busy(void) { check_busy(buffer); }
static void test_store(void) { check_store(dir); }
static void test_problems(void) { check_problems(); }
static void test_kernels(void) { check_kernels(); }

/* Every documented operation was exercised (by the cases before), and every answer
 * recorded is valid against its schema (validate.js). */
static void test_every_operation(void) {
  const char *tmpl, *m;
  json_t *item, *op;
  int missing = 0;
  json_object_foreach(json_object_get(DOC, "paths"), tmpl, item) json_object_foreach(item, m, op) {
    if (!strcmp(m, "parameters")) continue;
    char name[80], upper[8] = "";
    for (size_t i = 0; m[i] && i < 7; i++) upper[i] = (char)(m[i] - 'a' + 'A'), upper[i + 1] = '\0';
    snprintf(name, sizeof name, "%s %s", upper, tmpl);
    int i = 0;
    while (i < n_seen && strcmp(seen[i].op, name) != 0) i++;
    if (i == n_seen) {
      fprintf(stderr, "not exercised: %s\n", name);
      missing++;
    }
  }
  for (int i = 0; i < n_seen; i++) fprintf(stderr, "  %-28s %s\n", seen[i].op, seen[i].statuses);
  CHECK_INT_EQ(missing, 0);
  validate_records(dir);
}

static const struct test_case cases[] = {
    TEST(test_refs),
    TEST(test_validator),
    TEST(test_service_routes),
    TEST(test_experiments),
    TEST_AFTER(test_job_errors, test_experiments),
    TEST_AFTER(test_job_reads, test_job_errors),
    TEST(test_sweeps),
    TEST(test_buffers),
    TEST_AFTER(test_busy, test_buffers),
    TEST(test_kernels),
    TEST(test_problems),
    TEST(test_methods),
    TEST(test_tokens),
    TEST(test_store),
    TEST_AFTER_ALL(test_every_operation),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = start, .teardown = stop};
