/* The CUDA sides of the experiments, one table built from kernels/core/experiments.def
 * in its order (the C registry's), each defined in its experiment's folder. */
#include "kernels/backends/cuda/cuda_exp.h"

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

const struct cuda_experiment *cuda_experiment_of(enum exp_type type) {
  return (unsigned)type < EXP_TYPE_COUNT ? registry[type] : NULL;
}
