/* The CUDA backend (backend_impl.h): one lane per engine worker thread, each with its
 * own non-blocking stream, timing events, pipeline streams, cuBLAS handle and host
 * buffers. A job generates its inputs on the GPU (gen.h, like the CPU reference does
 * on the host), times each variant with events around batches of launches, and
 * checks each output against reference.h. Nothing here synchronizes the device: it
 * waits only on its lane's own streams and events. */
#include <cuda_runtime.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <atomic>
#include <new>

#include "kernels/backend_impl.h"
#include "kernels/cuda/cublas_loader.h"
#include "kernels/cuda/cuda_kernels.cuh"
#include "kernels/gen.h"
#include "kernels/reference.h"

#define ATTR_CACHE_MAX 32

struct lane {
  cudaStream_t stream; /* non-blocking; every job's work on this lane goes here */
  cudaEvent_t start[EXP_MAX_BATCHES], stop[EXP_MAX_BATCHES];
  cudaStream_t aux[EXP_MAX_STREAMS]; /* pipeline streams, created on first need */
  int n_aux;
  cudaEvent_t aux_ready;  /* recorded on stream, waited on by aux streams */
  cublasHandle_t cublas;  /* created on first gemm cublas run, bound to stream */
  void *pin;              /* pinned host cache, grow-only */
  size_t pin_bytes;
  void *host;             /* pageable host buffer for outputs, grow-only */
  size_t host_bytes;
};

struct cuda_backend {
  int device;
  cudaDeviceProp prop;
  int sm_clock_khz, mem_clock_khz;
  uint64_t mem_free_at_open, mem_limit;
  cudaMemPool_t pool;
  std::atomic<bool> healthy;
  pthread_mutex_t mu; /* guards sick and the attribute cache */
  char sick[256];     /* the error that made the device unhealthy */
  struct {
    const void *func;
    cudaFuncAttributes attr;
  } attrs[ATTR_CACHE_MAX];
  int n_attrs;
  int n_lanes;
  struct lane *lanes;
};

/* One job on one lane: what backend_run was given, plus its device buffers. */
struct job {
  struct cuda_backend *be;
  struct lane *lane;
  const struct exp_spec *spec;
  const struct backend_hooks *hooks;
  struct exp_result *result;
  struct reference *ref;
  char *err;
  size_t err_len;
  float *allocs[EXP_MAX_VARIANTS + 4]; /* every device allocation, freed at the end */
  int n_allocs;
  float *d_a, *d_b, *d_x;              /* inputs */
  float *d_out[EXP_MAX_VARIANTS];      /* output of each run (may be shared) */
  float *h_in, *h_out;                 /* pipeline: pinned */
  const struct cublas_fns *cublas;
};

static const char *const METHOD_EVENTS =
    "cuda events around each batch of reps launches on the job's stream; sample = batch "
    "time / reps";
static const char *const METHOD_WALL =
    "host wall clock (CLOCK_MONOTONIC) around upload+kernel+download of all chunks and "
    "the wait for all streams";

/* ---- errors ---- */

/* Errors after which the context is unusable (CUDA's "sticky" errors). */
static bool known_sticky(cudaError_t e) {
  switch (e) {
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchFailure:
  case cudaErrorECCUncorrectable:
  case cudaErrorHardwareStackError:
  case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress:
  case cudaErrorInvalidAddressSpace:
  case cudaErrorInvalidPc:
  case cudaErrorLaunchTimeout:
  case cudaErrorAssert:
  case cudaErrorNvlinkUncorrectable:
  case cudaErrorContained: return true;
  default: return false;
  }
}

static void mark_sick(struct cuda_backend *be, const char *msg) {
  pthread_mutex_lock(&be->mu);
  if (be->healthy.load()) snprintf(be->sick, sizeof be->sick, "%s", msg);
  be->healthy.store(false);
  pthread_mutex_unlock(&be->mu);
}

/* Classifies a failed CUDA call of job j: out of memory -> BACKEND_ENOMEM (error
 * cleared, backend fine); an error that sticks (it persists on the next
 * cudaGetLastError or shows on the lane's stream) -> BACKEND_EDEVICE and the backend
 * turns unhealthy; anything else (a bad launch configuration) -> BACKEND_EINVAL. */
static int cuda_fail(struct job *j, cudaError_t e, const char *call) {
  int name_len = (int)strcspn(call, "(");
  snprintf(j->err, j->err_len, "%.*s: %s: %s", name_len, call, cudaGetErrorName(e),
           cudaGetErrorString(e));
  (void)cudaGetLastError();
  if (e == cudaErrorMemoryAllocation) return BACKEND_ENOMEM;
  bool sticky = known_sticky(e) || cudaGetLastError() != cudaSuccess;
  cudaError_t q = cudaStreamQuery(j->lane->stream);
  if (q != cudaSuccess && q != cudaErrorNotReady) sticky = true;
  (void)cudaGetLastError();
  if (!sticky) return BACKEND_EINVAL;
  mark_sick(j->be, j->err);
  return BACKEND_EDEVICE;
}

