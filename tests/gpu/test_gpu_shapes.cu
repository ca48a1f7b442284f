/* Every configuration the shape pickers can choose, on the GPU against the experiments'
 * CPU references (the same tolerance rules as a job's check): gemm best's tiles (whole,
 * guarded with and without 16-byte B and C rows, hybrid) at every split count class, its
 * gemv kernels, tf32's wgmma tile widths in both forms (Bt with and without A's copy,
 * C^T) and split-K, transpose best's five kernels, stencil best's two instances; each
 * forced through its launcher's test hook (gemm_best_launch_pick, gemm_tf32_launch_pick,
 * transpose_best_launch_kind) at odd sizes and edge shapes: tails in every dimension,
 * m or n = 1, k not a multiple of 4, k below the tile's k step, pointers 16-byte aligned
 * and not; then the pickers' own choices at the shapes the labs measured (smaller where
 * the reference would be slow). Outputs are poisoned with NaN and followed by a guard
 * zone that must stay untouched. Exits 77 where no CUDA device answers. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "kernels/core/reference.h"
#include "kernels/gemm/gemm.cuh"
#include "kernels/stencil/stencil.cuh"
#include "kernels/transpose/transpose.cuh"
#include "tests/runner.h"

#define GUARD 256 /* floats after each output that must stay NaN (all bits set) */

static cudaStream_t g_s;
static int g_sms, g_cases;
/* The gemm precision statistic's two populations here (kernels/gemm/gemm.c's limit):
 * the largest of FP32 outputs, the smallest of TF32 outputs under the FP32 rule. */
static double g_fp32_worst, g_tf32_best = INFINITY;
static bool g_wgmma; /* the tf32 wgmma path must run here: sm_90a code and a cc 9.0 device */

/* Inputs and outputs are prepared on g_s, the kernels' stream: g_s does not wait for the
 * legacy default stream (cudaStreamNonBlocking), and cudaMemset there, or the DMA of a
 * cudaMemcpy from pageable memory, may still be running when the kernel starts. */

/* A device copy of h[0..n) at float offset off (1: not 16-byte aligned). */
static float *upload(const float *h, size_t n, int off, float **base) {
  CHECK_CUDA(cudaMalloc((void **)base, (n + off + 4) * sizeof(float)));
  CHECK_CUDA(cudaMemcpyAsync(*base + off, h, n * sizeof(float), cudaMemcpyHostToDevice, g_s));
  return *base + off;
}

/* An output of n floats and its guard zone at offset off, all NaN. */
static float *output(size_t n, int off, float **base) {
  CHECK_CUDA(cudaMalloc((void **)base, (n + off + GUARD) * sizeof(float)));
  CHECK_CUDA(cudaMemsetAsync(*base, 0xFF, (n + off + GUARD) * sizeof(float), g_s));
  return *base + off;
}

