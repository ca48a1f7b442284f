/* The gemm's lecture kernels (seeds/000): naive and tiled (T = TK = 16), their plans
 * and launchers, the cuBLAS call of the cublas and cublas_tf32 variants, and the gemm's
 * CUDA descriptor, which also reaches best (gemm_best.cu) and tf32 (gemm_tf32.cu). Bodies
 * follow the lecture's code; built without fast-math. */
#include <stdio.h>

#include "kernels/gemm/gemm.cuh"

#define GEMM_TILE 16 /* the lecture's T = TK */

/* ---- gemm: C[M,N] = A[M,K] B[K,N], row-major ---- */

/* One thread per C[row][col], block 16x16, grid (ceil(N/16), ceil(M/16)); the thread
 * walks all of K with fmaf. A warp reads one A element (broadcast) and 16
 * consecutive B elements per k; neighbouring outputs re-read the same inputs. */
__global__ __launch_bounds__(256) void gemm_naive_kernel(const float *A, const float *B, float *C,
                                                         int M, int N, int K) {
  int row = blockIdx.y * GEMM_TILE + threadIdx.y;
  int col = blockIdx.x * GEMM_TILE + threadIdx.x;
  if (row < M && col < N) {
    float acc = 0;
    for (int k = 0; k < K; ++k) acc = fmaf(A[(size_t)row * K + k], B[(size_t)k * N + col], acc);
    C[(size_t)row * N + col] = acc;
  }
}

/* The lecture's gemm_tiled: block 16x16 owns a 16x16 tile of C, same grid as naive.
 * Per 16-wide slice of K each thread loads one A and one B element into shared
 * (zero outside the matrices, so tails in M, N and K need no special case), barrier,
 * 16 fmaf from shared, barrier before the slice is overwritten. Every input loaded
 * serves 16 outputs. Requires T == TK (one element of each per thread). */
__global__ __launch_bounds__(256) void gemm_tiled_kernel(const float *A, const float *B, float *C,
                                                         int M, int N, int K) {
  __shared__ float As[GEMM_TILE][GEMM_TILE], Bs[GEMM_TILE][GEMM_TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * GEMM_TILE + ty, col = blockIdx.x * GEMM_TILE + tx;
  float acc = 0;
  for (int base = 0; base < K; base += GEMM_TILE) {
    As[ty][tx] = (row < M && base + tx < K) ? A[(size_t)row * K + base + tx] : 0.0f;
    Bs[ty][tx] = (base + ty < K && col < N) ? B[(size_t)(base + ty) * N + col] : 0.0f;
    __syncthreads(); /* this slice is loaded */
    for (int k = 0; k < GEMM_TILE; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
    __syncthreads(); /* everyone is done with it */
  }
  if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

/* ---- plans and launchers ---- */

static int gemm_plan(int variant, int m, int n, int k, struct cuda_plan *p, char *why,
                     size_t why_len) {
  switch (variant) {
  case GEMM_BEST: return gemm_best_plan(m, n, k, p, why, why_len);
  case GEMM_TF32: return gemm_tf32_plan(m, n, k, p, why, why_len);
  case GEMM_NAIVE:
    cuda_plan_set(p, KFUNC(gemm_naive_kernel), "gemm_naive_kernel",
                  "thread per C element, 16x16 block; full K dot product from global memory");
    break;
  case GEMM_TILED:
    cuda_plan_set(p, KFUNC(gemm_tiled_kernel), "gemm_tiled_kernel",
                  "thread per C element, 16x16 block; 16x16 A and B tiles in shared per K step");
    break;
  default: snprintf(why, why_len, "gemm variant %d has no kernel of its own", variant); return -1;
  }
  (void)k;
  p->block = dim3(GEMM_TILE, GEMM_TILE);
  p->grid = dim3(ceil_div(n, GEMM_TILE), ceil_div(m, GEMM_TILE));
  p->dyn_smem_bytes = 0;
  return cuda_plan_grid_ok(p, why, why_len);
}

static cudaError_t gemm_launch(int variant, const float *d_a, const float *d_b, float *d_c, int m,
                               int n, int k, cudaStream_t s) {
  if (variant == GEMM_BEST) return gemm_best_launch(d_a, d_b, d_c, m, n, k, s);
  if (variant == GEMM_TF32) return gemm_tf32_launch(d_a, d_b, d_c, m, n, k, s);
  struct cuda_plan p;
  char why[128];
  if (gemm_plan(variant, m, n, k, &p, why, sizeof why) != 0) return cudaErrorInvalidConfiguration;
  void *args[] = {&d_a, &d_b, &d_c, &m, &n, &k};
  return cuda_plan_launch(&p, args, s);
}

/* ---- the CUDA descriptor ---- */

static int plan(const struct exp_spec *s, int variant, struct cuda_plan *p, char *why,
                size_t why_len) {
  if (variant == GEMM_CUBLAS) { /* no kernel of ours: the run's kernel info names the call */
    cuda_plan_set(p, NULL, "cublasSgemm (cuBLAS)",
                  "cuBLAS SGEMM, FP32, CUBLAS_DEFAULT_MATH (no TF32); row-major as C^T = B^T A^T");
    return 0;
  }
  if (variant == GEMM_CUBLAS_TF32) {
    cuda_plan_set(p, NULL, "cublasSgemm (cuBLAS, TF32)",
                  "cuBLAS SGEMM, CUBLAS_TF32_TENSOR_OP_MATH (TF32 tensor cores); row-major as "
                  "C^T = B^T A^T");
    return 0;
  }
  return gemm_plan(variant, s->p[GEMM_M], s->p[GEMM_N], s->p[GEMM_K], p, why, why_len);
}

static cudaError_t launch(const struct cuda_launch *a) {
  const int *p = a->spec->p;
  return gemm_launch(a->variant, a->d_in[0], a->d_in[1], a->d_out, p[GEMM_M], p[GEMM_N], p[GEMM_K],
                     a->stream);
}

/* The lane's one handle serves both cuBLAS variants, which a job interleaves: each call
 * sets its math mode first (a host-side setting of the handle, so it also holds in a
 * captured graph). */
static cublasStatus_t cublas(const struct cuda_launch *a) {
  const int *p = a->spec->p;
  cublasStatus_t st = a->cublas->set_math_mode(a->cublas_handle, a->variant == GEMM_CUBLAS_TF32
                                                                     ? CUBLAS_TF32_TENSOR_OP_MATH
                                                                     : CUBLAS_DEFAULT_MATH);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  return cublas_loader_sgemm_rowmajor(a->cublas, a->cublas_handle, p[GEMM_M], p[GEMM_N], p[GEMM_K],
                                      a->d_in[0], a->d_in[1], a->d_out);
}

extern const struct cuda_experiment cuda_exp_gemm = {plan, launch, cublas, NULL, NULL};
