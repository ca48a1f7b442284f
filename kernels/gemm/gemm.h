/* The gemm experiment (the lecture's GEMM tiling): C[m,n] = A[m,k] B[k,n], row-major,
 * FP32. Its descriptor and FP64 reference (gemm.c), CPU stand-ins (gemm_cpu.c), lecture
 * kernels and the cuBLAS call (gemm.cu), FP32 best (gemm_best.cu) and TF32 tensor-core
 * kernels (gemm_tf32.cu). */
#ifndef GPULAB_GEMM_H
#define GPULAB_GEMM_H

#include "kernels/core/experiment.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Params (exp_spec.p[]) and variants, in the descriptor's order: the lecture's
 * (naive, tiled, cublas), then best, tf32 and cublas_tf32 (cuBLAS in TF32, tf32's
 * reference), appended so that the numbering stays. */
enum gemm_param { GEMM_M, GEMM_N, GEMM_K };
enum gemm_variant { GEMM_NAIVE, GEMM_TILED, GEMM_CUBLAS, GEMM_BEST, GEMM_TF32, GEMM_CUBLAS_TF32 };
#define GEMM_MAX_DIM (1 << 20) /* m, n and k a request may give */

/* Above this many multiply-adds, a check compares a sample of whole rows
 * (GEMM_REF_SAMPLE_ROWS of them, first and last included) in FP64. */
#define GEMM_REF_FULL_MAX_FMAS (1ull << 27)
#define GEMM_REF_SAMPLE_ROWS 64

/* ---- private to kernels/gemm/: the CPU stand-ins (gemm_cpu.c) ---- */

/* Float accumulation with fmaf in k order.
 * naive: i-j-k loop, one dot product per output (gemm_naive).
 * tiled: 16x16 output tiles, K in 16-wide steps with 16x16 accumulators, like
 * gemm_tiled; the GPU's zero-padded tails add nothing, so the loop just stops at the
 * edges. Both give the same bits, since each output sums k in order. */
exp_cpu_stand_in cpu_gemm_naive, cpu_gemm_tiled;

#ifdef __cplusplus
}
#endif
#endif
