/* What a finished job's document costs to make (issue 16): ns per job_text, and per
 * job_json + json_text (a tree, then its text), of the tiny job run once on the CPU
 * backend, as gpulabd makes them. Links against a build's libraries, any build whose
 * job_json.h has these two calls: bench/lab/job_text_ab.sh builds it for two builds
 * and alternates them. Not a test: it times.
 *   job_text_bench [ITERATIONS [ROUNDS]]   (default 20000 7): medians over the rounds */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/json_text.h"
#include "api/params.h"
#include "kernels/backends/backend.h"
#include "server/service/job_json.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static size_t sink;

static void text_once(const struct job_view *v) {
  size_t len = 0;
  char *text = job_text(v, true, &len);
  sink += len;
  free(text);
}

static void tree_once(const struct job_view *v) {
  json_t *j = job_json(v, true);
  char *text = json_text(j, NULL);
  sink += strlen(text);
  free(text);
  json_decref(j);
}

/* Median over rounds of the ns per call of once(v). */
static double time_it(void (*once)(const struct job_view *), const struct job_view *v, int iters,
                      int rounds) {
  double per[64];
  for (int i = 0; i < iters / 10; i++) once(v); /* warm */
  for (int r = 0; r < rounds; r++) {
    double t0 = now_ns();
    for (int i = 0; i < iters; i++) once(v);
    per[r] = (now_ns() - t0) / iters;
  }
  qsort(per, (size_t)rounds, sizeof *per, by_value);
  return per[rounds / 2];
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 20000, rounds = argc > 2 ? atoi(argv[2]) : 7;
  if (iters < 10 || rounds < 1 || rounds > 64) return 2;
  static const char body[] =
      "{\"m\":64,\"n\":64,\"variant\":\"naive\",\"warmup\":0,"
      "\"batches\":1,\"reps\":1,\"isolation\":\"shared\"}";
  struct exp_spec spec;
  struct api_job_options opts;
  struct api_error err;
  struct backend *b = NULL;
  char why[256];
  static struct exp_result result;
  struct backend_job job = {.spec = &spec};
  if (api_params_parse(EXP_TRANSPOSE, body, strlen(body), &spec, &opts, &err) != 0 ||
      backend_open(BACKEND_CPU, 0, 1, &b, why, sizeof why) != 0 ||
      backend_run(b, 0, &job, NULL, &result, why, sizeof why) != 0) {
    fprintf(stderr, "the tiny job did not run\n");
    return 1;
  }
  struct job_view v;
  memset(&v, 0, sizeof v);
  v.id = 1;
  v.state = JOB_DONE;
  v.spec = spec;
  snprintf(v.client, sizeof v.client, "127.0.0.1");
  v.created_at = 1764666464.936;
  v.started_at = v.created_at + 0.0000086;
  v.issued_at = v.started_at;
  v.finished_at = v.started_at + 0.000094175;
  v.device = v.lane = 0;
  v.result = &result;
  size_t len = 0;
  free(job_text(&v, true, &len));
  double text_ns = time_it(text_once, &v, iters, rounds);
  double tree_ns = time_it(tree_once, &v, iters, rounds);
  printf("%zu bytes: job_text %.0f ns, job_json + json_text %.0f ns (median of %d x %d)\n", len,
         text_ns, tree_ns, rounds, iters);
  backend_fence_free(b, job.done);
  backend_buffer_free(b, job.output);
  backend_free(b);
  return sink == 0;
}