#define CUDA_TRY(j, call)                                                                   \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) return cuda_fail((j), e_, #call);                                \
  } while (0)

#define TRY(call)                                                                           \
  do {                                                                                      \
    int rc_ = (call);                                                                       \
    if (rc_ != 0) return rc_;                                                               \
  } while (0)

/* ---- buffers ---- */

/* count floats of device memory from the pool, stream-ordered on the lane's stream;
 * on out-of-memory, trims the pool's cached memory once and retries. */
static int dev_alloc(struct job *j, size_t count, float **out) {
  size_t bytes = (count ? count : 1) * sizeof(float);
  void *p = NULL;
  cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, j->be->pool, j->lane->stream);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    if (cudaStreamSynchronize(j->lane->stream) == cudaSuccess &&
        cudaMemPoolTrimTo(j->be->pool, 0) == cudaSuccess)
      e = cudaMallocFromPoolAsync(&p, bytes, j->be->pool, j->lane->stream);
  }
  if (e != cudaSuccess) {
    int rc = cuda_fail(j, e, "cudaMallocAsync");
    if (rc == BACKEND_ENOMEM)
      snprintf(j->err, j->err_len, "device out of memory allocating %zu bytes", bytes);
    return rc;
  }
  j->allocs[j->n_allocs++] = (float *)p;
  *out = (float *)p;
  return 0;
}

/* The lane's pinned host cache, grown to at least bytes. Contents are not kept. */
static int lane_pinned(struct job *j, size_t bytes, void **out) {
  struct lane *l = j->lane;
  if (l->pin_bytes < bytes) {
    if (l->pin) (void)cudaFreeHost(l->pin); /* no work of this lane is pending */
    l->pin = NULL;
    l->pin_bytes = 0;
    void *p = NULL;
    CUDA_TRY(j, cudaMallocHost(&p, bytes));
    l->pin = p;
    l->pin_bytes = bytes;
  }
  *out = l->pin;
  return 0;
}

/* The lane's pageable host buffer, grown to at least count floats. */
static int lane_host(struct job *j, size_t count, float **out) {
  struct lane *l = j->lane;
  size_t bytes = (count ? count : 1) * sizeof(float);
  if (l->host_bytes < bytes) {
    free(l->host);
    l->host = malloc(bytes);
    l->host_bytes = l->host ? bytes : 0;
    if (!l->host) {
      snprintf(j->err, j->err_len, "host out of memory for a %zu-byte output copy", bytes);
      return BACKEND_ENOMEM;
    }
  }
  *out = (float *)l->host;
  return 0;
}

/* The lane's first n pipeline streams, created on first need. */
static int lane_aux(struct job *j, int n) {
  struct lane *l = j->lane;
  if (!l->aux_ready) CUDA_TRY(j, cudaEventCreateWithFlags(&l->aux_ready, cudaEventDisableTiming));
  while (l->n_aux < n) {
    CUDA_TRY(j, cudaStreamCreateWithFlags(&l->aux[l->n_aux], cudaStreamNonBlocking));
    l->n_aux++;
  }
  return 0;
}

/* Makes the first n pipeline streams wait for everything queued on the lane's stream
 * so far (allocations, poison), without blocking the host. */
static int aux_join(struct job *j, int n) {
  struct lane *l = j->lane;
  CUDA_TRY(j, cudaEventRecord(l->aux_ready, l->stream));
  for (int i = 0; i < n; i++) CUDA_TRY(j, cudaStreamWaitEvent(l->aux[i], l->aux_ready, 0));
  return 0;
}

static int build_reference(struct job *j) {
  int rc = reference_new(j->spec, &j->ref);
  if (rc == 0) return 0;
  snprintf(j->err, j->err_len, "reference_new: %s", strerror(-rc));
  return rc == -ENOMEM ? BACKEND_ENOMEM : BACKEND_EINVAL;
}

/* ---- runs ---- */

static int func_attrs(struct job *j, const void *func, cudaFuncAttributes *attr) {
  struct cuda_backend *be = j->be;
  pthread_mutex_lock(&be->mu);
  for (int i = 0; i < be->n_attrs; i++) {
    if (be->attrs[i].func == func) {
      *attr = be->attrs[i].attr;
      pthread_mutex_unlock(&be->mu);
      return 0;
    }
  }
  pthread_mutex_unlock(&be->mu);
  CUDA_TRY(j, cudaFuncGetAttributes(attr, func));
  pthread_mutex_lock(&be->mu);
  if (be->n_attrs < ATTR_CACHE_MAX) {
    be->attrs[be->n_attrs].func = func;
    be->attrs[be->n_attrs].attr = *attr;
    be->n_attrs++;
  }
  pthread_mutex_unlock(&be->mu);
  return 0;
}

