/* Measurement helpers of the CUDA backend: the device's ceilings, measured once at
 * start-up on streams of their own (a device-to-device copy, cuBLAS SGEMM with and
 * without TF32, pinned copies each way and both at once), and the limit at each size
 * (the copy of every power of two of bytes, in each timing mode a job uses). (The L2 flush that `cold`
 * runs put before every timed launch is cuda_l2flush.cu's.) Each ceiling is the median of several
 * event-timed samples after warm-ups, on random inputs (never zeros). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backends/cuda/cuda_backend_impl.h"
#include "kernels/backends/cuda/cuda_check.h"
#include "kernels/backends/cuda/cuda_exp.h"
#include "kernels/core/gen.h"
#include "kernels/core/stats.h"

/* ---- kernels ---- */

/* dst = src, 16 bytes per access: thread t of a grid-stride loop moves float4 t,
 * t + stride, ... four at a time (four loads in flight before the stores), coalesced
 * across the warp. The grid fills every SM (a few blocks each). */
__global__ void ceiling_copy_kernel(const float4 *__restrict__ src, float4 *__restrict__ dst,
                                    size_t n4) {
  pdl_wait(); /* a no-op but where the limits launch it as a PDL dependant */
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n4; i += 4 * stride) {
    float4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n4; i += stride) dst[i] = src[i];
}

/* ---- timing ---- */

#define SAMPLES 7

/* One measurement's streams and events. */
struct bench {
  cudaStream_t s[2];
  cudaEvent_t start, stop, fork, join;
};

/* Median over SAMPLES of the ms per call of issue(), reps calls between two events
 * on b->s[0], after warm untimed calls. issue returns a CUDA error (cuBLAS's maps to
 * cudaErrorUnknown). */
template <class F>
static cudaError_t time_median(struct bench *b, int warm, int reps, F issue, double *ms) {
  double samples[SAMPLES];
  cudaError_t e = cudaSuccess;
  for (int w = 0; w < warm && e == cudaSuccess; w++) e = issue();
  for (int k = 0; k < SAMPLES && e == cudaSuccess; k++) {
    e = cudaEventRecord(b->start, b->s[0]);
    for (int r = 0; r < reps && e == cudaSuccess; r++) e = issue();
    if (e == cudaSuccess) e = cudaEventRecord(b->stop, b->s[0]);
    if (e == cudaSuccess) e = cudaEventSynchronize(b->stop);
    float elapsed = 0;
    if (e == cudaSuccess) e = cudaEventElapsedTime(&elapsed, b->start, b->stop);
    samples[k] = (double)elapsed / reps;
  }
  struct stats_summary st;
  stats_summarize(samples, SAMPLES, &st);
  *ms = st.median;
  return e;
}

/* GB/s of bytes in ms, or 0. */
static double gbps(double bytes, double ms) { return ms > 0 ? bytes / ms / 1e6 : 0; }

/* Mean ms of one call when each of reps calls is alone between two events of its own
 * (pairs: 2 * reps events, created), after before() (untimed; may do nothing); median
 * over SAMPLES after warm rounds. */
template <class B, class F>
static cudaError_t time_alone_median(struct bench *b, cudaEvent_t *pairs, int warm, int reps,
                                     B before, F issue, double *ms) {
  double samples[SAMPLES];
  cudaError_t e = cudaSuccess;
  for (int w = 0; w < warm && e == cudaSuccess; w++) {
    e = before();
    if (e == cudaSuccess) e = issue();
  }
  for (int k = 0; k < SAMPLES && e == cudaSuccess; k++) {
    for (int r = 0; r < reps && e == cudaSuccess; r++) {
      e = before();
      if (e == cudaSuccess) e = cudaEventRecord(pairs[2 * r], b->s[0]);
      if (e == cudaSuccess) e = issue();
      if (e == cudaSuccess) e = cudaEventRecord(pairs[2 * r + 1], b->s[0]);
    }
    if (e == cudaSuccess) e = cudaEventSynchronize(pairs[2 * reps - 1]);
    double sum = 0;
    for (int r = 0; r < reps && e == cudaSuccess; r++) {
      float elapsed = 0;
      e = cudaEventElapsedTime(&elapsed, pairs[2 * r], pairs[2 * r + 1]);
      sum += elapsed;
    }
    samples[k] = sum / reps;
  }
  struct stats_summary st;
  stats_summarize(samples, SAMPLES, &st);
  *ms = st.median;
  return e;
}

/* ---- the ceilings ---- */

