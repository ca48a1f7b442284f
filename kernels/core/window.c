/* The timed window (window.h): the one loop both backends time their runs with. */
#include "kernels/core/window.h"

#include "kernels/core/clock.h"

int exp_window_run(const struct exp_spec *spec, struct exp_result *result, const int *runs, int n,
                   const struct exp_window_ops *ops, void *ctx) {
  int rc;
  for (int i = 0; i < n && ops->prepare; i++)
    if ((rc = ops->prepare(ctx, runs[i]))) return rc;
  if ((rc = ops->enter(ctx))) return rc;
  for (int i = 0; i < n; i++)
    if ((rc = ops->warm(ctx, runs[i]))) return rc;
  if ((rc = ops->poll(ctx))) return rc;
  struct exp_clock_reading before, after;
  bool clocked = ops->read_clocks && ops->read_clocks(ctx, &before);
  double spent_s[EXP_MAX_VARIANTS] = {0}; /* each run's own clock for the noise rule */
  bool going[EXP_MAX_VARIANTS];
  int left = n;
  for (int i = 0; i < n; i++) going[i] = true;
  for (int b = 0; left > 0; b++) {
    for (int k = 0; k < n; k++) {
      int i = b % 2 == 0 ? k : n - 1 - k; /* forwards on even batches, backwards on odd */
      if (!going[i]) continue;
      struct exp_timing *t = &result->runs[runs[i]].timing;
      double t0 = clock_mono_s(), ms = 0;
      if ((rc = ops->sample(ctx, runs[i], b, &ms))) return rc;
      spent_s[i] += clock_mono_s() - t0;
      t->samples_ms[b] = ms;
      t->n_samples = b + 1;
      if ((rc = ops->poll(ctx))) return rc;
      if (ops->progress) ops->progress(ctx, runs[i], b, ms);
      if ((t->stopped_by = exp_timing_stop(spec, t, spent_s[i]))) going[i] = false, left--;
    }
  }
  clocked = clocked && ops->read_clocks(ctx, &after);
  bool contended = ops->leave(ctx);
  for (int i = 0; i < n; i++) {
    struct exp_run *run = &result->runs[runs[i]];
    run->contended = contended;
    run->timing.batches = run->timing.n_samples;
    exp_timing_summarize(&run->timing);
    if (clocked) exp_clocks_fill(&run->clocks, &before, &after);
    if (ops->finish) ops->finish(ctx, runs[i]);
  }
  return 0;
}

int exp_window_schedule(const struct exp_spec *spec, struct exp_result *result,
                        const struct exp_window_ops *ops, void *ctx) {
  int runs[EXP_MAX_VARIANTS], n = 0, rc = 0;
  for (int r = 0; r < result->n_runs; r++)
    if (result->runs[r].available) runs[n++] = r;
  if (n == 0) return 0;
  if (spec->order == EXP_ORDER_ALTERNATING) return exp_window_run(spec, result, runs, n, ops, ctx);
  for (int i = 0; i < n && rc == 0; i++) rc = exp_window_run(spec, result, &runs[i], 1, ops, ctx);
  return rc;
}
