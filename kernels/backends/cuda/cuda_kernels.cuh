/* The lecture's kernels and their launchers. A launcher picks the kernel and launch
 * shape for one variant (a cuda_plan), launches it on the caller's stream and returns
 * cudaGetLastError(); it never synchronizes or touches the default stream, and
 * allocates only stream-ordered scratch (gemm tf32's transposed B: cudaMallocAsync and
 * cudaFreeAsync on the same stream, so it also works inside a graph capture).
 * The plans also feed the kernel info a run reports, so the two cannot disagree. */
#ifndef GPULAB_CUDA_KERNELS_CUH
#define GPULAB_CUDA_KERNELS_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>
#include "kernels/core/experiment.h"

#define STENCIL_BLOCK 256   /* threads and outputs per stencil block (the lecture's B) */
#define SYNTHESIZE_BLOCK 256
#define GEMM_TILE 16        /* the lecture's T = TK */
#define TRANSPOSE_TILE 32

/* One kernel of one variant at one size: what runs and how it is launched. */
struct cuda_plan {
  const void *func;         /* the __global__ function (for cudaFuncGetAttributes) */
  const char *name;         /* e.g. "transpose_tiled_kernel<33>" */
  const char *description;  /* thread-to-data mapping, one line */
  dim3 grid, block;
  size_t dyn_smem_bytes;
};

/* Plans a variant of an experiment. Returns 0, or -1 with why filled when the size
 * exceeds a launch limit (grid.y above 65535, too much shared memory) or the variant
 * has no kernel here (gemm cublas). Sizes of 0 give an empty grid: the launcher then
 * launches nothing and succeeds. Cannot fail otherwise. */
int transpose_plan(int variant, int m, int n, struct cuda_plan *plan, char *why,
                   size_t why_len);
int gemm_plan(int variant, int m, int n, int k, struct cuda_plan *plan, char *why,
              size_t why_len);
int stencil_plan(int variant, int n, int radius, struct cuda_plan *plan, char *why,
                 size_t why_len);
int synthesize_plan(int n, struct cuda_plan *plan, char *why, size_t why_len);

/* Launchers. d_* are device pointers the caller owns; outputs never alias inputs.
 * Return cudaSuccess, the launch's error, or cudaErrorInvalidConfiguration when the
 * plan fails, cudaErrorInvalidValue when s is a default stream. */
cudaError_t transpose_launch(int variant, const float *d_a, float *d_b, int m, int n,
                             cudaStream_t s);
cudaError_t gemm_launch(int variant, const float *d_a, const float *d_b, float *d_c, int m,
                        int n, int k, cudaStream_t s);
cudaError_t stencil_launch(int variant, const float *d_x, float *d_y, int n, int radius,
                           cudaStream_t s);
cudaError_t synthesize_launch(const float *d_x, float *d_y, int n, int terms,
                              cudaStream_t s);

/* d[i] = gen_uniform(seed, stream, i) * scale for i < n: reference_fill_scaled's
 * numbers, bit for bit. */
cudaError_t gen_launch(float *d, size_t n, uint64_t seed, uint32_t stream, float scale,
                       cudaStream_t s);

/* Fills d[0..n) with NaN (all bits set), so a variant that writes nothing fails its
 * check instead of passing on an earlier variant's output. */
cudaError_t poison_launch(float *d, size_t n, cudaStream_t s);

/* Internal to the CUDA side (the best kernels plan and launch through these):
 * cuda_plan_set fills func, name, description and a 1x1x1 launch without shared
 * memory; cuda_plan_grid_ok returns -1 with why when grid.y or grid.z exceeds 65535;
 * cuda_plan_launch launches plan with args on s (an empty grid launches nothing) and
 * returns the launch's error, cudaErrorInvalidValue for a default stream. */
void cuda_plan_set(struct cuda_plan *plan, const void *func, const char *name,
                   const char *description);
int cuda_plan_grid_ok(const struct cuda_plan *plan, char *why, size_t why_len);
cudaError_t cuda_plan_launch(const struct cuda_plan *plan, void **args, cudaStream_t s);

/* The `best` variants (each experiment folder's *_best.cu and gemm_tf32.cu), reached through the plan and launch functions
 * above with TRANSPOSE_BEST, GEMM_BEST, GEMM_TF32 and STENCIL_BEST. They need 16-byte
 * aligned pointers for their vector paths (every device allocation is); a pointer or
 * a row length that is not falls back to 4-byte accesses (transpose, stencil: the same
 * kernel; gemm best: its guarded kernel; tf32: the mma.sync kernel). A plan describes
 * the kernel its sizes get, assuming aligned pointers. */
int transpose_best_plan(int m, int n, struct cuda_plan *plan, char *why, size_t why_len);
int gemm_best_plan(int m, int n, int k, struct cuda_plan *plan, char *why, size_t why_len);
int gemm_tf32_plan(int m, int n, int k, struct cuda_plan *plan, char *why, size_t why_len);
int stencil_best_plan(int n, int radius, struct cuda_plan *plan, char *why, size_t why_len);
cudaError_t transpose_best_launch(const float *d_a, float *d_b, int m, int n, cudaStream_t s);
cudaError_t gemm_best_launch(const float *d_a, const float *d_b, float *d_c, int m, int n,
                             int k, cudaStream_t s);
cudaError_t gemm_tf32_launch(const float *d_a, const float *d_b, float *d_c, int m, int n,
                             int k, cudaStream_t s);
cudaError_t stencil_best_launch(const float *d_x, float *d_y, int n, int radius,
                                cudaStream_t s);

/* Fills info from plan and the kernel's attributes (registers, static shared and
 * local bytes per thread, from cudaFuncGetAttributes). Cannot fail. */
void cuda_kernel_info_fill(const struct cuda_plan *plan, const struct cudaFuncAttributes *attr,
                           struct exp_kernel_info *info);

/* Recovery tests only (--allow-fault-injection): a kernel that traps, which leaves
 * the context with a sticky error, as a real fault would. */
cudaError_t trap_launch(cudaStream_t stream);

#endif
