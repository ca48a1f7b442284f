/* CPU side of every experiment: the inputs (from gen.h) and the reference answer a
 * backend's output is checked against. Built once per job, shared by its variants. */
#ifndef GPULAB_REFERENCE_H
#define GPULAB_REFERENCE_H

#include <stddef.h>
#include "kernels/experiment.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Above this many multiply-adds, a GEMM check compares a sample of whole rows
 * (REFERENCE_GEMM_SAMPLE_ROWS of them, first and last included) in FP64. */
#define REFERENCE_GEMM_FULL_MAX_FMAS (1ull << 27)
#define REFERENCE_GEMM_SAMPLE_ROWS 64

struct reference;

/* Builds spec's inputs on the host and the expected output (FP64 where the
 * experiment computes in floating point). given[slot] is the host copy of an input
 * that came as data (a buffer or another job's output), borrowed: it must outlive
 * ref; NULL generates input slot from spec->inputs[slot].value as seed. given may
 * be NULL (all generated). Returns 0, -ENOMEM, or -EINVAL for a malformed spec
 * (negative sizes). *out is owned by the caller: free it with reference_free. */
int reference_new(const struct exp_spec *spec, const float *const *given,
                  struct reference **out);
void reference_free(struct reference *ref); /* NULL is a no-op */

/* The job's inputs, as generated or as given (then borrowed from the caller);
 * valid until reference_free.
 * transpose: a (m*n). gemm: a (m*k), b (k*n). stencil: x (n).
 * pipeline: x (chunk*chunks; generated phases lie in [-pi, pi)). NULL for inputs
 * the type lacks. */
const float *reference_input(const struct reference *ref, int which /* GEN_A, GEN_B, GEN_X */);

/* Number of output elements the job writes per variant. */
size_t reference_output_len(const struct reference *ref);

/* Compares out (reference_output_len floats) with the expected output of variant
 * and fills check. Transpose variants compare exactly (copy: against the input);
 * gemm per element within k * 2^-23 * sum|a*b| (tf32: (2^-9 + k * 2^-22) *
 * sum|a*b|); stencil per element within (2r+2) * 2^-23 * sum|x| / (2r+1) over its
 * window + 1e-30 (best: 2^-23 |ref| + 2^-38 * sum|x| over its tile's span / (2r+1) +
 * 1e-30, reference.c says why); pipeline within 2e-6 * terms + 1e-6. NaN never
 * passes, nor does best's tile around a non-finite input. Cannot fail. */
void reference_check(const struct reference *ref, int variant, const float *out,
                     struct exp_check *check);

/* The per-type generators, also used by the unit tests: fill h[0..n). */
void reference_fill(float *h, size_t n, uint64_t seed, int stream);
void reference_fill_phases(float *h, size_t n, uint64_t seed); /* gen * pi */

#ifdef __cplusplus
}
#endif
#endif
