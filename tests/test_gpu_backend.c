/* The CUDA backend against the CPU reference: every variant of every experiment at
 * odd sizes (tails in every dimension) and at the lecture's large sizes, two lanes at
 * once, progress and cancel hooks, out of memory. Exits 77 where no CUDA device
 * answers. Timing is kept minimal (1 warm-up, 2 batches of 2) so it runs in seconds. */
#include <pthread.h>
#include <stdbool.h>

#include "kernels/backend.h"
#include "tests/check.h"

static struct backend *be;

static struct exp_spec spec_new(enum exp_type type) {
  struct exp_spec s;
  exp_spec_default(type, &s);
  s.timing = (struct exp_timing_params){1, 2, 2};
  return s;
}

static struct exp_spec transpose_spec(int m, int n) {
  struct exp_spec s = spec_new(EXP_TRANSPOSE);
  s.u.transpose.m = m;
  s.u.transpose.n = n;
  return s;
}

static struct exp_spec gemm_spec(int m, int n, int k) {
  struct exp_spec s = spec_new(EXP_GEMM);
  s.u.gemm.m = m;
  s.u.gemm.n = n;
  s.u.gemm.k = k;
  return s;
}

static struct exp_spec stencil_spec(int n, int radius) {
  struct exp_spec s = spec_new(EXP_STENCIL);
  s.u.stencil.n = n;
  s.u.stencil.radius = radius;
  return s;
}

static struct exp_spec pipeline_spec(int chunk, int chunks, int terms) {
  struct exp_spec s = spec_new(EXP_PIPELINE);
  s.u.pipeline.chunk = chunk;
  s.u.pipeline.chunks = chunks;
  s.u.pipeline.terms = terms;
  s.u.pipeline.n_stream_counts = 2;
  s.u.pipeline.stream_counts[0] = 1;
  s.u.pipeline.stream_counts[1] = 3;
  return s;
}

static void size_text(const struct exp_spec *s, char *buf, size_t len) {
  switch (s->type) {
  case EXP_TRANSPOSE: snprintf(buf, len, "%dx%d", s->u.transpose.m, s->u.transpose.n); break;
  case EXP_GEMM:
    snprintf(buf, len, "%dx%dx%d", s->u.gemm.m, s->u.gemm.n, s->u.gemm.k);
    break;
  case EXP_STENCIL: snprintf(buf, len, "n=%d r=%d", s->u.stencil.n, s->u.stencil.radius); break;
  default:
    snprintf(buf, len, "%dx%d t=%d", s->u.pipeline.chunk, s->u.pipeline.chunks,
             s->u.pipeline.terms);
    break;
  }
}

/* Every run must be available, pass its check and carry batches samples. */
static void expect_passed(const struct exp_spec *s, const struct exp_result *res) {
  char size[64];
  size_text(s, size, sizeof size);
  int want_runs = s->type == EXP_PIPELINE ? s->u.pipeline.n_stream_counts : s->n_variants;
  CHECK_INT_EQ(res->n_runs, want_runs);
  CHECK_STR_EQ(res->backend, "cuda");
  for (int i = 0; i < res->n_runs; i++) {
    const struct exp_run *run = &res->runs[i];
    const struct exp_check *c = &run->check;
    printf("%-9s %-10s %-20s median %10.4f ms  %10.1f %-7s check %s (%lld compared%s, "
           "max abs err %.3g)  %s\n",
           exp_type_name(s->type), run->label, size, run->timing.median_ms, run->figure,
           exp_figure_unit(s->type), c->passed ? "passed" : "FAILED", (long long)c->compared,
           c->sampled ? ", sampled" : "", c->max_abs_err,
           run->available ? run->kernel.name : run->reason);
    fflush(stdout);
    CHECK(run->available);
    CHECK(c->done);
    CHECK_INT_EQ(c->mismatches, 0);
    CHECK(c->passed);
    CHECK_INT_EQ(run->timing.n_samples, s->timing.batches);
    CHECK(run->timing.median_ms > 0);
    CHECK(run->figure > 0);
    CHECK(run->kernel.name[0] != '\0');
  }
}

static void run_ok_on(int lane, const struct exp_spec *s, struct exp_result *res) {
  char err[256] = "";
  int rc = backend_run(be, lane, s, NULL, res, err, sizeof err);
  if (rc != 0) fprintf(stderr, "%s on lane %d: rc %d: %s\n", exp_type_name(s->type), lane, rc, err);
  CHECK_INT_EQ(rc, 0);
  expect_passed(s, res);
}

