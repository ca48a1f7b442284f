/* Running one job on one lane of the CUDA backend, through its experiment's job ops
 * (cuda_job_ops.h): the job's inputs (given buffers, or generated on the GPU with gen.h),
 * its output and done fence, its timed windows, the outputs back to the host and the
 * checks against its reference. It waits only on the lane's own streams and events; a
 * job's parents are waited for on the device (cudaStreamWaitEvent). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/backends/cuda/cuda_job.h"
#include "kernels/core/gen.h"
#include "kernels/core/reference.h"
#include "kernels/core/reference_cache.h"
#include "kernels/core/stats.h"
#include "kernels/core/window.h"

/* ---- errors and memory ---- */

int job_fail(struct cuda_job *j, cudaError_t e, const char *call) {
  return cuda_classify(j->be, j->lane->stream, e, call, j->err, j->err_len);
}

/* count floats of device memory, ordered on the lane's stream, freed by release. */
int job_alloc(struct cuda_job *j, size_t count, float **out) {
  RC_TRY(cuda_pool_alloc(j->be, j->lane->stream, count, out, j->err, j->err_len));
  j->allocs[j->n_allocs++] = *out;
  return 0;
}

/* Waits for all work queued on the lane's streams. */
static int sync_lane(struct cuda_job *j) {
  for (int i = 0; i < j->lane->n_aux; i++) CUDA_TRY(j, cudaStreamSynchronize(j->lane->aux[i]));
  CUDA_TRY(j, cudaStreamSynchronize(j->lane->stream));
  return 0;
}

/* Waits for the lane's fork streams, frees this call's device memory (ordered on the
 * lane's stream), graphs and the ops' state, then waits for the lane's stream.
 * Without wait (the lane's streams were synchronized after the job's last work,
 * and it forked none) it only queues the frees: a later job on the lane is ordered
 * after them, and the pool hands their memory to another stream only once they are
 * done. Idempotent; returns the first error, classified. Never frees job->output or
 * the inputs. */
static int release(struct cuda_job *j, bool wait) {
  struct lane *l = j->lane;
  int rc = 0;
  for (int i = 0; i < l->n_aux && wait; i++) {
    cudaError_t e = cudaStreamSynchronize(l->aux[i]);
    if (e != cudaSuccess && rc == 0) rc = job_fail(j, e, "cudaStreamSynchronize");
  }
  for (int i = j->n_allocs - 1; i >= 0; i--) {
    cudaError_t e = cudaFreeAsync(j->allocs[i], l->stream);
    if (e != cudaSuccess && rc == 0) rc = job_fail(j, e, "cudaFreeAsync");
  }
  j->n_allocs = 0;
  if (j->ops->release) j->ops->release(j); /* the fork streams are idle */
  for (int r = 0; r < EXP_MAX_VARIANTS; r++) {
    if (j->graph[r]) (void)cudaGraphExecDestroy(j->graph[r]);
    j->graph[r] = NULL;
  }
  cudaError_t e = wait ? cudaStreamSynchronize(l->stream) : cudaSuccess;
  if (e != cudaSuccess && rc == 0) rc = job_fail(j, e, "cudaStreamSynchronize");
  (void)cudaGetLastError(); /* errors ignored after the job had failed */
  j->released = rc == 0;
  return rc;
}

/* ---- phases ---- */

/* Opens a timed window: when exclusive (always for host-timed ops, whose wall clock
 * would otherwise count earlier work) the lane's earlier work is complete first. */
static int enter_timed(struct cuda_job *j) {
  if (j->bj->exclusive || j->ops->host_timed) RC_TRY(sync_lane(j));
  bool stop = backend_hooks_phase(j->hooks, BACKEND_PHASE_TIMED);
  j->in_window = true;
  if (stop) { /* canceled while it waited for the device */
    snprintf(j->err, j->err_len, "canceled");
    return -ECANCELED;
  }
  return 0;
}

/* Closes the window (its device work is complete); returns whether it was contended. */
static bool leave_timed(struct cuda_job *j) {
  j->in_window = false;
  return backend_hooks_phase(j->hooks, BACKEND_PHASE_UNTIMED);
}