/* Buffers of one measurement, freed by buffers_free. */
struct buffers {
  float *d_src, *d_dst, *d_a, *d_b, *d_c;
  float *pin_up, *pin_down;
};

static void buffers_free(struct buffers *m) {
  float *dev[] = {m->d_src, m->d_dst, m->d_a, m->d_b, m->d_c};
  for (float *p : dev)
    if (p) (void)cudaFree(p);
  if (m->pin_up) (void)cudaFreeHost(m->pin_up);
  if (m->pin_down) (void)cudaFreeHost(m->pin_down);
  (void)cudaGetLastError();
}

/* Device-to-device copy of n floats: the faster of the copy kernel and
 * cudaMemcpyAsync (the driver's copy), bytes read + written. */
static cudaError_t measure_copy(struct cuda_backend *be, struct bench *b, struct buffers *m,
                                size_t n, double *kernel_gbps, double *memcpy_gbps) {
  const unsigned blocks = (unsigned)be->prop.multiProcessorCount * 4;
  double ms = 0;
  cudaError_t e = time_median(
      b, 10, 5,
      [&] {
        ceiling_copy_kernel<<<blocks, 256, 0, b->s[0]>>>((const float4 *)m->d_src,
                                                         (float4 *)m->d_dst, n / 4);
        return cudaGetLastError();
      },
      &ms);
  *kernel_gbps = gbps(2.0 * n * sizeof(float), ms);
  if (e == cudaSuccess)
    e = time_median(
        b, 3, 5,
        [&] {
          return cudaMemcpyAsync(m->d_dst, m->d_src, n * sizeof(float), cudaMemcpyDeviceToDevice,
                                 b->s[0]);
        },
        &ms);
  *memcpy_gbps = gbps(2.0 * n * sizeof(float), ms);
  return e;
}

/* cuBLAS SGEMM rate at dim^3 with math mode `mode`, GFLOP/s into *gflops (0 when
 * cuBLAS is missing or fails; note says why). */
static cudaError_t measure_gemm(struct bench *b, struct buffers *m, int dim, cublasMath_t mode,
                                double *gflops, char *note, size_t note_len) {
  const char *why = "";
  const struct cublas_fns *f = cublas_loader_get(&why);
  *gflops = 0;
  if (!f) {
    snprintf(note, note_len, "cuBLAS not loaded: %s", why);
    return cudaSuccess;
  }
  cublasHandle_t h = NULL;
  cublasStatus_t st = cublas_loader_handle_new(f, b->s[0], &h);
  if (st == CUBLAS_STATUS_SUCCESS) st = f->set_math_mode(h, mode);
  (void)cudaGetLastError();
  if (st != CUBLAS_STATUS_SUCCESS) {
    snprintf(note, note_len, "cuBLAS: %s", cublas_loader_status_name(st));
    if (h) f->destroy(h);
    return cudaSuccess;
  }
  double ms = 0;
  cudaError_t e = time_median(
      b, 3, 2,
      [&] {
        st = cublas_loader_sgemm_rowmajor(f, h, dim, dim, dim, m->d_a, m->d_b, m->d_c);
        return st == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown;
      },
      &ms);
  f->destroy(h);
  if (st != CUBLAS_STATUS_SUCCESS) {
    snprintf(note, note_len, "cublasSgemm: %s", cublas_loader_status_name(st));
    (void)cudaGetLastError();
    return cudaSuccess;
  }
  if (e == cudaSuccess && ms > 0) *gflops = 2.0 * dim * (double)dim * dim / ms / 1e6;
  return e;
}

/* Pinned copies of bytes: up, down, then both at once (s[1] forked from s[0]). */
static cudaError_t measure_pinned(struct bench *b, struct buffers *m, size_t bytes,
                                  struct exp_ceilings *c) {
  double ms = 0;
  cudaError_t e = time_median(
      b, 2, 2,
      [&] { return cudaMemcpyAsync(m->d_src, m->pin_up, bytes, cudaMemcpyHostToDevice, b->s[0]); },
      &ms);
  c->h2d_gbps = gbps((double)bytes, ms);
  if (e == cudaSuccess)
    e = time_median(
        b, 2, 2,
        [&] {
          return cudaMemcpyAsync(m->pin_down, m->d_dst, bytes, cudaMemcpyDeviceToHost, b->s[0]);
        },
        &ms);
  c->d2h_gbps = gbps((double)bytes, ms);
  if (e == cudaSuccess)
    e = time_median(
        b, 2, 2,
        [&] {
          cudaError_t x = cudaEventRecord(b->fork, b->s[0]);
          if (x == cudaSuccess) x = cudaStreamWaitEvent(b->s[1], b->fork, 0);
          if (x == cudaSuccess)
            x = cudaMemcpyAsync(m->d_src, m->pin_up, bytes, cudaMemcpyHostToDevice, b->s[0]);
          if (x == cudaSuccess)
            x = cudaMemcpyAsync(m->pin_down, m->d_dst, bytes, cudaMemcpyDeviceToHost, b->s[1]);
          if (x == cudaSuccess) x = cudaEventRecord(b->join, b->s[1]);
          if (x == cudaSuccess) x = cudaStreamWaitEvent(b->s[0], b->join, 0);
          return x;
        },
        &ms);
  c->bidir_gbps = gbps(2.0 * bytes, ms);
  return e;
}

