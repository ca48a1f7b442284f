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
#include "server/service/ukernels.h"

/* Makes this module the plans' resolver, reading problems from u's store (borrowed: it
 * must outlive every job; NULL: none, and the cache is emptied). */
void problem_jobs_serve(struct ukernels *u);

/* A job of version row of a problem (def: its definition; both borrowed) from body (a
 * JSON object, borrowed): "params" (the problem's, by name; defaults for the rest)
 * and the fields every job takes (seed, warmup, batches, reps, variant: "reference"
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
int problem_jobs_declaration(const struct problem_def *def, char *decl, size_t len,
                             char sha_hex[65]);

/* spec's plan made now (problem_plan.h; no lock may be held): a run it cannot make is
 * refused, and spec keeps what the engine and the codec need of it. 0, or -EINVAL with
 * err (400 unknown_variant naming the run's why; 404 or 503 when the version cannot be
 * read). problem_jobs_spec ends with it; a job made another way calls it itself. */
int problem_jobs_plan(struct exp_spec *spec, struct api_error *err);

#endif
