/* The histogram's CUDA side: each variant's plan (the kernel its run reports, with its
 * launch shape on this device) and launch through histogram_launch (histogram.cuh), the
 * counts written as uint32 into the run's output, the temp storage (CUB's; best's kept
 * counts up to 1024 bins) the run's own, kept by the job for all its launches
 * (temp_bytes sizes it). */
#include <stdio.h>

#include "kernels/backends/cuda/cuda_exp.h"
#include "kernels/histogram/histogram.cuh"

static int plan(const struct exp_spec *s, int variant, struct cuda_plan *p, char *why,
                size_t why_len) {
  const size_t n = (size_t)s->p[HISTOGRAM_N];
  const int bins = s->p[HISTOGRAM_BINS];
  if (bins < 1 || bins > HISTOGRAM_MAX_BINS) {
    snprintf(why, why_len, "histogram bins must be 1..%d, not %d", HISTOGRAM_MAX_BINS, bins);
    return -1;
  }
  cudaError_t e = cudaSuccess;
  switch (variant) {
  case HISTOGRAM_NAIVE:
    cuda_plan_set(p, KFUNC(histogram_naive_kernel<HISTOGRAM_BLOCK>), "histogram_naive_kernel<256>",
                  "thread per element, 256 per block; a global atomicAdd on its bin");
    p->block = dim3(HISTOGRAM_BLOCK);
    p->grid = dim3(ceil_div((long long)n, HISTOGRAM_BLOCK));
    return 0;
  case HISTOGRAM_SHARED: {
    cuda_plan_set(p, KFUNC(histogram_shared_kernel<HISTOGRAM_BLOCK>),
                  "histogram_shared_kernel<256>",
                  "grid-stride, a private histogram a block (<= 12288 bins a pass), merged");
    int per_pass = 0;
    p->block = dim3(HISTOGRAM_BLOCK);
    e = histogram_shared_plan(n, bins, &p->grid, &per_pass, &p->dyn_smem_bytes);
    break;
  }
  case HISTOGRAM_BEST: { /* a job keeps best's counts up to HISTOGRAM_BEST_KEPT_BINS */
    const bool packed = histogram_best_packed(bins), kept = bins <= HISTOGRAM_BEST_KEPT_BINS;
    if (packed)
      cuda_plan_set(p, KFUNC(histogram_best_kernel<true>), "histogram_best_kernel<packed>",
                    "persistent, 16-byte loads; 16-bit packed counters a block, swept");
    else if (kept)
      cuda_plan_set(p, KFUNC((histogram_best_kernel<false, true>)),
                    "histogram_best_kernel<u32,kept>",
                    "persistent, 16-byte loads; copies a bin in <= 4 KiB, added into the run's "
                    "counts, moved out by the last block");
    else
      cuda_plan_set(p, KFUNC(histogram_best_kernel<false>), "histogram_best_kernel<u32>",
                    "persistent, 16-byte loads; copies a bin in <= 4 KiB, coalesced merge");
    p->block = dim3(HISTOGRAM_BEST_BLOCK);
    p->grid = dim3(histogram_best_grid(n, NULL, bins, NULL));
    p->dyn_smem_bytes = histogram_best_smem(bins);
    e = histogram_best_raise(packed); /* before the backend's occupancy query */
    break;
  }
  case HISTOGRAM_CUB: /* no kernel of ours: the run's kernel info names the call */
    cuda_plan_set(p, NULL, "cub::DeviceHistogram::HistogramEven (CCCL)",
                  "CUB's privatized histograms (shared memory up to 256 bins, else global)");
    return 0;
  default: snprintf(why, why_len, "unknown histogram variant %d", variant); return -1;
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(why, why_len, "%s: %s", p->name, cudaGetErrorString(e));
    return -1;
  }
  return 0;
}

/* A run's kept temp: CUB's, or the counts and ticket best then keeps (one kernel). */
static cudaError_t temp_bytes(const struct exp_spec *spec, int variant, size_t *bytes) {
  const int bins = spec->p[HISTOGRAM_BINS];
  cudaError_t e = histogram_temp_bytes(variant, (size_t)spec->p[HISTOGRAM_N], bins, bytes);
  if (e == cudaSuccess && variant == HISTOGRAM_CUB && *bytes == 0)
    *bytes = 1; /* a NULL temp: CUB's size query */
  if (e == cudaSuccess) *bytes += histogram_kept_bytes(variant, bins);
  return e;
}

/* On the run's kept temp (none where temp_bytes sized none). */
static cudaError_t launch(const struct cuda_launch *a) {
  uint32_t *d_hist = reinterpret_cast<uint32_t *>(a->d_out); /* the counts' bits */
  return histogram_launch(a->variant, a->d_in[0], (size_t)a->spec->p[HISTOGRAM_N],
                          a->spec->p[HISTOGRAM_BINS], d_hist, a->output_zeroed, a->d_temp,
                          a->temp_bytes, true, a->stream);
}

extern const struct cuda_experiment cuda_exp_histogram = {plan, launch, NULL, NULL, temp_bytes};
