/* Fresh inputs and the runner's own check of a timed launch (runner_check.h). The
 * definitions are the experiments' own, as their CPU references state them: transpose
 * exact, gemm within k 2^-23 sum_k |a b| of the FP64 product (on sampled rows), stencil
 * within (2r+2) 2^-23 sum_window |x| / (2r+1) + 1e-30 of the FP64 window mean, reduce
 * and scan within sum_rule.h's random rule of the FP64 sums (n terms for the sum, i + 1
 * at y[i]), histogram exact. The output
 * is read against the input buffers, which the same check compares with what was
 * generated: a launch passes only when both hold. */
#include "kernels/user/runner_check.h"

#include <math.h>

#include "kernels/core/gen.h"
#include "kernels/core/sum_rule.h"
#include "kernels/histogram/histogram.h"

#define CHECK_THREADS 256
#define CHECK_MAX_BLOCKS 4096

static unsigned blocks_for(uint64_t n) {
  uint64_t b = (n + CHECK_THREADS - 1) / CHECK_THREADS;
  return (unsigned)(b < 1 ? 1 : b > CHECK_MAX_BLOCKS ? CHECK_MAX_BLOCKS : b);
}

/* The seed of launch l: the request's, moved on by l (gen_uniform mixes it). */
__host__ __device__ static uint64_t launch_seed(const struct runner_fresh *f, uint32_t l) {
  return f->seed + l;
}

/* Grid-stride: d[i] = gen_uniform(seed, stream, i) * scale. */
__global__ void fresh_fill_kernel(float *d, uint64_t n, uint64_t seed, uint32_t stream,
                                  float scale) {
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x)
    d[i] = gen_uniform(seed, stream, i) * scale;
}

/* One element found wrong at index i: counted, and the first kept. */
__device__ static void found(unsigned long long *bad, unsigned long long *first, uint64_t i) {
  atomicAdd(bad, 1ull);
  atomicMin(first, (unsigned long long)i);
}

/* Grid-stride: the input as generated, bit for bit. */
__global__ void fresh_input_kernel(const float *d, uint64_t n, uint64_t seed, uint32_t stream,
                                   float scale, unsigned long long *bad,
                                   unsigned long long *first) {
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x)
    if (__float_as_uint(d[i]) != __float_as_uint(gen_uniform(seed, stream, i) * scale))
      found(bad, first, i);
}

/* Grid-stride over B's elements (B = A^T, A m x n): exact and finite. */
__global__ void check_transpose_kernel(const float *a, const float *b, int64_t m, int64_t n,
                                       unsigned long long *bad, unsigned long long *first) {
  for (uint64_t o = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; o < (uint64_t)(m * n);
       o += (uint64_t)gridDim.x * blockDim.x) {
    uint64_t x = o / m, y = o % m; /* B[x][y] = A[y][x] */
    float got = b[o];
    if (!isfinite(got) || got != a[y * n + x]) found(bad, first, o);
  }
}

/* Grid-stride over the outputs of the sampled rows: thread (j, col) checks C[row_j][col]
 * against the FP64 dot product and its sum |a b|. Row j is drawn from the launch's
 * seed (with replacement), or is j itself when every row is compared. */
__global__ void check_gemm_kernel(const float *A, const float *B, const float *C, int64_t m,
                                  int64_t n, int64_t k, uint32_t rows, uint64_t seed,
                                  unsigned long long *bad, unsigned long long *first) {
  bool all = rows == 0 || rows >= m;
  uint64_t n_rows = all ? (uint64_t)m : rows;
  for (uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; t < n_rows * n;
       t += (uint64_t)gridDim.x * blockDim.x) {
    uint64_t j = t / n, col = t % n;
    uint64_t row = all ? j : gen_mix64(seed ^ (0x5eed0000ull + j)) % (uint64_t)m;
    double want = 0, mag = 0;
    for (int64_t kk = 0; kk < k; kk++) {
      double p = (double)A[row * k + kk] * (double)B[kk * n + col];
      want += p;
      mag += fabs(p);
    }
    float got = C[row * n + col];
    if (!isfinite(got) || !(fabs((double)got - want) <= (double)k * 0x1p-23 * mag))
      found(bad, first, row * n + col);
  }
}

