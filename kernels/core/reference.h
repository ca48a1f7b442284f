/* The CPU side of every experiment: a job's inputs (from gen.h, or given) and the
 * reference its outputs are checked against, built once per job and shared by its
 * runs. What is expected and how closely is each experiment's (exp_desc.ref_*); the
 * tolerance rules are in kernels/<name>/<name>.c. */
#ifndef GPULAB_REFERENCE_H
#define GPULAB_REFERENCE_H

#include <stddef.h>
#include <stdint.h>
#include "kernels/core/experiment.h"

#ifdef __cplusplus
extern "C" {
#endif

struct reference;

/* Builds spec's inputs on the host and what its outputs are compared with (FP64 where
 * the experiment computes in floating point). given[slot] is the host copy of an
 * input that came as data (a buffer or another job's output), borrowed: it must
 * outlive ref; NULL generates input slot from spec->inputs[slot].value as seed. given
 * may be NULL (all generated). Returns 0, -ENOMEM, or -EINVAL for an unknown type or
 * a negative size. *out is owned by the caller: free it with reference_free. */
int reference_new(const struct exp_spec *spec, const float *const *given, struct reference **out);
void reference_free(struct reference *ref); /* NULL is a no-op */

/* Input slot as generated or as given (then borrowed from the caller); valid until
 * reference_free. NULL for a slot the experiment lacks. */
const float *reference_input(const struct reference *ref, int slot);

/* Number of output elements the job writes per run. */
size_t reference_output_len(const struct reference *ref);

/* Compares out (reference_output_len floats) with what run entry `entry` (a variant,
 * a runs-list entry, or a user's kernel, held to its experiment's
 * exp_user.check_variant) should have written and fills check: done, passed (no
 * mismatch), the counts, the largest errors, the tolerance and its rule. NaN never
 * passes. Cannot fail. */
void reference_check(const struct reference *ref, int entry, const float *out,
                     struct exp_check *check);

/* h[i] = gen_uniform(seed, stream, i) (* scale) for i < n: an input as both backends
 * generate it. */
void reference_fill(float *h, size_t n, uint64_t seed, int stream);
void reference_fill_scaled(float *h, size_t n, uint64_t seed, int stream, float scale);

#ifdef __cplusplus
}
#endif
#endif
