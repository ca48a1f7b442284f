/* The stencil experiment's descriptor: x (n) in, y out, checked against exact window
 * sums (any input magnitudes) within a float bound per element (best: a bound over its
 * tile's span); GB/s = 8n / t against the device's copy. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels/core/gen.h"
#include "kernels/core/reference_impl.h"
#include "kernels/stencil/stencil.h"
#include "kernels/stencil/stencil_tile.h"

/* Absolute part of the tolerance: windows of zeros compare exactly, a GPU that flushes
 * subnormal sums to zero still passes. */
#define TOL_FLOOR 1e-30

static void work(const struct exp_spec *s, struct exp_work *w) {
  w->bytes = 8.0 * s->p[STENCIL_N];
  w->flops = (2.0 * s->p[STENCIL_RADIUS] + 1) * s->p[STENCIL_N];
  w->counted =
      "bytes: x read once and y written once (the minimum); flops: 2r+1 adds per "
      "output";
}

/* best's tiles take radii up to STENCIL_BEST_MAX_RADIUS (above the API's range). */
static void cpu_describe(const struct exp_spec *s, struct exp_run *run) {
  if (run->variant != STENCIL_BEST || stencil_best_tile(s->p[STENCIL_RADIUS]) != 0) return;
  run->available = false;
  snprintf(run->reason, sizeof run->reason, "stencil best supports radii 0..%d",
           STENCIL_BEST_MAX_RADIUS);
}

/* ---- the reference: exact window sums ---- */

/* A finite float is m * 2^(e-150) with m < 2^24 and 0 <= e-1 <= 253 (e: the biased
 * exponent, subnormals m * 2^-149), so x * 2^149 is an integer below 2^277. Five
 * 64-bit limbs, two's complement, hold sums of up to 2^42 of them exactly, so a
 * sliding window adds and subtracts without ever losing a bit. */
#define XSUM_LIMBS 5
struct xsum {
  uint64_t limb[XSUM_LIMBS];
};

/* Adds (or, when negate, subtracts) the finite float v to s exactly. */
static void xsum_add(struct xsum *s, float v, bool negate) {
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  uint32_t e = bits >> 23 & 0xff;
  uint64_t m = bits & 0x7fffff;
  int shift = 0;
  if (e) {
    m |= 0x800000;
    shift = (int)e - 1;
  }
  int q = shift / 64, r = shift % 64;
  uint64_t part[2] = {m << r, r ? m >> (64 - r) : 0};
  uint64_t carry = 0;
  bool sub = ((bits >> 31) != 0) != negate;
  for (int i = q; i < XSUM_LIMBS; i++) {
    uint64_t p = i - q < 2 ? part[i - q] : 0, l = s->limb[i];
    if (sub) {
      uint64_t t = l - p, u = t - carry;
      carry = (l < p) | (t < carry);
      s->limb[i] = u;
    } else {
      uint64_t t = l + p, u = t + carry;
      carry = (t < p) | (u < carry);
      s->limb[i] = u;
    }
  }
}

/* s as a double, within 2^-52 relative: the top two nonzero limbs carry it. */
static double xsum_value(const struct xsum *s) {
  static const double scale[XSUM_LIMBS] = {0x1p-149, 0x1p-85, 0x1p-21, 0x1p43, 0x1p107};
  uint64_t l[XSUM_LIMBS];
  bool neg = s->limb[XSUM_LIMBS - 1] >> 63;
  uint64_t carry = 1;
  for (int i = 0; i < XSUM_LIMBS; i++) { /* |s|: two's complement negation */
    l[i] = neg ? ~s->limb[i] + carry : s->limb[i];
    carry = neg && carry && l[i] == 0;
  }
  int t = XSUM_LIMBS - 1;
  while (t > 0 && l[t] == 0) t--;
  double v = (double)l[t] * scale[t] + (t > 0 ? (double)l[t - 1] * scale[t - 1] : 0.0);
  return neg ? -v : v;
}