#define LIMIT_ALONE_REPS 20 /* launches a sample, each alone */
#define LIMIT_COLD_REPS 5   /* launches a sample, each after an L2 flush */

/* The limit at each size (experiment.h: exp_limits): for every class of bytes moved that
 * the buffers hold (n floats each: classes up to 8 n bytes; a class's copy moves half
 * its bytes each way), the fastest of the copy kernel (launched plainly, and as the
 * PDL dependant of the copy before it, as best's kernels launch) and cudaMemcpyAsync
 * D2D, timed as
 * a job times its launches: a batch back to back between two events (100 launches under
 * 16 MiB, 20 from there, as the lecture's short and long batches), each alone between
 * events of its own, each alone after the L2 flush of cold runs. Classes past the
 * buffers take the largest one's: the rate has levelled off there (sizes_pick). */
static cudaError_t measure_limits(struct cuda_backend *be, struct bench *b, struct buffers *m,
                                  size_t n, struct exp_limits *out, const char **what) {
  const unsigned blocks = (unsigned)be->prop.multiProcessorCount * 4;
  const size_t flush_n = l2_flush_floats(be->prop.l2CacheSize);
  cudaEvent_t pairs[2 * LIMIT_ALONE_REPS] = {};
  float *flush = NULL;
  *what = "the limits' buffers";
  cudaError_t e = cudaMalloc(&flush, (flush_n + 4) * sizeof(float));
  if (e == cudaSuccess) e = cudaMemsetAsync(flush, 0, (flush_n + 4) * sizeof(float), b->s[0]);
  for (int i = 0; i < 2 * LIMIT_ALONE_REPS && e == cudaSuccess; i++) e = cudaEventCreate(&pairs[i]);
  int top = -1;
  for (int c = 0; c < EXP_LIMIT_CLASSES && e == cudaSuccess; c++) {
    const size_t bytes = (size_t)1 << (EXP_LIMIT_MIN_LOG2 + c), floats = bytes / 8;
    if (floats > n) break;
    top = c;
    *what = "the limits' copies";
    for (int method = 0; method < 3 && e == cudaSuccess; method++) {
      auto issue = [&] {
        if (method == 1)
          return cudaMemcpyAsync(m->d_dst, m->d_src, floats * sizeof(float),
                                 cudaMemcpyDeviceToDevice, b->s[0]);
        if (method == 2)
          return launch_pdl(ceiling_copy_kernel, dim3(blocks), dim3(256), 0, b->s[0],
                            (const float4 *)m->d_src, (float4 *)m->d_dst, floats / 4);
        ceiling_copy_kernel<<<blocks, 256, 0, b->s[0]>>>((const float4 *)m->d_src,
                                                         (float4 *)m->d_dst, floats / 4);
        return cudaGetLastError();
      };
      auto nothing = [] { return cudaSuccess; };
      auto flush_l2 = [&] {
        return l2_flush_launch(flush, flush_n, flush + flush_n, be->prop.multiProcessorCount,
                               b->s[0]);
      };
      double ms[EXP_LIMIT_MODES] = {};
      e = time_median(b, 3, bytes < ((size_t)16 << 20) ? 100 : 20, issue, &ms[EXP_LIMIT_BATCH]);
      if (e == cudaSuccess)
        e = time_alone_median(b, pairs, 3, LIMIT_ALONE_REPS, nothing, issue, &ms[EXP_LIMIT_ALONE]);
      if (e == cudaSuccess)
        e = time_alone_median(b, pairs, 1, LIMIT_COLD_REPS, flush_l2, issue, &ms[EXP_LIMIT_COLD]);
      for (int mode = 0; mode < EXP_LIMIT_MODES && e == cudaSuccess; mode++)
        if (gbps((double)bytes, ms[mode]) > out->gbps[mode][c])
          out->gbps[mode][c] = gbps((double)bytes, ms[mode]);
    }
  }
  for (int c = top + 1; top >= 0 && c < EXP_LIMIT_CLASSES; c++)
    for (int mode = 0; mode < EXP_LIMIT_MODES; mode++) out->gbps[mode][c] = out->gbps[mode][top];
  (void)cudaStreamSynchronize(b->s[0]);
  for (cudaEvent_t ev : pairs)
    if (ev) (void)cudaEventDestroy(ev);
  if (flush) (void)cudaFree(flush);
  return e;
}

