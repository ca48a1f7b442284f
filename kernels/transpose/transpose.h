/* The transpose experiment (the lecture's coalescing, shared-memory tiles, bank
 * conflicts and padding): B = A^T, A m x n row-major, B n x m. Its descriptor
 * (transpose.c), CPU stand-ins (transpose_cpu.c), lecture kernels (transpose.cu) and
 * best kernel (transpose_best.cu, declared in transpose.cuh). */
#ifndef GPULAB_TRANSPOSE_H
#define GPULAB_TRANSPOSE_H

#include "kernels/core/experiment.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Params (exp_spec.p[]) and variants, in the descriptor's order. The lecture's
 * variants, then `best`, appended so that the lecture's numbering stays. */
enum transpose_param { TRANSPOSE_M, TRANSPOSE_N };
enum transpose_variant {
  TRANSPOSE_NAIVE,
  TRANSPOSE_SHARED32,
  TRANSPOSE_PADDED33,
  TRANSPOSE_COPY,
  TRANSPOSE_BEST
};
#define TRANSPOSE_MAX_DIM (1 << 20) /* m and n a request may give */

/* ---- private to kernels/transpose/: the CPU stand-ins (transpose_cpu.c) ---- */

/* naive: one straight loop over A's rows, writing B by columns (the lecture's naive
 * kernel: coalesced reads, strided writes).
 * blocked: 32x32 cache-blocked loop, the CPU stand-in for shared32, padded33 and best
 * (a CPU has no shared-memory banks, so the +1 padding has no analogue).
 * copy: the bandwidth reference, B = A (memcpy). */
exp_cpu_stand_in cpu_transpose_naive, cpu_transpose_blocked, cpu_copy;

#ifdef __cplusplus
}
#endif

#endif
