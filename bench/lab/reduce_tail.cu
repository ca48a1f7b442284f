/* What a reduce launch costs beyond its bytes (issue 36): best's kernel (reduce.cuh) as
 * a job launches it (the run's temp kept: one kernel, on a ticket the last launch left
 * 0), as the launcher issues it on temp of any contents (zero_kernel for the ticket,
 * then the main kernel as its PDL dependant) and with that temp from the stream-ordered
 * pool around each launch (as jobs did), and the old grid of 8 blocks an SM both ways;
 * earlier runs also spread the ticket over 32 counters, timed the main kernel without
 * its final sum, 8 loads a step and a cooperative launch with a grid barrier instead of
 * the ticket (bench/RESULTS.md); beside CUB, zero_kernel alone and a
 * device-to-device copy of the same bytes (read + written, as the figure counts them).
 * Each timed back to back like bench_best (median of 9 batches of 20 after 5 warm-ups),
 * and again as one CUDA Graph of the 20 (the GPU's time without the host's
 * to issue each call), and checked exactly: x is random -1, 0 or 1, so every sum is an
 * integer a float holds exactly whatever the order. Not a test.
 *   reduce_tail */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/batch_timer.h"
#include "bench/cuda_try.h"
#include "kernels/reduce/reduce.cuh"

static cudaStream_t stream;

enum kind { COPY, ZERO, CUB, BEST, JOB, KEPT, SELF_RESET };

typedef void (*reduce_fn)(const float *, size_t, size_t, float *, unsigned *, float *);

struct candidate {
  const char *name;
  enum kind kind;
  reduce_fn kernel;
  int unroll, per_sm; /* the grid: per_sm x 132 blocks at most, as best's */
};

static const struct candidate candidates[] = {
    {"d2d copy, same bytes", COPY, NULL, 0, 0},
    {"zero_kernel alone", ZERO, NULL, 0, 0},
    {"cub", CUB, NULL, 0, 0},
    {"best as a job launches it (its kept ticket: one kernel, 4 blocks an SM)", KEPT,
     reduce_best_kernel<REDUCE_BLOCK, 4>, 4, 4},
    {"best's zero_kernel + main kernel (PDL), as the pool's temp needs", BEST,
     reduce_best_kernel<REDUCE_BLOCK, 4>, 4, 4},
    {"the same, temp from the pool around each launch (as jobs did)", JOB, NULL, 0, 0},
    {"kept ticket, 8 blocks an SM (the old grid)", SELF_RESET, reduce_best_kernel<REDUCE_BLOCK, 4>,
     4, 8},
    {"zero_kernel + main, 8 blocks an SM (best before)", BEST, reduce_best_kernel<REDUCE_BLOCK, 4>,
     4, 8},
};

struct launch {
  const struct candidate *c;
  const float *x;
  size_t n;
  float *out;
  void *temp;
  size_t temp_bytes;
  unsigned grid;
  void *copy_dst;
};

/* best's main kernel as the PDL dependant of what came before on the stream, grid blocks */
static cudaError_t launch_main(const struct candidate *c, unsigned grid, const float *x, size_t n,
                               float *partials, unsigned *ticket, float *out) {
  return launch_pdl(c->kernel, dim3(grid), dim3(REDUCE_BLOCK), 0, stream, x, n, (size_t)0, partials,
                    ticket, out);
}

static void launch_once(const struct launch *l) {
  const struct candidate *c = l->c;
  unsigned *ticket = static_cast<unsigned *>(l->temp);
  float *partials = reinterpret_cast<float *>(static_cast<char *>(l->temp) + 256);
  switch (c->kind) {
  case COPY:
    CUDA_OR_EXIT(cudaMemcpyAsync(l->copy_dst, l->x, l->n * 2, cudaMemcpyDeviceToDevice, stream));
    return;
  case ZERO: CUDA_OR_EXIT(zero_launch(ticket, 1, stream)); return;
  case CUB:
    CUDA_OR_EXIT(reduce_launch(REDUCE_CUB, l->x, l->n, l->out, false, l->temp, l->temp_bytes, false,
                               stream));
    return;
  case KEPT: /* the ticket was zeroed once before the first launch */
    CUDA_OR_EXIT(reduce_launch(REDUCE_BEST, l->x, l->n, l->out, false, l->temp, l->temp_bytes, true,
                               stream));
    return;
  case JOB: { /* a temp from the pool around each launch, as jobs took it before caef478 */
    void *d_temp = NULL;
    CUDA_OR_EXIT(cudaMallocAsync(&d_temp, l->temp_bytes, stream));
    CUDA_OR_EXIT(reduce_launch(REDUCE_BEST, l->x, l->n, l->out, false, d_temp, l->temp_bytes, false,
                               stream));
    CUDA_OR_EXIT(cudaFreeAsync(d_temp, stream));
    return;
  }
  case BEST: CUDA_OR_EXIT(zero_launch(ticket, 1, stream)); break;
  case SELF_RESET: break; /* the ticket was zeroed once before the first launch */
  }
  CUDA_OR_EXIT(launch_main(c, l->grid, l->x, l->n, partials, ticket, l->out));
}

