/* The transpose's CPU stand-ins (transpose.h). Each mirrors its CUDA counterpart's
 * data movement; only the work distribution differs. */
#include <string.h>

#include "kernels/transpose/transpose.h"

#define TRANSPOSE_TILE 32

int cpu_transpose_naive(const struct exp_cpu_call *c) {
  const float *a = c->in[0];
  float *b = c->out;
  int m = c->spec->p[TRANSPOSE_M], n = c->spec->p[TRANSPOSE_N];
  for (int y = 0; y < m; y++)
    for (int x = 0; x < n; x++) b[(size_t)x * m + y] = a[(size_t)y * n + x];
  return 0;
}

int cpu_transpose_blocked(const struct exp_cpu_call *c) {
  const float *a = c->in[0];
  float *b = c->out;
  int m = c->spec->p[TRANSPOSE_M], n = c->spec->p[TRANSPOSE_N];
  /* A 32x32 block of A and of B both stay in L1 while it is swapped. */
  for (int y0 = 0; y0 < m; y0 += TRANSPOSE_TILE)
    for (int x0 = 0; x0 < n; x0 += TRANSPOSE_TILE) {
      int y1 = y0 + TRANSPOSE_TILE < m ? y0 + TRANSPOSE_TILE : m;
      int x1 = x0 + TRANSPOSE_TILE < n ? x0 + TRANSPOSE_TILE : n;
      for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) b[(size_t)x * m + y] = a[(size_t)y * n + x];
    }
  return 0;
}

int cpu_copy(const struct exp_cpu_call *c) {
  size_t n = (size_t)c->spec->p[TRANSPOSE_M] * (size_t)c->spec->p[TRANSPOSE_N];
  if (n) memcpy(c->out, c->in[0], n * sizeof(float));
  return 0;
}
