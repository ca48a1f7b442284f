/* The scan experiment's descriptor: x (n) in, y (n) out, each y[i] checked against the
 * FP64 prefix sum within the variant's bound on float rounding at i (a float addition
 * errs by at most 2^-24 of the partial sum under it, so y[i] is within depth x 2^-24 x
 * sum |x[0..i]|, depth the additions x[0..i] pass through in that variant); GB/s =
 * 8n / t (x read, y written) against the device's copy. */
#include <math.h>
#include <stdio.h>

#include "kernels/core/gen.h"
#include "kernels/core/reference_impl.h"
#include "kernels/core/sum_rule.h"
#include "kernels/scan/scan.h"

/* naive / shared: per level the tile's tree (Hillis-Steele 10 steps, Blelloch 21) and
 * the offset added, over the levels. best: 16 inside its tile, and per tile before i
 * at most 3 (a hop from an inclusive prefix: + window, + earlier windows, + aggregate)
 * plus one per window of aggregates passed: 5 per tile bounds both. cub: the same shape
 * for CUB 3.0's sm_90 float tiles (128 threads x 24 items = 3072), 8 per tile and 128
 * inside one. */
double scan_error_depth(int variant, size_t n, size_t i) {
  struct scan_levels L;
  switch (variant) {
  case SCAN_NAIVE: scan_levels_of(n, &L); return 11.0 * L.count + 1;
  case SCAN_SHARED: scan_levels_of(n, &L); return 22.0 * L.count + 1;
  case SCAN_BEST: return 5.0 * (double)(i / SCAN_BEST_TILE) + 48;
  case SCAN_CUB: return 8.0 * (double)(i / 3072) + 128;
  default: return 0;
  }
}

static void work(const struct exp_spec *s, struct exp_work *w) {
  const double n = s->p[SCAN_N];
  w->bytes = 8.0 * n;
  w->flops = n > 0 ? n - 1 : 0;
  w->counted =
      "bytes: x read once and y written once (the minimum); flops: n - 1 additions "
      "(a sequential scan's)";
}

/* Device temp of one launch: naive's and shared's levels of tile totals; best's status
 * word a tile (and one word more, scan_temp_bytes says why); CUB's, bounded from above
 * (a status word a tile of 1024 or more and 4 KiB: 175615 bytes at 2^26 on the H200). */
static uint64_t scratch_floats(const struct exp_spec *s, int variant) {
  const size_t n = (size_t)s->p[SCAN_N];
  struct scan_levels L;
  switch (variant) {
  case SCAN_NAIVE:
  case SCAN_SHARED: scan_levels_of(n, &L); return L.bytes / 4;
  case SCAN_BEST: return ((scan_best_tiles(n) + 1) * 8 + 255) / 256 * 256 / 4;
  case SCAN_CUB: return 4 * ((n + 1023) / 1024) + 1024;
  default: return 0;
  }
}

/* The CPU's naive and shared keep their levels of tile totals. */
static size_t cpu_scratch_floats(const struct exp_spec *s) {
  struct scan_levels L;
  scan_levels_of((size_t)s->p[SCAN_N], &L);
  return L.bytes / 4;
}

/* ---- the reference ---- */

/* Per element |y_i - ref_i| <= 1.01 * depth(i) * 2^-24 * sum_{k<=i} |x_k|
 * (scan_error_depth; 1.01 for the first-order bound's second-order terms), the FP64
 * prefixes of x and |x| computed as the comparison walks y (exact for gen.h's inputs:
 * multiples of 2^-23, fewer than 2^29 of them). */
static void ref_check(const struct reference *ref, int variant, const float *out,
                      struct exp_check *c) {
  const size_t n = (size_t)ref->spec.p[SCAN_N];
  const float *x = ref->in[0];
  snprintf(c->reference, sizeof c->reference, "cpu fp64 prefix sums");
  /* Users' kernels (SCAN_ANY_ORDER) on generated inputs: sum_rule.h's random rule at
   * every element, with the largest prefix up to it. */
  const bool random = variant == SCAN_ANY_ORDER && ref->spec.inputs[0].kind == EXP_INPUT_SEED;
  double max_prefix = 0, sum = 0, abs_sum = 0;
  for (size_t i = 0; i < n; i++) {
    sum += (double)x[i];
    abs_sum += fabs((double)x[i]);
    if (fabs(sum) > max_prefix) max_prefix = fabs(sum);
    const double terms = (double)i + 1,
                 tol = random ? sum_rule_random(terms, max_prefix)
                       : variant == SCAN_ANY_ORDER
                           ? sum_rule_any_order(terms, abs_sum)
                           : 1.01 * scan_error_depth(variant, n, i) * 0x1p-24 * abs_sum;
    reference_compare(c, out[i], sum, tol);
    if (tol > c->tolerance) c->tolerance = tol;
  }
  if (random) {
    snprintf(c->tolerance_rule, sizeof c->tolerance_rule,
             "per element |y - ref| <= 8 * 2^-24 * sqrt(i + 1) * max_{k<=i} |x_0 + ... + x_k|");
    return;
  }
  static const char *const rules[] = {[SCAN_NAIVE] = "(11 levels + 1)",
                                      [SCAN_SHARED] = "(22 levels + 1)",
                                      [SCAN_BEST] = "(5 (i / 4096) + 48)",
                                      [SCAN_CUB] = "(8 (i / 3072) + 128)",
                                      [SCAN_ANY_ORDER] = "i (any order)"};
  snprintf(c->tolerance_rule, sizeof c->tolerance_rule,
           "per element |y - ref| <= 1.01 %s 2^-24 sum_{k<=i} |x_k|",
           variant >= 0 && variant <= SCAN_ANY_ORDER ? rules[variant] : "0");
}

