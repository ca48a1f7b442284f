/* HTTP tests of the job engine on the CPU backend: buffers (.npy up and down) and job
 * inputs from buffers and other jobs' outputs. Dependencies are test_jobs_deps.c's,
 * the fair queue, isolation and graph test_jobs_queue.c's, Server-Sent Events
 * test_jobs_sse.c's; their helpers are jobs_common.h's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs_common.h"
#include "runner.h"

/* ---- buffers ---- */

struct bad_npy {
  const char *what, *message_part;
  char *body;
  size_t len;
};

static void test_bad_npy(const float *x) {
  size_t len;
  char *good = npy_2d(ROWS, COLS, x, &len);
  size_t header = len - ROWS * COLS * 4;
  struct bad_npy bad[10];
  int n = 0;

  char *magic = malloc(len);
  memcpy(magic, good, len);
  magic[1] = 'X';
  bad[n++] = (struct bad_npy){
      "wrong magic", "magic string \\x93NUMPY; write one with np.save('a.npy', a)", magic, len};

  static float i8[ROWS * COLS * 2];
  size_t i8_len;
  bad[n] = (struct bad_npy){"'<i8' dtype",
                            "'<i8' (int64): gpulab reads little-endian float32 ('<f4'), float64 "
                            "('<f8', kept as float32), float16 ('<f2'), int32 ('<i4'), uint32 "
                            "('<u4') and int8 ('|i1'); send a.astype(np.float32)",
                            NULL, 0};
  bad[n].body = npy_file("{'descr': '<i8', 'fortran_order': False, 'shape': (33, 47), }", i8,
                         sizeof i8, &i8_len);
  bad[n++].len = i8_len;

  bad[n] = (struct bad_npy){"big-endian float32", "'>f4'", NULL, 0};
  bad[n].body = npy_file("{'descr': '>f4', 'fortran_order': False, 'shape': (33, 47), }", x,
                         ROWS * COLS * 4, &bad[n].len);
  n++;

  bad[n] = (struct bad_npy){"float64 past float32's range", "does not fit float32", NULL, 0};
  static double huge[ROWS * COLS];
  huge[ROWS * COLS - 1] = 1e39;
  bad[n].body = npy_file("{'descr': '<f8', 'fortran_order': True, 'shape': (33, 47), }", huge,
                         sizeof huge, &bad[n].len);
  n++;

  char *truncated = malloc(len);
  memcpy(truncated, good, len);
  bad[n++] = (struct bad_npy){"truncated body", "truncated", truncated, len - 5};

  char *trailing = malloc(len + 4);
  memcpy(trailing, good, len);
  memset(trailing + len, 0, 4);
  bad[n++] = (struct bad_npy){"trailing bytes", "trailing", trailing, len + 4};

  char *past = malloc(len);
  memcpy(past, good, len);
  past[8] = (char)0xff;
  past[9] = (char)0x7f; /* 32767 */
  bad[n++] = (struct bad_npy){"header length past the body", "runs past the body", past, len};

  bad[n] = (struct bad_npy){"3-D shape", "3 dimensions", NULL, 0};
  bad[n].body = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 11, 47), }", x,
                         ROWS * COLS * 4, &bad[n].len);
  n++;

  char *headless = malloc(header);
  memcpy(headless, good, 8); /* the preamble cut short */
  bad[n++] = (struct bad_npy){"preamble only", "truncated", headless, 8};

  bad[n++] = (struct bad_npy){"empty body", "empty", calloc(1, 1), 0};

  for (int i = 0; i < n; i++) {
    struct http_reply r;
    http_request(&ONE, "POST", "/buffers", "application/x-npy", bad[i].body, bad[i].len, &r);
    fprintf(stderr, "  POST /buffers (%s) -> %ld %s", bad[i].what, r.status, r.body);
    CHECK_ERROR(&r, 400, "invalid_npy", NULL);
    check_contains(error_message(&r), bad[i].message_part);
    http_reply_free(&r);
    free(bad[i].body);
  }
  free(good);
}

