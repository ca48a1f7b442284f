/* The scan's CUDA side: each variant's plan (the kernel its run reports: naive's and
 * shared's first level, best's aligned form at n) and launch through scan_launch (scan.cuh),
 * with its temp storage (the levels, best's status words, CUB's): the run's own, kept
 * by the job for all its launches (temp_bytes sizes it). */
#include <stdio.h>

#include "kernels/backends/cuda/cuda_exp.h"
#include "kernels/scan/scan.cuh"

static int plan(const struct exp_spec *s, int variant, struct cuda_plan *p, char *why,
                size_t why_len) {
  const size_t n = (size_t)s->p[SCAN_N];
  switch (variant) {
  case SCAN_NAIVE:
    cuda_plan_set(p, KFUNC(scan_tile_kernel<SCAN_HILLIS_STEELE>), "scan_tile_kernel<hillis_steele>",
                  "tile of 1024 a block, 10 steps; then the tile totals' levels and an add pass");
    p->block = dim3(SCAN_TILE);
    p->grid = dim3(ceil_div((long long)n, SCAN_TILE));
    return 0;
  case SCAN_SHARED:
    cuda_plan_set(p, KFUNC(scan_tile_kernel<SCAN_BLELLOCH>), "scan_tile_kernel<blelloch>",
                  "tile of 1024 a block of 512, up- and down-sweep; then the levels, an add pass");
    p->block = dim3(SCAN_TILE / 2);
    p->grid = dim3(ceil_div((long long)n, SCAN_TILE));
    return 0;
  case SCAN_BEST: {
    if (scan_best_registers(n)) /* asks the driver once: before any timed launch */
      cuda_plan_set(p, KFUNC((scan_best_kernel<SCAN_BEST_BLOCK, true>)),
                    "scan_best_kernel<128,vec>",
                    "tile of 4096 a block, 8 float4 a thread in registers (one wave holds all)");
    else
      cuda_plan_set(p, KFUNC((scan_staged_kernel<SCAN_BEST_BLOCK, true>)),
                    "scan_staged_kernel<128,cs>",
                    "tile of 4096 a block staged in shared memory by cp.async (more an SM), "
                    "stores evict-first");
    p->block = dim3(SCAN_BEST_BLOCK);
    p->grid = dim3((unsigned)scan_best_tiles(n));
    const cudaError_t e = scan_staged_raise(); /* before the backend's occupancy query */
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      snprintf(why, why_len, "%s: %s", p->name, cudaGetErrorString(e));
      return -1;
    }
    return 0;
  }
  case SCAN_CUB: /* no kernel of ours: the run's kernel info names the call */
    cuda_plan_set(p, NULL, "cub::DeviceScan::InclusiveSum (CCCL)",
                  "CUB's single pass, decoupled look-back over tiles of 128 x 24 items");
    return 0;
  default: snprintf(why, why_len, "unknown scan variant %d", variant); return -1;
  }
}

static cudaError_t temp_bytes(const struct exp_spec *spec, int variant, size_t *bytes) {
  cudaError_t e = scan_temp_bytes(variant, (size_t)spec->p[SCAN_N], bytes);
  if (e == cudaSuccess && variant == SCAN_CUB && *bytes == 0)
    *bytes = 1; /* a NULL temp would be CUB's size query */
  return e;
}

/* On the run's kept temp (none where temp_bytes sized none): best's status words carry
 * the last launch's epoch, so best is one kernel. */
static cudaError_t launch(const struct cuda_launch *a) {
  return scan_launch(a->variant, a->d_in[0], (size_t)a->spec->p[SCAN_N], a->d_out, a->d_temp,
                     a->temp_bytes, true, a->stream);
}

extern const struct cuda_experiment cuda_exp_scan = {plan, launch, NULL, NULL, temp_bytes};
