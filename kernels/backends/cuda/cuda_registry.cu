/* The CUDA sides of the experiments, one table built from kernels/core/experiments.def
 * in its order (the C registry's), each defined in its experiment's folder. */
#include "kernels/backends/cuda/cuda_exp.h"
#include "kernels/backends/cuda/cuda_job.h" /* cuda_problem_job_ops */

#define EXPERIMENT(ID, name) extern const struct cuda_experiment cuda_exp_##name;
#include "kernels/core/experiments.def"
#undef EXPERIMENT

static const struct cuda_experiment *const registry[] = {
#define EXPERIMENT(ID, name) &cuda_exp_##name,
#include "kernels/core/experiments.def"
#undef EXPERIMENT
};
static_assert(sizeof registry / sizeof registry[0] == EXP_TYPE_COUNT,
              "one CUDA side per experiment");

/* A problem's jobs run their own way (cuda_problem.cu), all in gpulab-runner. */
static const struct cuda_experiment cuda_exp_problem = {NULL, NULL, NULL, &cuda_problem_job_ops,
                                                        NULL};

const struct cuda_experiment *cuda_experiment_of(enum exp_type type) {
  if (type == EXP_PROBLEM) return &cuda_exp_problem;
  return (unsigned)type < EXP_TYPE_COUNT ? registry[type] : NULL;
}