/* How large each measurement is: copies of 2^28 floats (2 GiB moved, where the copy
 * rate has levelled off on an H200) when a quarter of free memory holds them, else
 * smaller; SGEMM at 4096^3 and TF32 at 8192^3 (sizes where cuBLAS has reached its
 * rate), halved while they do not fit; pinned copies of 64 MiB. */
struct sizes {
  size_t n, gemm_n, pin_bytes;
  int dim_sgemm, dim_tf32;
};

static void sizes_pick(size_t free_b, struct sizes *z) {
  z->n = (size_t)1 << 28;
  while (z->n > ((size_t)1 << 20) && 2 * z->n * sizeof(float) > free_b / 4) z->n /= 4;
  z->dim_tf32 = 8192;
  while (z->dim_tf32 > 1024 && 3.0 * z->dim_tf32 * z->dim_tf32 * sizeof(float) > free_b / 4)
    z->dim_tf32 /= 2;
  z->dim_sgemm = z->dim_tf32 < 4096 ? z->dim_tf32 : 4096;
  z->gemm_n = (size_t)z->dim_tf32 * z->dim_tf32;
  z->pin_bytes = z->n * sizeof(float) < ((size_t)64 << 20) ? z->n * sizeof(float)
                                                           : (size_t)64 << 20;
}

/* Streams, events and buffers (random inputs, pinned pages touched). */
static cudaError_t setup(struct bench *b, struct buffers *m, const struct sizes *z,
                         const char **what) {
  for (int i = 0; i < 2; i++)
    CUDA_TRY_WHAT(what, cudaStreamCreateWithFlags(&b->s[i], cudaStreamNonBlocking));
  CUDA_TRY_WHAT(what, cudaEventCreate(&b->start));
  CUDA_TRY_WHAT(what, cudaEventCreate(&b->stop));
  CUDA_TRY_WHAT(what, cudaEventCreateWithFlags(&b->fork, cudaEventDisableTiming));
  CUDA_TRY_WHAT(what, cudaEventCreateWithFlags(&b->join, cudaEventDisableTiming));
  CUDA_TRY_WHAT(what, cudaMalloc(&m->d_src, z->n * sizeof(float)));
  CUDA_TRY_WHAT(what, cudaMalloc(&m->d_dst, z->n * sizeof(float)));
  CUDA_TRY_WHAT(what, cudaMalloc(&m->d_a, z->gemm_n * sizeof(float)));
  CUDA_TRY_WHAT(what, cudaMalloc(&m->d_b, z->gemm_n * sizeof(float)));
  CUDA_TRY_WHAT(what, cudaMalloc(&m->d_c, z->gemm_n * sizeof(float)));
  CUDA_TRY_WHAT(what, cudaMallocHost(&m->pin_up, z->pin_bytes));
  CUDA_TRY_WHAT(what, cudaMallocHost(&m->pin_down, z->pin_bytes));
  memset(m->pin_up, 0x3F, z->pin_bytes); /* touched, so no page is mapped while timed */
  memset(m->pin_down, 0, z->pin_bytes);
  CUDA_TRY_WHAT(what, gen_launch(m->d_src, z->n, 1, GEN_X, 1.0f, b->s[0]));
  CUDA_TRY_WHAT(what, gen_launch(m->d_a, z->gemm_n, 1, GEN_A, 1.0f, b->s[0]));
  CUDA_TRY_WHAT(what, gen_launch(m->d_b, z->gemm_n, 1, GEN_B, 1.0f, b->s[0]));
  return cudaSuccess;
}

/* Every ceiling into c and the limits into lim; why gets the figures (and why a gemm
 * ceiling is missing). */
