/* cuBLAS loaded at run time (dlopen), so gpulabd starts wherever a CUDA driver is,
 * with or without the cuBLAS library; only the gemm "cublas" variant needs it.
 * Uses cuBLAS's header for its types only; nothing links against libcublas. */
#ifndef GPULAB_CUBLAS_LOADER_H
#define GPULAB_CUBLAS_LOADER_H

#include <cublas_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The few cuBLAS entry points gpulab uses. */
struct cublas_fns {
  cublasStatus_t (*create)(cublasHandle_t *handle); /* cublasCreate_v2 */
  cublasStatus_t (*destroy)(cublasHandle_t handle); /* cublasDestroy_v2 */
  cublasStatus_t (*set_stream)(cublasHandle_t handle, cudaStream_t stream);
  cublasStatus_t (*set_math_mode)(cublasHandle_t handle, cublasMath_t mode);
  cublasStatus_t (*sgemm)(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                          int m, int n, int k, const float *alpha, const float *a, int lda,
                          const float *b, int ldb, const float *beta, float *c, int ldc);
};

/* Loads libcublas.so.13 (else libcublas.so, else CUDA's default install path) on the
 * first call and returns its functions, valid for the life of the process. Returns
 * NULL when loading failed; *why (if why is not NULL) then points to a static
 * message with dlerror's reasons. Thread-safe; later calls return the same answer. */
const struct cublas_fns *cublas_loader_get(const char **why);

/* Creates a handle bound to stream with CUBLAS_DEFAULT_MATH (FP32, no TF32).
 * Returns CUBLAS_STATUS_SUCCESS or the failing call's status; *handle is NULL then.
 * The current CUDA device must be the one the handle is for. */
cublasStatus_t cublas_loader_handle_new(const struct cublas_fns *f, cudaStream_t stream,
                                        cublasHandle_t *handle);

/* Row-major C[m,n] = A[m,k] B[k,n] on the handle's stream (no synchronization), via
 * column-major C^T = B^T A^T: sgemm(N, N, n, m, k, 1, B, n, A, k, 0, C, n). */
cublasStatus_t cublas_loader_sgemm_rowmajor(const struct cublas_fns *f, cublasHandle_t handle,
                                            int m, int n, int k, const float *d_a, const float *d_b,
                                            float *d_c);

/* cuBLAS's name for a status, e.g. "CUBLAS_STATUS_ALLOC_FAILED". Cannot fail. */
const char *cublas_loader_status_name(cublasStatus_t status);

#ifdef __cplusplus
}
#endif
#endif