/* The stencil's window: exact sums of x and of |x|, and how many of its elements
 * are not finite (then the expected output is NaN, which nothing matches). */
struct window {
  struct xsum sum, abs_sum;
  int64_t n_nonfinite;
};

static void window_move(struct window *w, float v, bool enter) {
  if (!isfinite(v)) {
    w->n_nonfinite += enter ? 1 : -1;
    return;
  }
  xsum_add(&w->sum, v, !enter);
  xsum_add(&w->abs_sum, fabsf(v), !enter);
}

/* sum |x[j]| over finite x[j], j in [lo, hi) clipped to [0, n), in double. */
static double abs_sum(const float *x, int64_t n, int64_t lo, int64_t hi) {
  double s = 0;
  for (int64_t j = lo < 0 ? 0 : lo; j < hi && j < n; j++)
    if (isfinite(x[j])) s += fabs((double)x[j]);
  return s;
}

/* The expected outputs come from exact window sums (the inputs may be any floats,
 * so no rounding of a running sum may leak from one window into another). The
 * naive and shared tolerance bounds a float sum of 2r+1 terms and its division, per
 * element. Best (stencil_tile.h) differences double prefix sums that run over its
 * whole tile's span and restart at the next tile: each prefix is off by at most
 * ~45 * 2^-53 (the GPU's chains of at most ~20 double additions) or 2^14 * 2^-53 (the
 * CPU's sliding window over at most 2r+1 + 2T <= 14329 steps) times sum |x| over the
 * span, and the result is rounded once to float, so 2^-38 = 2^15 * 2^-53 covers both
 * with room: |y - ref| <= 2^-23 |ref| + 2^-38 * sum_span |x| / (2r+1) + 1e-30. That is
 * looser than naive's where a tile holds values far larger than a window's, tighter
 * where it does not (no float sum of 2r+1 terms). */
static void ref_check(const struct reference *ref, int variant, const float *out,
                      struct exp_check *c) {
  int64_t n = ref->spec.p[STENCIL_N], r = ref->spec.p[STENCIL_RADIUS];
  const float *x = ref->in[0];
  double width = (double)(2 * r + 1), rel = (double)(2 * r + 2) * REFERENCE_GRID / width;
  const bool best = variant == STENCIL_BEST;
  int64_t tile = best ? stencil_best_tile((int)r) : 0, at = -1;
  if (tile == 0) tile = n > 0 ? n : 1; /* a radius best cannot take: one span */
  int64_t lead = best ? stencil_best_lead((int)r) : 0;
  double span = 0;
  struct window w = {0};
  for (int64_t j = 0; j <= r && j < n; j++) window_move(&w, x[j], true);
  for (int64_t i = 0; i < n; i++) {
    double want = w.n_nonfinite ? NAN : xsum_value(&w.sum) / width, tol;
    if (best) {
      if (i / tile != at) {
        at = i / tile;
        span = abs_sum(x, n, at * tile - lead, at * tile + tile + r);
      }
      tol = 0x1p-23 * (isfinite(want) ? fabs(want) : 0) + 0x1p-38 * span / width + TOL_FLOOR;
    } else {
      tol = rel * xsum_value(&w.abs_sum) + TOL_FLOOR;
    }
    reference_compare(c, out[i], want, tol);
    if (tol > c->tolerance) c->tolerance = tol;
    if (i + r + 1 < n) window_move(&w, x[i + r + 1], true);
    if (i - r >= 0) window_move(&w, x[i - r], false);
  }
  snprintf(c->tolerance_rule, sizeof c->tolerance_rule, "%s",
           best ? "per element |y - ref| <= 2^-23 |ref| + 2^-38 * sum_tile_span |x| / (2r+1) "
                  "+ 1e-30"
                : "per element |y - ref| <= (2r+2) * 2^-23 * sum_window |x| / (2r+1) + 1e-30");
  snprintf(c->reference, sizeof c->reference, "cpu fp64 (exact window sums)");
}

