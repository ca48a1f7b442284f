/* CPU inputs and expected outputs of every experiment (reference.h). GEMM and the
 * pipeline precompute their FP64 answers once per job; transpose and the stencil
 * are cheap enough to recompute inside reference_check (the stencil's window sums
 * exactly, whatever the inputs' magnitudes). */
#include "kernels/reference.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/core/gen.h"
#include "kernels/stencil/stencil_best.h"

#define GRID (1.0 / 8388608.0) /* 2^-23: the grid gen_uniform's values lie on */
#define PHASE_SCALE 3.14159265f
/* Absolute part of the stencil's tolerance: windows of zeros compare exactly, a
 * GPU that flushes subnormal sums to zero still passes. */
#define REFERENCE_STENCIL_TOL_FLOOR 1e-30

struct reference {
  struct exp_spec spec;
  size_t out_len;
  const float *a, *b, *x;   /* inputs, given or owned[]; NULL where the type has none */
  float *owned[EXP_MAX_INPUTS]; /* inputs generated here, by slot */
  /* gemm: expected rows (FP64) and each element's sum_k |a*b|, which the variant's
   * rule scales into its tolerance */
  int n_rows;               /* rows compared */
  int *rows;                /* n_rows row indices, ascending */
  double *want, *mag;       /* n_rows * n each; pipeline: want has out_len */
  bool sampled;
};

void reference_fill(float *h, size_t n, uint64_t seed, int stream) {
  for (size_t i = 0; i < n; i++) h[i] = gen_uniform(seed, (uint32_t)stream, i);
}

void reference_fill_phases(float *h, size_t n, uint64_t seed) {
  /* One float multiply, nothing else, so a GPU generator makes the same bits. */
  for (size_t i = 0; i < n; i++) h[i] = gen_uniform(seed, GEN_X, i) * PHASE_SCALE;
}

/* malloc that never returns NULL for a zero-sized request that succeeded. */
static void *alloc_array(size_t n, size_t size) {
  if (n != 0 && n > SIZE_MAX / size) return NULL;
  return malloc(n ? n * size : 1);
}

/* Sets *dst to input slot: given[slot] when the caller has it, else generated from
 * the slot's seed into owned[slot]. Returns 0 or -ENOMEM. */
static int take_input(struct reference *ref, const float *const *given, int slot,
                      const float **dst) {
  if (given && given[slot]) {
    *dst = given[slot];
    return 0;
  }
  const struct exp_spec *s = &ref->spec;
  struct exp_shape shape;
  exp_input_shape(s, slot, &shape);
  size_t n = (size_t)exp_shape_count(&shape);
  float *h = alloc_array(n, sizeof *h);
  if (!h) return -ENOMEM;
  uint64_t seed = s->inputs[slot].value;
  if (s->type == EXP_PIPELINE)
    reference_fill_phases(h, n, seed);
  else if (slot == 1)
    reference_fill(h, n, seed, GEN_B);
  else
    reference_fill(h, n, seed, s->type == EXP_STENCIL ? GEN_X : GEN_A);
  ref->owned[slot] = h;
  *dst = h;
  return 0;
}

/* Expected rows of C = A B in FP64, looping i-k-j so B and the accumulators are
 * read by rows, and per element sum_k |a*b|. */
static void gemm_expect(struct reference *ref) {
  int n = ref->spec.u.gemm.n, k = ref->spec.u.gemm.k;
  for (int r = 0; r < ref->n_rows; r++) {
    const float *a_row = ref->a + (size_t)ref->rows[r] * k;
    double *want = ref->want + (size_t)r * n, *mag = ref->mag + (size_t)r * n;
    memset(want, 0, (size_t)n * sizeof *want);
    memset(mag, 0, (size_t)n * sizeof *mag);
    for (int kk = 0; kk < k; kk++) {
      double a_ik = a_row[kk];
      const float *b_row = ref->b + (size_t)kk * n;
      for (int j = 0; j < n; j++) {
        double p = a_ik * b_row[j];
        want[j] += p;
        mag[j] += fabs(p);
      }
    }
  }
}

static int gemm_new(struct reference *ref, const float *const *given) {
  const struct exp_spec *s = &ref->spec;
  int m = s->u.gemm.m, n = s->u.gemm.n, k = s->u.gemm.k;
  if (take_input(ref, given, 0, &ref->a) < 0 || take_input(ref, given, 1, &ref->b) < 0)
    return -ENOMEM;
  bool big = (uint64_t)m * n * k > REFERENCE_GEMM_FULL_MAX_FMAS;
  ref->n_rows = big && m > REFERENCE_GEMM_SAMPLE_ROWS ? REFERENCE_GEMM_SAMPLE_ROWS : m;
  ref->sampled = ref->n_rows < m;
  ref->rows = alloc_array((size_t)ref->n_rows, sizeof *ref->rows);
  ref->want = alloc_array((size_t)ref->n_rows * n, sizeof *ref->want);
  ref->mag = alloc_array((size_t)ref->n_rows * n, sizeof *ref->mag);
  if (!ref->rows || !ref->want || !ref->mag) return -ENOMEM;
  /* Evenly spread, first and last included: row r of R is r (m-1) / (R-1). */
  for (int r = 0; r < ref->n_rows; r++)
    ref->rows[r] = ref->n_rows == 1 ? 0
                                    : (int)((int64_t)r * (m - 1) / (ref->n_rows - 1));
  gemm_expect(ref);
  return 0;
}

