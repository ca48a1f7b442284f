/* A few references kept for reuse: a job whose inputs are all generated from seeds
 * (none is a buffer or another job's output) gets the reference an earlier job with
 * the same experiment,
 * params, seeds and runs built, instead of generating its inputs and computing what
 * is expected again. Only what the reference depends on is the key (timing, stop
 * rule, graph, cold and order are not); different params or a different seed miss.
 * Thread-safe: lanes check against one shared reference at once (checks only read
 * it). */
#ifndef GPULAB_REFERENCE_CACHE_H
#define GPULAB_REFERENCE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/core/reference.h"

#ifdef __cplusplus
extern "C" {
#endif

struct reference_cache;

/* What each backend keeps: a few references, 64 MiB at most (a 2048^3 gemm's is
 * 48 MiB); larger ones are built per job. */
#define REFERENCE_CACHE_ENTRIES 8
#define REFERENCE_CACHE_BYTES ((size_t)64 << 20)

/* Keeps up to n_entries references of together at most max_bytes (their inputs and
 * expected outputs), the least recently used going first; n_entries 0 keeps none
 * (every get builds anew). Returns 0 or -ENOMEM. Free with reference_cache_free
 * (NULL is a no-op) once every reference got from it is put back. */
int reference_cache_new(int n_entries, size_t max_bytes, struct reference_cache **out);
void reference_cache_free(struct reference_cache *c);

/* As reference_new(spec, given, out), through the cache when every input of spec is
 * a seed (EXP_INPUT_SEED) and its reference fits the bound: *reused says whether an
 * earlier job's reference was returned. given (may be NULL) is what reference_new
 * takes; for a seed's slot it may hold the caller's copy of the generated input
 * (the same numbers): a kept reference generates its own, one not kept borrows it.
 * A reference with a buffer or a job's output as input is built for the caller
 * alone, never kept. Every successful get is matched by one reference_cache_put of
 * *out, which the caller must not free otherwise. */
int reference_cache_get(struct reference_cache *c, const struct exp_spec *spec,
                        const float *const *given, struct reference **out, bool *reused);
void reference_cache_put(struct reference_cache *c, struct reference *ref); /* NULL: no-op */

struct reference_cache_stats {
  uint64_t hits, misses; /* gets that reused a reference, and that built one */
  int entries;
  size_t bytes;
};
void reference_cache_stats(struct reference_cache *c, struct reference_cache_stats *out);

#ifdef __cplusplus
}
#endif
#endif
