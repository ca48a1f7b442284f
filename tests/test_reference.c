/* reference.h: inputs and checks against independent naive computations at odd
 * sizes, and the checks' power to catch wrong outputs. */
#include <errno.h>
#include <math.h>
#include "kernels/gen.h"
#include "kernels/reference.h"
#include "tests/check.h"

static struct reference *make(const struct exp_spec *spec) {
  struct reference *ref = NULL;
  CHECK_INT_EQ(reference_new(spec, &ref), 0);
  CHECK(ref != NULL);
  return ref;
}

static float *alloc_f(size_t n) {
  float *p = malloc((n ? n : 1) * sizeof *p);
  CHECK(p != NULL);
  return p;
}

static void expect_pass(const struct reference *ref, int variant, const float *out,
                        int64_t n) {
  struct exp_check c;
  reference_check(ref, variant, out, &c);
  if (!c.passed)
    fprintf(stderr, "mismatches %" PRId64 ", max_abs_err %g\n", c.mismatches, c.max_abs_err);
  CHECK(c.done && c.passed);
  CHECK_INT_EQ(c.compared, n);
  CHECK_INT_EQ(c.mismatches, 0);
  CHECK(c.tolerance_rule[0] && c.reference[0]);
}

static void expect_fail(const struct reference *ref, int variant, const float *out,
                        int64_t mismatches) {
  struct exp_check c;
  reference_check(ref, variant, out, &c);
  CHECK(c.done && !c.passed);
  if (mismatches >= 0) CHECK_INT_EQ(c.mismatches, mismatches);
  CHECK(isfinite(c.max_abs_err) && isfinite(c.max_rel_err));
}

static void test_transpose(int m, int n) {
  struct exp_spec spec;
  exp_spec_default(EXP_TRANSPOSE, &spec);
  spec.u.transpose.m = m;
  spec.u.transpose.n = n;
  struct reference *ref = make(&spec);
  size_t len = (size_t)m * n;
  CHECK_INT_EQ(reference_output_len(ref), len);
  const float *a = reference_input(ref, GEN_A);
  CHECK(reference_input(ref, GEN_B) == NULL && reference_input(ref, GEN_X) == NULL);
  for (size_t i = 0; i < len; i++) CHECK(a[i] == gen_uniform(spec.seed, GEN_A, i));
  float *b = alloc_f(len);
  for (int y = 0; y < m; y++)
    for (int x = 0; x < n; x++) b[(size_t)x * m + y] = a[(size_t)y * n + x];
  struct exp_check c;
  reference_check(ref, TRANSPOSE_NAIVE, b, &c);
  CHECK(c.passed && c.tolerance == 0 && c.max_abs_err == 0);
  CHECK_STR_EQ(c.reference, "cpu exact transpose");
  expect_pass(ref, TRANSPOSE_PADDED33, b, (int64_t)len);
  if (m > 1 && n > 1) { /* else A and A^T share one layout */
    expect_fail(ref, TRANSPOSE_COPY, b, -1);  /* copy must equal A itself */
    expect_fail(ref, TRANSPOSE_NAIVE, a, -1); /* not transposed at all */
  }
  expect_pass(ref, TRANSPOSE_COPY, a, (int64_t)len);
  reference_check(ref, TRANSPOSE_COPY, a, &c);
  CHECK_STR_EQ(c.reference, "input (copy)");
  b[len / 2] = nextafterf(b[len / 2], 2.0f); /* one ulp off */
  expect_fail(ref, TRANSPOSE_SHARED32, b, 1);
  b[len / 2] = NAN;
  expect_fail(ref, TRANSPOSE_SHARED32, b, 1);
  free(b);
  reference_free(ref);
}

/* Full C = A B in double, i-k-j. */
static double *gemm_double(const float *a, const float *b, int m, int n, int k) {
  double *c = calloc((size_t)m * n, sizeof *c);
  CHECK(c != NULL);
  for (int i = 0; i < m; i++)
    for (int kk = 0; kk < k; kk++)
      for (int j = 0; j < n; j++)
        c[(size_t)i * n + j] += (double)a[(size_t)i * k + kk] * b[(size_t)kk * n + j];
  return c;
}

