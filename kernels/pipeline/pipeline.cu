/* The pipeline experiment on the CUDA backend: the lecture's synthesize kernel, and a
 * job's chunks uploaded, computed and downloaded over the lane's pipeline streams (the
 * lecture's plan, or the best plan), one pass at a time, issued stream by stream or as
 * one captured CUDA Graph, timed on the host, with a per-stream timeline of the last
 * pass: its own job ops (cuda_job_ops.h) and its CUDA descriptor. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backends/cuda/cuda_check.h"
#include "kernels/backends/cuda/cuda_job_ops.h"
#include "kernels/core/clock.h"
#include "kernels/core/gen.h"
#include "kernels/pipeline/pipeline.h"

#define SYNTHESIZE_BLOCK 256

static_assert(PIPELINE_MAX_STREAMS <= LANE_MAX_AUX, "a lane has a stream for each");

/* ---- the kernel ---- */

/* The lecture's synthesize: one thread per sample, 256 threads per block, grid
 * ceil(n/256); y[i] = sum_{k=1..terms} sinf(k * x[i]) / k. Compute-heavy per byte,
 * which is what lets copies of other chunks overlap it. */
__global__ __launch_bounds__(SYNTHESIZE_BLOCK) void synthesize_kernel(const float *x, float *y,
                                                                      int n, int terms) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)n) return;
  float xi = x[i];
  float sum = 0.0f;
  for (int k = 1; k <= terms; ++k) sum += sinf(k * xi) / k;
  y[i] = sum;
}

static int synthesize_plan(int n, struct cuda_plan *p, char *why, size_t why_len) {
  cuda_plan_set(p, KFUNC(synthesize_kernel), "synthesize_kernel",
                "thread per sample, 256 per block; sum of terms sinf(k x) / k");
  p->block = dim3(SYNTHESIZE_BLOCK);
  p->grid = dim3(ceil_div(n, SYNTHESIZE_BLOCK));
  p->dyn_smem_bytes = 0;
  return cuda_plan_grid_ok(p, why, why_len);
}

static cudaError_t synthesize_launch(const float *d_x, float *d_y, int n, int terms,
                                     cudaStream_t s) {
  struct cuda_plan p;
  char why[128];
  if (synthesize_plan(n, &p, why, sizeof why) != 0) return cudaErrorInvalidConfiguration;
  void *args[] = {&d_x, &d_y, &n, &terms};
  return cuda_plan_launch(&p, args, s);
}

/* ---- one job's passes ---- */

/* A job's state beside cuda_job's: where the passes upload, the pinned host side, and
 * the timeline's events. */
struct pipeline_job {
  float *d_x;                                /* where each pass uploads the input */
  float *pin_in, *pin_out[EXP_MAX_VARIANTS]; /* the host side, pinned (the lane's) */
  /* timeline: the pass's start, then each recorded op's start and end */
  cudaEvent_t tl_ev[1 + 2 * EXP_OP_COUNT * EXP_TIMELINE_CHUNKS];
  int n_tl_ev; /* created so far; destroyed by pipeline_release */
};

static struct pipeline_job *state(struct cuda_job *j) { return (struct pipeline_job *)j->priv; }

static const char *const METHOD_WALL =
    "host wall clock (CLOCK_MONOTONIC) around upload+kernel+download of all chunks and "
    "the wait for all streams";
static const char *const METHOD_WALL_BEST =
    "host wall clock (CLOCK_MONOTONIC) around one pass of the best plan (plan: chunks of "
    "1-16 MiB chosen from the size, 4 streams, issued chunk by chunk so that uploads and "
    "downloads of different chunks use both copy engines at once) and the wait for it";
static const char *const METHOD_WALL_BEST_GRAPH =
    "host wall clock (CLOCK_MONOTONIC) around one launch of a CUDA Graph of the best plan's "
    "pass (captured once, replayed per pass) and the wait for it";
static const char *const METHOD_WALL_GRAPH =
    "host wall clock (CLOCK_MONOTONIC) around one launch of a CUDA Graph of a whole pass "
    "(uploads, kernels, downloads over the streams, forked and joined with events) and "
    "the wait for it; stream_us_per_launch: the same pass issued stream by stream, in the "
    "same window";

/* Fork: the first n pipeline streams wait for all work queued on the lane's stream. */
static cudaError_t fork_aux(struct lane *l, int n) {
  cudaError_t e = cudaEventRecord(l->fork, l->stream);
  for (int i = 0; i < n && e == cudaSuccess; i++) e = cudaStreamWaitEvent(l->aux[i], l->fork, 0);
  return e;
}

