/* The CUDA backend against the CPU reference: every variant of every experiment at
 * odd sizes (tails in every dimension) and at the lecture's large sizes, launched
 * one by one and as CUDA Graphs, two lanes at once, the phases and hooks, inputs
 * given as buffers, a chain of two jobs through an output and its fence, exclusive
 * windows, concurrent buffer calls, out of memory. Exits 77 where no CUDA device
 * answers. Timing is kept minimal (1 warm-up, 2 batches of 2) so it runs in seconds. */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "kernels/backends/backend.h"
#include "kernels/core/gen.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_pick.h"
#include "kernels/pipeline/pipeline.h"
#include "kernels/stencil/stencil.h"
#include "kernels/transpose/transpose.h"
#include "tests/runner.h"

static struct backend *be;

/* ---- specs ---- */

static struct exp_spec spec_new(enum exp_type type) {
  struct exp_spec s;
  exp_spec_default(type, &s);
  s.timing = (struct exp_timing_params){1, 2, 2};
  return s;
}

static struct exp_spec transpose_spec(int m, int n) {
  struct exp_spec s = spec_new(EXP_TRANSPOSE);
  s.p[TRANSPOSE_M] = m;
  s.p[TRANSPOSE_N] = n;
  return s;
}

static struct exp_spec gemm_spec(int m, int n, int k) {
  struct exp_spec s = spec_new(EXP_GEMM);
  s.p[GEMM_M] = m;
  s.p[GEMM_N] = n;
  s.p[GEMM_K] = k;
  return s;
}

static struct exp_spec stencil_spec(int n, int radius) {
  struct exp_spec s = spec_new(EXP_STENCIL);
  s.p[STENCIL_N] = n;
  s.p[STENCIL_RADIUS] = radius;
  return s;
}

static struct exp_spec pipeline_spec(int chunk, int chunks, int terms) {
  struct exp_spec s = spec_new(EXP_PIPELINE);
  s.p[PIPELINE_CHUNK] = chunk;
  s.p[PIPELINE_CHUNKS] = chunks;
  s.p[PIPELINE_TERMS] = terms;
  s.n_variants = 2;
  s.variants[0] = 1;
  s.variants[1] = 3;
  return s;
}

static int64_t input_count(const struct exp_spec *s, int slot) {
  struct exp_shape shape;
  exp_input_shape(s, slot, &shape);
  return exp_shape_count(&shape);
}

static int64_t output_count(const struct exp_spec *s) {
  struct exp_shape shape;
  exp_output_shape(s, &shape);
  return exp_shape_count(&shape);
}

static void size_text(const struct exp_spec *s, char *buf, size_t len) {
  switch (s->type) {
  case EXP_TRANSPOSE: snprintf(buf, len, "%dx%d", s->p[TRANSPOSE_M], s->p[TRANSPOSE_N]); break;
  case EXP_GEMM:
    snprintf(buf, len, "%dx%dx%d", s->p[GEMM_M], s->p[GEMM_N], s->p[GEMM_K]);
    break;
  case EXP_STENCIL: snprintf(buf, len, "n=%d r=%d", s->p[STENCIL_N], s->p[STENCIL_RADIUS]); break;
  default:
    snprintf(buf, len, "%dx%d t=%d", s->p[PIPELINE_CHUNK], s->p[PIPELINE_CHUNKS],
             s->p[PIPELINE_TERMS]);
    break;
  }
}

/* ---- hooks that record ---- */

/* The phases ('S', 'T', 'U', 'I') and issued ('i') in the order they came, progress
 * calls, a cancel after some progress, what UNTIMED answers, and a callback on
 * issued and on each phase (for the chain). Called from the job's thread only. */
struct trace {
  char log[64];
  int n_log;
  int progress_calls, cancel_after; /* cancel_after < 0: never */
  bool contended;                   /* what UNTIMED returns */
  void (*on_issued)(void *user);
  void (*on_phase)(void *user, enum backend_phase phase);
  void *user;
};

static void trace_init(struct trace *t) {
  memset(t, 0, sizeof *t);
  t->cancel_after = -1;
}

static void trace_put(struct trace *t, char c) {
  CHECK(t->n_log < (int)sizeof t->log - 1);
  t->log[t->n_log++] = c;
  t->log[t->n_log] = '\0';
}

static bool trace_canceled(void *arg) {
  struct trace *t = arg;
  return t->cancel_after >= 0 && t->progress_calls >= t->cancel_after;
}

static void trace_progress(void *arg, int run, int batch, double ms) {
  struct trace *t = arg;
  CHECK(run >= 0 && run < EXP_MAX_VARIANTS && batch >= 0 && ms > 0);
  t->progress_calls++;
}

static bool trace_phase(void *arg, enum backend_phase phase) {
  struct trace *t = arg;
  static const char names[] = "STUI";
  trace_put(t, names[phase]);
  if (t->on_phase) t->on_phase(t->user, phase);
  return phase == BACKEND_PHASE_UNTIMED && t->contended;
}

static void trace_issued(void *arg) {
  struct trace *t = arg;
  trace_put(t, 'i');
  if (t->on_issued) t->on_issued(t->user);
}

/* SETUP, issued, `windows` TIMED/UNTIMED pairs, IDLE. */
static void check_phases(const struct trace *t, int windows) {
  char want[64] = "Si";
  for (int w = 0; w < windows; w++) strcat(want, "TU");
  strcat(want, "I");
  CHECK_STR_EQ(t->log, want);
}

static int windows_of(const struct exp_spec *s, const struct exp_result *res) {
  int available = 0;
  for (int i = 0; i < res->n_runs; i++) available += res->runs[i].available;
  if (available == 0) return 0;
  return s->order == EXP_ORDER_ALTERNATING ? 1 : available;
}

static int run_traced(int lane, struct backend_job *job, struct trace *t,
                      struct exp_result *res, char *err, size_t err_len) {
  struct backend_hooks hooks = {trace_canceled, trace_progress, trace_phase, trace_issued, t};
  return backend_run(be, lane, job, &hooks, res, err, err_len);
}

static void job_drop(struct backend_job *job) {
  backend_buffer_free(be, job->output);
  backend_fence_free(be, job->done);
  job->output = NULL;
  job->done = NULL;
}

/* ---- checks ---- */

/* Every run must be available, pass its check and carry batches samples; in graph
 * mode also both per-launch figures (cuBLAS may not capture: its graph figure is 0
 * then, and its method says so). */
