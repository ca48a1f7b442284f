/* The lab's pipe form of scan best (lab only: run 2 measured it at 0.25 of CUB, so the
 * product's best is the register form at every n; RSH_NOTES.md): persistent blocks that
 * take tiles from a counter and keep D tiles' loads in flight (cp.async) over the
 * look-back, on the product's tile work and status words (kernels/scan/scan.cuh), and
 * scan_best_any, best's choice by n as run 2 ran it. */
#ifndef GPULAB_LAB_SCAN_PIPE_CUH
#define GPULAB_LAB_SCAN_PIPE_CUH

#include "kernels/core/cuda/cp_async.cuh"
#include "kernels/scan/scan.cuh"

#define SCAN_PIPE_BLOCK 256               /* threads a block (4 float4 a tile) */
#define SCAN_PIPE_DEPTH 2                 /* tiles in flight a block */
#define SCAN_PIPE_MIN_N ((size_t)1 << 23) /* run 2's best: the pipe form from here */

/* ---- pipe: persistent blocks, the next tiles' loads in flight over the look-back ---- */

__device__ __forceinline__ void scan_cp_async16(void *dst, const void *src, unsigned src_bytes) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void scan_cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void scan_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* Thread t's share of tile `tile` into its own slots of buf (float4 j*BLOCK + t, as
 * scan_best_tile holds them): 16-byte cp.async, zero-filled past n (src-size), nothing
 * for a tile past the end. Every thread reads back only what it copied itself, so the
 * wait_group alone makes it visible (no barrier). */
template <int BLOCK>
__device__ __forceinline__ void scan_pipe_issue(float4 *buf, const float *x, size_t n,
                                                unsigned tile, unsigned tiles) {
  constexpr int R = 32 / (BLOCK / 32);
  if (tile >= tiles) return;
  const int t = threadIdx.x;
  const size_t base = (size_t)tile * SCAN_BEST_TILE;
#pragma unroll
  for (int j = 0; j < R; j++) {
    const size_t idx = base + 4 * (size_t)(j * BLOCK + t);
    const unsigned bytes = idx + 3 < n ? 16u : idx < n ? (unsigned)(4 * (n - idx)) : 0u;
    scan_cp_async16(buf + j * BLOCK + t, bytes ? x + idx : x, bytes);
  }
}

/* pipe (lab candidate for best at large n): a persistent grid, occupancy x SMs blocks
 * of BLOCK threads. Tiles are taken from a counter (*counter, zeroed by the kernel
 * before) in the order the blocks ask, D ahead of the one being worked on: each block
 * keeps D tiles' loads in flight (cp.async into D+1 slots of dynamic shared memory,
 * 16 KiB a tile) while it scans and looks back for the current one, so an SM's loads
 * no longer stop while its blocks wait on their predecessors. The claim that feeds the
 * next issue is made one tile early (thread 0's atomic goes out before the tile's work
 * and its answer is parked after it), so its round trip is not in series with the
 * tile. Deadlock-free without any assumption on scheduling: the lowest unfinished
 * tile belongs to a running block (it asked for it), which works on its tiles in the
 * order it got them, so that tile is the one it is working on, and every tile below
 * it is done. The same tile work and status words as the register form (same temp but
 * the counter, same tolerance). */
template <int BLOCK, int D>
__global__ __launch_bounds__(BLOCK) void scan_pipe_kernel(const float *__restrict__ x,
                                                          float *__restrict__ y, size_t n,
                                                          unsigned long long *status,
                                                          unsigned *counter, unsigned tiles) {
  constexpr int R = 32 / (BLOCK / 32);
  extern __shared__ float4 scan_pipe_buf[]; /* (D + 1) slots of R * BLOCK float4 */
  __shared__ float seg[32];
  __shared__ unsigned s_tile[D + 1], s_next;
  const int t = threadIdx.x;
  if (t == 0) {
    /* before the wait (the claims need the zeroed counter): the first round claims
     * tiles 0 .. gridDim.x * D - 1 among all blocks, so block b asks L2 for tiles
     * b*D .. b*D + D-1, whoever gets them (x is not written by the kernel before) */
#pragma unroll
    for (int k = 0; k < D; k++) {
      const size_t first = ((size_t)blockIdx.x * D + k) * SCAN_BEST_TILE;
      if (first < n) {
        const size_t elems = n - first < SCAN_BEST_TILE ? n - first : SCAN_BEST_TILE;
        const unsigned bytes = (unsigned)(elems * sizeof(float)) & ~15u;
        if (bytes)
          asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(x + first), "r"(bytes)
                       : "memory");
      }
    }
  }
  pdl_wait(); /* counter and status were zeroed by the kernel before */
  if (t == 0) {
    for (int k = 0; k < D; k++) s_tile[k] = atomicAdd(counter, 1u);
    s_next = atomicAdd(counter, 1u);
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < D; k++) {
    scan_pipe_issue<BLOCK>(scan_pipe_buf + k * R * BLOCK, x, n, s_tile[k], tiles);
    scan_cp_async_commit();
  }
  int slot = 0;
  for (;;) {
    /* here every thread has passed a barrier since s_next and s_tile were written */
    const unsigned cur = s_tile[slot]; /* the same for every thread: the loop ends together */
    if (cur >= tiles) break;           /* later claims are larger still: nothing in flight */
    const int nx = slot == 0 ? D : slot - 1; /* the slot freed by the tile before */
    const unsigned next = s_next;
    scan_pipe_issue<BLOCK>(scan_pipe_buf + nx * R * BLOCK, x, n, next, tiles);
    scan_cp_async_commit();
    unsigned claim = 0;
    if (t == 0) {
      s_tile[nx] = next; /* read D iterations on, after barriers */
      claim = atomicAdd(counter, 1u);
    }
    scan_cp_async_wait<D>(); /* cur's group, committed D groups ago, has landed */
    float4 v[R];
#pragma unroll
    for (int j = 0; j < R; j++) v[j] = scan_pipe_buf[slot * R * BLOCK + j * BLOCK + t];
    scan_best_tile<BLOCK, true>(v, y, n, status, cur, seg); /* two barriers: s_next read */
    if (t == 0) s_next = claim;
    __syncthreads(); /* s_next and s_tile[nx] visible; seg free for the next tile */
    slot = slot == D ? 0 : slot + 1;
  }
}

