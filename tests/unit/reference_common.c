/* The reference tests' helpers (reference_common.h). */
#include "reference_common.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/check.h"

struct reference *make_given(const struct exp_spec *spec, const float *const *given) {
  struct reference *ref = NULL;
  CHECK_INT_EQ(reference_new(spec, given, &ref), 0);
  CHECK(ref != NULL);
  return ref;
}

struct reference *make(const struct exp_spec *spec) {
  return make_given(spec, NULL);
}

float *alloc_f(size_t n) {
  float *p = malloc((n ? n : 1) * sizeof *p);
  CHECK(p != NULL);
  return p;
}

void expect_pass(const struct reference *ref, int variant, const float *out, int64_t n) {
  struct exp_check c;
  reference_check(ref, variant, out, &c);
  if (!c.passed)
    fprintf(stderr, "mismatches %" PRId64 ", max_abs_err %g\n", c.mismatches, c.max_abs_err);
  CHECK(c.done && c.passed);
  CHECK_INT_EQ(c.compared, n);
  CHECK_INT_EQ(c.mismatches, 0);
  CHECK(c.tolerance_rule[0] && c.reference[0]);
}

void expect_fail(const struct reference *ref, int variant, const float *out, int64_t mismatches) {
  struct exp_check c;
  reference_check(ref, variant, out, &c);
  CHECK(c.done && !c.passed);
  if (mismatches >= 0) CHECK_INT_EQ(c.mismatches, mismatches);
  CHECK(isfinite(c.max_abs_err) && isfinite(c.max_rel_err));
}

void push_out(const struct reference *ref, int variant, float *out, size_t i) {
  struct exp_check c;
  reference_check(ref, variant, out, &c);
  CHECK(c.tolerance > 0);
  out[i] += (float)(16 * c.tolerance);
}

double window_mean(const float *x, int n, int r, int i, double *abs_sum) {
  long double sum = 0, abs_s = 0;
  for (int j = i - r; j <= i + r; j++)
    if (j >= 0 && j < n) sum += x[j], abs_s += fabsl((long double)x[j]);
  *abs_sum = (double)abs_s;
  return (double)(sum / (2 * r + 1));
}
