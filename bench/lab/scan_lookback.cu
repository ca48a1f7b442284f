/* Where best's scan loses to the copy (issue 36): best's kernels (scan.cuh), the
 * register form reading more windows of the look-back a step, at other sleeps and block
 * sizes, and with fewer blocks an SM (dynamic shared memory that leaves room for no
 * more), and the staged form (the tile in shared memory instead of registers: more
 * tiles an SM, best's since run 3), also with its stores marked evict-first; beside CUB
 * and a device-to-device copy of the same bytes, at n = 2^22, 2^24 and 2^26. Each timed
 * back to back like bench_best (median of 9 batches of 20 launches after 5 warm-ups, the
 * status zeroing included but where best runs as a job launches it, on status words
 * kept from the last launch) and the last launch's output checked exactly: x is random
 * -1, 0 or 1, so every prefix is a small integer a float holds exactly, whatever the
 * order of the additions. Not a test.
 *   scan_lookback */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/batch_timer.h"
#include "bench/cuda_try.h"
#include "kernels/scan/scan.cuh"

static cudaStream_t stream;

/* ---- a pipelined form (lab only) ----
 * The model (bench/RESULTS.md, "Where the scan's time goes"): a tile that waits on its
 * predecessors' aggregates holds its slot with no load in flight, so the loads an SM
 * keeps in flight are only those of tiles still loading, a small part of the 13 it
 * holds. Here a resident grid (blocks an SM x SMs) takes tiles from a queue in order
 * (atomicInc on a word that wraps back to 0 after the launch's tiles + one failed take a
 * block) and keeps S tiles' cp.async in flight a block: while tile k waits on the
 * look-back, tiles k+1 .. k+S-1 of the same block are loading. A tile is taken only
 * after every lower one was taken by a running block, and no tile waits on a higher one,
 * so no grid size can deadlock. The arithmetic is the staged form's, tile by tile. */
template <int BLOCK, int S>
__global__ __launch_bounds__(BLOCK) void scan_pipe_kernel(const float *__restrict__ x,
                                                          float *__restrict__ y, size_t n,
                                                          unsigned long long *status,
                                                          unsigned *queue) {
  constexpr int W = BLOCK / 32, R = 32 / W;
  extern __shared__ __align__(16) float4 pipe_stage[]; /* S tiles of R * BLOCK float4 */
  __shared__ float seg[2][32];
  __shared__ unsigned take[S]; /* the tile in each stage; >= tiles: none */
  pdl_wait();
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  const unsigned tiles = (unsigned)((n + SCAN_BEST_TILE - 1) / SCAN_BEST_TILE);
  const unsigned last_take = tiles + gridDim.x - 1;
  bool taking = true; /* thread 0: this block has not yet had its failed take */
  auto next_take = [&]() -> unsigned {
    if (!taking) return tiles;
    const unsigned v = atomicInc(queue, last_take);
    taking = v < tiles;
    return v;
  };
  auto issue = [&](int st, unsigned tile) {
    if (tile < tiles) {
      const size_t base = (size_t)tile * SCAN_BEST_TILE;
#pragma unroll
      for (int j = 0; j < R; j++) {
        const size_t idx = base + 4 * (size_t)(j * BLOCK + t);
        float *dst = reinterpret_cast<float *>(&pipe_stage[(st * R + j) * BLOCK + t]);
        if (idx + 3 < n) {
          cp_async16(dst, x + idx);
        } else {
#pragma unroll
          for (int k = 0; k < 4; k++)
            cp_async4(dst + k, idx + k < n ? x + idx + k : x, idx + k < n);
        }
      }
    }
    cp_async_commit(); /* a group a stage, empty or not: wait_group counts them */
  };
  if (t == 0)
    for (int st = 0; st < S; st++) take[st] = next_take();
  __syncthreads();
  for (int st = 0; st < S; st++) issue(st, take[st]);
  for (int k = 0;; k++) {
    const int st = k % S;
    const unsigned tile = take[st];
    if (tile >= tiles) break; /* uniform: every thread read take[st] after a barrier */
    /* the stage's next tile, asked now: its round trip overlaps this tile's wait */
    const unsigned refill = t == 0 ? next_take() : 0;
    cp_async_wait<S - 1>(); /* this stage's group: the oldest */
    float4 *v = &pipe_stage[st * R * BLOCK];
    float *sg = seg[k & 1];
#pragma unroll
    for (int j = 0; j < R; j++)
      v[j * BLOCK + t] = scan_best_segment(v[j * BLOCK + t], lane, &sg[j * W + w]);
    __syncthreads();
    if (w == 0) {
      scan_best_publish<SCAN_BEST_SLEEP_MAX, SCAN_BEST_LOOKBACK_DEPTH>(status, tiles, tile, sg,
                                                                       lane);
      if (lane == 0) take[st] = refill; /* every thread read take[st] before the barrier */
    }
    __syncthreads();
    const size_t base = (size_t)tile * SCAN_BEST_TILE;
#pragma unroll
    for (int j = 0; j < R; j++) {
      const float off = sg[j * W + w];
      const float4 q = v[j * BLOCK + t];
      scan_store4<true>(y, base + 4 * (size_t)(j * BLOCK + t), n,
                        make_float4(q.x + off, q.y + off, q.z + off, q.w + off));
    }
    issue(st, take[st]); /* this thread's own float4s: read above, refilled now */
  }
  cp_async_wait<0>();
}