/* Dynamic shared memory of scan_pipe_kernel<BLOCK, D>: D + 1 tiles. */
template <int D>
static inline size_t scan_pipe_smem() { return (size_t)(D + 1) * SCAN_BEST_TILE * sizeof(float); }

/* Blocks of scan_pipe_kernel<BLOCK, D> an SM can hold (asked once per device: the
 * shared-memory raise first, then the occupancy; 0 on error). */
template <int BLOCK, int D>
static inline int scan_pipe_per_sm() {
  static std::atomic<unsigned long long> raised{0};
  static std::atomic<int> per_sm[64];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 0;
  if (dev < 64 && per_sm[dev].load() > 0) return per_sm[dev].load();
  const void *f = reinterpret_cast<const void *>(&scan_pipe_kernel<BLOCK, D>);
  if (smem_raise_once(&raised, f, scan_pipe_smem<D>(), true) != cudaSuccess) return 0;
  int occ = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, scan_pipe_kernel<BLOCK, D>, BLOCK,
                                                    scan_pipe_smem<D>()) != cudaSuccess)
    return 0;
  if (dev < 64 && occ > 0) per_sm[dev].store(occ);
  return occ;
}

/* best's pipe form (lab candidate): D tiles in flight a block. Unaligned x or y take
 * the register form's 4-byte kernel. n > 0; arguments checked by scan_launch. */
template <int BLOCK, int D>
static inline cudaError_t scan_pipe_launch(const float *d_x, size_t n, float *d_y, void *d_temp,
                                           cudaStream_t s) {
  if (!aligned16(d_x) || !aligned16(d_y)) return scan_best_launch<BLOCK>(d_x, n, d_y, d_temp, s);
  const size_t tiles = scan_best_tiles(n);
  if (tiles > (size_t)INT_MAX) return cudaErrorInvalidValue;
  const int per_sm = scan_pipe_per_sm<BLOCK, D>(), sms = current_sm_count();
  if (per_sm < 1 || sms < 1) return cudaErrorInvalidConfiguration;
  size_t g = (size_t)per_sm * sms;
  if (g > tiles) g = tiles;
  unsigned long long *status = static_cast<unsigned long long *>(d_temp);
  cudaError_t e = scan_best_zero(d_temp, tiles, s);
  if (e != cudaSuccess) return e;
  return launch_pdl(scan_pipe_kernel<BLOCK, D>, dim3((unsigned)g), dim3(BLOCK), scan_pipe_smem<D>(),
                        s, d_x, d_y, n, status, reinterpret_cast<unsigned *>(status + tiles),
                        (unsigned)tiles);
}

/* best as run 2 ran it: the pipe form (SCAN_PIPE_BLOCK, SCAN_PIPE_DEPTH) from
 * SCAN_PIPE_MIN_N elements on, when x and y are 16-byte aligned; the register form at
 * SCAN_BEST_BLOCK threads below. n > 0. */
static inline cudaError_t scan_best_any(const float *d_x, size_t n, float *d_y, void *d_temp,
                                        cudaStream_t s) {
  if (n >= SCAN_PIPE_MIN_N && aligned16(d_x) && aligned16(d_y))
    return scan_pipe_launch<SCAN_PIPE_BLOCK, SCAN_PIPE_DEPTH>(d_x, n, d_y, d_temp, s);
  return scan_best_launch<SCAN_BEST_BLOCK>(d_x, n, d_y, d_temp, s);
}

#endif
