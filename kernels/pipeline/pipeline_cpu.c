/* The pipeline on the CPU backend (pipeline.h): chunks over emulated streams, one
 * thread per stream, the ops in the plan's order, each op's time on the timeline. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kernels/core/clock.h"
#include "kernels/pipeline/pipeline.h"

/* The pipeline's kernel (synthesize): y[i] = sum_{k=1..terms} sinf(k x[i]) / k in
 * float, the same operation order as the CUDA kernel. */
static void cpu_synthesize(const float *x, float *y, int n, int terms) {
  for (int i = 0; i < n; i++) {
    float sum = 0.0f;
    for (int k = 1; k <= terms; k++) sum += sinf((float)k * x[i]) / (float)k;
    y[i] = sum;
  }
}

static void copy_floats(const float *src, float *dst, size_t n) {
  if (n) memcpy(dst, src, n * sizeof *src);
}

struct pass_share {
  const struct exp_cpu_call *call;
  const struct exp_pipeline_plan *plan;
  float *d_in, *d_out; /* the "device" buffers: halves of the call's scratch */
  int t;               /* this thread's stream */
  double t0;           /* the pass's start (clock_mono_ms) */
};

/* Chunk c's op, begun at start and ending now, into the recording run's timeline. */
static void record_op(const struct pass_share *sh, int c, int op, double start) {
  struct exp_run *run = sh->call->timeline;
  if (!run || c >= EXP_TIMELINE_CHUNKS) return;
  run->timeline[c * EXP_OP_COUNT + op] = (struct exp_timeline_op){
      (uint8_t)sh->t, (uint8_t)op, (uint16_t)c, (float)(start - sh->t0),
      (float)(clock_mono_ms() - sh->t0)};
}

/* Chunk c's op (upload, synthesize or download), as a stream would run it. */
static void pass_op(const struct pass_share *sh, int c, int op) {
  const struct exp_cpu_call *call = sh->call;
  const size_t at = (size_t)c * (size_t)sh->plan->chunk;
  const size_t len = (size_t)pipeline_chunk_len(sh->plan, c);
  double start = clock_mono_ms();
  if (op == EXP_OP_UPLOAD)
    copy_floats(call->in[0] + at, sh->d_in + at, len);
  else if (op == EXP_OP_KERNEL)
    cpu_synthesize(sh->d_in + at, sh->d_out + at, (int)len, call->spec->p[PIPELINE_TERMS]);
  else
    copy_floats(sh->d_out + at, call->out + at, len);
  record_op(sh, c, op, start);
}

/* Stream t's work: chunks c with c % streams == t, in the plan's order: the
 * lecture's (all uploads, then all kernels, then all downloads) or best's (chunk by
 * chunk); a stream runs in order. */
static void *pass_worker(void *arg) {
  const struct pass_share *sh = arg;
  const struct exp_pipeline_plan *p = sh->plan;
  if (p->depth_first) {
    for (int c = sh->t; c < p->chunks; c += p->streams)
      for (int op = 0; op < EXP_OP_COUNT; op++) pass_op(sh, c, op);
  } else {
    for (int op = 0; op < EXP_OP_COUNT; op++)
      for (int c = sh->t; c < p->chunks; c += p->streams) pass_op(sh, c, op);
  }
  return NULL;
}

int pipeline_cpu_pass(const struct exp_cpu_call *call) {
  pthread_t threads[PIPELINE_MAX_STREAMS];
  struct pass_share shares[PIPELINE_MAX_STREAMS];
  struct exp_pipeline_plan plan;
  pipeline_plan(call->spec, call->entry, &plan);
  int started = 1, rc = 0, streams = plan.streams;
  double t0 = clock_mono_ms();
  float *d_in = call->scratch, *d_out = call->scratch + plan.total;
  for (int t = 0; t < streams; t++)
    shares[t] = (struct pass_share){call, &plan, d_in, d_out, t, t0};
  for (; started < streams; started++) {
    if (pthread_create(&threads[started], NULL, pass_worker, &shares[started]) != 0) {
      snprintf(call->err, call->err_len, "cannot start a thread for stream %d", started);
      rc = -ENOMEM;
      break;
    }
  }
  if (rc == 0) pass_worker(&shares[0]);
  for (int t = 1; t < started; t++) pthread_join(threads[t], NULL);
  int chunks = plan.chunks;
  if (rc == 0 && call->timeline)
    call->timeline->n_timeline = EXP_OP_COUNT *
                                 (chunks < EXP_TIMELINE_CHUNKS ? chunks : EXP_TIMELINE_CHUNKS);
  return rc;
}

size_t pipeline_cpu_scratch_floats(const struct exp_spec *s) {
  return 2 * (size_t)s->p[PIPELINE_CHUNK] * (size_t)s->p[PIPELINE_CHUNKS];
}

/* best maps to threads for its streams over its plan's chunks, chunk by chunk;
 * best_graph has no CPU counterpart. */
void pipeline_cpu_describe(const struct exp_spec *s, struct exp_run *run) {
  pipeline_plan(s, run->variant, &run->plan);
  const struct exp_pipeline_plan *p = &run->plan;
  if (p->graph) {
    run->available = false;
    snprintf(run->reason, sizeof run->reason,
             "CUDA Graphs need the CUDA backend (the best run is the same plan without one)");
    return;
  }
  snprintf(run->kernel.name, sizeof run->kernel.name, "cpu_synthesize");
  if (!p->best) {
    snprintf(run->kernel.description, sizeof run->kernel.description,
             "upload, synthesize, download per chunk; s threads stand in for s streams");
    return;
  }
  snprintf(run->kernel.description, sizeof run->kernel.description,
           "best plan: upload, synthesize, download chunk by chunk; threads stand in for streams");
  snprintf(run->mapped_to, sizeof run->mapped_to, "cpu: %d threads, %d chunks of %lld floats",
           p->streams, p->chunks, (long long)p->chunk);
}
