/* The one timed window of gpulab, for both backends: a job's runs are prepared
 * untimed, the window opens, each run warms up, then batches go over the runs still
 * being timed, forwards when the batch number is even and backwards when odd, until
 * each run's stopping rule ends it (exp_timing_stop, each run on its own clock); the
 * window closes and says whether it was contended. What a launch, a sample or an
 * exclusive window is belongs to the backend, through struct exp_window_ops. */
#ifndef GPULAB_WINDOW_H
#define GPULAB_WINDOW_H

#include <stdbool.h>
#include "kernels/core/experiment.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A backend's side of a window; ctx is its job. Every int hook returns 0 or a
 * negative errno value (-ECANCELED, -ENOMEM, -EIO, ...), which ends the window there:
 * the driver then returns it without calling leave, and the backend closes the window
 * itself once the job's device work is complete. run is an index into result->runs. */
struct exp_window_ops {
  /* Untimed, before the window opens, once per run (CUDA: poison the output, capture
   * a graph). NULL: nothing. */
  int (*prepare)(void *ctx, int run);
  /* Opens the window (the engine's TIMED phase, which may wait for exclusivity):
   * -ECANCELED when the job was canceled while it waited. */
  int (*enter)(void *ctx);
  /* All of run's warm-ups; it may size timing.warmup and timing.reps first (the CPU's
   * budget). */
  int (*warm)(void *ctx, int run);
  /* Polled after the warm-ups and after every batch: -ECANCELED ends the window. */
  int (*poll)(void *ctx);
  /* One batch of run (batch b of it): its sample, ms per launch or pass, into *ms. */
  int (*sample)(void *ctx, int run, int batch, double *ms);
  /* After each sample was recorded: the engine's progress hook. NULL: none. */
  void (*progress)(void *ctx, int run, int batch, double ms);
  /* The device's clocks, after the warm-ups and after the last batch; false (or
   * NULL): no clocks, the runs' stay invalid. */
  bool (*read_clocks)(void *ctx, struct exp_clock_reading *reading);
  /* Closes the window, its device work complete: returns whether another job's work
   * overlapped it (the engine's UNTIMED phase). */
  bool (*leave)(void *ctx);
  /* After leave, once per run (CUDA: the graph's figures). NULL: nothing. */
  void (*finish)(void *ctx, int run);
};

/* One window around runs[0..n) of result (n >= 1). On success every one of them has
 * its samples, timing.batches = the samples taken, stopped_by, the summary, the
 * clocks (when read) and contended. Returns 0 or the first hook's error. */
int exp_window_run(const struct exp_spec *spec, struct exp_result *result, const int *runs, int n,
                   const struct exp_window_ops *ops, void *ctx);

/* Times every available run of result in spec's order: ALTERNATING one window around
 * all, SEQUENTIAL one window per run. Nothing available: 0, no window. */
int exp_window_schedule(const struct exp_spec *spec, struct exp_result *result,
                        const struct exp_window_ops *ops, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
