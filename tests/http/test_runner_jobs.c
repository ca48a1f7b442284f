/* A job's whole path through gpulab-runner where no GPU is (gpulabd --backend cpu
 * --cpu-runner-test): users' transpose kernels, compiled for real, run as the CPU
 * runner's test functions of their entry's name beside the built-ins. A good one
 * passes; a wrong one fails its check with its mismatches; one that works only when
 * its output is NaN passes (poisoned before every launch), one that works once fails;
 * a trap, a stray store, a hang past the deadline and an exit fail their jobs with
 * kernel_fault / kernel_timeout, and the next job passes on a new runner. A cold job
 * takes a user's run too (the CPU runner gets the flag and flushes nothing). A kernel
 * with scratch_bytes gets its scratch zeroed before every launch; one that writes into
 * its input fails its job with input_modified. Users' reduce, scan and histogram
 * kernels run the same way, and their cheats fail. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_client.h"
#include "kernels/core/clock.h"
#include "kernels/core/experiment.h"
#include "runner.h"

static struct gpulabd D;

/* POST src (text/x-cuda) to path, a 201: the new kernel's id. */
static long long post_source(const char *path, const char *src) {
  struct http_reply r;
  http_request(&D, "POST", path, "text/x-cuda", src, strlen(src), &r);
  CHECK_STATUS(&r, 201);
  long long id = JINT(r.json, "id");
  http_reply_free(&r);
  return id;
}

/* A kernel whose entry names a test function; scratch_bytes > 0 asks for scratch (its
 * signature then ends with void* scratch). */
static long long post_kernel_scratch(const char *entry, int scratch_bytes) {
  char src[256], path[200];
  snprintf(src, sizeof src,
           "extern \"C\" __global__ void %s(const float* a, float* b, int m, int n%s) {}\n", entry,
           scratch_bytes ? ", void* scratch" : "");
  snprintf(path, sizeof path, "/kernels?experiment=transpose&name=%s&entry=%s&scratch_bytes=%d",
           entry, entry, scratch_bytes);
  return post_source(path, src);
}

static long long post_kernel(const char *entry) { return post_kernel_scratch(entry, 0); }

/* A 37 x 53 transpose of padded33 and kernel:id with more fields (extra: the timing,
 * cold), waited for. */
static json_t *job_with(long long id, const char *extra) {
  char body[240];
  snprintf(body, sizeof body, "{\"m\":37,\"n\":53,\"variant\":[\"padded33\",\"kernel:%lld\"]%s}",
           id, extra);
  struct http_reply r;
  http_post_json(&D, "/transpose?wait=60", body, &r);
  CHECK(r.status == 200);
  json_t *j = json_incref(r.json);
  http_reply_free(&r);
  return j;
}

static json_t *job(long long id) { return job_with(id, ",\"warmup\":1,\"batches\":3,\"reps\":4"); }

/* A cold job (the runner takes the flag; on the CPU it flushes nothing, as for the
 * built-ins): the user's run is available, checked and timed beside padded33. */
static json_t *cold_job(long long id) {
  return job_with(id, ",\"warmup\":1,\"batches\":3,\"reps\":4,\"cold\":true");
}

/* The leaderboard at the jobs' size (37 x 53): kernel id's row, or NULL. */
static json_t *board_row(long long id) {
  json_t *board = http_get_json(&D, "/leaderboard/transpose?size=37,53");
  json_t *row = NULL;
  size_t i;
  json_t *r;
  json_array_foreach(json_at(board, "rows"), i, r) {
    if (json_integer_value(json_object_get(json_object_get(r, "user_kernel"), "id")) == id)
      row = json_incref(r);
  }
  json_decref(board);
  return row;
}

/* A job of 5 batches of one launch each (the staged kernel's). */
static json_t *staged_job(long long id) {
  return job_with(id, ",\"warmup\":1,\"batches\":5,\"reps\":1");
}

/* A kernel whose timed batches are uneven (one of five 10 times slower: a kernel that
 * works in some launches only looks like this): its run passes but carries warnings:
 * uneven_samples, and the leaderboard ranks it only once a second job reproduced its
 * median within EXP_REPRODUCED. Each launch spins 100 ms, so the medians agree unless
 * the machine's load stretched launches of one job: the check follows the two medians
 * as measured, so that no load can fail it. */
