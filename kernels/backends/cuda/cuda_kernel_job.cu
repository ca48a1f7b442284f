/* The kernel experiments on the CUDA backend (cuda_job.h's cuda_kernel_job_ops): every
 * run launches its variant through the experiment's CUDA descriptor (plan and launch,
 * kernels/<name>/<name>.cu) on the lane's stream, timed between events per batch of
 * reps launches, one by one or as a captured CUDA Graph, after an L2 flush per launch
 * when cold; cuBLAS variants call cuBLAS through the lane's handle. Users' kernels
 * (kernel:<id>) run in gpulab-runner (cuda_user.cu); a job with one times its built-ins
 * as the runner times those: each launch alone between events, after poisoning (cold:
 * after the L2 flush, in both). A launch timed alone finds an accumulating output
 * (exp_user.reset_zero: reduce, histogram) zeroed untimed, as the runner leaves a
 * user's, and its launcher skips its own zeroing: the window holds its kernels only. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kernels/backends/cuda/cuda_job.h"

static const char *const METHOD_EVENTS =
    "cuda events around each batch of reps launches on the job's stream; sample = batch "
    "time / reps (a variant that accumulates into its output zeroes it in each launch, "
    "inside the window)";
static const char *const METHOD_EVENTS_COLD =
    "cold: before each launch, untimed, an accumulating output zeroed, then a kernel reads "
    "a buffer twice the L2's size (cudaDeviceProp.l2CacheSize) on the job's stream, "
    "evicting inputs and outputs from L2; then cuda events around that one launch; sample "
    "= mean of the batch's reps launches, each timed alone (a flushed L2 stays cold for "
    "one launch only)";
static const char *const METHOD_EVENTS_GRAPH =
    "cuda events around one launch of a CUDA Graph of reps captured launches per batch; "
    "sample = batch time / reps; stream_us_per_launch: the same reps launched one by one, "
    "in the same window";
static const char *const METHOD_EVENTS_POISONED =
    "a job with users' kernels: before each launch, untimed, its output is poisoned (NaN; "
    "zeroed where kernels accumulate into it, the launch then zeroing nothing itself); "
    "then cuda events around that one launch, queued without waiting between launches; "
    "sample = mean of the batch's reps launches, each timed alone (users' kernels are "
    "timed so in gpulab-runner)";
static const char *const METHOD_RUNNER =
    "gpulab-runner (a process of its own, its own CUDA context, the job's buffers by CUDA "
    "IPC): before each launch, untimed, fresh inputs from a secret seed, the module's "
    "variables put back and the output poisoned (NaN); cuda events around each launch, "
    "then its output checked on the device; sample = mean of the batch's reps launches";
static const char *const METHOD_RUNNER_COLD =
    "gpulab-runner (a process of its own, its own CUDA context, the job's buffers by CUDA "
    "IPC), cold: before each launch, untimed, fresh inputs from a secret seed, the module's "
    "variables put back, the output poisoned (NaN), then the L2 flushed as for the "
    "built-ins (a kernel reads a buffer twice the L2's size, cudaDevAttrL2CacheSize, "
    "allocated once per runner) on the runner's stream; cuda events around that one launch, "
    "then its output checked on the device; sample = mean of the batch's reps launches, "
    "each timed alone";
static const char *const METHOD_EVENTS_NO_GRAPH =
    "cuda events around each batch of reps launches on the job's stream; sample = batch "
    "time / reps (graph asked, but cuBLAS could not be captured into a CUDA Graph: "
    "graph_us_per_launch is 0)";

/* ---- planning the runs ---- */

/* A cuBLAS run: available once cuBLAS loads and this lane has a handle (created on
 * the lane's first cuBLAS run, bound to its stream). */