/* Join: the lane's stream waits for all work queued on the first n pipeline streams. */
static cudaError_t join_aux(struct lane *l, int n) {
  cudaError_t e = cudaSuccess;
  for (int i = 0; i < n && e == cudaSuccess; i++) {
    e = cudaEventRecord(l->join[i], l->aux[i]);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(l->stream, l->join[i], 0);
  }
  return e;
}

/* Pipeline runs: one per stream-count entry, each with its plan (experiment.h): the
 * lecture's chunks over `count` streams, or best's (the variant stays the entry). */
static int pipeline_plan_runs(struct cuda_job *j) {
  const struct exp_spec *s = j->spec;
  for (int r = 0; r < s->n_variants; r++) {
    int entry = s->variants[r];
    struct exp_pipeline_plan plan;
    pipeline_plan(s, entry, &plan);
    const char *method = s->graph ? METHOD_WALL_GRAPH : METHOD_WALL;
    if (plan.best) method = plan.graph ? METHOD_WALL_BEST_GRAPH : METHOD_WALL_BEST;
    struct exp_run *run = job_run_init(j, r, entry, method);
    run->plan = plan;
    exp_run_label(s, r, run->label, sizeof run->label);
    struct cuda_plan p;
    char why[128] = "";
    int prc = synthesize_plan((int)plan.chunk, &p, why, sizeof why);
    RC_TRY(job_run_plan(j, run, prc, &p, why));
  }
  j->result->n_runs = s->n_variants;
  return 0;
}

/* Timeline: records chunk c's op start (end 0) or end (1) on s, when recording. */
static cudaError_t mark(cudaEvent_t *ev, int c, int op, int end, cudaStream_t s) {
  if (!ev || c >= EXP_TIMELINE_CHUNKS) return cudaSuccess;
  return cudaEventRecord(ev[1 + 2 * (c * EXP_OP_COUNT + op) + end], s);
}

/* Chunk c's op of one pass of plan p, on stream c % streams: the upload (pin_in to
 * d_x), the kernel (to d_out) or the download (to pin_out), with the timeline's
 * events around it when recording. *call names a failing call. */
static cudaError_t pipeline_op(struct cuda_job *j, const struct exp_pipeline_plan *p, int c, int op,
                               float *d_out, float *pin_out, cudaEvent_t *ev, const char **call) {
  const size_t at = (size_t)c * (size_t)p->chunk, len = (size_t)pipeline_chunk_len(p, c);
  const struct pipeline_job *pj = state(j);
  cudaStream_t st = j->lane->aux[c % p->streams];
  *call = "cudaEventRecord (timeline)";
  cudaError_t e = mark(ev, c, op, 0, st);
  if (e != cudaSuccess) return e;
  if (op == EXP_OP_UPLOAD) {
    *call = "cudaMemcpyAsync (upload)";
    e = cudaMemcpyAsync(pj->d_x + at, pj->pin_in + at, len * sizeof(float), cudaMemcpyHostToDevice,
                        st);
  } else if (op == EXP_OP_KERNEL) {
    *call = "synthesize_launch";
    e = synthesize_launch(pj->d_x + at, d_out + at, (int)len, j->spec->p[PIPELINE_TERMS], st);
  } else {
    *call = "cudaMemcpyAsync (download)";
    e = cudaMemcpyAsync(pin_out + at, d_out + at, len * sizeof(float), cudaMemcpyDeviceToHost, st);
  }
  if (e != cudaSuccess) return e;
  *call = "cudaEventRecord (timeline)";
  return mark(ev, c, op, 1, st);
}

/* One pass of plan p over the lane's first p->streams pipeline streams, issued only.
 * The lecture's order (breadth first): all uploads, then all kernels, then all
 * downloads; best's (depth first): chunk by chunk, so that each stream holds whole
 * chunks and chunk c's download runs beside chunk c+1's upload. No downloads when
 * pin_out is NULL. With ev (the job's tl_ev), events around each op and the pass's start. */
static cudaError_t pipeline_issue(struct cuda_job *j, const struct exp_pipeline_plan *p,
                                  float *d_out, float *pin_out, cudaEvent_t *ev,
                                  const char **call) {
  const int ops = pin_out ? EXP_OP_COUNT : EXP_OP_DOWNLOAD;
  *call = "cudaEventRecord (timeline)";
  cudaError_t e = ev ? cudaEventRecord(ev[0], j->lane->aux[0]) : cudaSuccess;
  if (p->depth_first) {
    for (int c = 0; c < p->chunks && e == cudaSuccess; c++)
      for (int op = 0; op < ops && e == cudaSuccess; op++)
        e = pipeline_op(j, p, c, op, d_out, pin_out, ev, call);
  } else {
    for (int op = 0; op < ops && e == cudaSuccess; op++)
      for (int c = 0; c < p->chunks && e == cudaSuccess; c++)
        e = pipeline_op(j, p, c, op, d_out, pin_out, ev, call);
  }
  return e;
}

