/* How an experiment that runs its own way (the pipeline, kernels/pipeline/pipeline.cu)
 * plugs into the CUDA backend's job runner: one job on one lane (struct cuda_job), the
 * ops by which it runs (struct cuda_job_ops), and the runner's helpers that ops call.
 * cuda_run.cu drives a job through them: plan_runs, setup (inputs, outputs, the job's
 * output and fence), the timed windows (prepare, warm, sample), then the outputs to the
 * host and the checks. The backend's own state stays private (cuda_backend_impl.h). */
#ifndef GPULAB_CUDA_JOB_OPS_H
#define GPULAB_CUDA_JOB_OPS_H

#include <cuda_runtime.h>
#include <stdbool.h>
#include <stddef.h>

#include "kernels/backends/backend.h" /* struct backend_job, the job's request */
#include "kernels/backends/cuda/cuda_exp.h"
#include "kernels/backends/cuda/cuda_lane.h"

struct cuda_backend; /* private: cuda_backend_impl.h */
struct cuda_job_ops;
struct cuda_user_job; /* cuda_user.cu */

/* One job on one lane: what backend_run was given, plus its device state. Only the
 * job's thread touches it. */
struct cuda_job {
  struct cuda_backend *be;
  struct lane *lane;
  struct backend_job *bj;
  const struct exp_spec *spec;
  const struct exp_desc *exp;         /* spec's experiment */
  const struct cuda_experiment *cexp; /* and its CUDA side */
  const struct cuda_job_ops *ops;     /* how it runs */
  const struct backend_hooks *hooks;
  struct exp_result *result;
  char *err;
  size_t err_len;
  bool in_window, idle;                    /* phases reported so far */
  float *allocs[2 * EXP_MAX_VARIANTS + 4]; /* device memory of this call only, freed at the end */
  int n_allocs;
  /* inputs: a given buffer's data (never written), or generated */
  const float *d_in[EXP_MAX_INPUTS];
  float *d_out[EXP_MAX_VARIANTS];          /* each run's own output */
  void *d_temp[EXP_MAX_VARIANTS];          /* each run's scratch for all its launches, or NULL */
  size_t temp_bytes[EXP_MAX_VARIANTS];     /* cuda_experiment.temp_bytes */
  size_t out_len;                          /* floats of one output */
  const struct cublas_fns *cublas;         /* loaded for EXP_VARIANT_CUBLAS runs */
  cudaGraphExec_t graph[EXP_MAX_VARIANTS]; /* graph mode: one batch (or one pass) */
  double stream_ms[EXP_MAX_VARIANTS][EXP_MAX_BATCHES]; /* graph mode: samples without it */
  float *flush;     /* cold: 2x the L2 to read before each timed launch (+ 4 floats: the sink) */
  size_t flush_len; /* floats read by a flush */
  void *priv;       /* the ops' own job state (ops->release frees it) */
  struct cuda_user_job *user; /* its users' kernels (cuda_user.cu), or NULL */
  /* Runs whose output is already in the lane's pinned staging (job_stage_output, in
   * their last batch): the stream was synchronized after the copy. */
  bool staged[EXP_MAX_VARIANTS];
  bool released; /* release ran after the last device work: nothing is left to wait for */
  /* The job's output is its one run's d_out, written by the window's one launch, and
   * handed over after the window (job_issue_run_output) instead of computed before. */
  bool output_from_window;
};

/* How one experiment runs on the CUDA backend. */
struct cuda_job_ops {
  /* Identity of every run (job_run_init), its kernel info (job_run_plan) or why it is
   * unavailable; sets result->n_runs. */
  int (*plan_runs)(struct cuda_job *j);
  /* The inputs (job_input_setup), one output per available run, anything else the
   * windows use, then the job's output and fence (job_issue_output). */
  int (*setup)(struct cuda_job *j);
  /* Untimed, before run r's window (poison its output, capture its graph). */
  int (*prepare)(struct cuda_job *j, int r);
  /* One warm-up of run r: a launch (or pass), or one launch of its graph. */
  int (*warm)(struct cuda_job *j, int r, bool graph);
  /* One sample of run r: ms per launch (or pass), as one graph or launch by launch. */
  int (*sample)(struct cuda_job *j, int r, bool graph, double *ms);
  /* After the windows: run r's output on the host, for its check (valid until the
   * job ends); NULL: the runner copies d_out[r] back. */
  const float *(*host_output)(struct cuda_job *j, int r);
  /* Frees priv and what it holds, after the lane's work is complete. Idempotent;
   * NULL: nothing. */
  void (*release)(struct cuda_job *j);
  /* Samples timed on the host: every window opens on an idle lane (else only an
   * exclusive one does). */
  bool host_timed;
  /* Checks every available run where its outputs are (before release), filling its
   * check; NULL: the runner copies the outputs back and checks them against the
   * experiment's reference on the host. */
  int (*check)(struct cuda_job *j);
  /* Run r's profile (spec.profile) where its kernels run; NULL: the backend's CUPTI
   * replay of a warm-up in this context. */
  int (*profile)(struct cuda_job *j, int r, struct exp_profile *out);
};

/* The first error of a job: classified (cuda_classify), its message in j->err. */
int job_fail(struct cuda_job *j, cudaError_t e, const char *call);

/* Computes the output of run r into out, on the lane's streams, untimed. */
typedef int (*compute_fn)(struct cuda_job *j, int r, float *out);

/* count floats of device memory, ordered on the lane's stream, freed by release. */
int job_alloc(struct cuda_job *j, size_t count, float **out);
/* Input slot: a given buffer (read in place, or copied from its device), or
 * generated on the GPU from the slot's seed (its descriptor's stream and scale). */
int job_input_setup(struct cuda_job *j, int slot);
/* Computes the job's output once with compute, records the done fence, hands both
 * to the engine (hooks->issued). */
int job_issue_output(struct cuda_job *j, compute_fn compute);
/* Ends a capture on the lane's stream; run r's graph when all went well. */
cudaError_t job_capture_end(struct cuda_job *j, int r, cudaError_t e);
/* Starts run r (variant, timing parameters, counted work); available until not. */
struct exp_run *job_run_init(struct cuda_job *j, int r, int variant, const char *method);
/* Run r's kernel info from its launch plan; unavailable (with why) when plan_rc != 0. */
int job_run_plan(struct cuda_job *j, struct exp_run *run, int plan_rc, const struct cuda_plan *p,
                 const char *why);

#endif
