/* The helpers of the job engine's HTTP tests (test_jobs_*.c): two gpulabd, jobs
 * submitted, canceled and blocked, .npy files and buffers up and down. */
#include "jobs_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

struct gpulabd ONE;
struct gpulabd THREE;

int jobs_servers_start(void) {
  static const char *const args_one[] = {
      "--backend",      "cpu", "--streams", "1", "--max-queued", "5", "--max-upload", "65536",
      "--http-threads", "2",   NULL};
  static const char *const args_three[] = {"--backend", "cpu", "--streams", "3", NULL};
  gpulabd_start(args_one, &ONE);
  gpulabd_start(args_three, &THREE);
  return 0;
}

void jobs_servers_stop(void) {
  gpulabd_stop(&THREE);
  gpulabd_stop(&ONE);
}

json_t *job_get(struct gpulabd *d, long long id) {
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", id);
  return http_get_json(d, path);
}

bool final_state(const char *state) {
  return !strcmp(state, "done") || !strcmp(state, "failed") || !strcmp(state, "canceled");
}

/* POSTs body to /jobs?wait=0 through c: 202 with Location while the job is pending,
 * 200 when it ended at once. Checks the state when want_state is not NULL. Returns
 * the job (the caller decrefs). */
json_t *submit_on(struct http_client *c, const char *want_state, const char *body) {
  struct http_reply r;
  http_client_request(c, "POST", "/jobs?wait=0", "application/json", body, strlen(body), 0, &r);
  if (r.status != 200 && r.status != 202)
    CHECK_FAIL_("POST /jobs %s: HTTP %ld, body: %.4000s", body, r.status, r.body);
  CHECK_STATUS(&r, r.status);
  const char *state = JSTR(r.json, "state");
  CHECK_INT_EQ(r.status, final_state(state) ? 200 : 202);
  if (r.status == 202) {
    char location[64];
    snprintf(location, sizeof location, "/jobs/%lld", JINT(r.json, "id"));
    CHECK_STR_EQ(r.location, location);
  }
  if (want_state && strcmp(state, want_state) != 0)
    CHECK_FAIL_("POST /jobs %s: state %s, expected %s; body: %.4000s", body, state, want_state,
                r.body);
  CHECK(is_rfc3339_utc(JSTR(r.json, "created_at")));
  json_t *job = json_incref(r.json);
  http_reply_free(&r);
  return job;
}

