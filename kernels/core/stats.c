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

int stats_apart(const double *x, int n, double *apart) {
  if (apart) *apart = 0;
  if (n < 3) return -1;
  if (n > STATS_MAX_N) n = STATS_MAX_N;
  double med = stats_quantile(x, n, 0.5), dev[STATS_MAX_N];
  if (!(med > 0)) return -1;
  int far = 0;
  for (int i = 0; i < n; i++) {
    dev[i] = fabs(x[i] - med);
    if (dev[i] > dev[far]) far = i;
  }
  double noise = 1.4826 * stats_quantile(dev, n, 0.5);
  if (noise < STATS_APART_NOISE_FLOOR * med) noise = STATS_APART_NOISE_FLOOR * med;
  double d = dev[far];
  if (apart) *apart = d / med;
  return d > STATS_APART_SIGMAS * noise && d > STATS_APART_FRACTION * med ? far : -1;
}
