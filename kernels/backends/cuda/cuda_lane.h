/* One lane of the CUDA backend: the streams, events and host staging that one job at a
 * time uses (cuda_backend.cu creates and grows them). The job runner's files and the
 * experiments that run their own way (cuda_job_ops.h: the pipeline's streams) read it. */
#ifndef GPULAB_CUDA_LANE_H
#define GPULAB_CUDA_LANE_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/backends/cuda/cublas_loader.h"

struct cuda_backend; /* private: cuda_backend_impl.h */

#define LANE_MAX_AUX 32 /* streams a lane's job may fork onto (the pipeline's) */
/* Launches a batch timed launch by launch keeps queued at once (cold, or beside users'
 * kernels): an event pair each, reused round-robin. */
#define LANE_ALONE_PAIRS 32

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
  cudaStream_t stream;     /* non-blocking; every job's work on this lane is ordered here */
  cudaEvent_t start, stop; /* around one timed batch */
  /* around launch i of a batch timed launch by launch: pair i % LANE_ALONE_PAIRS,
   * start 2k and stop 2k + 1 */
  cudaEvent_t alone[2 * LANE_ALONE_PAIRS];
  cudaStream_t aux[LANE_MAX_AUX]; /* pipeline streams, created on first need */
  int n_aux;
  cudaEvent_t fork;               /* recorded on stream, waited on by aux streams */
  cudaEvent_t join[LANE_MAX_AUX]; /* recorded on aux[i], waited on by stream */
  cublasHandle_t cublas;          /* created on first gemm cublas run, bound to stream */
  void *pin;                      /* pinned host cache, grow-only */
  size_t pin_bytes;
  void *host;                          /* host staging for the checks' copies, grow-only: pinned */
  size_t host_bytes;                   /* (cudaMallocHost) up to LANE_PINNED_STAGING_MAX, else */
  bool host_pinned;                    /* pageable; reused by every job of the lane */
  struct lane_gen gen[LANE_GEN_SLOTS]; /* generated inputs kept, replaced round-robin */
  int gen_next;
};

/* The largest checks' staging a lane pins (larger: pageable, not to pin GiBs). */
#define LANE_PINNED_STAGING_MAX ((size_t)64 << 20)

/* A lane's pinned host cache, grown to at least bytes (contents not kept; no queued
 * work of the lane may use it), and its pageable host buffer, grown to at least
 * count floats. Return 0 or a classified error / -ENOMEM. */
int cuda_lane_pinned(struct cuda_backend *be, struct lane *l, size_t bytes, void **out, char *err,
                     size_t err_len);
int cuda_lane_host(struct lane *l, size_t count, float **out, char *err, size_t err_len);
/* Creates the lane's first n pipeline streams and their join events on first need. */
int cuda_lane_aux(struct cuda_backend *be, struct lane *l, int n, char *err, size_t err_len);

#endif