static void run_cublas_init(struct cuda_job *j, struct exp_run *run) {
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

static bool is_cublas(const struct cuda_job *j, int variant) {
  const struct exp_variant *v = exp_variant_of(j->spec, variant);
  return v && (v->flags & EXP_VARIANT_CUBLAS) != 0;
}

/* True when the job names a user's kernel its runs can time (no graph, not cold): its
 * built-in runs are then timed as the runner times those (METHOD_EVENTS_POISONED). A
 * cold job times its built-ins flushed (METHOD_EVENTS_COLD) and the runner its users'
 * kernels the same way (METHOD_RUNNER_COLD). */
static bool poisoned_timing(const struct cuda_job *j) {
  const struct exp_spec *s = j->spec;
  bool users = false;
  for (int r = 0; r < s->n_variants; r++) users = users || exp_variant_is_user(s->variants[r]);
  return users && j->exp->user && !s->graph && !s->cold;
}

static const char *method_of(const struct cuda_job *j) {
  const struct exp_spec *s = j->spec;
  return s->graph             ? METHOD_EVENTS_GRAPH
         : s->cold            ? METHOD_EVENTS_COLD
         : poisoned_timing(j) ? METHOD_EVENTS_POISONED
                              : METHOD_EVENTS;
}

/* Every run's identity and its kernel info from the experiment's plan; a plan that
 * fails makes its run unavailable, with the reason. A plan without a kernel of ours (a
 * library's call: cuBLAS, CUB) gives the run its name and no launch shape. A user's
 * kernel is planned from the table of kernels (cuda_user_plan_run). */
static int kernel_plan_runs(struct cuda_job *j) {
  const struct exp_spec *s = j->spec;
  for (int r = 0; r < s->n_variants; r++) {
    int v = s->variants[r];
    if (exp_variant_is_user(v)) {
      RC_TRY(cuda_user_plan_run(
          j, r, job_run_init(j, r, v, s->cold ? METHOD_RUNNER_COLD : METHOD_RUNNER)));
      continue;
    }
    struct exp_run *run = job_run_init(j, r, v, method_of(j));
    exp_run_label(s, r, run->label, sizeof run->label);
    struct cuda_plan p;
    char why[128] = "";
    int prc = j->cexp->plan(s, v, &p, why, sizeof why);
    if (prc == 0 && (!p.func || is_cublas(j, v))) { /* a library's call: its name only */
      snprintf(run->kernel.name, sizeof run->kernel.name, "%s", p.name);
      snprintf(run->kernel.description, sizeof run->kernel.description, "%s", p.description);
      if (is_cublas(j, v) && j->cexp->cublas) {
        run_cublas_init(j, run);
      } else if (is_cublas(j, v)) {
        run->available = false;
        snprintf(run->reason, sizeof run->reason, "%s has no cuBLAS call", j->exp->name);
      }
      continue;
    }
    RC_TRY(job_run_plan(j, run, prc, &p, why));
  }
  j->result->n_runs = s->n_variants;
  return 0;
}

/* ---- launches ---- */

/* One launch of run r writing out, on the lane's stream, by the experiment's launcher
 * (cuBLAS variants: its cuBLAS call); zeroed: out holds zeros already
 * (cuda_launch.output_zeroed). Returns CUDA's status; cuBLAS's goes to *cst. Never
 * classifies, so it is safe inside a capture. */
static cudaError_t launch_raw(struct cuda_job *j, int r, float *out, bool zeroed,
                              cublasStatus_t *cst) {
  const struct cuda_launch a = {j->spec,         j->result->runs[r].variant,
                                j->d_in,         out,
                                j->lane->stream, j->cublas,
                                j->lane->cublas, zeroed,
                                j->d_temp[r],    j->temp_bytes[r]};
  if (is_cublas(j, a.variant)) {
    *cst = j->cexp->cublas(&a);
    return cudaSuccess;
  }
  return j->cexp->launch(&a);
}

static int cublas_fail(struct cuda_job *j, cublasStatus_t st) {
  /* cuBLAS has its own runtime, so its errors are not in our cudaGetLastError; a
   * sticky one shows on the stream. */
  cudaError_t e = cudaStreamQuery(j->lane->stream);
  if (e != cudaSuccess && e != cudaErrorNotReady) return job_fail(j, e, "cublasSgemm_v2");
  snprintf(j->err, j->err_len, "cublasSgemm_v2: %s", cublas_loader_status_name(st));
  return st == CUBLAS_STATUS_ALLOC_FAILED ? -ENOMEM : -EINVAL;
}

/* One launch of built-in run r writing out, zeroed as launch_raw's. */
static int launch_builtin(struct cuda_job *j, int r, float *out, bool zeroed) {
  cublasStatus_t cst = CUBLAS_STATUS_SUCCESS;
  cudaError_t e = launch_raw(j, r, out, zeroed, &cst);
  if (cst != CUBLAS_STATUS_SUCCESS) return cublas_fail(j, cst);
  return e == cudaSuccess ? 0 : job_fail(j, e, "kernel launch");
}

/* One launch of run r writing out (a compute_fn); a user's run's in its runner. */
static int launch(struct cuda_job *j, int r, float *out) {
  if (cuda_user_is_run(j, r)) return cuda_user_launch(j, r, out);
  return launch_builtin(j, r, out, false);
}

/* True when the job's whole timing is one launch of its one run on the lane's stream
 * (no warm-up, one batch of one rep, no graph, not cold, no noise rule, a built-in
 * kernel): that launch writes the job's output, which is then not computed before it
 * as well (a tiny job's launch and allocation fewer). Its fence and issued() follow
 * the window instead: its children wait that launch longer. */
static bool output_from_window(const struct cuda_job *j) {
  const struct exp_spec *s = j->spec;
  const struct exp_timing_params *t = &s->timing;
  return j->result->n_runs == 1 && j->result->runs[0].available && !cuda_user_is_run(j, 0) &&
         !poisoned_timing(j) && !s->graph && !s->cold && s->stop.max_noise <= 0 && t->warmup == 0 &&
         t->batches == 1 && t->reps == 1;
}

/* Run r's scratch for all its launches (cuda_launch.d_temp), zeroed, untimed; none
 * where the experiment sizes none. */
static int temp_setup(struct cuda_job *j, int r) {
  size_t bytes = 0;
  if (!j->cexp->temp_bytes) return 0;
  CUDA_TRY(j, j->cexp->temp_bytes(j->spec, j->result->runs[r].variant, &bytes));
  if (bytes == 0) return 0;
  float *d = NULL;
  RC_TRY(job_alloc(j, (bytes + sizeof(float) - 1) / sizeof(float), &d));
  CUDA_TRY(j, cudaMemsetAsync(d, 0, bytes, j->lane->stream));
  j->d_temp[r] = d;
  j->temp_bytes[r] = bytes;
  return 0;
}

/* Inputs, one output and its scratch per available run (a user's run's: a buffer its
 * runner opens), the flush buffer of a cold job (zeroed, untimed), then the job's
 * output and fence (after the window when output_from_window). */
static int kernel_setup(struct cuda_job *j) {
  for (int slot = 0; slot < exp_input_count(j->spec->type); slot++)
    RC_TRY(job_input_setup(j, slot));
  for (int r = 0; r < j->result->n_runs; r++)
    if (j->result->runs[r].available && !cuda_user_is_run(j, r)) {
      RC_TRY(job_alloc(j, j->out_len, &j->d_out[r]));
      RC_TRY(temp_setup(j, r));
    }
  if (j->user) RC_TRY(cuda_user_setup(j));
  if (j->spec->cold) {
    j->flush_len = l2_flush_floats(j->be->prop.l2CacheSize);
    RC_TRY(job_alloc(j, j->flush_len + 4, &j->flush));
    CUDA_TRY(j, cudaMemsetAsync(j->flush, 0, (j->flush_len + 4) * sizeof(float), j->lane->stream));
  }
  j->output_from_window = output_from_window(j);
  return j->output_from_window ? 0 : job_issue_output(j, launch);
}

/* Graph mode: captures run r's reps launches. A cuBLAS run that cannot be captured
 * keeps stream timing only (timing.method says so); any other failure fails. */
static int kernel_capture(struct cuda_job *j, int r) {
  struct exp_run *run = &j->result->runs[r];
  CUDA_TRY(j, cudaStreamBeginCapture(j->lane->stream, cudaStreamCaptureModeThreadLocal));
  cudaError_t e = cudaSuccess;
  cublasStatus_t cst = CUBLAS_STATUS_SUCCESS;
  for (int i = 0; i < run->timing.reps && e == cudaSuccess && cst == CUBLAS_STATUS_SUCCESS; i++)
    e = launch_raw(j, r, j->d_out[r], false, &cst);
  if (e == cudaSuccess && cst != CUBLAS_STATUS_SUCCESS) e = cudaErrorStreamCaptureInvalidated;
  e = job_capture_end(j, r, e);
  if (e == cudaSuccess) return 0;
  (void)cudaGetLastError();
  if (!is_cublas(j, run->variant)) return job_fail(j, e, "graph capture of the run's launches");
  run->timing.method = METHOD_EVENTS_NO_GRAPH;
  cudaError_t q = cudaStreamQuery(j->lane->stream); /* a sticky error would show here */
  return q == cudaSuccess || q == cudaErrorNotReady ? 0 : job_fail(j, q, "cublasSgemm_v2");
}

/* Untimed, before run r's window: poison its output, capture its graph. Graph
 * mode launches once first, so that lazy module loading and cuBLAS's first-call
 * set-up happen outside the capture. */
static int kernel_prepare(struct cuda_job *j, int r) {
  if (cuda_user_is_run(j, r)) return 0; /* the runner poisons before each launch */
  if (j->spec->graph) RC_TRY(launch(j, r, j->d_out[r]));
  CUDA_TRY(j, poison_launch(j->d_out[r], j->out_len, j->lane->stream));
  if (j->spec->graph) RC_TRY(kernel_capture(j, r));
  return 0;
}

static int kernel_warm(struct cuda_job *j, int r, bool graph) {
  if (cuda_user_is_run(j, r)) return cuda_user_warm(j, r);
  if (graph)
    CUDA_TRY(j, cudaGraphLaunch(j->graph[r], j->lane->stream));
  else
    RC_TRY(launch(j, r, j->d_out[r]));
  return 0;
}

/* What precedes each launch of a batch timed launch by launch, untimed on the same
 * stream: an L2 flush (cold), or poisoning its output with NaN (a job with users'
 * kernels, as gpulab-runner times theirs beside it). Either way an output its kernels
 * accumulate into (exp_user.reset_zero) is zeroed first instead, as the runner does a
 * user's, and the launch is told so (cuda_launch.output_zeroed). */
enum before_launch { BEFORE_FLUSH, BEFORE_POISON };

/* True when the job's kernels accumulate into their outputs (a reduce's sum, a
 * histogram's bins): a launch timed alone finds its output zeroed. */
static bool zeroed_alone(const struct cuda_job *j) {
  return j->exp->user && j->exp->user->reset_zero;
}

/* Adds the time between the lane's event pair k (its launch's) to *sum, waiting for it. */
static int alone_add(struct cuda_job *j, int k, double *sum) {
  struct lane *l = j->lane;
  float elapsed = 0;
  CUDA_TRY(j, cudaEventSynchronize(l->alone[2 * k + 1]));
  CUDA_TRY(j, cudaEventElapsedTime(&elapsed, l->alone[2 * k], l->alone[2 * k + 1]));
  *sum += elapsed;
  return 0;
}

/* A batch of reps launches, each alone between two events after its untimed `before`;
 * the sample is their mean. The launches are queued without waiting between them (up
 * to LANE_ALONE_PAIRS ahead), as gpulab-runner queues a user's: a start event then
 * fires behind the untimed step with its launch already queued, so the host's time to
 * issue the launch stays out of the window (waiting after each launch left the GPU idle
 * between its start event and its kernel, a few microseconds that a user's run did not
 * count). */
static int kernel_sample_alone(struct cuda_job *j, int r, enum before_launch before, double *ms) {
  struct lane *l = j->lane;
  const int reps = j->result->runs[r].timing.reps;
  const bool zero = zeroed_alone(j);
  double sum = 0;
  for (int i = 0; i < reps; i++) {
    const int k = i % LANE_ALONE_PAIRS;
    if (i >= LANE_ALONE_PAIRS) RC_TRY(alone_add(j, k, &sum)); /* the pair's last launch */
    if (zero)
      CUDA_TRY(j, cudaMemsetAsync(j->d_out[r], 0, j->out_len * sizeof(float), l->stream));
    else if (before == BEFORE_POISON)
      CUDA_TRY(j, poison_launch(j->d_out[r], j->out_len, l->stream));
    if (before == BEFORE_FLUSH) /* after the zeroing: its lines are written back untimed */
      CUDA_TRY(j, l2_flush_launch(j->flush, j->flush_len, j->flush + j->flush_len,
                                  j->be->prop.multiProcessorCount, l->stream));
    CUDA_TRY(j, cudaEventRecord(l->alone[2 * k], l->stream));
    RC_TRY(launch_builtin(j, r, j->d_out[r], zero));
    CUDA_TRY(j, cudaEventRecord(l->alone[2 * k + 1], l->stream));
  }
  for (int i = reps > LANE_ALONE_PAIRS ? reps - LANE_ALONE_PAIRS : 0; i < reps; i++)
    RC_TRY(alone_add(j, i % LANE_ALONE_PAIRS, &sum));
  *ms = sum / reps;
  return 0;
}

/* One batch between two events: reps launches, or one graph of them (cold, or with
 * users' kernels: kernel_sample_alone, and theirs in the runner). A run's last batch (launch by launch) also brings its output back to the
 * host in the same wait (job_stage_output): one synchronization. */
static int kernel_sample(struct cuda_job *j, int r, bool graph, double *ms) {
  struct lane *l = j->lane;
  int reps = j->result->runs[r].timing.reps;
  if (cuda_user_is_run(j, r)) return cuda_user_sample(j, r, ms);
  if (j->spec->cold && !graph) return kernel_sample_alone(j, r, BEFORE_FLUSH, ms);
  if (poisoned_timing(j) && !graph) return kernel_sample_alone(j, r, BEFORE_POISON, ms);
  CUDA_TRY(j, cudaEventRecord(l->start, l->stream));
  if (graph)
    CUDA_TRY(j, cudaGraphLaunch(j->graph[r], l->stream));
  else
    for (int i = 0; i < reps; i++) RC_TRY(launch(j, r, j->d_out[r]));
  CUDA_TRY(j, cudaEventRecord(l->stop, l->stream));
  if (!graph && !j->spec->graph && job_last_batch(j, r))
    RC_TRY(job_stage_output(j, r)); /* the copy after the stop event: untimed */
  else
    CUDA_TRY(j, cudaEventSynchronize(l->stop));
  float elapsed = 0;
  CUDA_TRY(j, cudaEventElapsedTime(&elapsed, l->start, l->stop));
  *ms = (double)elapsed / reps;
  return 0;
}

const struct cuda_job_ops cuda_kernel_job_ops = {
    kernel_plan_runs,  kernel_setup, kernel_prepare, kernel_warm, kernel_sample, NULL,
    cuda_user_release, false,        NULL,           NULL};
