/* The JSON writer (api/json_writer.h): its text is json_text of its tree, byte for byte,
 * for a document with every kind of value (escapes, UTF-8, reals at the formats' edges,
 * big integers, nesting); values jansson refuses are left out as jansson's own calls
 * leave them out (json_object_set_new, json_pack); the caller's buffer, the depth limit
 * and ends that do not match. And job_text's bytes are json_text(job_json(...))'s for
 * finished jobs: the tiny job run on the CPU backend, and every experiment's. */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "api/encode.h"
#include "api/json_text.h"
#include "api/json_writer.h"
#include "api/params.h"
#include "kernels/backends/backend.h"
#include "server/service/job_json.h"
#include "tests/runner.h"

static int compared;

/* Writes a document to both back-ends: its text must be json_text of its tree (both
 * NULL, or the same bytes and length). Returns the text (malloc'd) or NULL. */
static char *both(void (*write)(struct jw *w, const void *arg), const void *arg, const char *what) {
  struct jw w;
  jw_tree_begin(&w);
  write(&w, arg);
  json_t *tree = jw_tree_end(&w);
  char *want = json_text(tree, NULL);
  json_decref(tree);
  jw_text_begin(&w, NULL, 64); /* small: the text grows as it goes */
  write(&w, arg);
  size_t len = 0;
  char *got = jw_text_end(&w, &len);
  if (!got != !want || (got && (strcmp(got, want) != 0 || len != strlen(want))))
    CHECK_FAIL_("%s: the writer's text\n  %s\njson_text of its tree\n  %s", what,
                got ? got : "(null)", want ? want : "(null)");
  free(want);
  compared++;
  return got;
}

static const double reals[] = {0.0,
                               -0.0,
                               0.1,
                               -0.1,
                               1.0,
                               -1.0,
                               100.0,
                               1e15,
                               1e16,
                               1e17,
                               1.5e17,
                               1e-5,
                               1.5e-4,
                               1e300,
                               -1e300,
                               1e-300,
                               DBL_MIN,
                               DBL_MAX,
                               5e-324,
                               DBL_EPSILON,
                               1.0 / 3,
                               9007199254740992.0,
                               9007199254740993.0,
                               123456789012345678.0,
                               0.30000000000000004};

/* Every kind of value, with keys and strings that need escapes. */
static void every_kind(struct jw *w, const void *arg) {
  char ascii[128];
  for (int c = 1; c < 128; c++) ascii[c - 1] = (char)c;
  ascii[127] = '\0';
  jw_object_begin(w, NULL);
  jw_string(w, "ascii", ascii);
  jw_string(w, "utf8", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xe4\xb8\xad");
  jw_string(w, "", "");
  jw_string(w, "q\"uote\\back\nline\x01", "key escaped");
  jw_string(w, "\xc3\xa9t\xc3\xa9", "UTF-8 key");
  jw_array_begin(w, "reals");
  for (size_t i = 0; i < sizeof reals / sizeof *reals; i++) jw_real(w, NULL, reals[i]);
  jw_array_end(w);
  jw_array_begin(w, "integers");
  long long ints[] = {0, -1, 1, INT32_MAX, INT32_MIN, 9007199254740993LL, INT64_MAX, INT64_MIN};
  for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) jw_integer(w, NULL, ints[i]);
  jw_array_end(w);
  jw_bool(w, "true", true);
  jw_bool(w, "false", false);
  jw_null(w, "null");
  jw_object_begin(w, "empty object");
  jw_object_end(w);
  jw_array_begin(w, "empty array");
  jw_array_end(w);
  jw_array_begin(w, "nested");
  for (int i = 0; i < 3; i++) {
    jw_object_begin(w, NULL);
    jw_integer(w, "i", i);
    jw_array_begin_whole(w, "pair");
    jw_real(w, NULL, i * 0.5);
    jw_string(w, NULL, "x");
    jw_array_end(w);
    jw_object_end(w);
  }
  jw_array_begin(w, NULL);
  jw_array_end(w);
  jw_array_end(w);
  jw_integer(w, "last", 1);
  jw_object_end(w);
}

