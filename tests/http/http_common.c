/* The helpers of the HTTP tests of every route (http_common.h). */
#include "http_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

struct gpulabd A;
struct gpulabd B;

const char *const transpose_all[] = {"naive", "shared32", "padded33", "copy", "best"};
const char *const gemm_all[] = {"naive", "tiled", "cublas", "best", "tf32", "cublas_tf32"};
const char *const stencil_all[] = {"naive", "shared", "best"};

long long health_int(struct gpulabd *d, const char *path) {
  json_t *health = http_get_json(d, "/health");
  CHECK_STR_EQ(JSTR(health, "status"), "ok");
  long long n = JINT(health, path);
  json_decref(health);
  return n;
}

size_t jobs_listed(struct gpulabd *d) {
  json_t *list = http_get_json(d, "/jobs?limit=1000");
  size_t n = json_array_size(json_at(list, "jobs"));
  json_decref(list);
  return n;
}

/* POSTs to /type on A and checks the finished job's runs; returns it (caller decrefs). */
json_t *run_ok(const char *type, const char *body, const char *const *labels, int n) {
  char path[32];
  snprintf(path, sizeof path, "/%s", type);
  json_t *job = job_post_done(&A, "cpu", path, type, body);
  check_run_labels(job, labels, n);
  return job;
}

/* GET path: a list newest first, of summaries (no result). Caller decrefs. */
json_t *list(struct gpulabd *d, const char *path) {
  json_t *page = http_get_json(d, path);
  json_t *jobs = json_at(page, "jobs"), *next = json_at(page, "next_cursor"), *job;
  CHECK(json_is_array(jobs));
  CHECK(next && (json_is_null(next) || json_is_integer(next)));
  size_t i;
  json_array_foreach(jobs, i, job) {
    CHECK(i == 0 || JINT(job, "id") < JINT(json_array_get(jobs, i - 1), "id"));
    CHECK(json_object_get(job, "result") == NULL);
    CHECK(json_is_object(json_object_get(job, "params")));
    CHECK(is_rfc3339_utc(JSTR(job, "created_at")));
    if (strcmp(JSTR(job, "state"), "done") == 0) CHECK(JBOOL(job, "passed"));
  }
  return page;
}

/* A: a request waits up to 240 s for its job (--wait), since the small jobs of
 * test_http's cases queue behind the two long default jobs it starts first, which take
 * about 50 s under ASan alone and more on two busy cores (the fresh root's CI run). */
int http_start_a(void) {
  static const char *const args_a[] = {"--backend",      "cpu",  "--streams", "2",
                                       "--max-body",     "4096", "--wait",    "240",
                                       "--http-threads", "2",    NULL};
  gpulabd_start(args_a, &A);
  return 0;
}

int http_start_b(void) {
  static const char *const args_b[] = {
      "--backend",    "cpu",     "--streams", "1", "--http-threads", "2", "--max-queued",
      MAX_QUEUED_ARG, "--grace", "1",         NULL};
  gpulabd_start(args_b, &B);
  return 0;
}