/* Downloads the output, checks its guard zone and compares it with ref's run `entry`. */
static void check_output(const char *what, const struct reference *ref, int entry,
                         const float *d_out, size_t n) {
  CHECK_CUDA(cudaStreamSynchronize(g_s));
  CHECK_CUDA(cudaGetLastError());
  float *h = (float *)malloc((n + GUARD) * sizeof(float));
  CHECK(h != NULL);
  CHECK_CUDA(cudaMemcpy(h, d_out, (n + GUARD) * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = n; i < n + GUARD; i++) {
    uint32_t bits;
    memcpy(&bits, &h[i], 4);
    if (bits != 0xFFFFFFFFu) CHECK_FAIL_("%s: wrote past the output (float %zu)", what, i - n);
  }
  struct exp_check c;
  reference_check(ref, entry, h, &c);
  if (!c.passed)
    CHECK_FAIL_("%s: %" PRId64 " of %" PRId64
                " mismatch (max abs err %g, tolerance %g: %s; precision %g, limit %g)",
                what, c.mismatches, c.compared, c.max_abs_err, c.tolerance, c.tolerance_rule,
                c.precision_rms, c.precision_limit);
  if (c.has_precision && entry != GEMM_TF32 && c.precision_rms > g_fp32_worst)
    g_fp32_worst = c.precision_rms;
  /* TF32 arithmetic must not pass as FP32 (from 64 elements: on a handful a few operands
   * may round by little) */
  if (c.has_precision && entry == GEMM_TF32 && c.compared >= 64) {
    struct exp_check f;
    reference_check(ref, GEMM_BEST, h, &f);
    if (!f.precision_failed)
      CHECK_FAIL_("%s: TF32 output passes the FP32 precision rule (%g, limit %g)", what,
                  f.precision_rms, f.precision_limit);
    if (f.precision_rms < g_tf32_best) g_tf32_best = f.precision_rms;
  }
  free(h);
  g_cases++;
}

/* ---- gemm ---- */

enum gemm_run { RUN_BEST_AUTO, RUN_BEST_PICK, RUN_TF32_AUTO, RUN_TF32_PICK };

/* One gemm at m x n x k with operands at float offsets oa, ob, oc; pick (RUN_*_PICK):
 * the configuration forced. Returns false when a forced tf32 configuration could not run
 * here (no wgmma path): nothing to check then. */
static bool gemm_case(enum gemm_run how, const void *pick, const char *name, int m, int n, int k,
                      int oa, int ob, int oc) {
  struct exp_spec s;
  exp_spec_default(EXP_GEMM, &s);
  s.p[GEMM_M] = m, s.p[GEMM_N] = n, s.p[GEMM_K] = k;
  s.inputs[0].value = 100 + (uint64_t)g_cases, s.inputs[1].value = 200 + (uint64_t)g_cases;
  struct reference *ref = NULL;
  CHECK_INT_EQ(reference_new(&s, NULL, &ref), 0);
  float *ba, *bb, *bc;
  const float *a = upload(reference_input(ref, 0), (size_t)m * k, oa, &ba);
  const float *b = upload(reference_input(ref, 1), (size_t)k * n, ob, &bb);
  float *c = output((size_t)m * n, oc, &bc);
  cudaError_t e = cudaSuccess;
  switch (how) {
  case RUN_BEST_AUTO: e = gemm_best_launch(a, b, c, m, n, k, g_s); break;
  case RUN_BEST_PICK:
    e = gemm_best_launch_pick((const struct gemm_pick *)pick, a, b, c, m, n, k, g_s);
    break;
  case RUN_TF32_AUTO: e = gemm_tf32_launch(a, b, c, m, n, k, g_s); break;
  case RUN_TF32_PICK:
    e = gemm_tf32_launch_pick((const struct tf32_pick *)pick, a, b, c, m, n, k, g_s);
    break;
  }
  char what[128];
  snprintf(what, sizeof what, "gemm %s %dx%dx%d (offsets %d %d %d)", name, m, n, k, oa, ob, oc);
  bool ran = true;
  if (how == RUN_TF32_PICK && e == cudaErrorNotSupported && !g_wgmma) {
    ran = false;
  } else {
    if (e != cudaSuccess) CHECK_FAIL_("%s: %s", what, cudaGetErrorString(e));
    const bool tf32 = how == RUN_TF32_AUTO || how == RUN_TF32_PICK;
    check_output(what, ref, tf32 ? GEMM_TF32 : GEMM_BEST, c, (size_t)m * n);
  }
  CHECK_CUDA(cudaFree(ba));
  CHECK_CUDA(cudaFree(bb));
  CHECK_CUDA(cudaFree(bc));
  reference_free(ref);
  return ran;
}

static void tile_case(int tile, bool hybrid, int s, int m, int n, int k, int oa, int ob, int oc) {
  const struct gemm_pick p = gemm_pick_tile(tile, hybrid, s, k);
  gemm_case(RUN_BEST_PICK, &p, p.name, m, n, k, oa, ob, oc);
}

/* Every tile at whole sizes, guarded (rows of 4-byte and of 16-byte accesses), k below
 * its k step, m = 1, n = 1, unaligned pointers; the hybrid instance where it exists, with
 * inner tiles whose k steps are whole and not; each alone (1 split) and split. The narrow
 * tiles at the shapes they serve (n or m <= 16). */
static void test_gemm_tiles(void) {
  for (int t = 0; t < GEMM_N_TILES; t++) {
    const struct gemm_tile_cfg *c = &gemm_tile_cfgs[t];
    const int bm = c->bm, bn = c->bn, bk = c->bk;
    int shapes[7][3] = {{2 * bm, 2 * bn, 4 * bk},
                        {2 * bm + 3, 2 * bn + 5, 3 * bk + 7},
                        {2 * bm + 3, 2 * bn + 4, 3 * bk + 7},
                        {bm + 1, bn + 4, 5},
                        {1, bn + 4, 2 * bk + 3},
                        {bm + 5, 1, 2 * bk + 3},
                        {2 * bm, 2 * bn, 4 * bk}};
    if (c->narrow == 1) { /* n <= 16 */
      static const int nn[7] = {16, 7, 12, 16, 16, 1, 16};
      for (int i = 0; i < 7; i++) shapes[i][1] = nn[i];
    }
    if (c->narrow == 2) { /* m <= 16 */
      static const int mm[7] = {16, 5, 13, 16, 1, 9, 16};
      for (int i = 0; i < 7; i++) shapes[i][0] = mm[i];
    }
    for (int s = 1; s <= 3; s += 2)
      for (int i = 0; i < 7; i++) {
        const int off = i == 6; /* the last: whole sizes, unaligned: the guarded instance */
        tile_case(t, false, s, shapes[i][0], shapes[i][1], shapes[i][2], off, off, off);
      }
    if (!c->hybrid) continue;
    for (int s = 1; s <= 3; s += 2) {
      tile_case(t, true, s, 3 * bm + 3, 3 * bn + 4, 3 * bk + 7, 0, 0, 0); /* k tail */
      tile_case(t, true, s, 3 * bm, 3 * bn + 4, 4 * bk, 0, 0, 0);         /* whole k */
      tile_case(t, true, s, 3 * bm + 1, 3 * bn, 2 * bk + 1, 0, 0, 0);     /* m tail only */
      tile_case(t, true, s, 2 * bm + 3, 2 * bn + 5, 3 * bk, 0, 0, 0);     /* n % 4: guarded */
      tile_case(t, true, s, 3 * bm, 3 * bn + 4, 4 * bk, 1, 0, 1);         /* C unaligned */
    }
  }
}

/* gemv_t at 1 and 8 rows (m = 1; 2, 5, 8), gemv_n at one column; the float4 paths (n and
 * k multiples of 4, aligned) and the scalar ones; 1 split and several. */
static void test_gemv(void) {
  static const int t1[][3] = {{1, 1000, 300}, {1, 1001, 299}, {1, 129, 33}, {1, 4, 5}};
  static const int t8[][3] = {
      {5, 1000, 300}, {5, 1001, 77}, {8, 3001, 2049}, {2, 129, 33}, {8, 4, 5}};
  static const int n1[][3] = {
      {1000, 1, 300}, {1001, 1, 77}, {3, 1, 1000}, {4096, 1, 4096}, {17, 1, 5}};
  static const int splits[] = {1, 4, 13};
  for (int si = 0; si < 3; si++) {
    for (size_t i = 0; i < sizeof t1 / sizeof t1[0]; i++) {
      const struct gemm_pick p = gemm_pick_gemv(GEMM_KIND_GEMV_T, 1, splits[si], t1[i][2]);
      gemm_case(RUN_BEST_PICK, &p, p.name, t1[i][0], t1[i][1], t1[i][2], 0, 0, 0);
    }
    for (size_t i = 0; i < sizeof t8 / sizeof t8[0]; i++) {
      const struct gemm_pick p = gemm_pick_gemv(GEMM_KIND_GEMV_T, 8, splits[si], t8[i][2]);
      gemm_case(RUN_BEST_PICK, &p, p.name, t8[i][0], t8[i][1], t8[i][2], 0, 0, 0);
    }
    for (size_t i = 0; i < sizeof n1 / sizeof n1[0]; i++) {
      const struct gemm_pick p = gemm_pick_gemv(GEMM_KIND_GEMV_N, 1, splits[si], n1[i][2]);
      gemm_case(RUN_BEST_PICK, &p, p.name, n1[i][0], n1[i][1], n1[i][2], 0, 0, 0);
    }
  }
  const struct gemm_pick p = gemm_pick_gemv(GEMM_KIND_GEMV_T, 8, 4, 300); /* unaligned: scalar */
  gemm_case(RUN_BEST_PICK, &p, p.name, 5, 1000, 300, 1, 1, 1);
  const struct gemm_pick q = gemm_pick_gemv(GEMM_KIND_GEMV_N, 1, 3, 300);
  gemm_case(RUN_BEST_PICK, &q, q.name, 1000, 1, 300, 1, 1, 1);
}

/* What gemm_pick_for chooses at the labs' shapes (and small odd ones), through the
 * variant's own launcher. */
static void test_gemm_picks(void) {
  static const int shapes[][3] = {
      {33, 47, 18},       {130, 135, 77},     {256, 256, 256},   {512, 512, 512},  {768, 768, 768},
      {1024, 1024, 1024}, {1536, 1536, 1536}, {1000, 1500, 777}, {2500, 2500, 64}, {3000, 3000, 64},
      {256, 4096, 1024},  {4096, 256, 1024},  {1, 4096, 4096},   {4096, 1, 4096},  {16, 4096, 4096},
      {4096, 16, 4096},   {5, 3001, 2049},    {3001, 7, 2049},   {1, 1, 1},        {7, 3, 1}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const int m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
    const struct gemm_pick p = gemm_pick_for(m, n, k, g_sms, gemm_best_scratch_floats(m, n, k));
    gemm_case(RUN_BEST_AUTO, NULL, p.name, m, n, k, 0, 0, 0);
  }
}

/* Every tile width: tails in M and N (odd N: scalar stores; even: float2), k % 8 == 0 (A
 * read in place) and not (A copied to a 32-float pitch), k below 32, m or n = 1, one tile
 * exactly, split-K, C unaligned; then the picks through the variant's launcher, and an
 * unaligned A where k % 8 == 0 (the launcher falls back to mma.sync). */
static void test_tf32(void) {
  for (int t = 0; t < TF32_N_TILES; t++) {
    const int bn = tf32_tile_cfgs[t].bn;
    const int shapes[][3] = {{2 * 128 + 3, 2 * bn + 5, 104},
                             {2 * 128 + 3, 2 * bn + 4, 103},
                             {128, bn, 32},
                             {1, bn + 3, 40},
                             {200, 1, 40},
                             {130, 70, 5},
                             {130, 70, 8},
                             {300, 2 * bn + 1, 777},
                             {300, 2 * bn, 1024}};
    for (int s = 1; s <= 4; s += 3)
      for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const struct tf32_pick p = tf32_pick_make(t, false, s, shapes[i][2]);
        if (!gemm_case(RUN_TF32_PICK, &p, p.name, shapes[i][0], shapes[i][1], shapes[i][2], 0, 0,
                       i == 1)) {
          printf("tf32: no wgmma path here; forced configurations skipped\n");
          goto picks;
        }
      }
  }
  /* The C^T form (n % 8 == 0, k % 8 == 0): tails of M at the tile width (its D columns)
   * and of N at 8 past 128 (a D tile whose last boxes are partly or wholly outside B),
   * one tile exactly, m = 1, n = 8, k = 8 (one k8 step of a k-tile), an odd number of
   * k-tiles (the fragment buffers' last pair has one), split-K, C unaligned. */
  for (int t = 0; t < TF32_N_TILES; t++) {
    if (!tf32_tile_cfgs[t].ct) continue;
    const int bw = tf32_tile_cfgs[t].bn;
    const int shapes[][3] = {{2 * bw + 5, 2 * 128 + 8, 104},
                             {bw - 3, 128 + 40, 96},
                             {bw, 128, 32},
                             {1, 200, 40},
                             {130, 8, 8},
                             {300, 72, 16},
                             {bw + 1, 3 * 128 + 96, 1000},
                             {300, 256, 1024}};
    for (int s = 1; s <= 4; s += 3)
      for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const struct tf32_pick p = tf32_pick_make(t, true, s, shapes[i][2]);
        if (!gemm_case(RUN_TF32_PICK, &p, p.name, shapes[i][0], shapes[i][1], shapes[i][2], 0, 0,
                       i == 1))
          goto picks;
      }
  }
