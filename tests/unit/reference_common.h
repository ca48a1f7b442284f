/* What the reference's tests share (test_reference.c: the checks at odd sizes;
 * test_reference_given.c: inputs per slot and given as data): references made from a
 * spec, a check's verdict on an output, and outputs moved past its tolerance. */
#ifndef GPULAB_TEST_REFERENCE_COMMON_H
#define GPULAB_TEST_REFERENCE_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/core/reference.h"

/* A reference of spec (inputs generated, or given); fails the test if it cannot. */
struct reference *make_given(const struct exp_spec *spec, const float *const *given);
struct reference *make(const struct exp_spec *spec);
/* n floats (at least one) from malloc; the caller frees. */
float *alloc_f(size_t n);
/* The check of variant's output passes, having compared n elements. */
void expect_pass(const struct reference *ref, int variant, const float *out, int64_t n);
/* It fails, with this many mismatches (negative: any). */
void expect_fail(const struct reference *ref, int variant, const float *out, int64_t mismatches);
/* Moves out[i] by 16 times the largest tolerance the check used: always a miss. */
void push_out(const struct reference *ref, int variant, float *out, size_t i);
/* The mean of x over the window of radius r at i (zeros past the ends), summed directly
 * in long double: an independent answer;
 * *abs_sum: the sum of its absolute values. */
double window_mean(const float *x, int n, int r, int i, double *abs_sum);

#endif
