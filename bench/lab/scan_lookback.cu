/* Where best's scan loses to the copy (issue 36): best's kernels (scan.cuh), the
 * register form reading more windows of the look-back a step, at other sleeps and block
 * sizes, and with fewer blocks an SM (dynamic shared memory that leaves room for no
 * more), and the staged form (the tile in shared memory instead of registers: more
 * tiles an SM, best's since run 3), with its stores marked evict-first (best's) and not;
 * beside CUB and a device-to-device copy of the same bytes, at n = 2^22, 2^24 and 2^26.
 * Each timed back to back like bench_best (median of 9 batches of 20 launches after 5
 * warm-ups, the status zeroing included but where best runs as a job launches it, on
 * status words kept from the last launch) and the last launch's output checked exactly:
 * x is random -1, 0 or 1, so every prefix is a small integer a float holds exactly,
 * whatever the order of the additions. Not a test. A resident grid keeping each block's
 * next tiles loading was tried and lost (6ea3159, bench/RESULTS.md).
 *   scan_lookback */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/batch_timer.h"
#include "bench/cuda_try.h"
#include "kernels/scan/scan.cuh"

static cudaStream_t stream;

typedef void (*best_fn)(const float *, float *, size_t, unsigned long long *);

struct candidate {
  const char *name;
  best_fn kernel; /* NULL: CUB */
  int block;
  int per_sm; /* > 0: dynamic shared memory that lets only this many blocks an SM run */
  bool kept;  /* best through scan_launch as a job launches it: temp kept, one kernel */
};

static const struct candidate candidates[] = {
    {"best as a job launches it (its kept status words: one kernel)", scan_best_kernel<128, true>,
     128, 0, true},
    {"register form 128, 1 window a step (best's before)", scan_best_kernel<128, true, 512, 1>, 128,
     0, false},
    {"best 128, 2 windows a step", scan_best_kernel<128, true, 512, 2>, 128, 0, false},
    {"best 128, 4 windows a step", scan_best_kernel<128, true, 512, 4>, 128, 0, false},
    {"best 128, 8 windows a step", scan_best_kernel<128, true, 512, 8>, 128, 0, false},
    {"best 128, 4 windows, spin", scan_best_kernel<128, true, 0, 4>, 128, 0, false},
    {"best 64, 4 windows a step", scan_best_kernel<64, true, 512, 4>, 64, 0, false},
    {"best 256, 4 windows a step", scan_best_kernel<256, true, 512, 4>, 256, 0, false},
    {"register form, 8 blocks an SM", scan_best_kernel<128, true>, 128, 8, false},
    {"register form, 6 blocks an SM", scan_best_kernel<128, true>, 128, 6, false},
    {"register form, 4 blocks an SM", scan_best_kernel<128, true>, 128, 4, false},
    {"staged in shared memory, 128, evict-first stores (best's)", scan_staged_kernel<128, true>,
     128, 0, false},
    {"staged, 128, plain stores (best's before)", scan_staged_kernel<128>, 128, 0, false},
    {"staged in shared memory, 64", scan_staged_kernel<64>, 64, 0, false},
    {"staged, 128, 9 blocks an SM", scan_staged_kernel<128>, 128, 9, false},
    {"cub", NULL, 0, 0, false},
};

/* Dynamic shared memory that leaves room for only per_sm of c's blocks on an SM (its
 * limit raised to it), 0 when per_sm is 0; the largest carveout either way. */