picks:;
  static const int picks[][3] = {{1024, 1024, 1024}, {1536, 1536, 1536}, {2048, 2048, 2048},
                                 {2500, 2500, 2500}, {3000, 3000, 96},   {1000, 1500, 777},
                                 {257, 383, 97},     {1, 1, 1},          {33, 47, 18}};
  for (size_t i = 0; i < sizeof picks / sizeof picks[0]; i++) {
    const int m = picks[i][0], n = picks[i][1], k = picks[i][2];
    const struct tf32_pick p = tf32_pick_for(m, n, k, g_sms, UINT64_MAX);
    gemm_case(RUN_TF32_AUTO, NULL, p.name, m, n, k, 0, 0, 0);
  }
  gemm_case(RUN_TF32_AUTO, NULL, "mma.sync fallback", 300, 200, 96, 1, 0, 0);
  gemm_case(RUN_TF32_AUTO, NULL, "mma.sync fallback, B unaligned", 300, 200, 96, 0, 1, 0);
}

/* ---- transpose ---- */

static void transpose_case(int kind, int m, int n, int off) {
  struct exp_spec s;
  exp_spec_default(EXP_TRANSPOSE, &s);
  s.p[TRANSPOSE_M] = m, s.p[TRANSPOSE_N] = n;
  s.inputs[0].value = 300 + (uint64_t)g_cases;
  struct reference *ref = NULL;
  CHECK_INT_EQ(reference_new(&s, NULL, &ref), 0);
  float *ba, *bb;
  const float *a = upload(reference_input(ref, 0), (size_t)m * n, off, &ba);
  float *b = output((size_t)m * n, off, &bb);
  cudaError_t e = kind < 0 ? transpose_best_launch(a, b, m, n, g_s)
                           : transpose_best_launch_kind((enum transpose_kind)kind, a, b, m, n, g_s);
  char what[96];
  snprintf(what, sizeof what, "transpose kind %d %dx%d (offset %d)", kind, m, n, off);
  if (e != cudaSuccess) CHECK_FAIL_("%s: %s", what, cudaGetErrorString(e));
  check_output(what, ref, TRANSPOSE_BEST, b, (size_t)m * n);
  CHECK_CUDA(cudaFree(ba));
  CHECK_CUDA(cudaFree(bb));
  reference_free(ref);
}