/* ---- the descriptor ---- */

static const struct exp_param params[] = {
    /* odd: 3 levels for naive and shared (1027 tiles of 1024, then 2), a tail of
     * 2051 in best's 257th tile of 4096, 3 past the last float4 */
    [SCAN_N] = {"n", 1, SCAN_MAX_N, 1 << 22, EXP_PARAM_DIM, 1050627},
};

static const struct exp_variant variants[] = {
    [SCAN_NAIVE] =
        {"naive", "Hillis-Steele in one block per tile of 1024, then a second pass",
         .cpu = EXP_CPU(
             cpu_scan_naive,
             "Hillis-Steele per tile of 1024 over the kernels' levels, then the add pass")},
    [SCAN_SHARED] =
        {"shared", "Blelloch's work-efficient tree per tile of 1024, then a second pass",
         .cpu = EXP_CPU(
             cpu_scan_shared,
             "Blelloch's sweeps per tile of 1024 over the kernels' levels, the add pass")},
    [SCAN_BEST] =
        {"best", "single pass, decoupled look-back: 4096-element tiles, 16-byte loads and stores",
         .cpu = EXP_CPU_MAPPED(
             cpu_scan_best,
             "the kernel's tile scans of 4096, tiles chained by their inclusive prefixes")},
    [SCAN_CUB] = {"cub", "cub::DeviceScan::InclusiveSum (the CUDA toolkit's CCCL): the reference",
                  .cpu = EXP_CPU_NONE("CUB needs the CUDA backend")},
};
_Static_assert(EXP_COUNT_OF(variants) == SCAN_VARIANTS, "one entry per variant");

static const struct exp_input_desc inputs[] = {{"x", GEN_X, 1.0f}};

/* A user's inclusive scan: (x, y, n). Checked by sum_rule.h at every y[i]
 * (SCAN_ANY_ORDER), as is every timed launch by the runner. The template does all the
 * work in block 0 (the others return at once), so that it needs no chaining of blocks
 * to be right at any tile. */
static const struct exp_user user = {
    .declaration = "extern \"C\" __global__ void %s(const float *x, float *y, int n);",
    .signature = "extern \"C\" __global__ void kernel(const float* x, float* y, int n)",
    .meaning = "y[i] = x[0] + ... + x[i] in float (the inclusive prefix sum), for every i < n",
    EXP_USER_ARGS({EXP_USER_ARG_INPUT, 0}, {EXP_USER_ARG_OUTPUT, 0}, {EXP_USER_ARG_PARAM, SCAN_N}),
    EXP_USER_GRID_1D(SCAN_N),
    EXP_USER_BLOCK(1024, 1),
    .template_source =
        "// y[i] = x[0] + ... + x[i]. Block 0 walks x in tiles of blockDim.x (1024): a\n"
        "// Hillis-Steele scan of each tile in shared memory, plus the carry of the tiles\n"
        "// before it. The other blocks return at once, so it is right at any grid; a\n"
        "// faster kernel gives every block a tile and chains them.\n"
        "extern \"C\" __global__ void kernel(const float* x, float* y, int n) {\n"
        "  __shared__ float s[1024];\n"
        "  __shared__ float carry;\n"
        "  if (blockIdx.x != 0) return;\n"
        "  if (threadIdx.x == 0) carry = 0.0f;\n"
        "  for (int base = 0; base < n; base += blockDim.x) {\n"
        "    int i = base + threadIdx.x;\n"
        "    s[threadIdx.x] = i < n ? x[i] : 0.0f;\n"
        "    __syncthreads();\n"
        "    for (int d = 1; d < blockDim.x; d *= 2) {\n"
        "      float add = threadIdx.x >= d ? s[threadIdx.x - d] : 0.0f;\n"
        "      __syncthreads();\n"
        "      s[threadIdx.x] += add;\n"
        "      __syncthreads();\n"
        "    }\n"
        "    if (i < n) y[i] = carry + s[threadIdx.x];\n"
        "    __syncthreads();\n"
        "    if (threadIdx.x == blockDim.x - 1) carry += s[threadIdx.x];\n"
        "    __syncthreads();\n"
        "  }\n"
        "}\n",
    .check_variant = SCAN_ANY_ORDER,
    .fresh_check = EXP_USER_CHECK_SCAN,
};

const struct exp_desc exp_scan = {
    .name = "scan",
    EXP_TABLES(params, variants, inputs),
    EXP_VECTOR_OF(SCAN_N), /* x of any shape given as data sets n */
    .timing = EXP_TIMING_SHORT,
    .work = work,
    .figure = EXP_FIGURE_GBPS,
    .ceiling = EXP_CEILING_COPY,
    .scratch_floats = scratch_floats,
    .ref_check = ref_check,
    .cpu_scratch_floats = cpu_scratch_floats,
    .user = &user,
};
