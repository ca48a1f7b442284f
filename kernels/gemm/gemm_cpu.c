/* The gemm's CPU stand-ins (gemm.h). Each mirrors its CUDA counterpart's arithmetic;
 * only the work distribution differs. */
#include <math.h>

#include "kernels/gemm/gemm.h"

#define GEMM_TILE 16

int cpu_gemm_naive(const struct exp_cpu_call *c) {
  const float *a = c->in[0], *b = c->in[1];
  float *out = c->out;
  int m = c->spec->p[GEMM_M], n = c->spec->p[GEMM_N], k = c->spec->p[GEMM_K];
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int kk = 0; kk < k; kk++) acc = fmaf(a[(size_t)i * k + kk], b[(size_t)kk * n + j], acc);
      out[(size_t)i * n + j] = acc;
    }
  return 0;
}

/* One 16x16 output tile: its accumulators live across all K steps, as in
 * gemm_tiled where each thread keeps one acc in a register. */
static void gemm_tile(const float *a, const float *b, float *c, int n, int k, int i0, int i1,
                      int j0, int j1) {
  float acc[GEMM_TILE][GEMM_TILE] = {{0}};
  for (int k0 = 0; k0 < k; k0 += GEMM_TILE) {
    int k1 = k0 + GEMM_TILE < k ? k0 + GEMM_TILE : k;
    for (int i = i0; i < i1; i++)
      for (int kk = k0; kk < k1; kk++) {
        float a_ik = a[(size_t)i * k + kk];
        const float *b_row = b + (size_t)kk * n;
        float *acc_row = acc[i - i0] - j0;
        for (int j = j0; j < j1; j++) acc_row[j] = fmaf(a_ik, b_row[j], acc_row[j]);
      }
  }
  for (int i = i0; i < i1; i++)
    for (int j = j0; j < j1; j++) c[(size_t)i * n + j] = acc[i - i0][j - j0];
}

int cpu_gemm_tiled(const struct exp_cpu_call *c) {
  int m = c->spec->p[GEMM_M], n = c->spec->p[GEMM_N], k = c->spec->p[GEMM_K];
  for (int i0 = 0; i0 < m; i0 += GEMM_TILE)
    for (int j0 = 0; j0 < n; j0 += GEMM_TILE) {
      int i1 = i0 + GEMM_TILE < m ? i0 + GEMM_TILE : m;
      int j1 = j0 + GEMM_TILE < n ? j0 + GEMM_TILE : n;
      gemm_tile(c->in[0], c->in[1], c->out, n, k, i0, i1, j0, j1);
    }
  return 0;
}