static void launch_fn(void *p) { launch_once((const struct launch *)p); }

static unsigned grid_of(const struct candidate *c, size_t n) {
  if (!c->kernel) return 0;
  const size_t per_block = (size_t)REDUCE_BLOCK * c->unroll;
  size_t g = (n / 4 + per_block - 1) / per_block;
  const size_t cap = (size_t)c->per_sm * 132;
  if (g > cap) g = cap;
  return g < 1 ? 1 : (unsigned)g;
}

static void run_size(size_t n) {
  float *h_x = (float *)malloc(n * sizeof(float));
  if (!h_x) exit(1);
  unsigned s = 2026;
  long long want = 0;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    h_x[i] = (float)((int)(s >> 30) % 3 - 1); /* -1, 0, 1 */
    want += (long long)h_x[i];
  }
  size_t temp_bytes = 0;
  CUDA_OR_EXIT(reduce_temp_bytes(REDUCE_CUB, n, &temp_bytes));
  temp_bytes += 256 + 8 * 132 * sizeof(float) + 256;
  float *d_x, *d_out;
  void *d_temp, *d_copy;
  CUDA_OR_EXIT(cudaMalloc(&d_x, n * sizeof(float)));
  CUDA_OR_EXIT(cudaMalloc(&d_out, sizeof(float)));
  CUDA_OR_EXIT(cudaMalloc(&d_temp, temp_bytes));
  CUDA_OR_EXIT(cudaMalloc(&d_copy, n * 2));
  CUDA_OR_EXIT(cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice));
  const double bytes = 4.0 * n + 4.0;
  double copy_ms = 0, copy_graph_ms = 0;
  for (size_t k = 0; k < sizeof candidates / sizeof candidates[0]; k++) {
    const struct candidate *c = &candidates[k];
    const struct launch l = {c, d_x, n, d_out, d_temp, temp_bytes, grid_of(c, n), d_copy};
    const char *check = "-";
    CUDA_OR_EXIT(cudaMemsetAsync(d_temp, 0, 256, stream)); /* the ticket */
    if (c->kind != COPY && c->kind != ZERO) {
      float got = 0;
      CUDA_OR_EXIT(cudaMemsetAsync(d_out, 0xff, sizeof(float), stream)); /* NaN */
      launch_once(&l);
      CUDA_OR_EXIT(cudaMemcpyAsync(&got, d_out, sizeof(float), cudaMemcpyDeviceToHost, stream));
      CUDA_OR_EXIT(cudaStreamSynchronize(stream));
      check = got == (float)want ? "PASS" : "FAIL";
    }
    const double ms = batch_timer_ms(launch_fn, (void *)&l, stream, 5, 9, 20);
    const double graph_ms = batch_timer_graph_ms(launch_fn, (void *)&l, stream, 2, 9, 20);
    if (c->kind == COPY) copy_ms = ms, copy_graph_ms = graph_ms;
    printf("| %zu | %s | %u | %.4f | %.0f | %.1f%% | %.4f | %.1f%% | %s |\n", n, c->name,
           c->kind >= BEST ? l.grid : 0, ms, bytes / ms / 1e6, 100.0 * copy_ms / ms, graph_ms,
           100.0 * copy_graph_ms / graph_ms, check);
    fflush(stdout);
  }
  CUDA_OR_EXIT(cudaFree(d_x));
  CUDA_OR_EXIT(cudaFree(d_out));
  CUDA_OR_EXIT(cudaFree(d_temp));
  CUDA_OR_EXIT(cudaFree(d_copy));
  free(h_x);
}

int main(void) {
  CUDA_OR_EXIT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaDeviceProp prop;
  CUDA_OR_EXIT(cudaGetDeviceProperties(&prop, 0));
  printf(
      "%s\n\n| n | kernel | grid | median ms | GB/s | %% of same-size copy | in a graph: ms | "
      "%% of the copy in a graph | check |\n",
      prop.name);
  printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (int e = 20; e <= 26; e += 2) run_size((size_t)1 << e);
  return 0;
}
