/* The CUDA backend's timing you can trust: the device's ceilings, cold (L2 flushed)
 * windows, the noise stopping rule, NVML, two lanes at once, exclusive windows, and
 * the phases and hooks. Exits 77 where no CUDA device answers. */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "gpu_backend_common.h"
#include "kernels/backends/backend.h"
#include "kernels/core/gen.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_pick.h"
#include "kernels/pipeline/pipeline.h"
#include "kernels/stencil/stencil.h"
#include "kernels/transpose/transpose.h"
#include "tests/runner.h"

/* ---- timing you can trust ---- */

/* The ceilings, measured once (and timed), then carried by every result. */
static void test_ceilings(void) {
  static struct exp_result res;
  char why[512] = "";
  double t0 = now_s();
  int rc = backend_measure_ceilings(be, why, sizeof why);
  printf("ceilings in %.3f s: %s\n", now_s() - t0, why);
  CHECK_INT_EQ(rc, 0);
  struct backend_device_info info;
  backend_device_info(be, &info);
  const struct exp_ceilings *c = &info.ceilings;
  CHECK(c->copy_gbps > 50 && c->h2d_gbps > 1 && c->d2h_gbps > 1 && c->bidir_gbps > 1);
  CHECK(c->sgemm_gflops > 100 && c->tf32_gflops > c->sgemm_gflops); /* cuBLAS travels with CUDA */
  CHECK(strstr(info.ceilings_method, "median") != NULL);
  struct exp_spec s = gemm_spec(256, 256, 256);
  run_ok_on(0, &s, &res);
  CHECK(res.ceilings.sgemm_gflops == c->sgemm_gflops && res.ceilings.copy_gbps == c->copy_gbps);
}

/* cold: every launch after an L2 flush, timed alone; hot and cold side by side on
 * a matrix that fits in the L2 (4096^2 floats: 64 MiB in, 64 MiB out). */
static void check_cold(bool small) {
  static struct exp_result hot, cold;
  int dim = small ? 1024 : 4096;
  struct exp_spec s = transpose_spec(dim, dim);
  s.timing = (struct exp_timing_params){2, 5, 10};
  run_ok_on(0, &s, &hot);
  s.cold = true;
  run_ok_on(0, &s, &cold);
  for (int r = 0; r < cold.n_runs; r++) {
    CHECK(cold.runs[r].timing.cold && !hot.runs[r].timing.cold);
    CHECK(strstr(cold.runs[r].timing.method, "cold") != NULL);
    printf("transpose %dx%d %-9s hot %8.4f ms %7.0f GB/s   cold %8.4f ms %7.0f GB/s\n", dim, dim,
           cold.runs[r].label, hot.runs[r].timing.median_ms, hot.runs[r].figure,
           cold.runs[r].timing.median_ms, cold.runs[r].figure);
  }
  struct exp_spec g = gemm_spec(129, 65, 33); /* cuBLAS too */
  g.cold = true;
  run_ok_on(1, &g, &cold);
  g.graph = true; /* a graph replays its launches hot: refused */
  struct backend_job job = {.spec = &g};
  char err[256] = "";
  CHECK_INT_EQ(backend_run(be, 0, &job, NULL, &cold, err, sizeof err), -EINVAL);
  CHECK(strstr(err, "cold") != NULL);
}

/* The noise rule: stops on noise when the samples are quiet, on time when they
 * never are; the fixed batches otherwise. */
static void test_noise_stop(void) {
  static struct exp_result res;
  struct exp_spec s = stencil_spec(1 << 20, 4);
  s.timing = (struct exp_timing_params){5, 5, 20};
  s.stop = (struct exp_stop_params){4, 0.5, 10};
  struct backend_job job = {.spec = &s};
  char err[256] = "";
  CHECK_INT_EQ(backend_run(be, 0, &job, NULL, &res, err, sizeof err), 0);
  job_drop(&job);
  for (int r = 0; r < res.n_runs; r++) {
    const struct exp_timing *t = &res.runs[r].timing;
    printf("stencil %-7s stopped by %s after %d samples, relstdev %.4f\n", res.runs[r].label,
           t->stopped_by, t->n_samples, t->relstdev);
    CHECK_STR_EQ(t->stopped_by, "noise");
    CHECK(t->n_samples >= 4 && t->relstdev < 0.5 && res.runs[r].check.passed);
    CHECK(res.runs[r].speedup_lo > 0 && res.runs[r].speedup_lo <= res.runs[r].speedup_hi);
  }
  s.stop = (struct exp_stop_params){0, 1e-12, 0.2};
  CHECK_INT_EQ(backend_run(be, 0, &job, NULL, &res, err, sizeof err), 0);
  job_drop(&job);
  for (int r = 0; r < res.n_runs; r++) {
    const struct exp_timing *t = &res.runs[r].timing;
    printf("stencil %-7s stopped by %s after %d samples\n", res.runs[r].label, t->stopped_by,
           t->n_samples);
    CHECK(strcmp(t->stopped_by, "time") == 0 || strcmp(t->stopped_by, "max_batches") == 0);
    CHECK(res.runs[r].check.passed);
  }
}

/* NVML: where libnvidia-ml.so.1 is installed, the device reads its clocks and every
 * run carries them (before and after its window). */