/* Starts run r: variant, label, timing parameters; available until said otherwise. */
static struct exp_run *run_init(struct job *j, int r, int variant, const char *method) {
  struct exp_run *run = &j->result->runs[r];
  const struct exp_timing_params *t = &j->spec->timing;
  run->variant = variant;
  run->available = true;
  run->timing.warmup = run->timing.warmup_requested = t->warmup;
  run->timing.reps = run->timing.reps_requested = t->reps;
  run->timing.batches = t->batches;
  run->timing.method = method;
  return run;
}

/* Plans run's kernel and fills its kernel info; an unplannable size makes the run
 * unavailable (with the reason), not the job fail. */
static int run_plan(struct job *j, struct exp_run *run, int plan_rc, const struct cuda_plan *p,
                    const char *why) {
  if (plan_rc != 0) {
    run->available = false;
    snprintf(run->reason, sizeof run->reason, "%s", why);
    return 0;
  }
  cudaFuncAttributes attr;
  TRY(func_attrs(j, p->func, &attr));
  cuda_kernel_info_fill(p, &attr, &run->kernel);
  return 0;
}

/* The gemm cublas run: available once cuBLAS loads and this lane has a handle. */
static void run_cublas_init(struct job *j, struct exp_run *run) {
  snprintf(run->kernel.name, sizeof run->kernel.name, "cublasSgemm (cuBLAS)");
  snprintf(run->kernel.description, sizeof run->kernel.description,
           "cuBLAS SGEMM, FP32, CUBLAS_DEFAULT_MATH (no TF32); row-major as C^T = B^T A^T");
  const char *why = "";
  j->cublas = cublas_loader_get(&why);
  if (!j->cublas) {
    run->available = false;
    snprintf(run->reason, sizeof run->reason, "cuBLAS not loaded: %s", why);
    return;
  }
  if (!j->lane->cublas) {
    cublasStatus_t st = cublas_loader_handle_new(j->cublas, j->lane->stream, &j->lane->cublas);
    (void)cudaGetLastError(); /* a failed create may leave a non-sticky error behind */
    if (st != CUBLAS_STATUS_SUCCESS) {
      run->available = false;
      snprintf(run->reason, sizeof run->reason, "cublasCreate failed: %s",
               cublas_loader_status_name(st));
    }
  }
}

static int setup_kernel_runs(struct job *j) {
  const struct exp_spec *s = j->spec;
  for (int r = 0; r < s->n_variants; r++) {
    int v = s->variants[r];
    struct exp_run *run = run_init(j, r, v, METHOD_EVENTS);
    const char *name = exp_variant_name(s->type, v);
    snprintf(run->label, sizeof run->label, "%s", name ? name : "?");
    struct cuda_plan p;
    char why[128] = "";
    int prc;
    if (s->type == EXP_TRANSPOSE) {
      prc = transpose_plan(v, s->u.transpose.m, s->u.transpose.n, &p, why, sizeof why);
    } else if (s->type == EXP_GEMM) {
      if (v == GEMM_CUBLAS) {
        run_cublas_init(j, run);
        continue;
      }
      prc = gemm_plan(v, s->u.gemm.m, s->u.gemm.n, s->u.gemm.k, &p, why, sizeof why);
    } else {
      prc = stencil_plan(v, s->u.stencil.n, s->u.stencil.radius, &p, why, sizeof why);
    }
    TRY(run_plan(j, run, prc, &p, why));
  }
  j->result->n_runs = s->n_variants;
  return 0;
}

/* ---- kernel experiments: transpose, gemm, stencil ---- */

static int cublas_gemm(struct job *j, float *d_c) {
  const struct exp_spec *s = j->spec;
  cublasStatus_t st = cublas_loader_sgemm_rowmajor(j->cublas, j->lane->cublas, s->u.gemm.m,
                                                   s->u.gemm.n, s->u.gemm.k, j->d_a, j->d_b,
                                                   d_c);
  if (st == CUBLAS_STATUS_SUCCESS) return 0;
  /* cuBLAS has its own runtime, so its errors are not in our cudaGetLastError; a
   * sticky one shows on the stream. */
  cudaError_t e = cudaStreamQuery(j->lane->stream);
  if (e != cudaSuccess && e != cudaErrorNotReady) return cuda_fail(j, e, "cublasSgemm_v2");
  snprintf(j->err, j->err_len, "cublasSgemm_v2: %s", cublas_loader_status_name(st));
  return st == CUBLAS_STATUS_ALLOC_FAILED ? BACKEND_ENOMEM : BACKEND_EINVAL;
}