static cudaError_t measure_all(struct cuda_backend *be, struct bench *b, struct buffers *m,
                               const struct sizes *z, struct exp_ceilings *c,
                               struct exp_limits *lim, char *why, size_t why_len,
                               const char **what) {
  char note[2][96] = {"", ""};
  double copy_kernel = 0, copy_memcpy = 0;
  CUDA_TRY_WHAT(what, setup(b, m, z, what));
  CUDA_TRY_WHAT(what, measure_copy(be, b, m, z->n, &copy_kernel, &copy_memcpy));
  c->copy_gbps = copy_kernel > copy_memcpy ? copy_kernel : copy_memcpy;
  CUDA_TRY_WHAT(what, measure_limits(be, b, m, z->n, lim, what));
  CUDA_TRY_WHAT(what, measure_gemm(b, m, z->dim_sgemm, CUBLAS_DEFAULT_MATH, &c->sgemm_gflops,
                                   note[0], sizeof note[0]));
  CUDA_TRY_WHAT(what, measure_gemm(b, m, z->dim_tf32, CUBLAS_TF32_TENSOR_OP_MATH, &c->tf32_gflops,
                                   note[1], sizeof note[1]));
  CUDA_TRY_WHAT(what, measure_pinned(b, m, z->pin_bytes, c));
  snprintf(
      why, why_len,
      "copy %.0f GB/s (kernel %.0f, memcpy %.0f), sgemm %.0f GFLOP/s%s%s, tf32 %.0f GFLOP/s%s%s, "
      "h2d %.1f, d2h %.1f, bidir %.1f GB/s",
      c->copy_gbps, copy_kernel, copy_memcpy, c->sgemm_gflops, note[0][0] ? " " : "", note[0],
      c->tf32_gflops, note[1][0] ? " " : "", note[1], c->h2d_gbps, c->d2h_gbps, c->bidir_gbps);
  return cudaSuccess;
}

int cuda_measure_ceilings(struct backend *bk, char *why, size_t why_len) {
  struct cuda_backend *be = (struct cuda_backend *)bk->impl;
  struct bench b = {};
  struct buffers m = {};
  struct exp_ceilings c = {};
  struct exp_limits lim = {};
  struct sizes z = {};
  const char *what = "";
  size_t free_b = 0, total_b = 0;
  if (cuda_unhealthy(be, why, why_len)) return -EIO;
  cudaError_t e = cudaSetDevice(be->device);
  if (e == cudaSuccess) e = cudaMemGetInfo(&free_b, &total_b);
  if (e == cudaSuccess) {
    sizes_pick(free_b, &z);
    e = measure_all(be, &b, &m, &z, &c, &lim, why, why_len, &what);
  } else {
    what = "cudaMemGetInfo";
  }
  int rc = 0;
  if (e != cudaSuccess) { /* a sticky error makes the device unhealthy, as in a job */
    rc = cuda_classify(be, be->util, e, what, why, why_len);
  } else {
    pthread_mutex_lock(&be->mu);
    be->ceilings = c;
    be->limits = lim;
    snprintf(be->limits_method, sizeof be->limits_method,
             "copies of 2^%d to 2^%d bytes moved (read + written; larger classes take the "
             "largest's), the fastest of the copy kernel (launched plainly and as a PDL "
             "dependant) and cudaMemcpyAsync D2D, median of %d "
             "samples: batch (launches back to back), alone (each between its own events), cold "
             "(each after an L2 flush)",
             EXP_LIMIT_MIN_LOG2, EXP_LIMIT_MIN_LOG2 + exp_limit_class(8.0 * z.n), SAMPLES);
    snprintf(be->ceilings_method, sizeof be->ceilings_method,
             "median of %d event-timed samples after warm-ups, random inputs; copy: the faster "
             "of a float4 grid-stride kernel and cudaMemcpyAsync D2D, %zu floats, bytes read + "
             "written; sgemm: cuBLAS %d^3 FP32; tf32: cuBLAS %d^3 TF32 tensor ops; pinned: %zu MiB "
             "cudaMemcpyAsync, bidir both ways at once on two streams",
             SAMPLES, z.n, z.dim_sgemm, z.dim_tf32, z.pin_bytes >> 20);
    pthread_mutex_unlock(&be->mu);
  }
  for (int i = 0; i < 2; i++)
    if (b.s[i]) (void)cudaStreamSynchronize(b.s[i]);
  buffers_free(&m);
  cudaEvent_t evs[] = {b.start, b.stop, b.fork, b.join};
  for (cudaEvent_t ev : evs)
    if (ev) (void)cudaEventDestroy(ev);
  for (int i = 0; i < 2; i++)
    if (b.s[i]) (void)cudaStreamDestroy(b.s[i]);
  (void)cudaGetLastError();
  return rc;
}