static void staged(void) {
  long long id = post_kernel("staged");
  json_t *j = staged_job(id);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK(JBOOL(j, "result.runs[1].check.passed"));
  CHECK_STR_EQ(JSTR(j, "result.runs[1].warnings[0].code"), "uneven_samples");
  printf("staged: %s\n", JSTR(j, "result.runs[1].warnings[0].detail"));
  CHECK_INT_EQ(JINT(j, "result.runs[1].user_kernel.rules"), 2);
  CHECK(json_at(j, "result.runs[0].warnings") == NULL); /* built-ins are not judged so */
  double first = JNUM(j, "result.runs[1].timing.median_ms");
  json_decref(j);
  json_t *row = board_row(id);
  CHECK(row == NULL); /* not reproduced yet */
  j = staged_job(id);
  CHECK_STR_EQ(JSTR(j, "result.runs[1].warnings[0].code"), "uneven_samples");
  printf("staged again: %s\n", JSTR(j, "result.runs[1].warnings[0].detail"));
  double second = JNUM(j, "result.runs[1].timing.median_ms");
  json_decref(j);
  bool agree = fabs(second / first - 1) <= EXP_REPRODUCED &&
               fabs(first / second - 1) <= EXP_REPRODUCED;
  bool apart = fabs(second / first - 1) > EXP_REPRODUCED &&
               fabs(first / second - 1) > EXP_REPRODUCED;
  printf("staged: medians %.3f and %.3f ms\n", first, second);
  row = board_row(id);
  if (agree) { /* two jobs agree on its median */
    CHECK(row != NULL);
    CHECK_INT_EQ(JINT(row, "user_kernel.rules"), 2);
  } else if (apart) { /* the load stretched one job's launches: still not reproduced */
    CHECK(row == NULL);
  }
  json_decref(row);
}

static void passes(long long good) {
  json_t *j = job(good);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK(JBOOL(j, "result.passed"));
  json_decref(j);
}

static int start(void) {
  const char *args[] = {"--backend",
                        "cpu",
                        "--cpu-runner-test",
                        "--kernel-deadline",
                        "1",
                        "--db",
                        "none",
                        "--streams",
                        "1",
                        "--access-log",
                        "off",
                        NULL};
  gpulabd_start(args, &D);
  return 0;
}

static void stop(void) {
  json_t *h = http_get_json(&D, "/health");
  json_decref(h);
  gpulabd_stop(&D);
}

static long long good; /* a kernel that transposes: the cases after test_good run it */

/* A good kernel, warm and cold. */
static void test_good(void) {
  good = post_kernel("transpose");

  json_t *j = job(good);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK(JBOOL(j, "result.passed"));
  CHECK(JBOOL(j, "result.runs[1].available"));
  CHECK(JBOOL(j, "result.runs[1].check.passed"));
  CHECK_INT_EQ(JINT(j, "result.runs[1].timing.batches"), 3);
  CHECK(JNUM(j, "result.runs[1].timing.median_ms") > 0);
  CHECK(strstr(JSTR(j, "result.runs[1].timing.method"), "poisoned") != NULL);
  CHECK_INT_EQ(JINT(j, "result.runs[1].user_kernel.id"), good);
  json_decref(j);

  j = cold_job(good);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK(JBOOL(j, "result.passed"));
  for (int r = 0; r < 2; r++) {
    char at[64];
    snprintf(at, sizeof at, "result.runs[%d].available", r);
    CHECK(JBOOL(j, at));
    snprintf(at, sizeof at, "result.runs[%d].check.passed", r);
    CHECK(JBOOL(j, at));
    snprintf(at, sizeof at, "result.runs[%d].timing.cold", r); /* nothing was flushed */
    CHECK(!JBOOL(j, at));
  }
  CHECK(JBOOL(j, "params.cold"));
  CHECK_INT_EQ(JINT(j, "result.runs[1].timing.batches"), 3);
  CHECK(JNUM(j, "result.runs[1].timing.median_ms") > 0);
  CHECK(strstr(JSTR(j, "result.runs[1].timing.method"), "cold: passed to the runner") != NULL);
  CHECK_INT_EQ(JINT(j, "result.runs[1].user_kernel.id"), good);
  json_decref(j);
}