/* One launch of run r on the lane's stream. */
static int launch(struct job *j, int r) {
  const struct exp_spec *s = j->spec;
  int v = j->result->runs[r].variant;
  float *out = j->d_out[r];
  cudaStream_t st = j->lane->stream;
  switch (s->type) {
  case EXP_TRANSPOSE:
    CUDA_TRY(j, transpose_launch(v, j->d_a, out, s->u.transpose.m, s->u.transpose.n, st));
    return 0;
  case EXP_GEMM:
    if (v == GEMM_CUBLAS) return cublas_gemm(j, out);
    CUDA_TRY(j, gemm_launch(v, j->d_a, j->d_b, out, s->u.gemm.m, s->u.gemm.n, s->u.gemm.k, st));
    return 0;
  case EXP_STENCIL:
    CUDA_TRY(j, stencil_launch(v, j->d_x, out, s->u.stencil.n, s->u.stencil.radius, st));
    return 0;
  default: snprintf(j->err, j->err_len, "no kernel for this type"); return BACKEND_EINVAL;
  }
}

/* Poisons run r's output, then its untimed warm-up launches. */
static int kernel_prepare(struct job *j, int r) {
  CUDA_TRY(j, poison_launch(j->d_out[r], reference_output_len(j->ref), j->lane->stream));
  for (int i = 0; i < j->result->runs[r].timing.warmup; i++) TRY(launch(j, r));
  return 0;
}

/* Batch b of run r: reps launches between two events; sample = elapsed / reps. */
static int kernel_batch(struct job *j, int r, int b) {
  struct lane *l = j->lane;
  struct exp_timing *t = &j->result->runs[r].timing;
  CUDA_TRY(j, cudaEventRecord(l->start[b], l->stream));
  for (int i = 0; i < t->reps; i++) TRY(launch(j, r));
  CUDA_TRY(j, cudaEventRecord(l->stop[b], l->stream));
  CUDA_TRY(j, cudaEventSynchronize(l->stop[b]));
  float ms = 0;
  CUDA_TRY(j, cudaEventElapsedTime(&ms, l->start[b], l->stop[b]));
  t->samples_ms[b] = (double)ms / t->reps;
  t->n_samples = b + 1;
  return 0;
}

/* Copies run r's output to the host and compares it with the reference. */
static int kernel_check(struct job *j, int r) {
  size_t len = reference_output_len(j->ref);
  float *h = NULL;
  TRY(lane_host(j, len, &h));
  if (len) {
    CUDA_TRY(j, cudaMemcpyAsync(h, j->d_out[r], len * sizeof(float), cudaMemcpyDeviceToHost,
                                j->lane->stream));
    CUDA_TRY(j, cudaStreamSynchronize(j->lane->stream));
  }
  struct exp_run *run = &j->result->runs[r];
  reference_check(j->ref, run->variant, h, &run->check);
  return 0;
}

/* How one experiment prepares, times and checks a run (see schedule). */
struct schedule_ops {
  int (*prepare)(struct job *j, int r);
  int (*batch)(struct job *j, int r, int b); /* stores sample b of run r */
  int (*check)(struct job *j, int r);        /* may be NULL: batch checked already */
};

static int poll_cancel(struct job *j) {
  if (!backend_hooks_canceled(j->hooks)) return 0;
  snprintf(j->err, j->err_len, "canceled");
  return BACKEND_ECANCELED;
}

/* Sample b of run r is in: a chance to cancel, then progress. */
static int after_sample(struct job *j, int r, int b) {
  TRY(poll_cancel(j));
  backend_hooks_progress(j->hooks, r, b, j->result->runs[r].timing.samples_ms[b]);
  return 0;
}

/* Runs every available run in the type's order: SEQUENTIAL prepares, times and
 * checks one run after another; ALTERNATING prepares all, then runs batch b forwards
 * when b is even and backwards when odd, then checks all. */
static int schedule(struct job *j, const struct schedule_ops *ops) {
  struct exp_result *res = j->result;
  int n = res->n_runs, batches = j->spec->timing.batches;
  if (exp_type_order(j->spec->type) == EXP_ORDER_SEQUENTIAL) {
    for (int r = 0; r < n; r++) {
      if (!res->runs[r].available) continue;
      TRY(ops->prepare(j, r));
      TRY(poll_cancel(j));
      for (int b = 0; b < batches; b++) {
        TRY(ops->batch(j, r, b));
        TRY(after_sample(j, r, b));
      }
      if (ops->check) TRY(ops->check(j, r));
    }
    return 0;
  }
  for (int r = 0; r < n; r++)
    if (res->runs[r].available) TRY(ops->prepare(j, r));
  TRY(poll_cancel(j));
  for (int b = 0; b < batches; b++) {
    for (int i = 0; i < n; i++) {
      int r = b % 2 == 0 ? i : n - 1 - i;
      if (!res->runs[r].available) continue;
      TRY(ops->batch(j, r, b));
      TRY(after_sample(j, r, b));
    }
  }
  for (int r = 0; r < n && ops->check; r++)
    if (res->runs[r].available) TRY(ops->check(j, r));
  return 0;
}

/* Allocates and generates the inputs on the GPU and the outputs: one output shared
 * by all runs when they run in turn, one per distinct variant when they alternate. */