/* ---- the descriptor ---- */

static const struct exp_param params[] = {
    [STENCIL_N] = {"n", 1, STENCIL_MAX_N, 1 << 22, EXP_PARAM_DIM, 9001,
                   "points"}, /* tiles: 256, ~4000 */
    [STENCIL_RADIUS] = {"radius", 0, STENCIL_MAX_RADIUS, 32, 0, 37, "halo width"},
};

static const struct exp_variant variants[] = {
    [STENCIL_NAIVE] = {"naive", "one thread per output, its 2r+1 inputs from global memory",
                       .cpu = EXP_CPU(cpu_stencil_naive, "direct 2r+1 float sum per output")},
    [STENCIL_SHARED] = {"shared", "the lecture's tile of 256 outputs plus halos in shared memory",
                        .cpu = EXP_CPU(
                            cpu_stencil_shared,
                            "tiles of 256: tile + halo copied to a local buffer, then summed")},
    [STENCIL_BEST] =
        {"best", "prefix sums per tile: the cost per output independent of the radius",
         .cpu = EXP_CPU_MAPPED(
             cpu_stencil_window,
             "sliding double window sum, restarted per tile of the GPU's best kernel")},
};
_Static_assert(EXP_COUNT_OF(variants) == STENCIL_BEST + 1, "one entry per variant");

static const struct exp_input_desc inputs[] = {{"x", GEN_X, 1.0f}};

/* A user's stencil: (x, y, n, r), blocks along n. Checked with naive's rule, which
 * bounds a float sum of the 2r+1 window terms in any order; best's rule is for its own
 * per-tile prefix sums and is tighter than a plain window sum can be held to. */
static const struct exp_user user = {
    .declaration = "extern \"C\" __global__ void %s(const float *x, float *y, int n, int r);",
    .signature = "extern \"C\" __global__ void kernel(const float* x, float* y, int n, int r)",
    .meaning =
        "y[i] = (the sum of x[j] for j in [i - r, i + r] inside [0, n)) / (2r + 1), for every i < n",
    EXP_USER_ARGS({EXP_USER_ARG_INPUT, 0}, {EXP_USER_ARG_OUTPUT, 0},
                  {EXP_USER_ARG_PARAM, STENCIL_N}, {EXP_USER_ARG_PARAM, STENCIL_RADIUS}),
    EXP_USER_GRID_1D(STENCIL_N),
    EXP_USER_BLOCK(256, 1),
    .template_source =
        "// y[i] = sum of x[i-r .. i+r] inside [0, n), / (2r+1). One thread per output.\n"
        "extern \"C\" __global__ void kernel(const float* x, float* y, int n, int r) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  float s = 0.0f;\n"
        "  for (int j = i - r; j <= i + r; ++j)\n"
        "    if (j >= 0 && j < n) s += x[j];\n"
        "  y[i] = s / (float)(2 * r + 1);\n"
        "}\n",
    .check_variant = STENCIL_NAIVE,
    .fresh_check = EXP_USER_CHECK_STENCIL,
};

const struct exp_desc exp_stencil = {
    .name = "stencil",
    .title = "Stencil",
    .doc = "1-D moving average over 2·radius+1 points, zero boundary. Figure: GB/s = 8n / t.",
    EXP_TABLES(params, variants, inputs),
    EXP_VECTOR_OF(STENCIL_N),   /* x of any shape given as data sets n */
    .timing = EXP_TIMING_SHORT, /* the lecture's */
    .work = work,
    .figure = EXP_FIGURE_GBPS,
    .ceiling = EXP_CEILING_COPY,
    .ref_check = ref_check,
    .cpu_describe = cpu_describe,
    .cpu_scratch_floats = stencil_cpu_scratch_floats,
    .user = &user,
};