/* Grid-stride over y: the window mean of x over [i-r, i+r] (zero outside) in FP64. */
__global__ void check_stencil_kernel(const float *x, const float *y, int64_t n, int64_t r,
                                     unsigned long long *bad, unsigned long long *first) {
  double width = (double)(2 * r + 1), rel = (double)(2 * r + 2) * 0x1p-23 / width;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (uint64_t)n;
       i += (uint64_t)gridDim.x * blockDim.x) {
    int64_t lo = (int64_t)i - r < 0 ? 0 : (int64_t)i - r,
            hi = (int64_t)i + r >= n ? n - 1 : (int64_t)i + r;
    double sum = 0, abs_sum = 0;
    for (int64_t j = lo; j <= hi; j++) sum += x[j], abs_sum += fabs((double)x[j]);
    float got = y[i];
    if (!isfinite(got) || !(fabs((double)got - sum / width) <= rel * abs_sum + 1e-30))
      found(bad, first, i);
  }
}

/* ---- reduce, scan and histogram: their FP64 sums or exact counts in a workspace ---- */

/* The checks' workspace (FP64 sums, counts), the runner's own, grown when a check
 * needs more; one is enough, as launches and their checks follow each other on one
 * stream. */
static void *ws;
static size_t ws_bytes;

static cudaError_t ws_reserve(size_t bytes) {
  if (bytes <= ws_bytes) return cudaSuccess;
  if (ws) cudaFree(ws);
  ws = NULL, ws_bytes = 0;
  cudaError_t e = cudaMalloc(&ws, bytes);
  if (e == cudaSuccess)
    ws_bytes = bytes;
  else
    cudaGetLastError(); /* not left for the next run's cudaGetLastError to find */
  return e;
}

/* Reduce and scan are checked by sum_rule.h's random rule (the inputs are generated):
 * it needs x's FP64 prefix sums and their largest magnitude (all of them for a sum, up
 * to y[i] for a scan), found tile by tile: each tile's sum, their exclusive prefixes;
 * each element's prefix within its tile (a block per tile, a thread per
 * SCAN_CHECK_PER_THREAD consecutive elements) and each tile's largest |prefix|, their
 * exclusive prefix maxima; then the check. FP64 sums of gen.h's values (multiples of
 * 2^-23 below 1, fewer than 2^30) are exact, so no order changes a bit. */
#define SCAN_CHECK_PER_THREAD 4
#define SCAN_CHECK_TILE (CHECK_THREADS * SCAN_CHECK_PER_THREAD)

/* A block per tile (grid-stride over tiles): its FP64 sum into sum[t]. */
__global__ void tile_sums_kernel(const float *x, uint64_t n, uint64_t tiles, double *sum) {
  __shared__ double s[CHECK_THREADS];
  for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    double ts = 0;
    for (int k = 0; k < SCAN_CHECK_PER_THREAD; k++) {
      uint64_t i = t * SCAN_CHECK_TILE + (uint64_t)k * CHECK_THREADS + threadIdx.x;
      if (i < n) ts += (double)x[i];
    }
    s[threadIdx.x] = ts;
    for (unsigned half = CHECK_THREADS / 2; half > 0; half /= 2) {
      __syncthreads();
      if (threadIdx.x < half) s[threadIdx.x] += s[threadIdx.x + half];
    }
    __syncthreads();
    if (threadIdx.x == 0) sum[t] = s[0];
    __syncthreads(); /* s[0] is read before the next tile writes it */
  }
}

__device__ static double combine(double a, double b, bool max) { return max ? fmax(a, b) : a + b; }

/* One block of CHECK_THREADS: v[0..tiles) becomes its exclusive prefix sums (max: its
 * exclusive prefix maxima, from 0) and v[tiles] the whole's; a contiguous chunk per
 * thread, the chunks' totals prefixed by thread 0 in between. */
