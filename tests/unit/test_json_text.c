/* json_text (api/json_text.h) writes the bytes json_dumps(JSON_COMPACT | JSON_ENCODE_ANY)
 * writes: reals (random bit patterns, the formats' edges), strings (every escape, UTF-8
 * of every length, invalid UTF-8 refused by both), nesting, and whole documents: the
 * fuzz corpus's requests and a finished job's answer as the API builds it. */
#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "api/encode.h"
#include "api/json_text.h"
#include "kernels/core/experiment.h"
#include "tests/runner.h"

#ifndef CORPUS_DIR
#error "CORPUS_DIR: tests/fuzz/request_corpus"
#endif

static int compared;

/* Both writers on j: the same text, or both NULL. j is stolen. */
static void same_text(json_t *j, const char *what) {
  size_t len = 0;
  char *ours = json_text(j, &len);
  char *theirs = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
  if (!ours != !theirs || (ours && (strcmp(ours, theirs) != 0 || len != strlen(theirs))))
    CHECK_FAIL_("%s: json_text wrote\n  %s\njson_dumps wrote\n  %s", what, ours ? ours : "(null)",
                theirs ? theirs : "(null)");
  free(ours);
  free(theirs);
  json_decref(j);
  compared++;
}

static uint64_t rng = 0x9E3779B97F4A7C15u;
static uint64_t next_u64(void) { /* xorshift64* */
  rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
  return rng * 2685821657736338717u;
}

static void test_reals(void) {
  const double edges[] = {0.0,
                          -0.0,
                          1.0,
                          -1.0,
                          0.1,
                          0.5,
                          1.5,
                          100.0,
                          123.0,
                          1e15,
                          1e16,
                          9999999999999998.0,
                          1e17,
                          1.5e17,
                          123456789012345678.0,
                          1e-3,
                          1e-4,
                          1.5e-4,
                          1e-5,
                          9.99e-5,
                          1e-300,
                          1e300,
                          DBL_MIN,
                          DBL_MAX,
                          DBL_TRUE_MIN,
                          4.9406564584124654e-324,
                          DBL_EPSILON,
                          0.0015519999724347144,
                          21.113402436853715,
                          0.1952648162841797,
                          1.0 / 3.0,
                          2.0 / 3.0,
                          5e-324,
                          1.7976931348623157e308,
                          2.2250738585072014e-308,
                          9007199254740993.0,
                          4503599627370496.5,
                          0.30000000000000004,
                          9007199254740991.0,
                          9007199254740992.0,
                          4503599627370496.0,
                          32768.0,
                          1e14,
                          99999999999999.0,
                          1234567890123456.0};
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
    char what[64];
    snprintf(what, sizeof what, "real %.17g", edges[i]);
    same_text(json_real(edges[i]), what);
    same_text(json_real(-edges[i]), what);
  }
  /* Where json_text_real works in integers (1e-6 to 1e16), and around its edges: values
   * spread evenly over the exponents, a few ulps around every power of ten, and ties at
   * the 17th digit (1 + j / 2^17 is exactly 18 digits ending in 5), rounded to even. */
  for (int i = 0; i < 200000; i++) {
    double v = pow(10.0, -7.5 + 24.0 * (double)(next_u64() >> 11) / 9007199254740992.0);
    same_text(json_real(i % 2 ? v : -v), "a real of integers");
  }
  for (int k = -8; k <= 18; k++) {
    double p = pow(10.0, k);
    for (int u = -3; u <= 3; u++) {
      double v = p;
      for (int step = 0; step < (u < 0 ? -u : u); step++) v = nextafter(v, u < 0 ? 0 : INFINITY);
      same_text(json_real(v), "around a power of ten");
    }
  }
  for (int j = 1; j < 4000; j++)
    for (int scale = -20; scale <= 50; scale += 7)
      same_text(json_real(ldexp(1.0 + j / 131072.0, scale)), "a tie at the 17th digit");
  /* Random bit patterns cover every exponent; random floats widened to double, the
   * timings' and figures' kind of value. */
  for (int i = 0; i < 200000; i++) {
    uint64_t bits = next_u64();
    double v;
    memcpy(&v, &bits, sizeof v);
    if (!isfinite(v)) continue;
    float f = (float)((double)(next_u64() >> 11) / 9007199254740992.0 * 1000.0);
    double whole = (double)(long long)(next_u64() >> (11 + next_u64() % 53)); /* 0 .. 2^53 */
    json_t *a = json_pack("[f,f,f,f,f,I]", v, (double)f, (double)(next_u64() % 100000) / 1000.0,
                          whole, -whole, (json_int_t)next_u64());
    same_text(a, "random reals");
  }
}

