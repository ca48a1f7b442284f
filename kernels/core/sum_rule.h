/* How close a user's float sum must come to the FP64 one: users' reduce and scan
 * kernels, checked by their experiments' references and by gpulab-runner at every timed
 * launch (kernels/user/runner_check.cu, runner_cpu.c), so that all three hold a kernel
 * to the same rule. Compiled as C and as CUDA (like gen.h).
 *
 * Any order: a float sum of `terms` values, added in any order, is within
 * (terms - 1) 2^-24 sum |x| of the exact one (each addition errs by at most 2^-24 of a
 * partial sum no larger than sum |x|; 1.01 for the second-order terms), plus terms
 * 2^-126 where float atomics flush subnormal partials. It holds for any input, but on
 * signed inputs it is useless: at a million of gpulab's values, uniform in [-1, 1), it
 * passes any answer within 0.06 sum |x|, some fifty times the sum itself.
 *
 * Random: on inputs gpulab generated, a kernel is held to what rounding actually does.
 * Each addition errs by at most 2^-24 of its result, whose sign is a coin toss for these
 * inputs, so the error of a sum is a sum of independent terms with standard deviation at
 * most 2^-24 / sqrt(3) sqrt(sum of the partial sums squared). Every partial sum of a
 * contiguous range is a difference of two prefix sums, at most 2 max_prefix (strided and
 * atomic orders hold it statistically, not for every input), so the standard deviation
 * is at most 1.16 2^-24 sqrt(terms) max_prefix: SUM_RULE_SIGMAS (8)
 * times sqrt(terms) max_prefix 2^-24 lies about 7 standard deviations out, and every
 * summation order a kernel uses (sequential, trees, strided chunks, chained tiles) passes
 * it (tests/unit/test_user_variant.c: the built-ins' CPU stand-ins, in their GPU order).
 * It grows about as terms (max_prefix as sqrt(terms)): some 0.5 at a million values and 2
 * at 2^22, where the sum itself is near 1000 and a sum of half the values is off by
 * several hundred. It bounds rounding: a single value left out of millions can hide in
 * it, as it could in any tolerance of a float sum. */
#ifndef GPULAB_SUM_RULE_H
#define GPULAB_SUM_RULE_H

#include <math.h>

#ifdef __CUDACC__
#define SUM_RULE_HD __host__ __device__ __forceinline__
#else
#define SUM_RULE_HD static inline
#endif

#define SUM_RULE_SIGMAS 8.0

/* The bound of any order at `terms` values whose absolute values sum to abs_sum. */
SUM_RULE_HD double sum_rule_any_order(double terms, double abs_sum) {
  return 1.01 * (terms > 1 ? terms - 1 : 0) * 0x1p-24 * abs_sum + terms * 0x1p-126;
}

/* The bound on generated inputs at `terms` values x[0..terms) whose prefix sums (FP64,
 * in index order) stay within max_prefix of 0: a sum's max over all its prefixes, y[i]'s
 * over those up to i (an earlier element of a scan is not held to a later, larger one). */
SUM_RULE_HD double sum_rule_random(double terms, double max_prefix) {
  return SUM_RULE_SIGMAS * 0x1p-24 * sqrt(terms) * max_prefix + terms * 0x1p-126;
}

#endif
