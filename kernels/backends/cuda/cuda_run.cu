/* Running one job on one lane of the CUDA backend: the job's inputs (given buffers,
 * or generated on the GPU with gen.h), its output and done fence, its timed windows
 * (launches one by one on the lane's stream, or as captured CUDA Graphs), and the
 * checks against reference.h. The kernel experiments are here; the pipeline's
 * passes are in kernels/pipeline/pipeline.cu. It waits only on the lane's own streams and events;
 * a job's parents are waited for on the device (cudaStreamWaitEvent). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/backends/cuda/cuda_run_impl.h"
#include "kernels/backends/cuda/cuda_kernels.cuh"
#include "kernels/core/gen.h"
#include "kernels/core/reference.h"
#include "kernels/core/stats.h"
#include "kernels/gemm/gemm.h"
#include "kernels/pipeline/pipeline.h"
#include "kernels/stencil/stencil.h"
#include "kernels/transpose/transpose.h"

static const char *const METHOD_EVENTS =
    "cuda events around each batch of reps launches on the job's stream; sample = batch "
    "time / reps";
static const char *const METHOD_EVENTS_COLD =
    "cold: before each launch, untimed, a kernel reads a buffer twice the L2's size "
    "(cudaDeviceProp.l2CacheSize) on the job's stream, evicting inputs and outputs from L2; "
    "then cuda events around that one launch; sample = mean of the batch's reps launches, "
    "each timed alone (a flushed L2 stays cold for one launch only)";
static const char *const METHOD_EVENTS_GRAPH =
    "cuda events around one launch of a CUDA Graph of reps captured launches per batch; "
    "sample = batch time / reps; stream_us_per_launch: the same reps launched one by one, "
    "in the same window";
static const char *const METHOD_EVENTS_NO_GRAPH =
    "cuda events around each batch of reps launches on the job's stream; sample = batch "
    "time / reps (graph asked, but cuBLAS could not be captured into a CUDA Graph: "
    "graph_us_per_launch is 0)";
/* ---- errors and memory ---- */

int job_fail(struct job_run *j, cudaError_t e, const char *call) {
  return cuda_classify(j->be, j->lane->stream, e, call, j->err, j->err_len);
}

/* count floats of device memory, ordered on the lane's stream, freed by release. */
int job_alloc(struct job_run *j, size_t count, float **out) {
  RC_TRY(cuda_pool_alloc(j->be, j->lane->stream, count, out, j->err, j->err_len));
  j->allocs[j->n_allocs++] = *out;
  return 0;
}

/* Waits for all work queued on the lane's streams. */
static int sync_lane(struct job_run *j) {
  for (int i = 0; i < j->lane->n_aux; i++) CUDA_TRY(j, cudaStreamSynchronize(j->lane->aux[i]));
  CUDA_TRY(j, cudaStreamSynchronize(j->lane->stream));
  return 0;
}

/* Waits for the pipeline streams, frees this call's device memory (ordered on the
 * lane's stream) and graphs, then waits for the lane's stream. Idempotent; returns
 * the first error, classified. Never frees job->output or the inputs. */
static int release(struct job_run *j) {
  struct lane *l = j->lane;
  int rc = 0;
  for (int i = 0; i < l->n_aux; i++) {
    cudaError_t e = cudaStreamSynchronize(l->aux[i]);
    if (e != cudaSuccess && rc == 0) rc = job_fail(j, e, "cudaStreamSynchronize");
  }
  for (int i = j->n_allocs - 1; i >= 0; i--) {
    cudaError_t e = cudaFreeAsync(j->allocs[i], l->stream);
    if (e != cudaSuccess && rc == 0) rc = job_fail(j, e, "cudaFreeAsync");
  }
  j->n_allocs = 0;
  for (int i = 0; i < j->n_tl_ev; i++) (void)cudaEventDestroy(j->tl_ev[i]);
  j->n_tl_ev = 0;
  for (int r = 0; r < EXP_MAX_VARIANTS; r++) {
    if (j->graph[r]) (void)cudaGraphExecDestroy(j->graph[r]);
    j->graph[r] = NULL;
  }
  cudaError_t e = cudaStreamSynchronize(l->stream);
  if (e != cudaSuccess && rc == 0) rc = job_fail(j, e, "cudaStreamSynchronize");
  (void)cudaGetLastError(); /* errors ignored after the job had failed */
  return rc;
}

