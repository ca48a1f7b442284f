/* The CPU backend's "kernels": one plain C function per lecture kernel, single
 * threaded, computing the same result the CUDA kernel does. They never allocate;
 * buffers are borrowed from the caller and must not overlap. Private to kernels/. */
#ifndef GPULAB_CPU_KERNELS_H
#define GPULAB_CPU_KERNELS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Transpose B (n x m) = A^T, A m x n row-major.
 * naive: one straight loop over A's rows, writing B by columns (the lecture's
 * naive kernel: coalesced reads, strided writes).
 * blocked: 32x32 cache-blocked loop, the CPU stand-in for both shared32 and
 * padded33 (a CPU has no shared-memory banks, so the +1 padding has no analogue). */
void cpu_transpose_naive(const float *a, float *b, int m, int n);
void cpu_transpose_blocked(const float *a, float *b, int m, int n);

/* The bandwidth reference: b[0..n) = a[0..n) (memcpy). */
void cpu_copy(const float *a, float *b, size_t n);

/* C[m,n] = A[m,k] B[k,n], row-major, float accumulation with fmaf in k order.
 * naive: i-j-k loop, one dot product per output (gemm_naive).
 * tiled: 16x16 output tiles, K in 16-wide steps with 16x16 accumulators, like
 * gemm_tiled; the GPU's zero-padded tails add nothing, so the loop just stops at
 * the edges. Both give the same bits, since each output sums k in order. */
void cpu_gemm_naive(const float *a, const float *b, float *c, int m, int n, int k);
void cpu_gemm_tiled(const float *a, const float *b, float *c, int m, int n, int k);

/* 1-D stencil y[i] = sum_{j=i-r..i+r} x[j] / (float)(2r+1), x[j] = 0 outside [0,n).
 * naive: the direct 2r+1 sum per output (stencil_naive).
 * shared: stencil_shared's algorithm: per tile of CPU_STENCIL_TILE outputs copy
 * the tile plus r-wide halos (zero-padded) into tile[], then sum from there.
 * tile must hold CPU_STENCIL_TILE + 2r floats. */
#define CPU_STENCIL_TILE 256
void cpu_stencil_naive(const float *x, float *y, int n, int r);
void cpu_stencil_shared(const float *x, float *y, int n, int r, float *tile);

/* The stand-in for stencil best: per tile of stencil_best_tile(r) outputs (the CUDA
 * kernel's tiles), the first window summed directly, then slid one output at a time
 * (add x[i+r+1], subtract x[i-r]); the running sum is a double and restarts at every
 * tile, as the kernel's prefix sums do, so the same tolerance (reference.h) holds.
 * Requires 0 <= r <= STENCIL_BEST_MAX_RADIUS (stencil_best.h). */
void cpu_stencil_window(const float *x, float *y, int n, int r);

/* The pipeline's kernel (synthesize): y[i] = sum_{k=1..terms} sinf(k x[i]) / k in
 * float, the same operation order as the CUDA kernel. */
void cpu_synthesize(const float *x, float *y, int n, int terms);

#ifdef __cplusplus
}
#endif
#endif
