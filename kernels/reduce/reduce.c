/* The reduce experiment's descriptor: x (n) in, one float out, checked against the FP64
 * sum within each variant's bound on float rounding (a float addition errs by at most
 * 2^-24 of the partial sum under it, so the sum is within depth x 2^-24 x sum |x|, depth
 * the additions an element passes through in that variant); GB/s = 4n / t (x read
 * once) against the device's copy. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/core/gen.h"
#include "kernels/core/reference_impl.h"
#include "kernels/core/sum_rule.h"
#include "kernels/reduce/reduce.h"

/* cub's bound holds on any GPU of at least this many SMs (CUB's grid follows them). */
#define CUB_MIN_SMS 16

static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

double reduce_error_depth(int variant, size_t n) {
  if (n <= 1) return 0;
  const double blocks = (double)ceil_div(n, REDUCE_BLOCK);
  switch (variant) {
  case REDUCE_NAIVE: return (double)(n - 1); /* n - 1 atomics, in any order */
  case REDUCE_SHARED:
  case REDUCE_WARP: return REDUCE_TREE_DEPTH + blocks - 1; /* a block tree, then its atomic */
  case REDUCE_BEST: {
    /* a thread's float4 chain (any alignment: at most the aligned grid's, plus one),
     * head or tail, the float4's lanes, the block's shuffles, then the last block's
     * sum of the partials: a chain per thread and its shuffles */
    const unsigned g = reduce_best_grid(n, NULL, NULL);
    const size_t p = (size_t)g * REDUCE_BLOCK, n4 = n / 4 + 1;
    return (double)ceil_div(n4, p) + 1 + 2 + REDUCE_TREE_DEPTH + (double)ceil_div(g, REDUCE_BLOCK) +
           REDUCE_TREE_DEPTH;
  }
  case REDUCE_CUB: {
    /* An upper bound for CUB 3.0's sm_90 policy (256 threads x 16 items a tile, even
     * share over at least 5 blocks an SM, a 16-item sequential chain per tile in the
     * worst case, the same again over the block partials), for any SM count from
     * CUB_MIN_SMS up (the lab's rule at the fewest SMs, and any number of partials). */
    const size_t tiles = ceil_div(n, 4096), lo = tiles < 5 * CUB_MIN_SMS ? tiles : 5 * CUB_MIN_SMS;
    return 16.0 * (double)ceil_div(tiles, lo) + 10 + 16.0 * (double)ceil_div(tiles, 4096) + 10 + 16;
  }
  default: return 0;
  }
}

static void output_shape(const struct exp_spec *s, struct exp_shape *shape) {
  *shape = exp_shape_1d(1);
}

static void work(const struct exp_spec *s, struct exp_work *w) {
  const double n = s->p[REDUCE_N];
  w->bytes = 4.0 * n;
  w->flops = n > 0 ? n - 1 : 0;
  w->counted =
      "bytes: x read once (the minimum; the one float written is not counted); "
      "flops: n - 1 additions";
}

/* Device temp of one launch: best's ticket and block partials; CUB's, bounded from
 * above (CUB sizes it by the device: a partial per block of at most 65536, 21503 bytes
 * at 2^26 on the H200). */
static uint64_t scratch_floats(const struct exp_spec *s, int variant) {
  const size_t n = (size_t)s->p[REDUCE_N];
  if (variant == REDUCE_BEST) /* the ticket's 256 bytes, then a partial per block */
    return (256 + (4 * (uint64_t)reduce_best_grid(n, NULL, NULL) + 255) / 256 * 256) / 4;
  if (variant == REDUCE_CUB) {
    uint64_t partials = ceil_div(n, 1024);
    return (partials < 65536 ? partials : 65536) + 1024;
  }
  return 0;
}

/* The CPU's best keeps its threads' float4 accumulators and its block partials
 * (cpu_reduce_best). */
static size_t cpu_scratch_floats(const struct exp_spec *s) {
  for (int i = 0; i < s->n_variants; i++)
    if (s->variants[i] == REDUCE_BEST)
      return (size_t)reduce_best_grid((size_t)s->p[REDUCE_N], NULL, NULL) * (4 * REDUCE_BLOCK + 1);
  return 0;
}

/* ---- the reference ---- */

struct reduce_ref {
  double sum, abs_sum; /* of x, FP64, and of |x| (the built-ins' tolerances' scale) */
  double max_prefix;   /* max_k |x[0] + ... + x[k]|: the users' rule on generated inputs */
};

static int ref_init(struct reference *ref) {
  struct reduce_ref *r = malloc(sizeof *r);
  if (!r) return -ENOMEM;
  const float *x = ref->in[0];
  const size_t n = (size_t)ref->spec.p[REDUCE_N];
  r->sum = 0, r->abs_sum = 0, r->max_prefix = 0; /* FP64: exact for gen.h's inputs */
  for (size_t i = 0; i < n; i++) {
    r->sum += (double)x[i];
    r->abs_sum += fabs((double)x[i]);
    if (fabs(r->sum) > r->max_prefix) r->max_prefix = fabs(r->sum);
  }
  ref->state = r;
  return 0;
}

/* |out - sum| <= 1.01 * depth * 2^-24 * sum |x| (reduce_error_depth; 1.01 for the
 * first-order bound's second-order terms), plus n * 2^-126 for naive, shared and warp,
 * whose float atomics flush subnormal partial sums. naive's bound passes sum |x| from
 * n = 2^24 on: there it only says the sum is finite. */
