/* Private to kernels/: what an experiment's reference code (exp_desc.ref_init,
 * ref_check, ref_fini) sees of a reference, and the comparison every check uses. */
#ifndef GPULAB_REFERENCE_IMPL_H
#define GPULAB_REFERENCE_IMPL_H

#include <math.h>

#include "kernels/core/reference.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The grid gen_uniform's values lie on: 2^-23. */
#define REFERENCE_GRID (1.0 / 8388608.0)

struct reference {
  struct exp_spec spec;
  const struct exp_desc *exp;
  size_t out_len;                  /* floats of one run's output */
  const float *in[EXP_MAX_INPUTS]; /* given (borrowed) or owned[]; NULL past n_inputs */
  float *owned[EXP_MAX_INPUTS];    /* inputs generated here, by slot */
  void *state;                     /* the experiment's (ref_init sets, ref_fini frees) */
  /* reference_cache.c's, under its lock: gets not yet put back, and whether the
   * cache keeps it (else the last put frees it). */
  int cache_holders;
  bool cache_kept;
};

/* Folds one element into check: compared, the error maxima (finite outputs only) and
 * a mismatch when |got - want| > tol or got is not finite. Inline: it runs once per
 * element of every checked output, the whole check of a tiny job. */
static inline void reference_compare(struct exp_check *c, float got, double want, double tol) {
  c->compared++;
  if (!isfinite(got)) {
    c->mismatches++;
    return;
  }
  double err = fabs((double)got - want);
  if (err == 0) return;    /* exact: no division (every element of a transpose or a copy) */
  double den = fabs(want); /* not fmax: a libm call per element (it handles NaN) */
  double rel = err / (den > 1e-30 ? den : 1e-30);
  if (err > c->max_abs_err) c->max_abs_err = err;
  if (rel > c->max_rel_err) c->max_rel_err = rel;
  if (!(err <= tol)) c->mismatches++;
}

/* Whether got[i] == want[i] for every i < n with every got finite: an exact check's
 * whole answer when the output is right, in one pass without a branch per element
 * (it vectorizes); when it is not, the caller compares element by element
 * (reference_compare) for the count and the errors. */
static inline bool reference_all_exact(const float *got, const float *want, size_t n) {
  unsigned bad = 0;
  for (size_t i = 0; i < n; i++) bad |= (got[i] != want[i]) | !(got[i] - got[i] == 0);
  return bad == 0;
}

/* malloc of n elements of size bytes (a zero-sized request still returns a pointer);
 * NULL when it overflows or memory ran out. */
void *reference_alloc(size_t n, size_t size);

#ifdef __cplusplus
}
#endif
#endif