/* The job's output (a compute_fn): uploads and kernels of one pass with run r's
 * plan, forked from and joined back into the lane's stream, no host wait. The
 * output is the device result, so the pass skips the downloads. */
static int pipeline_output(struct cuda_job *j, int r, float *out) {
  const struct exp_pipeline_plan *p = &j->result->runs[r].plan;
  const char *call = "cudaEventRecord (fork)";
  cudaError_t e = fork_aux(j->lane, p->streams);
  if (e == cudaSuccess) e = pipeline_issue(j, p, out, NULL, NULL, &call);
  if (e == cudaSuccess) {
    call = "cudaEventRecord (join)";
    e = join_aux(j->lane, p->streams);
  }
  return e == cudaSuccess ? 0 : job_fail(j, e, call);
}

/* Input (kept on the host, pinned, as the lecture's is), one device and one host
 * output per available run, the pipeline streams, then the job's output and fence. */
static int pipeline_setup(struct cuda_job *j) {
  struct lane *l = j->lane;
  const int n_runs = j->result->n_runs;
  const size_t total = j->out_len;
  int max_streams = 1;
  struct pipeline_job *pj = (struct pipeline_job *)calloc(1, sizeof *pj);
  if (!(j->priv = pj)) {
    snprintf(j->err, j->err_len, "host out of memory for the pipeline's state");
    return -ENOMEM;
  }
  RC_TRY(job_input_setup(j, 0));
  if (j->bj->input[0]) /* given: never written, so the passes upload elsewhere */
    RC_TRY(job_alloc(j, total, &pj->d_x));
  else /* generated: the passes upload the same bits over it */
    pj->d_x = (float *)j->d_in[0];
  for (int r = 0; r < n_runs; r++) {
    if (!j->result->runs[r].available) continue;
    RC_TRY(job_alloc(j, total, &j->d_out[r]));
    if (j->result->runs[r].plan.streams > max_streams)
      max_streams = j->result->runs[r].plan.streams;
  }
  void *pin = NULL;
  RC_TRY(cuda_lane_pinned(j->be, l, (size_t)(1 + n_runs) * (total ? total : 1) * sizeof(float),
                          &pin, j->err, j->err_len));
  pj->pin_in = (float *)pin;
  for (int r = 0; r < n_runs; r++) pj->pin_out[r] = pj->pin_in + (size_t)(1 + r) * total;
  if (total)
    CUDA_TRY(j, cudaMemcpyAsync(pj->pin_in, j->d_in[0], total * sizeof(float),
                                cudaMemcpyDeviceToHost, l->stream));
  RC_TRY(cuda_lane_aux(j->be, l, max_streams, j->err, j->err_len));
  return job_issue_output(j, pipeline_output);
}

/* Graph mode: captures one whole pass of run r, forked from and joined back into
 * the lane's stream inside the capture. */
static int pipeline_capture(struct cuda_job *j, int r) {
  const struct exp_pipeline_plan *p = &j->result->runs[r].plan;
  CUDA_TRY(j, cudaStreamBeginCapture(j->lane->stream, cudaStreamCaptureModeThreadLocal));
  const char *call = "cudaEventRecord (fork)";
  cudaError_t e = fork_aux(j->lane, p->streams);
  if (e == cudaSuccess) e = pipeline_issue(j, p, j->d_out[r], state(j)->pin_out[r], NULL, &call);
  cudaError_t joined = join_aux(j->lane,
                                p->streams); /* also after an error: the capture must end joined */
  if (e == cudaSuccess) e = joined;
  e = job_capture_end(j, r, e);
  return e == cudaSuccess ? 0 : job_fail(j, e, "graph capture of a pipeline pass");
}

/* Untimed, before the window: poison run r's outputs (device and host), capture
 * (graph mode, and best_graph always). */
static int pipeline_prepare(struct cuda_job *j, int r) {
  CUDA_TRY(j, poison_launch(j->d_out[r], j->out_len, j->lane->stream));
  memset(state(j)->pin_out[r], 0xFF, j->out_len * sizeof(float)); /* no queued work writes it */
  if (j->spec->graph || j->result->runs[r].plan.graph) RC_TRY(pipeline_capture(j, r));
  return 0;
}