static void expect_passed(const struct exp_spec *s, const struct exp_result *res) {
  char size[64];
  size_text(s, size, sizeof size);
  int want_runs = s->type == EXP_PIPELINE ? s->n_variants : s->n_variants;
  CHECK_INT_EQ(res->n_runs, want_runs);
  CHECK_STR_EQ(res->backend, "cuda");
  for (int i = 0; i < res->n_runs; i++) {
    const struct exp_run *run = &res->runs[i];
    const struct exp_check *c = &run->check;
    printf("%-9s %-10s %-20s median %10.4f ms  %10.1f %-7s check %s (%lld compared%s, "
           "max abs err %.3g)",
           exp_type_name(s->type), run->label, size, run->timing.median_ms, run->figure,
           exp_figure_unit(s->type), c->passed ? "passed" : "FAILED", (long long)c->compared,
           c->sampled ? ", sampled" : "", c->max_abs_err);
    if (s->graph)
      printf("  stream %.2f us graph %.2f us", run->stream_us_per_launch, run->graph_us_per_launch);
    printf("  %s\n", run->available ? run->kernel.name : run->reason);
    fflush(stdout);
    CHECK(run->available);
    CHECK(c->done);
    CHECK_INT_EQ(c->mismatches, 0);
    CHECK(c->passed);
    CHECK_INT_EQ(run->timing.n_samples, s->timing.batches);
    CHECK(run->timing.median_ms > 0);
    CHECK(run->figure > 0 || exp_spec_work(s) == 0); /* gemm with k = 0 does no work */
    CHECK(run->kernel.name[0] != '\0');
    CHECK(run->timing.method != NULL);
    if (!s->graph) {
      CHECK(run->stream_us_per_launch == 0 && run->graph_us_per_launch == 0);
      continue;
    }
    CHECK(run->stream_us_per_launch > 0);
    bool cublas =
        s->type == EXP_GEMM && (run->variant == GEMM_CUBLAS || run->variant == GEMM_CUBLAS_TF32);
    if (cublas && run->graph_us_per_launch == 0)
      CHECK(strstr(run->timing.method, "could not be captured") != NULL);
    else
      CHECK(run->graph_us_per_launch > 0);
  }
}

/* Runs job on lane: it must succeed, pass, report the phases in order and hand
 * over an output of the output shape and a fence. Both are freed unless keep. */
static void run_job_ok(int lane, struct backend_job *job, struct exp_result *res, bool keep) {
  char err[256] = "";
  struct trace t;
  trace_init(&t);
  int rc = run_traced(lane, job, &t, res, err, sizeof err);
  if (rc != 0)
    fprintf(stderr, "%s on lane %d: rc %d: %s\n", exp_type_name(job->spec->type), lane, rc, err);
  CHECK_INT_EQ(rc, 0);
  expect_passed(job->spec, res);
  check_phases(&t, windows_of(job->spec, res));
  CHECK(job->output != NULL && job->done != NULL);
  CHECK_INT_EQ(backend_buffer_count(job->output), output_count(job->spec));
  if (!keep) job_drop(job);
}

static void run_ok_on(int lane, const struct exp_spec *s, struct exp_result *res) {
  struct backend_job job = {.spec = s};
  run_job_ok(lane, &job, res, false);
}

static void run_ok(struct exp_spec s) {
  static struct exp_result res; /* large; one job at a time on the main thread */
  run_ok_on(0, &s, &res);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- tests ---- */

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

/* spec limited to the listed variants, in that order */
static struct exp_spec only(struct exp_spec s, int n, const int *variants) {
  s.n_variants = n;
  for (int i = 0; i < n; i++) s.variants[i] = variants[i];
  return s;
}

/* gemm best alone: each run names the configuration gemm_pick_for chooses on this device
 * and the instance its sizes take (whole where M, N, K and the split's k are multiples of
 * the tile, hybrid where the pick says so, guarded elsewhere; K = 0 included), and says
 * why (its description starts with the configuration's name). */
static void test_gemm_best_kernels(void) {
  static const int gv[] = {GEMM_BEST};
  static const int cases[][3] = {{128, 128, 0},     {128, 256, 32},   {256, 256, 256},
                                 {512, 384, 128},   {1152, 256, 64},  {1000, 1003, 997},
                                 {1000, 1004, 996}, {33, 17, 5},      {256, 256, 100},
                                 {256, 384, 16},    {250, 256, 64},   {256, 252, 64},
                                 {256, 254, 64},    {3, 300, 100},    {300, 1, 100},
                                 {1024, 12, 2048},  {12, 1024, 2048}, {3000, 3000, 64}};
  struct backend_device_info info;
  backend_device_info(be, &info);
  static struct exp_result res;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const int m = cases[i][0], n = cases[i][1], k = cases[i][2];
    struct exp_spec s = only(gemm_spec(m, n, k), 1, gv);
    run_ok_on(0, &s, &res);
    const struct exp_kernel_info *ki = &res.runs[0].kernel;
    const struct gemm_pick pk =
        gemm_pick_for(m, n, k > 0 ? k : 1, info.sms, gemm_best_scratch_floats(m, n, k > 0 ? k : 1));
    printf("gemm best %dx%dx%d: %s (%s)\n", m, n, k, ki->name, ki->description);
    CHECK(strncmp(ki->description, pk.name, strlen(pk.name)) == 0);
    CHECK_INT_EQ(ki->grid[1], pk.splits);
    CHECK_INT_EQ(ki->local_bytes, 0);
    if (pk.kind != GEMM_KIND_TILE) {
      CHECK(strncmp(ki->name, pk.kind == GEMM_KIND_GEMV_T ? "gemv_t_kernel<" : "gemv_n_kernel<",
                    14) == 0);
      continue;
    }
    const struct gemm_tile_cfg *t = &gemm_tile_cfgs[pk.tile];
    const bool whole = m % t->bm == 0 && n % t->bn == 0 && k % t->bk == 0;
    char want[64];
    snprintf(want, sizeof want, "gemm_tile_kernel<%dx%dx%d,%s>", t->bm, t->bn, t->bk,
             whole ? "whole" : pk.hybrid ? "hybrid" : "guarded");
    CHECK_STR_EQ(ki->name, want);
    CHECK_INT_EQ(ki->block[0], t->threads);
  }
}

/* The best variants at odd sizes: tails in every dimension, sizes whose rows are not
 * a whole number of float4 (4-byte path) and ones that are (float4 path) but end in
 * partial tiles, K = 0, radii from 0 to the tile limit and one past it. */