/* Raw float32: the shape must account for every byte. Other types: 415. */
static void test_bad_raw(const float *x) {
  static const struct {
    const char *query, *message_part;
  } raw_bad[] = {
      {"?shape=33,46", "trailing"},
      {"?shape=33,48", "truncated"},
      {"?shape=1550", "trailing"},
      {"?shape=33,47,1", "m,n"},
      {"?shape=abc", "m,n"},
      {"?shape=0,47", "empty"},
      {"?shape=-33,47", "m,n"},
      {"?shape=", "shape"},
      {"", "missing shape: this body is not a .npy file"},
  };
  for (size_t i = 0; i < sizeof raw_bad / sizeof raw_bad[0]; i++) {
    char path[64];
    snprintf(path, sizeof path, "/buffers%s", raw_bad[i].query);
    struct http_reply r;
    http_request(&ONE, "POST", path, "application/octet-stream", (const char *)x, ROWS * COLS * 4,
                 &r);
    fprintf(stderr, "  POST %s (raw, %d bytes) -> %ld %s", path, ROWS * COLS * 4, r.status, r.body);
    CHECK_ERROR(&r, 400, "invalid_raw", "shape");
    check_contains(error_message(&r), raw_bad[i].message_part);
    http_reply_free(&r);
  }

  static const char *const types[] = {"application/json", "text/plain", NULL};
  size_t len;
  char *good = npy_2d(ROWS, COLS, x, &len);
  for (size_t i = 0; i < 3; i++) {
    struct http_reply r;
    http_request(&ONE, "POST", "/buffers", types[i], good, len, &r);
    CHECK_ERROR(&r, 415, "unsupported_media_type", NULL);
    check_contains(error_message(&r), "application/x-npy");
    http_reply_free(&r);
  }
  free(good);
}

/* Uploads around --max-upload: at the limit is fine, past it 413 (sized or chunked). */
static void test_upload_limit(void) {
  static float big[MAX_UPLOAD / 4 + 1];
  struct http_reply r;
  long long id = upload(&ONE, "?shape=16384", "application/octet-stream", big, MAX_UPLOAD, 1,
                        MAX_UPLOAD / 4, 1);
  char path[64];
  snprintf(path, sizeof path, "/buffers/%lld", id);
  HTTP_EXPECT(&ONE, "DELETE", path, 200, NULL, NULL);
  for (unsigned flags = 0; flags <= HTTP_CHUNKED; flags += HTTP_CHUNKED) {
    http_client_request(&ONE.http, "POST", "/buffers?shape=16385", "application/octet-stream",
                        (const char *)big, sizeof big, flags, &r);
    CHECK_ERROR(&r, 413, "body_too_large", NULL);
    http_reply_free(&r);
    size_t len;
    char *file = npy_2d(128, 128, big, &len); /* 64 KiB of data plus the header */
    http_client_request(&ONE.http, "POST", "/buffers", "application/x-npy", file, len, flags, &r);
    CHECK_ERROR(&r, 413, "body_too_large", NULL);
    check_contains(error_message(&r), "max-upload");
    http_reply_free(&r);
    free(file);
    http_get(&ONE, "/health", &r); /* still serving */
    CHECK_STATUS(&r, 200);
    http_reply_free(&r);
  }
}

/* DELETE: 200, then the buffer is gone (GET and DELETE 404). */
static void delete_buffers(const long long *ids, int n) {
  char path[64];
  struct http_reply r;
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "/buffers/%lld", ids[i]);
    http_request(&ONE, "DELETE", path, NULL, NULL, 0, &r);
    CHECK_STATUS(&r, 200);
    CHECK_INT_EQ(JINT(r.json, "id"), ids[i]);
    CHECK(JBOOL(r.json, "deleted"));
    http_reply_free(&r);
    HTTP_EXPECT(&ONE, "GET", path, 404, "buffer_not_found", "id");
    HTTP_EXPECT(&ONE, "DELETE", path, 404, "buffer_not_found", "id");
    CHECK(buffer_listed(&ONE, ids[i]) == NULL);
  }
  static const char *const unknown[] = {"/buffers/999999", "/buffers/abc", "/buffers/0"};
  for (int i = 0; i < 3; i++) {
    HTTP_EXPECT(&ONE, "GET", unknown[i], 404, "buffer_not_found", "id");
  }
  http_request(&ONE, "PUT", "/buffers/1", "application/x-npy", "x", 1, &r);
  CHECK_ERROR(&r, 405, "method_not_allowed", NULL);
  http_reply_free(&r);
}