/* Each kernel at the shapes its kind serves, and at the odd ones of the others where it
 * is defined (sec at every (J m) mod 8, rows shorter than a tile, thin shapes); then the
 * picks, and unaligned pointers (the tile kernel's 4-byte path). */
static void test_transpose(void) {
  static const int tile[][2] = {{64, 64}, {100, 72}, {4100, 1028}, {1028, 4100},
                                {65, 63}, {33, 47},  {4099, 1023}};
  static const int sec[][2] = {{33, 47},    {47, 33},  {65, 130},  {131, 67},    {129, 257},
                               {203, 97},   {40, 200}, {66, 66},   {4099, 1023}, {1023, 4099},
                               {4097, 301}, {7, 5},    {1000, 33}, {64, 64}};
  static const int narrow[][2] = {{1000, 16}, {257, 17}, {301, 3}, {77, 1},
                                  {1000, 31}, {4099, 2}, {33, 47}};
  static const int gather[][2] = {{16, 1000}, {6, 7001}, {2, 3}, {31, 100}, {2, 4099}, {3, 1}};
  static const int copy[][2] = {{1, 1001}, {1001, 1}, {1, 1}, {1, 4}, {4096, 1}};
  for (size_t i = 0; i < sizeof tile / sizeof tile[0]; i++)
    transpose_case(TRANSPOSE_KIND_TILE, tile[i][0], tile[i][1], 0);
  for (size_t i = 0; i < sizeof sec / sizeof sec[0]; i++)
    transpose_case(TRANSPOSE_KIND_SEC, sec[i][0], sec[i][1], 0);
  for (size_t i = 0; i < sizeof narrow / sizeof narrow[0]; i++)
    transpose_case(TRANSPOSE_KIND_SEC_NARROW, narrow[i][0], narrow[i][1], 0);
  for (size_t i = 0; i < sizeof gather / sizeof gather[0]; i++)
    transpose_case(TRANSPOSE_KIND_GATHER, gather[i][0], gather[i][1], 0);
  for (size_t i = 0; i < sizeof copy / sizeof copy[0]; i++)
    transpose_case(TRANSPOSE_KIND_COPY, copy[i][0], copy[i][1], 0);
  static const int picks[][2] = {{2048, 2048}, {4097, 3001}, {3001, 4097},  {2049, 2049},
                                 {1, 1 << 20}, {1 << 20, 1}, {16, 1 << 16}, {1 << 16, 16},
                                 {6, 69905},   {3000, 5000}};
  for (size_t i = 0; i < sizeof picks / sizeof picks[0]; i++)
    transpose_case(-1, picks[i][0], picks[i][1], 0);
  transpose_case(-1, 4097, 3001, 1);
  transpose_case(-1, 1, 1001, 1);
  transpose_case(-1, 1000, 16, 1);
}