static void test_best_odd_sizes(void) {
  static const int tr[] = {TRANSPOSE_BEST};
  static const int tsizes[][2] = {{33, 47}, {47, 33}, {1, 1000}, {1000, 1}, {64, 64}, {65, 63},
                                  {4100, 1028}, {1028, 4100}, {4099, 1023}, {1023, 4099}};
  for (size_t i = 0; i < sizeof tsizes / sizeof tsizes[0]; i++)
    run_ok(only(transpose_spec(tsizes[i][0], tsizes[i][1]), 1, tr));
  static const int gv[] = {GEMM_BEST, GEMM_TF32};
  static const int gsizes[][3] = {{33, 47, 18}, {130, 70, 300}, {1000, 1001, 999}, {1, 1, 1},
                                  {17, 19, 0},  {128, 128, 128}, {256, 384, 16}, {129, 131, 33},
                                  {200, 260, 36}, {1000, 1000, 1004}};
  for (size_t i = 0; i < sizeof gsizes / sizeof gsizes[0]; i++)
    run_ok(only(gemm_spec(gsizes[i][0], gsizes[i][1], gsizes[i][2]), 2, gv));
  test_gemm_best_kernels();
  /* stencil best: 1023 is the last radius of the 4096-float span (the smallest tile,
   * 2048), 1024 the first of the 8192 one; 2^24 + 3 has blocks of 2 tiles, a short last
   * tile and (at r = 0: 4101 tiles) a last block of one, 2^20 + 7 at 2047 the wide span's
   * blocks of one tile */
  static const int sv[] = {STENCIL_BEST, STENCIL_NAIVE};
  static const int radii[] = {0, 1, 2, 32, 64, 1023, 1024};
  static const int sizes[] = {1, 1000, 4093, (1 << 24) + 3};
  for (int ri = 0; ri < 7; ri++)
    for (int ni = 0; ni < 4; ni++) run_ok(only(stencil_spec(sizes[ni], radii[ri]), 2, sv));
  run_ok(only(stencil_spec(10007, 2047), 2, sv));
  run_ok(only(stencil_spec((1 << 20) + 7, 2047), 1, sv));
  /* past the tile limit: unavailable with the reason, the other run still passes */
  static struct exp_result res;
  struct exp_spec s = only(stencil_spec(1000, 2048), 2, sv);
  struct backend_job job = {.spec = &s};
  char err[256] = "";
  CHECK_INT_EQ(backend_run(be, 0, &job, NULL, &res, err, sizeof err), 0);
  CHECK(!res.runs[0].available && strstr(res.runs[0].reason, "radii 0..2047") != NULL);
  CHECK(res.runs[1].available && res.runs[1].check.passed);
  job_drop(&job);
}

static void check_large_sizes(void) {
  run_ok(transpose_spec(4096, 4096));
  run_ok(transpose_spec(4099, 1023));
  run_ok(gemm_spec(1024, 1024, 1024));
  run_ok(gemm_spec(2048, 2048, 2048)); /* the reference samples 64 rows */
  run_ok(stencil_spec(1 << 24, 2));
  run_ok(stencil_spec(1 << 24, 32));
  static const int tr[] = {TRANSPOSE_BEST}, gv[] = {GEMM_BEST, GEMM_TF32}, sv[] = {STENCIL_BEST};
  run_ok(only(transpose_spec(8192, 8192), 1, tr));
  run_ok(only(gemm_spec(4096, 4096, 4096), 2, gv));
  run_ok(only(stencil_spec(1 << 26, 2), 1, sv));
  run_ok(only(stencil_spec(1 << 26, 32), 1, sv));
  /* 8 terms keep the FP64 reference (chunk * chunks * terms sin calls) to seconds. */
  run_ok(pipeline_spec(1 << 22, 3, 8));
}

/* Every type with each run's reps captured as one CUDA Graph (the pipeline: one
 * whole pass), timed beside the same launches one by one. */
static void test_graph(void) {
  struct exp_spec specs[] = {transpose_spec(257, 383), gemm_spec(130, 70, 300),
                             stencil_spec(100003, 8), pipeline_spec(1 << 16, 3, 16),
                             transpose_spec(2048, 2048), stencil_spec(1 << 22, 32)};
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    specs[i].graph = true;
    specs[i].timing = (struct exp_timing_params){2, 3, 10};
    if (specs[i].type == EXP_PIPELINE) specs[i].timing.reps = 2;
    run_ok(specs[i]);
  }
}

/* gemm tf32 runs the Hopper wgmma kernel (B transposed into a scratch first, A copied
 * where k % 8 != 0) at every size with k > 0 where the build has sm_90a code and the
 * device is cc 9.0, at the tile width and split-K tf32_pick_for chooses, and mma.sync
 * elsewhere (k = 0 included). Each run is checked against the reference: one tile, a half
 * last N tile, the 4-stage ring wrapping, more tiles than SMs, tails in M, N and K, k < 32,
 * m or n = 1; the wgmma path also as a CUDA Graph (its scratch then is the graph's own
 * allocation) and cold. Which kernel ran is asserted where the test can know: wgmma only
 * when this test is built with GPULAB_CUDA_SM90A too (else the log says which ran). */