static int pipeline_new(struct reference *ref, const float *const *given) {
  int terms = ref->spec.u.pipeline.terms;
  ref->want = alloc_array(ref->out_len, sizeof *ref->want);
  if (!ref->want || take_input(ref, given, 0, &ref->x) < 0) return -ENOMEM;
  /* The kernel's sinf argument is the float product (float)k * x; the reference
   * takes that same argument, then sin, division and sum in double. */
  for (size_t i = 0; i < ref->out_len; i++) {
    double sum = 0;
    for (int k = 1; k <= terms; k++) sum += sin((double)((float)k * ref->x[i])) / k;
    ref->want[i] = sum;
  }
  return 0;
}

/* Output length of spec, or -1 when a size is negative. */
static int64_t spec_out_len(const struct exp_spec *s) {
  switch (s->type) {
  case EXP_TRANSPOSE:
    if (s->u.transpose.m < 0 || s->u.transpose.n < 0) return -1;
    return (int64_t)s->u.transpose.m * s->u.transpose.n;
  case EXP_GEMM:
    if (s->u.gemm.m < 0 || s->u.gemm.n < 0 || s->u.gemm.k < 0) return -1;
    return (int64_t)s->u.gemm.m * s->u.gemm.n;
  case EXP_STENCIL:
    if (s->u.stencil.n < 0 || s->u.stencil.radius < 0) return -1;
    return s->u.stencil.n;
  case EXP_PIPELINE:
    if (s->u.pipeline.chunk < 0 || s->u.pipeline.chunks < 0 || s->u.pipeline.terms < 0)
      return -1;
    return (int64_t)s->u.pipeline.chunk * s->u.pipeline.chunks;
  default: return -1;
  }
}

int reference_new(const struct exp_spec *spec, const float *const *given,
                  struct reference **out) {
  *out = NULL;
  int64_t len = spec_out_len(spec);
  if (len < 0) return -EINVAL;
  struct reference *ref = calloc(1, sizeof *ref);
  if (!ref) return -ENOMEM;
  ref->spec = *spec;
  ref->out_len = (size_t)len;
  int rc = 0;
  switch (spec->type) {
  case EXP_TRANSPOSE: rc = take_input(ref, given, 0, &ref->a); break;
  case EXP_GEMM: rc = gemm_new(ref, given); break;
  case EXP_STENCIL: rc = take_input(ref, given, 0, &ref->x); break;
  default: rc = pipeline_new(ref, given); break;
  }
  if (rc < 0) goto fail;
  *out = ref;
  return 0;
fail:
  reference_free(ref);
  return rc;
}

void reference_free(struct reference *ref) {
  if (!ref) return;
  for (int i = 0; i < EXP_MAX_INPUTS; i++) free(ref->owned[i]);
  free(ref->rows);
  free(ref->want);
  free(ref->mag);
  free(ref);
}

const float *reference_input(const struct reference *ref, int which) {
  switch (which) {
  case GEN_A: return ref->a;
  case GEN_B: return ref->b;
  case GEN_X: return ref->x;
  default: return NULL;
  }
}

size_t reference_output_len(const struct reference *ref) { return ref->out_len; }

/* ---- checking ---- */

/* Folds one element into check. Non-finite outputs are mismatches but stay out of
 * the error maxima, which are reported as finite numbers. */
static void compare(struct exp_check *c, float got, double want, double tol) {
  c->compared++;
  if (!isfinite(got)) {
    c->mismatches++;
    return;
  }
  double err = fabs((double)got - want);
  double rel = err / fmax(fabs(want), 1e-30);
  if (err > c->max_abs_err) c->max_abs_err = err;
  if (rel > c->max_rel_err) c->max_rel_err = rel;
  if (!(err <= tol)) c->mismatches++;
}

static void check_transpose(const struct reference *ref, int variant, const float *out,
                            struct exp_check *c) {
  int m = ref->spec.u.transpose.m, n = ref->spec.u.transpose.n;
  if (variant == TRANSPOSE_COPY) {
    for (size_t i = 0; i < ref->out_len; i++) compare(c, out[i], ref->a[i], 0);
    snprintf(c->tolerance_rule, sizeof c->tolerance_rule, "exact: out[i] == A[i]");
    snprintf(c->reference, sizeof c->reference, "input (copy)");
    return;
  }
  /* B[x*m+y] = A[y*n+x], walked in 32x32 blocks so neither side thrashes the cache. */
  for (int y0 = 0; y0 < m; y0 += 32)
    for (int x0 = 0; x0 < n; x0 += 32)
      for (int y = y0; y < m && y < y0 + 32; y++)
        for (int x = x0; x < n && x < x0 + 32; x++)
          compare(c, out[(size_t)x * m + y], ref->a[(size_t)y * n + x], 0);
  snprintf(c->tolerance_rule, sizeof c->tolerance_rule, "exact: B[x*m+y] == A[y*n+x]");
  snprintf(c->reference, sizeof c->reference, "cpu exact transpose");
}

