/* Where a tiny job's time goes on the GPU machine, without a profiler: the cost of
 * each host-side step the CUDA backend takes for one job, timed alone, then whole
 * tiny jobs through backend_run on 1 lane and on 4 lanes at once. Differences between
 * the two say what the job adds on top of its device calls. Not a test.
 *   host_costs            (prints one table; a few seconds) */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/cuda_try.h"
#include "kernels/backends/backend.h"
#include "kernels/backends/cuda/nvml_loader.h"
#include "kernels/core/stats.h"
#include "kernels/transpose/transpose.h"

enum { ITERS = 2000 };

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void report(const char *what, double *us, int n) {
  qsort(us, (size_t)n, sizeof *us, cmp_double);
  printf("| %s | %.1f | %.1f | %.1f |\n", what, us[n / 2], us[n * 99 / 100], us[0]);
  fflush(stdout);
}

__global__ void empty_kernel(void) {}

static cudaStream_t stream;
static double samples[ITERS];

/* Times the statement ITERS times after 50 untimed runs (variadic: it may hold
 * commas, as a launch's <<<...>>> does). */
#define MEASURE(what, ...)                       \
  do {                                           \
    for (int i_ = -50; i_ < ITERS; i_++) {       \
      double t0_ = now_us();                     \
      __VA_ARGS__;                               \
      if (i_ >= 0) samples[i_] = now_us() - t0_; \
    }                                            \
    report(what, samples, ITERS);                \
  } while (0)

static struct exp_spec tiny_spec(void) {
  struct exp_spec s;
  exp_spec_default(EXP_TRANSPOSE, &s);
  s.p[TRANSPOSE_M] = s.p[TRANSPOSE_N] = 64;
  s.n_variants = 1;
  s.variants[0] = exp_variant_from_name(EXP_TRANSPOSE, "naive");
  s.timing.warmup = 0;
  s.timing.batches = 1;
  s.timing.reps = 1;
  return s;
}

static struct backend *be;

/* One tiny job on lane, as gpulabd's worker runs it (no hooks: no gate). */
static double tiny_job_us(int lane) {
  static __thread struct exp_result res;
  struct exp_spec s = tiny_spec();
  struct backend_job bj = {};
  bj.spec = &s;
  char err[256];
  double t0 = now_us();
  int rc = backend_run(be, lane, &bj, NULL, &res, err, sizeof err);
  double us = now_us() - t0;
  if (rc != 0 || !res.runs[0].check.passed) {
    fprintf(stderr, "tiny job failed: %d %s\n", rc, err);
    exit(1);
  }
  backend_buffer_free(be, bj.output);
  backend_fence_free(be, bj.done);
  return us;
}

/* The same job with hooks that note when each phase begins (as the engine's do, minus
 * the gate), so that its time splits into: set-up (inputs, outputs), the timed window
 * (launches between events, their wait), the copies for the check and their wait, and
 * the rest (the CPU check, statistics, frees); and when the output and its fence were
 * handed over (issued: before the window, or after it when the window's one launch
 * made the output). */
enum { MARK_START, MARK_SETUP, MARK_TIMED, MARK_UNTIMED, MARK_IDLE, MARK_END, N_MARKS };
static double marks[N_MARKS], issued_at;
static bool mark_phase(void *arg, enum backend_phase p) {
  int m = p == BACKEND_PHASE_SETUP     ? MARK_SETUP
          : p == BACKEND_PHASE_TIMED   ? MARK_TIMED
          : p == BACKEND_PHASE_UNTIMED ? MARK_UNTIMED
                                       : MARK_IDLE;
  marks[m] = now_us();
  return false;
}
static void mark_issued(void *arg) { issued_at = now_us(); }

static void phases_table(void) {
  static double d[N_MARKS][ITERS], issued[ITERS];
  struct backend_hooks hooks = {};
  hooks.phase = mark_phase;
  hooks.issued = mark_issued;
  static struct exp_result res;
  for (int i = -50; i < ITERS; i++) {
    struct exp_spec s = tiny_spec();
    struct backend_job bj = {};
    bj.spec = &s;
    char err[256];
    for (int m = 0; m < N_MARKS; m++) marks[m] = 0;
    issued_at = 0;
    marks[MARK_START] = now_us();
    int rc = backend_run(be, 0, &bj, &hooks, &res, err, sizeof err);
    marks[MARK_END] = now_us();
    if (rc != 0) {
      fprintf(stderr, "tiny job failed: %d %s\n", rc, err);
      exit(1);
    }
    backend_buffer_free(be, bj.output);
    backend_fence_free(be, bj.done);
    for (int m = 1; m < N_MARKS; m++) /* a phase not entered takes no time */
      if (!marks[m]) marks[m] = marks[m - 1];
    for (int m = 1; m < N_MARKS && i >= 0; m++) d[m][i] = marks[m] - marks[m - 1];
    if (i >= 0) issued[i] = issued_at - marks[MARK_SETUP];
  }
  static const char *names[N_MARKS] = {"",
                                       "start to SETUP",
                                       "SETUP to TIMED (inputs, outputs)",
                                       "TIMED to UNTIMED (the window)",
                                       "UNTIMED to IDLE (copies for the check)",
                                       "IDLE to return (check, statistics, frees)"};
  for (int m = 1; m < N_MARKS; m++) {
    char what[96];
    snprintf(what, sizeof what, "tiny job phase: %s", names[m]);
    report(what, d[m], ITERS);
  }
  report("tiny job: SETUP to issued (output and fence handed over)", issued, ITERS);
}

