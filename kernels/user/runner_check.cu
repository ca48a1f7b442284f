/* Fresh inputs and the runner's own check of a timed launch (runner_check.h). The
 * definitions are the experiments' own, as their CPU references state them: transpose
 * exact, gemm within k 2^-23 sum_k |a b| of the FP64 product (on sampled rows), stencil
 * within (2r+2) 2^-23 sum_window |x| / (2r+1) + 1e-30 of the FP64 window mean. The output
 * is read against the input buffers, which the same check compares with what was
 * generated: a launch passes only when both hold. */
#include "kernels/user/runner_check.h"

#include <math.h>

#include "kernels/core/gen.h"

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
  default: break;
  }
  return cudaGetLastError();
}