static void test_tf32_paths(void) {
#ifdef GPULAB_CUDA_SM90A
  const bool built_sm90a = true;
#else
  const bool built_sm90a = false;
#endif
  static const int tv[] = {GEMM_TF32};
  static const int cases[][3] = {{128, 128, 32},  {256, 384, 96},  {512, 512, 256},
                                 {2304, 2560, 64}, {256, 384, 80},  {256, 320, 96},
                                 {200, 384, 96},   {1000, 1500, 777}, {257, 383, 97},
                                 {1, 300, 77},     {300, 1, 77},    {33, 17, 5},
                                 {1024, 1024, 1024}, {128, 128, 0}};
  struct backend_device_info info;
  backend_device_info(be, &info);
  const bool cc90 = info.cc_major == 9 && info.cc_minor == 0;
  static struct exp_result res;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const int m = cases[i][0], n = cases[i][1], kk = cases[i][2];
    struct exp_spec s = only(gemm_spec(m, n, kk), 1, tv);
    run_ok_on(0, &s, &res);
    const struct exp_kernel_info *k = &res.runs[0].kernel;
    const bool wgmma = strncmp(k->name, "gemm_tf32_wgmma_kernel<", 23) == 0;
    printf("gemm tf32 %dx%dx%d: %s (%s): %d registers, %d bytes dynamic shared, grid %d\n", m,
           n, kk, k->name, k->description, k->registers, k->dynamic_shared_bytes, k->grid[0]);
    if (kk == 0 || !cc90) CHECK_STR_EQ(k->name, "gemm_tf32_kernel");
    if (kk > 0 && cc90 && built_sm90a) CHECK(wgmma);
    if (!wgmma) continue;
    const struct tf32_pick counted = tf32_pick_for(m, n, kk, GEMM_PICK_COUNT_SMS, UINT64_MAX);
    const struct tf32_pick pk = tf32_pick_for(m, n, kk, info.sms, tf32_pick_ws_floats(&counted, m, n));
    const struct tf32_tile_cfg *t = &tf32_tile_cfgs[pk.tile];
    char want[64];
    snprintf(want, sizeof want, "gemm_tf32_wgmma_kernel<%d>", t->bn);
    CHECK_STR_EQ(k->name, want);
    CHECK(strncmp(k->description, pk.name, strlen(pk.name)) == 0);
    const int units = (m + 127) / 128 * ((n + t->bn - 1) / t->bn) * pk.splits;
    const int resident = t->ctas_per_sm * info.sms;
    CHECK_INT_EQ(k->block[0], 384);
    CHECK_INT_EQ(k->grid[0], units < resident ? units : resident); /* persistent */
    CHECK_INT_EQ(k->dynamic_shared_bytes, 4 * (128 + t->bn) * 32 * 4 + 1024 + 4 * 16);
    CHECK_INT_EQ(k->local_bytes, 0);
    CHECK(k->registers > 0 && k->registers <= 65536 / 384 / t->ctas_per_sm);
    CHECK_INT_EQ(k->blocks_per_sm, t->ctas_per_sm);
  }
  struct exp_spec g = only(gemm_spec(256, 384, 96), 1, tv);
  g.graph = true;
  g.timing = (struct exp_timing_params){2, 3, 10};
  run_ok_on(0, &g, &res);
  g = only(gemm_spec(1000, 1500, 777), 1, tv); /* A's copy and Bt at pitch 800, captured */
  g.graph = true;
  g.timing = (struct exp_timing_params){2, 3, 10};
  run_ok_on(0, &g, &res);
  g = only(gemm_spec(256, 384, 96), 1, tv);
  g.cold = true;
  run_ok_on(1, &g, &res);
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

  /* best: 2 tiles a block; prefixes (span doubles + 16 warp totals) and one stage of
   * span floats; 4 blocks an SM where an SM has 228 KiB of shared memory (cc 9.0), as
   * measured; the 8192-float span 1 tile a block */
  struct backend_device_info info;
  backend_device_info(be, &info);
  k = &res.runs[STENCIL_BEST].kernel;
  CHECK_STR_EQ(k->name, "stencil_best_kernel<2>");
  CHECK_INT_EQ(k->block[0], 256);
  CHECK_INT_EQ(k->grid[0], 1); /* one tile of 4028 */
  CHECK_INT_EQ(k->dynamic_shared_bytes, (4096 + 16) * 8 + 4096 * 4);
  CHECK_INT_EQ(k->local_bytes, 0);
  if (info.cc_major == 9 && info.cc_minor == 0) CHECK_INT_EQ(k->blocks_per_sm, 4);
  printf("stencil_best_kernel<2>: %d registers, %d bytes dynamic shared, %d blocks/SM\n",
         k->registers, k->dynamic_shared_bytes, k->blocks_per_sm);
  s = stencil_spec(100000, 32); /* 25 tiles of 4028, 2 a block */
  run_ok_on(0, &s, &res);
  CHECK_INT_EQ(res.runs[STENCIL_BEST].kernel.grid[0], 13);
  s = stencil_spec(100000, 1024); /* the 8192-float span: 17 tiles of 6140 */
  run_ok_on(0, &s, &res);
  k = &res.runs[STENCIL_BEST].kernel;
  CHECK_STR_EQ(k->name, "stencil_best_kernel<4>");
  CHECK_INT_EQ(k->grid[0], 17);
  CHECK_INT_EQ(k->dynamic_shared_bytes, (8192 + 16) * 8 + 8192 * 4);
  CHECK_INT_EQ(k->local_bytes, 0);
  if (info.cc_major == 9 && info.cc_minor == 0) CHECK_INT_EQ(k->blocks_per_sm, 2);
  printf("stencil_best_kernel<4>: %d registers, %d bytes dynamic shared, %d blocks/SM\n",
         k->registers, k->dynamic_shared_bytes, k->blocks_per_sm);

  /* transpose best: rows of whole float4 take the 64x64 tile kernel, odd ones the
   * sector-exact kernel at 32x128 tiles (ceil((m + 7) / 128) x ceil(n / 32) blocks) */
  s = transpose_spec(100, 72);
  run_ok_on(0, &s, &res);
  k = &res.runs[TRANSPOSE_BEST].kernel;
  CHECK_STR_EQ(k->name, "transpose_best_kernel");
  CHECK(k->block[0] == 32 && k->block[1] == 8);
  CHECK(k->grid[0] == 2 * 2 && k->grid[1] == 1); /* 64x64 tiles, a 1-D grouped grid */
  CHECK_INT_EQ(k->static_shared_bytes, 64 * 64 * 4);
  CHECK_INT_EQ(k->local_bytes, 0);
  printf("transpose_best_kernel: %d registers, %d bytes static shared\n", k->registers,
         k->static_shared_bytes);
  s = transpose_spec(100, 70);
  run_ok_on(0, &s, &res);
  k = &res.runs[TRANSPOSE_BEST].kernel;
  CHECK_STR_EQ(k->name, "transpose_sec_kernel<32,128>");
  CHECK(k->block[0] == 256 && k->block[1] == 1);
  CHECK(k->grid[0] == 1 * 3 && k->grid[1] == 1);
  CHECK_INT_EQ(k->static_shared_bytes, 32 * 129 * 4);
  CHECK_INT_EQ(k->local_bytes, 0);
  printf("transpose_sec_kernel<32,128>: %d registers, %d bytes static shared\n", k->registers,
         k->static_shared_bytes);

  s = gemm_spec(40, 30, 20);
  run_ok_on(0, &s, &res);
  CHECK(!res.runs[GEMM_CUBLAS].kernel.has_launch && !res.runs[GEMM_CUBLAS_TF32].kernel.has_launch);
  CHECK_INT_EQ(res.runs[GEMM_TILED].kernel.static_shared_bytes, 2 * 16 * 16 * 4);
  /* gemm best: the picked tile's block and shared memory (STAGES of a BK x (BM + 4) A
   * panel and a BK x BN B panel: 3 stages for BK 16, else 2), no local memory; tf32:
   * mma.sync's 3 stages of a 128x36 A and a 32x136 B panel, or the wgmma kernel */
  struct backend_device_info gemm_dev;
  backend_device_info(be, &gemm_dev);
  static const int shapes[][3] = {{256, 384, 64}, {300, 200, 100}, {4096, 4096, 32}};
  for (int i = 0; i < 3; i++) {
    s = gemm_spec(shapes[i][0], shapes[i][1], shapes[i][2]);
    s.n_variants = 2;
    s.variants[0] = GEMM_BEST;
    s.variants[1] = GEMM_TF32;
    run_ok_on(0, &s, &res);
    k = &res.runs[0].kernel;
    const struct gemm_pick pk =
        gemm_pick_for(shapes[i][0], shapes[i][1], shapes[i][2], gemm_dev.sms,
                      gemm_best_scratch_floats(shapes[i][0], shapes[i][1], shapes[i][2]));
    printf("gemm best %dx%dx%d: %s: %d registers, %d bytes dynamic shared, %d blocks/SM\n",
           shapes[i][0], shapes[i][1], shapes[i][2], k->name, k->registers,
           k->dynamic_shared_bytes, k->blocks_per_sm);
    CHECK_INT_EQ(k->static_shared_bytes, pk.kind == GEMM_KIND_GEMV_T ? 4096 : 0); /* red[8][32] */
    CHECK_INT_EQ(k->local_bytes, 0);
    CHECK(k->registers > 0 && k->registers <= 255 && k->blocks_per_sm >= 1);
    if (pk.kind == GEMM_KIND_TILE) {
      const struct gemm_tile_cfg *t = &gemm_tile_cfgs[pk.tile];
      const int stages = t->bk == 16 ? 3 : 2;
      CHECK_INT_EQ(k->block[0], t->threads);
      CHECK_INT_EQ(k->dynamic_shared_bytes, stages * (t->bk * (t->bm + 4) + t->bk * t->bn) * 4);
    }
    k = &res.runs[1].kernel;
    CHECK_INT_EQ(k->local_bytes, 0);
    if (strcmp(k->name, "gemm_tf32_kernel") == 0) {
      CHECK(k->block[0] == 256 && (unsigned)k->grid[0] == ((unsigned)shapes[i][0] + 127) / 128 *
                                                              (((unsigned)shapes[i][1] + 127) / 128));
      CHECK_INT_EQ(k->dynamic_shared_bytes, 3 * (128 * 36 + 32 * 136) * 4);
    } else {
      CHECK(strncmp(k->name, "gemm_tf32_wgmma_kernel<", 23) == 0 && k->block[0] == 384);
    }
    printf("gemm tf32: %s: %d registers, %d bytes dynamic shared\n", k->name, k->registers,
           k->dynamic_shared_bytes);
  }
}

