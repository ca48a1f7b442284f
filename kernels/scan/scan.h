/* The scan experiment (the next lecture's second: a prefix position per thread):
 * y[i] = x[0] + ... + x[i] in float, the inclusive prefix sum. Its descriptor, FP64
 * reference and tolerance rule (scan.c), CPU stand-ins (scan_cpu.c), kernels and
 * launcher (scan.cuh, checked and timed beside CUB on the H200 before they moved here)
 * and CUDA side (scan.cu). */
#ifndef GPULAB_SCAN_H
#define GPULAB_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/core/experiment.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Params (exp_spec.p[]) and variants, in the descriptor's order. */
enum scan_param { SCAN_N };
enum scan_variant { SCAN_NAIVE, SCAN_SHARED, SCAN_BEST, SCAN_CUB, SCAN_VARIANTS };
/* Not a variant: the rule users' kernels are checked with (exp_user.check_variant),
 * kernels/core/sum_rule.h's at y[i]: random on generated inputs, any order on given
 * ones. */
#define SCAN_ANY_ORDER SCAN_VARIANTS
/* n a request may give. The tolerance of y[i] grows with i (a float prefix is a chain
 * through every tile before it: scan_error_depth), to 2^-4.6 of sum |x[0..i]| for cub
 * and 2^-5.6 for best at 2^28; past that a check of the late elements says little.
 * x, the 4 runs' outputs and the job's are 6 GiB there. */
#define SCAN_MAX_N (1 << 28)

#define SCAN_TILE 1024             /* naive / shared: elements per block and level */
#define SCAN_MAX_LEVELS 8          /* 1024^7 > 2^64 */
#define SCAN_ADD_BLOCK 256         /* the second pass's threads per block */
#define SCAN_BEST_TILE 4096        /* best: 32 segments of 32 float4 */
#define SCAN_BEST_BLOCK 128        /* best: threads a tile (8 float4 each) */
#define SCAN_BEST_SCALAR_BLOCK 256 /* best, unaligned x or y: 4-byte accesses */

/* naive's and shared's levels: len[0] = n, len[l+1] = ceil(len[l] / 1024) while len[l]
 * > 1024; level l >= 1 lives in the temp storage at byte off[l], 256-byte aligned;
 * bytes in all. */
struct scan_levels {
  int count;
  size_t len[SCAN_MAX_LEVELS], off[SCAN_MAX_LEVELS], bytes;
};

static inline void scan_levels_of(size_t n, struct scan_levels *L) {
  L->count = 1;
  L->len[0] = n;
  L->off[0] = 0;
  L->bytes = 0;
  while (L->len[L->count - 1] > SCAN_TILE && L->count < SCAN_MAX_LEVELS) {
    const int l = L->count++;
    L->len[l] = (L->len[l - 1] + SCAN_TILE - 1) / SCAN_TILE;
    L->off[l] = L->bytes;
    L->bytes += (L->len[l] * sizeof(float) + 255) & ~(size_t)255;
  }
}

static inline size_t scan_best_tiles(size_t n) { return (n + SCAN_BEST_TILE - 1) / SCAN_BEST_TILE; }

/* Longest chain of float additions from any x[k], k <= i, to y[i] for variant at n
 * elements (scan.c): each rounding is at most 2^-24 of a partial sum no larger than
 * sum_{k<=i} |x_k|, so |y_i - exact| <= depth * 2^-24 * sum_{k<=i} |x_k| to first
 * order. Cannot fail. */
double scan_error_depth(int variant, size_t n, size_t i);

/* ---- private to kernels/scan/: the CPU stand-ins (scan_cpu.c) ----
 * Each repeats its kernels' additions in their order (the same bits as the GPU's):
 * naive: Hillis-Steele per tile of 1024 (10 double-buffered steps), shared: Blelloch's
 * up- and down-sweep per tile, both over naive's and shared's levels of tile totals
 * (in the scratch: scan_levels.bytes) and their add pass. best: per tile of 4096 the
 * kernel's float4 scans, warp and segment Kogge-Stone steps, and the inclusive prefix
 * of the tile before (which the look-back finds at once when every tile before has
 * published it). */
exp_cpu_stand_in cpu_scan_naive, cpu_scan_shared, cpu_scan_best;

#ifdef __cplusplus
}
#endif
#endif
