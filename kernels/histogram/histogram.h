/* The histogram experiment (the next lecture's third: many threads, one table of
 * counts): hist[b] = how many x[i] fall in bin b of `bins` even bins over [-1, 1),
 * exact uint32 counts (the output's dtype is U32). Its descriptor and exact reference
 * (histogram.c), CPU stand-ins (histogram_cpu.c), kernels and launcher (histogram.cuh,
 * checked and timed beside CUB on the H200 before they moved here) and CUDA side
 * (histogram.cu). The binning rule below is compiled both as C and as CUDA, so the
 * reference and every kernel bin the same float the same way (like gen.h). */
#ifndef GPULAB_HISTOGRAM_H
#define GPULAB_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/core/experiment.h"

#ifdef __CUDACC__
#define HISTOGRAM_HD __host__ __device__ __forceinline__
#else
#define HISTOGRAM_HD static inline
#endif

/* Bins split [-1, 1) evenly: x counts iff -1 <= x < 1 (NaN, infinities and values
 * outside are dropped, as CUB drops them), in bin min(bins-1, (int)((x + 1) * scale))
 * with scale = 0.5f * bins, all in float. That is cub::DeviceHistogram::HistogramEven
 * with levels bins+1, lower -1, upper 1: CUB computes (x - lower) * (bins / (upper -
 * lower)), the same two roundings (x - -1 == x + 1 exactly; bins / 2 is exact). The
 * clamp only acts on x in (1 - 2^-23, 1), where x + 1 rounds up to 2 and CUB would
 * index bin `bins`, past its last; gen.h's values (a grid of 2^-23) never get there.
 * Returns the bin, or -1 for a dropped value. */
HISTOGRAM_HD int histogram_bin(float x, int bins, float scale) {
  if (!(x >= -1.0f && x < 1.0f)) return -1;
  int b = (int)((x + 1.0f) * scale);
  return b < bins - 1 ? b : bins - 1;
}

HISTOGRAM_HD float histogram_scale(int bins) { return 0.5f * (float)bins; }

#ifdef __cplusplus
extern "C" {
#endif

/* Params (exp_spec.p[]) and variants, in the descriptor's order. */
enum histogram_param { HISTOGRAM_N, HISTOGRAM_BINS };
enum histogram_variant {
  HISTOGRAM_NAIVE,
  HISTOGRAM_SHARED,
  HISTOGRAM_BEST,
  HISTOGRAM_CUB,
  HISTOGRAM_VARIANTS
};
/* n a request may give: x is 4 GiB there; counts are uint32, exact for any n. */
#define HISTOGRAM_MAX_N (1 << 30)
#define HISTOGRAM_MAX_BINS 65536
/* best: bins up to which a run's kept counts spare it the zeroing kernel (histogram.cuh) */
#define HISTOGRAM_BEST_KEPT_BINS 1024

/* hist[0..bins) = exact counts of x[0..n) by histogram_bin; returns the number of
 * values counted (the rest were dropped), or -1 when bins is outside 1..65536. */
long long histogram_ref(const float *x, size_t n, int bins, uint32_t *hist);

/* ---- private to kernels/histogram/: the CPU stand-ins (histogram_cpu.c) ----
 * Counts are exact whatever the order, so these follow the kernels' work only:
 * naive: one increment per element on the output. shared: per block of elements a
 * private histogram of at most 12288 bins (the kernel's 48 KiB pass; more bins take
 * more passes over x) in the scratch, merged into the output. best: the bins computed
 * by a vectorizable loop per chunk, counted into 4 interleaved copies (no store waits
 * on the one before), merged. */
exp_cpu_stand_in cpu_histogram_naive, cpu_histogram_shared, cpu_histogram_best;

#ifdef __cplusplus
}
#endif
#endif