typedef void (*best_fn)(const float *, float *, size_t, unsigned long long *);
typedef void (*pipe_fn)(const float *, float *, size_t, unsigned long long *, unsigned *);

struct candidate {
  const char *name;
  best_fn kernel; /* NULL: CUB (or the pipelined form) */
  int block;
  int per_sm;   /* > 0: dynamic shared memory that lets only this many blocks an SM run */
  bool kept;    /* best through scan_launch as a job launches it: temp kept, one kernel */
  pipe_fn pipe; /* the pipelined form: a resident grid, `stages` tiles a block */
  int stages;
};

static const struct candidate candidates[] = {
    {"best as a job launches it (its kept status words: one kernel)", scan_best_kernel<128, true>,
     128, 0, true, NULL, 0},
    {"register form 128, 1 window a step (best's before)", scan_best_kernel<128, true, 512, 1>, 128,
     0, false, NULL, 0},
    {"best 128, 2 windows a step", scan_best_kernel<128, true, 512, 2>, 128, 0, false, NULL, 0},
    {"best 128, 4 windows a step", scan_best_kernel<128, true, 512, 4>, 128, 0, false, NULL, 0},
    {"best 128, 8 windows a step", scan_best_kernel<128, true, 512, 8>, 128, 0, false, NULL, 0},
    {"best 128, 4 windows, spin", scan_best_kernel<128, true, 0, 4>, 128, 0, false, NULL, 0},
    {"best 64, 4 windows a step", scan_best_kernel<64, true, 512, 4>, 64, 0, false, NULL, 0},
    {"best 256, 4 windows a step", scan_best_kernel<256, true, 512, 4>, 256, 0, false, NULL, 0},
    {"register form, 8 blocks an SM", scan_best_kernel<128, true>, 128, 8, false, NULL, 0},
    {"register form, 6 blocks an SM", scan_best_kernel<128, true>, 128, 6, false, NULL, 0},
    {"register form, 4 blocks an SM", scan_best_kernel<128, true>, 128, 4, false, NULL, 0},
    {"staged in shared memory, 128 (best's)", scan_staged_kernel<128>, 128, 0, false, NULL, 0},
    {"staged in shared memory, 64", scan_staged_kernel<64>, 64, 0, false, NULL, 0},
    {"staged, 128, 9 blocks an SM", scan_staged_kernel<128>, 128, 9, false, NULL, 0},
    {"staged, 128, evict-first stores (st.global.cs)", scan_staged_kernel<128, true>, 128, 0, false,
     NULL, 0},
    {"pipelined, 2 tiles a block in flight", NULL, 128, 0, false, scan_pipe_kernel<128, 2>, 2},
    {"pipelined, 3 tiles a block in flight", NULL, 128, 0, false, scan_pipe_kernel<128, 3>, 3},
    {"pipelined, 4 tiles a block in flight", NULL, 128, 0, false, scan_pipe_kernel<128, 4>, 4},
    {"cub", NULL, 0, 0, false, NULL, 0},
};