/* submit_on d's client with a printf-style body; returns the job's id. */
long long submit(struct gpulabd *d, const char *want_state, const char *fmt, ...) {
  char body[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(body, sizeof body, fmt, ap);
  va_end(ap);
  json_t *job = submit_on(&d->http, want_state, body);
  long long id = JINT(job, "id");
  json_decref(job);
  return id;
}

/* POSTs a JSON body (printf-style) to path on d and expects this error. */
void post_error(struct gpulabd *d, const char *path, long status, const char *code,
                const char *field, const char *fmt, ...) {
  char body[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(body, sizeof body, fmt, ap);
  va_end(ap);
  struct http_reply r;
  http_post_json(d, path, body, &r);
  fprintf(stderr, "  POST %s %s -> %ld %s\n", path, body, r.status, r.body);
  CHECK_ERROR(&r, status, code, field);
  http_reply_free(&r);
}

/* The error reply's message, its problem detail (borrowed from r). */
const char *error_message(const struct http_reply *r) { return JSTR(r->json, "detail"); }

void check_contains(const char *text, const char *part) {
  if (!text || !strstr(text, part)) CHECK_FAIL_("\"%s\" does not contain \"%s\"", text, part);
}

/* DELETE /jobs/{id}: 200; returns the job as answered (the caller decrefs). */
json_t *cancel(struct gpulabd *d, long long id) {
  char path[64];
  snprintf(path, sizeof path, "/jobs/%lld", id);
  struct http_reply r;
  http_request(d, "DELETE", path, NULL, NULL, 0, &r);
  CHECK_STATUS(&r, 200);
  CHECK_INT_EQ(JINT(r.json, "id"), id);
  json_t *job = json_incref(r.json);
  http_reply_free(&r);
  return job;
}

long long blocker_submit(struct gpulabd *d, struct http_client *c, bool running) {
  json_t *job = submit_on(c, NULL, BLOCKER);
  long long id = JINT(job, "id");
  json_decref(job);
  if (running) job_wait_state(d, id, "running", 30);
  return id;
}

long long blocker_start_on(struct http_client *c) { return blocker_submit(&ONE, c, true); }
long long blocker_start(void) { return blocker_start_on(&ONE.http); }

long long health_jobs(struct gpulabd *d, const char *state) {
  json_t *health = http_get_json(d, "/health");
  char path[32];
  snprintf(path, sizeof path, "jobs.%s", state);
  long long n = JINT(health, path);
  json_decref(health);
  return n;
}

void check_state(struct gpulabd *d, long long id, const char *state) {
  json_t *job = job_get(d, id);
  CHECK_STR_EQ(JSTR(job, "state"), state);
  json_decref(job);
}

/* Cancels a running job: 200 at once (still running, cancel_requested), canceled
 * at its next batch. */
void cancel_running(struct gpulabd *d, long long id) {
  json_t *job = cancel(d, id);
  if (strcmp(JSTR(job, "state"), "running") == 0)
    CHECK(JBOOL(job, "cancel_requested"));
  else
    CHECK_STR_EQ(JSTR(job, "state"), "canceled");
  json_decref(job);
  job = job_wait_final(d, id, 10);
  CHECK_STR_EQ(JSTR(job, "state"), "canceled");
  CHECK_STR_EQ(JSTR(job, "error.code"), "canceled");
  CHECK(is_rfc3339_utc(JSTR(job, "started_at")));
  CHECK(is_rfc3339_utc(JSTR(job, "finished_at")));
  CHECK(JNUM(job, "run_ms") >= 0);
  CHECK(json_is_null(json_at(job, "result")));
  CHECK(json_at(job, "cancel_requested") == NULL);
  json_decref(job);
}

/* ---- .npy files ---- */

/* A version 1.0 .npy file: the header dict as given, padded with spaces to a
 * multiple of 64 bytes with its newline, then data_bytes of data. */
char *npy_file(const char *dict, const void *data, size_t data_bytes, size_t *len) {
  size_t dict_len = strlen(dict);
  size_t header = (10 + dict_len + 1 + 63) / 64 * 64;
  char *f = malloc(header + data_bytes);
  CHECK(f != NULL);
  memcpy(f, "\x93NUMPY\x01\x00", 8);
  f[8] = (char)((header - 10) & 0xff);
  f[9] = (char)((header - 10) >> 8);
  memcpy(f + 10, dict, dict_len);
  memset(f + 10 + dict_len, ' ', header - 10 - dict_len - 1);
  f[header - 1] = '\n';
  if (data_bytes) memcpy(f + header, data, data_bytes);
  *len = header + data_bytes;
  return f;
}

char *npy_2d(int rows, int cols, const float *data, size_t *len) {
  char dict[128];
  snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", rows,
           cols);
  return npy_file(dict, data, (size_t)rows * cols * sizeof(float), len);
}

/* Known values with exact float bit patterns: fractions, signs, -0, a subnormal. */
float *matrix(int rows, int cols, int salt) {
  float *m = malloc((size_t)rows * cols * sizeof *m);
  CHECK(m != NULL);
  for (int i = 0; i < rows * cols; i++) m[i] = (float)((i * 7919 + salt) % 2001 - 1000) / 64.0f;
  m[0] = -0.0f;
  if (rows * cols > 1) m[1] = 1e-40f;
  return m;
}

/* POSTs a file to /buffers[query] as content_type; expects 201 and checks the
 * reply. Returns the buffer's id. */
long long upload(struct gpulabd *d, const char *query, const char *content_type, const void *body,
                 size_t len, int ndim, long long rows, long long cols) {
  char path[128];
  snprintf(path, sizeof path, "/buffers%s", query);
  struct http_reply r;
  http_request(d, "POST", path, content_type, body, len, &r);
  CHECK_STATUS(&r, 201);
  long long id = JINT(r.json, "id");
  CHECK(id > 0);
  char location[64];
  snprintf(location, sizeof location, "/buffers/%lld", id);
  CHECK_STR_EQ(r.location, location);
  CHECK_INT_EQ(json_array_size(json_at(r.json, "shape")), ndim);
  CHECK_INT_EQ(JINT(r.json, "shape[0]"), rows);
  if (ndim == 2) CHECK_INT_EQ(JINT(r.json, "shape[1]"), cols);
  CHECK_STR_EQ(JSTR(r.json, "dtype"), "float32");
  CHECK_INT_EQ(JINT(r.json, "bytes"), rows * cols * 4);
  CHECK_STR_EQ(JSTR(r.json, "client"), "127.0.0.1");
  CHECK(json_is_null(json_at(r.json, "job")));
  CHECK_INT_EQ(JINT(r.json, "in_use"), 0);
  http_reply_free(&r);
  return id;
}

long long upload_matrix(struct gpulabd *d, int rows, int cols, const float *data) {
  size_t len;
  char *file = npy_2d(rows, cols, data, &len);
  long long id = upload(d, "", "application/x-npy", file, len, 2, rows, cols);
  free(file);
  return id;
}

/* GET /buffers/{id}: a .npy of float32 in C order with this shape (cols 0: 1-D).
 * Returns its data (the caller frees). */
float *download(struct gpulabd *d, long long id, long long rows, long long cols) {
  char path[64];
  snprintf(path, sizeof path, "/buffers/%lld", id);
  struct http_reply r;
  http_get(d, path, &r);
  if (r.status != 200) CHECK_FAIL_("GET %s: HTTP %ld, body %.2000s", path, r.status, r.body);
  CHECK_STR_EQ(r.content_type, "application/x-npy");
  const unsigned char *b = (const unsigned char *)r.body;
  CHECK(r.body_len >= 10 && memcmp(b, "\x93NUMPY", 6) == 0);
  CHECK_INT_EQ(b[6], 1);
  CHECK_INT_EQ(b[7], 0);
  size_t header = 10 + (size_t)(b[8] | b[9] << 8);
  CHECK_INT_EQ(header % 64, 0);
  CHECK(header <= r.body_len && b[header - 1] == '\n');
  char *dict = strndup(r.body + 10, header - 10);
  check_contains(dict, "'descr': '<f4'");
  check_contains(dict, "'fortran_order': False");
  char shape[64];
  if (cols)
    snprintf(shape, sizeof shape, "'shape': (%lld, %lld)", rows, cols);
  else
    snprintf(shape, sizeof shape, "'shape': (%lld,)", rows);
  check_contains(dict, shape);
  free(dict);
  size_t count = (size_t)rows * (size_t)(cols ? cols : 1);
  CHECK_INT_EQ(r.body_len - header, count * 4);
  float *data = malloc(count * 4);
  CHECK(data != NULL);
  memcpy(data, r.body + header, count * 4);
  http_reply_free(&r);
  return data;
}

/* The buffer's entry in GET /buffers, or NULL (the caller decrefs). */
json_t *buffer_listed(struct gpulabd *d, long long id) {
  json_t *list = http_get_json(d, "/buffers?limit=1000");
  CHECK(json_is_array(json_at(list, "buffers")));
  size_t i;
  json_t *b, *found = NULL;
  json_array_foreach(json_at(list, "buffers"), i, b) {
    if (JINT(b, "id") == id) found = json_incref(b);
  }
  json_decref(list);
  return found;
}

void check_transposed(const float *t, const float *m, int rows, int cols) {
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < cols; j++)
      if (memcmp(&t[(size_t)j * rows + i], &m[(size_t)i * cols + j], 4) != 0)
        CHECK_FAIL_("transpose differs at (%d, %d): %g vs %g", j, i, t[(size_t)j * rows + i],
                    m[(size_t)i * cols + j]);
}