/* One pass of run r and the wait for it (recording the timeline's events when ev
 * is not NULL). The window starts with the lane idle, so the pipeline streams need
 * no fork: every pass is complete before the next. */
static int pipeline_pass(struct cuda_job *j, int r, bool graph, cudaEvent_t *ev) {
  if (graph) {
    CUDA_TRY(j, cudaGraphLaunch(j->graph[r], j->lane->stream));
    CUDA_TRY(j, cudaStreamSynchronize(j->lane->stream));
    return 0;
  }
  const struct exp_pipeline_plan *p = &j->result->runs[r].plan;
  const char *call = "";
  cudaError_t e = pipeline_issue(j, p, j->d_out[r], state(j)->pin_out[r], ev, &call);
  if (e != cudaSuccess) return job_fail(j, e, call);
  for (int i = 0; i < p->streams; i++) CUDA_TRY(j, cudaStreamSynchronize(j->lane->aux[i]));
  return 0;
}

static int pipeline_warm(struct cuda_job *j, int r, bool graph) {
  return pipeline_pass(j, r, graph, NULL);
}

/* The timeline's events, created once per job (before a timed pass uses them). */
static int timeline_events(struct cuda_job *j) {
  struct pipeline_job *pj = state(j);
  for (; pj->n_tl_ev < (int)(sizeof pj->tl_ev / sizeof pj->tl_ev[0]); pj->n_tl_ev++)
    CUDA_TRY(j, cudaEventCreate(&pj->tl_ev[pj->n_tl_ev]));
  return 0;
}

/* Run r's timeline from the events of its last, completed pass: ms from its start. */
static int timeline_read(struct cuda_job *j, struct exp_run *run) {
  const int n = run->plan.streams, chunks = run->plan.chunks;
  const int shown = chunks < EXP_TIMELINE_CHUNKS ? chunks : EXP_TIMELINE_CHUNKS;
  const cudaEvent_t *ev = state(j)->tl_ev;
  for (int k = 0; k < shown * EXP_OP_COUNT; k++) {
    float start = 0, end = 0;
    CUDA_TRY(j, cudaEventElapsedTime(&start, ev[0], ev[1 + 2 * k]));
    CUDA_TRY(j, cudaEventElapsedTime(&end, ev[0], ev[2 + 2 * k]));
    int c = k / EXP_OP_COUNT;
    run->timeline[k] = (struct exp_timeline_op){(uint8_t)(c % n), (uint8_t)(k % EXP_OP_COUNT),
                                                (uint16_t)c, start, end};
  }
  run->n_timeline = shown * EXP_OP_COUNT;
  return 0;
}

/* One batch: reps passes timed on the host. */
static int pipeline_sample(struct cuda_job *j, int r, bool graph, double *ms) {
  struct exp_run *run = &j->result->runs[r];
  if (!j->spec->graph && run->plan.graph && j->graph[r]) graph = true; /* best_graph: graph only */
  int reps = run->timing.reps;
  /* The last sample's last pass issued stream by stream records its ops' events. */
  bool record = !graph && run->timing.n_samples == j->spec->timing.batches - 1;
  if (record) RC_TRY(timeline_events(j));
  double t0 = clock_mono_ms();
  cudaEvent_t *ev = record ? state(j)->tl_ev : NULL;
  for (int i = 0; i < reps; i++) RC_TRY(pipeline_pass(j, r, graph, i == reps - 1 ? ev : NULL));
  *ms = (clock_mono_ms() - t0) / reps;
  if (record) RC_TRY(timeline_read(j, run));
  return 0;
}

/* After the windows: each run's output is on the host already (its last pass's). */
static const float *pipeline_host_output(struct cuda_job *j, int r) { return state(j)->pin_out[r]; }

static void pipeline_release(struct cuda_job *j) {
  struct pipeline_job *p = state(j);
  if (!p) return;
  for (int i = 0; i < p->n_tl_ev; i++) (void)cudaEventDestroy(p->tl_ev[i]);
  free(p);
  j->priv = NULL;
}

static const struct cuda_job_ops pipeline_job_ops = {pipeline_plan_runs,
                                                     pipeline_setup,
                                                     pipeline_prepare,
                                                     pipeline_warm,
                                                     pipeline_sample,
                                                     pipeline_host_output,
                                                     pipeline_release,
                                                     true,
                                                     NULL,
                                                     NULL};

/* ---- the CUDA descriptor ---- */

extern const struct cuda_experiment cuda_exp_pipeline = {NULL, NULL, NULL, &pipeline_job_ops, NULL};
