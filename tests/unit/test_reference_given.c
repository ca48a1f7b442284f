/* reference.h's inputs: generated per slot (a seed each), or given as data (any
 * values, NaN and infinities included), and the checks against them at their extremes. */
#include <errno.h>
#include <math.h>
#include "kernels/core/gen.h"
#include "kernels/core/reference.h"
#include "kernels/gemm/gemm.h"
#include "kernels/pipeline/pipeline.h"
#include "kernels/stencil/stencil.h"
#include "kernels/stencil/stencil_tile.h"
#include "kernels/transpose/transpose.h"
#include "reference_common.h"
#include "tests/runner.h"

/* ---- inputs per slot: seeds, and inputs given as data ---- */

static void test_seeds_per_input(void) {
  struct exp_spec spec;
  exp_spec_default(EXP_GEMM, &spec);
  spec.p[GEMM_M] = 5, spec.p[GEMM_N] = 6, spec.p[GEMM_K] = 7;
  spec.seed = 1; /* only the inputs' own seeds count */
  spec.inputs[0].value = 11;
  spec.inputs[1].value = 12;
  struct reference *ref = make(&spec);
  const float *a = reference_input(ref, 0), *b = reference_input(ref, 1);
  for (int i = 0; i < 5 * 7; i++) CHECK(a[i] == gen_uniform(11, GEN_A, (uint64_t)i));
  for (int i = 0; i < 7 * 6; i++) CHECK(b[i] == gen_uniform(12, GEN_B, (uint64_t)i));
  reference_free(ref);
  exp_spec_default(EXP_PIPELINE, &spec);
  spec.p[PIPELINE_CHUNK] = 10, spec.p[PIPELINE_CHUNKS] = 2;
  spec.inputs[0].value = 99;
  ref = make(&spec);
  for (int i = 0; i < 20; i++)
    CHECK(reference_input(ref, 0)[i] == gen_uniform(99, GEN_X, (uint64_t)i) * 3.14159265f);
  reference_free(ref);
}

/* A transposed buffer as the input of another transpose: the reference borrows it,
 * and transposing it back gives the original. */
static void test_given_transpose(void) {
  const int m = 33, n = 47;
  struct exp_spec spec;
  exp_spec_default(EXP_TRANSPOSE, &spec);
  spec.p[TRANSPOSE_M] = m, spec.p[TRANSPOSE_N] = n;
  spec.inputs[0].value = 5;
  struct reference *ref = make(&spec);
  const float *a = reference_input(ref, 0);
  float *at = alloc_f((size_t)m * n);
  for (int y = 0; y < m; y++)
    for (int x = 0; x < n; x++) at[(size_t)x * m + y] = a[(size_t)y * n + x];
  expect_pass(ref, TRANSPOSE_NAIVE, at, (int64_t)m * n);
  struct exp_spec back = spec;
  back.p[TRANSPOSE_M] = n, back.p[TRANSPOSE_N] = m;
  back.inputs[0] = (struct exp_input){EXP_INPUT_JOB, 1};
  const float *given[EXP_MAX_INPUTS] = {at, NULL};
  struct reference *ref2 = make_given(&back, given);
  CHECK(reference_input(ref2, 0) == at); /* borrowed, not copied */
  expect_pass(ref2, TRANSPOSE_SHARED32, a, (int64_t)m * n);
  expect_pass(ref2, TRANSPOSE_COPY, at, (int64_t)m * n);
  expect_fail(ref2, TRANSPOSE_NAIVE, at, -1);
  reference_free(ref2);
  reference_free(ref);
  free(at);
}

/* Floats of any sign and many magnitudes: f(i) * 2^e with e in [-30, 30). */
static float wild(uint64_t seed, uint64_t i) {
  return ldexpf(gen_uniform(seed, GEN_X, i), (int)(gen_mix64(seed ^ i) % 60) - 30);
}

static void test_given_gemm(void) {
  const int m = 17, n = 23, k = 31;
  struct exp_spec spec;
  exp_spec_default(EXP_GEMM, &spec);
  spec.p[GEMM_M] = m, spec.p[GEMM_N] = n, spec.p[GEMM_K] = k;
  float *a = alloc_f((size_t)m * k), *b = alloc_f((size_t)k * n), *c = alloc_f((size_t)m * n);
  for (int i = 0; i < m * k; i++) a[i] = wild(1, (uint64_t)i) * 1e6f;
  for (int i = 0; i < k * n; i++) b[i] = wild(2, (uint64_t)i);
  const float *given[EXP_MAX_INPUTS] = {a, b};
  struct reference *ref = make_given(&spec, given);
  CHECK(reference_input(ref, 0) == a && reference_input(ref, 1) == b);
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0;
      for (int kk = 0; kk < k; kk++) acc = fmaf(a[i * k + kk], b[kk * n + j], acc);
      c[i * n + j] = acc;
    }
  expect_pass(ref, GEMM_NAIVE, c, m * n);
  push_out(ref, GEMM_NAIVE, c, (size_t)(3 * n + 4));
  expect_fail(ref, GEMM_TILED, c, 1);
  reference_free(ref);
  /* a given, b generated from its own seed */
  spec.inputs[1].value = 77;
  const float *only_a[EXP_MAX_INPUTS] = {a, NULL};
  ref = make_given(&spec, only_a);
  CHECK(reference_input(ref, 0) == a);
  CHECK(reference_input(ref, 1)[5] == gen_uniform(77, GEN_B, 5));
  reference_free(ref);
  free(a), free(b), free(c);
}

/* The stencil on arbitrary floats: the float kernel's sums and double-rounded
 * means pass, a wrong element fails, and no window inherits rounding from another. */
