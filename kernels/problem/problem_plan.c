/* problem_plan.h: the resolver gpulabd sets, the names of the versions planned, and
 * exp_desc(EXP_PROBLEM), the descriptor every problem's job has: its counts are what the
 * job's plan gave at submission (spec.problem). */
#include "kernels/problem/problem_plan.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic(problem_plan_resolver) resolver;

void problem_plan_set_resolver(problem_plan_resolver fn) { atomic_store(&resolver, fn); }

/* ---- the params' and inputs' names of every version a plan was made of, kept for the
 * codec ---- */

struct named {
  char name[64];
  int version, n, n_inputs;
  char params[EXP_PROBLEM_MAX_PARAMS][PROBLEM_PLAN_NAME];
  char inputs[PROBLEM_PLAN_MAX_BUFFERS][PROBLEM_PLAN_NAME];
};
static pthread_mutex_t names_mu = PTHREAD_MUTEX_INITIALIZER;
static struct named *names;
static size_t n_names, cap_names;

/* Under names_mu: version's entry, or NULL. */
static struct named *named_find(const char *name, int version) {
  for (size_t i = 0; i < n_names; i++)
    if (names[i].version == version && strcmp(names[i].name, name) == 0) return &names[i];
  return NULL;
}

/* Keeps plan's names (a version is immutable: once kept, kept). */
static void names_keep(const struct problem_plan *plan) {
  pthread_mutex_lock(&names_mu);
  if (!named_find(plan->name, plan->version)) {
    if (n_names == cap_names) {
      size_t cap = cap_names ? 2 * cap_names : 16;
      struct named *p = realloc(names, cap * sizeof *p);
      if (p) names = p, cap_names = cap;
    }
    if (n_names < cap_names) {
      struct named *e = &names[n_names++];
      snprintf(e->name, sizeof e->name, "%s", plan->name);
      e->version = plan->version;
      e->n = plan->n_params;
      memcpy(e->params, plan->param_names, sizeof e->params);
      e->n_inputs = plan->n_inputs;
      for (int k = 0; k < plan->n_inputs; k++)
        memcpy(e->inputs[k], plan->inputs[k].name, sizeof e->inputs[k]);
    }
  }
  pthread_mutex_unlock(&names_mu);
}

/* The params' (inputs false) or inputs' names of spec's version into out, as kept. */
static bool names_get(const struct exp_spec *spec, bool inputs, char out[][PROBLEM_PLAN_NAME],
                      int *n) {
  pthread_mutex_lock(&names_mu);
  const struct named *e = named_find(spec->problem.name, spec->problem.version);
  if (e && inputs) {
    *n = e->n_inputs;
    memcpy(out, e->inputs, sizeof e->inputs);
  } else if (e) {
    *n = e->n;
    memcpy(out, e->params, sizeof e->params);
  }
  pthread_mutex_unlock(&names_mu);
  return e != NULL;
}

bool problem_plan_names(const struct exp_spec *spec, char out[][PROBLEM_PLAN_NAME], int *n) {
  return names_get(spec, false, out, n);
}

bool problem_plan_input_names(const struct exp_spec *spec, char out[][PROBLEM_PLAN_NAME], int *n) {
  return names_get(spec, true, out, n);
}

int problem_plan_of(const struct exp_spec *spec, struct problem_plan *out, char *why,
                    size_t why_len) {
  problem_plan_resolver fn = atomic_load(&resolver);
  memset(out, 0, sizeof *out);
  if (spec->type != EXP_PROBLEM || !fn) {
    snprintf(why, why_len, "no problem %.63s here", spec->problem.name);
    return -ENOENT;
  }
  int rc = fn(spec, out, why, why_len);
  if (rc == 0) names_keep(out);
  return rc;
}

void problem_plan_facts(const struct problem_plan *plan, struct exp_spec *spec) {
  spec->problem.figure_flops = !plan->has_bytes && plan->has_flops;
  spec->problem.bytes = plan->has_bytes ? plan->bytes : 0;
  spec->problem.flops = plan->has_flops ? plan->flops : 0;
  spec->problem.device_bytes = problem_plan_bytes(plan, spec->n_variants);
}

uint64_t problem_plan_bytes(const struct problem_plan *plan, int n_runs) {
  return 2 * (uint64_t)plan->in_bytes + (uint64_t)(n_runs + 2) * (uint64_t)plan->out_bytes +
         (uint64_t)plan->scratch_bytes;
}

/* ---- exp_desc(EXP_PROBLEM) ---- */

/* The hooks read what the job's plan gave at its submission (spec.problem). */
static void problem_work(const struct exp_spec *spec, struct exp_work *w) {
  w->bytes = (double)spec->problem.bytes;
  w->flops = (double)spec->problem.flops;
  w->counted = "as the problem's figure counts them";
}

/* GB/s when the problem counts bytes, else GFLOP/s. */
static enum exp_figure problem_figure(const struct exp_spec *spec) {
  return spec->problem.figure_flops ? EXP_FIGURE_GFLOPS : EXP_FIGURE_GBPS;
}

static uint64_t problem_spec_bytes(const struct exp_spec *spec) {
  return spec->problem.device_bytes;
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