static int kernel_buffers(struct job *j) {
  const struct exp_spec *s = j->spec;
  cudaStream_t st = j->lane->stream;
  uint64_t seed = s->seed;
  size_t out_len;
  if (s->type == EXP_TRANSPOSE) {
    out_len = (size_t)s->u.transpose.m * (size_t)s->u.transpose.n;
    TRY(dev_alloc(j, out_len, &j->d_a));
    CUDA_TRY(j, gen_launch(j->d_a, out_len, seed, GEN_A, 1.0f, st));
  } else if (s->type == EXP_GEMM) {
    size_t m = (size_t)s->u.gemm.m, n = (size_t)s->u.gemm.n, k = (size_t)s->u.gemm.k;
    out_len = m * n;
    TRY(dev_alloc(j, m * k, &j->d_a));
    TRY(dev_alloc(j, k * n, &j->d_b));
    CUDA_TRY(j, gen_launch(j->d_a, m * k, seed, GEN_A, 1.0f, st));
    CUDA_TRY(j, gen_launch(j->d_b, k * n, seed, GEN_B, 1.0f, st));
  } else {
    out_len = (size_t)s->u.stencil.n;
    TRY(dev_alloc(j, out_len, &j->d_x));
    CUDA_TRY(j, gen_launch(j->d_x, out_len, seed, GEN_X, 1.0f, st));
  }
  bool per_variant = exp_type_order(s->type) == EXP_ORDER_ALTERNATING;
  const struct exp_run *runs = j->result->runs;
  for (int r = 0; r < j->result->n_runs; r++) {
    if (!runs[r].available) continue;
    for (int q = 0; q < r && !j->d_out[r]; q++) /* an earlier output to share */
      if (j->d_out[q] && (!per_variant || runs[q].variant == runs[r].variant))
        j->d_out[r] = j->d_out[q];
    if (!j->d_out[r]) TRY(dev_alloc(j, out_len, &j->d_out[r]));
  }
  return 0;
}

static int run_kernels(struct job *j) {
  static const struct schedule_ops ops = {kernel_prepare, kernel_batch, kernel_check};
  TRY(setup_kernel_runs(j));
  TRY(kernel_buffers(j));
  TRY(build_reference(j)); /* on the host while the GPU generates the same inputs */
  return schedule(j, &ops);
}

/* ---- pipeline ---- */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The lecture's run_pipeline over n_streams of the lane's pipeline streams: all
 * uploads, then all kernels, then all downloads, chunk c on stream c % n_streams;
 * then waits for those streams. */
static int pipeline_pass(struct job *j, int n_streams) {
  const struct exp_spec *s = j->spec;
  cudaStream_t *aux = j->lane->aux;
  size_t chunk = (size_t)s->u.pipeline.chunk, bytes = chunk * sizeof(float);
  int chunks = s->u.pipeline.chunks;
  for (int c = 0; c < chunks; c++)
    CUDA_TRY(j, cudaMemcpyAsync(j->d_x + c * chunk, j->h_in + c * chunk, bytes,
                                cudaMemcpyHostToDevice, aux[c % n_streams]));
  for (int c = 0; c < chunks; c++)
    CUDA_TRY(j, synthesize_launch(j->d_x + c * chunk, j->d_out[0] + c * chunk,
                                  s->u.pipeline.chunk, s->u.pipeline.terms,
                                  aux[c % n_streams]));
  for (int c = 0; c < chunks; c++)
    CUDA_TRY(j, cudaMemcpyAsync(j->h_out + c * chunk, j->d_out[0] + c * chunk, bytes,
                                cudaMemcpyDeviceToHost, aux[c % n_streams]));
  for (int i = 0; i < n_streams; i++) CUDA_TRY(j, cudaStreamSynchronize(aux[i]));
  return 0;
}

static int pipeline_prepare(struct job *j, int r) {
  for (int i = 0; i < j->result->runs[r].timing.warmup; i++)
    TRY(pipeline_pass(j, j->result->runs[r].variant));
  return 0;
}

/* Batch b of run r: reps passes timed on the host. The last batch starts from
 * poisoned outputs (device and host) and its output is checked. */
static int pipeline_batch(struct job *j, int r, int b) {
  struct exp_run *run = &j->result->runs[r];
  struct exp_timing *t = &run->timing;
  size_t total = reference_output_len(j->ref);
  bool last = b == j->spec->timing.batches - 1;
  if (last) {
    memset(j->h_out, 0xFF, total * sizeof(float));
    CUDA_TRY(j, poison_launch(j->d_out[0], total, j->lane->stream));
    TRY(aux_join(j, run->variant));
  }
  double t0 = now_ms();
  for (int i = 0; i < t->reps; i++) TRY(pipeline_pass(j, run->variant));
  t->samples_ms[b] = (now_ms() - t0) / t->reps;
  t->n_samples = b + 1;
  if (last) reference_check(j->ref, run->variant, j->h_out, &run->check);
  return 0;
}

