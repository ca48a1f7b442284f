/* The histogram experiment's descriptor: x (n) in, `bins` uint32 counts out, checked
 * exactly against the CPU's counts by the shared binning rule (histogram.h); GB/s =
 * (4n + 4 bins) / t (x read, the counts written) against the device's copy. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/gen.h"
#include "kernels/core/reference_impl.h"
#include "kernels/histogram/histogram.h"

long long histogram_ref(const float *x, size_t n, int bins, uint32_t *hist) {
  if (bins < 1 || bins > HISTOGRAM_MAX_BINS) return -1;
  memset(hist, 0, (size_t)bins * sizeof *hist);
  const float scale = histogram_scale(bins);
  long long counted = 0;
  for (size_t i = 0; i < n; i++) {
    const int b = histogram_bin(x[i], bins, scale);
    if (b >= 0) {
      hist[b]++;
      counted++;
    }
  }
  return counted;
}

static bool bins_ok(const struct exp_spec *s) {
  return s->p[HISTOGRAM_BINS] >= 1 && s->p[HISTOGRAM_BINS] <= HISTOGRAM_MAX_BINS;
}

static void output_shape(const struct exp_spec *s, struct exp_shape *shape) {
  *shape = exp_shape_1d(s->p[HISTOGRAM_BINS]);
}

static void work(const struct exp_spec *s, struct exp_work *w) {
  w->bytes = 4.0 * s->p[HISTOGRAM_N] + 4.0 * s->p[HISTOGRAM_BINS];
  w->flops = 0;
  w->counted = "bytes: x read once and the counts written once (the minimum); no flops";
}

/* Device temp of one run: CUB's, bounded from above (a private copy of the bins per
 * block, up to 1024 blocks, and 4 KiB: 541183 bytes at 256 bins and 138412543 at 65536
 * on the H200, 528 blocks); best's kept counts and ticket, bounded by a word for each
 * of the most bins it keeps, one more and 256 bytes (histogram_kept_bytes). */
static uint64_t scratch_floats(const struct exp_spec *s, int variant) {
  if (variant == HISTOGRAM_BEST) /* the most it keeps, at any bins it keeps them */
    return s->p[HISTOGRAM_BINS] <= HISTOGRAM_BEST_KEPT_BINS ? HISTOGRAM_BEST_KEPT_BINS + 1 + 64 : 0;
  return variant == HISTOGRAM_CUB ? 1024 * (uint64_t)s->p[HISTOGRAM_BINS] + 1024 : 0;
}

/* The CPU's shared keeps a pass's private bins, best its 4 copies of every bin and a
 * chunk's bin indices (histogram_cpu.c). */
static size_t cpu_scratch_floats(const struct exp_spec *s) {
  return 4 * (size_t)s->p[HISTOGRAM_BINS] + 4096;
}

/* Bins outside 1..65536 (from a backend's own callers; the API refuses them) have no
 * binning rule: every run is unavailable. */
static void cpu_describe(const struct exp_spec *s, struct exp_run *run) {
  if (bins_ok(s)) return;
  run->available = false;
  snprintf(run->reason, sizeof run->reason, "histogram bins must be 1..%d, not %d",
           HISTOGRAM_MAX_BINS, s->p[HISTOGRAM_BINS]);
}

/* ---- the reference: exact counts ---- */

static int ref_init(struct reference *ref) {
  if (!bins_ok(&ref->spec)) return 0; /* no rule: ref_check says so */
  uint32_t *hist = reference_alloc((size_t)ref->spec.p[HISTOGRAM_BINS], sizeof *hist);
  if (!hist) return -ENOMEM;
  histogram_ref(ref->in[0], (size_t)ref->spec.p[HISTOGRAM_N], ref->spec.p[HISTOGRAM_BINS], hist);
  ref->state = hist;
  return 0;
}

/* Every count equals the reference's, as uint32 (the output holds the counts' bits). */
static void ref_check(const struct reference *ref, int variant, const float *out,
                      struct exp_check *c) {
  const uint32_t *want = ref->state;
  const size_t bins = want ? (size_t)ref->spec.p[HISTOGRAM_BINS] : 0;
  for (size_t b = 0; b < bins; b++) {
    uint32_t got;
    memcpy(&got, out + b, sizeof got);
    const double err = got > want[b] ? (double)(got - want[b]) : (double)(want[b] - got);
    c->compared++;
    if (err > 0) c->mismatches++;
    if (err > c->max_abs_err) c->max_abs_err = err;
    if (want[b] && err / want[b] > c->max_rel_err) c->max_rel_err = err / want[b];
  }
  if (!want) c->mismatches = 1; /* bins outside 1..65536: nothing can match */
  snprintf(c->tolerance_rule, sizeof c->tolerance_rule,
           "exact: every uint32 count equals the reference's");
  snprintf(c->reference, sizeof c->reference, "cpu exact counts (the same binning rule)");
}