struct lane_arg {
  int lane, jobs;
  double us;
};
static void *lane_main(void *p) {
  struct lane_arg *a = (struct lane_arg *)p;
  double t0 = now_us();
  for (int i = 0; i < a->jobs; i++) tiny_job_us(a->lane);
  a->us = now_us() - t0;
  return NULL;
}

int main(void) {
  char why[256];
  if (backend_open(BACKEND_CUDA, 0, 8, &be, why, sizeof why) != 0) {
    printf("skip: %s\n", why);
    return 77;
  }
  printf("%s\n", why);
  CUDA_OR_EXIT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CUDA_OR_EXIT(cudaEventCreate(&e0));
  CUDA_OR_EXIT(cudaEventCreate(&e1));
  float *d, *h_pinned, *h_page = (float *)malloc(4096 * sizeof(float));
  CUDA_OR_EXIT(cudaMalloc(&d, 4096 * sizeof(float)));
  CUDA_OR_EXIT(cudaMallocHost(&h_pinned, 4096 * sizeof(float)));
  char bus[32];
  CUDA_OR_EXIT(cudaDeviceGetPCIBusId(bus, sizeof bus, 0));
  void *nvml = nvml_loader_device(bus, why, sizeof why);

  printf(
      "| step (one call, host wall clock) | p50 us | p99 us | min us |\n| --- | --- | --- | --- |\n");
  MEASURE("launch + cudaStreamSynchronize", {
    empty_kernel<<<1, 32, 0, stream>>>();
    CUDA_OR_EXIT(cudaStreamSynchronize(stream));
  });
  MEASURE("event, launch, event + cudaEventSynchronize + ElapsedTime", {
    CUDA_OR_EXIT(cudaEventRecord(e0, stream));
    empty_kernel<<<1, 32, 0, stream>>>();
    CUDA_OR_EXIT(cudaEventRecord(e1, stream));
    CUDA_OR_EXIT(cudaEventSynchronize(e1));
    float ms;
    CUDA_OR_EXIT(cudaEventElapsedTime(&ms, e0, e1));
  });
  MEASURE("cudaMallocAsync + cudaFreeAsync 16 KiB + sync", {
    float *p;
    CUDA_OR_EXIT(cudaMallocAsync(&p, 4096 * sizeof(float), stream));
    CUDA_OR_EXIT(cudaFreeAsync(p, stream));
    CUDA_OR_EXIT(cudaStreamSynchronize(stream));
  });
  MEASURE("cudaMemcpyAsync D2H 16 KiB pinned + sync", {
    CUDA_OR_EXIT(
        cudaMemcpyAsync(h_pinned, d, 4096 * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CUDA_OR_EXIT(cudaStreamSynchronize(stream));
  });
  MEASURE("cudaMemcpy D2H 16 KiB pageable",
          { CUDA_OR_EXIT(cudaMemcpy(h_page, d, 4096 * sizeof(float), cudaMemcpyDeviceToHost)); });
  if (nvml) {
    struct nvml_reading r;
    MEASURE("nvml_loader_read (clock, temp, power, reasons)", nvml_loader_read(nvml, &r));
  } else {
    printf("| nvml_loader_read | skipped: %s | | |\n", why);
  }
  MEASURE("tiny job: backend_run transpose 64x64 naive, reps 1, lane 0", tiny_job_us(0));
  phases_table();

  for (int lanes = 1; lanes <= 8; lanes *= 2) {
    struct lane_arg args[8];
    pthread_t th[8];
    double t0 = now_us();
    for (int l = 0; l < lanes; l++) {
      args[l] = (struct lane_arg){l, 1000, 0};
      pthread_create(&th[l], NULL, lane_main, &args[l]);
    }
    for (int l = 0; l < lanes; l++) pthread_join(th[l], NULL);
    double wall = now_us() - t0;
    printf("| tiny jobs, %d lanes at once: %d jobs | %.0f jobs/s | %.1f us per job per lane | |\n",
           lanes, 1000 * lanes, 1000.0 * lanes / wall * 1e6, wall / 1000);
  }
  backend_free(be);
  return 0;
}