/* Kernels the runner's check must catch: wrong, lazy, once, scratch, memo, scribble. */
static void test_checks(void) {
  /* Cold changes nothing in the check: a wrong kernel fails with its mismatches, one
   * that works once fails after its poisoned launches. */
  json_t *j;
  long long wrong = post_kernel("wrong"), once = post_kernel("once");
  j = cold_job(wrong);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK(JBOOL(j, "result.runs[1].available"));
  CHECK(!JBOOL(j, "result.runs[1].check.passed"));
  CHECK_INT_EQ(JINT(j, "result.runs[1].check.mismatches"), 3);
  json_decref(j);
  j = cold_job(once);
  CHECK(!JBOOL(j, "result.runs[1].check.passed"));
  CHECK_INT_EQ(JINT(j, "result.runs[1].check.mismatches"), 37 * 53);
  json_decref(j);

  j = job(wrong);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK(!JBOOL(j, "result.runs[1].check.passed"));
  CHECK_INT_EQ(JINT(j, "result.runs[1].check.mismatches"), 3);
  CHECK(json_is_null(json_at(j, "result.runs[1].figure")));
  json_decref(j);
  j = job(post_kernel("lazy"));
  CHECK(JBOOL(j, "result.runs[1].check.passed"));
  json_decref(j);
  j = job(once);
  CHECK(!JBOOL(j, "result.runs[1].check.passed"));
  CHECK_INT_EQ(JINT(j, "result.runs[1].check.mismatches"), 37 * 53);
  json_decref(j);
  /* Scratch, zeroed before every launch: the test function counts its launches in it
   * and is right only while the count it finds is 0, so every launch of the job, the
   * last one checked included, must find its scratch zeroed again. */
  j = job(post_kernel_scratch("scratch", 64));
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK(JBOOL(j, "result.runs[1].check.passed"));
  json_decref(j);
  /* A result cache: right on the job's inputs, wrong on every fresh set of a timed
   * launch: the run fails its check, saying which launch. */
  j = job(post_kernel("memo"));
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK(!JBOOL(j, "result.runs[1].check.passed"));
  CHECK(strstr(JSTR(j, "result.runs[1].check.failure"), "timed launch 1 of 4 on fresh inputs") !=
        NULL);
  CHECK(json_is_null(json_at(j, "result.runs[1].figure")));
  printf("memo: %s\n", JSTR(j, "result.runs[1].check.failure"));
  json_decref(j);
  /* A kernel that writes into its const input (a stash, a mark): the job fails with
   * input_modified, naming the kernel and the input; the next job passes. */
  long long scribble = post_kernel("scribble");
  j = job(scribble);
  CHECK_STR_EQ(JSTR(j, "state"), "failed");
  CHECK_STR_EQ(JSTR(j, "error.code"), "input_modified");
  char named[64];
  snprintf(named, sizeof named, "kernel:%lld wrote into its input a", scribble);
  if (!strstr(JSTR(j, "error.message"), named)) CHECK_STR_EQ(JSTR(j, "error.message"), named);
  printf("scribble: %s\n", JSTR(j, "error.message"));
  json_decref(j);
}

/* A kernel of a reduce, scan or histogram job (their signatures) whose entry names a
 * test function. */
static long long post_kernel_1d(const char *experiment, const char *entry) {
  const char *params = !strcmp(experiment, "reduce") ? "const float* x, float* out, int n"
                       : !strcmp(experiment, "scan") ? "const float* x, float* y, int n"
                                                     : "const float* x, unsigned int* counts, "
                                                       "int n, int bins";
  char src[256], path[200];
  snprintf(src, sizeof src, "extern \"C\" __global__ void %s(%s) {}\n", entry, params);
  snprintf(path, sizeof path, "/kernels?experiment=%s&name=%s&entry=%s", experiment, entry, entry);
  return post_source(path, src);
}

/* A job of experiment's naive variant and kernel:id at size (its params as JSON). */
static json_t *job_1d(const char *experiment, const char *size, long long id) {
  char body[240], path[64];
  snprintf(body, sizeof body,
           "{%s,\"variant\":[\"naive\",\"kernel:%lld\"],\"warmup\":1,\"batches\":3,"
           "\"reps\":4}",
           size, id);
  snprintf(path, sizeof path, "/%s?wait=60", experiment);
  struct http_reply r;
  http_post_json(&D, path, body, &r);
  CHECK_STATUS(&r, 200);
  json_t *j = json_incref(r.json);
  http_reply_free(&r);
  return j;
}

/* Users' sums, scans and histograms: a right one passes beside naive, every timed launch
 * checked on fresh inputs; one that drops the last value, a result cache, a prefix kept
 * in half precision and a histogram that counts once fail, and one that writes into its
 * input fails its job. */