static int run_pipeline(struct job *j) {
  static const struct schedule_ops ops = {pipeline_prepare, pipeline_batch, NULL};
  const struct exp_spec *s = j->spec;
  struct cuda_plan p;
  char why[128] = "";
  int prc = synthesize_plan(s->u.pipeline.chunk, &p, why, sizeof why), max_streams = 1;
  for (int r = 0; r < s->u.pipeline.n_stream_counts; r++) {
    int count = s->u.pipeline.stream_counts[r];
    struct exp_run *run = run_init(j, r, count, METHOD_WALL);
    snprintf(run->label, sizeof run->label, "streams=%d", count);
    TRY(run_plan(j, run, prc, &p, why));
    if (count > max_streams) max_streams = count;
  }
  j->result->n_runs = s->u.pipeline.n_stream_counts;

  size_t total = (size_t)s->u.pipeline.chunk * (size_t)s->u.pipeline.chunks;
  TRY(dev_alloc(j, total, &j->d_x));
  TRY(dev_alloc(j, total, &j->d_out[0]));
  TRY(build_reference(j));
  void *pin = NULL;
  TRY(lane_pinned(j, 2 * (total ? total : 1) * sizeof(float), &pin));
  j->h_in = (float *)pin;
  j->h_out = j->h_in + total;
  /* The lecture's input is host data; the reference's phases are gen.h's, so both
   * backends start from the same bits. */
  if (total) memcpy(j->h_in, reference_input(j->ref, GEN_X), total * sizeof(float));
  TRY(lane_aux(j, max_streams));
  TRY(aux_join(j, max_streams)); /* the buffers were allocated on the lane's stream */
  return schedule(j, &ops);
}

/* ---- run ---- */

static int validate(const struct exp_spec *s, char *err, size_t err_len) {
  const struct exp_timing_params *t = &s->timing;
  if ((unsigned)s->type >= (unsigned)EXP_TYPE_COUNT) {
    snprintf(err, err_len, "unknown experiment type %d", (int)s->type);
    return BACKEND_EINVAL;
  }
  if (t->warmup < 0 || t->batches < 1 || t->batches > EXP_MAX_BATCHES || t->reps < 1) {
    snprintf(err, err_len,
             "timing out of range: warmup %d (>= 0), batches %d (1..%d), reps %d (>= 1)",
             t->warmup, t->batches, EXP_MAX_BATCHES, t->reps);
    return BACKEND_EINVAL;
  }
  if (s->type == EXP_PIPELINE) {
    const auto &p = s->u.pipeline;
    bool ok = p.chunk >= 0 && p.chunks >= 0 && p.terms >= 0 && p.n_stream_counts >= 1 &&
              p.n_stream_counts <= EXP_MAX_STREAM_COUNTS && p.n_stream_counts <= EXP_MAX_VARIANTS;
    for (int i = 0; ok && i < p.n_stream_counts; i++)
      ok = p.stream_counts[i] >= 1 && p.stream_counts[i] <= EXP_MAX_STREAMS;
    if (!ok) snprintf(err, err_len, "pipeline params out of range");
    return ok ? 0 : BACKEND_EINVAL;
  }
  bool ok = s->n_variants >= 1 && s->n_variants <= EXP_MAX_VARIANTS;
  for (int i = 0; ok && i < s->n_variants; i++)
    ok = s->variants[i] >= 0 && s->variants[i] < exp_variant_count(s->type);
  if (s->type == EXP_TRANSPOSE) ok = ok && s->u.transpose.m >= 0 && s->u.transpose.n >= 0;
  if (s->type == EXP_GEMM) ok = ok && s->u.gemm.m >= 0 && s->u.gemm.n >= 0 && s->u.gemm.k >= 0;
  if (s->type == EXP_STENCIL) ok = ok && s->u.stencil.n >= 0 && s->u.stencil.radius >= 0;
  if (!ok) snprintf(err, err_len, "%s: variants or sizes out of range", exp_type_name(s->type));
  return ok ? 0 : BACKEND_EINVAL;
}

/* Releases the job's device memory (stream-ordered, after the pipeline streams are
 * idle) and waits for the lane's stream, so no queued work still reads the lane's
 * host buffers. Returns the first error, classified. */
static int job_release(struct job *j) {
  int rc = 0;
  struct lane *l = j->lane;
  for (int i = 0; i < l->n_aux; i++) {
    cudaError_t e = cudaStreamSynchronize(l->aux[i]);
    if (e != cudaSuccess && rc == 0) rc = cuda_fail(j, e, "cudaStreamSynchronize");
  }
  for (int i = j->n_allocs - 1; i >= 0; i--) {
    cudaError_t e = cudaFreeAsync(j->allocs[i], l->stream);
    if (e != cudaSuccess && rc == 0) rc = cuda_fail(j, e, "cudaFreeAsync");
  }
  cudaError_t e = cudaStreamSynchronize(l->stream);
  if (e != cudaSuccess && rc == 0) rc = cuda_fail(j, e, "cudaStreamSynchronize");
  (void)cudaGetLastError(); /* errors ignored after the job had failed */
  return rc;
}