/* ---- stencil ---- */

/* Both instances (the 4096- and the 8192-float span; 2 and 1 tiles a block): n from 1 to
 * several waves, odd tile counts (a last block of one tile), x and y aligned and not. */
static void test_stencil(void) {
  static const int cases[][2] = {{1, 0},
                                 {7, 2},
                                 {4093, 2},
                                 {100003, 32},
                                 {4 * 4028 + 1, 32},
                                 {5 * 4028, 32},
                                 {1 << 20, 0},
                                 {100000, 1024},
                                 {10007, 2047},
                                 {5, 1024},
                                 {(1 << 20) + 7, 1023}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int off = 0; off <= 1; off++) {
      const int n = cases[i][0], r = cases[i][1];
      struct exp_spec s;
      exp_spec_default(EXP_STENCIL, &s);
      s.p[STENCIL_N] = n, s.p[STENCIL_RADIUS] = r;
      s.inputs[0].value = 400 + (uint64_t)g_cases;
      struct reference *ref = NULL;
      CHECK_INT_EQ(reference_new(&s, NULL, &ref), 0);
      float *bx, *by;
      const float *x = upload(reference_input(ref, 0), (size_t)n, off, &bx);
      float *y = output((size_t)n, off, &by);
      char what[96];
      snprintf(what, sizeof what, "stencil n=%d r=%d (offset %d)", n, r, off);
      const cudaError_t e = stencil_best_launch(x, y, n, r, g_s);
      if (e != cudaSuccess) CHECK_FAIL_("%s: %s", what, cudaGetErrorString(e));
      check_output(what, ref, STENCIL_BEST, y, (size_t)n);
      CHECK_CUDA(cudaFree(bx));
      CHECK_CUDA(cudaFree(by));
      reference_free(ref);
    }
}