/* Dynamic shared memory that leaves room for only per_sm of c's blocks on an SM (its
 * limit raised to it), 0 when per_sm is 0; the largest carveout either way. */
static size_t throttle_smem(const struct candidate *c) {
  if (c->pipe) {
    const size_t smem = (size_t)c->stages * SCAN_BEST_TILE * sizeof(float);
    CUDA_OR_EXIT(cudaFuncSetAttribute((const void *)c->pipe,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CUDA_OR_EXIT(cudaFuncSetAttribute((const void *)c->pipe,
                                      cudaFuncAttributePreferredSharedMemoryCarveout,
                                      (int)cudaSharedmemCarveoutMaxShared));
    return smem;
  }
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
  size_t smem;     /* throttle_smem's */
  unsigned *queue; /* the pipelined form's, zero before its first launch */
  unsigned grid;   /* the pipelined form's: its blocks an SM x SMs */
};

static void launch_once(const struct launch *l) {
  if (l->c->kept) {
    CUDA_OR_EXIT(scan_launch(SCAN_BEST, l->x, l->n, l->y, l->temp, l->temp_bytes, true, stream));
    return;
  }
  if (l->c->pipe) {
    CUDA_OR_EXIT(scan_best_zero(l->temp, scan_best_tiles(l->n), stream));
    CUDA_OR_EXIT(launch_pdl(l->c->pipe, dim3(l->grid), dim3(l->c->block), l->smem, stream, l->x,
                            l->y, l->n, static_cast<unsigned long long *>(l->temp), l->queue));
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
  unsigned *d_queue;
  CUDA_OR_EXIT(cudaMalloc(&d_queue, sizeof(unsigned)));
  CUDA_OR_EXIT(cudaMemset(d_queue, 0, sizeof(unsigned)));
  cudaDeviceProp prop;
  CUDA_OR_EXIT(cudaGetDeviceProperties(&prop, 0));
  for (size_t k = 0; k < sizeof candidates / sizeof candidates[0]; k++) {
    const struct candidate *c = &candidates[k];
    struct launch l = {c, d_x, d_y, n, d_temp, temp_bytes, throttle_smem(c), d_queue, 0};
    if (c->pipe) {
      int per_sm = 0;
      CUDA_OR_EXIT(
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, c->pipe, c->block, l.smem));
      l.grid = (unsigned)(per_sm * prop.multiProcessorCount);
    }
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
    if (c->kernel)
      CUDA_OR_EXIT(
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, c->kernel, c->block, l.smem));
    if (c->pipe) per_sm = (int)l.grid / prop.multiProcessorCount;
    printf("| %zu | %s | %d | %.4f | %.0f | %.1f%% | %s |\n", n, candidates[k].name, per_sm, ms,
           bytes / ms / 1e6, 100.0 * copy_ms / ms, wrong ? "FAIL" : "PASS");
    if (wrong) printf("  %zu of %zu wrong\n", wrong, n);
    fflush(stdout);
  }
  CUDA_OR_EXIT(cudaFree(d_x));
  CUDA_OR_EXIT(cudaFree(d_y));
  CUDA_OR_EXIT(cudaFree(d_temp));
  CUDA_OR_EXIT(cudaFree(d_queue));
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