/* ---- the descriptor ---- */

static const struct exp_param params[] = {
    /* odd: a tail of 3 past the last float4; 257 bins: 32 copies of each in best */
    [HISTOGRAM_N] = {"n", 1, HISTOGRAM_MAX_N, 1 << 22, EXP_PARAM_DIM, 100003},
    [HISTOGRAM_BINS] = {"bins", 1, HISTOGRAM_MAX_BINS, 256, 0, 257},
};

static const struct exp_variant variants[] = {
    [HISTOGRAM_NAIVE] = {"naive", "one thread per element, a global atomicAdd on its bin",
                         .cpu = EXP_CPU(cpu_histogram_naive,
                                        "one increment per element on the output's bin")},
    [HISTOGRAM_SHARED] =
        {"shared",
         "per-block private histograms in shared memory, merged with global "
         "atomics (over 12288 bins: a pass over x per 12288)",
         .cpu = EXP_CPU(cpu_histogram_shared,
                        "a private histogram (<= 12288 bins a pass) per block of 64Ki, merged")},
    [HISTOGRAM_BEST] = {"best",
                        "persistent blocks, 16-byte loads, copies of each bin in at most 4 KiB "
                        "(16-bit packed above 16384 bins), a coalesced merge",
                        .cpu = EXP_CPU_MAPPED(
                            cpu_histogram_best,
                            "bins by a vectorizable loop per chunk, 4 interleaved copies, merged")},
    [HISTOGRAM_CUB] = {"cub",
                       "cub::DeviceHistogram::HistogramEven (the CUDA toolkit's CCCL): the "
                       "reference",
                       .cpu = EXP_CPU_NONE("CUB needs the CUDA backend")},
};
_Static_assert(EXP_COUNT_OF(variants) == HISTOGRAM_VARIANTS, "one entry per variant");

static const struct exp_input_desc inputs[] = {{"x", GEN_X, 1.0f}};

/* A user's histogram: (x, counts, n, bins), counts zeroed before every launch; the
 * binning rule is histogram_bin's, spelled out in the template. Checked exactly, as is
 * every timed launch by the runner. */
static const struct exp_user user = {
    .declaration =
        "extern \"C\" __global__ void %s(const float *x, unsigned int *counts, int n, "
        "int bins);",
    .signature =
        "extern \"C\" __global__ void kernel(const float* x, unsigned int* counts, int n, "
        "int bins)",
    .meaning =
        "counts[b] = how many x[i] fall in bin b: x in [-1, 1) goes to bin min(bins - 1, "
        "(int)((x + 1.0f) * (0.5f * bins))), others nowhere; counts are 0 before every "
        "launch",
    EXP_USER_ARGS({EXP_USER_ARG_INPUT, 0}, {EXP_USER_ARG_OUTPUT, 0},
                  {EXP_USER_ARG_PARAM, HISTOGRAM_N}, {EXP_USER_ARG_PARAM, HISTOGRAM_BINS}),
    EXP_USER_GRID_1D(HISTOGRAM_N),
    EXP_USER_BLOCK(256, 1),
    .template_source =
        "// counts[b] = how many x[i] fall in bin b of bins even bins over [-1, 1).\n"
        "// counts are 0 before each launch. One thread per element, a global atomic each.\n"
        "extern \"C\" __global__ void kernel(const float* x, unsigned int* counts, int n, "
        "int bins) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  float v = x[i];\n"
        "  if (!(v >= -1.0f && v < 1.0f)) return; // NaN and values outside: no bin\n"
        "  int b = (int)((v + 1.0f) * (0.5f * (float)bins));\n"
        "  atomicAdd(&counts[b < bins - 1 ? b : bins - 1], 1u);\n"
        "}\n",
    .check_variant = HISTOGRAM_NAIVE,
    .reset_zero = true,
    .fresh_check = EXP_USER_CHECK_HISTOGRAM,
};

const struct exp_desc exp_histogram = {
    .name = "histogram",
    EXP_TABLES(params, variants, inputs),
    EXP_VECTOR_OF(HISTOGRAM_N), /* x of any shape given as data sets n */
    .out_dtype = EXP_DTYPE_U32,
    .output_shape = output_shape,
    .timing = EXP_TIMING_SHORT,
    .work = work,
    .figure = EXP_FIGURE_GBPS,
    .ceiling = EXP_CEILING_COPY,
    .scratch_floats = scratch_floats,
    .ref_init = ref_init,
    .ref_check = ref_check,
    .cpu_describe = cpu_describe,
    .cpu_scratch_floats = cpu_scratch_floats,
    .user = &user,
};