static void test_nvml(void) {
  static struct exp_result res;
  struct backend_device_info info;
  backend_device_info(be, &info);
  void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  printf("nvml: %s%s; SM %d MHz, %d C, %.1f W, reasons 0x%llx\n",
         info.nvml ? "available" : "unavailable: ", info.nvml_why, info.sm_mhz_now, info.temp_c,
         info.power_w, (unsigned long long)info.clock_reasons);
  if (!lib) {
    CHECK(!info.nvml && info.nvml_why[0]);
    return;
  }
  dlclose(lib);
  CHECK(info.nvml && info.sm_mhz_now > 0);
  struct exp_spec s = gemm_spec(1024, 1024, 1024);
  run_ok_on(0, &s, &res);
  for (int r = 0; r < res.n_runs; r++) {
    const struct exp_clocks *c = &res.runs[r].clocks;
    printf("gemm %-7s SM %d -> %d MHz, %d C, %.1f W, reasons 0x%llx%s\n", res.runs[r].label,
           c->sm_mhz_before, c->sm_mhz_after, c->temp_c, c->power_w, (unsigned long long)c->reasons,
           c->throttled ? " THROTTLED" : "");
    CHECK(c->valid && c->sm_mhz_before > 0 && c->sm_mhz_after > 0);
    CHECK(!(c->reasons & EXP_CLOCK_GPU_IDLE));
    CHECK(c->throttled == ((c->reasons & EXP_CLOCK_THROTTLED) != 0));
  }
}

struct lane_job {
  int lane;
  struct exp_spec specs[3];
  struct exp_result res;
};

static void *lane_main(void *arg) {
  struct lane_job *lj = arg;
  for (int i = 0; i < 3; i++) run_ok_on(lj->lane, &lj->specs[i], &lj->res);
  return NULL;
}

static void test_two_lanes(void) {
  static struct lane_job jobs[2];
  jobs[0].lane = 0;
  jobs[0].specs[0] = gemm_spec(256, 192, 257);
  jobs[0].specs[1] = stencil_spec(1 << 20, 32);
  jobs[0].specs[2] = pipeline_spec(1 << 18, 3, 16);
  jobs[1].lane = 1;
  jobs[1].specs[0] = transpose_spec(1025, 2049);
  jobs[1].specs[1] = gemm_spec(300, 200, 100);
  jobs[1].specs[2] = pipeline_spec(1 << 18, 4, 16);
  jobs[1].specs[2].graph = true;
  pthread_t t[2];
  for (int i = 0; i < 2; i++) CHECK_INT_EQ(pthread_create(&t[i], NULL, lane_main, &jobs[i]), 0);
  for (int i = 0; i < 2; i++) CHECK_INT_EQ(pthread_join(t[i], NULL), 0);
  CHECK(backend_healthy(be));
}

/* Every type with exclusive windows (the lane idle before each TIMED). */
static void test_exclusive(void) {
  static struct exp_result res;
  struct exp_spec specs[] = {transpose_spec(513, 255), gemm_spec(64, 96, 80),
                             stencil_spec(50000, 16), pipeline_spec(4096, 5, 8)};
  for (int i = 0; i < 4; i++) {
    struct backend_job job = {.spec = &specs[i], .exclusive = true};
    run_job_ok(1, &job, &res, false);
  }
}

static void test_hooks(void) {
  static struct exp_result res;
  char err[256] = "";
  struct trace t;
  trace_init(&t);
  struct exp_spec s = stencil_spec(1 << 20, 32);
  struct backend_job job = {.spec = &s};
  CHECK_INT_EQ(run_traced(1, &job, &t, &res, err, sizeof err), 0);
  CHECK_INT_EQ(t.progress_calls, exp_variant_count(EXP_STENCIL) * s.timing.batches);
  check_phases(&t, 1);
  for (int r = 0; r < res.n_runs; r++) CHECK(!res.runs[r].contended);
  job_drop(&job);

  /* UNTIMED says contended: every run of that window is. */
  struct exp_spec tr = transpose_spec(64, 96);
  job = (struct backend_job){.spec = &tr};
  trace_init(&t);
  t.contended = true;
  CHECK_INT_EQ(run_traced(1, &job, &t, &res, err, sizeof err), 0);
  check_phases(&t, 1); /* interleaved: one window around all variants */
  for (int r = 0; r < res.n_runs; r++) CHECK(res.runs[r].contended);
  job_drop(&job);

  /* Canceled after the first sample: the window closes, IDLE follows, and the
   * output (issued already) is the caller's. */
  job = (struct backend_job){.spec = &s};
  trace_init(&t);
  t.cancel_after = 1;
  CHECK_INT_EQ(run_traced(1, &job, &t, &res, err, sizeof err), -ECANCELED);
  CHECK_INT_EQ(t.progress_calls, 1);
  check_phases(&t, 1);
  CHECK(job.output != NULL && job.done != NULL);
  job_drop(&job);
  CHECK(backend_healthy(be));

  s = pipeline_spec(1000, 3, 4);
  job = (struct backend_job){.spec = &s};
  trace_init(&t);
  t.cancel_after = 0; /* canceled before the first batch */
  CHECK_INT_EQ(run_traced(1, &job, &t, &res, err, sizeof err), -ECANCELED);
  check_phases(&t, 1);
  job_drop(&job);
  CHECK(backend_healthy(be));
  run_ok(stencil_spec(999, 3)); /* the lane still works */
}

static void test_cold(void) { check_cold(gpu_small); }

static const struct test_case cases[] = {
    TEST(test_ceilings), TEST(test_nvml),      TEST(test_cold),      TEST(test_noise_stop),
    TEST(test_hooks),    TEST(test_exclusive), TEST(test_two_lanes), TEST_END,
};
const struct test_suite test_suite = {.cases = cases,
                                      .modes = gpu_backend_modes,
                                      .setup = gpu_backend_open,
                                      .teardown = gpu_backend_close};