__global__ void tile_prefix_kernel(double *v, uint64_t tiles, bool max) {
  __shared__ double s[CHECK_THREADS];
  uint64_t chunk = (tiles + CHECK_THREADS - 1) / CHECK_THREADS;
  uint64_t lo = threadIdx.x * chunk, hi = lo + chunk < tiles ? lo + chunk : tiles;
  double ts = 0;
  for (uint64_t t = lo; t < hi; t++) ts = combine(ts, v[t], max);
  s[threadIdx.x] = ts;
  __syncthreads();
  if (threadIdx.x == 0) {
    double ps = 0;
    for (int k = 0; k < CHECK_THREADS; k++) {
      double e = s[k];
      s[k] = ps;
      ps = combine(ps, e, max);
    }
    v[tiles] = ps;
  }
  __syncthreads();
  double ps = s[threadIdx.x];
  for (uint64_t t = lo; t < hi; t++) {
    double e = v[t];
    v[t] = ps;
    ps = combine(ps, e, max);
  }
}

/* Hillis-Steele over the block's values s[] (CHECK_THREADS, one a thread, v its own):
 * the inclusive sums (max: maxima); returns the exclusive one of the calling thread
 * (0 for thread 0). Leaves s for the caller to reuse after a __syncthreads. */
__device__ static double block_exclusive(double *s, double v, bool max) {
  s[threadIdx.x] = v;
  for (unsigned d = 1; d < CHECK_THREADS; d *= 2) {
    __syncthreads();
    double o = threadIdx.x >= d ? s[threadIdx.x - d] : 0;
    __syncthreads();
    s[threadIdx.x] = combine(s[threadIdx.x], o, max);
  }
  __syncthreads();
  return threadIdx.x ? s[threadIdx.x - 1] : 0;
}

/* A block per tile (grid-stride): every element's FP64 prefix, from its tile's
 * (pre_sum[t], exclusive) and the block's threads before it. y NULL: each tile's
 * largest |prefix| into tile_max[t], and the largest of all into *max_bits (a
 * non-negative double's bits order as the double does). Else (pre_max[t]: the largest
 * |prefix| before tile t) y[i] against its prefix by sum_rule_random with the largest
 * |prefix| up to i. */
__global__ void prefix_walk_kernel(const float *x, const float *y, uint64_t n, uint64_t tiles,
                                   const double *pre_sum, const double *pre_max, double *tile_max,
                                   unsigned long long *max_bits, unsigned long long *bad,
                                   unsigned long long *first) {
  __shared__ double s[CHECK_THREADS];
  for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    uint64_t i0 = t * SCAN_CHECK_TILE + (uint64_t)threadIdx.x * SCAN_CHECK_PER_THREAD;
    double ts = 0;
    for (int k = 0; k < SCAN_CHECK_PER_THREAD; k++)
      if (i0 + k < n) ts += (double)x[i0 + k];
    const double base = pre_sum[t] + block_exclusive(s, ts, false);
    double sum = base, top = 0; /* this thread's largest |prefix| */
    for (int k = 0; k < SCAN_CHECK_PER_THREAD && i0 + k < n; k++) {
      sum += (double)x[i0 + k];
      top = fmax(top, fabs(sum));
    }
    __syncthreads(); /* s is read before it is written again */
    if (!y) {
      block_exclusive(s, top, true);
      if (threadIdx.x == CHECK_THREADS - 1) {
        double m = fmax(s[threadIdx.x], 0.0);
        tile_max[t] = m;
        atomicMax(max_bits, (unsigned long long)__double_as_longlong(m));
      }
      __syncthreads();
      continue;
    }
    double running = fmax(pre_max[t], block_exclusive(s, top, true));
    __syncthreads();
    sum = base;
    for (int k = 0; k < SCAN_CHECK_PER_THREAD; k++) {
      uint64_t i = i0 + k;
      if (i >= n) break;
      sum += (double)x[i];
      running = fmax(running, fabs(sum));
      float got = y[i];
      if (!isfinite(got) || !(fabs((double)got - sum) <= sum_rule_random((double)(i + 1), running)))
        found(bad, first, i);
    }
  }
}

