/* References kept for jobs that repeat (reference_cache.h): a small table, least
 * recently used out first, under one mutex. A reference leaves the table when it is
 * pushed out; it is freed then, or by the last holder's put. */
#include "kernels/core/reference_cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "kernels/core/reference_impl.h"

struct entry {
  struct reference *ref; /* NULL: free slot */
  size_t bytes;
  uint64_t used; /* the cache's clock at its last get */
};

struct reference_cache {
  pthread_mutex_t lock;
  int n_entries;
  size_t max_bytes, bytes;
  uint64_t clock, hits, misses;
  struct entry *entries;
};

int reference_cache_new(int n_entries, size_t max_bytes, struct reference_cache **out) {
  struct reference_cache *c = calloc(1, sizeof *c);
  struct entry *entries = calloc(n_entries > 0 ? (size_t)n_entries : 1, sizeof *entries);
  if (!c || !entries) {
    free(c);
    free(entries);
    return -ENOMEM;
  }
  pthread_mutex_init(&c->lock, NULL);
  c->n_entries = n_entries > 0 ? n_entries : 0;
  c->max_bytes = max_bytes;
  c->entries = entries;
  *out = c;
  return 0;
}

void reference_cache_free(struct reference_cache *c) {
  if (!c) return;
  for (int i = 0; i < c->n_entries; i++) reference_free(c->entries[i].ref);
  pthread_mutex_destroy(&c->lock);
  free(c->entries);
  free(c);
}

/* Whether a reference built for a holds what b needs: the same experiment, params,
 * inputs (seeds) and runs. Timing, the stop rule, graph, cold and order only change
 * how the outputs are timed, not what they must be. */
static bool same_key(const struct exp_spec *a, const struct exp_spec *b) {
  if (a->type != b->type || a->seed != b->seed || a->dims_given != b->dims_given ||
      a->n_variants != b->n_variants)
    return false;
  for (int i = 0; i < EXP_MAX_INPUTS; i++)
    if (a->inputs[i].kind != b->inputs[i].kind || a->inputs[i].value != b->inputs[i].value)
      return false;
  for (int i = 0; i < EXP_MAX_PARAMS; i++)
    if (a->p[i] != b->p[i]) return false;
  for (int i = 0; i < a->n_variants && i < EXP_MAX_VARIANTS; i++)
    if (a->variants[i] != b->variants[i]) return false;
  return true;
}

static bool all_seeded(const struct exp_spec *spec) {
  for (int slot = 0; slot < EXP_MAX_INPUTS; slot++)
    if (spec->inputs[slot].kind != EXP_INPUT_SEED) return false;
  return true;
}

/* What spec's reference holds: its inputs, and an FP64 expected output at most. */
static size_t spec_bytes(const struct exp_spec *spec) {
  const struct exp_desc *d = exp_desc(spec->type);
  struct exp_shape shape;
  exp_output_shape(spec, &shape);
  size_t bytes = (size_t)exp_shape_count(&shape) * sizeof(double);
  for (int slot = 0; d && slot < d->n_inputs; slot++) {
    exp_input_shape(spec, slot, &shape);
    bytes += (size_t)exp_shape_count(&shape) * sizeof(float);
  }
  return bytes;
}

/* Takes entry i out of the table; a held reference is freed by its last put. The
 * lock is held. */
static void evict_locked(struct reference_cache *c, int i) {
  struct entry *e = &c->entries[i];
  e->ref->cache_kept = false;
  if (e->ref->cache_holders == 0) reference_free(e->ref);
  c->bytes -= e->bytes;
  *e = (struct entry){NULL, 0, 0};
}

/* Keeps ref (just built, held once) when it fits, pushing out the least recently
 * used until it does. The lock is held. */
static void keep_locked(struct reference_cache *c, struct reference *ref, size_t bytes) {
  for (;;) {
    int free_slot = -1, oldest = -1;
    for (int i = 0; i < c->n_entries; i++) {
      if (!c->entries[i].ref)
        free_slot = free_slot < 0 ? i : free_slot;
      else if (oldest < 0 || c->entries[i].used < c->entries[oldest].used)
        oldest = i;
    }
    if (free_slot >= 0 && c->bytes + bytes <= c->max_bytes) {
      c->entries[free_slot] = (struct entry){ref, bytes, c->clock};
      c->bytes += bytes;
      ref->cache_kept = true;
      return;
    }
    evict_locked(c, oldest); /* full, or over max_bytes: some entry is there */
  }
}

int reference_cache_get(struct reference_cache *c, const struct exp_spec *spec,
                        const float *const *given, struct reference **out, bool *reused) {
  *out = NULL;
  *reused = false;
  size_t bytes = spec_bytes(spec);
  bool cacheable = all_seeded(spec) && c->n_entries > 0 && bytes <= c->max_bytes;
  pthread_mutex_lock(&c->lock);
  c->clock++;
  for (int i = 0; cacheable && i < c->n_entries; i++) {
    struct entry *e = &c->entries[i];
    if (e->ref && same_key(&e->ref->spec, spec)) {
      e->used = c->clock;
      e->ref->cache_holders++;
      c->hits++;
      pthread_mutex_unlock(&c->lock);
      *out = e->ref;
      *reused = true;
      return 0;
    }
  }
  c->misses++;
  pthread_mutex_unlock(&c->lock);
  /* Built outside the lock: a gemm's FP64 product takes a while. Two lanes missing
   * at once both build; the second one's is kept, the first one's freed when put.
   * One kept generates its own inputs (the caller's die with its job); one not
   * borrows them. */
  struct reference *ref;
  int rc = reference_new(spec, cacheable ? NULL : given, &ref);
  if (rc) return rc;
  ref->cache_holders = 1;
  ref->cache_kept = false;
  if (cacheable) {
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->n_entries; i++) /* one entry per key */
      if (c->entries[i].ref && same_key(&c->entries[i].ref->spec, spec)) evict_locked(c, i);
    keep_locked(c, ref, bytes);
    pthread_mutex_unlock(&c->lock);
  }
  *out = ref;
  return 0;
}

void reference_cache_put(struct reference_cache *c, struct reference *ref) {
  if (!ref) return;
  pthread_mutex_lock(&c->lock);
  bool last = --ref->cache_holders == 0 && !ref->cache_kept;
  pthread_mutex_unlock(&c->lock);
  if (last) reference_free(ref);
}

void reference_cache_stats(struct reference_cache *c, struct reference_cache_stats *out) {
  pthread_mutex_lock(&c->lock);
  *out = (struct reference_cache_stats){c->hits, c->misses, 0, c->bytes};
  for (int i = 0; i < c->n_entries; i++) out->entries += c->entries[i].ref != NULL;
  pthread_mutex_unlock(&c->lock);
}
