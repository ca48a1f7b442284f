/* Where the histogram's time goes and what would shorten it (issue 36): best's kernel
 * (histogram.cuh) as a job launches it (kept counts: one kernel), with other numbers of
 * copies a bin (u32), loads a step and blocks, and for many bins its 16-bit packed
 * counters with other loads a step; beside CUB, a device-to-device copy of the same
 * bytes (read + written, as the figure counts them) and zero_kernel alone. Each timed back to back like bench_best (median of 9 batches
 * of 20 after 5 warm-ups, the output zeroed inside each launch as a job's batch does)
 * and checked exactly against histogram_ref. x is uniform in [-1, 1). What runs 1 and 2
 * tried and dropped (clusters, flags set by the packed atomics, totals polled instead of
 * a ticket: 6ea3159) is in bench/RESULTS.md.
 * Not a test.
 *   histogram_bins            the table
 *   histogram_bins NAME N B   one launch of the candidate named NAME (for ncu) */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/batch_timer.h"
#include "bench/cuda_try.h"
#include "kernels/histogram/histogram.cuh"

static cudaStream_t stream;
static int sms;

/* ---- candidates ---- */

enum kind { COPY, ZERO, CUB, BEST, KEPT };

typedef void (*hist_fn)(const float *, size_t, size_t, int, float, int, uint32_t *, uint32_t *);

struct candidate {
  const char *name;
  enum kind kind;
  hist_fn kernel;
  int block, f, per_sm; /* per_sm: blocks an SM in the persistent grid */
  int log2c;            /* u32: copies a bin (-1: best's own); packed: - */
  bool many;            /* for more than 16384 bins */
};

#define U32(B, F) histogram_best_kernel<false, false, B, F>
static const struct candidate candidates[] = {
    {"d2d copy, same bytes", COPY, NULL, 0, 0, 0, 0, false},
    {"zero_kernel alone", ZERO, NULL, 0, 0, 0, 0, false},
    {"cub", CUB, NULL, 0, 0, 0, 0, false},
    {"best as a job launches it (kept counts and ticket: one kernel)", KEPT, NULL, 1024, 2, 2, -1,
     false},
    {"best's copies", BEST, U32(1024, 2), 1024, 2, 2, -1, false},
    {"1024 copies", BEST, U32(1024, 2), 1024, 2, 2, 10, false},
    {"256 copies", BEST, U32(1024, 2), 1024, 2, 2, 8, false},
    {"128 copies", BEST, U32(1024, 2), 1024, 2, 2, 7, false},
    {"32 copies", BEST, U32(1024, 2), 1024, 2, 2, 5, false},
    {"16 copies", BEST, U32(1024, 2), 1024, 2, 2, 4, false},
    {"8 copies", BEST, U32(1024, 2), 1024, 2, 2, 3, false},
    {"4 copies", BEST, U32(1024, 2), 1024, 2, 2, 2, false},
    {"2 copies", BEST, U32(1024, 2), 1024, 2, 2, 1, false},
    {"1 copy", BEST, U32(1024, 2), 1024, 2, 2, 0, false},
    {"8 copies, 1 load", BEST, U32(1024, 1), 1024, 1, 2, 3, false},
    {"8 copies, 512 threads, 4 an SM", BEST, U32(512, 2), 512, 2, 4, 3, false},
    {"d2d copy, same bytes", COPY, NULL, 0, 0, 0, 0, true},
    {"zero_kernel alone", ZERO, NULL, 0, 0, 0, 0, true},
    {"best (packed, 2 loads)", BEST, histogram_best_kernel<true>, 1024, 2, 1, 0, true},
    {"packed, 1 load", BEST, histogram_best_kernel<true, false, 1024, 1>, 1024, 1, 1, 0, true},
    {"packed, 4 loads", BEST, histogram_best_kernel<true, false, 1024, 4>, 1024, 4, 1, 0, true},
};

struct launch {
  const struct candidate *c;
  const float *x;
  size_t n;
  int bins;
  uint32_t *hist;
  void *temp;
  size_t temp_bytes;
  unsigned grid;
  size_t smem;
  int arg; /* log2c (u32 BEST) */
  void *copy_dst;
};

/* The persistent grid: blocks an SM x SMs, no more than the chunks, at least 1. */
static unsigned grid_of(const struct candidate *c, size_t n) {
  const size_t chunk = (size_t)c->f * c->block * 4;
  size_t g = (n + chunk - 1) / chunk, cap = (size_t)sms * c->per_sm;
  if (g > cap) g = cap;
  return g < 1 ? 1 : (unsigned)g;
}

