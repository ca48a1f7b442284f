/* Private to the CUDA backend's job runner (cuda_run.cu: kernel experiments, the
 * timed windows and the checks; kernels/pipeline/pipeline.cu: the pipeline's passes): the state
 * of one job on one lane, and the helpers both use. */
#ifndef GPULAB_CUDA_RUN_IMPL_H
#define GPULAB_CUDA_RUN_IMPL_H

#include "kernels/backends/cuda/cuda_backend_impl.h"
#include "kernels/core/clock.h"

/* One job on one lane: what backend_run was given, plus its device state. */
struct job_run {
  struct cuda_backend *be;
  struct lane *lane;
  struct backend_job *bj;
  const struct exp_spec *spec;
  const struct backend_hooks *hooks;
  struct exp_result *result;
  char *err;
  size_t err_len;
  bool in_window, idle;                /* phases reported so far */
  float *allocs[EXP_MAX_VARIANTS + 4]; /* device memory of this call only, freed at the end */
  int n_allocs;
  const float *d_in[EXP_MAX_INPUTS];   /* inputs: a given buffer's data (never written), or generated */
  float *d_x;                          /* pipeline: where each pass uploads the input */
  float *d_out[EXP_MAX_VARIANTS];      /* each run's own output */
  size_t out_len;                      /* floats of one output */
  float *pin_in, *pin_out[EXP_MAX_VARIANTS]; /* pipeline: the host side, pinned */
  const struct cublas_fns *cublas;
  cudaGraphExec_t graph[EXP_MAX_VARIANTS]; /* graph mode: one batch (pipeline: one pass) */
  double stream_ms[EXP_MAX_VARIANTS][EXP_MAX_BATCHES]; /* graph mode: samples without it */
  /* pipeline timeline: the pass's start, then each recorded op's start and end */
  cudaEvent_t tl_ev[1 + 2 * EXP_OP_COUNT * EXP_TIMELINE_CHUNKS];
  int n_tl_ev; /* created so far; destroyed by release */
  float *flush;      /* cold: 2x the L2 to read before each timed launch (+ 4 floats: the sink) */
  size_t flush_len;  /* floats read by a flush */
};

/* The first error of a job: classified (cuda_classify), its message in j->err. */
int job_fail(struct job_run *j, cudaError_t e, const char *call);

#define CUDA_TRY(j, call)                                                                   \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) return job_fail((j), e_, #call);                                 \
  } while (0)

/* Returns from the calling function with call's rc when it is not 0. */
#define RC_TRY(call)                                                                        \
  do {                                                                                      \
    int rc_ = (call);                                                                       \
    if (rc_ != 0) return rc_;                                                               \
  } while (0)

/* How one experiment prepares and times a run (see window). */
struct run_ops {
  int (*prepare)(struct job_run *j, int r); /* untimed: poison, graph capture */
  int (*warm)(struct job_run *j, int r, bool graph);
  int (*sample)(struct job_run *j, int r, bool graph, double *ms); /* per launch (pass) */
};

/* Computes the output of run r into out, on the lane's streams, untimed. */
typedef int (*compute_fn)(struct job_run *j, int r, float *out);

/* count floats of device memory, ordered on the lane's stream, freed by release. */
int job_alloc(struct job_run *j, size_t count, float **out);
/* Input slot: a given buffer (read in place, or copied from its device), or
 * generated on the GPU from the slot's seed (its descriptor's stream and scale). */
int job_input_setup(struct job_run *j, int slot);
/* Computes the job's output once with compute, records the done fence, hands both
 * to the engine (hooks->issued). */
int job_issue_output(struct job_run *j, compute_fn compute);
/* Ends a capture on the lane's stream; run r's graph when all went well. */
cudaError_t job_capture_end(struct job_run *j, int r, cudaError_t e);
/* Starts run r (variant, timing parameters, counted work); available until not. */
struct exp_run *job_run_init(struct job_run *j, int r, int variant, const char *method);
/* Run r's kernel info from its launch plan; unavailable (with why) when plan_rc != 0. */
int job_run_plan(struct job_run *j, struct exp_run *run, int plan_rc, const struct cuda_plan *p,
                 const char *why);

/* kernels/pipeline/pipeline.cu: */
int pipeline_plan_runs(struct job_run *j); /* one run per stream-count entry */
int pipeline_setup(struct job_run *j);     /* input, outputs, streams, the output */
extern const struct run_ops pipeline_ops;

#endif