static int cuda_run(struct backend *b, int lane, const struct exp_spec *spec,
                    const struct backend_hooks *hooks, struct exp_result *result, char *err,
                    size_t err_len) {
  struct cuda_backend *be = (struct cuda_backend *)b->impl;
  memset(result, 0, sizeof *result);
  snprintf(result->backend, sizeof result->backend, "cuda");
  snprintf(result->device_name, sizeof result->device_name, "%.95s", be->prop.name);
  if (!be->healthy.load()) {
    pthread_mutex_lock(&be->mu);
    snprintf(err, err_len, "device unhealthy after an earlier error: %s", be->sick);
    pthread_mutex_unlock(&be->mu);
    return BACKEND_EDEVICE;
  }
  int rc = validate(spec, err, err_len);
  if (rc != 0) return rc;

  struct job j = {};
  j.be = be;
  j.lane = &be->lanes[lane];
  j.spec = spec;
  j.hooks = hooks;
  j.result = result;
  j.err = err;
  j.err_len = err_len;
  cudaError_t e = cudaSetDevice(be->device); /* the worker thread may be new */
  if (e != cudaSuccess) rc = cuda_fail(&j, e, "cudaSetDevice");
  if (rc == 0) rc = spec->type == EXP_PIPELINE ? run_pipeline(&j) : run_kernels(&j);

  int release_rc = job_release(&j);
  if (rc == 0) rc = release_rc;
  reference_free(j.ref);
  for (int r = 0; r < result->n_runs; r++)
    if (result->runs[r].timing.n_samples > 0) exp_timing_summarize(&result->runs[r].timing);
  exp_result_finish(spec, result);
  return rc;
}

/* ---- the backend ---- */

static void cuda_device_info(struct backend *b, struct backend_device_info *info) {
  struct cuda_backend *be = (struct cuda_backend *)b->impl;
  memset(info, 0, sizeof *info);
  snprintf(info->backend, sizeof info->backend, "cuda");
  snprintf(info->name, sizeof info->name, "%.127s", be->prop.name);
  info->index = be->device;
  info->cc_major = be->prop.major;
  info->cc_minor = be->prop.minor;
  info->sms = be->prop.multiProcessorCount;
  info->mem_total_bytes = be->prop.totalGlobalMem;
  info->mem_free_bytes = be->mem_free_at_open;
  size_t free_b = 0, total_b = 0;
  if (be->healthy.load() && cudaSetDevice(be->device) == cudaSuccess &&
      cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
    info->mem_free_bytes = free_b;
  (void)cudaGetLastError();
  info->sm_clock_mhz = be->sm_clock_khz / 1000;
  info->mem_clock_mhz = be->mem_clock_khz / 1000;
  info->mem_bus_bits = be->prop.memoryBusWidth;
  info->l2_bytes = be->prop.l2CacheSize;
  cudaRuntimeGetVersion(&info->runtime_version);
  cudaDriverGetVersion(&info->driver_version);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  info->cpu_cores = cores > 0 ? (int)cores : 0;
}

static uint64_t cuda_memory_limit(const struct backend *b) {
  return ((const struct cuda_backend *)b->impl)->mem_limit;
}

static bool cuda_healthy(const struct backend *b) {
  return ((const struct cuda_backend *)b->impl)->healthy.load();
}

/* Frees whatever of be exists; safe on a partly opened backend. */
static void destroy(struct cuda_backend *be) {
  if (!be) return;
  if (be->lanes) {
    (void)cudaSetDevice(be->device);
    for (int i = 0; i < be->n_lanes; i++) {
      struct lane *l = &be->lanes[i];
      if (l->cublas) cublas_loader_get(NULL)->destroy(l->cublas); /* loaded: it made one */
      for (int k = 0; k < l->n_aux; k++) cudaStreamDestroy(l->aux[k]);
      if (l->aux_ready) cudaEventDestroy(l->aux_ready);
      for (int k = 0; k < EXP_MAX_BATCHES; k++) {
        if (l->start[k]) cudaEventDestroy(l->start[k]);
        if (l->stop[k]) cudaEventDestroy(l->stop[k]);
      }
      if (l->stream) cudaStreamDestroy(l->stream);
      if (l->pin) cudaFreeHost(l->pin);
      free(l->host);
    }
    free(be->lanes);
    (void)cudaGetLastError();
  }
  pthread_mutex_destroy(&be->mu);
  delete be;
}

static void cuda_free(struct backend *b) {
  destroy((struct cuda_backend *)b->impl);
  free(b);
}

static const struct backend_ops cuda_ops = {"cuda",       cuda_device_info, cuda_memory_limit,
                                            cuda_healthy, cuda_run,         cuda_free};

/* Reports a failed call during open: out of memory -> BACKEND_ENOMEM, else
 * BACKEND_EUNAVAIL. */
static int open_fail(cudaError_t e, const char *call, char *why, size_t why_len) {
  snprintf(why, why_len, "%s: %s: %s", call, cudaGetErrorName(e), cudaGetErrorString(e));
  (void)cudaGetLastError();
  return e == cudaErrorMemoryAllocation ? BACKEND_ENOMEM : BACKEND_EUNAVAIL;
}

#define OPEN_TRY(call, name)                                                                \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) return open_fail(e_, name, why, why_len);                        \
  } while (0)

