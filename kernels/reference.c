/* CPU inputs and expected outputs of every experiment (reference.h). GEMM and the
 * pipeline precompute their FP64 answers once per job; transpose and the stencil
 * are cheap enough to recompute exactly inside reference_check. */
#include "kernels/reference.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/gen.h"

#define GRID (1.0 / 8388608.0) /* 2^-23: the grid gen_uniform's values lie on */
#define PHASE_SCALE 3.14159265f

struct reference {
  struct exp_spec spec;
  size_t out_len;
  float *a, *b, *x;         /* inputs; NULL where the type has none */
  /* gemm: expected rows (FP64) and their per-element tolerances */
  int n_rows;               /* rows compared */
  int *rows;                /* n_rows row indices, ascending */
  double *want, *tol;       /* n_rows * n each; pipeline: want has out_len */
  double max_tol;
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

static float *new_filled(size_t n, uint64_t seed, int stream) {
  float *h = alloc_array(n, sizeof *h);
  if (h) reference_fill(h, n, seed, stream);
  return h;
}

/* Expected rows of C = A B in FP64, looping i-k-j so B and the accumulators are
 * read by rows; tolerance per element is k * 2^-23 * sum_k |a*b|. */
static void gemm_expect(struct reference *ref) {
  int n = ref->spec.u.gemm.n, k = ref->spec.u.gemm.k;
  ref->max_tol = 0;
  for (int r = 0; r < ref->n_rows; r++) {
    const float *a_row = ref->a + (size_t)ref->rows[r] * k;
    double *want = ref->want + (size_t)r * n, *tol = ref->tol + (size_t)r * n;
    memset(want, 0, (size_t)n * sizeof *want);
    memset(tol, 0, (size_t)n * sizeof *tol);
    for (int kk = 0; kk < k; kk++) {
      double a_ik = a_row[kk];
      const float *b_row = ref->b + (size_t)kk * n;
      for (int j = 0; j < n; j++) {
        double p = a_ik * b_row[j];
        want[j] += p;
        tol[j] += fabs(p);
      }
    }
    for (int j = 0; j < n; j++) {
      tol[j] *= (double)k * GRID;
      if (tol[j] > ref->max_tol) ref->max_tol = tol[j];
    }
  }
}

static int gemm_new(struct reference *ref) {
  const struct exp_spec *s = &ref->spec;
  int m = s->u.gemm.m, n = s->u.gemm.n, k = s->u.gemm.k;
  ref->a = new_filled((size_t)m * k, s->seed, GEN_A);
  ref->b = new_filled((size_t)k * n, s->seed, GEN_B);
  bool big = (uint64_t)m * n * k > REFERENCE_GEMM_FULL_MAX_FMAS;
  ref->n_rows = big && m > REFERENCE_GEMM_SAMPLE_ROWS ? REFERENCE_GEMM_SAMPLE_ROWS : m;
  ref->sampled = ref->n_rows < m;
  ref->rows = alloc_array((size_t)ref->n_rows, sizeof *ref->rows);
  ref->want = alloc_array((size_t)ref->n_rows * n, sizeof *ref->want);
  ref->tol = alloc_array((size_t)ref->n_rows * n, sizeof *ref->tol);
  if (!ref->a || !ref->b || !ref->rows || !ref->want || !ref->tol) return -ENOMEM;
  /* Evenly spread, first and last included: row r of R is r (m-1) / (R-1). */
  for (int r = 0; r < ref->n_rows; r++)
    ref->rows[r] = ref->n_rows == 1 ? 0
                                    : (int)((int64_t)r * (m - 1) / (ref->n_rows - 1));
  gemm_expect(ref);
  return 0;
}

static int pipeline_new(struct reference *ref) {
  const struct exp_spec *s = &ref->spec;
  int terms = s->u.pipeline.terms;
  ref->x = alloc_array(ref->out_len, sizeof *ref->x);
  ref->want = alloc_array(ref->out_len, sizeof *ref->want);
  if (!ref->x || !ref->want) return -ENOMEM;
  reference_fill_phases(ref->x, ref->out_len, s->seed);
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

int reference_new(const struct exp_spec *spec, struct reference **out) {
  *out = NULL;
  int64_t len = spec_out_len(spec);
  if (len < 0) return -EINVAL;
  struct reference *ref = calloc(1, sizeof *ref);
  if (!ref) return -ENOMEM;
  ref->spec = *spec;
  ref->out_len = (size_t)len;
  int rc = 0;
  switch (spec->type) {
  case EXP_TRANSPOSE:
    ref->a = new_filled(ref->out_len, spec->seed, GEN_A);
    if (!ref->a) rc = -ENOMEM;
    break;
  case EXP_GEMM: rc = gemm_new(ref); break;
  case EXP_STENCIL:
    ref->x = new_filled(ref->out_len, spec->seed, GEN_X);
    if (!ref->x) rc = -ENOMEM;
    break;
  default: rc = pipeline_new(ref); break;
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
  free(ref->a);
  free(ref->b);
  free(ref->x);
  free(ref->rows);
  free(ref->want);
  free(ref->tol);
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

static void check_gemm(const struct reference *ref, const float *out, struct exp_check *c) {
  int n = ref->spec.u.gemm.n;
  for (int r = 0; r < ref->n_rows; r++) {
    const float *got = out + (size_t)ref->rows[r] * n;
    const double *want = ref->want + (size_t)r * n, *tol = ref->tol + (size_t)r * n;
    for (int j = 0; j < n; j++) compare(c, got[j], want[j], tol[j]);
  }
  c->sampled = ref->sampled;
  c->rows_checked = ref->n_rows;
  c->tolerance = ref->max_tol;
  snprintf(c->tolerance_rule, sizeof c->tolerance_rule,
           "per element |c - ref| <= k * 2^-23 * sum_k |a*b|");
  snprintf(c->reference, sizeof c->reference, "cpu fp64");
}

/* The window sums are exact: inputs are multiples of 2^-23 in [-1, 1), so sums of
 * them, scaled by 2^23, are integers that fit int64 for any n. */
static void check_stencil(const struct reference *ref, const float *out,
                          struct exp_check *c) {
  int64_t n = ref->spec.u.stencil.n, r = ref->spec.u.stencil.radius;
  const float *x = ref->x;
  double width = (double)(2 * r + 1), tol = width * GRID;
  int64_t sum = 0; /* sum of x[j] * 2^23 over the window of i, clipped to [0, n) */
  for (int64_t j = 0; j <= r && j < n; j++) sum += (int64_t)((double)x[j] * 8388608.0);
  for (int64_t i = 0; i < n; i++) {
    compare(c, out[i], (double)sum * GRID / width, tol);
    if (i + r + 1 < n) sum += (int64_t)((double)x[i + r + 1] * 8388608.0);
    if (i - r >= 0) sum -= (int64_t)((double)x[i - r] * 8388608.0);
  }
  c->tolerance = tol;
  snprintf(c->tolerance_rule, sizeof c->tolerance_rule,
           "|y - ref| <= (2r+1) * 2^-23, zero boundary, divide by 2r+1");
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
  case EXP_GEMM: check_gemm(ref, out, check); break;
  case EXP_STENCIL: check_stencil(ref, out, check); break;
  default: check_pipeline(ref, out, check); break;
  }
  check->passed = check->mismatches == 0;
}