/* out[0] against the total by sum_rule_random at n terms. */
__global__ void check_reduce_kernel(const float *out, uint64_t n, const double *total,
                                    const unsigned long long *max_bits, unsigned long long *bad,
                                    unsigned long long *first) {
  double tol = sum_rule_random((double)n, __longlong_as_double((long long)*max_bits));
  float got = out[0];
  if (!isfinite(got) || !(fabs((double)got - *total) <= tol)) found(bad, first, 0);
}

/* Counts per block in shared memory when the bins fit (they are few, and global atomics
 * on few addresses would serialize), added to want[]; else global atomics. */
#define COUNT_SHARED_BINS 8192
__global__ void count_kernel(const float *x, uint64_t n, int bins, unsigned *want) {
  __shared__ unsigned local[COUNT_SHARED_BINS];
  const bool shared = bins <= COUNT_SHARED_BINS;
  const float scale = histogram_scale(bins);
  if (shared)
    for (int b = threadIdx.x; b < bins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x) {
    int b = histogram_bin(x[i], bins, scale);
    if (b >= 0) atomicAdd(shared ? &local[b] : &want[b], 1u);
  }
  __syncthreads();
  if (shared)
    for (int b = threadIdx.x; b < bins; b += blockDim.x)
      if (local[b]) atomicAdd(&want[b], local[b]);
}

__global__ void check_counts_kernel(const unsigned *got, const unsigned *want, int bins,
                                    unsigned long long *bad, unsigned long long *first) {
  for (int b = blockIdx.x * blockDim.x + threadIdx.x; b < bins; b += gridDim.x * blockDim.x)
    if (got[b] != want[b]) found(bad, first, (uint64_t)b);
}

/* The reduce, scan or histogram check of out against in[0] (n = f->p[0] elements),
 * its sums or counts in the workspace. */
static cudaError_t check_one_input(const struct runner_fresh *f, const float *x, const float *out,
                                   struct runner_check_slot *slot, cudaStream_t stream) {
  uint64_t n = (uint64_t)f->p[0];
  cudaError_t e = cudaSuccess;
  switch (f->check) {
  case RUNNER_CHECK_REDUCE:
  case RUNNER_CHECK_SCAN: {
    uint64_t tiles = (n + SCAN_CHECK_TILE - 1) / SCAN_CHECK_TILE;
    if (tiles == 0) break;
    /* sum[0..tiles] (prefixes, then the total), tmax[0..tiles] (each tile's largest
     * |prefix|, then the prefix maxima), then the largest |prefix|'s bits */
    if ((e = ws_reserve((2 * tiles + 3) * sizeof(double))) != cudaSuccess) return e;
    double *sum = (double *)ws, *tmax = sum + tiles + 1;
    unsigned long long *max_bits = (unsigned long long *)(tmax + tiles + 1);
    if ((e = cudaMemsetAsync(max_bits, 0, sizeof *max_bits, stream)) != cudaSuccess) return e;
    unsigned blocks = tiles < CHECK_MAX_BLOCKS ? (unsigned)tiles : CHECK_MAX_BLOCKS;
    tile_sums_kernel<<<blocks, CHECK_THREADS, 0, stream>>>(x, n, tiles, sum);
    tile_prefix_kernel<<<1, CHECK_THREADS, 0, stream>>>(sum, tiles, false);
    prefix_walk_kernel<<<blocks, CHECK_THREADS, 0, stream>>>(x, NULL, n, tiles, sum, NULL, tmax,
                                                             max_bits, NULL, NULL);
    if (f->check == RUNNER_CHECK_REDUCE) {
      check_reduce_kernel<<<1, 1, 0, stream>>>(out, n, sum + tiles, max_bits, &slot->out_bad,
                                               &slot->out_first);
    } else {
      tile_prefix_kernel<<<1, CHECK_THREADS, 0, stream>>>(tmax, tiles, true);
      prefix_walk_kernel<<<blocks, CHECK_THREADS, 0, stream>>>(
          x, out, n, tiles, sum, tmax, NULL, NULL, &slot->out_bad, &slot->out_first);
    }
    break;
  }
  case RUNNER_CHECK_HISTOGRAM: {
    int bins = (int)f->p[1];
    if (bins < 1 || bins > HISTOGRAM_MAX_BINS) return cudaErrorInvalidValue;
    if ((e = ws_reserve((size_t)bins * sizeof(unsigned))) != cudaSuccess) return e;
    unsigned *want = (unsigned *)ws;
    if ((e = cudaMemsetAsync(want, 0, (size_t)bins * sizeof(unsigned), stream)) != cudaSuccess)
      return e;
    count_kernel<<<blocks_for(n), CHECK_THREADS, 0, stream>>>(x, n, bins, want);
    check_counts_kernel<<<blocks_for((uint64_t)bins), CHECK_THREADS, 0, stream>>>(
        (const unsigned *)out, want, bins, &slot->out_bad, &slot->out_first);
    break;
  }
  default: break;
  }
  return e;
}

