/* The transpose's sector-exact kernel, transpose_sec_kernel<TC, TR, GROUP>: templates
 * only, so that transpose_best.cu instantiates the tile shapes `best` picks and
 * bench/lab/transpose_tiles.cu others beside them. Private to those two. */
#ifndef GPULAB_TRANSPOSE_SEC_CUH
#define GPULAB_TRANSPOSE_SEC_CUH

#include "kernels/core/cuda/launch.cuh"

/* ---- sec<TC, TR>: rows not whole float4, and few columns ----
 *
 * Where m or n is not a multiple of 4 the tile kernel's 4-byte stores leave every 32-byte
 * sector of B partly written per instruction (4x the L2 write requests, and
 * read-modify-writes where a sector leaves L2 incomplete). This kernel makes every store
 * a whole, 32-byte-aligned sector run: B row J's segments start where J*m + r is a
 * multiple of 8, i.e. block (bm, bn) writes, for each of its TC B rows J = c0 + jj, the
 * TR floats B[J][r0 - d_J .. r0 - d_J + TR) with d_J = (J m) mod 8 and r0 = TR bm
 * (segments of consecutive bm tile the row exactly; tiles_r = ceil((m + 7) / TR) covers
 * it; only a row's two ends, where it meets rows J -+ 1, are clipped and written float by
 * float). So the tile needs A rows r0 - 7 .. r0 + TR - 1 (7 of them shared with the block
 * above, re-read from L2) of columns c0 .. c0 + TC - 1.
 *  - Loads: 4-byte, warp-coalesced (a warp reads L = min(32, TC) consecutive floats of
 *    32 / L rows per instruction: whole 128-byte runs, any alignment), all of a thread's
 *    (TR + 8) TC / 256 loads issued before the first use; element (r, jj) goes to
 *    buf[jj][r - r0 + d_J] (pitch TR + 1) when that is in [0, TR).
 *  - Stores: a warp moves 4 B rows x 8 float4 (4 scalar LDS each, pitch TR + 1: 32 banks)
 *    and writes them as 16-byte stores, 4 x 128 contiguous bytes starting on a sector
 *    boundary; chunks at a row's ends go out float by float.
 * Launch: 256 threads, grid tiles_r * tiles_c in grouped order (GROUP tile rows a group);
 * b 16-byte aligned. best's instances: 32 x 64 in groups of 256 tile rows (odd shapes:
 * whole columns of tiles up to m = 16377, so that consecutive blocks write consecutive
 * segments of the same B rows) and 16 x 256 in groups of 32 (n < 32). */
#define SEC_GROUP 32 /* tile rows a group of the launch order, best's */

template <int TC, int TR>
struct sec_shape {
  static constexpr int PITCH = TR + 1;
  static constexpr int L = TC < 32 ? TC : 32;               /* lanes along a row in the loads */
  static constexpr int RW = 32 / L;                         /* rows a warp instruction reads */
  static constexpr int CH = TC / L;                         /* columns a lane reads per row */
  static constexpr int ROWS = TR + 8;                       /* rows r0 - 8 .. r0 + TR - 1 */
  static constexpr int LI = (ROWS + 8 * RW - 1) / (8 * RW); /* load rounds per thread */
  static constexpr int NCH = TC * TR / 4 / 256;             /* float4 chunks a thread stores */
  static constexpr int GPR = TR / 32;                       /* 8-chunk groups a B row has */
  static_assert(TC % L == 0 && TR % 32 == 0 && TC % 4 == 0, "tile shape");
  static_assert((TC * TR / 4) % 256 == 0, "chunks per thread");
};

template <int TC, int TR, int GROUP>
__device__ __forceinline__ void sec_tile(int block, int m, int n, int *bm, int *bn) {
  grouped_tile(block, (m + 7 + TR - 1) / TR, (n + TC - 1) / TC, GROUP, bm, bn);
}