static void launch_once(const struct launch *l) {
  const struct candidate *c = l->c;
  switch (c->kind) {
  case COPY:
    CUDA_OR_EXIT(cudaMemcpyAsync(l->copy_dst, l->x, l->n * 2, cudaMemcpyDeviceToDevice, stream));
    return;
  case ZERO: CUDA_OR_EXIT(zero_launch(l->hist, (size_t)l->bins, stream)); return;
  case CUB:
    CUDA_OR_EXIT(histogram_launch(HISTOGRAM_CUB, l->x, l->n, l->bins, l->hist, false, l->temp,
                                  l->temp_bytes, false, stream));
    return;
  case KEPT: /* the temp was zeroed before the candidate's first launch */
    CUDA_OR_EXIT(histogram_launch(HISTOGRAM_BEST, l->x, l->n, l->bins, l->hist, false, l->temp,
                                  l->temp_bytes, true, stream));
    return;
  default: break;
  }
  CUDA_OR_EXIT(zero_launch(l->hist, (size_t)l->bins, stream));
  CUDA_OR_EXIT(launch_pdl(c->kernel, dim3(l->grid), dim3((unsigned)c->block), l->smem, stream,
                          (const float *)l->x, l->n, (size_t)0, l->bins, histogram_scale(l->bins),
                          l->arg, l->hist, (uint32_t *)nullptr));
}

static void launch_fn(void *p) { launch_once((const struct launch *)p); }

/* Sets up l for candidate c at n and bins: grid, shared memory, its limit raised. */
static void plan(struct launch *l, const struct candidate *c) {
  l->c = c;
  l->smem = 0;
  l->arg = 0;
  if (c->kind != BEST) return;
  if (c->many) {
    l->smem = histogram_best_smem(l->bins);
  } else {
    l->arg = c->log2c >= 0 ? c->log2c : histogram_best_log2c(l->bins);
    l->smem = ((size_t)l->bins << l->arg) * sizeof(uint32_t);
  }
  CUDA_OR_EXIT(cudaFuncSetAttribute((const void *)c->kernel,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)l->smem));
  CUDA_OR_EXIT(cudaFuncSetAttribute((const void *)c->kernel,
                                    cudaFuncAttributePreferredSharedMemoryCarveout,
                                    (int)cudaSharedmemCarveoutMaxShared));
  l->grid = grid_of(c, l->n);
}

/* A candidate that cannot run at bins: its copies would not fit 16384 words (64 KiB),
 * or it is one of the table's alternatives to best's copies that are not asked for at
 * this bins (the bins' rows try the counts around best's). */
static bool skip(const struct candidate *c, int bins) {
  if (c->many != (bins > HISTOGRAM_BEST_U32_WORDS)) return true;
  if (c->kind == KEPT) return bins > HISTOGRAM_BEST_KEPT_BINS;
  if (c->kind != BEST || c->many || c->log2c < 0) return false;
  if (((long long)bins << c->log2c) > HISTOGRAM_BEST_U32_WORDS) return true;
  return false;
}

static void fill(float *h_x, size_t n) {
  unsigned s = 2026;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    h_x[i] = (float)(s >> 8) / 8388608.0f - 1.0f; /* [-1, 1) */
  }
}

struct buffers {
  float *x;
  uint32_t *hist;
  void *temp, *copy_dst;
  size_t temp_bytes;
};