/* A run of random reals of every exponent, and floats widened (timings' kind). */
static void random_reals(struct jw *w, const void *arg) {
  uint64_t rng = *(const uint64_t *)arg;
  jw_array_begin(w, NULL);
  for (int i = 0; i < 2000; i++) {
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    uint64_t bits = rng * 2685821657736338717u;
    double v;
    memcpy(&v, &bits, sizeof v);
    jw_real(w, NULL, v); /* not finite: left out */
    jw_real(w, NULL, (double)(float)((double)(bits >> 11) / 9007199254740992.0 * 1000.0));
    jw_integer(w, NULL, (long long)bits);
  }
  jw_array_end(w);
}

/* What jansson refuses, in lenient and whole containers. */
static void refused(struct jw *w, const void *arg) {
  jw_object_begin(w, NULL);
  jw_integer(w, "a", 1);
  jw_real(w, "nan", NAN);
  jw_real(w, "inf", INFINITY);
  jw_string(w, "null string", NULL);
  jw_string(w, "not UTF-8", "bad\xc3");
  jw_string(w, "bad\xff key", "x");
  jw_integer(w, NULL, 2); /* no key in an object */
  jw_object_begin(w, "lenient");
  jw_real(w, "x", -INFINITY);
  jw_integer(w, "kept", 3);
  jw_object_end(w);
  jw_object_begin_whole(w, "whole"); /* left out whole, and what is inside it */
  jw_integer(w, "x", 1);
  jw_array_begin(w, "inner");
  jw_integer(w, NULL, 1);
  jw_array_end(w);
  jw_string(w, "bad", "\xed\xa0\x80");
  jw_integer(w, "after", 2);
  jw_object_end(w);
  jw_array_begin_whole(w, "whole in whole");
  jw_integer(w, NULL, 1);
  jw_object_begin_whole(w, NULL);
  jw_real(w, "nan", NAN);
  jw_object_end(w);
  jw_array_end(w);
  jw_object_begin_whole(w, "lenient in whole");
  jw_array_begin(w, "list");
  jw_real(w, NULL, NAN);
  jw_real(w, NULL, 0.5);
  jw_array_end(w);
  jw_object_end(w);
  jw_integer(w, "b", 2);
  jw_object_end(w);
}

/* The same document through jansson's own calls. */
static json_t *refused_by_jansson(void) {
  json_t *o = json_object();
  json_object_set_new(o, "a", json_integer(1));
  json_object_set_new(o, "nan", json_real(NAN));
  json_object_set_new(o, "inf", json_real(INFINITY));
  json_object_set_new(o, "null string", json_string(NULL));
  json_object_set_new(o, "not UTF-8", json_string("bad\xc3"));
  json_object_set_new(o, "bad\xff key", json_string("x"));
  json_t *lenient = json_object();
  json_object_set_new(lenient, "x", json_real(-INFINITY));
  json_object_set_new(lenient, "kept", json_integer(3));
  json_object_set_new(o, "lenient", lenient);
  json_object_set_new(
      o, "whole",
      json_pack("{s:i,s:[i],s:s,s:i}", "x", 1, "inner", 1, "bad", "\xed\xa0\x80", "after", 2));
  json_object_set_new(o, "whole in whole", json_pack("[i,{s:f}]", 1, "nan", NAN));
  json_t *list = json_array();
  json_array_append_new(list, json_real(NAN));
  json_array_append_new(list, json_real(0.5));
  json_object_set_new(o, "lenient in whole", json_pack("{s:o}", "list", list));
  json_object_set_new(o, "b", json_integer(2));
  return o;
}

static void whole_top(struct jw *w, const void *arg) {
  jw_object_begin_whole(w, NULL);
  jw_integer(w, "a", 1);
  jw_real(w, "nan", NAN);
  jw_object_end(w);
}

static void test_values(void) {
  free(both(every_kind, NULL, "every kind of value"));
  for (uint64_t seed = 1; seed <= 20; seed++) free(both(random_reals, &seed, "random reals"));
  char *got = both(refused, NULL, "refused values");
  json_t *j = refused_by_jansson();
  char *want = json_text(j, NULL);
  json_decref(j);
  CHECK_STR_EQ(got, want);
  CHECK_STR_EQ(got,
               "{\"a\":1,\"lenient\":{\"kept\":3},\"lenient in whole\":{\"list\":[0.5]},\"b\":2}");
  free(got);
  free(want);
  CHECK(both(whole_top, NULL, "a whole document left out") == NULL);
}

static void one_string(struct jw *w, const void *arg) { jw_string(w, NULL, arg); }