static void test_gemm_small(void) {
  const int m = 33, n = 47, k = 18;
  struct exp_spec spec;
  exp_spec_default(EXP_GEMM, &spec);
  spec.u.gemm.m = m, spec.u.gemm.n = n, spec.u.gemm.k = k;
  struct reference *ref = make(&spec);
  const float *a = reference_input(ref, GEN_A), *b = reference_input(ref, GEN_B);
  for (int i = 0; i < m * k; i++) CHECK(a[i] == gen_uniform(spec.seed, GEN_A, (uint64_t)i));
  for (int i = 0; i < k * n; i++) CHECK(b[i] == gen_uniform(spec.seed, GEN_B, (uint64_t)i));
  /* float fmaf dot products, as the kernels compute */
  float *c = alloc_f((size_t)m * n);
  double max_tol = 0;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0;
      double abs_sum = 0;
      for (int kk = 0; kk < k; kk++) {
        acc = fmaf(a[i * k + kk], b[kk * n + j], acc);
        abs_sum += fabs((double)a[i * k + kk] * b[kk * n + j]);
      }
      c[i * n + j] = acc;
      max_tol = fmax(max_tol, k * abs_sum / 8388608.0);
    }
  struct exp_check chk;
  reference_check(ref, GEMM_TILED, c, &chk);
  CHECK(chk.passed && !chk.sampled);
  CHECK_INT_EQ(chk.rows_checked, m);
  CHECK_INT_EQ(chk.compared, m * n);
  CHECK_NEAR(chk.tolerance, max_tol, max_tol * 1e-12);
  CHECK(chk.max_abs_err > 0 || chk.max_rel_err == 0);
  expect_pass(ref, GEMM_CUBLAS, c, m * n);
  double *want = gemm_double(a, b, m, n, k);
  c[5 * n + 7] = (float)(want[5 * n + 7] + 1e-3); /* far beyond k * 2^-23 * sum|ab| */
  expect_fail(ref, GEMM_NAIVE, c, 1);
  c[5 * n + 7] = (float)want[5 * n + 7];
  c[m * n - 1] = INFINITY;
  expect_fail(ref, GEMM_NAIVE, c, 1);
  free(want);
  free(c);
  reference_free(ref);
}

static void test_gemm_sampled(void) {
  const int m = 300, n = 700, k = 700; /* 147M multiply-adds: above the threshold */
  CHECK((uint64_t)m * n * k > REFERENCE_GEMM_FULL_MAX_FMAS);
  struct exp_spec spec;
  exp_spec_default(EXP_GEMM, &spec);
  spec.u.gemm.m = m, spec.u.gemm.n = n, spec.u.gemm.k = k;
  struct reference *ref = make(&spec);
  double *want = gemm_double(reference_input(ref, GEN_A), reference_input(ref, GEN_B), m, n, k);
  float *c = alloc_f((size_t)m * n);
  for (size_t i = 0; i < (size_t)m * n; i++) c[i] = (float)want[i];
  struct exp_check chk;
  reference_check(ref, GEMM_NAIVE, c, &chk);
  CHECK(chk.passed && chk.sampled);
  CHECK_INT_EQ(chk.rows_checked, REFERENCE_GEMM_SAMPLE_ROWS);
  CHECK_INT_EQ(chk.compared, (int64_t)REFERENCE_GEMM_SAMPLE_ROWS * n);
  c[3] = NAN; /* first row is in the sample */
  expect_fail(ref, GEMM_NAIVE, c, 1);
  c[3] = (float)want[3];
  c[(size_t)(m - 1) * n + 5] = NAN; /* so is the last */
  expect_fail(ref, GEMM_NAIVE, c, 1);
  c[(size_t)(m - 1) * n + 5] = (float)want[(size_t)(m - 1) * n + 5];
  c[(size_t)1 * n] = NAN; /* row 1 is not: rows are r * (m-1) / 63 */
  reference_check(ref, GEMM_NAIVE, c, &chk);
  CHECK(chk.passed);
  free(c);
  free(want);
  reference_free(ref);
}

