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

/* Whether x[0..n) (n >= 3) holds a sample that stands apart from the others by more
 * than their noise: the sample farthest from the median, when it lies more than
 * STATS_APART_SIGMAS robust standard deviations (1.4826 times the median absolute
 * deviation, at least STATS_APART_NOISE_FLOOR of the median) and more than
 * STATS_APART_FRACTION of the median from it. Returns its index, or -1 (also for
 * n < 3 or a median <= 0); *apart (may be NULL) gets its distance over the median.
 * Cannot fail. */
#define STATS_APART_SIGMAS 8.0
#define STATS_APART_NOISE_FLOOR 0.005
#define STATS_APART_FRACTION 0.10
int stats_apart(const double *x, int n, double *apart);

#ifdef __cplusplus
}
#endif
#endif
