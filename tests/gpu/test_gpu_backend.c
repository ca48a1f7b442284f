/* The CUDA backend against the CPU reference: every variant of every experiment at
 * odd sizes (tails in every dimension) and at the lecture's large sizes, launched one
 * by one and as CUDA Graphs, the kernels' facts (registers, occupancy, work), the
 * pipeline's best and the variants' order. Timing is test_gpu_timing.c's, buffers
 * test_gpu_buffers.c's; the helpers gpu_backend_common.c's. Exits 77 where no CUDA
 * device answers. */
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

/* ---- tests ---- */

static void test_device(void) {
  struct backend_device_info info;
  backend_device_info(be, &info);
  printf(
      "device: %s, cc %d.%d, %d SMs, %.1f GiB (%.1f free), SM %d MHz, mem %d MHz x %d bit, "
      "L2 %d KiB, runtime %d, driver %d; job limit %.1f GiB\n",
      info.name, info.cc_major, info.cc_minor, info.sms, info.mem_total_bytes / 1073741824.0,
      info.mem_free_bytes / 1073741824.0, info.sm_clock_mhz, info.mem_clock_mhz, info.mem_bus_bits,
      info.l2_bytes / 1024, info.runtime_version, info.driver_version,
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
  static const int cases[][3] = {
      {128, 128, 0},     {128, 256, 32},    {256, 256, 256}, {512, 384, 128}, {1152, 256, 64},
      {1000, 1003, 997}, {1000, 1004, 996}, {33, 17, 5},     {256, 256, 100}, {256, 384, 16},
      {250, 256, 64},    {256, 252, 64},    {256, 254, 64},  {3, 300, 100},   {300, 1, 100},
      {1024, 12, 2048},  {12, 1024, 2048},  {3000, 3000, 64}};
  struct backend_device_info info;
  backend_device_info(be, &info);
  static struct exp_result res;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const int m = cases[i][0], n = cases[i][1], k = cases[i][2];
    struct exp_spec s = only(gemm_spec(m, n, k), 1, gv);
    run_ok_on(0, &s, &res);
    const struct exp_kernel_info *ki = &res.runs[0].kernel;
    const struct gemm_pick pk = gemm_pick_for(m, n, k > 0 ? k : 1, info.sms,
                                              gemm_best_scratch_floats(m, n, k > 0 ? k : 1));
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
             whole       ? "whole"
             : pk.hybrid ? "hybrid"
                         : "guarded");
    CHECK_STR_EQ(ki->name, want);
    CHECK_INT_EQ(ki->block[0], t->threads);
  }
}

/* The best variants at odd sizes: tails in every dimension, sizes whose rows are not
 * a whole number of float4 (4-byte path) and ones that are (float4 path) but end in
 * partial tiles, K = 0, radii from 0 to the tile limit and one past it. */
static void test_best_odd_sizes(void) {
  static const int tr[] = {TRANSPOSE_BEST};
  static const int tsizes[][2] = {{33, 47}, {47, 33},     {1, 1000},    {1000, 1},    {64, 64},
                                  {65, 63}, {4100, 1028}, {1028, 4100}, {4099, 1023}, {1023, 4099}};
  for (size_t i = 0; i < sizeof tsizes / sizeof tsizes[0]; i++)
    run_ok(only(transpose_spec(tsizes[i][0], tsizes[i][1]), 1, tr));
  static const int gv[] = {GEMM_BEST, GEMM_TF32};
  static const int gsizes[][3] = {
      {33, 47, 18},    {130, 70, 300}, {1000, 1001, 999}, {1, 1, 1},      {17, 19, 0},
      {128, 128, 128}, {256, 384, 16}, {129, 131, 33},    {200, 260, 36}, {1000, 1000, 1004}};
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
  struct exp_spec specs[] = {transpose_spec(257, 383),   gemm_spec(130, 70, 300),
                             stencil_spec(100003, 8),    pipeline_spec(1 << 16, 3, 16),
                             transpose_spec(2048, 2048), stencil_spec(1 << 22, 32)};
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    specs[i].graph = true;
    specs[i].timing = (struct exp_timing_params){2, 3, 10};
    if (specs[i].type == EXP_PIPELINE) specs[i].timing.reps = 2;
    run_ok(specs[i]);
  }
}

