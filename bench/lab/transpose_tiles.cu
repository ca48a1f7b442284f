/* Tile shapes of the sector-exact transpose (transpose_sec.cuh) at odd shapes, for
 * issue 36's goal there (>= 90% of the copy ceiling): `best` as picked, then
 * transpose_sec_kernel at other tile shapes and launch-order groups, each timed back to
 * back like bench_best (median of 9 batches of 20 launches after 5 warm-ups), each
 * checked exactly against a host transpose (B set to NaN before every candidate), beside
 * a device-to-device copy of the same bytes and the copy ceiling (2^30 bytes each way,
 * read + written counted, as every figure here). Not a test: nothing fails on time.
 *   transpose_tiles [MxN ...]   (default: 4097x3001 3001x4097 8191x8193 8193x8191 8192x8192) */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/batch_timer.h"
#include "bench/cuda_try.h"
#include "kernels/transpose/transpose.cuh"
#include "kernels/transpose/transpose_sec.cuh"

static cudaStream_t stream;

typedef void (*sec_fn)(const float *, float *, int, int);

struct candidate {
  const char *name;
  sec_fn kernel; /* NULL: best, as transpose_best_launch picks it */
  int tc, tr;
};

/* Run 1 also timed 32x256, 64x128 and 16x256 (groups of 32): all slower (RESULTS.md). */
static const struct candidate candidates[] = {
    {"best (as picked)", NULL, 0, 0},
    {"sec 32x128 g32", transpose_sec_kernel<32, 128, 32>, 32, 128},
    {"sec 32x128 g64", transpose_sec_kernel<32, 128, 64>, 32, 128},
    {"sec 32x128 g128", transpose_sec_kernel<32, 128, 128>, 32, 128},
    {"sec 32x128 g256", transpose_sec_kernel<32, 128, 256>, 32, 128},
    {"sec 32x64 g128", transpose_sec_kernel<32, 64, 128>, 32, 64},
    {"sec 32x64 g256", transpose_sec_kernel<32, 64, 256>, 32, 64},
    {"sec 64x64 g128", transpose_sec_kernel<64, 64, 128>, 64, 64},
};

struct launch {
  const struct candidate *c;
  const float *a;
  float *b;
  int m, n;
};

static void launch_once(const struct launch *l) {
  if (!l->c->kernel) {
    CUDA_OR_EXIT(transpose_best_launch(l->a, l->b, l->m, l->n, stream));
    return;
  }
  const unsigned long long tiles = (unsigned long long)((l->m + 7 + l->c->tr - 1) / l->c->tr) *
                                   ((l->n + l->c->tc - 1) / l->c->tc);
  l->c->kernel<<<(unsigned)tiles, 256, 0, stream>>>(l->a, l->b, l->m, l->n);
  CUDA_OR_EXIT(cudaGetLastError());
}

/* launch_once as batch_timer_ms calls it. */
static void launch_fn(void *l) { launch_once((const struct launch *)l); }

/* GB/s of cudaMemcpyAsync D2D moving `floats` each way (read + written counted). */
static double copy_gbs(size_t floats) {
  float *src, *dst;
  CUDA_OR_EXIT(cudaMalloc(&src, floats * sizeof(float)));
  CUDA_OR_EXIT(cudaMalloc(&dst, floats * sizeof(float)));
  CUDA_OR_EXIT(cudaMemsetAsync(src, 0x3f, floats * sizeof(float), stream));
  const double ms = /* a batch's worth warms up */
      batch_timer_copy_ms(dst, src, floats * sizeof(float), stream, 20, 9, 20);
  CUDA_OR_EXIT(cudaFree(src));
  CUDA_OR_EXIT(cudaFree(dst));
  return 8.0 * floats / ms / 1e6;
}

