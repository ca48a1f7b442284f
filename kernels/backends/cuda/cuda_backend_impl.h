/* Private to kernels/backends/cuda/: the CUDA backend's state, shared by cuda_backend.cu
 * (open, lanes, buffers, fences, errors), cuda_measure.cu (ceilings) and the job runner
 * (cuda_job.h). */
#ifndef GPULAB_CUDA_BACKEND_IMPL_H
#define GPULAB_CUDA_BACKEND_IMPL_H

#include <cuda_runtime.h>
#include <pthread.h>
#include <stddef.h>
#include <atomic>

#include "kernels/backends/backend_impl.h"
#include "kernels/backends/cuda/cublas_loader.h"
#include "kernels/backends/cuda/cuda_l2flush.h"
#include "kernels/backends/cuda/nvml_loader.h"
#include "kernels/core/reference_cache.h"

#define ATTR_CACHE_MAX 32
#define LANE_MAX_AUX 32 /* streams a lane's job may fork onto (the pipeline's) */

/* A generated input the lane keeps for its next jobs (cuda_run.cu, job_input_setup):
 * element i of an input is gen_uniform(seed, stream, i) * scale whatever its count, so
 * a job asking for at most count elements of the same (seed, stream, scale) reads
 * these instead of generating them (a tiny job's launch and allocation fewer). Only
 * inputs of up to LANE_GEN_MAX_FLOATS are kept: the device memory stays small. */
struct lane_gen {
  float *data; /* NULL: empty */
  size_t count;
  uint64_t seed;
  uint32_t stream;
  float scale;
};
#define LANE_GEN_SLOTS 4
#define LANE_GEN_MAX_FLOATS ((size_t)256 << 10) /* 1 MiB */

/* One lane: everything one job at a time uses, created at open or on first need and
 * kept for the next job. Only the lane's job thread touches it. */
struct lane {
  cudaStream_t stream;   /* non-blocking; every job's work on this lane is ordered here */
  cudaEvent_t start, stop; /* around one timed batch */
  cudaStream_t aux[LANE_MAX_AUX]; /* pipeline streams, created on first need */
  int n_aux;
  cudaEvent_t fork;                   /* recorded on stream, waited on by aux streams */
  cudaEvent_t join[LANE_MAX_AUX];  /* recorded on aux[i], waited on by stream */
  cublasHandle_t cublas; /* created on first gemm cublas run, bound to stream */
  void *pin;             /* pinned host cache, grow-only */
  size_t pin_bytes;
  void *host;            /* host staging for the checks' copies, grow-only: pinned */
  size_t host_bytes;     /* (cudaMallocHost) up to LANE_PINNED_STAGING_MAX, else */
  bool host_pinned;      /* pageable; reused by every job of the lane */
  struct lane_gen gen[LANE_GEN_SLOTS]; /* generated inputs kept, replaced round-robin */
  int gen_next;
};

/* The largest checks' staging a lane pins (larger: pageable, not to pin GiBs). */
#define LANE_PINNED_STAGING_MAX ((size_t)64 << 20)

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
  bool peer[64]; /* peer[d]: this device reads device d's memory directly */
  struct reference_cache *refs; /* the references of repeated jobs (reference_cache.h) */
  int n_lanes;
  struct lane *lanes;
  /* Written once by cuda_measure_ceilings (under mu), before any job runs. */
  struct exp_ceilings ceilings;
  char ceilings_method[384];
  /* NVML: the device's handle (NULL without NVML: nvml_why says why) and the last
   * reading, reused while younger than NVML_MAX_AGE_S (under nvml_mu). */
  void *nvml;
  char nvml_why[128];
  pthread_mutex_t nvml_mu;
  double nvml_at;
  bool nvml_ok;
  struct nvml_reading nvml_last;
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

/* Theoretical active blocks per SM of func launched with `threads` threads per
 * block and dyn_smem bytes of dynamic shared memory
 * (cudaOccupancyMaxActiveBlocksPerMultiprocessor), cached backend-wide. Raises the
 * function's dynamic shared memory limit to dyn_smem first when above 48 KiB, as its
 * launcher does. Returns 0 or a classified error. */
int cuda_func_occupancy(struct cuda_backend *be, cudaStream_t stream, const void *func,
                        int threads, size_t dyn_smem, int *blocks, char *err, size_t err_len);

/* A lane's pinned host cache, grown to at least bytes (contents not kept; no queued
 * work of the lane may use it), and its pageable host buffer, grown to at least
 * count floats. Return 0 or a classified error / -ENOMEM. */
int cuda_lane_pinned(struct cuda_backend *be, struct lane *l, size_t bytes, void **out,
                     char *err, size_t err_len);
int cuda_lane_host(struct lane *l, size_t count, float **out, char *err, size_t err_len);
/* Creates the lane's first n pipeline streams and their join events on first need. */
int cuda_lane_aux(struct cuda_backend *be, struct lane *l, int n, char *err, size_t err_len);

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