static void test_stencil(int n, int r) {
  struct exp_spec spec;
  exp_spec_default(EXP_STENCIL, &spec);
  spec.u.stencil.n = n;
  spec.u.stencil.radius = r;
  struct reference *ref = make(&spec);
  CHECK_INT_EQ(reference_output_len(ref), n);
  const float *x = reference_input(ref, GEN_X);
  float *y = alloc_f((size_t)n);
  for (int i = 0; i < n; i++) {
    CHECK(x[i] == gen_uniform(spec.seed, GEN_X, (uint64_t)i));
    double sum = 0;
    for (int j = i - r; j <= i + r; j++)
      if (j >= 0 && j < n) sum += x[j];
    y[i] = (float)(sum / (2 * r + 1));
  }
  struct exp_check c;
  reference_check(ref, STENCIL_SHARED, y, &c);
  CHECK(c.passed);
  CHECK_INT_EQ(c.compared, n);
  CHECK_NEAR(c.tolerance, (2 * r + 1) / 8388608.0, 0);
  /* a float result is within half an ulp of the exact mean */
  CHECK(c.max_abs_err <= 0.5 / 8388608.0 + 1e-300);
  y[n - 1] += 1e-3f;
  expect_fail(ref, STENCIL_NAIVE, y, 1);
  y[0] = NAN;
  expect_fail(ref, STENCIL_NAIVE, y, 2);
  free(y);
  reference_free(ref);
}

static void test_pipeline(void) {
  const int chunk = 333, chunks = 3, terms = 64, len = chunk * chunks;
  struct exp_spec spec;
  exp_spec_default(EXP_PIPELINE, &spec);
  spec.u.pipeline.chunk = chunk;
  spec.u.pipeline.chunks = chunks;
  spec.u.pipeline.terms = terms;
  struct reference *ref = make(&spec);
  CHECK_INT_EQ(reference_output_len(ref), len);
  const float *x = reference_input(ref, GEN_X);
  float *phases = alloc_f((size_t)len), *y = alloc_f((size_t)len);
  reference_fill_phases(phases, (size_t)len, spec.seed);
  for (int i = 0; i < len; i++) {
    CHECK(x[i] == phases[i]);
    CHECK(x[i] == gen_uniform(spec.seed, GEN_X, (uint64_t)i) * 3.14159265f);
    CHECK(x[i] >= -3.1415927f && x[i] < 3.1415927f);
    float sum = 0;
    for (int k = 1; k <= terms; k++) sum += sinf((float)k * x[i]) / (float)k;
    y[i] = sum;
  }
  struct exp_check c;
  reference_check(ref, 3, y, &c);
  CHECK(c.passed);
  CHECK_INT_EQ(c.compared, len);
  CHECK_NEAR(c.tolerance, 2e-6 * terms + 1e-6, 1e-15);
  CHECK(c.max_abs_err < 2e-5);
  y[100] += 1e-3f;
  expect_fail(ref, 1, y, 1);
  y[200] = -INFINITY;
  expect_fail(ref, 1, y, 2);
  free(phases);
  free(y);
  reference_free(ref);
}

static void test_invalid(void) {
  struct exp_spec spec;
  struct reference *ref = (struct reference *)&spec;
  exp_spec_default(EXP_STENCIL, &spec);
  spec.u.stencil.n = -1;
  CHECK_INT_EQ(reference_new(&spec, &ref), -EINVAL);
  CHECK(ref == NULL);
  reference_free(NULL);
}

int main(void) {
  test_transpose(33, 47);
  test_transpose(40, 40);
  test_transpose(1, 7);
  test_gemm_small();
  test_gemm_sampled();
  static const int radii[] = {0, 2, 32};
  for (int i = 0; i < 3; i++) test_stencil(1000, radii[i]); /* n not a multiple of 256 */
  test_stencil(300, 400); /* radius wider than the array */
  test_pipeline();
  test_invalid();
  printf("test_reference: ok\n");
  return 0;
}