static void enter_idle(struct cuda_job *j) {
  j->idle = true;
  backend_hooks_phase(j->hooks, BACKEND_PHASE_IDLE);
}

static int poll_cancel(struct cuda_job *j) {
  if (!backend_hooks_canceled(j->hooks)) return 0;
  snprintf(j->err, j->err_len, "canceled");
  return -ECANCELED;
}

/* ---- planning the runs ---- */

int job_run_unavailable(struct exp_run *run, const char *fmt, ...) {
  run->available = false;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(run->reason, sizeof run->reason, fmt, ap);
  va_end(ap);
  return 0;
}

/* Starts run r: variant, label, timing parameters; available until said otherwise. */
struct exp_run *job_run_init(struct cuda_job *j, int r, int variant, const char *method) {
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
static int kernel_occupancy(struct cuda_job *j, const struct cuda_plan *p,
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
int job_run_plan(struct cuda_job *j, struct exp_run *run, int plan_rc, const struct cuda_plan *p,
                 const char *why) {
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

int job_first_available(const struct cuda_job *j) {
  for (int r = 0; r < j->result->n_runs; r++)
    if (j->result->runs[r].available) return r;
  return -1;
}

/* ---- inputs and the job's output ---- */

/* Input slot: a given buffer is read in place; otherwise generated on the GPU from
 * the slot's seed with the stream and scale its descriptor names (the reference makes
 * the same numbers). */
int job_input_setup(struct cuda_job *j, int slot) {
  const struct exp_input_desc *in = &exp_desc(j->spec->type)->inputs[slot];
  const struct backend_buffer *given = j->bj->input[slot];
  if (given && given->device == j->be->device) {
    j->d_in[slot] = given->data;
    if (!j->result->input_path[0])
      snprintf(j->result->input_path, sizeof j->result->input_path, "local");
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
             given->device >= 0 && given->device < 64 && j->be->peer[given->device] ? "peer"
                                                                                    : "host");
    j->d_in[slot] = d;
    return 0;
  }
  struct exp_shape shape;
  exp_input_shape(j->spec, slot, &shape);
  size_t count = (size_t)exp_shape_count(&shape);
  uint64_t seed = j->spec->inputs[slot].value;
  if (count > LANE_GEN_MAX_FLOATS || j->ops != &cuda_kernel_job_ops) {
    float *d = NULL;
    RC_TRY(job_alloc(j, count, &d));
    CUDA_TRY(j, gen_launch(d, count, seed, in->stream, in->scale, j->lane->stream));
    j->d_in[slot] = d;
    return 0;
  }
  /* Small, and only ever read (struct cuda_launch: inputs are never written; users'
   * kernels get copies): kept on the lane for the jobs after it. */
  struct lane *l = j->lane;
  for (int g = 0; g < LANE_GEN_SLOTS; g++) {
    const struct lane_gen *c = &l->gen[g];
    if (c->data && c->count >= count && c->seed == seed && c->stream == in->stream &&
        c->scale == in->scale) {
      j->d_in[slot] = c->data;
      return 0;
    }
  }
  struct lane_gen *c = &l->gen[l->gen_next];
  if (c->data) CUDA_TRY(j, cudaFreeAsync(c->data, l->stream)); /* after its jobs' work */
  *c = (struct lane_gen){};
  float *d = NULL;
  RC_TRY(cuda_pool_alloc(j->be, l->stream, count, &d, j->err, j->err_len));
  *c = (struct lane_gen){d, count, seed, in->stream, in->scale};
  l->gen_next = (l->gen_next + 1) % LANE_GEN_SLOTS;
  j->d_in[slot] = d;
  cudaError_t e = gen_launch(d, count, seed, in->stream, in->scale, l->stream);
  if (e == cudaSuccess) return 0;
  (void)cudaFreeAsync(d, l->stream); /* nothing kept: the next job generates it again */
  *c = (struct lane_gen){};
  return job_fail(j, e, "gen_launch");
}

/* Takes p out of this call's allocations: it is the engine's now (the job's output). */
static void forget_alloc(struct cuda_job *j, const float *p) {
  for (int i = 0; i < j->n_allocs; i++)
    if (j->allocs[i] == p) {
      j->allocs[i] = j->allocs[--j->n_allocs];
      return;
    }
}

/* The job's output (made by compute, or run made_by's own when made_by >= 0), the done
 * fence recorded after it on the lane's stream, both handed to the engine (job->output,
 * job->done, then hooks->issued). With no run available the fence is still recorded
 * and job->output stays NULL. On failure nothing is handed over. */
static int issue_output(struct cuda_job *j, compute_fn compute, int made_by) {
  struct lane *l = j->lane;
  struct backend_buffer *out = NULL;
  struct backend_fence *done = (struct backend_fence *)calloc(1, sizeof *done);
  int first = job_first_available(j), rc = 0;
  cudaError_t e = cudaSuccess;
  if (!done) goto nomem;
  if (first >= 0 && (compute || made_by >= 0)) { /* compute NULL: the job has no output */
    out = (struct backend_buffer *)calloc(1, sizeof *out);
    if (!out) goto nomem;
    out->count = j->out_len;
    out->device = j->be->device;
    if (made_by >= 0) {
      out->data = j->d_out[made_by];
    } else {
      rc = cuda_pool_alloc(j->be, l->stream, out->count, &out->data, j->err, j->err_len);
      if (rc == 0) rc = compute(j, first, out->data);
      if (rc != 0) goto fail;
    }
  }
  e = cudaEventCreateWithFlags(&done->event, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventRecord(done->event, l->stream);
  if (e != cudaSuccess) {
    rc = job_fail(j, e, "cudaEventRecord (done fence)");
    goto fail;
  }
  if (made_by >= 0) forget_alloc(j, out->data);
  j->bj->output = out;
  j->bj->done = done;
  backend_hooks_issued(j->hooks);
  return 0;
nomem:
  snprintf(j->err, j->err_len, "host out of memory for the job's output");
  rc = -ENOMEM;
fail:
  if (done && done->event) (void)cudaEventDestroy(done->event);
  if (out && out->data && made_by < 0) (void)cudaFreeAsync(out->data, l->stream);
  (void)cudaGetLastError();
  free(out);
  free(done);
  return rc;
}

int job_issue_output(struct cuda_job *j, compute_fn compute) {
  return issue_output(j, compute, -1);
}

int job_issue_run_output(struct cuda_job *j, int r) { return issue_output(j, NULL, r); }

/* Ends the capture begun on the lane's stream. When everything captured (e is
 * cudaSuccess), instantiates the graph as run r's and uploads it. Returns the first
 * error, unclassified (a capture's errors do not stick). */
cudaError_t job_capture_end(struct cuda_job *j, int r, cudaError_t e) {
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

/* ---- the timed window's CUDA side (kernels/core/window.h) ---- */

static int window_prepare(void *ctx, int r) {
  struct cuda_job *j = (struct cuda_job *)ctx;
  return j->ops->prepare(j, r);
}

static int window_enter(void *ctx) { return enter_timed((struct cuda_job *)ctx); }

/* Run r's warm-ups: launches (passes), or launches of its graph. */
static int window_warm(void *ctx, int r) {
  struct cuda_job *j = (struct cuda_job *)ctx;
  for (int w = 0; w < j->result->runs[r].timing.warmup; w++)
    RC_TRY(j->ops->warm(j, r, j->graph[r] != NULL));
  return 0;
}

static int window_poll(void *ctx) { return poll_cancel((struct cuda_job *)ctx); }

/* Batch b of run r. Graph mode times the graph and the same launches one by one,
 * alternating which goes first; without a graph (cuBLAS not captured) the stream
 * timing is the run's timing. */
static int window_sample(void *ctx, int r, int b, double *ms) {
  struct cuda_job *j = (struct cuda_job *)ctx;
  if (!j->spec->graph) return j->ops->sample(j, r, false, ms);
  for (int k = 0; k < 2; k++) {
    bool as_graph = k == b % 2;
    if (as_graph && j->graph[r]) RC_TRY(j->ops->sample(j, r, true, ms));
    if (!as_graph) RC_TRY(j->ops->sample(j, r, false, &j->stream_ms[r][b]));
  }
  if (!j->graph[r]) *ms = j->stream_ms[r][b];
  return 0;
}

static void window_progress(void *ctx, int r, int b, double ms) {
  backend_hooks_progress(((struct cuda_job *)ctx)->hooks, r, b, ms);
}

/* NVML's clocks, after the warm-ups and after the last batch. */
static bool window_clocks(void *ctx, struct exp_clock_reading *out) {
  struct nvml_reading n;
  if (!cuda_clocks_read(((struct cuda_job *)ctx)->be, &n)) return false;
  *out = (struct exp_clock_reading){n.sm_mhz, n.temp_c, n.power_w, n.reasons};
  return true;
}

/* The last batch waited for the window's work, so UNTIMED follows at once. */
static bool window_leave(void *ctx) { return leave_timed((struct cuda_job *)ctx); }

static double median(const double *x, int n) {
  struct stats_summary s;
  stats_summarize(x, n, &s);
  return s.median;
}

/* After run r's window: graph figures, the graph freed. */
static void window_finish(void *ctx, int r) {
  struct cuda_job *j = (struct cuda_job *)ctx;
  struct exp_run *run = &j->result->runs[r];
  if (j->spec->graph) {
    int n = run->timing.n_samples;
    run->stream_us_per_launch = median(j->stream_ms[r], n) * 1e3;
    run->graph_us_per_launch = j->graph[r] ? median(run->timing.samples_ms, n) * 1e3 : 0;
  }
  if (j->graph[r]) (void)cudaGraphExecDestroy(j->graph[r]);
  j->graph[r] = NULL;
}

static const struct exp_window_ops cuda_window = {window_prepare, window_enter,  window_warm,
                                                  window_poll,    window_sample, window_progress,
                                                  window_clocks,  window_leave,  window_finish};

/* ---- checks ---- */

/* The lane's staging for the checks' copies: each available run's output (unless the
 * ops have it on the host), in run order, then each input given as data. The same
 * buffer for every call of one job (its size does not change within it). */
static int staging(struct cuda_job *j, float **h) {
  const bool on_host = j->ops->host_output != NULL;
  size_t n = 0;
  for (int r = 0; r < j->result->n_runs; r++)
    if (j->result->runs[r].available && !on_host) n += j->out_len;
  for (int slot = 0; slot < j->exp->n_inputs; slot++)
    if (j->bj->input[slot]) n += j->bj->input[slot]->count;
  return cuda_lane_host(j->lane, n, h, j->err, j->err_len);
}

/* Where run r's output goes in the staging that starts at h. */
static float *staged_output(const struct cuda_job *j, float *h, int r) {
  for (int k = 0; k < r; k++)
    if (j->result->runs[k].available) h += j->out_len;
  return h;
}

bool job_last_batch(const struct cuda_job *j, int r) {
  return j->ops->host_output == NULL && j->spec->stop.max_noise <= 0 &&
         j->result->runs[r].timing.n_samples == j->spec->timing.batches - 1;
}

int job_stage_output(struct cuda_job *j, int r) {
  float *h = NULL;
  RC_TRY(staging(j, &h));
  if (j->out_len)
    CUDA_TRY(j, cudaMemcpyAsync(staged_output(j, h, r), j->d_out[r], j->out_len * sizeof(float),
                                cudaMemcpyDeviceToHost, j->lane->stream));
  CUDA_TRY(j, cudaStreamSynchronize(j->lane->stream));
  j->staged[r] = true;
  return 0;
}

/* After the last window: copies each run's output (unless the ops have it on the host
 * already, or its last batch staged it) and each input given as data to the host,
 * releases the device memory, waits for the lane (unless everything was staged
 * already: nothing is left to wait for) and reports IDLE. */
static int collect(struct cuda_job *j, const float **h_out, const float **h_given) {
  const bool on_host = j->ops->host_output != NULL;
  const int n_inputs = j->exp->n_inputs;
  float *h = NULL, *base;
  RC_TRY(staging(j, &h));
  base = h;
  /* Forks, host-side work, or no run whose last batch synchronized after the rest. */
  bool waits = on_host || j->ops != &cuda_kernel_job_ops || job_first_available(j) < 0;
  cudaStream_t st = j->lane->stream;
  for (int r = 0; r < j->result->n_runs; r++) {
    if (!j->result->runs[r].available) continue;
    if (on_host) {
      h_out[r] = j->ops->host_output(j, r);
      continue;
    }
    h_out[r] = h = staged_output(j, base, r);
    if (j->out_len && !j->staged[r]) {
      CUDA_TRY(j, cudaMemcpyAsync(h, j->d_out[r], j->out_len * sizeof(float),
                                  cudaMemcpyDeviceToHost, st));
      waits = true;
    }
    h += j->out_len;
  }
  for (int slot = 0; slot < n_inputs; slot++) {
    const struct backend_buffer *in = j->bj->input[slot];
    if (!in) continue;
    h_given[slot] = h;
    if (in->count) /* d_in: here, also when the buffer lives on another device */
      CUDA_TRY(j, cudaMemcpyAsync(h, j->d_in[slot], in->count * sizeof(float),
                                  cudaMemcpyDeviceToHost, st));
    h += in->count;
    waits = true;
  }
  RC_TRY(release(j, waits));
  enter_idle(j);
  return 0;
}

/* Checks every available run against the reference: the one an identical earlier
 * job built when every input was generated (reference_cache.h), else a new one. */
static int check_runs(struct cuda_job *j, const float *const *h_out, const float *const *h_given) {
  struct reference *ref = NULL;
  bool reused;
  int rc = reference_cache_get(j->be->refs, j->spec, h_given, &ref, &reused);
  if (rc != 0) {
    snprintf(j->err, j->err_len, "reference_new: %s", strerror(-rc));
    return rc == -ENOMEM ? -ENOMEM : -EINVAL;
  }
  if (reference_output_len(ref) != j->out_len) {
    snprintf(j->err, j->err_len, "reference has %zu outputs, the job %zu",
             reference_output_len(ref), j->out_len);
    reference_cache_put(j->be->refs, ref);
    return -EINVAL;
  }
  for (int r = 0; r < j->result->n_runs; r++) {
    struct exp_run *run = &j->result->runs[r];
    if (run->available) reference_check(ref, run->variant, h_out[r], &run->check);
  }
  reference_cache_put(j->be->refs, ref);
  return 0;
}

/* ---- the profile ---- */

struct profiled {
  struct cuda_job *j;
  int r;
};

/* One launch of the run (a warm-up's, without its graph), complete: a fault is
 * classified as any other. */
static int profiled_launch(void *arg) {
  struct profiled *p = (struct profiled *)arg;
  RC_TRY(p->j->ops->warm(p->j, p->r, false));
  CUDA_TRY(p->j, cudaStreamSynchronize(p->j->lane->stream));
  return 0;
}

/* When the job asked: after its timed windows, each available run's kernels replayed
 * once under CUPTI (cuda_profiler.h), in a window of their own (the engine holds the
 * device exclusively for a profiled job's windows, so no other job's kernel becomes a
 * range), before the job's output goes to its children; users' kernels in
 * gpulab-runner, which profiles them in its own context. A profiler failure leaves the
 * run's profile unavailable, not the job failed. */
static int profile_runs(struct cuda_job *j) {
  if (!j->spec->profile || job_first_available(j) < 0) return 0;
  RC_TRY(sync_lane(j));
  RC_TRY(enter_timed(j));
  for (int r = 0; r < j->result->n_runs; r++) {
    struct exp_run *run = &j->result->runs[r];
    if (!run->available) continue;
    if (cuda_user_is_run(j, r)) { /* in the runner's own context */
      RC_TRY(cuda_user_profile(j, r, &run->profile));
      continue;
    }
    if (j->ops->profile) { /* where the ops run it */
      RC_TRY(j->ops->profile(j, r, &run->profile));
      continue;
    }
    if (!j->be->profiler) { /* refused at submission; a job from before a restart */
      exp_profile_unavailable(&run->profile, j->be->profiler_why);
      continue;
    }
    struct profiled p = {j, r};
    RC_TRY(cuda_profiler_run(j->be->profiler, j->lane->stream, profiled_launch, &p, &run->profile));
  }
  (void)leave_timed(j); /* whether it was contended says nothing of the timed figures */
  return 0;
}

/* ---- run ---- */

/* Everything after SETUP: the parents' fences, setup, windows, copies, checks. */
static int run_job(struct cuda_job *j) {
  struct exp_shape shape;
  exp_output_shape(j->spec, &shape);
  j->out_len = (size_t)exp_shape_count(&shape);
  for (int i = 0; i < j->bj->n_after; i++)
    if (j->bj->after[i])
      CUDA_TRY(j, cudaStreamWaitEvent(j->lane->stream, j->bj->after[i]->event, 0));
  RC_TRY(j->ops->plan_runs(j));
  RC_TRY(j->ops->setup(j));
  RC_TRY(exp_window_schedule(j->spec, j->result, &cuda_window, j));
  RC_TRY(profile_runs(j));
  if (j->output_from_window) RC_TRY(job_issue_run_output(j, job_first_available(j)));
  if (j->ops->check && job_first_available(j) >= 0) RC_TRY(j->ops->check(j));
  const float *h_out[EXP_MAX_VARIANTS] = {};
  const float *h_given[EXP_MAX_INPUTS] = {};
  RC_TRY(collect(j, h_out, h_given));
  return job_first_available(j) < 0 || j->ops->check ? 0 : check_runs(j, h_out, h_given);
}

int cuda_run(struct backend *b, int lane, struct backend_job *job,
             const struct backend_hooks *hooks, struct exp_result *result, char *err,
             size_t err_len) {
  struct cuda_backend *be = (struct cuda_backend *)b->impl;
  memset(result, 0, sizeof *result);
  snprintf(result->backend, sizeof result->backend, "cuda");
  snprintf(result->device_name, sizeof result->device_name, "%.95s", be->prop.name);
  /* The limit at the job's size, in its timing mode: users' kernels and a problem's
   * runs time each launch alone (and the built-ins beside them too), unless graph. */
  bool alone = job->spec->type == EXP_PROBLEM;
  for (int r = 0; r < job->spec->n_variants; r++)
    alone = alone || (exp_variant_is_user(job->spec->variants[r]) && !job->spec->graph);
  pthread_mutex_lock(&be->mu);
  result->ceilings = be->ceilings;
  exp_limit_of(job->spec, &be->limits, alone, &result->limit);
  pthread_mutex_unlock(&be->mu);
  job->output = NULL;
  job->done = NULL;
  if (cuda_unhealthy(be, err, err_len)) return -EIO;
  if (job->spec->fault) { /* an injected fault: a real sticky error, classified as any other */
    cudaSetDevice(be->device);
    cudaError_t e = trap_launch(be->lanes[lane].stream);
    return cuda_classify(be, be->lanes[lane].stream, e, "trap_kernel (injected fault)", err,
                         err_len);
  }
  int rc = cuda_validate(job, err, err_len);
  if (rc != 0) return rc;

  struct cuda_job j = {};
  j.be = be;
  j.lane = &be->lanes[lane];
  j.bj = job;
  j.spec = job->spec;
  j.exp = exp_desc(job->spec->type);
  j.cexp = cuda_experiment_of(job->spec->type);
  j.ops = j.cexp->job ? j.cexp->job : &cuda_kernel_job_ops;
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
  /* On failure: the lane's work completes, then the phases close in order (after
   * collect's release nothing more went to the device). */
  int release_rc = j.released ? 0 : release(&j, true);
  if (rc == 0) rc = release_rc;
  if (j.in_window) (void)leave_timed(&j);
  if (!j.idle) enter_idle(&j);
  for (int r = 0; r < result->n_runs; r++)
    if (result->runs[r].timing.n_samples > 0) exp_timing_summarize(&result->runs[r].timing);
  exp_result_finish(job->spec, result);
  return rc;
}