static void buffers_make(struct buffers *b, const float *h_x, size_t n, int bins) {
  CUDA_OR_EXIT(histogram_temp_bytes(HISTOGRAM_CUB, n, bins, &b->temp_bytes));
  /* or the kept counts and ticket */
  if (b->temp_bytes < histogram_kept_bytes(HISTOGRAM_BEST, bins))
    b->temp_bytes = histogram_kept_bytes(HISTOGRAM_BEST, bins);
  CUDA_OR_EXIT(cudaMalloc(&b->x, n * sizeof(float)));
  CUDA_OR_EXIT(cudaMalloc(&b->hist, (size_t)bins * sizeof(uint32_t)));
  CUDA_OR_EXIT(cudaMalloc(&b->temp, b->temp_bytes + 256));
  CUDA_OR_EXIT(cudaMalloc(&b->copy_dst, n * 2));
  CUDA_OR_EXIT(cudaMemcpy(b->x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
}

static void buffers_free(struct buffers *b) {
  CUDA_OR_EXIT(cudaFree(b->x));
  CUDA_OR_EXIT(cudaFree(b->hist));
  CUDA_OR_EXIT(cudaFree(b->temp));
  CUDA_OR_EXIT(cudaFree(b->copy_dst));
}

static void run_size(size_t n, int bins) {
  float *h_x = (float *)malloc(n * sizeof(float));
  uint32_t *want = (uint32_t *)calloc((size_t)bins, sizeof(uint32_t));
  uint32_t *got = (uint32_t *)malloc((size_t)bins * sizeof(uint32_t));
  if (!h_x || !want || !got) exit(1);
  fill(h_x, n);
  histogram_ref(h_x, n, bins, want);
  struct buffers b;
  buffers_make(&b, h_x, n, bins);
  const double bytes = 4.0 * n + 4.0 * bins; /* the figure's: x read, counts written */
  double copy_ms = 0;
  for (size_t k = 0; k < sizeof candidates / sizeof candidates[0]; k++) {
    const struct candidate *c = &candidates[k];
    if (skip(c, bins)) continue;
    struct launch l = {c, b.x, n, bins, b.hist, b.temp, b.temp_bytes, 0, 0, 0, b.copy_dst};
    plan(&l, c);
    const char *check = "-";
    CUDA_OR_EXIT(cudaMemsetAsync(b.temp, 0, b.temp_bytes, stream)); /* kept: zero at first */
    if (c->kind != COPY && c->kind != ZERO) {
      CUDA_OR_EXIT(cudaMemsetAsync(b.hist, 0xff, (size_t)bins * sizeof(uint32_t), stream));
      launch_once(&l);
      CUDA_OR_EXIT(cudaMemcpyAsync(got, b.hist, (size_t)bins * sizeof(uint32_t),
                                   cudaMemcpyDeviceToHost, stream));
      CUDA_OR_EXIT(cudaStreamSynchronize(stream));
      check = memcmp(got, want, (size_t)bins * sizeof(uint32_t)) ? "FAIL" : "PASS";
    }
    const double ms = batch_timer_ms(launch_fn, (void *)&l, stream, 5, 9, 20);
    if (c->kind == COPY) copy_ms = ms;
    printf("| %zu | %d | %s | %u | %.4f | %.0f | %.1f%% | %s |\n", n, bins, c->name, l.grid, ms,
           bytes / ms / 1e6, copy_ms > 0 ? 100.0 * copy_ms / ms : 0.0, check);
    fflush(stdout);
  }
  buffers_free(&b);
  free(h_x);
  free(want);
  free(got);
}

/* One launch of the candidate named name at n and bins (for ncu's -k filter). */
static int run_one(const char *name, size_t n, int bins) {
  for (size_t k = 0; k < sizeof candidates / sizeof candidates[0]; k++) {
    const struct candidate *c = &candidates[k];
    if (strcmp(c->name, name) != 0 || skip(c, bins)) continue;
    float *h_x = (float *)malloc(n * sizeof(float));
    if (!h_x) exit(1);
    fill(h_x, n);
    struct buffers b;
    buffers_make(&b, h_x, n, bins);
    struct launch l = {c, b.x, n, bins, b.hist, b.temp, b.temp_bytes, 0, 0, 0, b.copy_dst};
    plan(&l, c);
    for (int i = 0; i < 3; i++) launch_once(&l);
    CUDA_OR_EXIT(cudaStreamSynchronize(stream));
    buffers_free(&b);
    free(h_x);
    return 0;
  }
  fprintf(stderr, "no candidate '%s' for %d bins\n", name, bins);
  return 2;
}

int main(int argc, char **argv) {
  CUDA_OR_EXIT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaDeviceProp prop;
  CUDA_OR_EXIT(cudaGetDeviceProperties(&prop, 0));
  sms = prop.multiProcessorCount;
  if (argc == 4) return run_one(argv[1], strtoull(argv[2], NULL, 0), atoi(argv[3]));
  printf("%s\n\n| n | bins | kernel | grid | median ms | GB/s | %% of same-size copy | check |\n",
         prop.name);
  printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (int e = 20; e <= 26; e += 2) run_size((size_t)1 << e, 256);
  const int other_bins[] = {1, 16, 1024, 4096};
  for (int i = 0; i < 4; i++) {
    run_size((size_t)1 << 22, other_bins[i]);
    run_size((size_t)1 << 26, other_bins[i]);
  }
  run_size((size_t)1 << 24, 65536);
  run_size((size_t)1 << 26, 65536);
  return 0;
}