/* ---- phases ---- */

/* Opens a timed window: when exclusive (always for the pipeline, whose wall clock
 * would otherwise count earlier work) the lane's earlier work is complete first. */
static int enter_timed(struct job_run *j) {
  if (j->bj->exclusive || j->spec->type == EXP_PIPELINE) RC_TRY(sync_lane(j));
  bool stop = backend_hooks_phase(j->hooks, BACKEND_PHASE_TIMED);
  j->in_window = true;
  if (stop) { /* canceled while it waited for the device */
    snprintf(j->err, j->err_len, "canceled");
    return -ECANCELED;
  }
  return 0;
}

/* Closes the window (its device work is complete); returns whether it was contended. */
static bool leave_timed(struct job_run *j) {
  j->in_window = false;
  return backend_hooks_phase(j->hooks, BACKEND_PHASE_UNTIMED);
}

static void enter_idle(struct job_run *j) {
  j->idle = true;
  backend_hooks_phase(j->hooks, BACKEND_PHASE_IDLE);
}

static int poll_cancel(struct job_run *j) {
  if (!backend_hooks_canceled(j->hooks)) return 0;
  snprintf(j->err, j->err_len, "canceled");
  return -ECANCELED;
}

/* ---- planning the runs ---- */

/* Starts run r: variant, label, timing parameters; available until said otherwise. */
struct exp_run *job_run_init(struct job_run *j, int r, int variant, const char *method) {
  struct exp_run *run = &j->result->runs[r];
  const struct exp_timing_params *t = &j->spec->timing;
  run->variant = variant;
  run->available = true;
  run->timing.warmup = run->timing.warmup_requested = t->warmup;
  run->timing.reps = run->timing.reps_requested = t->reps;
  run->timing.batches = t->batches;
  run->timing.method = method;
  run->timing.cold = j->spec->cold;
  exp_spec_work_counts(j->spec, &run->kernel.work);
  run->kernel.has_work = true;
  return run;
}

/* The theoretical occupancy of plan's launch shape: blocks and warps per SM against
 * the SM's limit. */
static int kernel_occupancy(struct job_run *j, const struct cuda_plan *p,
                            struct exp_kernel_info *k) {
  int threads = (int)(p->block.x * p->block.y * p->block.z), blocks = 0;
  if (threads <= 0) return 0;
  RC_TRY(cuda_func_occupancy(j->be, j->lane->stream, p->func, threads, p->dyn_smem_bytes, &blocks,
                          j->err, j->err_len));
  k->has_occupancy = true;
  k->blocks_per_sm = blocks;
  k->warps_per_sm = blocks * ((threads + 31) / 32);
  k->max_warps_per_sm = j->be->prop.maxThreadsPerMultiProcessor / 32;
  k->occupancy = k->max_warps_per_sm > 0 ? (double)k->warps_per_sm / k->max_warps_per_sm : 0;
  return 0;
}

/* Fills run's kernel info from its plan; an unplannable size makes the run
 * unavailable (with the reason), not the job fail. */
int job_run_plan(struct job_run *j, struct exp_run *run, int plan_rc,
                    const struct cuda_plan *p, const char *why) {
  if (plan_rc != 0) {
    run->available = false;
    snprintf(run->reason, sizeof run->reason, "%s", why);
    return 0;
  }
  cudaFuncAttributes attr;
  RC_TRY(cuda_func_attrs(j->be, j->lane->stream, p->func, &attr, j->err, j->err_len));
  cuda_kernel_info_fill(p, &attr, &run->kernel);
  return kernel_occupancy(j, p, &run->kernel);
}

