/* Jobs of problems users define, as a service of gpulabd: a job's spec from a request
 * (POST /problems/{name}/jobs: the problem's params by name beside the options every
 * job takes), and the plans the backends and the codec read (kernels/problem/
 * problem_plan.h): this module is their resolver. It keeps the versions jobs name,
 * parsed, in a small cache, and each version's reference image in the backends' table
 * of kernels (ukreg.h) under -(the version's id). */
#ifndef GPULAB_PROBLEM_JOBS_H
#define GPULAB_PROBLEM_JOBS_H

#include <jansson.h>

#include "api/error.h"
#include "api/params.h"
#include "api/problem_def.h"
#include "kernels/core/experiment.h"
#include "server/engine/engine.h"
#include "server/service/ukernels.h"

/* Makes this module the plans' resolver, reading problems from u's store (borrowed: it
 * must outlive every job; NULL: none, and the cache is emptied). */
void problem_jobs_serve(struct ukernels *u);

/* A job of version row of a problem (def: its definition; both borrowed) from body (a
 * JSON object, borrowed): "params" (the problem's, by name; defaults for the rest),
 * "inputs" (inputs given as uploaded buffers by name: {"x": {"buffer": 3}}; the others
 * generated from the seed) and the fields every job takes (seed, warmup, batches, reps, variant: "reference"
 * and users' kernels of the problem, order, cold, profile, max_noise, max_time, and the
 * job options), kr resolving kernel:<...> variants; its plan made (problem_plan.h: no
 * lock may be held) and what the engine and the codec need of it kept in the spec.
 * Returns 0 with *spec and *opts, or -EINVAL with err (400, naming the field:
 * "params.rows"; a run the plan cannot make, "variant"; graph; 404 or 503 when the
 * version cannot be read). */
int problem_jobs_spec(const struct store_problem *row, const struct problem_def *def, json_t *body,
                      const struct api_kernel_resolver *kr, struct exp_spec *spec,
                      struct api_job_options *opts, struct api_error *err);

/* The declaration def's kernels compile with (its prelude's includes, then its
 * signature, "%s" for the entry) into decl, and its SHA-256 (hex) into sha_hex: what a
 * kernel of the problem keeps, so that only a version of the same signature runs it.
 * 0, -ENOSPC or -ENOMEM. */
/* The buffers spec's inputs name (spec->problem.input_buffer) against def's inputs at
 * spec's params, as e holds them now: each one client may see (NULL: any), of the
 * input's dtype and of its shape (the same dims; or 1-D of its element count; or, for
 * more than 2 dims, 2-D with its last dim as columns). A buffer's dtype and shape never
 * change, so the engine's submission only finds it again. 0, or an error naming
 * "inputs.<name>": 404 buffer_not_found (*missing its id, for a buffer of an earlier
 * run or on another node of a fleet), 400 dtype_mismatch or shape_mismatch. */
int problem_jobs_check_inputs(const struct problem_def *def, const struct exp_spec *spec,
                              struct engine *e, const char *client, uint64_t *missing,
                              struct api_error *err);

int problem_jobs_declaration(const struct problem_def *def, char *decl, size_t len,
                             char sha_hex[65]);

/* spec's plan made now (problem_plan.h; no lock may be held): a run it cannot make is
 * refused, and spec keeps what the engine and the codec need of it. 0, or -EINVAL with
 * err (400 unknown_variant naming the run's why; 404 or 503 when the version cannot be
 * read). problem_jobs_spec ends with it; a job made another way calls it itself. */
int problem_jobs_plan(struct exp_spec *spec, struct api_error *err);

#endif
