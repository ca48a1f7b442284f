/* The registry: one table of the experiments' descriptors, built from
 * kernels/core/experiments.def, in its order. */
#include <stdio.h>
#include <string.h>

#include "kernels/core/experiment.h"

#define EXPERIMENT(ID, name) extern const struct exp_desc exp_##name;
#include "kernels/core/experiments.def"
#undef EXPERIMENT

static const struct exp_desc *const registry[] = {
#define EXPERIMENT(ID, name) &exp_##name,
#include "kernels/core/experiments.def"
#undef EXPERIMENT
};
static const char *const routes[] = {
#define EXPERIMENT(ID, name) "/" #name,
#include "kernels/core/experiments.def"
#undef EXPERIMENT
};
extern const struct exp_desc exp_problem; /* kernels/problem/problem_plan.c */
_Static_assert(EXP_COUNT_OF(registry) == EXP_TYPE_COUNT, "one descriptor per experiment");
_Static_assert(EXP_COUNT_OF(routes) == EXP_TYPE_COUNT, "one route per experiment");

const struct exp_desc *exp_desc(enum exp_type type) {
  if (type == EXP_PROBLEM) return &exp_problem;
  return (unsigned)type < EXP_TYPE_COUNT ? registry[type] : NULL;
}

const char *exp_type_name(enum exp_type type) {
  const struct exp_desc *d = exp_desc(type);
  return d ? d->name : NULL;
}

const char *exp_type_route(enum exp_type type) {
  return (unsigned)type < EXP_TYPE_COUNT ? routes[type] : NULL;
}

int exp_type_from_name(const char *name) {
  for (int i = 0; i < EXP_TYPE_COUNT; i++)
    if (strcmp(name, registry[i]->name) == 0) return i;
  return -1;
}

void exp_type_list(char *buf, size_t len) {
  size_t used = 0;
  if (len) buf[0] = '\0';
  for (int i = 0; i < EXP_TYPE_COUNT; i++)
    used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s%s", i ? ", " : "",
                             registry[i]->name);
}

static const struct {
  const char *name;
  size_t bytes;
} dtypes[] = {
    [EXP_DTYPE_F32] = {"float32", 4}, [EXP_DTYPE_U32] = {"uint32", 4},
    [EXP_DTYPE_F16] = {"float16", 2}, [EXP_DTYPE_BF16] = {"bfloat16", 2},
    [EXP_DTYPE_I32] = {"int32", 4},   [EXP_DTYPE_I8] = {"int8", 1},
};
_Static_assert(EXP_COUNT_OF(dtypes) == EXP_DTYPE_COUNT, "a name per dtype");

const char *exp_dtype_name(enum exp_dtype d) {
  return (unsigned)d < EXP_DTYPE_COUNT ? dtypes[d].name : "float32";
}
size_t exp_dtype_bytes(enum exp_dtype d) {
  return (unsigned)d < EXP_DTYPE_COUNT ? dtypes[d].bytes : 4;
}