static void run_ok(struct exp_spec s) {
  static struct exp_result res; /* large; one job at a time on the main thread */
  run_ok_on(0, &s, &res);
}

static void test_device(void) {
  struct backend_device_info info;
  backend_device_info(be, &info);
  printf("device: %s, cc %d.%d, %d SMs, %.1f GiB (%.1f free), SM %d MHz, mem %d MHz x %d bit, "
         "L2 %d KiB, runtime %d, driver %d; job limit %.1f GiB\n",
         info.name, info.cc_major, info.cc_minor, info.sms, info.mem_total_bytes / 1073741824.0,
         info.mem_free_bytes / 1073741824.0, info.sm_clock_mhz, info.mem_clock_mhz,
         info.mem_bus_bits, info.l2_bytes / 1024, info.runtime_version, info.driver_version,
         backend_memory_limit(be) / 1073741824.0);
  CHECK_STR_EQ(backend_name(be), "cuda");
  CHECK_STR_EQ(info.backend, "cuda");
  CHECK_INT_EQ(backend_lanes(be), 2);
  CHECK(info.name[0] != '\0');
  CHECK(info.sms > 0);
  CHECK(info.cc_major > 0);
  CHECK(info.mem_total_bytes > 0);
  CHECK(backend_memory_limit(be) > 0 && backend_memory_limit(be) < info.mem_total_bytes);
  CHECK(info.runtime_version > 0 && info.driver_version > 0);
  CHECK(backend_healthy(be));
}

static void test_odd_sizes(void) {
  run_ok(transpose_spec(33, 47));
  run_ok(transpose_spec(1000, 1));
  run_ok(transpose_spec(1, 1000));
  run_ok(gemm_spec(33, 47, 18));
  run_ok(gemm_spec(1, 1, 1));
  run_ok(gemm_spec(130, 70, 300));
  int radii[] = {0, 2, 32, 64};
  for (int i = 0; i < 4; i++) run_ok(stencil_spec(1000, radii[i]));
  run_ok(stencil_spec(1, 5));
  run_ok(pipeline_spec(1000, 3, 64));
}

static void test_large_sizes(void) {
  run_ok(transpose_spec(4096, 4096));
  run_ok(transpose_spec(4099, 1023));
  run_ok(gemm_spec(1024, 1024, 1024));
  run_ok(gemm_spec(2048, 2048, 2048)); /* the reference samples 64 rows */
  run_ok(stencil_spec(1 << 24, 2));
  run_ok(stencil_spec(1 << 24, 32));
  /* 8 terms keep the FP64 reference (chunk * chunks * terms sin calls) to seconds. */
  run_ok(pipeline_spec(1 << 22, 3, 8));
}

/* Kernel info follows the lecture's launch shapes. */
static void test_kernel_info(void) {
  static struct exp_result res;
  struct exp_spec s = transpose_spec(100, 70);
  run_ok_on(0, &s, &res);
  const struct exp_kernel_info *k = &res.runs[TRANSPOSE_PADDED33].kernel;
  CHECK(k->has_launch);
  CHECK_INT_EQ(k->block[0], 32);
  CHECK_INT_EQ(k->block[1], 32);
  CHECK_INT_EQ(k->grid[0], 3); /* ceil(70 / 32) */
  CHECK_INT_EQ(k->grid[1], 4); /* ceil(100 / 32) */
  CHECK_INT_EQ(k->static_shared_bytes, 32 * 33 * 4);
  CHECK_INT_EQ(res.runs[TRANSPOSE_SHARED32].kernel.static_shared_bytes, 32 * 32 * 4);
  CHECK(k->registers > 0);

  s = stencil_spec(1000, 32);
  run_ok_on(0, &s, &res);
  k = &res.runs[STENCIL_SHARED].kernel;
  CHECK_INT_EQ(k->block[0], 256);
  CHECK_INT_EQ(k->grid[0], 4);
  CHECK_INT_EQ(k->dynamic_shared_bytes, (256 + 2 * 32) * 4);

  s = gemm_spec(40, 30, 20);
  run_ok_on(0, &s, &res);
  CHECK(!res.runs[GEMM_CUBLAS].kernel.has_launch);
  CHECK_INT_EQ(res.runs[GEMM_TILED].kernel.static_shared_bytes, 2 * 16 * 16 * 4);
}