static void check_given_stencil(int n, int r) {
  struct exp_spec spec;
  exp_spec_default(EXP_STENCIL, &spec);
  spec.p[STENCIL_N] = n, spec.p[STENCIL_RADIUS] = r;
  float *x = alloc_f((size_t)n), *y = alloc_f((size_t)n), *y_kernel = alloc_f((size_t)n);
  for (int i = 0; i < n; i++) x[i] = gen_uniform(3, GEN_X, (uint64_t)i) * 1e6f;
  for (int i = n / 2; i < n / 2 + 3 * r + 3 && i < n; i++) x[i] = wild(4, (uint64_t)i);
  const float *given[EXP_MAX_INPUTS] = {x, NULL};
  struct reference *ref = make_given(&spec, given);
  CHECK(reference_input(ref, 0) == x);
  double max_tol = 0, abs_sum;
  for (int i = 0; i < n; i++) {
    y[i] = (float)window_mean(x, n, r, i, &abs_sum);
    max_tol = fmax(max_tol, (2 * r + 2) / 8388608.0 * abs_sum / (2 * r + 1) + 1e-30);
    float sum = 0; /* the naive kernel's float sum */
    for (int j = i - r; j <= i + r; j++)
      if (j >= 0 && j < n) sum += x[j];
    y_kernel[i] = sum / (float)(2 * r + 1);
  }
  expect_pass(ref, STENCIL_NAIVE, y, n);
  expect_pass(ref, STENCIL_SHARED, y_kernel, n);
  struct exp_check c;
  reference_check(ref, STENCIL_NAIVE, y, &c);
  CHECK_NEAR(c.tolerance, max_tol, max_tol * 1e-9);
  CHECK(c.max_abs_err <= 0.6 * c.tolerance);
  push_out(ref, STENCIL_NAIVE, y, (size_t)n / 3);
  expect_fail(ref, STENCIL_NAIVE, y, 1);
  free(x), free(y), free(y_kernel);
  reference_free(ref);
}

/* A huge value next to tiny ones, zeros, subnormals and infinity: every window is
 * judged on its own elements. */
static void test_stencil_extremes(void) {
  enum { N = 40, R = 2 };
  struct exp_spec spec;
  exp_spec_default(EXP_STENCIL, &spec);
  spec.p[STENCIL_N] = N, spec.p[STENCIL_RADIUS] = R;
  float x[N], y[N];
  for (int i = 0; i < N; i++) x[i] = (i % 2 ? -1e-20f : 3e-20f) * (float)(1 + i % 5);
  x[0] = 1e30f, x[1] = -3e29f;            /* windows 0..3 see them, 4.. must not */
  for (int i = 10; i < 20; i++) x[i] = 0; /* windows 12..17 are all zeros */
  x[22] = 1e-45f, x[23] = -2e-45f;        /* subnormals */
  x[35] = INFINITY;                       /* windows 33..37 expect NaN */
  const float *given[EXP_MAX_INPUTS] = {x, NULL};
  struct reference *ref = make_given(&spec, given);
  double abs_sum;
  for (int i = 0; i < N; i++) y[i] = (float)window_mean(x, N, R, i, &abs_sum);
  for (int i = 12; i <= 17; i++) CHECK(y[i] == 0);
  struct exp_check c;
  reference_check(ref, STENCIL_NAIVE, y, &c);
  CHECK_INT_EQ(c.mismatches, 2 * R + 1); /* the windows with infinity, only */
  CHECK(isfinite(c.max_abs_err) && isfinite(c.tolerance));
  x[35] = 0;
  for (int i = 33; i <= 37; i++) y[i] = (float)window_mean(x, N, R, i, &abs_sum);
  reference_check(ref, STENCIL_NAIVE, y, &c);
  CHECK(c.passed);
  float keep = y[6];
  y[6] *= 1.00001f; /* off by ~1e-25 next to a window that held 1e30 */
  expect_fail(ref, STENCIL_NAIVE, y, 1);
  y[6] = keep;
  y[14] = 1e-29f; /* a zero window allows only the 1e-30 floor */
  expect_fail(ref, STENCIL_NAIVE, y, 1);
  y[14] = 1e-31f;
  expect_pass(ref, STENCIL_NAIVE, y, N);
  reference_free(ref);
}

static void test_given_pipeline(void) {
  const int len = 301, terms = 16;
  struct exp_spec spec;
  exp_spec_default(EXP_PIPELINE, &spec);
  spec.p[PIPELINE_CHUNK] = len, spec.p[PIPELINE_CHUNKS] = 1, spec.p[PIPELINE_TERMS] = terms;
  float *x = alloc_f(len), *y = alloc_f(len);
  for (int i = 0; i < len; i++) x[i] = gen_uniform(8, GEN_X, (uint64_t)i) * 10.0f;
  const float *given[EXP_MAX_INPUTS] = {x, NULL};
  struct reference *ref = make_given(&spec, given);
  CHECK(reference_input(ref, 0) == x);
  for (int i = 0; i < len; i++) {
    float sum = 0;
    for (int k = 1; k <= terms; k++) sum += sinf((float)k * x[i]) / (float)k;
    y[i] = sum;
  }
  expect_pass(ref, 1, y, len);
  y[7] += 1e-3f;
  expect_fail(ref, 1, y, 1);
  reference_free(ref);
  free(x), free(y);
}

static void test_given_stencil(void) {
  check_given_stencil(1000, 32);
  check_given_stencil(517, 0);
  check_given_stencil(300, 400);
}

static const struct test_case cases[] = {
    TEST(test_seeds_per_input),
    TEST(test_given_transpose),
    TEST(test_given_gemm),
    TEST(test_given_stencil),
    TEST(test_stencil_extremes),
    TEST(test_given_pipeline),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases};
