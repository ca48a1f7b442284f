/* The stencil's CPU stand-ins (stencil.h). Each mirrors its CUDA counterpart's
 * arithmetic; only the work distribution differs. */
#include "kernels/stencil/stencil.h"
#include "kernels/stencil/stencil_tile.h"

int cpu_stencil_naive(const struct exp_cpu_call *c) {
  const float *x = c->in[0];
  float *y = c->out;
  int n = c->spec->p[STENCIL_N], r = c->spec->p[STENCIL_RADIUS];
  float width = (float)(2 * r + 1);
  for (int i = 0; i < n; i++) {
    float sum = 0.0f;
    /* Out-of-range neighbours are zeros: skipping them adds nothing. */
    int lo = i - r < 0 ? 0 : i - r, hi = i + r >= n ? n - 1 : i + r;
    for (int j = lo; j <= hi; j++) sum += x[j];
    y[i] = sum / width;
  }
  return 0;
}

size_t stencil_cpu_scratch_floats(const struct exp_spec *s) {
  return CPU_STENCIL_TILE + 2 * (size_t)s->p[STENCIL_RADIUS];
}

int cpu_stencil_shared(const struct exp_cpu_call *c) {
  const float *x = c->in[0];
  float *y = c->out, *tile = c->scratch;
  int n = c->spec->p[STENCIL_N], r = c->spec->p[STENCIL_RADIUS];
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
  return 0;
}

int cpu_stencil_window(const struct exp_cpu_call *c) {
  const float *x = c->in[0];
  float *y = c->out;
  int n = c->spec->p[STENCIL_N], r = c->spec->p[STENCIL_RADIUS];
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
  return 0;
}
