/* The scan's CPU stand-ins (scan.h): each repeats its kernels' float additions in the
 * kernels' order (scan.cuh), so the same tolerance holds; only the work distribution
 * differs. */
#include <string.h>

#include "kernels/scan/scan.h"

/* ---- naive and shared: one tile of 1024 at a time, then the levels ---- */

/* scan_tile_kernel<SCAN_HILLIS_STEELE> on one tile: 10 steps, each element adding the
 * one 2^k to its left (double-buffered); returns the tile's total. */
static float tile_hillis_steele(const float *in, float *out, size_t len) {
  float buf[2][SCAN_TILE];
  for (size_t t = 0; t < SCAN_TILE; t++) buf[0][t] = t < len ? in[t] : 0.0f;
  int p = 0;
  for (int o = 1; o < SCAN_TILE; o <<= 1) {
    for (int t = 0; t < SCAN_TILE; t++)
      buf[p ^ 1][t] = t >= o ? buf[p][t] + buf[p][t - o] : buf[p][t];
    p ^= 1;
  }
  for (size_t t = 0; t < len; t++) out[t] = buf[p][t];
  return buf[p][SCAN_TILE - 1];
}

/* scan_tile_kernel<SCAN_BLELLOCH> on one tile: up-sweep, the total out, down-sweep to
 * the exclusive scan, plus each element's own value; returns the tile's total. */
static float tile_blelloch(const float *in, float *out, size_t len) {
  float s[SCAN_TILE], x[SCAN_TILE];
  for (size_t t = 0; t < SCAN_TILE; t++) s[t] = x[t] = t < len ? in[t] : 0.0f;
  int off = 1;
  for (int d = SCAN_TILE / 2; d > 0; d >>= 1, off <<= 1)
    for (int t = 0; t < d; t++) s[off * (2 * t + 2) - 1] += s[off * (2 * t + 1) - 1];
  const float total = s[SCAN_TILE - 1];
  s[SCAN_TILE - 1] = 0.0f;
  for (int d = 1; d < SCAN_TILE; d <<= 1) {
    off >>= 1;
    for (int t = 0; t < d; t++) {
      const int a = off * (2 * t + 1) - 1, b = off * (2 * t + 2) - 1;
      const float u = s[a];
      s[a] = s[b];
      s[b] += u;
    }
  }
  for (size_t t = 0; t < len; t++) out[t] = s[t] + x[t];
  return total;
}

/* scan_launch's naive and shared: level l's tiles scanned (level 0 from x into y, the
 * others in place in the scratch), each tile's total into level l + 1; then from the
 * top level down each element of tiles 1, 2, ... adds the inclusive total of the tiles
 * before it. */
static int levels(const struct exp_cpu_call *c, float (*tile)(const float *, float *, size_t)) {
  const size_t n = (size_t)c->spec->p[SCAN_N];
  struct scan_levels L;
  scan_levels_of(n, &L);
  float *lv[SCAN_MAX_LEVELS] = {c->out};
  for (int l = 1; l < L.count; l++) lv[l] = c->scratch + L.off[l] / sizeof(float);
  for (int l = 0; l < L.count; l++) {
    const float *in = l == 0 ? c->in[0] : lv[l];
    for (size_t base = 0; base < L.len[l]; base += SCAN_TILE) {
      const size_t len = L.len[l] - base < SCAN_TILE ? L.len[l] - base : SCAN_TILE;
      const float total = tile(in + base, lv[l] + base, len);
      if (l + 1 < L.count) lv[l + 1][base / SCAN_TILE] = total;
    }
  }
  for (int l = L.count - 2; l >= 0; l--)
    for (size_t i = SCAN_TILE; i < L.len[l]; i++) lv[l][i] += lv[l + 1][i / SCAN_TILE - 1];
  return 0;
}

int cpu_scan_naive(const struct exp_cpu_call *c) { return levels(c, tile_hillis_steele); }

int cpu_scan_shared(const struct exp_cpu_call *c) { return levels(c, tile_blelloch); }

/* ---- best ---- */

/* warp_inclusive over 32 lanes (Kogge-Stone): at step o lane l >= o adds lane l - o's
 * value of the step before. v: 32 values, replaced by their inclusive scan. */
static void kogge_stone(float *v) {
  float w[32];
  for (int o = 1; o < 32; o <<= 1) {
    for (int l = 0; l < 32; l++) w[l] = l >= o ? v[l] + v[l - o] : v[l];
    memcpy(v, w, sizeof w);
  }
}

/* scan_best_tile on tile `base` (4096 elements, zeros past n): the 32 segments of 32
 * float4 are 128 contiguous floats each. Per segment each float4 is scanned in place (3
 * adds), the 32 float4 totals by Kogge-Stone, and each float4 adds the segment's
 * exclusive total before it; the 32 segment totals by Kogge-Stone, the aggregate the
 * last; each element then adds excl + its segment's exclusive prefix. Returns the
 * tile's aggregate. */
static float best_tile(const float *x, float *y, size_t n, size_t base, float excl) {
  float v[SCAN_BEST_TILE], inc[32], seg[32];
  for (size_t k = 0; k < SCAN_BEST_TILE; k++) v[k] = base + k < n ? x[base + k] : 0.0f;
  for (int s = 0; s < 32; s++) {
    float *q = v + 128 * s;
    for (int l = 0; l < 32; l++) {
      float *f = q + 4 * l;
      f[1] += f[0];
      f[2] += f[1];
      f[3] += f[2];
      inc[l] = f[3];
    }
    kogge_stone(inc);
    seg[s] = inc[31];
    for (int l = 0; l < 32; l++) {
      const float ex = l ? inc[l - 1] : 0.0f;
      for (int k = 0; k < 4; k++) q[4 * l + k] += ex;
    }
  }
  kogge_stone(seg);
  for (int s = 0; s < 32; s++) {
    const float off = excl + (s ? seg[s - 1] : 0.0f);
    for (int k = 0; k < 128; k++) {
      const size_t i = base + 128 * (size_t)s + (size_t)k;
      if (i < n) y[i] = v[128 * s + k] + off;
    }
  }
  return seg[31];
}

/* best: the tiles in order, each one's exclusive prefix the inclusive prefix the tile
 * before it published (tile 0: 0; then excl + aggregate). */
int cpu_scan_best(const struct exp_cpu_call *c) {
  const size_t n = (size_t)c->spec->p[SCAN_N];
  float excl = 0.0f;
  for (size_t t = 0; t < scan_best_tiles(n); t++) {
    const float agg = best_tile(c->in[0], c->out, n, t * SCAN_BEST_TILE, excl);
    excl = t == 0 ? agg : excl + agg;
  }
  return 0;
}
