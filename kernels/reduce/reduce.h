/* The reduce experiment (the next lecture's first: many threads, one sum): out = the
 * float sum of x[0..n). Its descriptor, FP64 reference and tolerance rule (reduce.c),
 * CPU stand-ins (reduce_cpu.c), kernels and launchers (reduce.cuh, checked and timed
 * beside CUB on the H200 before they moved here) and CUDA side (reduce.cu). */
#ifndef GPULAB_REDUCE_H
#define GPULAB_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/core/experiment.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Params (exp_spec.p[]) and variants, in the descriptor's order. */
enum reduce_param { REDUCE_N };
enum reduce_variant {
  REDUCE_NAIVE,
  REDUCE_SHARED,
  REDUCE_WARP,
  REDUCE_BEST,
  REDUCE_CUB,
  REDUCE_VARIANTS
};
/* Not a variant: the rule users' kernels are checked with (exp_user.check_variant),
 * kernels/core/sum_rule.h's: random on generated inputs, any order on given ones. */
#define REDUCE_ANY_ORDER REDUCE_VARIANTS
/* n a request may give: x is 4 GiB there; one float out. gen.h's inputs (multiples of
 * 2^-23 below 1) sum exactly in FP64 up to here, so the reference is exact. */
#define REDUCE_MAX_N (1 << 30)

#define REDUCE_BLOCK 256     /* threads per block, every kernel */
#define REDUCE_BEST_UNROLL 4 /* best: float4 loads in flight per thread */
#define REDUCE_BEST_PER_SM 8 /* best: blocks an SM can hold, guaranteed by __launch_bounds__ */
/* best's grid at most: 4 blocks x the H200's 132 SMs, half of what the SMs hold: as
 * fast as 8 an SM or up to 2% faster at every size the lab timed
 * (bench/lab/reduce_tail.cu), with half the partials for the last block to sum. A
 * constant, not 4 x this device's SMs, so that the order of best's additions, hence its
 * bits and its tolerance, depend on n and x's alignment alone (the same on every GPU
 * and in the CPU stand-in). */
#define REDUCE_BEST_MAX_BLOCKS (4 * 132)
#define REDUCE_TREE_DEPTH 10 /* additions a value passes through in a block sum (<= 10) */

/* best's blocks at n elements starting at x (its alignment sets the head: 0-3 floats
 * up to the first 16-byte boundary, *head when not NULL); x NULL: aligned. Cannot fail. */
static inline unsigned reduce_best_grid(size_t n, const void *x, size_t *head) {
  size_t h = ((16 - ((uintptr_t)x & 15)) & 15) / 4;
  if (h > n) h = n;
  const size_t n4 = (n - h) / 4, per_block = (size_t)REDUCE_BLOCK * REDUCE_BEST_UNROLL;
  size_t g = (n4 + per_block - 1) / per_block;
  if (g > REDUCE_BEST_MAX_BLOCKS) g = REDUCE_BEST_MAX_BLOCKS;
  if (g < 1) g = 1;
  if (head) *head = h;
  return (unsigned)g;
}

/* Longest chain of float additions from any x[i] to the result for variant at n
 * elements (reduce.c): every rounding is at most 2^-24 of a partial sum no larger than
 * sum |x|, so |out - exact| <= depth * 2^-24 * sum |x| to first order. Cannot fail. */
double reduce_error_depth(int variant, size_t n);

/* ---- private to kernels/reduce/: the CPU stand-ins (reduce_cpu.c) ----
 * Each repeats its kernel's additions in its order (the same bits as the GPU's):
 * naive: a loop in index order (the atomics' order is the GPU's one freedom).
 * shared: blocks of 256, each summed by the kernel's tree (sequential addressing),
 * block sums added in block order. warp: the same blocks summed as the kernel's
 * shuffles do (a butterfly per warp, then one over the 8 warp sums). best: the
 * kernel's grid-stride float4 accumulators (a vectorizable loop over the threads of
 * a block), its block shuffles and the last block's fixed sum of the partials. */
exp_cpu_stand_in cpu_reduce_naive, cpu_reduce_shared, cpu_reduce_warp, cpu_reduce_best;

#ifdef __cplusplus
}
#endif
#endif
