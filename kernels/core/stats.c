/* Summary statistics of timing samples. */
#include "kernels/core/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void stats_summarize(const double *x, int n, struct stats_summary *out) {
  memset(out, 0, sizeof *out);
  if (n <= 0) return;
  if (n > STATS_MAX_N) n = STATS_MAX_N;
  double sorted[STATS_MAX_N];
  double sum = 0;
  for (int i = 0; i < n; i++) sum += x[i];
  out->mean = sum / n;
  memcpy(sorted, x, (size_t)n * sizeof *sorted);
  qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
  out->min = sorted[0];
  out->max = sorted[n - 1];
  out->median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  if (n > 1) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (x[i] - out->mean) * (x[i] - out->mean);
    out->stdev = sqrt(ss / (n - 1));
  }
}

double stats_quantile(const double *x, int n, double q) {
  if (n <= 0) return 0;
  if (n > STATS_MAX_N) n = STATS_MAX_N;
  double sorted[STATS_MAX_N];
  memcpy(sorted, x, (size_t)n * sizeof *sorted);
  qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
  double pos = (q < 0 ? 0 : q > 1 ? 1 : q) * (n - 1);
  int lo = (int)pos;
  if (lo >= n - 1) return sorted[n - 1];
  return sorted[lo] + (pos - lo) * (sorted[lo + 1] - sorted[lo]);
}