static void deep(struct jw *w, const void *arg) {
  int levels = *(const int *)arg;
  for (int i = 0; i < levels; i++) jw_array_begin(w, NULL);
  jw_integer(w, NULL, levels);
  for (int i = 0; i < levels; i++) jw_array_end(w);
}

static void unmatched(struct jw *w, const void *arg) {
  jw_object_begin(w, NULL);
  jw_array_end(w);
  jw_object_end(w);
}

static void two_documents(struct jw *w, const void *arg) {
  jw_integer(w, NULL, 1);
  jw_integer(w, NULL, 2);
}

static void nothing(struct jw *w, const void *arg) {}

static void unclosed(struct jw *w, const void *arg) {
  jw_object_begin(w, NULL);
  jw_array_begin(w, "a");
}

/* The caller's buffer while the text fits, malloc'd once it does not; the depth limit;
 * documents that are not one value. */
static void test_limits(void) {
  char buf[16];
  struct jw w;
  jw_text_begin(&w, buf, sizeof buf);
  jw_string(&w, NULL, "fits");
  CHECK(jw_text_end(&w, NULL) == buf);
  CHECK_STR_EQ(buf, "\"fits\"");
  jw_text_begin(&w, buf, sizeof buf);
  one_string(&w, "longer than sixteen bytes");
  char *text = jw_text_end(&w, NULL);
  CHECK(text != buf);
  CHECK_STR_EQ(text, "\"longer than sixteen bytes\"");
  free(text);
  int ok = JW_MAX_DEPTH, over = JW_MAX_DEPTH + 1;
  free(both(deep, &ok, "as deep as the writer goes"));
  CHECK(both(deep, &over, "deeper") == NULL);
  CHECK(both(unmatched, NULL, "ends that do not match") == NULL);
  CHECK(both(two_documents, NULL, "two values at the top") == NULL);
  CHECK(both(nothing, NULL, "nothing") == NULL);
  CHECK(both(unclosed, NULL, "containers left open") == NULL);
}

/* job_text against json_text(job_json(...)), with and without the result. */
static void same_job(const struct job_view *v, const char *what) {
  for (int with_result = 0; with_result < 2; with_result++) {
    json_t *j = job_json(v, with_result);
    char *want = json_text(j, NULL);
    size_t len = 0;
    char *got = job_text(v, with_result, &len);
    CHECK(want != NULL);
    if (!got || strcmp(got, want) != 0 || len != strlen(want))
      CHECK_FAIL_("%s: job_text wrote\n  %s\njson_text(job_json) wrote\n  %s", what,
                  got ? got : "(null)", want);
    free(got);
    free(want);
    json_decref(j);
    compared++;
  }
}

/* A finished job's result as the engine keeps it (exp_result_kept: its runs only)
 * writes the same document as the whole result. */
static void same_when_kept(const struct job_view *v, const char *what) {
  struct exp_result *kept = exp_result_kept(v->result);
  CHECK(kept != NULL);
  struct job_view k = *v;
  k.result = kept;
  size_t whole_len = 0, kept_len = 0;
  char *whole = job_text(v, 1, &whole_len), *got = job_text(&k, 1, &kept_len);
  CHECK(whole != NULL && got != NULL);
  if (whole_len != kept_len || strcmp(whole, got) != 0)
    CHECK_FAIL_("%s: the kept result wrote\n  %s\nthe whole one\n  %s", what, got, whole);
  free(whole);
  free(got);
  free(kept);
  compared++;
}

static void finished_view(struct job_view *v, const struct exp_spec *spec,
                          const struct exp_result *result) {
  memset(v, 0, sizeof *v);
  v->id = 12345;
  v->state = JOB_DONE;
  v->spec = *spec;
  snprintf(v->client, sizeof v->client, "127.0.0.1");
  v->created_at = 1764666464.936;
  v->started_at = v->created_at + 0.0000086;
  v->issued_at = v->started_at;
  v->finished_at = v->started_at + 0.000094175;
  v->device = 0;
  v->lane = 2;
  v->result = result;
}