static size_t throttle_smem(const struct candidate *c) {
  if (!c->kernel) return 0;
  CUDA_OR_EXIT(cudaFuncSetAttribute((const void *)c->kernel,
                                    cudaFuncAttributePreferredSharedMemoryCarveout,
                                    (int)cudaSharedmemCarveoutMaxShared));
  if (c->per_sm <= 0) return 0;
  cudaFuncAttributes fa;
  CUDA_OR_EXIT(cudaFuncGetAttributes(&fa, (const void *)c->kernel));
  int per_sm_bytes = 0, reserved = 0;
  CUDA_OR_EXIT(
      cudaDeviceGetAttribute(&per_sm_bytes, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
  CUDA_OR_EXIT(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, 0));
  const size_t smem = (size_t)per_sm_bytes / c->per_sm - reserved - fa.sharedSizeBytes;
  CUDA_OR_EXIT(cudaFuncSetAttribute((const void *)c->kernel,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  return smem;
}

struct launch {
  const struct candidate *c;
  const float *x;
  float *y;
  size_t n;
  void *temp;
  size_t temp_bytes;
  size_t smem; /* throttle_smem's */
};

static void launch_once(const struct launch *l) {
  if (l->c->kept) {
    CUDA_OR_EXIT(scan_launch(SCAN_BEST, l->x, l->n, l->y, l->temp, l->temp_bytes, true, stream));
    return;
  }
  if (!l->c->kernel) {
    CUDA_OR_EXIT(scan_launch(SCAN_CUB, l->x, l->n, l->y, l->temp, l->temp_bytes, false, stream));
    return;
  }
  const size_t tiles = scan_best_tiles(l->n);
  CUDA_OR_EXIT(scan_best_zero(l->temp, tiles, stream));
  CUDA_OR_EXIT(launch_pdl(l->c->kernel, dim3((unsigned)tiles), dim3(l->c->block), l->smem, stream,
                          l->x, l->y, l->n, static_cast<unsigned long long *>(l->temp)));
}

static void launch_fn(void *p) { launch_once((const struct launch *)p); }

static void run_size(size_t n) {
  float *h_x = (float *)malloc(n * sizeof(float)), *h_y = (float *)malloc(n * sizeof(float));
  if (!h_x || !h_y) exit(1);
  unsigned s = 2026;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    h_x[i] = (float)((int)(s >> 30) % 3 - 1); /* -1, 0, 1 */
  }
  float *d_x, *d_y;
  size_t temp_bytes = 0, cub_bytes = 0;
  CUDA_OR_EXIT(scan_temp_bytes(SCAN_BEST, n, &temp_bytes));
  CUDA_OR_EXIT(scan_temp_bytes(SCAN_CUB, n, &cub_bytes));
  if (cub_bytes > temp_bytes) temp_bytes = cub_bytes;
  void *d_temp;
  CUDA_OR_EXIT(cudaMalloc(&d_x, n * sizeof(float)));
  CUDA_OR_EXIT(cudaMalloc(&d_y, n * sizeof(float)));
  CUDA_OR_EXIT(cudaMalloc(&d_temp, temp_bytes));
  CUDA_OR_EXIT(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
  const double bytes = 8.0 * n;
  const double copy_ms = batch_timer_copy_ms(d_y, d_x, n * sizeof(float), stream, 5, 9, 20);
  printf("| %zu | d2d copy, same bytes | - | %.4f | %.0f | 100.0%% | - |\n", n, copy_ms,
         bytes / copy_ms / 1e6);
  for (size_t k = 0; k < sizeof candidates / sizeof candidates[0]; k++) {
    const struct launch l = {
        &candidates[k], d_x, d_y, n, d_temp, temp_bytes, throttle_smem(&candidates[k])};
    CUDA_OR_EXIT(cudaMemsetAsync(d_temp, 0, temp_bytes, stream));        /* as a job's kept temp */
    CUDA_OR_EXIT(cudaMemsetAsync(d_y, 0xff, n * sizeof(float), stream)); /* NaN */
    const double ms = batch_timer_ms(launch_fn, (void *)&l, stream, 5, 9, 20);
    /* the last of the 185 launches' output */
    CUDA_OR_EXIT(cudaMemcpyAsync(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CUDA_OR_EXIT(cudaStreamSynchronize(stream));
    size_t wrong = 0;
    long long sum = 0;
    for (size_t i = 0; i < n; i++) {
      sum += (long long)h_x[i];
      if (h_y[i] != (float)sum) wrong++;
    }
    int per_sm = 0;
    if (candidates[k].kernel)
      CUDA_OR_EXIT(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, candidates[k].kernel,
                                                                 candidates[k].block, l.smem));
    printf("| %zu | %s | %d | %.4f | %.0f | %.1f%% | %s |\n", n, candidates[k].name, per_sm, ms,
           bytes / ms / 1e6, 100.0 * copy_ms / ms, wrong ? "FAIL" : "PASS");
    if (wrong) printf("  %zu of %zu wrong\n", wrong, n);
    fflush(stdout);
  }
  CUDA_OR_EXIT(cudaFree(d_x));
  CUDA_OR_EXIT(cudaFree(d_y));
  CUDA_OR_EXIT(cudaFree(d_temp));
  free(h_x);
  free(h_y);
}

int main(void) {
  CUDA_OR_EXIT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaDeviceProp prop;
  CUDA_OR_EXIT(cudaGetDeviceProperties(&prop, 0));
  printf("%s\n\n| n | kernel | blocks an SM | median ms | GB/s | %% of same-size copy | check |\n",
         prop.name);
  printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  const size_t sizes[] = {(size_t)1 << 22, (size_t)1 << 24, (size_t)1 << 26};
  for (int i = 0; i < 3; i++) run_size(sizes[i]);
  return 0;
}
