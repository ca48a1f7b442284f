/* HTTP tests of the job engine on the CUDA backend: a .npy round trip through two
 * transposes on the device, a diamond whose last child is issued behind event
 * fences before the root has finished, a chain of 20 stencils, exclusive and shared
 * timing, CUDA Graph launch figures, and runs that keep their scratch across launches. Skips (77) where no CUDA device answers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_client.h"
#include "runner.h"

#define ROWS 1000 /* the round trip's matrix: tails in both dimensions */
#define COLS 777
#define CHAIN 20

static struct gpulabd D;

/* Starts gpulabd --backend cuda, or exits 77 when it says CUDA is unavailable. */
static void start_or_skip(void) {
  static const char *const args[] = {"--backend", "cuda", "--streams", "4", NULL};
  gpulabd_start_or_skip(args, &D);
}

/* POSTs a JSON body (printf-style) to /jobs?wait=0: 202 while pending, 200 if it
 * ended at once. Returns the job's id. */
static long long submit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static long long submit(const char *fmt, ...) {
  char body[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(body, sizeof body, fmt, ap);
  va_end(ap);
  struct http_reply r;
  http_post_json(&D, "/jobs?wait=0", body, &r);
  if (r.status != 202 && r.status != 200)
    CHECK_FAIL_("POST /jobs %s: HTTP %ld, body: %.4000s", body, r.status, r.body);
  CHECK_STATUS(&r, r.status);
  long long id = JINT(r.json, "id");
  http_reply_free(&r);
  return id;
}

static json_t *wait_done(long long id, const char *type) {
  json_t *job = job_wait_final(&D, id, 120);
  CHECK_JOB_DONE(job, type, "cuda");
  return job;
}

/* A child was issued and started no earlier than its parent was issued. */
static void check_after(json_t *child, json_t *parent) {
  const char *issued = JSTR(parent, "issued_at");
  if (strcmp(JSTR(child, "started_at"), issued) < 0 || strcmp(JSTR(child, "issued_at"), issued) < 0)
    CHECK_FAIL_("job %lld started %s / issued %s before its parent %lld was issued (%s)",
                JINT(child, "id"), JSTR(child, "started_at"), JSTR(child, "issued_at"),
                JINT(parent, "id"), issued);
}

/* GET /buffers/{id}: a float32 .npy of this shape (cols 0: 1-D); returns its data
 * (the caller frees). */
static float *download(long long id, long long rows, long long cols) {
  char path[64];
  snprintf(path, sizeof path, "/buffers/%lld", id);
  struct http_reply r;
  http_get(&D, path, &r);
  if (r.status != 200) CHECK_FAIL_("GET %s: HTTP %ld, body %.2000s", path, r.status, r.body);
  CHECK_STR_EQ(r.content_type, "application/x-npy");
  const unsigned char *b = (const unsigned char *)r.body;
  CHECK(r.body_len >= 10 && memcmp(b, "\x93NUMPY\x01\x00", 8) == 0);
  size_t header = 10 + (size_t)(b[8] | b[9] << 8);
  char shape[64];
  if (cols)
    snprintf(shape, sizeof shape, "'shape': (%lld, %lld)", rows, cols);
  else
    snprintf(shape, sizeof shape, "'shape': (%lld,)", rows);
  char *dict = strndup(r.body + 10, header - 10);
  if (!strstr(dict, shape) || !strstr(dict, "'<f4'"))
    CHECK_FAIL_("header %s lacks %s", dict, shape);
  free(dict);
  size_t bytes = (size_t)rows * (size_t)(cols ? cols : 1) * 4;
  CHECK_INT_EQ(r.body_len - header, bytes);
  float *data = malloc(bytes);
  CHECK(data != NULL);
  memcpy(data, r.body + header, bytes);
  http_reply_free(&r);
  return data;
}

/* Upload, transpose (output not kept), transpose that output (kept), download:
 * the same bits. The first transpose is slow enough (50 batches of 200 reps of 4
 * variants) for the second to name its output before it ends. */
static void test_round_trip(void) {
  size_t count = (size_t)ROWS * COLS, header = 128;
  char *file = malloc(header + count * 4);
  CHECK(file != NULL);
  memcpy(file, "\x93NUMPY\x01\x00", 8);
  file[8] = (char)(header - 10);
  file[9] = 0;
  int n = snprintf(file + 10, header - 10,
                   "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", ROWS, COLS);
  memset(file + 10 + n, ' ', header - 10 - (size_t)n - 1);
  file[header - 1] = '\n';
  float *x = (float *)malloc(count * 4);
  CHECK(x != NULL);
  for (size_t i = 0; i < count; i++) x[i] = (float)((long)(i * 7919 % 2001) - 1000) / 64.0f;
  x[0] = -0.0f;
  x[1] = 1e-40f; /* subnormal: a copy keeps its bits */
  memcpy(file + header, x, count * 4);
  struct http_reply r;
  http_request(&D, "POST", "/buffers", "application/x-npy", file, header + count * 4, &r);
  CHECK_STATUS(&r, 201);
  long long u = JINT(r.json, "id");
  CHECK_INT_EQ(JINT(r.json, "shape[0]"), ROWS);
  CHECK_INT_EQ(JINT(r.json, "shape[1]"), COLS);
  http_reply_free(&r);
  free(file);

  long long t1 = submit(
      "{\"type\":\"transpose\",\"params\":{\"a\":{\"buffer\":%lld},"
      "\"warmup\":3,\"batches\":50,\"reps\":200}}",
      u);
  char body[256];
  snprintf(body, sizeof body,
           "{\"type\":\"transpose\",\"params\":{\"a\":{\"job\":%lld},\"warmup\":1,\"batches\":2,"
           "\"reps\":5},\"keep_output\":true}",
           t1);
  http_post_json(&D, "/jobs?wait=0", body, &r);
  if (r.status == 409)
    CHECK_FAIL_("job %lld ended before its child could name its output: %s", t1, r.body);
  CHECK_STATUS(&r, 202);
  long long t2 = JINT(r.json, "id");
  http_reply_free(&r);
  json_t *j1 = wait_done(t1, "transpose"), *j2 = wait_done(t2, "transpose");
  CHECK_INT_EQ(JINT(j1, "params.m"), ROWS);
  CHECK_INT_EQ(JINT(j1, "params.n"), COLS);
  CHECK(json_is_null(json_at(j1, "output.buffer")));
  check_after(j2, j1);
  fprintf(stderr, "  round trip: job %lld issued %s, finished %s; its child issued %s\n", t1,
          JSTR(j1, "issued_at"), JSTR(j1, "finished_at"), JSTR(j2, "issued_at"));
  float *back = download(JINT(j2, "output.buffer"), ROWS, COLS);
  for (size_t i = 0; i < count; i++)
    if (memcmp(&back[i], &x[i], 4) != 0)
      CHECK_FAIL_("the round trip changed element %zu: %g vs %g", i, back[i], x[i]);
  free(back);
  free(x);
  json_decref(j1);
  json_decref(j2);
}

/* A (a 4096 x 4096 transpose, all variants: its host check is long); B and C read
 * its output, D waits for both and reads B's. The children are one-launch
 * stencils of radius 0 (y = x exactly), so D's output is A's, and D is issued
 * behind event fences while A is still being checked. */
static void test_diamond(void) {
  long long a = submit(
      "{\"type\":\"transpose\",\"params\":{\"m\":4096,\"n\":4096},"
      "\"keep_output\":true}");
#define CHILD "\"radius\":0,\"variant\":\"naive\",\"warmup\":0,\"batches\":1,\"reps\":1"
  long long b = submit("{\"type\":\"stencil\",\"params\":{\"x\":{\"job\":%lld}," CHILD "}}", a);
  long long c = submit("{\"type\":\"stencil\",\"params\":{\"x\":{\"job\":%lld}," CHILD "}}", a);
  long long d = submit("{\"type\":\"stencil\",\"params\":{\"x\":{\"job\":%lld}," CHILD
                       "},"
                       "\"depends_on\":[%lld,%lld],\"keep_output\":true}",
                       b, b, c);
  json_t *ja = wait_done(a, "transpose"), *jb = wait_done(b, "stencil");
  json_t *jc = wait_done(c, "stencil"), *jd = wait_done(d, "stencil");
  check_after(jb, ja);
  check_after(jc, ja);
  check_after(jd, jb);
  check_after(jd, jc);
  fprintf(stderr, "  diamond: A issued %s finished %s; D issued %s finished %s\n",
          JSTR(ja, "issued_at"), JSTR(ja, "finished_at"), JSTR(jd, "issued_at"),
          JSTR(jd, "finished_at"));
  if (strcmp(JSTR(jd, "issued_at"), JSTR(ja, "finished_at")) >= 0)
    CHECK_FAIL_("D was issued at %s, not before A finished (%s)", JSTR(jd, "issued_at"),
                JSTR(ja, "finished_at"));
  CHECK_INT_EQ(JINT(jd, "params.n"), 4096 * 4096);
  CHECK_INT_EQ(json_array_size(json_at(jd, "depends_on")), 2);
  float *oa = download(JINT(ja, "output.buffer"), 4096, 4096);
  float *od = download(JINT(jd, "output.buffer"), 4096 * 4096, 0);
  if (memcmp(oa, od, (size_t)4096 * 4096 * 4) != 0)
    CHECK_FAIL_("%s", "D's output differs from A's");
  free(oa);
  free(od);
  json_decref(ja);
  json_decref(jb);
  json_decref(jc);
  json_decref(jd);
}

/* CHAIN stencils, each reading the previous one's output, shared, all at once. */
static void test_chain(void) {
  long long ids[CHAIN];
  ids[0] = submit(
      "{\"type\":\"stencil\",\"params\":{\"n\":1048576,\"radius\":2,\"warmup\":2,"
      "\"batches\":2,\"reps\":10},\"isolation\":\"shared\",\"keep_output\":true}");
  for (int i = 1; i < CHAIN; i++)
    ids[i] = submit(
        "{\"type\":\"stencil\",\"params\":{\"x\":{\"job\":%lld},\"radius\":2,"
        "\"warmup\":2,\"batches\":2,\"reps\":10},\"isolation\":\"shared\","
        "\"keep_output\":true}",
        ids[i - 1]);
  json_t *prev = NULL;
  for (int i = 0; i < CHAIN; i++) {
    json_t *job = wait_done(ids[i], "stencil");
    CHECK_STR_EQ(JSTR(job, "isolation"), "shared");
    CHECK_INT_EQ(JINT(job, "params.n"), 1048576);
    if (prev) {
      CHECK_INT_EQ(JINT(job, "depends_on[0]"), ids[i - 1]);
      check_after(job, prev);
    }
    json_decref(prev);
    prev = job;
  }
  json_decref(prev);
}

static int runs_contended(json_t *job) {
  size_t i;
  json_t *run;
  int n = 0;
  json_array_foreach(json_at(job, "result.runs"), i, run) n += JBOOL(run, "contended");
  return n;
}

static void test_isolation(void) {
  long long ex[4];
  for (int i = 0; i < 4; i++)
    ex[i] = submit(
        "{\"type\":\"stencil\",\"params\":{\"n\":4194304,\"radius\":8,\"batches\":5,"
        "\"reps\":20}}");
  for (int i = 0; i < 4; i++) {
    json_t *job = wait_done(ex[i], "stencil");
    CHECK_STR_EQ(JSTR(job, "isolation"), "exclusive");
    if (runs_contended(job)) CHECK_FAIL_("exclusive job %lld was contended", ex[i]);
    json_decref(job);
  }
  long long sh[3];
  for (int i = 0; i < 3; i++)
    sh[i] = submit(
        "{\"type\":\"stencil\",\"params\":{\"n\":16777216,\"radius\":8,\"batches\":10,"
        "\"reps\":20},\"isolation\":\"shared\"}");
  int contended = 0;
  char last_start[40] = "", first_end[40] = "~";
  for (int i = 0; i < 3; i++) {
    json_t *job = wait_done(sh[i], "stencil");
    CHECK_STR_EQ(JSTR(job, "isolation"), "shared");
    contended += runs_contended(job);
    if (strcmp(JSTR(job, "started_at"), last_start) > 0)
      snprintf(last_start, sizeof last_start, "%s", JSTR(job, "started_at"));
    if (strcmp(JSTR(job, "finished_at"), first_end) < 0)
      snprintf(first_end, sizeof first_end, "%s", JSTR(job, "finished_at"));
    json_decref(job);
  }
  CHECK(contended > 0);
  if (strcmp(last_start, first_end) >= 0)
    CHECK_FAIL_("the shared jobs did not overlap: the last started %s, the first ended %s",
                last_start, first_end);
}

static void test_graph(void) {
  json_t *job = job_post_done(&D, "cuda", "/transpose", "transpose",
                              "{\"m\":1024,\"n\":1024,\"variant\":\"naive\",\"reps\":50,"
                              "\"graph\":true}");
  CHECK(JBOOL(job, "params.graph"));
  double stream_us = JNUM(job, "result.runs[0].launch.stream_us");
  double graph_us = JNUM(job, "result.runs[0].launch.graph_us");
  fprintf(stderr, "  graph: %.2f us per launch on the stream, %.2f us in a graph\n", stream_us,
          graph_us);
  CHECK(stream_us > 0 && graph_us > 0);
  CHECK_NEAR(JNUM(job, "result.runs[0].launch.saved_us"), stream_us - graph_us, 1e-3);
  CHECK(strstr(JSTR(job, "result.runs[0].timing.method"), "Graph") != NULL);
  json_decref(job);
}

/* Reduce's, scan's and histogram's runs keep their scratch for all their launches
 * (cuda_launch.d_temp): best's reduce then leaves its ticket 0 for the next launch
 * instead of zeroing it first, best's scan the next epoch in its status words, best's
 * histogram (up to 1024 bins) its counts zero. Every launch of a run must find it so, in batches, in
 * a graph and cold, or the checked output (the last launch's) is wrong. */
static void test_kept_temp(void) {
  static const char *const modes[] = {"", ",\"graph\":true", ",\"cold\":true"};
  static const char *const jobs[][2] = {
      {"reduce", "\"variant\":[\"best\",\"cub\",\"warp\"]"},
      {"scan", "\"variant\":[\"best\",\"cub\",\"shared\"]"},
      {"histogram", "\"bins\":256,\"variant\":[\"best\",\"cub\"]"},
      {"histogram", "\"bins\":1024,\"variant\":[\"best\"]"}, /* best's most kept bins */
  };
  for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
    for (size_t k = 0; k < sizeof jobs / sizeof jobs[0]; k++) {
      char path[32], body[256];
      snprintf(path, sizeof path, "/%s", jobs[k][0]);
      snprintf(body, sizeof body, "{\"n\":1000003,%s,\"warmup\":2,\"batches\":3,\"reps\":7%s}",
               jobs[k][1], modes[m]);
      json_t *job = job_post_done(&D, "cuda", path, jobs[k][0], body);
      for (size_t r = 0; r < json_array_size(json_at(job, "result.runs")); r++) {
        char at[48];
        snprintf(at, sizeof at, "result.runs[%zu].available", r);
        if (!JBOOL(job, at)) CHECK_FAIL_("%s %s: run %zu unavailable", path, body, r);
      }
      json_decref(job);
    }
}

static int start(void) {
  start_or_skip();
  return 0;
}

static void stop(void) { gpulabd_stop(&D); }

static void test_none_failed(void) {
  json_t *health = http_get_json(&D, "/health");
  CHECK_INT_EQ(JINT(health, "jobs.failed"), 0);
  json_decref(health);
}

static const struct test_case cases[] = {
    TEST(test_round_trip),
    TEST(test_diamond),
    TEST(test_chain),
    TEST(test_isolation),
    TEST(test_graph),
    TEST(test_kept_temp),
    TEST_AFTER_ALL(test_none_failed),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = start, .teardown = stop};
