/* Problems users define, as a service of gpulabd: a definition (api/problem_def.h)
 * checked and bounded, its reference kernel compiled with the problem's signature
 * through the users' kernels' service (ukernels.h: the same NVRTC, compile slots, cache
 * and limits), and kept with its owner and versions in the store (store.h's
 * store_problem). A name is its first owner's. The HTTP layer
 * (server/http/routes_problems.c) turns requests into calls here. */
#ifndef GPULAB_PROBLEMS_H
#define GPULAB_PROBLEMS_H

#include <jansson.h>
#include <stdbool.h>

#include "api/error.h"
#include "api/problem_def.h"
#include "kernels/user/ucompile.h"
#include "server/service/ukernels.h"
#include "server/store/store.h"

/* What defining a problem made. */
struct problems_defined {
  struct store_problem row;    /* the version stored (its image included) */
  struct problem_def *def;     /* the definition, parsed */
  struct ucompile_report *rep; /* its reference's compile; also when that failed */
  bool cached;                 /* the compile came from the cache */
  int line;                    /* a 422 source_not_allowed: the line of the reference it is at */
};
void problems_defined_clear(struct problems_defined *d); /* frees what define made */

/* Defines root (borrowed) as owner's problem: its first version, or the next one of
 * owner's problem of that name. Returns 0 with *out filled and stored;
 * PROBLEMS_COMPILE_FAILED when its reference did not compile (out->rep says why:
 * answer 422 as for a kernel); -EINVAL or -ENOMEM with err (its status: the
 * definition's 400 / 413, 409 problem_name_taken or too_many_versions, 403
 * problem_quota, 400 option_not_allowed, 422 source_not_allowed, 503 nvrtc_unavailable
 * or compile_busy, 500); or the store's negative errno with err->status 0 (answer it
 * as a job's storage refusal). *out is the caller's to clear in every case. */
#define PROBLEMS_COMPILE_FAILED 1
int problems_define(struct ukernels *u, const char *owner, json_t *root,
                    struct problems_defined *out, struct api_error *err);

/* Version `version` (0: the newest) of problem name, its image included, into *out
 * (store_problem_clear it), and its parsed definition into *def when def is not NULL
 * (problem_def_free it). 0, -ENOENT, -EIO, -ENOMEM. */
int problems_get(struct ukernels *u, const char *name, int version, struct store_problem *out,
                 struct problem_def **def);
void problems_row_clear(struct store_problem *p); /* store_problem_clear */
/* As store_problem_each. */
int problems_each(struct ukernels *u, const char *name,
                  void (*fn)(void *arg, const struct store_problem *p), void *arg);
/* As store_problem_delete. */
int problems_delete(struct ukernels *u, const char *name);

/* The signature of def's kernels with entry for its %s, without the prelude (for
 * people), into buf. 0 or -ENOSPC. */
int problems_signature(const struct problem_def *def, const char *entry, char *buf, size_t len);

#endif