/* gemm tf32 runs a Hopper wgmma kernel (the C^T form where n % 8 == 0 and k % 8 == 0 and
 * the pick prefers it, else B transposed into a scratch first, A copied where k % 8 != 0)
 * at every size with k > 0 where the build has sm_90a code and the device is cc 9.0, at
 * the form, tile width and split-K tf32_pick_for chooses, and mma.sync elsewhere (k = 0
 * included). Each run is checked against the reference: one tile, a half
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
  static const int cases[][3] = {
      {128, 128, 32}, {256, 384, 96}, {512, 512, 256},    {2304, 2560, 64}, {256, 384, 80},
      {256, 320, 96}, {200, 384, 96}, {1000, 1500, 777},  {257, 383, 97},   {1, 300, 77},
      {300, 1, 77},   {33, 17, 5},    {1024, 1024, 1024}, {128, 128, 0}};
  struct backend_device_info info;
  backend_device_info(be, &info);
  const bool cc90 = info.cc_major == 9 && info.cc_minor == 0;
  static struct exp_result res;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const int m = cases[i][0], n = cases[i][1], kk = cases[i][2];
    struct exp_spec s = only(gemm_spec(m, n, kk), 1, tv);
    run_ok_on(0, &s, &res);
    const struct exp_kernel_info *k = &res.runs[0].kernel;
    const bool wgmma = strncmp(k->name, "gemm_tf32_wgmma_kernel<", 23) == 0 ||
                       strncmp(k->name, "gemm_tf32_ct_kernel<", 20) == 0;
    printf("gemm tf32 %dx%dx%d: %s (%s): %d registers, %d bytes dynamic shared, grid %d\n", m, n,
           kk, k->name, k->description, k->registers, k->dynamic_shared_bytes, k->grid[0]);
    if (kk == 0 || !cc90) CHECK_STR_EQ(k->name, "gemm_tf32_kernel");
    if (kk > 0 && cc90 && built_sm90a) CHECK(wgmma);
    if (!wgmma) continue;
    const struct tf32_pick counted = tf32_pick_for(m, n, kk, GEMM_PICK_COUNT_SMS, UINT64_MAX);
    const struct tf32_pick pk = tf32_pick_for(m, n, kk, info.sms,
                                              tf32_pick_ws_floats(&counted, m, n));
    const struct tf32_tile_cfg *t = &tf32_tile_cfgs[pk.tile];
    char want[64];
    snprintf(want, sizeof want, "gemm_tf32_%s_kernel<%d>", pk.ct ? "ct" : "wgmma", t->bn);
    CHECK_STR_EQ(k->name, want);
    CHECK(strncmp(k->description, pk.name, strlen(pk.name)) == 0);
    /* the C^T form's tiles are 128 columns of C by bn rows, one CTA an SM */
    const int units = pk.ct ? (n + 127) / 128 * ((m + t->bn - 1) / t->bn) * pk.splits
                            : (m + 127) / 128 * ((n + t->bn - 1) / t->bn) * pk.splits;
    const int per_sm = pk.ct ? 1 : t->ctas_per_sm, resident = per_sm * info.sms;
    CHECK_INT_EQ(k->block[0], 384);
    CHECK_INT_EQ(k->grid[0], units < resident ? units : resident); /* persistent */
    CHECK_INT_EQ(k->dynamic_shared_bytes, 4 * (128 + t->bn) * 32 * 4 + 1024 + 4 * 16);
    CHECK_INT_EQ(k->local_bytes, 0);
    CHECK(k->registers > 0 && k->registers <= 65536 / 384 / per_sm);
    CHECK_INT_EQ(k->blocks_per_sm, per_sm);
  }
  struct exp_spec g = only(gemm_spec(256, 384, 96), 1, tv);
  g.graph = true;
  g.timing = (struct exp_timing_params){2, 3, 10};
  run_ok_on(0, &g, &res);
  g = only(gemm_spec(1000, 1500, 777), 1, tv); /* A's copy and Bt at pitch 800, captured */
  g.graph = true;
  g.timing = (struct exp_timing_params){2, 3, 10};
  run_ok_on(0, &g, &res);
  g = only(gemm_spec(256, 384, 2048), 1, tv); /* the C^T form split 8 ways, captured */
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
   * sector-exact kernel at 32x64 tiles (ceil((m + 7) / 64) x ceil(n / 32) blocks) */
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
  CHECK_STR_EQ(k->name, "transpose_sec_kernel<32,64,256>");
  CHECK(k->block[0] == 256 && k->block[1] == 1);
  CHECK(k->grid[0] == 2 * 3 && k->grid[1] == 1);
  CHECK_INT_EQ(k->static_shared_bytes, 32 * 65 * 4);
  CHECK_INT_EQ(k->local_bytes, 0);
  printf("transpose_sec_kernel<32,64,256>: %d registers, %d bytes static shared\n", k->registers,
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
    const struct gemm_pick pk = gemm_pick_for(
        shapes[i][0], shapes[i][1], shapes[i][2], gemm_dev.sms,
        gemm_best_scratch_floats(shapes[i][0], shapes[i][1], shapes[i][2]));
    printf("gemm best %dx%dx%d: %s: %d registers, %d bytes dynamic shared, %d blocks/SM\n",
           shapes[i][0], shapes[i][1], shapes[i][2], k->name, k->registers, k->dynamic_shared_bytes,
           k->blocks_per_sm);
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
      CHECK(k->block[0] == 256 &&
            (unsigned)k->grid[0] ==
                ((unsigned)shapes[i][0] + 127) / 128 * (((unsigned)shapes[i][1] + 127) / 128));
      CHECK_INT_EQ(k->dynamic_shared_bytes, 3 * (128 * 36 + 32 * 136) * 4);
    } else {
      CHECK((strncmp(k->name, "gemm_tf32_wgmma_kernel<", 23) == 0 ||
             strncmp(k->name, "gemm_tf32_ct_kernel<", 20) == 0) &&
            k->block[0] == 384);
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
  struct exp_spec specs[] = {transpose_spec(100, 70), gemm_spec(300, 200, 100),
                             stencil_spec(1000, 32), pipeline_spec(1000, 3, 16)};
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
      printf("%-9s %-10s occupancy: %d blocks/SM, %d of %d warps (%.2f)\n",
             exp_type_name(specs[i].type), res.runs[r].label, k->blocks_per_sm, k->warps_per_sm,
             k->max_warps_per_sm, k->occupancy);
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
    printf(
        "  %-10s %2d streams %3d chunks of %6.2f MiB  median %8.3f ms  %7.1f GB/s  (%.1f GB/s "
        "each way)\n",
        run->label, run->plan.streams, run->plan.chunks, run->plan.chunk * 4.0 / 1048576.0,
        run->timing.median_ms, run->figure, run->figure / 2);
  }
  fflush(stdout);
  char why[256] = "";
  if (backend_measure_ceilings(be, why, sizeof why) == 0) {
    struct backend_device_info info;
    backend_device_info(be, &info);
    printf(
        "  pinned ceilings: h2d %.1f GB/s, d2h %.1f GB/s, both at once %.1f GB/s: best at %.0f%% "
        "of both at once\n",
        info.ceilings.h2d_gbps, info.ceilings.d2h_gbps, info.ceilings.bidir_gbps,
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
  for (int i = 0; i < 65 * 31; i++)
    CHECK(h[i] == gen_uniform(s.inputs[0].value, GEN_A, (uint64_t)i));
  job_drop(&job);
}

static void test_bench_pipeline_best(void) {
  if (!gpu_small) bench_pipeline_best();
}
static void test_large_sizes(void) {
  if (!gpu_small) check_large_sizes();
}

static const struct test_case cases[] = {
    TEST(test_device),        TEST(test_odd_sizes),           TEST(test_best_odd_sizes),
    TEST(test_tf32_paths),    TEST(test_kernel_info),         TEST(test_occupancy_and_work),
    TEST(test_pipeline_best), TEST(test_bench_pipeline_best), TEST(test_variant_order),
    TEST(test_graph),         TEST(test_large_sizes),         TEST_END,
};
const struct test_suite test_suite = {.cases = cases,
                                      .modes = gpu_backend_modes,
                                      .setup = gpu_backend_open,
                                      .teardown = gpu_backend_close};
