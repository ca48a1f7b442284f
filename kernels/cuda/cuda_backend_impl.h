/* Private to kernels/cuda/: the CUDA backend's state, shared by cuda_backend.cu
 * (open, lanes, buffers, fences, errors) and cuda_run.cu (running one job). */
#ifndef GPULAB_CUDA_BACKEND_IMPL_H
#define GPULAB_CUDA_BACKEND_IMPL_H

#include <cuda_runtime.h>
#include <pthread.h>
#include <stddef.h>
#include <atomic>

#include "kernels/backend_impl.h"
#include "kernels/cuda/cublas_loader.h"

#define ATTR_CACHE_MAX 32

/* One lane: everything one job at a time uses, created at open or on first need and
 * kept for the next job. Only the lane's job thread touches it. */
struct lane {
  cudaStream_t stream;   /* non-blocking; every job's work on this lane is ordered here */
  cudaEvent_t start, stop; /* around one timed batch */
  cudaStream_t aux[EXP_MAX_STREAMS]; /* pipeline streams, created on first need */
  int n_aux;
  cudaEvent_t fork;                   /* recorded on stream, waited on by aux streams */
  cudaEvent_t join[EXP_MAX_STREAMS];  /* recorded on aux[i], waited on by stream */
  cublasHandle_t cublas; /* created on first gemm cublas run, bound to stream */
  void *pin;             /* pinned host cache, grow-only */
  size_t pin_bytes;
  void *host;            /* pageable host buffer for the checks' copies, grow-only */
  size_t host_bytes;
};

struct cuda_backend {
  int device;
  cudaDeviceProp prop;
  int sm_clock_khz, mem_clock_khz;
  uint64_t mem_free_at_open, mem_limit;
  cudaMemPool_t pool; /* the device's default pool: every allocation comes from it */
  std::atomic<bool> healthy;
  pthread_mutex_t mu; /* guards sick and the attribute cache */
  char sick[256];     /* the error that made the device unhealthy */
  struct {
    const void *func;
    cudaFuncAttributes attr;
  } attrs[ATTR_CACHE_MAX];
  int n_attrs;
  /* Buffer uploads, downloads and frees come from any thread (HTTP threads); they
   * share one non-blocking stream, one caller at a time. */
  pthread_mutex_t util_mu;
  cudaStream_t util;
  bool peer[64]; /* peer[d]: this device reads device d's memory directly */
  int n_lanes;
  struct lane *lanes;
};

/* A job's done fence: an event without timing, recorded on the job's lane stream. */
struct backend_fence {
  cudaEvent_t event;
};

/* Classifies failed CUDA call `call` on stream: writes "name: error: text" to err and
 * returns BACKEND_ENOMEM for out of memory (error cleared, backend fine),
 * BACKEND_EDEVICE for an error that sticks (it persists on the next
 * cudaGetLastError or shows on stream; the backend turns unhealthy), else
 * BACKEND_EINVAL. stream must not be capturing. */
int cuda_classify(struct cuda_backend *be, cudaStream_t stream, cudaError_t e,
                  const char *call, char *err, size_t err_len);

/* True (with the reason in err) once the device is unhealthy. */
bool cuda_unhealthy(struct cuda_backend *be, char *err, size_t err_len);

/* count floats (at least one) from the device's pool, ordered on stream; on out of
 * memory trims the pool once and retries. Returns 0 or a classified error. */
int cuda_pool_alloc(struct cuda_backend *be, cudaStream_t stream, uint64_t count,
                    float **out, char *err, size_t err_len);

/* cudaFuncGetAttributes of func, cached backend-wide. Returns 0 or a classified
 * error (classified on stream). */
int cuda_func_attrs(struct cuda_backend *be, cudaStream_t stream, const void *func,
                    cudaFuncAttributes *attr, char *err, size_t err_len);

/* A lane's pinned host cache, grown to at least bytes (contents not kept; no queued
 * work of the lane may use it), and its pageable host buffer, grown to at least
 * count floats. Return 0 or a classified error / BACKEND_ENOMEM. */
int cuda_lane_pinned(struct cuda_backend *be, struct lane *l, size_t bytes, void **out,
                     char *err, size_t err_len);
int cuda_lane_host(struct lane *l, size_t count, float **out, char *err, size_t err_len);
/* Creates the lane's first n pipeline streams and their join events on first need. */
int cuda_lane_aux(struct cuda_backend *be, struct lane *l, int n, char *err, size_t err_len);

/* Checks job's spec (ranges this backend can run) and its inputs (a buffer given
 * for a slot holds exactly the slot's shape; a slot without one is a seed).
 * Returns 0 or BACKEND_EINVAL with the reason in err. */
int cuda_validate(const struct backend_job *job, char *err, size_t err_len);

/* ops->run (cuda_run.cu). */
int cuda_run(struct backend *b, int lane, struct backend_job *job,
             const struct backend_hooks *hooks, struct exp_result *result, char *err,
             size_t err_len);

#endif