static void test_strings(void) {
  char all[128];
  for (int c = 1; c < 128; c++) all[c - 1] = (char)c;
  all[127] = '\0';
  same_text(json_string(all), "every ASCII character");
  same_text(json_stringn("a\0b", 3), "a NUL inside");
  same_text(json_string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xe4\xb8\xad"),
            "UTF-8 of 2, 3, 4 bytes");
  same_text(json_string(""), "empty");
  const char *invalid[] = {"\xc3", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                           "\xff", "a\x80",    "\xe2\x82"};
  for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) { /* jansson refuses: NULL both */
    json_t *a = json_array();
    json_array_append_new(a, json_stringn_nocheck(invalid[i], strlen(invalid[i])));
    same_text(a, "invalid UTF-8");
  }
  /* Strings of bytes that need escapes, UTF-8 and plain ones, at every offset of an
   * 8-byte word (json_text reads plain runs 8 bytes at a time). */
  static const char *const pieces[] = {"a", "\"", "\\",   "\x01",    "\x1f",
                                       " ", "~",  "\x7f", "\xc3\xa9"};
  for (int i = 0; i < 20000; i++) {
    char s[128] = "";
    for (int k = (int)(next_u64() % 40); k > 0; k--)
      strcat(s, pieces[next_u64() % 5 ? 0 : next_u64() % (sizeof pieces / sizeof *pieces)]);
    same_text(json_string(s), "mixed string");
  }
  json_t *keys = json_object(); /* keys are escaped as strings are */
  json_object_set_new(keys, "q\"uote\\back\nline", json_true());
  json_object_set_new(keys, "\xc3\xa9t\xc3\xa9", json_null());
  same_text(keys, "keys");
}

static void test_shapes(void) {
  same_text(json_object(), "{}");
  same_text(json_array(), "[]");
  same_text(json_pack("{s:[],s:{},s:[[[]]],s:[{},{}]}", "a", "b", "c", "d"), "nested empties");
  same_text(json_pack("{s:I,s:I,s:I,s:b,s:b,s:n}", "min", (json_int_t)INT64_MIN, "max",
                      (json_int_t)INT64_MAX, "zero", (json_int_t)0, "t", 1, "f", 0, "n"),
            "integers and constants");
  json_t *deep = json_array();
  for (int i = 0; i < 200; i++) deep = json_pack("{s:o,s:i}", "in", deep, "i", i);
  same_text(deep, "200 levels");
}

static void test_corpus(void) {
  DIR *d = opendir(CORPUS_DIR);
  CHECK(d != NULL);
  int files = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", CORPUS_DIR, e->d_name);
    json_t *j = json_load_file(path, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!j) continue; /* the corpus holds bad JSON on purpose */
    same_text(j, path);
    files++;
  }
  closedir(d);
  CHECK(files >= 5);
}

/* A finished job's result as the API encodes it (api/encode.h), with a run's timing. */
static void test_result(void) {
  struct exp_spec spec;
  exp_spec_default(EXP_TRANSPOSE, &spec);
  struct exp_result result;
  memset(&result, 0, sizeof result);
  snprintf(result.backend, sizeof result.backend, "cpu");
  result.n_runs = 1;
  struct exp_run *run = &result.runs[0];
  run->available = true;
  run->variant = spec.variants[0];
  run->timing.n_samples = 3;
  run->timing.samples_ms[0] = 0.0015519999724347144;
  run->timing.samples_ms[1] = 1e-5;
  run->timing.samples_ms[2] = 12345.678;
  exp_timing_summarize(&run->timing);
  exp_result_finish(&spec, &result);
  same_text(api_result_to_json(&spec, &result), "a job's result");
  same_text(api_spec_to_json(&spec), "a job's params");
}

static void summary(void) {
  printf("json_text: %d values written as json_dumps writes them\n", compared);
}

static const struct test_case cases[] = {
    TEST(test_reals),  TEST(test_strings), TEST(test_shapes),
    TEST(test_corpus), TEST(test_result),  TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .teardown = summary};
