/* A job of a problem users define, as the backends and the JSON codec see it: its plan,
 * everything its definition gives at the job's params (buffers with their dtypes, inits
 * and tolerances, the reference's launch and each run's, the figure's counts), as
 * plain data. The definition itself (api/problem_def.h) is gpulabd's: the service
 * sets a resolver at start that makes a spec's plan from the problem's stored version
 * (spec.problem: its name and version) and the kernels its runs name. exp_desc(EXP_PROBLEM), the
 * one descriptor every problem's job has, reads its counts from here too. No JSON, no
 * CUDA. */
#ifndef GPULAB_PROBLEM_PLAN_H
#define GPULAB_PROBLEM_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/core/experiment.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PROBLEM_PLAN_MAX_BUFFERS 8 /* inputs, and outputs, each (api/problem_def.h's) */
#define PROBLEM_PLAN_NAME 32       /* a param's or buffer's name, NUL included */

/* An input or an output at the job's params. dtype and init are api/problem_def.h's
 * enums (runner_proto.h numbers them alike). */
struct problem_plan_buffer {
  char name[PROBLEM_PLAN_NAME];
  int dtype;
  int64_t elems, bytes;
  int init;        /* inputs: uniform, normal, integers */
  double a, b;     /* inputs: the init's two numbers */
  bool exact;      /* outputs: bit for bit */
  double abs, rel; /* outputs: |got - want| <= abs + rel * |want| */
};

/* A launch at the job's params; unavailable (why says so) when the kernel cannot run it. */
struct problem_plan_launch {
  long long id; /* the kernel version's id (ukreg.h); the reference's: -version_id */
  int grid[3], block[3];
  int shared_bytes;
  bool cooperative;
  bool available;
  char why[128];
};

struct problem_plan {
  long long version_id; /* the store's id of the version */
  char name[64];
  int version;
  int n_params;
  char param_names[EXP_PROBLEM_MAX_PARAMS][PROBLEM_PLAN_NAME];
  int n_inputs, n_outputs;
  struct problem_plan_buffer inputs[PROBLEM_PLAN_MAX_BUFFERS], outputs[PROBLEM_PLAN_MAX_BUFFERS];
  int64_t scratch_bytes; /* 0: the kernels take no scratch */
  bool nondeterministic;
  bool has_bytes, has_flops;
  int64_t bytes, flops;        /* the figure's counts */
  int64_t in_bytes, out_bytes; /* one set of inputs, of outputs */
  struct problem_plan_launch reference;
  struct problem_plan_launch
      runs[EXP_MAX_VARIANTS]; /* by spec run: the reference's or a kernel's */
};

/* Makes spec's plan into *out, the reference's image in ukreg (kernels/user/ukreg.h)
 * under plan.reference.id, -version_id. Returns 0, or -ENOENT (no such version: why says so), or
 * another negative errno with why. Called from any thread. */
typedef int (*problem_plan_resolver)(const struct exp_spec *spec, struct problem_plan *out,
                                     char *why, size_t why_len);
/* Sets the resolver (gpulabd's service, at start; NULL: none, every plan -ENOENT). */
void problem_plan_set_resolver(problem_plan_resolver fn);
/* spec's plan (spec->type EXP_PROBLEM). 0, or the resolver's error with why; -ENOENT
 * without a resolver. It may read the store: never call it holding a lock (the
 * engine's, the store's); the job's submission, its recovery and the backend's
 * planning do. A plan made also keeps its params' names (problem_plan_names). */
int problem_plan_of(const struct exp_spec *spec, struct problem_plan *out, char *why,
                    size_t why_len);

/* Fills spec->problem's figure counts and device bytes from plan (at submission). */
void problem_plan_facts(const struct problem_plan *plan, struct exp_spec *spec);

/* The params' names of spec's problem version, as a plan of it made in this process
 * kept them (names[i], *n of them): true; false when none was made here yet. Reads
 * memory only, under a lock of its own: for the codec, from any thread. */
bool problem_plan_names(const struct exp_spec *spec, char names[][PROBLEM_PLAN_NAME], int *n);
/* The same for its inputs' names (names[k], *n of them). */
bool problem_plan_input_names(const struct exp_spec *spec, char names[][PROBLEM_PLAN_NAME], int *n);

/* A problem's variants: the reference is variant 0; users' kernels are
 * exp_user_variant(id) as for the experiments. */
#define PROBLEM_VARIANT_REFERENCE 0

/* Device bytes a job of plan with n_runs runs needs at once, as the runner makes its
 * buffers: the inputs (and the copy fresh ones are checked against), the reference's
 * outputs twice, one set of outputs per run, and the scratch. */
uint64_t problem_plan_bytes(const struct problem_plan *plan, int n_runs);

#ifdef __cplusplus
}
#endif
#endif
