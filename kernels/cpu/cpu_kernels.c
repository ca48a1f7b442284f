/* CPU versions of the lecture's kernels (cpu_kernels.h). Each mirrors its CUDA
 * counterpart's arithmetic; only the work distribution differs. */
#include "kernels/cpu/cpu_kernels.h"

#include <math.h>
#include <string.h>
#include "kernels/stencil/stencil_best.h"

#define TRANSPOSE_TILE 32
#define GEMM_TILE 16

void cpu_transpose_naive(const float *a, float *b, int m, int n) {
  for (int y = 0; y < m; y++)
    for (int x = 0; x < n; x++) b[(size_t)x * m + y] = a[(size_t)y * n + x];
}

void cpu_transpose_blocked(const float *a, float *b, int m, int n) {
  /* A 32x32 block of A and of B both stay in L1 while it is swapped. */
  for (int y0 = 0; y0 < m; y0 += TRANSPOSE_TILE)
    for (int x0 = 0; x0 < n; x0 += TRANSPOSE_TILE) {
      int y1 = y0 + TRANSPOSE_TILE < m ? y0 + TRANSPOSE_TILE : m;
      int x1 = x0 + TRANSPOSE_TILE < n ? x0 + TRANSPOSE_TILE : n;
      for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) b[(size_t)x * m + y] = a[(size_t)y * n + x];
    }
}

void cpu_copy(const float *a, float *b, size_t n) {
  if (n) memcpy(b, a, n * sizeof *a);
}

void cpu_gemm_naive(const float *a, const float *b, float *c, int m, int n, int k) {
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int kk = 0; kk < k; kk++)
        acc = fmaf(a[(size_t)i * k + kk], b[(size_t)kk * n + j], acc);
      c[(size_t)i * n + j] = acc;
    }
}

/* One 16x16 output tile: its accumulators live across all K steps, as in
 * gemm_tiled where each thread keeps one acc in a register. */
static void gemm_tile(const float *a, const float *b, float *c, int n, int k, int i0,
                      int i1, int j0, int j1) {
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

void cpu_gemm_tiled(const float *a, const float *b, float *c, int m, int n, int k) {
  for (int i0 = 0; i0 < m; i0 += GEMM_TILE)
    for (int j0 = 0; j0 < n; j0 += GEMM_TILE) {
      int i1 = i0 + GEMM_TILE < m ? i0 + GEMM_TILE : m;
      int j1 = j0 + GEMM_TILE < n ? j0 + GEMM_TILE : n;
      gemm_tile(a, b, c, n, k, i0, i1, j0, j1);
    }
}

void cpu_stencil_naive(const float *x, float *y, int n, int r) {
  float width = (float)(2 * r + 1);
  for (int i = 0; i < n; i++) {
    float sum = 0.0f;
    /* Out-of-range neighbours are zeros: skipping them adds nothing. */
    int lo = i - r < 0 ? 0 : i - r, hi = i + r >= n ? n - 1 : i + r;
    for (int j = lo; j <= hi; j++) sum += x[j];
    y[i] = sum / width;
  }
}

void cpu_stencil_shared(const float *x, float *y, int n, int r, float *tile) {
  float width = (float)(2 * r + 1);
  int span = CPU_STENCIL_TILE + 2 * r;
  for (int base = 0; base < n; base += CPU_STENCIL_TILE) {
    /* The cooperative load: tile[j] = x[base + j - r], zero outside [0, n). */
    for (int j = 0; j < span; j++) {
      long g = (long)base + j - r;
      tile[j] = g >= 0 && g < n ? x[g] : 0.0f;
    }
    int count = n - base < CPU_STENCIL_TILE ? n - base : CPU_STENCIL_TILE;
    for (int t = 0; t < count; t++) {
      float sum = 0.0f;
      for (int d = 0; d < 2 * r + 1; d++) sum += tile[t + d];
      y[base + t] = sum / width;
    }
  }
}

void cpu_stencil_window(const float *x, float *y, int n, int r) {
  const int tile = stencil_best_tile(r);
  const double inv_width = 1.0 / (double)(2 * r + 1);
  for (int base = 0; base < n && tile > 0; base += tile) {
    double sum = 0.0;
    for (long j = (long)base - r; j <= (long)base + r; j++)
      if (j >= 0 && j < n) sum += x[j];
    int end = n - base < tile ? n : base + tile;
    for (int i = base; i < end; i++) {
      y[i] = (float)(sum * inv_width);
      if ((long)i + r + 1 < n) sum += x[i + r + 1];
      if (i - r >= 0) sum -= x[i - r];
    }
  }
}

void cpu_synthesize(const float *x, float *y, int n, int terms) {
  for (int i = 0; i < n; i++) {
    float sum = 0.0f;
    for (int k = 1; k <= terms; k++) sum += sinf((float)k * x[i]) / (float)k;
    y[i] = sum;
  }
}