/* A .npy sent as curl sends it without --data-binary and -H: curl -d @a.npy comes as a
 * form (curl's default Content-Type) with its line breaks dropped and, as curl 7.88
 * sends it, nothing from the first NUL byte on; with -H but still -d, mangled the same
 * way; with --data-binary but no -H, whole but as a form. Each answer says to send it
 * with --data-binary @a.npy (and -H where it came as a form). */
static void test_curl_d(void) {
  float *x = matrix(ROWS, COLS, 3);
  size_t len, n = 0;
  char *good = npy_2d(ROWS, COLS, x, &len);
  char *stripped = malloc(len), *no_nul = malloc(len);
  size_t m = 0;
  for (size_t i = 0; i < len; i++) {
    if (good[i] == '\n' || good[i] == '\r') continue;
    stripped[n++] = good[i];
    if (good[i]) no_nul[m++] = good[i];
  }
  static const char form[] = "application/x-www-form-urlencoded";
  const struct {
    const char *what, *type, *body;
    size_t len;
    long status;
    const char *code, *part;
  } cases[] = {
      {"curl -d @a.npy (cut at its first NUL)", form, stripped, strnlen(stripped, n), 400,
       "invalid_npy", "a .npy file that curl -d mangled"},
      {"curl -d @a.npy (line breaks dropped)", form, stripped, n, 400, "invalid_npy",
       "a .npy file that curl -d mangled"},
      {"curl -H 'Content-Type: application/x-npy' -d @a.npy (line breaks dropped)",
       "application/x-npy", stripped, n, 400, "invalid_npy", "curl --data-binary @a.npy"},
      {"curl -H 'Content-Type: application/x-npy' -d @a.npy (NUL bytes dropped too)",
       "application/x-npy", no_nul, m, 400, "invalid_npy", "mangled .npy preamble"},
      {"curl --data-binary @a.npy without -H", form, good, len, 415, "unsupported_media_type",
       "curl -H 'Content-Type: application/x-npy' --data-binary @a.npy"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct http_reply r;
    http_request(&ONE, "POST", "/buffers", cases[i].type, cases[i].body, cases[i].len, &r);
    fprintf(stderr, "  POST /buffers (%s, %zu bytes) -> %ld %s", cases[i].what, cases[i].len,
            r.status, r.body);
    CHECK_ERROR(&r, cases[i].status, cases[i].code, NULL);
    check_contains(error_message(&r), cases[i].part);
    check_contains(error_message(&r), "--data-binary @a.npy");
    http_reply_free(&r);
  }
  /* A form that is no .npy: the media types this route takes. */
  struct http_reply r;
  http_request(&ONE, "POST", "/buffers", form, "m=3", 3, &r);
  CHECK_ERROR(&r, 415, "unsupported_media_type", NULL);
  check_contains(error_message(&r), "application/x-npy");
  http_reply_free(&r);
  free(no_nul);
  free(stripped);
  free(good);
  free(x);
}

static void test_buffers(void) {
  float *x = matrix(ROWS, COLS, 1);
  long long id = upload_matrix(&ONE, ROWS, COLS, x);

  json_t *listed = buffer_listed(&ONE, id);
  CHECK(listed != NULL);
  CHECK_INT_EQ(JINT(listed, "shape[0]"), ROWS);
  CHECK_INT_EQ(JINT(listed, "shape[1]"), COLS);
  CHECK_INT_EQ(JINT(listed, "bytes"), ROWS * COLS * 4);
  CHECK(is_rfc3339_utc(JSTR(listed, "created_at")));
  json_decref(listed);

  float *back = download(&ONE, id, ROWS, COLS);
  CHECK(memcmp(back, x, ROWS * COLS * 4) == 0);
  free(back);
  char path[64];
  snprintf(path, sizeof path, "/buffers/%lld", id);
  struct http_reply r;
  http_request(&ONE, "HEAD", path, NULL, NULL, 0, &r);
  CHECK_INT_EQ(r.status, 200);
  CHECK_INT_EQ(r.body_len, 0);
  http_reply_free(&r);

  /* Raw float32 with ?shape=, 2-D and 1-D. */
  long long raw = upload(&ONE, "?shape=33,47", "application/octet-stream", x, ROWS * COLS * 4, 2,
                         ROWS, COLS);
  back = download(&ONE, raw, ROWS, COLS);
  CHECK(memcmp(back, x, ROWS * COLS * 4) == 0);
  free(back);
  long long flat = upload(&ONE, "?shape=1551", "application/octet-stream; charset=binary", x,
                          ROWS * COLS * 4, 1, ROWS * COLS, 1);
  back = download(&ONE, flat, ROWS * COLS, 0);
  CHECK(memcmp(back, x, ROWS * COLS * 4) == 0);
  free(back);

  test_bad_npy(x);
  test_bad_raw(x);
  test_upload_limit();

  /* Paging, newest first. */
  json_t *page = http_get_json(&ONE, "/buffers?limit=2");
  CHECK_INT_EQ(json_array_size(json_at(page, "buffers")), 2);
  CHECK_INT_EQ(JINT(page, "buffers[0].id"), flat);
  CHECK_INT_EQ(JINT(page, "buffers[1].id"), raw);
  CHECK_INT_EQ(JINT(page, "next_cursor"), raw);
  json_decref(page);
  char cursor[64];
  snprintf(cursor, sizeof cursor, "/buffers?limit=2&cursor=%lld", raw);
  page = http_get_json(&ONE, cursor);
  CHECK(JINT(page, "buffers[0].id") == id);
  json_decref(page);

  long long ids[] = {id, raw, flat};
  delete_buffers(ids, 3);
  free(x);
}

/* ---- inputs: buffers and job outputs ---- */

/* With ONE's stream busy: a queued job reads u, so deleting u is refused (409)
 * until that job is canceled; then it is deleted. */
static void check_in_use(long long u) {
  char body[256];
  snprintf(body, sizeof body,
           "{\"type\":\"transpose\",\"params\":{\"a\":{\"buffer\":%lld},\"variant\":\"copy\"," FAST
           "}}",
           u);
  json_t *job = submit_on(&ONE.http, "queued", body);
  long long id = JINT(job, "id");
  json_decref(job);
  json_t *listed = buffer_listed(&ONE, u);
  CHECK_INT_EQ(JINT(listed, "in_use"), 1);
  json_decref(listed);
  char path[64];
  snprintf(path, sizeof path, "/buffers/%lld", u);
  HTTP_EXPECT(&ONE, "DELETE", path, 409, "buffer_in_use", "id");
  json_decref(cancel(&ONE, id));
  delete_buffers(&u, 1);
}

/* Upload, transpose, transpose the output (kept), download: the same bits. The
 * first transpose waits behind a blocker so that the second can name its output
 * before it ends. Also: a buffer a queued job reads is in use until that job goes. */
static void test_round_trip(void) {
  float *x = matrix(ROWS, COLS, 2);
  long long u = upload_matrix(&ONE, ROWS, COLS, x);
  long long u2 = upload_matrix(&ONE, ROWS, COLS, x);
  long long blocker = blocker_start();
  char body[512];

  snprintf(body, sizeof body,
           "{\"type\":\"transpose\",\"params\":{\"a\":{\"buffer\":%lld}," FAST "}}", u);
  json_t *job = submit_on(&ONE.http, "queued", body);
  long long t1 = JINT(job, "id");
  CHECK_INT_EQ(JINT(job, "params.m"), ROWS); /* the shape came from the buffer */
  CHECK_INT_EQ(JINT(job, "params.n"), COLS);
  CHECK_INT_EQ(JINT(job, "params.a.buffer"), u);
  CHECK_INT_EQ(JINT(job, "output.shape[0]"), COLS);
  CHECK_INT_EQ(JINT(job, "output.shape[1]"), ROWS);
  CHECK(json_is_null(json_at(job, "output.buffer")));
  CHECK_INT_EQ(json_array_size(json_at(job, "depends_on")), 0);
  CHECK(!JBOOL(job, "keep_output"));
  json_decref(job);

  snprintf(body, sizeof body,
           "{\"type\":\"transpose\",\"params\":{\"a\":{\"job\":%lld}," FAST
           "},"
           "\"keep_output\":true}",
           t1);
  job = submit_on(&ONE.http, "waiting", body);
  long long t2 = JINT(job, "id");
  CHECK_INT_EQ(JINT(job, "params.m"), COLS); /* from t1's output */
  CHECK_INT_EQ(JINT(job, "params.n"), ROWS);
  CHECK_INT_EQ(JINT(job, "params.a.job"), t1);
  CHECK_INT_EQ(json_array_size(json_at(job, "depends_on")), 1);
  CHECK_INT_EQ(JINT(job, "depends_on[0]"), t1);
  CHECK(JBOOL(job, "keep_output"));
  CHECK_STR_EQ(JSTR(job, "dependency"), "event");
  CHECK(json_is_null(json_at(job, "started_at")));
  json_decref(job);

  check_in_use(u2);

  cancel_running(&ONE, blocker);
  json_t *j1 = job_wait_final(&ONE, t1, 30), *j2 = job_wait_final(&ONE, t2, 30);
  CHECK_JOB_DONE(j1, "transpose", "cpu");
  CHECK_JOB_DONE(j2, "transpose", "cpu");
  CHECK(json_is_null(json_at(j1, "output.buffer")));
  CHECK(strcmp(JSTR(j2, "started_at"), JSTR(j1, "issued_at")) >= 0);
  long long out = JINT(j2, "output.buffer");
  float *back = download(&ONE, out, ROWS, COLS);
  if (memcmp(back, x, ROWS * COLS * 4) != 0) CHECK_FAIL_("%s", "the round trip changed bits");
  free(back);
  json_t *listed = buffer_listed(&ONE, out);
  CHECK(listed != NULL);
  CHECK_INT_EQ(JINT(listed, "job"), t2);
  CHECK_INT_EQ(JINT(listed, "shape[0]"), ROWS);
  CHECK_INT_EQ(JINT(listed, "shape[1]"), COLS);
  CHECK_INT_EQ(JINT(listed, "in_use"), 0);
  json_decref(listed);

  /* t1's output was not kept: nothing can read it any more. t2's can be read. */
  post_error(&ONE, "/transpose", 409, "output_not_kept", "a", "{\"a\":{\"job\":%lld}}", t1);
  snprintf(body, sizeof body, "{\"a\":{\"job\":%lld}," FAST "}", t2);
  job = job_post_done(&ONE, "cpu", "/transpose", "transpose", body);
  CHECK_INT_EQ(JINT(job, "params.m"), ROWS);
  CHECK_INT_EQ(JINT(job, "params.n"), COLS);
  json_decref(job);
  json_decref(j1);
  json_decref(j2);
  long long gone[] = {u, out};
  delete_buffers(gone, 2);
  free(x);
}

/* Unknown and malformed sources and options, given buffer a: refused, and not one
 * refusal left a job behind (submitted jobs so far). */
static void test_refused_sources(long long a, long long submitted) {
  static const struct {
    const char *path;
    long status;
    const char *code, *field, *body;
  } refused[] = {
      {"/transpose", 404, "buffer_not_found", "a", "{\"a\":{\"buffer\":999999}}"},
      {"/transpose", 404, "job_not_found", "a", "{\"a\":{\"job\":999999}}"},
      {"/stencil", 404, "job_not_found", "x", "{\"x\":{\"job\":999999}}"},
      {"/transpose", 404, "job_not_found", "depends_on", "{\"depends_on\":[999999]}"},
      {"/jobs", 404, "job_not_found", "depends_on",
       "{\"type\":\"transpose\",\"depends_on\":[1,999999]}"},
      /* Malformed sources and options. */
      {"/transpose", 400, "wrong_type", "a", "{\"a\":5}"},
      {"/transpose", 400, "wrong_type", "a", "{\"a\":{\"buffer\":1,\"job\":2}}"},
      {"/transpose", 400, "unknown_field", "a", "{\"a\":{\"file\":1}}"},
      {"/transpose", 400, "out_of_range", "a", "{\"a\":{\"buffer\":0}}"},
      {"/transpose", 400, "wrong_type", "a", "{\"a\":{\"job\":\"1\"}}"},
      {"/transpose", 400, "unknown_field", "x", "{\"x\":{\"buffer\":1}}"},
      {"/transpose", 400, "wrong_type", "depends_on", "{\"depends_on\":5}"},
      {"/transpose", 400, "out_of_range", "depends_on", "{\"depends_on\":[0]}"},
      {"/jobs", 400, "out_of_range", "depends_on",
       "{\"type\":\"gemm\",\"depends_on\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}"},
      {"/transpose", 400, "out_of_range", "priority", "{\"priority\":1001}"},
      {"/transpose", 400, "wrong_type", "priority", "{\"priority\":\"high\"}"},
      {"/transpose", 400, "out_of_range", "isolation", "{\"isolation\":\"alone\"}"},
      {"/transpose", 400, "wrong_type", "keep_output", "{\"keep_output\":1}"},
      {"/transpose", 400, "out_of_range", "dependency", "{\"dependency\":\"x\"}"},
      {"/transpose", 400, "wrong_type", "graph", "{\"graph\":\"yes\"}"},
      {"/jobs", 400, "unknown_field", "params.keep_output",
       "{\"type\":\"gemm\",\"params\":{\"keep_output\":true}}"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
    post_error(&ONE, refused[i].path, refused[i].status, refused[i].code, refused[i].field, "%s",
               refused[i].body);
  post_error(&ONE, "/gemm", 404, "buffer_not_found", "b",
             "{\"a\":{\"buffer\":%lld},\"b\":{\"buffer\":999999}}", a);
  json_t *health = http_get_json(&ONE, "/health");
  CHECK_INT_EQ(JINT(health, "jobs_submitted"), submitted);
  json_decref(health);
}

/* Shapes come from the inputs; sizes and sources that do not fit are refused. */
static void test_shapes(void) {
  json_t *health = http_get_json(&ONE, "/health");
  long long submitted = JINT(health, "jobs_submitted");
  json_decref(health);
  float *x = matrix(ROWS, COLS, 3), *y = matrix(COLS, 5, 4), *z = matrix(20, 7, 5);
  long long a = upload_matrix(&ONE, ROWS, COLS, x);
  long long b = upload_matrix(&ONE, COLS, 5, y);
  long long bad_b = upload_matrix(&ONE, 20, 7, z);
  char body[256];
  struct http_reply r;

  /* Explicit sizes that agree are fine; ones that disagree name both shapes. */
  snprintf(body, sizeof body, "{\"a\":{\"buffer\":%lld},\"m\":33,\"n\":47," FAST "}", a);
  json_decref(job_post_done(&ONE, "cpu", "/transpose", "transpose", body));
  snprintf(body, sizeof body, "{\"a\":{\"buffer\":%lld},\"m\":40,\"n\":47}", a);
  http_post_json(&ONE, "/transpose", body, &r);
  fprintf(stderr, "  POST /transpose %s -> %ld %s", body, r.status, r.body);
  CHECK_ERROR(&r, 400, "shape_mismatch", "a");
  check_contains(error_message(&r), "(33, 47)");
  check_contains(error_message(&r), "(40, 47)");
  http_reply_free(&r);
  snprintf(body, sizeof body, "{\"a\":{\"buffer\":%lld},\"m\":40}", a);
  http_post_json(&ONE, "/transpose", body, &r);
  fprintf(stderr, "  POST /transpose %s -> %ld %s", body, r.status, r.body);
  CHECK_ERROR(&r, 400, "shape_mismatch", "a");
  check_contains(error_message(&r), "(33, 47)");
  check_contains(error_message(&r), "(40, ");
  http_reply_free(&r);
  snprintf(body, sizeof body,
           "{\"type\":\"transpose\",\"params\":{\"a\":{\"buffer\":%lld},\"n\":46}}", a);
  http_post_json(&ONE, "/jobs", body, &r);
  fprintf(stderr, "  POST /jobs %s -> %ld %s", body, r.status, r.body);
  CHECK_INT_EQ(r.status, 400);
  CHECK_STR_EQ(JSTR(r.json, "code"), "shape_mismatch");
  check_contains(error_message(&r), "(33, 47)");
  check_contains(error_message(&r), ", 46)");
  /* Under /jobs every param error names params.<name> (docs/api.md), the engine's
   * refusals of inputs too (once a bug: they named the bare input "a"). */
  const char *field = json_string_value(json_at(r.json, "field"));
  CHECK_SOFT(field && strcmp(field, "params.a") == 0,
             "POST /jobs: a shape_mismatch of params.a has field \"%s\"", field ? field : "null");
  http_reply_free(&r);

  /* gemm: m and k from a, k and n from b; inner dimensions that disagree. */
  snprintf(body, sizeof body, "{\"a\":{\"buffer\":%lld},\"b\":{\"buffer\":%lld}," FAST "}", a, b);
  json_t *job = job_post_done(&ONE, "cpu", "/gemm", "gemm", body);
  CHECK_INT_EQ(JINT(job, "params.m"), ROWS);
  CHECK_INT_EQ(JINT(job, "params.k"), COLS);
  CHECK_INT_EQ(JINT(job, "params.n"), 5);
  CHECK_INT_EQ(JINT(job, "params.b.buffer"), b);
  CHECK_INT_EQ(JINT(job, "output.shape[0]"), ROWS);
  CHECK_INT_EQ(JINT(job, "output.shape[1]"), 5);
  json_decref(job);
  snprintf(body, sizeof body, "{\"a\":{\"buffer\":%lld},\"b\":{\"buffer\":%lld}}", a, bad_b);
  http_post_json(&ONE, "/gemm", body, &r);
  fprintf(stderr, "  POST /gemm %s -> %ld %s", body, r.status, r.body);
  CHECK_ERROR(&r, 400, "shape_mismatch", "b");
  check_contains(error_message(&r), "(20, 7)");
  check_contains(error_message(&r), "47");
  http_reply_free(&r);

  /* A stencil takes any buffer as its x: n is its element count. */
  snprintf(body, sizeof body, "{\"x\":{\"buffer\":%lld},\"radius\":3," FAST "}", a);
  job = job_post_done(&ONE, "cpu", "/stencil", "stencil", body);
  CHECK_INT_EQ(JINT(job, "params.n"), ROWS * COLS);
  json_decref(job);
  submitted += 3;
  test_refused_sources(a, submitted);
  long long ids[] = {a, b, bad_b};
  delete_buffers(ids, 3);
  free(x);
  free(y);
  free(z);
}

static const struct test_case cases[] = {
    TEST(test_buffers), TEST(test_curl_d), TEST(test_shapes), TEST(test_round_trip), TEST_END,
};
const struct test_suite test_suite = {
    .cases = cases, .setup = jobs_servers_start, .teardown = jobs_servers_stop};
