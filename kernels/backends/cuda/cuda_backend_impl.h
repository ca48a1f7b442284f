/* Private to kernels/backends/cuda/: the CUDA backend's state, shared by cuda_backend.cu
 * (open, lanes, buffers, fences, errors), cuda_measure.cu (ceilings) and the job runner
 * (cuda_job.h). Its lanes are cuda_lane.h. */
#ifndef GPULAB_CUDA_BACKEND_IMPL_H
#define GPULAB_CUDA_BACKEND_IMPL_H

#include <cuda_runtime.h>
#include <pthread.h>
#include <stddef.h>
#include <atomic>

#include "kernels/backends/backend_impl.h"
#include "kernels/backends/cuda/cublas_loader.h"
#include "kernels/backends/cuda/cuda_l2flush.h"
#include "kernels/backends/cuda/cuda_lane.h"
#include "kernels/backends/cuda/cuda_profiler.h"
#include "kernels/backends/cuda/nvml_loader.h"
#include "kernels/core/reference_cache.h"

#define ATTR_CACHE_MAX 32

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
  struct { /* cuda_func_occupancy's cache, guarded by mu */
    const void *func;
    int threads;
    size_t dyn_smem;
    int blocks;
  } occ[ATTR_CACHE_MAX];
  int n_occ;
  /* Buffer uploads, downloads and frees come from any thread (HTTP threads); they
   * share one non-blocking stream, one caller at a time. */
  pthread_mutex_t util_mu;
  cudaStream_t util;
  bool peer[64];                /* peer[d]: this device reads device d's memory directly */
  struct reference_cache *refs; /* the references of repeated jobs (reference_cache.h) */
  int n_lanes;
  struct lane *lanes;
  /* Written once by cuda_measure_ceilings (under mu), before any job runs. */
  struct exp_ceilings ceilings;
  char ceilings_method[384];
  struct exp_limits limits; /* the copy at each size, each timing mode */
  char limits_method[384];
  /* NVML: the device's handle (NULL without NVML: nvml_why says why) and the last
   * reading, reused while younger than NVML_MAX_AGE_S (under nvml_mu). */
  void *nvml;
  char nvml_why[128];
  pthread_mutex_t nvml_mu;
  double nvml_at;
  bool nvml_ok;
  struct nvml_reading nvml_last;
  /* CUPTI's range profiler for jobs with "profile" (cuda_profiler.h), opened with the
   * device; NULL: profiler_why says why, and such jobs are refused. */
  struct cuda_profiler *profiler;
  char profiler_why[512];
};

#define NVML_MAX_AGE_S 0.02

/* A job's done fence: an event without timing, recorded on the job's lane stream. */
struct backend_fence {
  cudaEvent_t event;
};

/* Classifies failed CUDA call `call` on stream: writes "name: error: text" to err and
 * returns -ENOMEM for out of memory (error cleared, backend fine),
 * -EIO for an error that sticks (it persists on the next
 * cudaGetLastError or shows on stream; the backend turns unhealthy), else
 * -EINVAL. stream must not be capturing. */
int cuda_classify(struct cuda_backend *be, cudaStream_t stream, cudaError_t e, const char *call,
                  char *err, size_t err_len);

/* True (with the reason in err) once the device is unhealthy. */
bool cuda_unhealthy(struct cuda_backend *be, char *err, size_t err_len);

/* count floats (at least one) from the device's pool, ordered on stream; on out of
 * memory trims the pool once and retries. Returns 0 or a classified error. */
int cuda_pool_alloc(struct cuda_backend *be, cudaStream_t stream, uint64_t count, float **out,
                    char *err, size_t err_len);

/* cudaFuncGetAttributes of func, cached backend-wide. Returns 0 or a classified
 * error (classified on stream). */
int cuda_func_attrs(struct cuda_backend *be, cudaStream_t stream, const void *func,
                    cudaFuncAttributes *attr, char *err, size_t err_len);

/* Theoretical active blocks per SM of func launched with `threads` threads per
 * block and dyn_smem bytes of dynamic shared memory
 * (cudaOccupancyMaxActiveBlocksPerMultiprocessor), cached backend-wide. Raises the
 * function's dynamic shared memory limit to dyn_smem first when above 48 KiB, as its
 * launcher does. Returns 0 or a classified error. */
int cuda_func_occupancy(struct cuda_backend *be, cudaStream_t stream, const void *func, int threads,
                        size_t dyn_smem, int *blocks, char *err, size_t err_len);

/* Checks job's spec (ranges this backend can run) and its inputs (a buffer given
 * for a slot holds exactly the slot's shape; a slot without one is a seed).
 * Returns 0 or -EINVAL with the reason in err. */
int cuda_validate(const struct backend_job *job, char *err, size_t err_len);

/* The device's clocks now through NVML, at most NVML_MAX_AGE_S old (so that many
 * short windows cost few NVML calls). Returns false without NVML. Any thread. */
bool cuda_clocks_read(struct cuda_backend *be, struct nvml_reading *out);

/* ops->measure_ceilings (cuda_measure.cu): fills be->ceilings. */
int cuda_measure_ceilings(struct backend *b, char *why, size_t why_len);

/* ops->run (cuda_run.cu). */
int cuda_run(struct backend *b, int lane, struct backend_job *job,
             const struct backend_hooks *hooks, struct exp_result *result, char *err,
             size_t err_len);

#endif
