/* Shapes of the experiments over one vector x of n elements (reduce, scan, stencil,
 * histogram: EXP_VECTOR): a 1-D shape, and an input of any shape fitted to n. The core
 * (experiment.c) gives such experiments these as their input's shape and fit; their own
 * output_shape may use shape1d_set. */
#ifndef GPULAB_SHAPE1D_H
#define GPULAB_SHAPE1D_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/core/experiment.h"

/* *shape = (n,). Cannot fail. */
static inline void shape1d_set(struct exp_shape *shape, int64_t n) {
  *shape = (struct exp_shape){1, {n, 0}};
}

/* fit_input of x of any shape: its element count becomes parameter n_param (exp_fit_dims
 * over one dimension). Returns 0, or -1 with msg, spec unchanged. */
static inline int shape1d_fit(struct exp_spec *s, int slot, const struct exp_shape *shape,
                              int n_param, char *msg, size_t len) {
  const int dims[] = {n_param};
  return exp_fit_dims(s, slot, shape, dims, 1, NULL, msg, len);
}

#endif