/* Every CUDA kernel's run carries its theoretical occupancy (cuBLAS's does not),
 * and every run the work its figure counts. */
static void test_occupancy_and_work(void) {
  static struct exp_result res;
  struct backend_device_info info;
  backend_device_info(be, &info);
  struct exp_spec specs[] = {transpose_spec(100, 70), gemm_spec(300, 200, 100), stencil_spec(1000, 32),
                             pipeline_spec(1000, 3, 16)};
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    run_ok_on(0, &specs[i], &res);
    struct exp_work want;
    exp_spec_work_counts(&specs[i], &want);
    for (int r = 0; r < res.n_runs; r++) {
      const struct exp_kernel_info *k = &res.runs[r].kernel;
      CHECK(k->has_work);
      CHECK_NEAR(k->work.bytes, want.bytes, 0.5);
      CHECK_NEAR(k->work.flops, want.flops, 0.5);
      if (specs[i].type == EXP_GEMM &&
          (res.runs[r].variant == GEMM_CUBLAS || res.runs[r].variant == GEMM_CUBLAS_TF32)) {
        CHECK(!k->has_occupancy);
        continue;
      }
      int threads = k->block[0] * k->block[1] * k->block[2];
      printf("%-9s %-10s occupancy: %d blocks/SM, %d of %d warps (%.2f)\n", exp_type_name(specs[i].type),
             res.runs[r].label, k->blocks_per_sm, k->warps_per_sm, k->max_warps_per_sm, k->occupancy);
      CHECK(k->has_occupancy);
      CHECK(k->blocks_per_sm >= 1);
      CHECK_INT_EQ(k->warps_per_sm, k->blocks_per_sm * ((threads + 31) / 32));
      CHECK(k->max_warps_per_sm >= 32 && k->warps_per_sm <= k->max_warps_per_sm);
      CHECK_NEAR(k->occupancy, (double)k->warps_per_sm / k->max_warps_per_sm, 1e-9);
    }
  }
  /* transpose: 8mn bytes, no flops; gemm 2mnk flops over the minimal bytes */
  CHECK_NEAR(res.runs[0].kernel.work.bytes, 8.0 * 1000 * 3, 0.5);
  struct exp_work w;
  exp_spec_work_counts(&specs[0], &w);
  CHECK(w.bytes == 8.0 * 100 * 70 && w.flops == 0);
  exp_spec_work_counts(&specs[1], &w);
  CHECK(w.flops == 2.0 * 300 * 200 * 100 && w.bytes == 4.0 * (300 * 100 + 100 * 200 + 300 * 200));
  exp_spec_work_counts(&specs[2], &w);
  CHECK(w.bytes == 8.0 * 1000 && w.flops == 65.0 * 1000);
}

/* spec's stream counts replaced by the listed entries (counts or PIPELINE_STREAMS_BEST*). */
static struct exp_spec streams(struct exp_spec s, int n, const int *entries) {
  s.n_variants = n;
  for (int i = 0; i < n; i++) s.variants[i] = entries[i];
  return s;
}

/* The pipeline's best runs: the plan chosen from the size (depth first, whole input
 * covered, a short last chunk), checked like the others, and as one CUDA Graph;
 * also in graph mode and beside the lecture's runs. */
static void test_pipeline_best(void) {
  static struct exp_result res;
  static const int best[] = {1, PIPELINE_STREAMS_BEST, PIPELINE_STREAMS_BEST_GRAPH};
  struct exp_spec sizes[] = {pipeline_spec(1000, 3, 16), pipeline_spec(333333, 5, 8),
                             pipeline_spec(1 << 18, 3, 16)};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    struct exp_spec s = streams(sizes[i], 3, best);
    run_ok_on(0, &s, &res);
    const struct exp_pipeline_plan *p = &res.runs[1].plan;
    int64_t total = (int64_t)s.p[PIPELINE_CHUNK] * s.p[PIPELINE_CHUNKS];
    CHECK(p->best && p->depth_first && !p->graph);
    CHECK(p->chunk * p->chunks >= total && p->chunk * (p->chunks - 1) < total);
    CHECK(p->streams >= 1 && p->streams <= PIPELINE_BEST_STREAMS);
    CHECK(res.runs[2].plan.graph && res.runs[2].plan.chunks == p->chunks);
    CHECK(strstr(res.runs[2].timing.method, "Graph") != NULL);
    CHECK_STR_EQ(res.runs[1].label, "best");
    CHECK_STR_EQ(res.runs[2].label, "best_graph");
    CHECK(res.runs[1].n_timeline > 0 && res.runs[2].n_timeline == 0);
    CHECK(res.runs[1].kernel.has_occupancy);
  }
  struct exp_spec g = streams(pipeline_spec(1 << 16, 3, 16), 3, best);
  g.graph = true;
  g.timing = (struct exp_timing_params){2, 3, 2};
  run_ok(g);
}

/* The pipeline at chunk 2^22 x 12 (192 MiB each way): the lecture's 1 and 3 streams,
 * best and best as a graph, in GB/s moved (both directions counted), beside the
 * pinned-copy ceilings when they can be measured. 8 terms: the copies dominate. */
