/* The theoretical occupancy of a kernel's block on an SM architecture, without a GPU:
 * NVIDIA's own calculator (the CUDA toolkit's header-only cuda_occupancy.h, the same
 * rules as cudaOccupancyMaxActiveBlocksPerMultiprocessor) fed with the limits that
 * cudaGetDeviceProperties reports for the architectures gpulab knows. So that a user
 * sees at submission what bounds the warps per SM: registers, shared memory, the block
 * size, or the SM's count of blocks. Knows no CUDA runtime. */
#ifndef GPULAB_OCCUPANCY_H
#define GPULAB_OCCUPANCY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One launch shape and what the compiler said its kernel uses (ptxas -v). */
struct occupancy_launch {
  int arch;              /* 90: sm_90 */
  int threads_per_block; /* block x * y * z */
  int registers;         /* per thread */
  int static_shared_bytes, dynamic_shared_bytes;
};

struct occupancy {
  int blocks_per_sm, warps_per_sm, max_warps_per_sm;
  double fraction; /* warps_per_sm / max_warps_per_sm */
  /* What stops one more block: "registers", "shared_memory", "warps" (the block's
   * size against the SM's threads), "blocks" (the SM's count of blocks) or "barriers";
   * several may bind at once, this names the first of them in that order. */
  const char *limiter;
  /* Blocks per SM each resource alone would allow. */
  int blocks_by_registers, blocks_by_shared, blocks_by_warps, blocks_by_blocks;
  int registers_per_block;          /* as allocated, rounded to the granularity */
  long long shared_bytes_per_block; /* as allocated, the system's reserve included */
};

/* Fills out for l. Returns 0; -ENOTSUP with why when the architecture is not one
 * gpulab knows the limits of, or gpulab was built without cuda_occupancy.h; -EINVAL
 * with why when no block of this shape fits on an SM (too many threads, registers or
 * shared bytes). */
int occupancy_theoretical(const struct occupancy_launch *l, struct occupancy *out, char *why,
                          size_t why_len);

#ifdef __cplusplus
}
#endif
#endif