static int open_lanes(struct cuda_backend *be, char *why, size_t why_len) {
  be->lanes = (struct lane *)calloc((size_t)be->n_lanes, sizeof *be->lanes);
  if (!be->lanes) {
    snprintf(why, why_len, "out of host memory for %d lanes", be->n_lanes);
    return BACKEND_ENOMEM;
  }
  for (int i = 0; i < be->n_lanes; i++) {
    struct lane *l = &be->lanes[i];
    OPEN_TRY(cudaStreamCreateWithFlags(&l->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    for (int k = 0; k < EXP_MAX_BATCHES; k++) {
      OPEN_TRY(cudaEventCreate(&l->start[k]), "cudaEventCreate");
      OPEN_TRY(cudaEventCreate(&l->stop[k]), "cudaEventCreate");
    }
  }
  return 0;
}

static int open_device(struct cuda_backend *be, char *why, size_t why_len) {
  int count = 0;
  OPEN_TRY(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (be->device < 0 || be->device >= count) {
    snprintf(why, why_len, "CUDA device %d not present (%d device%s)", be->device, count,
             count == 1 ? "" : "s");
    return BACKEND_EUNAVAIL;
  }
  OPEN_TRY(cudaSetDevice(be->device), "cudaSetDevice");
  OPEN_TRY(cudaGetDeviceProperties(&be->prop, be->device), "cudaGetDeviceProperties");
  OPEN_TRY(cudaDeviceGetAttribute(&be->sm_clock_khz, cudaDevAttrClockRate, be->device),
           "cudaDeviceGetAttribute");
  OPEN_TRY(cudaDeviceGetAttribute(&be->mem_clock_khz, cudaDevAttrMemoryClockRate, be->device),
           "cudaDeviceGetAttribute");
  /* A device this binary has no code for fails here rather than on every launch. */
  struct cuda_plan p;
  char plan_why[64];
  synthesize_plan(1, &p, plan_why, sizeof plan_why);
  cudaFuncAttributes attr;
  OPEN_TRY(cudaFuncGetAttributes(&attr, p.func), "cudaFuncGetAttributes (kernel image)");
  size_t free_b = 0, total_b = 0;
  OPEN_TRY(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  be->mem_free_at_open = free_b;
  be->mem_limit = (uint64_t)((double)free_b * 0.9);
  /* Freed blocks stay in the pool for the next job instead of going back to the
   * driver (and being mapped again at every allocation). */
  OPEN_TRY(cudaDeviceGetDefaultMemPool(&be->pool, be->device), "cudaDeviceGetDefaultMemPool");
  uint64_t threshold = UINT64_MAX;
  OPEN_TRY(cudaMemPoolSetAttribute(be->pool, cudaMemPoolAttrReleaseThreshold, &threshold),
           "cudaMemPoolSetAttribute");
  return open_lanes(be, why, why_len);
}

extern "C" int cuda_backend_open(int device, int n_lanes, struct backend **out, char *why,
                                 size_t why_len) {
  *out = NULL;
  if (n_lanes < 1) {
    snprintf(why, why_len, "n_lanes must be >= 1, not %d", n_lanes);
    return BACKEND_EINVAL;
  }
  struct cuda_backend *be = new (std::nothrow) cuda_backend();
  struct backend *b = (struct backend *)calloc(1, sizeof *b);
  if (!be || !b) {
    delete be;
    free(b);
    snprintf(why, why_len, "out of host memory");
    return BACKEND_ENOMEM;
  }
  pthread_mutex_init(&be->mu, NULL);
  be->healthy.store(true);
  be->device = device;
  be->n_lanes = n_lanes;
  int rc = open_device(be, why, why_len);
  if (rc != 0) {
    destroy(be);
    free(b);
    return rc;
  }
  b->ops = &cuda_ops;
  b->n_lanes = n_lanes;
  b->impl = be;
  snprintf(why, why_len, "%s (cc %d.%d, %d SMs), %d stream%s", be->prop.name, be->prop.major,
           be->prop.minor, be->prop.multiProcessorCount, n_lanes, n_lanes == 1 ? "" : "s");
  *out = b;
  return 0;
}
