/* What the CUDA backend's tests share (test_gpu_backend.c: every experiment at odd and
 * large sizes, graphs, kernel facts; test_gpu_timing.c: ceilings, cold, noise, lanes,
 * exclusive windows, hooks; test_gpu_buffers.c: inputs as buffers, a chain, one
 * launch, buffers from threads, out of memory): the backend opened by their setup,
 * specs, hooks that record, and the checks of a run against the CPU reference. Each
 * exits 77 where no CUDA device answers. Timing is kept minimal (1 warm-up, 2 batches
 * of 2) so each runs in seconds. */
#ifndef GPULAB_TEST_GPU_BACKEND_COMMON_H
#define GPULAB_TEST_GPU_BACKEND_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/backends/backend.h"

extern struct backend *be;
struct exp_spec spec_new(enum exp_type type);
struct exp_spec transpose_spec(int m, int n);
struct exp_spec gemm_spec(int m, int n, int k);
struct exp_spec stencil_spec(int n, int radius);
struct exp_spec pipeline_spec(int chunk, int chunks, int terms);
int64_t input_count(const struct exp_spec *s, int slot);
int64_t output_count(const struct exp_spec *s);
void size_text(const struct exp_spec *s, char *buf, size_t len);
/* The phases ('S', 'T', 'U', 'I') and issued ('i') in the order they came, progress
 * calls, a cancel after some progress, what UNTIMED answers, and a callback on
 * issued and on each phase (for the chain). Called from the job's thread only. */
struct trace {
  char log[64];
  int n_log;
  int progress_calls, cancel_after; /* cancel_after < 0: never */
  bool contended;                   /* what UNTIMED returns */
  void (*on_issued)(void *user);
  void (*on_phase)(void *user, enum backend_phase phase);
  void *user;
};

void trace_init(struct trace *t);
void trace_put(struct trace *t, char c);
bool trace_canceled(void *arg);
void trace_progress(void *arg, int run, int batch, double ms);
bool trace_phase(void *arg, enum backend_phase phase);
void trace_issued(void *arg);
/* SETUP, issued, `windows` TIMED/UNTIMED pairs, IDLE. */
void check_phases(const struct trace *t, int windows);
int windows_of(const struct exp_spec *s, const struct exp_result *res);
int run_traced(int lane, struct backend_job *job, struct trace *t, struct exp_result *res,
               char *err, size_t err_len);
void job_drop(struct backend_job *job);
/* Every run must be available, pass its check and carry batches samples; in graph
 * mode also both per-launch figures (cuBLAS may not capture: its graph figure is 0
 * then, and its method says so). */
void expect_passed(const struct exp_spec *s, const struct exp_result *res);
/* Runs job on lane: it must succeed, pass, report the phases in order and hand
 * over an output of the output shape and a fence. Both are freed unless keep. */
void run_job_ok(int lane, struct backend_job *job, struct exp_result *res, bool keep);
void run_ok_on(int lane, const struct exp_spec *s, struct exp_result *res);
void run_ok(struct exp_spec s);
double now_s(void);

/* The mode --small (test_mode) skips the large sizes and the 4 TiB allocation (for
 * compute-sanitizer): gpu_small says so once gpu_backend_open ran. */
extern const char *const gpu_backend_modes[];
extern bool gpu_small;
/* A suite's setup: be, two lanes of CUDA device 0, or CHECK_SKIP; its teardown. */
int gpu_backend_open(void);
void gpu_backend_close(void);

#endif
