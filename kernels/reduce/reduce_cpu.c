/* The reduce's CPU stand-ins (reduce.h): each repeats its kernel's float additions in
 * the kernel's order (reduce.cuh), so the same tolerance holds; only the work
 * distribution differs. */
#include <string.h>

#include "kernels/reduce/reduce.h"

#define WARPS (REDUCE_BLOCK / 32)

/* The warp's butterfly (warp_sum): at step o lane l adds lane l^o's value; returns lane
 * 0's (every lane ends with the same bits). v: 32 values, overwritten. */
static float butterfly(float *v) {
  float w[32];
  for (int o = 16; o > 0; o >>= 1) {
    for (int l = 0; l < 32; l++) w[l] = v[l] + v[l ^ o];
    memcpy(v, w, sizeof w);
  }
  return v[0];
}

/* reduce_block_shuffle: each warp's butterfly, then warp 0's over the 8 warp sums
 * (lanes 8..31 zero). v: REDUCE_BLOCK values, overwritten. */
static float block_shuffle(float *v) {
  float lanes[32] = {0};
  for (int w = 0; w < WARPS; w++) lanes[w] = butterfly(v + 32 * w);
  return butterfly(lanes);
}

/* reduce_block_tree: halved 8 times, t adding t + s (sequential addressing). */
static float block_tree(float *v) {
  for (int s = REDUCE_BLOCK / 2; s > 0; s >>= 1)
    for (int t = 0; t < s; t++) v[t] += v[t + s];
  return v[0];
}

int cpu_reduce_naive(const struct exp_cpu_call *c) {
  const float *x = c->in[0];
  const size_t n = (size_t)c->spec->p[REDUCE_N];
  float s = 0.0f;
  for (size_t i = 0; i < n; i++) s += x[i];
  c->out[0] = s;
  return 0;
}

/* shared and warp: a block of 256 (zeros past n) summed by the block's algorithm,
 * block sums added to the zeroed output in block order. */
static int blocks(const struct exp_cpu_call *c, float (*block_sum)(float *)) {
  const float *x = c->in[0];
  const size_t n = (size_t)c->spec->p[REDUCE_N];
  float v[REDUCE_BLOCK], s = 0.0f;
  for (size_t base = 0; base < n; base += REDUCE_BLOCK) {
    for (size_t t = 0; t < REDUCE_BLOCK; t++) v[t] = base + t < n ? x[base + t] : 0.0f;
    s += block_sum(v);
  }
  c->out[0] = s;
  return 0;
}

int cpu_reduce_shared(const struct exp_cpu_call *c) { return blocks(c, block_tree); }

int cpu_reduce_warp(const struct exp_cpu_call *c) { return blocks(c, block_shuffle); }

/* best (reduce_best_kernel): P = G x 256 threads, thread g adding float4s g, g + P,
 * ... of x past its head into its 4 lanes in that order. The threads' accumulators
 * live in the scratch (4P floats, then G partials), so one sequential, vectorizable
 * pass over x adds each float4 into its thread's lanes. Then as the kernel: block 0's
 * threads take the head (lane x) and the tail (lane y), each thread (x + y) + (z + w),
 * each block its shuffles, and the last block sums the partials, thread t taking t,
 * t + 256, ... in order, then its shuffles. */
int cpu_reduce_best(const struct exp_cpu_call *c) {
  const float *x = c->in[0];
  const size_t n = (size_t)c->spec->p[REDUCE_N];
  size_t head = 0;
  const unsigned g = reduce_best_grid(n, x, &head);
  const size_t p = (size_t)g * REDUCE_BLOCK, n4 = (n - head) / 4, tail0 = head + 4 * n4;
  float *acc = c->scratch, *partials = c->scratch + 4 * p, v[REDUCE_BLOCK];
  memset(acc, 0, 4 * p * sizeof *acc);
  for (size_t base = 0; base < n4; base += p) {
    const float *src = x + head + 4 * base;
    const size_t m = 4 * (n4 - base < p ? n4 - base : p);
    for (size_t j = 0; j < m; j++) acc[j] += src[j];
  }
  for (size_t t = 0; t < 3; t++) {
    if (t < head) acc[4 * t] += x[t];
    if (t < n - tail0) acc[4 * t + 1] += x[tail0 + t];
  }
  for (unsigned b = 0; b < g; b++) {
    const float *a = acc + 4 * (size_t)b * REDUCE_BLOCK;
    for (int t = 0; t < REDUCE_BLOCK; t++)
      v[t] = (a[4 * t] + a[4 * t + 1]) + (a[4 * t + 2] + a[4 * t + 3]);
    partials[b] = block_shuffle(v);
  }
  for (unsigned t = 0; t < REDUCE_BLOCK; t++) {
    float r = 0.0f;
    for (unsigned j = t; j < g; j += REDUCE_BLOCK) r += partials[j];
    v[t] = r;
  }
  c->out[0] = block_shuffle(v);
  return 0;
}