static void bench_pipeline_best(void) {
  static struct exp_result res;
  static const int runs[] = {1, 3, PIPELINE_STREAMS_BEST, PIPELINE_STREAMS_BEST_GRAPH};
  struct exp_spec s = streams(pipeline_spec(1 << 22, 12, 8), 4, runs);
  s.timing = (struct exp_timing_params){2, 7, 1};
  run_ok_on(0, &s, &res);
  printf("pipeline 2^22 x 12, 8 terms (GB/s = bytes up + down / time):\n");
  for (int r = 0; r < res.n_runs; r++) {
    const struct exp_run *run = &res.runs[r];
    printf("  %-10s %2d streams %3d chunks of %6.2f MiB  median %8.3f ms  %7.1f GB/s  (%.1f GB/s "
           "each way)\n", run->label, run->plan.streams, run->plan.chunks,
           run->plan.chunk * 4.0 / 1048576.0, run->timing.median_ms, run->figure, run->figure / 2);
  }
  fflush(stdout);
  char why[256] = "";
  if (backend_measure_ceilings(be, why, sizeof why) == 0) {
    struct backend_device_info info;
    backend_device_info(be, &info);
    printf("  pinned ceilings: h2d %.1f GB/s, d2h %.1f GB/s, both at once %.1f GB/s: best at %.0f%% "
           "of both at once\n", info.ceilings.h2d_gbps, info.ceilings.d2h_gbps, info.ceilings.bidir_gbps,
           info.ceilings.bidir_gbps > 0 ? 100 * res.runs[2].figure / info.ceilings.bidir_gbps : 0);
  } else {
    printf("  pinned ceilings not measured: %s\n", why);
  }
}

/* Variants named in another order, and one twice, still run and pass; the output
 * is the first run's (copy: A's shape and values). */
static void test_variant_order(void) {
  static struct exp_result res;
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
  s.order = EXP_ORDER_SEQUENTIAL; /* the lecture's: one window per variant */
  struct backend_job job = {.spec = &s};
  run_job_ok(0, &job, &res, true);
  float h[65 * 31];
  char err[256] = "";
  CHECK_INT_EQ(backend_buffer_download(be, job.output, job.done, h, err, sizeof err), 0);
  for (int i = 0; i < 65 * 31; i++) CHECK(h[i] == gen_uniform(s.inputs[0].value, GEN_A, (uint64_t)i));
  job_drop(&job);
}

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
    printf("stencil %-7s stopped by %s after %d samples\n", res.runs[r].label, t->stopped_by, t->n_samples);
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
  printf("nvml: %s%s; SM %d MHz, %d C, %.1f W, reasons 0x%llx\n", info.nvml ? "available" : "unavailable: ",
         info.nvml_why, info.sm_mhz_now, info.temp_c, info.power_w, (unsigned long long)info.clock_reasons);
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

static void fill(float *h, size_t n, uint64_t seed, float scale) {
  for (size_t i = 0; i < n; i++) h[i] = gen_uniform(seed, 7, i) * scale;
}

static struct backend_buffer *upload(const float *h, uint64_t count) {
  struct backend_buffer *buf = NULL;
  char err[256] = "";
  int rc = backend_buffer_upload(be, h, count, &buf, err, sizeof err);
  if (rc != 0) fprintf(stderr, "upload of %llu floats: %s\n", (unsigned long long)count, err);
  CHECK_INT_EQ(rc, 0);
  CHECK(buf != NULL);
  CHECK_INT_EQ(backend_buffer_count(buf), count);
  return buf;
}

static void download(struct backend_buffer *buf, struct backend_fence *fence, float *h) {
  char err[256] = "";
  int rc = backend_buffer_download(be, buf, fence, h, err, sizeof err);
  if (rc != 0) fprintf(stderr, "download: %s\n", err);
  CHECK_INT_EQ(rc, 0);
}

/* Transposes an uploaded matrix (all variants, checked against the uploaded data),
 * then downloads the output and compares it with a host transpose. */
static void transpose_buffer(int m, int n) {
  static struct exp_result res;
  size_t count = (size_t)m * n;
  float *h = malloc(count * sizeof *h), *out = malloc(count * sizeof *out);
  CHECK(h && out);
  fill(h, count, 11, 1.0f);
  struct backend_buffer *in = upload(h, count);
  struct exp_spec s = transpose_spec(m, n);
  s.inputs[0] = (struct exp_input){EXP_INPUT_BUFFER, 1};
  struct backend_job job = {.spec = &s, .input = {in}};
  run_job_ok(0, &job, &res, true);
  download(job.output, job.done, out);
  for (int r = 0; r < m; r++)
    for (int c = 0; c < n; c++) CHECK(out[(size_t)c * m + r] == h[(size_t)r * n + c]);
  download(in, NULL, out); /* the input was only read */
  CHECK(memcmp(out, h, count * sizeof *h) == 0);
  job_drop(&job);
  backend_buffer_free(be, in);
  free(h);
  free(out);
}

/* gemm with both inputs uploaded; the output within the reference's tolerance of
 * an FP64 product on the host. */
static void gemm_buffers(int m, int n, int k) {
  static struct exp_result res;
  float *a = malloc((size_t)m * k * sizeof *a), *b = malloc((size_t)k * n * sizeof *b);
  float *c = malloc((size_t)m * n * sizeof *c);
  CHECK(a && b && c);
  fill(a, (size_t)m * k, 21, 1.0f);
  fill(b, (size_t)k * n, 22, 1.0f);
  struct backend_buffer *da = upload(a, (uint64_t)m * k), *db = upload(b, (uint64_t)k * n);
  struct exp_spec s = gemm_spec(m, n, k);
  s.inputs[0] = (struct exp_input){EXP_INPUT_BUFFER, 1};
  s.inputs[1] = (struct exp_input){EXP_INPUT_BUFFER, 2};
  struct backend_job job = {.spec = &s, .input = {da, db}};
  run_job_ok(1, &job, &res, true);
  download(job.output, job.done, c);
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double want = 0, mag = 0;
      for (int kk = 0; kk < k; kk++) {
        double p = (double)a[(size_t)i * k + kk] * b[(size_t)kk * n + j];
        want += p;
        mag += fabs(p);
      }
      CHECK_NEAR(c[(size_t)i * n + j], want, k * mag / 8388608.0 + 1e-30);
    }
  job_drop(&job);
  backend_buffer_free(be, da);
  backend_buffer_free(be, db);
  free(a);
  free(b);
  free(c);
}

/* Stencil and pipeline on uploaded x (the pipeline's as phases in [-pi, pi)). */
static void x_buffer(struct exp_spec s, float scale) {
  static struct exp_result res;
  size_t count = (size_t)input_count(&s, 0);
  float *h = malloc(count * sizeof *h);
  CHECK(h);
  fill(h, count, 31, scale);
  struct backend_buffer *in = upload(h, count);
  s.inputs[0] = (struct exp_input){EXP_INPUT_BUFFER, 1};
  struct backend_job job = {.spec = &s, .input = {in}};
  run_job_ok(0, &job, &res, false);
  s.graph = true;
  run_job_ok(1, &job, &res, false);
  backend_buffer_free(be, in);
  free(h);
}