/* FP32 variants: an FP32 dot product of k terms is within k * 2^-23 * sum |a*b| (twice
 * the textbook bound, so any summation order and FMA passes). TF32 (gemm tf32) keeps
 * 10 mantissa bits per operand: the mma.sync kernel rounds them (each off by at most
 * 2^-11 relative), the Hopper wgmma kernel lets the tensor cores truncate them (less
 * than 2^-10, always towards zero), so a product may be off by almost 2^-9 relative.
 * Inputs a client uploads can reach that: all 0x3f801fff (1 + 2^-10 - 2^-23) give
 * err = 1.997 * 2^-10 * sum |a*b|, and all-positive uniform ones 0.92 * 2^-10 at
 * k = 32; random signs cancel most of it (0.43 * 2^-10 at 256x384x96). Truncation only
 * shrinks products, so the FP32 term still holds, doubled because the tensor cores may
 * truncate inside an mma's sum of 8 products and the accumulator:
 * (2^-9 + k * 2^-22) * sum |a*b|. A lost k8 slice or a misplaced fragment is off by
 * whole products, far more at the tested sizes (sqrt(8)/3 against 2^-9 * k/4 typical). */
static void check_gemm(const struct reference *ref, int variant, const float *out,
                       struct exp_check *c) {
  int n = ref->spec.u.gemm.n, k = ref->spec.u.gemm.k;
  bool tf32 = variant == GEMM_TF32;
  double scale = tf32 ? 0x1p-9 + (double)k * 0x1p-22 : (double)k * GRID;
  for (int r = 0; r < ref->n_rows; r++) {
    const float *got = out + (size_t)ref->rows[r] * n;
    const double *want = ref->want + (size_t)r * n, *mag = ref->mag + (size_t)r * n;
    for (int j = 0; j < n; j++) {
      double tol = scale * mag[j];
      compare(c, got[j], want[j], tol);
      if (tol > c->tolerance) c->tolerance = tol;
    }
  }
  c->sampled = ref->sampled;
  c->rows_checked = ref->n_rows;
  snprintf(c->tolerance_rule, sizeof c->tolerance_rule, "%s",
           tf32 ? "per element |c - ref| <= (2^-9 + k * 2^-22) * sum_k |a*b| (TF32 operands)"
                : "per element |c - ref| <= k * 2^-23 * sum_k |a*b|");
  snprintf(c->reference, sizeof c->reference, "cpu fp64");
}

/* ---- exact window sums for the stencil ---- */

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
 * element. Best (stencil_best.h) differences double prefix sums that run over its
 * whole tile's span and restart at the next tile: each prefix is off by at most
 * ~45 * 2^-53 (the GPU's chains of at most ~20 double additions) or 2^14 * 2^-53 (the
 * CPU's sliding window over at most 2r+1 + 2T <= 14329 steps) times sum |x| over the
 * span, and the result is rounded once to float, so 2^-38 = 2^15 * 2^-53 covers both
 * with room: |y - ref| <= 2^-23 |ref| + 2^-38 * sum_span |x| / (2r+1) + 1e-30. That is
 * looser than naive's where a tile holds values far larger than a window's, tighter
 * where it does not (no float sum of 2r+1 terms). */
static void check_stencil(const struct reference *ref, int variant, const float *out,
                          struct exp_check *c) {
  int64_t n = ref->spec.u.stencil.n, r = ref->spec.u.stencil.radius;
  const float *x = ref->x;
  double width = (double)(2 * r + 1), rel = (double)(2 * r + 2) * GRID / width;
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
      tol = 0x1p-23 * (isfinite(want) ? fabs(want) : 0) + 0x1p-38 * span / width +
            REFERENCE_STENCIL_TOL_FLOOR;
    } else {
      tol = rel * xsum_value(&w.abs_sum) + REFERENCE_STENCIL_TOL_FLOOR;
    }
    compare(c, out[i], want, tol);
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

static void check_pipeline(const struct reference *ref, const float *out,
                           struct exp_check *c) {
  double tol = 2e-6 * ref->spec.u.pipeline.terms + 1e-6;
  for (size_t i = 0; i < ref->out_len; i++) compare(c, out[i], ref->want[i], tol);
  c->tolerance = tol;
  snprintf(c->tolerance_rule, sizeof c->tolerance_rule, "|y - ref| <= 2e-6 * terms + 1e-6");
  snprintf(c->reference, sizeof c->reference, "cpu fp64");
}

void reference_check(const struct reference *ref, int variant, const float *out,
                     struct exp_check *check) {
  memset(check, 0, sizeof *check);
  check->done = true;
  switch (ref->spec.type) {
  case EXP_TRANSPOSE: check_transpose(ref, variant, out, check); break;
  case EXP_GEMM: check_gemm(ref, variant, out, check); break;
  case EXP_STENCIL: check_stencil(ref, variant, out, check); break;
  default: check_pipeline(ref, out, check); break;
  }
  check->passed = check->mismatches == 0;
}
