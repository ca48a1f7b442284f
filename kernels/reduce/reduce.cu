/* The reduce's CUDA side: each variant's plan (the kernel its run reports) and launch
 * through reduce_launch (reduce.cuh), with its temp storage (best's ticket and partials,
 * CUB's): the run's own, kept by the job for all its launches (temp_bytes sizes it). */
#include <stdio.h>

#include "kernels/backends/cuda/cuda_exp.h"
#include "kernels/reduce/reduce.cuh"

static int plan(const struct exp_spec *s, int variant, struct cuda_plan *p, char *why,
                size_t why_len) {
  const size_t n = (size_t)s->p[REDUCE_N];
  switch (variant) {
  case REDUCE_NAIVE:
    cuda_plan_set(p, KFUNC(reduce_naive_kernel<REDUCE_BLOCK>), "reduce_naive_kernel<256>",
                  "thread per element, 256 per block; an atomicAdd each on the one output");
    break;
  case REDUCE_SHARED:
    cuda_plan_set(p, KFUNC((reduce_block_kernel<REDUCE_BLOCK, false>)),
                  "reduce_block_kernel<256,tree>",
                  "thread per element, 256 per block; shared-memory tree, an atomic a block");
    break;
  case REDUCE_WARP:
    cuda_plan_set(p, KFUNC((reduce_block_kernel<REDUCE_BLOCK, true>)),
                  "reduce_block_kernel<256,shuffle>",
                  "thread per element, 256 per block; warp shuffles, an atomic a block");
    break;
  case REDUCE_BEST:
    cuda_plan_set(p, KFUNC((reduce_best_kernel<REDUCE_BLOCK, REDUCE_BEST_UNROLL>)),
                  "reduce_best_kernel<256,4>",
                  "persistent, 4 float4 loads in flight a thread; last block sums the partials");
    p->block = dim3(REDUCE_BLOCK);
    p->grid = dim3(reduce_best_grid(n, NULL, NULL));
    return 0;
  case REDUCE_CUB: /* no kernel of ours: the run's kernel info names the call */
    cuda_plan_set(p, NULL, "cub::DeviceReduce::Sum (CCCL)",
                  "CUB's kernels: even-share blocks of 256 x 16, then one tile over partials");
    return 0;
  default: snprintf(why, why_len, "unknown reduce variant %d", variant); return -1;
  }
  p->block = dim3(REDUCE_BLOCK);
  p->grid = dim3(ceil_div((long long)n, REDUCE_BLOCK));
  return 0;
}

static cudaError_t temp_bytes(const struct exp_spec *spec, int variant, size_t *bytes) {
  cudaError_t e = reduce_temp_bytes(variant, (size_t)spec->p[REDUCE_N], bytes);
  if (e == cudaSuccess && variant == REDUCE_CUB && *bytes == 0)
    *bytes = 1; /* a NULL temp would be CUB's size query */
  return e;
}

/* On the run's kept temp (none where temp_bytes sized none): best's ticket is 0 from
 * the last launch, so best is one kernel. */
static cudaError_t launch(const struct cuda_launch *a) {
  return reduce_launch(a->variant, a->d_in[0], (size_t)a->spec->p[REDUCE_N], a->d_out,
                       a->output_zeroed, a->d_temp, a->temp_bytes, true, a->stream);
}

extern const struct cuda_experiment cuda_exp_reduce = {plan, launch, NULL, NULL, temp_bytes};
