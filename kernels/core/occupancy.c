/* occupancy.h: cuda_occupancy.h's calculator over a table of architectures' limits. */
#include "kernels/core/occupancy.h"

#include <errno.h>
#include <stdio.h>

#ifdef GPULAB_HAVE_CUDA_OCCUPANCY
#include <cuda_occupancy.h>

/* cudaDeviceProp's limits per architecture (the CUDA C++ Programming Guide's table of
 * compute capabilities); the calculator knows each one's allocation granularities. */
struct arch_limits {
  int arch, threads_per_sm;
  size_t shared_per_sm, shared_per_block_optin;
};
static const struct arch_limits archs[] = {
    {80, 2048, 167936, 166912}, /* A100 */
    {86, 1536, 102400, 101376}, {87, 1536, 167936, 166912},
    {89, 1536, 102400, 101376}, {90, 2048, 233472, 232448}, /* H100, H200 */
};

static const struct arch_limits *arch_find(int arch) {
  for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
    if (archs[i].arch == arch) return &archs[i];
  return NULL;
}

static const char *limiter_name(unsigned factors) {
  if (factors & OCC_LIMIT_REGISTERS) return "registers";
  if (factors & OCC_LIMIT_SHARED_MEMORY) return "shared_memory";
  if (factors & OCC_LIMIT_WARPS) return "warps";
  if (factors & OCC_LIMIT_BLOCKS) return "blocks";
  return "barriers";
}

int occupancy_theoretical(const struct occupancy_launch *l, struct occupancy *out, char *why,
                          size_t why_len) {
  const struct arch_limits *a = arch_find(l->arch);
  if (!a) {
    snprintf(why, why_len, "gpulab knows no occupancy limits of sm_%d", l->arch);
    return -ENOTSUP;
  }
  cudaOccDeviceProp p = {
      .computeMajor = l->arch / 10,
      .computeMinor = l->arch % 10,
      .maxThreadsPerBlock = 1024,
      .maxThreadsPerMultiprocessor = a->threads_per_sm,
      .regsPerBlock = 65536,
      .regsPerMultiprocessor = 65536,
      .warpSize = 32,
      .sharedMemPerBlock = 49152,
      .sharedMemPerMultiprocessor = a->shared_per_sm,
      .numSms = 1, /* per SM: the count does not enter */
      .sharedMemPerBlockOptin = a->shared_per_block_optin,
      .reservedSharedMemPerBlock = 1024,
  };
  size_t shared = (size_t)l->static_shared_bytes + (size_t)l->dynamic_shared_bytes;
  /* gpulab-runner opts a kernel in to its dynamic shared bytes past 48 KiB. */
  cudaOccFuncAttributes f = {
      .maxThreadsPerBlock = 1024,
      .numRegs = l->registers,
      .sharedSizeBytes = (size_t)l->static_shared_bytes,
      .shmemLimitConfig = shared > p.sharedMemPerBlock ? FUNC_SHMEM_LIMIT_OPTIN
                                                       : FUNC_SHMEM_LIMIT_DEFAULT,
      .maxDynamicSharedSizeBytes = (size_t)l->dynamic_shared_bytes,
      .numBlockBarriers = 1,
  };
  cudaOccDeviceState s = {.carveoutConfig = SHAREDMEM_CARVEOUT_DEFAULT}; /* the driver picks */
  cudaOccResult r = {0};
  cudaOccError e = cudaOccMaxActiveBlocksPerMultiprocessor(&r, &p, &f, &s, l->threads_per_block,
                                                           (size_t)l->dynamic_shared_bytes);
  if (e != CUDA_OCC_SUCCESS || r.activeBlocksPerMultiprocessor == 0) {
    snprintf(why, why_len,
             "no block of %d threads with %d registers each and %zu shared bytes fits on an "
             "SM of sm_%d",
             l->threads_per_block, l->registers, shared, l->arch);
    return -EINVAL;
  }
  int warps_per_block = (l->threads_per_block + 31) / 32;
  *out = (struct occupancy){
      .blocks_per_sm = r.activeBlocksPerMultiprocessor,
      .warps_per_sm = r.activeBlocksPerMultiprocessor * warps_per_block,
      .max_warps_per_sm = a->threads_per_sm / 32,
      .limiter = limiter_name(r.limitingFactors),
      .blocks_by_registers = r.blockLimitRegs,
      .blocks_by_shared = r.blockLimitSharedMem,
      .blocks_by_warps = r.blockLimitWarps,
      .blocks_by_blocks = r.blockLimitBlocks,
      .registers_per_block = r.allocatedRegistersPerBlock,
      .shared_bytes_per_block = (long long)r.allocatedSharedMemPerBlock,
  };
  out->fraction = (double)out->warps_per_sm / out->max_warps_per_sm;
  return 0;
}

#else

int occupancy_theoretical(const struct occupancy_launch *l, struct occupancy *out, char *why,
                          size_t why_len) {
  (void)l;
  (void)out;
  snprintf(why, why_len, "gpulab was built without the CUDA toolkit's cuda_occupancy.h");
  return -ENOTSUP;
}

#endif
