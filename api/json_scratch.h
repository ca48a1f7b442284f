/* A jansson document built, written out and dropped on one thread in one go (a job's
 * record or answer, made once per job) takes its values from a scratch buffer of the
 * thread's instead of malloc: a job's result is a few hundred values, and malloc and
 * free of each, with glibc consolidating its fast bins at every larger allocation in
 * between, made about a sixth of gpulabd's time under load (bench/RESULTS.md). The
 * document is dropped by forgetting the buffer's contents. */
#ifndef GPULAB_API_JSON_SCRATCH_H
#define GPULAB_API_JSON_SCRATCH_H

#include <jansson.h>

/* Makes jansson allocate through here (json_set_alloc_funcs): outside a scope, malloc
 * and free as before. Once, at start, before any other thread uses jansson. Without
 * it, scopes do nothing but drop their document. */
void json_scratch_install(void);

/* Opens a scope on the calling thread: the values jansson makes until json_scratch_end
 * come from the thread's buffer (from malloc once it is full). Every value made in the
 * scope must be dropped by its end (json_scratch_end's doc, or freed before); none may
 * outlive it, and none made outside may be held by one made inside. A scope opened
 * inside another is part of it. */
void json_scratch_begin(void);
/* Closes the scope and drops doc (made in it; NULL: none): when all it made fit in the
 * buffer, by forgetting the buffer's contents, without visiting the values. */
void json_scratch_end(json_t *doc);

#endif