static void test_buffer_inputs(void) {
  transpose_buffer(37, 53);
  transpose_buffer(1024, 1000);
  gemm_buffers(70, 45, 130);
  x_buffer(stencil_spec(10007, 5), 1.0f);
  x_buffer(pipeline_spec(3000, 4, 16), 3.14159265f);

  /* An empty buffer round-trips. */
  float one = 1;
  struct backend_buffer *empty = upload(&one, 0);
  download(empty, NULL, &one);
  backend_buffer_free(be, empty);
}

/* ---- a chain: job 2 transposes job 1's output back ---- */

struct chain {
  struct exp_spec s1, s2;
  struct backend_job j1, j2;
  struct trace t1, t2;
  struct exp_result r1, r2;
  pthread_t thread2;
  int rc2;
  char err2[256];
  pthread_mutex_t mu;
  pthread_cond_t cond;
  bool issued2;
  double issued2_at, returned1_at;
};

static void *chain_job2(void *arg) {
  struct chain *c = arg;
  c->rc2 = run_traced(1, &c->j2, &c->t2, &c->r2, c->err2, sizeof c->err2);
  return NULL;
}

/* Job 1's issued hook: job 2 starts at once on another thread, behind job 1's fence. */
static void chain_start2(void *user) {
  struct chain *c = user;
  c->j2 = (struct backend_job){.spec = &c->s2, .input = {c->j1.output}, .after = &c->j1.done,
                               .n_after = 1};
  CHECK_INT_EQ(pthread_create(&c->thread2, NULL, chain_job2, c), 0);
}

static void chain_issued2(void *user) {
  struct chain *c = user;
  pthread_mutex_lock(&c->mu);
  c->issued2 = true;
  c->issued2_at = now_s();
  pthread_cond_signal(&c->cond);
  pthread_mutex_unlock(&c->mu);
}

/* Job 1 ends only once job 2 was issued (within 20 s): job 2 must be able to issue
 * while job 1 is still running, without waiting for it on the host. */
static void chain_phase1(void *user, enum backend_phase phase) {
  struct chain *c = user;
  if (phase != BACKEND_PHASE_IDLE) return;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 20;
  pthread_mutex_lock(&c->mu);
  while (!c->issued2 && pthread_cond_timedwait(&c->cond, &c->mu, &until) == 0) {
  }
  pthread_mutex_unlock(&c->mu);
}

static void test_chain(void) {
  static struct chain c;
  const int m = 1031, n = 2053;
  char err[256] = "";
  pthread_mutex_init(&c.mu, NULL);
  pthread_cond_init(&c.cond, NULL);
  c.s1 = transpose_spec(m, n);
  c.s2 = transpose_spec(n, m);
  c.s2.inputs[0] = (struct exp_input){EXP_INPUT_JOB, 1};
  c.j1 = (struct backend_job){.spec = &c.s1};
  trace_init(&c.t1);
  trace_init(&c.t2);
  c.t1.user = c.t2.user = &c;
  c.t1.on_issued = chain_start2;
  c.t1.on_phase = chain_phase1;
  c.t2.on_issued = chain_issued2;
  int rc1 = run_traced(0, &c.j1, &c.t1, &c.r1, err, sizeof err);
  c.returned1_at = now_s();
  pthread_mutex_lock(&c.mu);
  bool issued_before_return = c.issued2;
  pthread_mutex_unlock(&c.mu);
  CHECK_INT_EQ(pthread_join(c.thread2, NULL), 0);
  if (rc1 != 0 || c.rc2 != 0) fprintf(stderr, "chain: job 1: %s; job 2: %s\n", err, c.err2);
  CHECK_INT_EQ(rc1, 0);
  CHECK_INT_EQ(c.rc2, 0);
  CHECK(issued_before_return);
  printf("chain: job 2 issued %.3f ms before job 1 returned\n",
         (c.returned1_at - c.issued2_at) * 1e3);
  expect_passed(&c.s1, &c.r1);
  expect_passed(&c.s2, &c.r2);
  check_phases(&c.t1, windows_of(&c.s1, &c.r1));
  check_phases(&c.t2, windows_of(&c.s2, &c.r2));

  size_t count = (size_t)m * n;
  float *h = malloc(count * sizeof *h);
  CHECK(h);
  download(c.j2.output, c.j2.done, h); /* A again, bit for bit */
  for (size_t i = 0; i < count; i++) CHECK(h[i] == gen_uniform(c.s1.inputs[0].value, GEN_A, i));
  download(c.j1.output, c.j1.done, h); /* A^T */
  for (int r = 0; r < m; r++)
    for (int col = 0; col < n; col++)
      CHECK(h[(size_t)col * m + r] == gen_uniform(c.s1.inputs[0].value, GEN_A, (uint64_t)r * n + col));
  free(h);
  job_drop(&c.j2);
  job_drop(&c.j1);
  pthread_cond_destroy(&c.cond);
  pthread_mutex_destroy(&c.mu);
}

/* ---- a tiny job: one launch is its whole timing ---- */

/* spec with one run of variant, timed by its one launch (warm-up 0, 1 batch of 1). */
static struct exp_spec one_launch(struct exp_spec s, int variant, uint64_t seed) {
  s.n_variants = 1;
  s.variants[0] = variant;
  s.timing = (struct exp_timing_params){0, 1, 1};
  for (int i = 0; i < EXP_MAX_INPUTS; i++) s.inputs[i].value = seed;
  return s;
}

/* Runs a one-launch job on lane 0: it passes, and its output (kept) was issued after
 * its window, as that launch's ("STUiI"), not computed before it ("SiTUI"). */
static void run_one_launch(struct backend_job *job, struct exp_result *res) {
  char err[256] = "";
  struct trace t;
  trace_init(&t);
  int rc = run_traced(0, job, &t, res, err, sizeof err);
  if (rc != 0) fprintf(stderr, "one launch: rc %d: %s\n", rc, err);
  CHECK_INT_EQ(rc, 0);
  expect_passed(job->spec, res);
  CHECK_STR_EQ(t.log, "STUiI");
  CHECK(job->output != NULL && job->done != NULL);
}

/* Tiny jobs as the HTTP path sends them: the output is the timed launch's, and the
 * lane keeps small generated inputs for the next jobs. Each check below passes only
 * when the input read was the one asked for: the same seed again (kept), a smaller
 * input of it (the kept one's first elements), another seed, another size, and GEMM's
 * two inputs of one seed (streams A and B: not each other's). Then a child reads a
 * one-launch job's output (A^T^T == A, bit for bit). */