/* Load phase of thread t into buf (TC x PITCH floats). */
template <int TC, int TR>
__device__ __forceinline__ void sec_load(const float *__restrict__ a, float *buf, int m, int n,
                                         int bm, int bn, int t) {
  using S = sec_shape<TC, TR>;
  const int w = t >> 5, l = t & 31;
  const int r0 = TR * bm, c0 = TC * bn;
  const int lr = l / S::L, lc = l % S::L; /* row within the instruction, column lane */
  const int m7 = m & 7;
  float v[S::LI][S::CH];
  bool ok[S::LI][S::CH];
#pragma unroll
  for (int i = 0; i < S::LI; i++) {
    const int p = (w + 8 * i) * S::RW + lr; /* row slot: r = r0 - 8 + p */
    const int r = r0 - 8 + p;
#pragma unroll
    for (int h = 0; h < S::CH; h++) {
      const int jj = lc + S::L * h, c = c0 + jj;
      const int q = p - 8 + (((c & 7) * m7) & 7);
      ok[i][h] = p < S::ROWS && r >= 0 && r < m && c < n && q >= 0 && q < TR;
      v[i][h] = ok[i][h] ? __ldg(a + (long long)r * n + c) : 0.f;
    }
  }
#pragma unroll
  for (int i = 0; i < S::LI; i++) {
    const int p = (w + 8 * i) * S::RW + lr;
#pragma unroll
    for (int h = 0; h < S::CH; h++) {
      const int jj = lc + S::L * h, c = c0 + jj;
      const int q = p - 8 + (((c & 7) * m7) & 7);
      if (ok[i][h]) buf[jj * S::PITCH + q] = v[i][h];
    }
  }
}

/* Store phase of thread t from buf. */
template <int TC, int TR>
__device__ __forceinline__ void sec_store(float *__restrict__ b, const float *buf, int m, int n,
                                          int bm, int bn, int t) {
  using S = sec_shape<TC, TR>;
  const int w = t >> 5, l = t & 31;
  const int r0 = TR * bm, c0 = TC * bn;
  const int m7 = m & 7;
#pragma unroll
  for (int i = 0; i < S::NCH; i++) {
    const int g = 8 * i + w; /* group: 4 B rows x 8 chunks */
    const int jj = 4 * (g / S::GPR) + (l >> 3), vq = 8 * (g % S::GPR) + (l & 7);
    const int J = c0 + jj;
    if (J >= n) continue;
    const int d = ((J & 7) * m7) & 7;
    const int rr = r0 - d + 4 * vq; /* A row of the chunk's first element */
    if (rr + 3 < 0 || rr >= m) continue;
    const float *src = buf + jj * S::PITCH + 4 * vq;
    const float x0 = src[0], x1 = src[1], x2 = src[2], x3 = src[3];
    float *dst = b + (long long)J * m + rr;
    if (rr >= 0 && rr + 3 < m) {
      __stwb(reinterpret_cast<float4 *>(dst), make_float4(x0, x1, x2, x3));
    } else {
      if (rr >= 0) dst[0] = x0;
      if (rr + 1 >= 0 && rr + 1 < m) dst[1] = x1;
      if (rr + 2 >= 0 && rr + 2 < m) dst[2] = x2;
      if (rr + 3 < m) dst[3] = x3;
    }
  }
}

template <int TC, int TR, int GROUP = SEC_GROUP>
__global__ __launch_bounds__(256) void transpose_sec_kernel(const float *__restrict__ a,
                                                            float *__restrict__ b, int m, int n) {
  __shared__ float buf[TC * sec_shape<TC, TR>::PITCH];
  pdl_wait(); /* as transpose_best_kernel's */
  int bm, bn;
  sec_tile<TC, TR, GROUP>(blockIdx.x, m, n, &bm, &bn);
  sec_load<TC, TR>(a, buf, m, n, bm, bn, threadIdx.x);
  __syncthreads();
  sec_store<TC, TR>(b, buf, m, n, bm, bn, threadIdx.x);
}

#endif
