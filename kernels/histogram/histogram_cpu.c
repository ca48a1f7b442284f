/* The histogram's CPU stand-ins (histogram.h): exact counts by the shared binning rule,
 * the work distributed as its kernel's (histogram.cuh) is. The output holds uint32
 * counts in its 4-byte elements. */
#include <string.h>

#include "kernels/histogram/histogram.h"

#define SHARED_PASS_BINS 12288 /* the kernel's 48 KiB of shared memory a pass */
#define SHARED_BLOCK 65536     /* elements one private histogram counts */
#define BEST_CHUNK 4096        /* elements whose bins one vectorizable loop computes */

int cpu_histogram_naive(const struct exp_cpu_call *c) {
  const float *x = c->in[0];
  const size_t n = (size_t)c->spec->p[HISTOGRAM_N];
  const int bins = c->spec->p[HISTOGRAM_BINS];
  const float scale = histogram_scale(bins);
  uint32_t *hist = (uint32_t *)c->out;
  memset(hist, 0, (size_t)bins * sizeof *hist);
  for (size_t i = 0; i < n; i++) {
    const int b = histogram_bin(x[i], bins, scale);
    if (b >= 0) hist[b]++;
  }
  return 0;
}

/* histogram_shared_kernel's passes: bins split into passes of at most 12288; per pass
 * each block of elements counts those in the pass's bins privately (the scratch), then
 * adds its nonzero counts to the output. */
int cpu_histogram_shared(const struct exp_cpu_call *c) {
  const float *x = c->in[0];
  const size_t n = (size_t)c->spec->p[HISTOGRAM_N];
  const int bins = c->spec->p[HISTOGRAM_BINS];
  const float scale = histogram_scale(bins);
  const int passes = (bins + SHARED_PASS_BINS - 1) / SHARED_PASS_BINS;
  const int per_pass = (bins + passes - 1) / passes;
  uint32_t *hist = (uint32_t *)c->out, *h = (uint32_t *)c->scratch;
  memset(hist, 0, (size_t)bins * sizeof *hist);
  for (int lo = 0; lo < bins; lo += per_pass) {
    const int nb = bins - lo < per_pass ? bins - lo : per_pass;
    for (size_t base = 0; base < n; base += SHARED_BLOCK) {
      const size_t end = n - base < SHARED_BLOCK ? n : base + SHARED_BLOCK;
      memset(h, 0, (size_t)nb * sizeof *h);
      for (size_t i = base; i < end; i++) {
        const int b = histogram_bin(x[i], bins, scale) - lo; /* dropped: negative */
        if ((unsigned)b < (unsigned)nb) h[b]++;
      }
      for (int j = 0; j < nb; j++)
        if (h[j]) hist[lo + j] += h[j];
    }
  }
  return 0;
}

/* best: per chunk the bins of its elements in one loop without branches on the data
 * (the compiler vectorizes it), then counted into 4 interleaved copies of each bin
 * (element k into copy k % 4: an increment never waits on the one before it, as the
 * kernel's copies keep a warp's lanes apart), the copies summed at the end. */
int cpu_histogram_best(const struct exp_cpu_call *c) {
  const float *x = c->in[0];
  const size_t n = (size_t)c->spec->p[HISTOGRAM_N];
  const int bins = c->spec->p[HISTOGRAM_BINS];
  const float scale = histogram_scale(bins);
  uint32_t *copies = (uint32_t *)c->scratch, *hist = (uint32_t *)c->out;
  int32_t *idx = (int32_t *)(c->scratch + 4 * (size_t)bins);
  memset(copies, 0, 4 * (size_t)bins * sizeof *copies);
  for (size_t base = 0; base < n; base += BEST_CHUNK) {
    const size_t m = n - base < BEST_CHUNK ? n - base : BEST_CHUNK;
    for (size_t k = 0; k < m; k++) idx[k] = histogram_bin(x[base + k], bins, scale);
    for (size_t k = 0; k < m; k++)
      if (idx[k] >= 0) copies[4 * (size_t)idx[k] + (k & 3)]++;
  }
  for (int b = 0; b < bins; b++)
    hist[b] = copies[4 * (size_t)b] + copies[4 * (size_t)b + 1] + copies[4 * (size_t)b + 2] +
              copies[4 * (size_t)b + 3];
  return 0;
}
