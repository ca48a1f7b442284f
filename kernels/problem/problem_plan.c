/* problem_plan.h: the resolver gpulabd sets, and exp_desc(EXP_PROBLEM), the descriptor
 * every problem's job has: its counts come from the job's plan. */
#include "kernels/problem/problem_plan.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static _Atomic(problem_plan_resolver) resolver;

void problem_plan_set_resolver(problem_plan_resolver fn) { atomic_store(&resolver, fn); }

int problem_plan_of(const struct exp_spec *spec, struct problem_plan *out, char *why,
                    size_t why_len) {
  problem_plan_resolver fn = atomic_load(&resolver);
  memset(out, 0, sizeof *out);
  if (spec->type == EXP_PROBLEM && fn) return fn(spec, out, why, why_len);
  snprintf(why, why_len, "no problem %.63s here", spec->problem.name);
  return -ENOENT;
}

uint64_t problem_plan_bytes(const struct problem_plan *plan, int n_runs) {
  return 2 * (uint64_t)plan->in_bytes + (uint64_t)(n_runs + 2) * (uint64_t)plan->out_bytes +
         (uint64_t)plan->scratch_bytes;
}

/* ---- exp_desc(EXP_PROBLEM) ---- */

static void problem_work(const struct exp_spec *spec, struct exp_work *w) {
  struct problem_plan plan;
  char why[128];
  if (problem_plan_of(spec, &plan, why, sizeof why)) return;
  w->bytes = plan.has_bytes ? (double)plan.bytes : 0;
  w->flops = plan.has_flops ? (double)plan.flops : 0;
  w->counted = "as the problem's figure counts them";
}

/* GB/s when the problem counts bytes, else GFLOP/s. */
static enum exp_figure problem_figure(const struct exp_spec *spec) {
  struct problem_plan plan;
  char why[128];
  if (problem_plan_of(spec, &plan, why, sizeof why) == 0 && !plan.has_bytes && plan.has_flops)
    return EXP_FIGURE_GFLOPS;
  return EXP_FIGURE_GBPS;
}

static uint64_t problem_spec_bytes(const struct exp_spec *spec) {
  struct problem_plan plan;
  char why[128];
  if (problem_plan_of(spec, &plan, why, sizeof why)) return 0;
  return problem_plan_bytes(&plan, spec->n_variants);
}

static const struct exp_param no_params[1];
static const struct exp_input_desc no_inputs[1];

static const struct exp_variant problem_variants[] = {
    {"reference",
     "the problem's own reference kernel, whose outputs are the truth",
     0,
     EXP_CEILING_DEFAULT,
     {NULL, "reference", "the problem's reference kernel", "",
      "problems run on a CUDA device: their reference and kernels are CUDA C, and this "
      "backend is the CPU"}},
};

/* Users' kernels of a problem: their signature is the problem's (api/problem_def.h),
 * not a fixed one, so the block holds only what is the same for every problem. */
static const struct exp_user problem_user = {
    .meaning = "the problem's signature: inputs as const T *, outputs as T *, the params as int",
    .grid_x = 0,
    .grid_y = -1,
    .grid_rule = "grid: expressions over the problem's params",
    .default_block = {256, 1, 1},
    .default_tile = {256, 1},
    .check_variant = PROBLEM_VARIANT_REFERENCE,
};

const struct exp_desc exp_problem = {
    .name = "problem",
    .title = "Problem",
    .doc = "a problem a user defined: its reference and users' kernels of it",
    .flags = 0,
    .n_params = 0,
    .params = no_params,
    .n_variants = EXP_COUNT_OF(problem_variants),
    .variants = problem_variants,
    .n_inputs = 0,
    .inputs = no_inputs,
    .timing = EXP_TIMING_LECTURE,
    .work = problem_work,
    .figure = EXP_FIGURE_GBPS,
    .ceiling = EXP_CEILING_COPY,
    .user = &problem_user,
    .figure_of = problem_figure,
    .spec_bytes = problem_spec_bytes,
};
