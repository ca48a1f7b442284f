/* Summary statistics of timing samples. Pure functions, no allocation. */
#ifndef GPULAB_STATS_H
#define GPULAB_STATS_H

#ifdef __cplusplus
extern "C" {
#endif

struct stats_summary {
  double median, min, max, mean, stdev; /* stdev: sample (n - 1); 0 when n < 2 */
};

#define STATS_MAX_N 1024

/* Summarizes x[0..n), n <= STATS_MAX_N (more are ignored). n == 0 gives all
 * zeros. x is not modified. Cannot fail. */
void stats_summarize(const double *x, int n, struct stats_summary *out);

/* The q-quantile (0 <= q <= 1) of x[0..n), n <= STATS_MAX_N, interpolated linearly
 * between order statistics (numpy's default); 0 when n == 0. Cannot fail. */
double stats_quantile(const double *x, int n, double q);

#ifdef __cplusplus
}
#endif
#endif