static void test_one_launch(void) {
  static struct exp_result res;
  struct backend_job job;
  const uint64_t seeds[] = {7, 7, 7, 8, 7};
  const int sizes[] = {64, 64, 32, 64, 96};
  for (int i = 0; i < 5; i++) {
    struct exp_spec s = one_launch(transpose_spec(sizes[i], sizes[i] + 3), TRANSPOSE_NAIVE, seeds[i]);
    job = (struct backend_job){.spec = &s};
    run_one_launch(&job, &res);
    job_drop(&job);
  }
  for (int i = 0; i < 2; i++) {
    struct exp_spec g = one_launch(gemm_spec(48, 40, 56), GEMM_TILED, 11);
    job = (struct backend_job){.spec = &g};
    run_one_launch(&job, &res);
    job_drop(&job);
  }
  const int m = 45, n = 77;
  struct exp_spec s1 = one_launch(transpose_spec(m, n), TRANSPOSE_NAIVE, 5);
  struct exp_spec s2 = one_launch(transpose_spec(n, m), TRANSPOSE_NAIVE, 5);
  s2.inputs[0] = (struct exp_input){EXP_INPUT_JOB, 1};
  struct backend_job parent = {.spec = &s1};
  run_one_launch(&parent, &res);
  struct backend_job child = {.spec = &s2, .input = {parent.output}, .after = &parent.done, .n_after = 1};
  run_one_launch(&child, &res);
  float h[m * n];
  download(child.output, child.done, h);
  for (int i = 0; i < m * n; i++) CHECK(h[i] == gen_uniform(5, GEN_A, (uint64_t)i));
  job_drop(&child);
  job_drop(&parent);
}

/* ---- buffers from several threads while a job runs ---- */

static void *buffer_main(void *arg) {
  int id = (int)(intptr_t)arg;
  for (int it = 0; it < 25; it++) {
    size_t count = 1000 + 4099 * (size_t)id + 31 * (size_t)it;
    float *h = malloc(count * sizeof *h), *back = malloc(count * sizeof *back);
    CHECK(h && back);
    fill(h, count, 100 + id * 1000 + it, 1.0f);
    struct backend_buffer *buf = upload(h, count);
    download(buf, NULL, back);
    CHECK(memcmp(h, back, count * sizeof *h) == 0);
    backend_buffer_free(be, buf);
    free(h);
    free(back);
  }
  return NULL;
}

static void *busy_main(void *arg) {
  struct exp_spec s = stencil_spec(1 << 22, 32);
  s.timing = (struct exp_timing_params){5, 5, 50};
  run_ok_on(0, &s, arg);
  return NULL;
}

static void test_buffers_concurrent(void) {
  static struct exp_result res;
  pthread_t busy, t[4];
  CHECK_INT_EQ(pthread_create(&busy, NULL, busy_main, &res), 0);
  for (int i = 0; i < 4; i++)
    CHECK_INT_EQ(pthread_create(&t[i], NULL, buffer_main, (void *)(intptr_t)i), 0);
  for (int i = 0; i < 4; i++) CHECK_INT_EQ(pthread_join(t[i], NULL), 0);
  CHECK_INT_EQ(pthread_join(busy, NULL), 0);
  CHECK(backend_healthy(be));
}

static void check_errors(void) {
  static struct exp_result res;
  char err[256] = "";
  struct trace t;
  trace_init(&t);
  struct exp_spec s = stencil_spec(1000, 2);
  s.timing.batches = 0;
  struct backend_job job = {.spec = &s};
  CHECK_INT_EQ(run_traced(0, &job, &t, &res, err, sizeof err), -EINVAL);
  CHECK_STR_EQ(t.log, ""); /* refused before any device work */
  CHECK(job.output == NULL && job.done == NULL);

  /* A buffer of the wrong size for its slot. */
  float h[10] = {0};
  struct backend_buffer *small = upload(h, 10);
  s = stencil_spec(11, 2);
  s.inputs[0] = (struct exp_input){EXP_INPUT_BUFFER, 1};
  job = (struct backend_job){.spec = &s, .input = {small}};
  CHECK_INT_EQ(run_traced(0, &job, &t, &res, err, sizeof err), -EINVAL);
  printf("wrong-sized input: %s\n", err);
  backend_buffer_free(be, small);

  /* 2 x 4 TiB: more than any GPU has; the backend says so, issues nothing and
   * stays healthy. */
  s = transpose_spec(1 << 20, 1 << 20);
  job = (struct backend_job){.spec = &s};
  trace_init(&t);
  int rc = run_traced(0, &job, &t, &res, err, sizeof err);
  printf("4 TiB transpose: rc %d: %s\n", rc, err);
  CHECK_INT_EQ(rc, -ENOMEM);
  CHECK_STR_EQ(t.log, "SI");
  CHECK(job.output == NULL && job.done == NULL);
  struct backend_buffer *huge = NULL;
  CHECK_INT_EQ(backend_buffer_upload(be, h, 1ull << 40, &huge, err, sizeof err), -ENOMEM);
  CHECK(huge == NULL);
  CHECK(backend_healthy(be));
  run_ok(transpose_spec(77, 3));
}

/* --small skips the large sizes and the 4 TiB allocation (for compute-sanitizer). */
/* --small skips the large sizes and the 4 TiB allocation (for compute-sanitizer). */
static bool small;

static int open_backend(void) {
  small = test_mode && strcmp(test_mode, "--small") == 0;
  char why[256] = "";
  if (backend_open(BACKEND_CUDA, 0, 2, &be, why, sizeof why) != 0) {
    printf("skip: %s\n", why);
    return CHECK_SKIP;
  }
  printf("%s\n", why);
  return 0;
}

static void close_backend(void) {
  CHECK(backend_healthy(be));
  backend_free(be);
}

static void test_cold(void) { check_cold(small); }
static void test_bench_pipeline_best(void) {
  if (!small) bench_pipeline_best();
}
static void test_large_sizes(void) {
  if (!small) check_large_sizes();
}
static void test_errors(void) {
  if (!small) check_errors();
}

static const char *const modes[] = {"--small", NULL};
static const struct test_case cases[] = {
    TEST(test_device),
    TEST(test_ceilings),
    TEST(test_nvml),
    TEST(test_cold),
    TEST(test_noise_stop),
    TEST(test_odd_sizes),
    TEST(test_best_odd_sizes),
    TEST(test_tf32_paths),
    TEST(test_kernel_info),
    TEST(test_occupancy_and_work),
    TEST(test_pipeline_best),
    TEST(test_bench_pipeline_best),
    TEST(test_variant_order),
    TEST(test_hooks),
    TEST(test_graph),
    TEST(test_exclusive),
    TEST(test_buffer_inputs),
    TEST(test_chain),
    TEST(test_one_launch),
    TEST(test_two_lanes),
    TEST(test_buffers_concurrent),
    TEST(test_large_sizes),
    TEST(test_errors),
    TEST_END,
};
const struct test_suite test_suite = {
    .cases = cases, .modes = modes, .setup = open_backend, .teardown = close_backend};