/* The gemm cublas run: available once cuBLAS loads and this lane has a handle. */
static void run_cublas_init(struct job_run *j, struct exp_run *run) {
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

static int plan_kernel_runs(struct job_run *j) {
  const struct exp_spec *s = j->spec;
  for (int r = 0; r < s->n_variants; r++) {
    int v = s->variants[r];
    struct exp_run *run =
        job_run_init(j, r, v, s->graph ? METHOD_EVENTS_GRAPH : s->cold ? METHOD_EVENTS_COLD : METHOD_EVENTS);
    const char *name = exp_variant_name(s->type, v);
    snprintf(run->label, sizeof run->label, "%s", name ? name : "?");
    struct cuda_plan p;
    char why[128] = "";
    int prc;
    if (s->type == EXP_TRANSPOSE) {
      prc = transpose_plan(v, s->p[TRANSPOSE_M], s->p[TRANSPOSE_N], &p, why, sizeof why);
    } else if (s->type == EXP_GEMM) {
      if (v == GEMM_CUBLAS) {
        run_cublas_init(j, run);
        continue;
      }
      prc = gemm_plan(v, s->p[GEMM_M], s->p[GEMM_N], s->p[GEMM_K], &p, why, sizeof why);
    } else {
      prc = stencil_plan(v, s->p[STENCIL_N], s->p[STENCIL_RADIUS], &p, why, sizeof why);
    }
    RC_TRY(job_run_plan(j, run, prc, &p, why));
  }
  j->result->n_runs = s->n_variants;
  return 0;
}

static int first_available(const struct job_run *j) {
  for (int r = 0; r < j->result->n_runs; r++)
    if (j->result->runs[r].available) return r;
  return -1;
}

/* ---- inputs and the job's output ---- */

/* Input slot: a given buffer is read in place; otherwise generated on the GPU from
 * the slot's seed with the stream and scale its descriptor names (the reference makes
 * the same numbers). */
int job_input_setup(struct job_run *j, int slot) {
  const struct exp_input_desc *in = &exp_desc(j->spec->type)->inputs[slot];
  const struct backend_buffer *given = j->bj->input[slot];
  if (given && given->device == j->be->device) {
    j->d_in[slot] = given->data;
    if (!j->result->input_path[0]) snprintf(j->result->input_path, sizeof j->result->input_path, "local");
    return 0;
  }
  if (given) { /* on another device: copied here after the parents' fences */
    float *d = NULL;
    RC_TRY(job_alloc(j, given->count, &d));
    if (given->count)
      CUDA_TRY(j, cudaMemcpyPeerAsync(d, j->be->device, given->data, given->device,
                                      given->count * sizeof(float), j->lane->stream));
    /* Without peer access the driver stages the copy through host memory. */
    snprintf(j->result->input_path, sizeof j->result->input_path, "%s",
             given->device >= 0 && given->device < 64 && j->be->peer[given->device] ? "peer" : "host");
    j->d_in[slot] = d;
    return 0;
  }
  struct exp_shape shape;
  exp_input_shape(j->spec, slot, &shape);
  size_t count = (size_t)exp_shape_count(&shape);
  float *d = NULL;
  RC_TRY(job_alloc(j, count, &d));
  CUDA_TRY(j, gen_launch(d, count, j->spec->inputs[slot].value, in->stream, in->scale,
                         j->lane->stream));
  j->d_in[slot] = d;
  return 0;
}

/* Computes the job's output once with its first available run, records the done
 * fence after it on the lane's stream and hands both to the engine (job->output,
 * job->done, then hooks->issued). With no run available the fence is still
 * recorded and job->output stays NULL. On failure nothing is handed over. */
int job_issue_output(struct job_run *j, compute_fn compute) {
  struct lane *l = j->lane;
  struct backend_buffer *out = NULL;
  struct backend_fence *done = (struct backend_fence *)calloc(1, sizeof *done);
  int first = first_available(j), rc = 0;
  cudaError_t e = cudaSuccess;
  if (!done) goto nomem;
  if (first >= 0) {
    out = (struct backend_buffer *)calloc(1, sizeof *out);
    if (!out) goto nomem;
    out->count = j->out_len;
    out->device = j->be->device;
    rc = cuda_pool_alloc(j->be, l->stream, out->count, &out->data, j->err, j->err_len);
    if (rc == 0) rc = compute(j, first, out->data);
    if (rc != 0) goto fail;
  }
  e = cudaEventCreateWithFlags(&done->event, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventRecord(done->event, l->stream);
  if (e != cudaSuccess) {
    rc = job_fail(j, e, "cudaEventRecord (done fence)");
    goto fail;
  }
  j->bj->output = out;
  j->bj->done = done;
  backend_hooks_issued(j->hooks);
  return 0;
nomem:
  snprintf(j->err, j->err_len, "host out of memory for the job's output");
  rc = -ENOMEM;
fail:
  if (done && done->event) (void)cudaEventDestroy(done->event);
  if (out && out->data) (void)cudaFreeAsync(out->data, l->stream);
  (void)cudaGetLastError();
  free(out);
  free(done);
  return rc;
}

/* ---- kernel experiments: transpose, gemm, stencil ---- */

/* One launch of run r writing out, on the lane's stream. Returns CUDA's status;
 * cuBLAS's goes to *cst. Never classifies, so it is safe inside a capture. */
static cudaError_t launch_raw(struct job_run *j, int r, float *out, cublasStatus_t *cst) {
  const struct exp_spec *s = j->spec;
  int v = j->result->runs[r].variant;
  cudaStream_t st = j->lane->stream;
  switch (s->type) {
  case EXP_TRANSPOSE: return transpose_launch(v, j->d_in[0], out, s->p[TRANSPOSE_M], s->p[TRANSPOSE_N], st);
  case EXP_GEMM:
    if (v == GEMM_CUBLAS) {
      *cst = cublas_loader_sgemm_rowmajor(j->cublas, j->lane->cublas, s->p[GEMM_M], s->p[GEMM_N],
                                          s->p[GEMM_K], j->d_in[0], j->d_in[1], out);
      return cudaSuccess;
    }
    return gemm_launch(v, j->d_in[0], j->d_in[1], out, s->p[GEMM_M], s->p[GEMM_N], s->p[GEMM_K], st);
  case EXP_STENCIL:
    return stencil_launch(v, j->d_in[0], out, s->p[STENCIL_N], s->p[STENCIL_RADIUS], st);
  default: return cudaErrorInvalidValue;
  }
}

static int cublas_fail(struct job_run *j, cublasStatus_t st) {
  /* cuBLAS has its own runtime, so its errors are not in our cudaGetLastError; a
   * sticky one shows on the stream. */
  cudaError_t e = cudaStreamQuery(j->lane->stream);
  if (e != cudaSuccess && e != cudaErrorNotReady) return job_fail(j, e, "cublasSgemm_v2");
  snprintf(j->err, j->err_len, "cublasSgemm_v2: %s", cublas_loader_status_name(st));
  return st == CUBLAS_STATUS_ALLOC_FAILED ? -ENOMEM : -EINVAL;
}

/* One launch of run r writing out (a compute_fn). */
static int launch(struct job_run *j, int r, float *out) {
  cublasStatus_t cst = CUBLAS_STATUS_SUCCESS;
  cudaError_t e = launch_raw(j, r, out, &cst);
  if (cst != CUBLAS_STATUS_SUCCESS) return cublas_fail(j, cst);
  return e == cudaSuccess ? 0 : job_fail(j, e, "kernel launch");
}

/* Inputs, one output per available run, the flush buffer of a cold job (zeroed,
 * untimed), then the job's output and fence. */
static int kernel_setup(struct job_run *j) {
  for (int slot = 0; slot < exp_input_count(j->spec->type); slot++) RC_TRY(job_input_setup(j, slot));
  for (int r = 0; r < j->result->n_runs; r++)
    if (j->result->runs[r].available) RC_TRY(job_alloc(j, j->out_len, &j->d_out[r]));
  if (j->spec->cold) {
    j->flush_len = ((size_t)2 * (size_t)j->be->prop.l2CacheSize / sizeof(float) + 3) / 4 * 4;
    RC_TRY(job_alloc(j, j->flush_len + 4, &j->flush));
    CUDA_TRY(j, cudaMemsetAsync(j->flush, 0, (j->flush_len + 4) * sizeof(float), j->lane->stream));
  }
  return job_issue_output(j, launch);
}

/* Ends the capture begun on the lane's stream. When everything captured (e is
 * cudaSuccess), instantiates the graph as run r's and uploads it. Returns the first
 * error, unclassified (a capture's errors do not stick). */
cudaError_t job_capture_end(struct job_run *j, int r, cudaError_t e) {
  cudaGraph_t g = NULL;
  cudaGraphExec_t exec = NULL;
  cudaError_t end = cudaStreamEndCapture(j->lane->stream, &g);
  if (e == cudaSuccess) e = end;
  if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, g, 0);
  if (g) (void)cudaGraphDestroy(g);
  if (e != cudaSuccess) return e;
  j->graph[r] = exec; /* release destroys it */
  return cudaGraphUpload(exec, j->lane->stream);
}

/* Graph mode: captures run r's reps launches. A cuBLAS run that cannot be captured
 * keeps stream timing only (timing.method says so); any other failure fails. */
static int kernel_capture(struct job_run *j, int r) {
  struct exp_run *run = &j->result->runs[r];
  CUDA_TRY(j, cudaStreamBeginCapture(j->lane->stream, cudaStreamCaptureModeThreadLocal));
  cudaError_t e = cudaSuccess;
  cublasStatus_t cst = CUBLAS_STATUS_SUCCESS;
  for (int i = 0; i < run->timing.reps && e == cudaSuccess && cst == CUBLAS_STATUS_SUCCESS; i++)
    e = launch_raw(j, r, j->d_out[r], &cst);
  if (e == cudaSuccess && cst != CUBLAS_STATUS_SUCCESS) e = cudaErrorStreamCaptureInvalidated;
  e = job_capture_end(j, r, e);
  if (e == cudaSuccess) return 0;
  (void)cudaGetLastError();
  if (j->spec->type != EXP_GEMM || run->variant != GEMM_CUBLAS)
    return job_fail(j, e, "graph capture of the run's launches");
  run->timing.method = METHOD_EVENTS_NO_GRAPH;
  cudaError_t q = cudaStreamQuery(j->lane->stream); /* a sticky error would show here */
  return q == cudaSuccess || q == cudaErrorNotReady ? 0 : job_fail(j, q, "cublasSgemm_v2");
}

/* Untimed, before run r's window: poison its output, capture its graph. Graph
 * mode launches once first, so that lazy module loading and cuBLAS's first-call
 * set-up happen outside the capture. */
static int kernel_prepare(struct job_run *j, int r) {
  if (j->spec->graph) RC_TRY(launch(j, r, j->d_out[r]));
  CUDA_TRY(j, poison_launch(j->d_out[r], j->out_len, j->lane->stream));
  if (j->spec->graph) RC_TRY(kernel_capture(j, r));
  return 0;
}

static int kernel_warm(struct job_run *j, int r, bool graph) {
  if (graph) CUDA_TRY(j, cudaGraphLaunch(j->graph[r], j->lane->stream));
  else RC_TRY(launch(j, r, j->d_out[r]));
  return 0;
}

/* A cold batch: each of reps launches alone between two events, after an untimed
 * L2 flush on the same stream; the sample is their mean. */
static int kernel_sample_cold(struct job_run *j, int r, double *ms) {
  struct lane *l = j->lane;
  int reps = j->result->runs[r].timing.reps;
  double sum = 0;
  for (int i = 0; i < reps; i++) {
    CUDA_TRY(j, l2_flush_launch(j->flush, j->flush_len, j->flush + j->flush_len,
                                j->be->prop.multiProcessorCount, l->stream));
    CUDA_TRY(j, cudaEventRecord(l->start, l->stream));
    RC_TRY(launch(j, r, j->d_out[r]));
    CUDA_TRY(j, cudaEventRecord(l->stop, l->stream));
    CUDA_TRY(j, cudaEventSynchronize(l->stop));
    float elapsed = 0;
    CUDA_TRY(j, cudaEventElapsedTime(&elapsed, l->start, l->stop));
    sum += elapsed;
  }
  *ms = sum / reps;
  return 0;
}

/* One batch between two events: reps launches, or one graph of them (cold: see
 * kernel_sample_cold). */
static int kernel_sample(struct job_run *j, int r, bool graph, double *ms) {
  struct lane *l = j->lane;
  int reps = j->result->runs[r].timing.reps;
  if (j->spec->cold && !graph) return kernel_sample_cold(j, r, ms);
  CUDA_TRY(j, cudaEventRecord(l->start, l->stream));
  if (graph)
    CUDA_TRY(j, cudaGraphLaunch(j->graph[r], l->stream));
  else
    for (int i = 0; i < reps; i++) RC_TRY(launch(j, r, j->d_out[r]));
  CUDA_TRY(j, cudaEventRecord(l->stop, l->stream));
  CUDA_TRY(j, cudaEventSynchronize(l->stop));
  float elapsed = 0;
  CUDA_TRY(j, cudaEventElapsedTime(&elapsed, l->start, l->stop));
  *ms = (double)elapsed / reps;
  return 0;
}

/* ---- timed windows ---- */

static const struct run_ops kernel_ops = {kernel_prepare, kernel_warm, kernel_sample};

/* Batch b of run r. Graph mode times the graph and the same launches one by one,
 * alternating which goes first; without a graph (cuBLAS not captured) the stream
 * timing is the run's timing. */
static int batch(struct job_run *j, const struct run_ops *ops, int r, int b) {
  struct exp_timing *t = &j->result->runs[r].timing;
  if (!j->spec->graph) {
    RC_TRY(ops->sample(j, r, false, &t->samples_ms[b]));
  } else {
    for (int k = 0; k < 2; k++) {
      bool as_graph = k == b % 2;
      if (as_graph && j->graph[r]) RC_TRY(ops->sample(j, r, true, &t->samples_ms[b]));
      if (!as_graph) RC_TRY(ops->sample(j, r, false, &j->stream_ms[r][b]));
    }
    if (!j->graph[r]) t->samples_ms[b] = j->stream_ms[r][b];
  }
  t->n_samples = b + 1;
  RC_TRY(poll_cancel(j));
  backend_hooks_progress(j->hooks, r, b, t->samples_ms[b]);
  return 0;
}

static double median(const double *x, int n) {
  struct stats_summary s;
  stats_summarize(x, n, &s);
  return s.median;
}

/* After run r's window: contention, graph figures, the graph freed. */
static void run_finish(struct job_run *j, int r, bool contended) {
  struct exp_run *run = &j->result->runs[r];
  run->contended = contended;
  if (j->spec->graph) {
    int n = run->timing.n_samples;
    run->stream_us_per_launch = median(j->stream_ms[r], n) * 1e3;
    run->graph_us_per_launch = j->graph[r] ? median(run->timing.samples_ms, n) * 1e3 : 0;
  }
  if (j->graph[r]) (void)cudaGraphExecDestroy(j->graph[r]);
  j->graph[r] = NULL;
}

/* A run's clocks from NVML's readings before and after its window. */
static void clocks_fill(struct exp_clocks *c, const struct nvml_reading *before,
                        const struct nvml_reading *after) {
  c->valid = true;
  c->sm_mhz_before = before->sm_mhz;
  c->sm_mhz_after = after->sm_mhz;
  c->temp_c = before->temp_c > after->temp_c ? before->temp_c : after->temp_c;
  c->power_w = after->power_w;
  c->reasons = (before->reasons | after->reasons) & ~EXP_CLOCK_GPU_IDLE;
  c->throttled = (c->reasons & EXP_CLOCK_THROTTLED) != 0;
}

/* One timed window around runs[0..n): prepared untimed before it, then all their
 * warm-ups, then batch b over the runs still being timed, forwards when b is even,
 * backwards when odd, until each run's stopping rule ends it (exp_timing_stop: the
 * fixed batches, or the noise rule with its own wall clock per run). NVML's clocks
 * are read after the warm-ups and after the last batch. The last batch waited for
 * the window's work, so UNTIMED follows at once. */
static int window(struct job_run *j, const struct run_ops *ops, const int *runs, int n) {
  for (int i = 0; i < n; i++) RC_TRY(ops->prepare(j, runs[i]));
  RC_TRY(enter_timed(j));
  for (int i = 0; i < n; i++)
    for (int w = 0; w < j->result->runs[runs[i]].timing.warmup; w++)
      RC_TRY(ops->warm(j, runs[i], j->graph[runs[i]] != NULL));
  RC_TRY(poll_cancel(j));
  struct nvml_reading before, after;
  bool clocked = cuda_clocks_read(j->be, &before);
  double spent_s[EXP_MAX_VARIANTS] = {0};
  bool going[EXP_MAX_VARIANTS];
  int left = n;
  for (int i = 0; i < n; i++) going[i] = true;
  for (int b = 0; left > 0; b++) {
    for (int k = 0; k < n; k++) {
      int i = b % 2 == 0 ? k : n - 1 - k;
      if (!going[i]) continue;
      struct exp_timing *t = &j->result->runs[runs[i]].timing;
      double t0 = clock_mono_ms();
      RC_TRY(batch(j, ops, runs[i], b));
      spent_s[i] += (clock_mono_ms() - t0) / 1e3;
      if ((t->stopped_by = exp_timing_stop(j->spec, t, spent_s[i]))) going[i] = false, left--;
    }
  }
  clocked = clocked && cuda_clocks_read(j->be, &after);
  bool contended = leave_timed(j);
  for (int i = 0; i < n; i++) {
    struct exp_run *run = &j->result->runs[runs[i]];
    run_finish(j, runs[i], contended);
    run->timing.batches = run->timing.n_samples;
    if (clocked) clocks_fill(&run->clocks, &before, &after);
  }
  return 0;
}

/* The available runs in the spec's order: SEQUENTIAL one window per run,
 * ALTERNATING (interleaved, the default) one window around all. */
static int schedule(struct job_run *j, const struct run_ops *ops) {
  int runs[EXP_MAX_VARIANTS], n = 0;
  for (int r = 0; r < j->result->n_runs; r++)
    if (j->result->runs[r].available) runs[n++] = r;
  if (n == 0) return 0;
  if (j->spec->order == EXP_ORDER_ALTERNATING) return window(j, ops, runs, n);
  for (int i = 0; i < n; i++) RC_TRY(window(j, ops, &runs[i], 1));
  return 0;
}

/* ---- checks ---- */

/* After the last window: copies each run's output (the pipeline's is on the host
 * already) and each input given as data to the host, releases the device memory,
 * waits for the lane and reports IDLE. */
static int collect(struct job_run *j, float **h_out, const float **h_given) {
  const bool pipeline = j->spec->type == EXP_PIPELINE;
  const int n_inputs = exp_input_count(j->spec->type);
  size_t n = 0;
  for (int r = 0; r < j->result->n_runs; r++)
    if (j->result->runs[r].available && !pipeline) n += j->out_len;
  for (int slot = 0; slot < n_inputs; slot++)
    if (j->bj->input[slot]) n += j->bj->input[slot]->count;
  float *h = NULL;
  RC_TRY(cuda_lane_host(j->lane, n, &h, j->err, j->err_len));
  cudaStream_t st = j->lane->stream;
  for (int r = 0; r < j->result->n_runs; r++) {
    if (!j->result->runs[r].available) continue;
    if (pipeline) {
      h_out[r] = j->pin_out[r];
      continue;
    }
    h_out[r] = h;
    h += j->out_len;
    if (j->out_len)
      CUDA_TRY(j, cudaMemcpyAsync(h_out[r], j->d_out[r], j->out_len * sizeof(float),
                                  cudaMemcpyDeviceToHost, st));
  }
  for (int slot = 0; slot < n_inputs; slot++) {
    const struct backend_buffer *in = j->bj->input[slot];
    if (!in) continue;
    h_given[slot] = h;
    if (in->count) /* d_in: here, also when the buffer lives on another device */
      CUDA_TRY(j, cudaMemcpyAsync(h, j->d_in[slot], in->count * sizeof(float), cudaMemcpyDeviceToHost, st));
    h += in->count;
  }
  RC_TRY(release(j));
  enter_idle(j);
  return 0;
}

static int check_runs(struct job_run *j, float *const *h_out, const float *const *h_given) {
  struct reference *ref = NULL;
  int rc = reference_new(j->spec, h_given, &ref);
  if (rc != 0) {
    snprintf(j->err, j->err_len, "reference_new: %s", strerror(-rc));
    return rc == -ENOMEM ? -ENOMEM : -EINVAL;
  }
  if (reference_output_len(ref) != j->out_len) {
    snprintf(j->err, j->err_len, "reference has %zu outputs, the job %zu",
             reference_output_len(ref), j->out_len);
    reference_free(ref);
    return -EINVAL;
  }
  for (int r = 0; r < j->result->n_runs; r++) {
    struct exp_run *run = &j->result->runs[r];
    if (run->available) reference_check(ref, run->variant, h_out[r], &run->check);
  }
  reference_free(ref);
  return 0;
}

/* ---- run ---- */

/* Everything after SETUP: the parents' fences, setup, windows, copies, checks. */
static int run_job(struct job_run *j) {
  const bool pipeline = j->spec->type == EXP_PIPELINE;
  struct exp_shape shape;
  exp_output_shape(j->spec, &shape);
  j->out_len = (size_t)exp_shape_count(&shape);
  for (int i = 0; i < j->bj->n_after; i++)
    if (j->bj->after[i]) CUDA_TRY(j, cudaStreamWaitEvent(j->lane->stream, j->bj->after[i]->event, 0));
  RC_TRY(pipeline ? pipeline_plan_runs(j) : plan_kernel_runs(j));
  RC_TRY(pipeline ? pipeline_setup(j) : kernel_setup(j));
  RC_TRY(schedule(j, pipeline ? &pipeline_ops : &kernel_ops));
  float *h_out[EXP_MAX_VARIANTS] = {};
  const float *h_given[EXP_MAX_INPUTS] = {};
  RC_TRY(collect(j, h_out, h_given));
  return first_available(j) < 0 ? 0 : check_runs(j, h_out, h_given);
}

int cuda_run(struct backend *b, int lane, struct backend_job *job,
             const struct backend_hooks *hooks, struct exp_result *result, char *err,
             size_t err_len) {
  struct cuda_backend *be = (struct cuda_backend *)b->impl;
  memset(result, 0, sizeof *result);
  snprintf(result->backend, sizeof result->backend, "cuda");
  snprintf(result->device_name, sizeof result->device_name, "%.95s", be->prop.name);
  pthread_mutex_lock(&be->mu);
  result->ceilings = be->ceilings;
  pthread_mutex_unlock(&be->mu);
  job->output = NULL;
  job->done = NULL;
  if (cuda_unhealthy(be, err, err_len)) return -EIO;
  if (job->spec->fault) { /* an injected fault: a real sticky error, classified as any other */
    cudaSetDevice(be->device);
    cudaError_t e = trap_launch(be->lanes[lane].stream);
    return cuda_classify(be, be->lanes[lane].stream, e, "trap_kernel (injected fault)", err, err_len);
  }
  int rc = cuda_validate(job, err, err_len);
  if (rc != 0) return rc;

  struct job_run j = {};
  j.be = be;
  j.lane = &be->lanes[lane];
  j.bj = job;
  j.spec = job->spec;
  j.hooks = hooks;
  j.result = result;
  j.err = err;
  j.err_len = err_len;
  cudaError_t e = cudaSetDevice(be->device); /* the worker thread may be new */
  if (e != cudaSuccess) return job_fail(&j, e, "cudaSetDevice");
  if (backend_hooks_phase(hooks, BACKEND_PHASE_SETUP)) { /* canceled while it waited */
    snprintf(err, err_len, "canceled");
    j.idle = true;
    backend_hooks_phase(hooks, BACKEND_PHASE_IDLE);
    return -ECANCELED;
  }
  rc = run_job(&j);
  /* On failure: the lane's work completes, then the phases close in order. */
  int release_rc = release(&j);
  if (rc == 0) rc = release_rc;
  if (j.in_window) (void)leave_timed(&j);
  if (!j.idle) enter_idle(&j);
  for (int r = 0; r < result->n_runs; r++)
    if (result->runs[r].timing.n_samples > 0) exp_timing_summarize(&result->runs[r].timing);
  exp_result_finish(job->spec, result);
  return rc;
}
