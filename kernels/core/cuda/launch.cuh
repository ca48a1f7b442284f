/* Launch helpers shared by the kernels of several experiments (transpose_best.cu,
 * gemm_best.cu, gemm_tf32.cu, stencil_best.cu, histogram.cuh, scan.cuh, reduce.cuh):
 * alignment, the grouped launch order, the default streams, the device's limits read
 * once, raising the shared-memory limit once, programmatic dependent launch. */
#ifndef GPULAB_CORE_CUDA_LAUNCH_CUH
#define GPULAB_CORE_CUDA_LAUNCH_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include <atomic>
#include <mutex>

static inline bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* Block pid's tile (bm, bn) of a tiles_m x tiles_n grid of tiles when the 1-D grid
 * walks groups of `group` tile rows column by column: the blocks resident at once
 * cover a compact patch instead of a few whole tile rows. gemm: neighbours share A's
 * row panels and B's column panels in L2. transpose: the resident blocks write a few
 * thousand rows of B instead of all of them (all n rows of a 16384^2 B are 1 GiB
 * apart end to end: before this order 16384^2 reached 82% of copy, 8192^2 92%). */
__device__ __forceinline__ void grouped_tile(int pid, int tiles_m, int tiles_n, int group, int *bm,
                                             int *bn) {
  const int per_group = group * tiles_n;
  const int g = pid / per_group, first = g * group;
  const int rows = min(tiles_m - first, group);
  const int in = pid - g * per_group;
  *bm = first + in % rows;
  *bn = in / rows;
}

/* ---- launches ---- */

/* True for the legacy, per-thread and null streams (launchers refuse them). */
static inline bool cuda_is_default_stream(cudaStream_t s) {
  return s == 0 || s == cudaStreamLegacy || s == cudaStreamPerThread;
}

/* What plans and launchers read of a device (cudaDeviceGetAttribute's values). */
struct cuda_device_limits {
  int major, minor;  /* compute capability */
  int sms;           /* cudaDevAttrMultiProcessorCount */
  int smem_per_sm;   /* cudaDevAttrMaxSharedMemoryPerMultiprocessor, bytes */
  int smem_optin;    /* cudaDevAttrMaxSharedMemoryPerBlockOptin, bytes */
  int smem_reserved; /* cudaDevAttrReservedSharedMemoryPerBlock, bytes */
};

/* The current device's limits into *d. The driver is asked on a device's first call
 * (per file that calls this: a plan makes it, before any timed window, and its launcher
 * in the same file finds the values); later calls cost a cudaGetDevice and a copy, so a
 * launcher may call it at every launch and a timed launch asks the driver nothing.
 * Returns cudaSuccess or the first failed query's error (nothing is cached then). */
static inline cudaError_t cuda_device_limits_get(struct cuda_device_limits *d) {
  static std::mutex fill;
  static std::atomic<bool> ready[64];
  static struct cuda_device_limits cache[64];
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return e;
  const bool cacheable = dev >= 0 && dev < 64;
  if (cacheable && ready[dev].load(std::memory_order_acquire)) {
    *d = cache[dev];
    return cudaSuccess;
  }
  struct cuda_device_limits v = {};
  const struct {
    cudaDeviceAttr attr;
    int *out;
  } q[] = {{cudaDevAttrComputeCapabilityMajor, &v.major},
           {cudaDevAttrComputeCapabilityMinor, &v.minor},
           {cudaDevAttrMultiProcessorCount, &v.sms},
           {cudaDevAttrMaxSharedMemoryPerMultiprocessor, &v.smem_per_sm},
           {cudaDevAttrMaxSharedMemoryPerBlockOptin, &v.smem_optin},
           {cudaDevAttrReservedSharedMemoryPerBlock, &v.smem_reserved}};
  for (const auto &a : q)
    if ((e = cudaDeviceGetAttribute(a.out, a.attr, dev)) != cudaSuccess) return e;
  if (cacheable) {
    std::lock_guard<std::mutex> hold(fill);
    if (!ready[dev].load(std::memory_order_relaxed)) {
      cache[dev] = v;
      ready[dev].store(true, std::memory_order_release);
    }
  }
  *d = v;
  return cudaSuccess;
}

/* A kernel with more than the default 48 KiB of dynamic shared memory must have its
 * limit raised before its first launch on each device: done once per kernel and
 * device (bit d of *raised; one atomic per kernel), with the largest shared-memory
 * carveout when max_carveout (so the occupancy planned is the one launched). */
static inline cudaError_t smem_raise_once(std::atomic<unsigned long long> *raised, const void *func,
                                          size_t bytes, bool max_carveout) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return e;
  const unsigned long long bit = dev < 64 ? 1ull << dev : 0;
  if (bit && (raised->load() & bit)) return cudaSuccess;
  e = cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
  if (e == cudaSuccess && max_carveout)
    e = cudaFuncSetAttribute(func, cudaFuncAttributePreferredSharedMemoryCarveout,
                             (int)cudaSharedmemCarveoutMaxShared);
  if (e == cudaSuccess) raised->fetch_or(bit);
  return e;
}

/* ---- programmatic dependent launch (sm_90) ----
 * A kernel launched with launch_pdl may start while the kernel before it on the stream
 * is still running. Everything it does before pdl_wait() must not depend on that
 * kernel (it may read inputs that earlier work produced: the kernel before it started
 * only after that work ended); pdl_wait() returns once that kernel has finished and
 * its writes are visible. The kernel before it is combine.cuh's zero_kernel, which
 * lets its dependant start at once; or whatever kernel ran before on the stream, which
 * the dependant waits for before it reads or writes anything (its blocks still become
 * resident while that kernel drains: the launch's latency hides behind it). Where no
 * kernel precedes (or on a GPU before sm_90) the wait returns immediately. */
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/* The launch configuration of a PDL dependant (attr: its one attribute, the caller's). */
static inline cudaLaunchConfig_t pdl_config(dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                                            cudaLaunchAttribute *attr) {
  attr->id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr->val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cfg;
}

/* Launches kernel<<<grid, block, smem, s>>>(args...) as the programmatic dependant of
 * the kernel before it on s (see pdl_wait). Returns the launch's error. Works in
 * stream capture (the graph gets a programmatic edge). */
template <typename... KArgs, typename... Args>
static inline cudaError_t launch_pdl(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem,
                                     cudaStream_t s, Args... args) {
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t cfg = pdl_config(grid, block, smem, s, &attr);
  cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, static_cast<KArgs>(args)...);
  cudaError_t last = cudaGetLastError();
  return e != cudaSuccess ? e : last;
}

/* The same with func's arguments as cudaLaunchKernel takes them (a plan's launch). */
static inline cudaError_t launch_pdl_args(const void *func, dim3 grid, dim3 block, void **args,
                                          size_t smem, cudaStream_t s) {
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t cfg = pdl_config(grid, block, smem, s, &attr);
  cudaError_t e = cudaLaunchKernelExC(&cfg, func, args);
  cudaError_t last = cudaGetLastError();
  return e != cudaSuccess ? e : last;
}

#endif
