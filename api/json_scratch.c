/* jansson's values from a per-thread scratch buffer inside a scope (json_scratch.h). */
#include "api/json_scratch.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define SCRATCH_FIRST_BYTES (64 * 1024)
#define SCRATCH_MAX_BYTES (4 * 1024 * 1024)
#define SCRATCH_ALIGN 16

struct scratch {
  char *base;
  size_t used, cap;
  int depth;    /* scopes open on this thread */
  bool spilled; /* this scope took memory from malloc: its values are freed one by one */
};

static bool installed;
static _Thread_local struct scratch scratch;
static pthread_key_t scratch_key; /* frees a thread's buffer when it ends */
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *base) { free(base); }
static void make_key(void) { pthread_key_create(&scratch_key, scratch_free); }

static bool owned(const void *p) {
  return scratch.base && (const char *)p >= scratch.base &&
         (const char *)p < scratch.base + scratch.cap;
}

static void *take(size_t n) {
  struct scratch *s = &scratch;
  size_t size = (n + SCRATCH_ALIGN - 1) & ~(size_t)(SCRATCH_ALIGN - 1);
  if (s->depth > 0 && s->base && size <= s->cap - s->used) {
    void *p = s->base + s->used;
    s->used += size;
    return p;
  }
  if (s->depth > 0) s->spilled = true;
  return malloc(n);
}

/* A value made in a scope is freed with the scope's buffer (never one by one). */
static void give_back(void *p) {
  if (!owned(p)) free(p);
}

void json_scratch_install(void) {
  pthread_once(&scratch_once, make_key);
  json_set_alloc_funcs(take, give_back);
  installed = true;
}

void json_scratch_begin(void) {
  struct scratch *s = &scratch;
  if (!installed || s->depth++ > 0) return;
  s->used = 0;
  s->spilled = false;
  if (!s->base && (s->base = malloc(SCRATCH_FIRST_BYTES))) {
    s->cap = SCRATCH_FIRST_BYTES;
    pthread_setspecific(scratch_key, s->base);
  }
}

void json_scratch_end(json_t *doc) {
  struct scratch *s = &scratch;
  if (!installed || s->depth == 0) {
    json_decref(doc);
    return;
  }
  if (--s->depth > 0) { /* an inner scope: its values live on with the outer one's */
    json_decref(doc);
    return;
  }
  if (s->spilled) json_decref(doc); /* frees what malloc gave; the rest stays here */
  /* Next time a larger buffer, when this one did not hold the document (the old one
   * goes once nothing points into it: now). */
  if (s->spilled && s->cap < SCRATCH_MAX_BYTES) {
    char *bigger = malloc(2 * s->cap);
    if (bigger) {
      free(s->base);
      s->base = bigger;
      s->cap *= 2;
      pthread_setspecific(scratch_key, s->base);
    }
  }
  s->used = 0;
  s->spilled = false;
}