static int setup(void) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    printf("SKIP: no CUDA device\n");
    return CHECK_SKIP;
  }
  struct cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  g_sms = prop.multiProcessorCount;
#ifdef GPULAB_CUDA_SM90A
  g_wgmma = prop.major == 9 && prop.minor == 0;
#endif
  CHECK_CUDA(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking));
  printf("device: %s, %d SMs; tf32 wgmma path %s\n", prop.name, g_sms,
         g_wgmma ? "expected" : "not expected");
  return 0;
}

static void teardown(void) {
  CHECK_CUDA(cudaStreamDestroy(g_s));
  printf(
      "gemm precision, rms(c - ref) / rms(ref): FP32 at most 2^%.2f, TF32 at least 2^%.2f (limit 2^-14)\n",
      log2(g_fp32_worst), log2(g_tf32_best));
  printf("test_gpu_shapes: %d configurations\n", g_cases);
}

static const struct test_case cases[] = {
    TEST(test_gemm_tiles),
    TEST(test_gemv),
    TEST(test_gemm_picks),
    TEST(test_tf32),
    TEST(test_transpose),
    TEST(test_stencil),
    TEST_END,
};
/* In order (C++ has no designated initializers before C++20). */
extern "C" const struct test_suite test_suite = {cases, NULL, setup, NULL, teardown};