extern "C" cudaError_t runner_fresh_generate(const struct runner_fresh *f, float *const *in,
                                             uint32_t launch, cudaStream_t stream) {
  for (uint32_t i = 0; i < f->n_in && i < RUNNER_MAX_FRESH; i++) {
    if (f->floats[i] == 0) continue;
    fresh_fill_kernel<<<blocks_for(f->floats[i]), CHECK_THREADS, 0, stream>>>(
        in[i], f->floats[i], launch_seed(f, launch), f->stream[i], f->scale[i]);
  }
  return cudaGetLastError();
}

extern "C" cudaError_t runner_fresh_check(const struct runner_fresh *f, const float *const *in,
                                          const float *out, uint64_t out_floats, uint32_t launch,
                                          struct runner_check_slot *slot, cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(slot, 0, sizeof *slot, stream);
  /* Every first starts at UINT64_MAX (all bits set) for atomicMin. */
  if (e == cudaSuccess) e = cudaMemsetAsync(&slot->out_first, 0xff, sizeof slot->out_first, stream);
  if (e == cudaSuccess) e = cudaMemsetAsync(slot->in_first, 0xff, sizeof slot->in_first, stream);
  if (e != cudaSuccess) return e;
  uint64_t seed = launch_seed(f, launch);
  for (uint32_t i = 0; i < f->n_in && i < RUNNER_MAX_FRESH; i++)
    if (f->floats[i])
      fresh_input_kernel<<<blocks_for(f->floats[i]), CHECK_THREADS, 0, stream>>>(
          in[i], f->floats[i], seed, f->stream[i], f->scale[i], &slot->in_bad[i],
          &slot->in_first[i]);
  switch (f->check) {
  case RUNNER_CHECK_TRANSPOSE:
    check_transpose_kernel<<<blocks_for(out_floats), CHECK_THREADS, 0, stream>>>(
        in[0], out, f->p[0], f->p[1], &slot->out_bad, &slot->out_first);
    break;
  case RUNNER_CHECK_GEMM: {
    uint64_t rows = f->sample_rows == 0 || f->sample_rows >= (uint64_t)f->p[0] ? (uint64_t)f->p[0]
                                                                               : f->sample_rows;
    check_gemm_kernel<<<blocks_for(rows * (uint64_t)f->p[1]), CHECK_THREADS, 0, stream>>>(
        in[0], in[1], out, f->p[0], f->p[1], f->p[2], f->sample_rows, seed, &slot->out_bad,
        &slot->out_first);
    break;
  }
  case RUNNER_CHECK_STENCIL:
    check_stencil_kernel<<<blocks_for(out_floats), CHECK_THREADS, 0, stream>>>(
        in[0], out, f->p[0], f->p[1], &slot->out_bad, &slot->out_first);
    break;
  case RUNNER_CHECK_REDUCE:
  case RUNNER_CHECK_SCAN:
  case RUNNER_CHECK_HISTOGRAM:
    if ((e = check_one_input(f, in[0], out, slot, stream)) != cudaSuccess) return e;
    break;
  default: break;
  }
  return cudaGetLastError();
}