/* Variants named in another order, and one twice, still run and pass. */
static void test_variant_order(void) {
  struct exp_spec s = stencil_spec(5000, 7);
  s.n_variants = 3;
  s.variants[0] = STENCIL_SHARED;
  s.variants[1] = STENCIL_NAIVE;
  s.variants[2] = STENCIL_SHARED;
  run_ok(s);
  s = transpose_spec(65, 31);
  s.n_variants = 2;
  s.variants[0] = TRANSPOSE_COPY;
  s.variants[1] = TRANSPOSE_NAIVE;
  run_ok(s);
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
  pthread_t t[2];
  for (int i = 0; i < 2; i++) CHECK_INT_EQ(pthread_create(&t[i], NULL, lane_main, &jobs[i]), 0);
  for (int i = 0; i < 2; i++) CHECK_INT_EQ(pthread_join(t[i], NULL), 0);
  CHECK(backend_healthy(be));
}

struct hook_state {
  int progress_calls, cancel_after;
};

static bool hook_canceled(void *arg) {
  struct hook_state *h = arg;
  return h->cancel_after >= 0 && h->progress_calls >= h->cancel_after;
}

static void hook_progress(void *arg, int run, int batch, double ms) {
  struct hook_state *h = arg;
  CHECK(run >= 0 && run < EXP_MAX_VARIANTS && batch >= 0 && ms > 0);
  h->progress_calls++;
}

static void test_hooks(void) {
  static struct exp_result res;
  char err[256] = "";
  struct hook_state st = {0, -1};
  struct backend_hooks hooks = {hook_canceled, hook_progress, &st};
  struct exp_spec s = stencil_spec(1 << 20, 32);
  CHECK_INT_EQ(backend_run(be, 1, &s, &hooks, &res, err, sizeof err), 0);
  CHECK_INT_EQ(st.progress_calls, 2 * s.timing.batches);

  st = (struct hook_state){0, 1};
  int rc = backend_run(be, 1, &s, &hooks, &res, err, sizeof err);
  CHECK_INT_EQ(rc, BACKEND_ECANCELED);
  CHECK_INT_EQ(st.progress_calls, 1);
  CHECK(backend_healthy(be));

  s = pipeline_spec(1000, 3, 4);
  st = (struct hook_state){0, 0}; /* canceled before the first batch */
  CHECK_INT_EQ(backend_run(be, 1, &s, &hooks, &res, err, sizeof err), BACKEND_ECANCELED);
  CHECK(backend_healthy(be));
  run_ok(stencil_spec(999, 3)); /* the lane still works */
}

static void test_errors(void) {
  static struct exp_result res;
  char err[256] = "";
  struct exp_spec s = stencil_spec(1000, 2);
  s.timing.batches = 0;
  CHECK_INT_EQ(backend_run(be, 0, &s, NULL, &res, err, sizeof err), BACKEND_EINVAL);

  /* 2 x 4 TiB: more than any GPU has; the backend says so and stays healthy. */
  s = transpose_spec(1 << 20, 1 << 20);
  int rc = backend_run(be, 0, &s, NULL, &res, err, sizeof err);
  printf("4 TiB transpose: rc %d: %s\n", rc, err);
  CHECK_INT_EQ(rc, BACKEND_ENOMEM);
  CHECK(backend_healthy(be));
  run_ok(transpose_spec(77, 3));
}

/* --small skips the large sizes and the 4 TiB allocation (for compute-sanitizer). */
int main(int argc, char **argv) {
  bool small = argc > 1 && strcmp(argv[1], "--small") == 0;
  char why[256] = "";
  if (backend_open(BACKEND_CUDA, 0, 2, &be, why, sizeof why) != 0) {
    printf("skip: %s\n", why);
    return CHECK_SKIP;
  }
  printf("%s\n", why);
  test_device();
  test_odd_sizes();
  test_kernel_info();
  test_variant_order();
  test_hooks();
  test_two_lanes();
  if (!small) test_large_sizes();
  if (!small) test_errors();
  CHECK(backend_healthy(be));
  backend_free(be);
  printf("ok\n");
  return 0;
}