static void test_sums(void) {
  static const struct {
    const char *experiment, *size, *entry;
    int passes; /* 1 passes; 0 fails its check; -1 fails its job (input_modified) */
  } cases[] = {
      {"reduce", "\"n\":1000", "reduce_sum", 1},
      {"reduce", "\"n\":1000", "reduce_skip", 0},
      {"reduce", "\"n\":1000", "reduce_memo", 0},
      {"scan", "\"n\":1000", "scan_sum", 1},
      {"scan", "\"n\":1000", "scan_float16", 0},
      {"scan", "\"n\":1000", "scan_scribble", -1},
      {"histogram", "\"n\":1000,\"bins\":37", "histogram_count", 1},
      {"histogram", "\"n\":1000,\"bins\":37", "histogram_once", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    long long id = post_kernel_1d(cases[i].experiment, cases[i].entry);
    json_t *j = job_1d(cases[i].experiment, cases[i].size, id);
    if (cases[i].passes < 0) {
      CHECK_STR_EQ(JSTR(j, "state"), "failed");
      CHECK_STR_EQ(JSTR(j, "error.code"), "input_modified");
      printf("%s: %s\n", cases[i].entry, JSTR(j, "error.message"));
      json_decref(j);
      continue;
    }
    CHECK_STR_EQ(JSTR(j, "state"), "done");
    CHECK(JBOOL(j, "result.runs[0].check.passed")); /* naive */
    if (!JBOOL(j, "result.runs[1].available"))
      CHECK_FAIL_("%s: unavailable: %s", cases[i].entry, JSTR(j, "result.runs[1].reason"));
    CHECK_INT_EQ(JINT(j, "result.runs[1].user_kernel.id"), id);
    bool passed = JBOOL(j, "result.runs[1].check.passed");
    json_t *failure = json_at(j, "result.runs[1].check.failure");
    printf("%s: %s, %lld mismatches, rule \"%s\"%s%s\n", cases[i].entry,
           passed ? "passed" : "failed", (long long)JINT(j, "result.runs[1].check.mismatches"),
           JSTR(j, "result.runs[1].check.tolerance_rule"), failure ? "; " : "",
           failure ? json_string_value(failure) : "");
    if (cases[i].passes) {
      CHECK(passed && failure == NULL);
      CHECK(JNUM(j, "result.runs[1].timing.median_ms") > 0);
    } else {
      CHECK(!passed);
      CHECK(json_is_null(json_at(j, "result.runs[1].figure")));
    }
    /* reduce and scan on generated inputs: the rule of rounding as it happens */
    if (strcmp(cases[i].experiment, "histogram"))
      CHECK(strstr(JSTR(j, "result.runs[1].check.tolerance_rule"), "sqrt(") != NULL);
    json_decref(j);
  }
}

/* A kernel sent with cooperative: the flag reaches the runner with its launches (the CPU
 * runner calls a function, so it has nothing to wait for) and the run passes. */
static void test_cooperative(void) {
  const char *src =
      "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n) {}\n";
  struct http_reply r;
  http_request(&D, "POST", "/kernels?experiment=transpose&name=together&cooperative=1",
               "text/x-cuda", src, strlen(src), &r);
  CHECK_STATUS(&r, 201);
  CHECK(JBOOL(r.json, "cooperative"));
  long long id = JINT(r.json, "id");
  http_reply_free(&r);
  json_t *j = job(id);
  CHECK_STR_EQ(JSTR(j, "state"), "done");
  CHECK(JBOOL(j, "result.runs[1].check.passed"));
  json_decref(j);
}

static void test_staged(void) {
  passes(good);
  staged();
}

/* Kernels that trap, stray, hang or exit: the job fails, the next one passes. */
static void test_faults(void) {
  json_t *j;
  const char *bad[4] = {"trap", "oob", "hang", "die"};
  const char *codes[4] = {"kernel_fault", "kernel_fault", "kernel_timeout", "kernel_fault"};
  for (int i = 0; i < 4; i++) {
    long long id = post_kernel(bad[i]);
    double t0 = clock_mono_s();
    j = job(id);
    CHECK_STR_EQ(JSTR(j, "state"), "failed");
    CHECK_STR_EQ(JSTR(j, "error.code"), codes[i]);
    printf("%s: %s: %s (%.2f s)\n", bad[i], codes[i], JSTR(j, "error.message"),
           clock_mono_s() - t0);
    json_decref(j);
    t0 = clock_mono_s();
    passes(good);
    printf("  the next job passed %.3f s later\n", clock_mono_s() - t0);
  }
}

static const struct test_case cases[] = {
    TEST(test_good),
    TEST(test_checks),
    TEST(test_sums),
    TEST(test_cooperative),
    TEST_AFTER(test_staged, test_good),
    TEST_AFTER(test_faults, test_good),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = start, .teardown = stop};