static void ref_check(const struct reference *ref, int variant, const float *out,
                      struct exp_check *c) {
  const struct reduce_ref *r = ref->state;
  const size_t n = (size_t)ref->spec.p[REDUCE_N];
  snprintf(c->reference, sizeof c->reference, "cpu fp64 sum");
  if (variant == REDUCE_ANY_ORDER) { /* users' kernels: sum_rule.h */
    const bool generated = ref->spec.inputs[0].kind == EXP_INPUT_SEED;
    c->tolerance = generated ? sum_rule_random((double)n, r->max_prefix)
                             : sum_rule_any_order((double)n, r->abs_sum);
    reference_compare(c, out[0], r->sum, c->tolerance);
    snprintf(c->tolerance_rule, sizeof c->tolerance_rule, "%s",
             generated ? "|sum - ref| <= 8 * 2^-24 * sqrt(n) * max_k |x_0 + ... + x_k|"
                       : "|sum - ref| <= 1.01 * (n - 1) * 2^-24 * sum |x| (any order)");
    return;
  }
  const bool atomics = variant == REDUCE_NAIVE || variant == REDUCE_SHARED ||
                       variant == REDUCE_WARP;
  const double tol = 1.01 * reduce_error_depth(variant, n) * 0x1p-24 * r->abs_sum +
                     (atomics ? (double)n * 0x1p-126 : 0);
  reference_compare(c, out[0], r->sum, tol);
  c->tolerance = tol;
  snprintf(c->tolerance_rule, sizeof c->tolerance_rule,
           "|sum - ref| <= 1.01 * %.0f * 2^-24 * sum |x| (%.0f: the longest chain of float adds)",
           reduce_error_depth(variant, n), reduce_error_depth(variant, n));
}

/* ---- the descriptor ---- */

static const struct exp_param params[] = {
    /* odd: a tail of 3 floats, float4 chains of 3 and 4 in best's 245 blocks */
    [REDUCE_N] = {"n", 1, REDUCE_MAX_N, 1 << 22, EXP_PARAM_DIM, 1000003},
};

static const struct exp_variant variants[] = {
    [REDUCE_NAIVE] = {"naive", "one thread per element, one atomicAdd each on the one output",
                      .cpu = EXP_CPU(cpu_reduce_naive, "one float sum in index order")},
    [REDUCE_SHARED] = {"shared", "a tree in shared memory per block of 256, one atomic per block",
                       .cpu = EXP_CPU(
                           cpu_reduce_shared,
                           "blocks of 256 summed by the kernel's tree, block sums in order")},
    [REDUCE_WARP] = {"warp", "warp shuffles per block of 256, one atomic per block",
                     .cpu = EXP_CPU(
                         cpu_reduce_warp,
                         "blocks of 256 summed by the kernel's butterflies, block sums in order")},
    [REDUCE_BEST] = {"best",
                     "one pass, 16-byte loads 4 in flight per thread, block partials summed in a "
                     "fixed order: deterministic",
                     .cpu = EXP_CPU_MAPPED(
                         cpu_reduce_best,
                         "the kernel's float4 accumulators per thread, its shuffles and partials")},
    [REDUCE_CUB] = {"cub", "cub::DeviceReduce::Sum (the CUDA toolkit's CCCL): the reference",
                    .cpu = EXP_CPU_NONE("CUB needs the CUDA backend")},
};
_Static_assert(EXP_COUNT_OF(variants) == REDUCE_VARIANTS, "one entry per variant");

static const struct exp_input_desc inputs[] = {{"x", GEN_X, 1.0f}};

/* A user's sum: (x, out, n), out zeroed before every launch so that blocks may add
 * into it. Checked by sum_rule.h (REDUCE_ANY_ORDER), as is every timed launch by the
 * runner. */
static const struct exp_user user = {
    .declaration = "extern \"C\" __global__ void %s(const float *x, float *out, int n);",
    .signature = "extern \"C\" __global__ void kernel(const float* x, float* out, int n)",
    .meaning = "out[0] = x[0] + ... + x[n-1] in float; out[0] is 0.0f before every launch",
    EXP_USER_ARGS({EXP_USER_ARG_INPUT, 0}, {EXP_USER_ARG_OUTPUT, 0},
                  {EXP_USER_ARG_PARAM, REDUCE_N}),
    EXP_USER_GRID_1D(REDUCE_N),
    EXP_USER_BLOCK(256, 1),
    .template_source =
        "// out[0] = sum of x[0..n). out[0] is 0 before each launch. A tree per block of\n"
        "// 256 (one element per thread) in shared memory, then one atomicAdd per block.\n"
        "extern \"C\" __global__ void kernel(const float* x, float* out, int n) {\n"
        "  __shared__ float s[256];\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  s[threadIdx.x] = i < n ? x[i] : 0.0f;\n"
        "  __syncthreads();\n"
        "  for (int half = blockDim.x / 2; half > 0; half /= 2) {\n"
        "    if (threadIdx.x < half) s[threadIdx.x] += s[threadIdx.x + half];\n"
        "    __syncthreads();\n"
        "  }\n"
        "  if (threadIdx.x == 0) atomicAdd(out, s[0]);\n"
        "}\n",
    .check_variant = REDUCE_ANY_ORDER,
    .reset_zero = true,
    .fresh_check = EXP_USER_CHECK_REDUCE,
};

const struct exp_desc exp_reduce = {
    .name = "reduce",
    EXP_TABLES(params, variants, inputs),
    EXP_VECTOR_OF(REDUCE_N), /* x of any shape given as data sets n */
    .output_shape = output_shape,
    .timing = EXP_TIMING_SHORT,
    .work = work,
    .figure = EXP_FIGURE_GBPS,
    .ceiling = EXP_CEILING_COPY,
    .scratch_floats = scratch_floats,
    .ref_init = ref_init,
    .ref_check = ref_check,
    .cpu_scratch_floats = cpu_scratch_floats,
    .user = &user,
};