static void run_shape(int m, int n, double ceiling) {
  const size_t count = (size_t)m * n;
  float *h_a = (float *)malloc(count * sizeof(float)),
        *h_b = (float *)malloc(count * sizeof(float));
  if (!h_a || !h_b) {
    fprintf(stderr, "out of host memory at %dx%d\n", m, n);
    exit(1);
  }
  for (size_t i = 0; i < count; i++) h_a[i] = (float)(i % 16777213); /* exact in a float */
  float *d_a, *d_b;
  CUDA_OR_EXIT(cudaMalloc(&d_a, count * sizeof(float)));
  CUDA_OR_EXIT(cudaMalloc(&d_b, count * sizeof(float)));
  CUDA_OR_EXIT(cudaMemcpy(d_a, h_a, count * sizeof(float), cudaMemcpyHostToDevice));
  const double same = copy_gbs(count), bytes = 8.0 * count;
  printf("| %dx%d | d2d copy, same bytes | %.4f | %.0f | %.1f%% | 100.0%% | - | - |\n", m, n,
         bytes / same / 1e6, same, 100.0 * same / ceiling);
  for (size_t k = 0; k < sizeof candidates / sizeof candidates[0]; k++) {
    const struct launch l = {&candidates[k], d_a, d_b, m, n};
    CUDA_OR_EXIT(cudaMemsetAsync(d_b, 0xff, count * sizeof(float), stream)); /* NaN */
    launch_once(&l);
    CUDA_OR_EXIT(cudaMemcpyAsync(h_b, d_b, count * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CUDA_OR_EXIT(cudaStreamSynchronize(stream));
    size_t wrong = 0;
    for (size_t j = 0; j < (size_t)n; j++)
      for (size_t i = 0; i < (size_t)m; i++)
        if (h_b[j * m + i] != h_a[i * n + j]) wrong++;
    const double ms = batch_timer_ms(launch_fn, (void *)&l, stream, 5, 9, 20),
                 gbs = bytes / ms / 1e6;
    char regs[32] = "-";
    cudaFuncAttributes fa;
    if (candidates[k].kernel &&
        cudaFuncGetAttributes(&fa, (const void *)candidates[k].kernel) == cudaSuccess)
      snprintf(regs, sizeof regs, "%d / %zu", fa.numRegs, fa.localSizeBytes);
    printf("| %dx%d | %s | %.4f | %.0f | %.1f%% | %.1f%% | %s | %s |\n", m, n, candidates[k].name,
           ms, gbs, 100.0 * gbs / ceiling, 100.0 * gbs / same, wrong ? "FAIL" : "PASS", regs);
    if (wrong) printf("  %zu of %zu wrong\n", wrong, count);
    fflush(stdout);
  }
  CUDA_OR_EXIT(cudaFree(d_a));
  CUDA_OR_EXIT(cudaFree(d_b));
  free(h_a);
  free(h_b);
}

int main(int argc, char **argv) {
  static const char *defaults[] = {"4097x3001", "3001x4097", "8191x8193", "8193x8191", "8192x8192"};
  const char **shapes = argc > 1 ? (const char **)argv + 1 : defaults;
  const int n_shapes = argc > 1 ? argc - 1 : 5;
  CUDA_OR_EXIT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaDeviceProp prop;
  CUDA_OR_EXIT(cudaGetDeviceProperties(&prop, 0));
  const double ceiling = copy_gbs((size_t)1 << 28);
  printf("%s: copy ceiling %.0f GB/s (d2d, 2^30 bytes each way)\n\n", prop.name, ceiling);
  printf(
      "| shape | kernel | median ms | GB/s | %% of ceiling | %% of same-size copy | check | "
      "registers / local bytes |\n");
  printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (int i = 0; i < n_shapes; i++) {
    int m = 0, n = 0;
    if (sscanf(shapes[i], "%dx%d", &m, &n) != 2 || m < 1 || n < 1) {
      fprintf(stderr, "transpose_tiles: %s is not MxN\n", shapes[i]);
      return 2;
    }
    run_shape(m, n, ceiling);
  }
  return 0;
}