/* The tiny job of issue 16, run on the CPU backend. */
static void test_tiny_job(void) {
  static const char body[] =
      "{\"m\":64,\"n\":64,\"variant\":\"naive\",\"warmup\":0,\"batches\":1,\"reps\":1}";
  struct exp_spec spec;
  struct api_job_options opts;
  struct api_error err;
  CHECK_INT_EQ(api_params_parse(EXP_TRANSPOSE, body, strlen(body), &spec, &opts, &err), 0);
  struct backend *b = NULL;
  char why[256];
  CHECK_INT_EQ(backend_open(BACKEND_CPU, 0, 1, &b, why, sizeof why), 0);
  static struct exp_result result;
  struct backend_job job = {.spec = &spec};
  CHECK_INT_EQ(backend_run(b, 0, &job, NULL, &result, why, sizeof why), 0);
  backend_fence_free(b, job.done);
  backend_buffer_free(b, job.output);
  struct job_view v;
  finished_view(&v, &spec, &result);
  same_job(&v, "the tiny job");
  same_when_kept(&v, "the tiny job");
  v.node = "node-a";
  v.n_parents = 2;
  v.parents[0] = 7;
  v.parents[1] = 9;
  v.output_buffer = 31;
  snprintf(v.error_code, sizeof v.error_code, "odd\"error\":");
  snprintf(v.error_message, sizeof v.error_message, "caf\xc3\xa9\n");
  same_job(&v, "the tiny job, with parents, a node, an output and an error");
  backend_free(b);
}

/* Every experiment's default spec with a result of a run per variant: timings, a
 * check, a kernel's launch, occupancy and work, clocks, a plan and a timeline. */
static void test_every_experiment(void) {
  static struct exp_result result;
  for (int type = 0; type < EXP_TYPE_COUNT; type++) {
    struct exp_spec spec;
    exp_spec_default((enum exp_type)type, &spec);
    memset(&result, 0, sizeof result);
    snprintf(result.backend, sizeof result.backend, "cuda");
    snprintf(result.device_name, sizeof result.device_name, "NVIDIA H200");
    result.ceilings.copy_gbps = 3900.5;
    result.n_runs = spec.n_variants;
    for (int i = 0; i < result.n_runs; i++) {
      struct exp_run *r = &result.runs[i];
      r->variant = spec.variants[i];
      exp_run_label(&spec, i, r->label, sizeof r->label);
      r->available = i != 1;
      snprintf(r->reason, sizeof r->reason, "not on this backend");
      r->timing.n_samples = 3;
      r->timing.samples_ms[0] = 0.0015519999724347144;
      r->timing.samples_ms[1] = 1e-5;
      r->timing.samples_ms[2] = 12345.678;
      exp_timing_summarize(&r->timing);
      r->check.done = true;
      r->check.passed = true;
      r->check.compared = 4096;
      snprintf(r->check.tolerance_rule, sizeof r->check.tolerance_rule, "exact");
      r->kernel.has_launch = r->kernel.has_occupancy = r->kernel.has_work = true;
      r->kernel.grid[0] = 8;
      r->kernel.block[0] = 256;
      r->kernel.occupancy = 0.75;
      r->kernel.work.bytes = 32768;
      r->kernel.work.flops = 1e9;
      r->clocks.valid = true;
      r->clocks.power_w = 412.5;
      r->clocks.reasons = EXP_CLOCK_THROTTLED;
      r->graph_us_per_launch = 2.5;
      r->stream_us_per_launch = 4.0;
      r->plan.streams = i + 1;
      r->n_timeline = 6;
      for (int t = 0; t < r->n_timeline; t++) {
        r->timeline[t].op = (uint8_t)(t % EXP_OP_COUNT);
        r->timeline[t].chunk = (uint16_t)(t / EXP_OP_COUNT);
        r->timeline[t].start_ms = 0.1f * (float)t;
        r->timeline[t].end_ms = 0.1f * (float)t + 0.05f;
      }
    }
    exp_result_finish(&spec, &result);
    struct job_view v;
    finished_view(&v, &spec, &result);
    same_job(&v, exp_type_name((enum exp_type)type));
    same_when_kept(&v, exp_type_name((enum exp_type)type));
    v.state = JOB_QUEUED; /* not yet run */
    v.result = NULL;
    v.started_at = v.issued_at = v.finished_at = 0;
    v.device = v.lane = -1;
    v.cancel_requested = true;
    same_job(&v, exp_type_name((enum exp_type)type));
  }
}

static void summary(void) {
  printf("json_writer: %d documents written alike to text and to a tree\n", compared);
}

static const struct test_case cases[] = {
    TEST(test_values),           TEST(test_limits), TEST(test_tiny_job),
    TEST(test_every_experiment), TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .teardown = summary};
