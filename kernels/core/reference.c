/* CPU inputs and references of every experiment (reference.h): the inputs here, what
 * is expected and how closely in each experiment's descriptor (exp_desc.ref_*). */
#include "kernels/core/reference_impl.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/gen.h"

void reference_fill(float *h, size_t n, uint64_t seed, int stream) {
  for (size_t i = 0; i < n; i++) h[i] = gen_uniform(seed, (uint32_t)stream, i);
}

void reference_fill_scaled(float *h, size_t n, uint64_t seed, int stream, float scale) {
  /* One float multiply, nothing else, so a GPU generator makes the same bits. */
  for (size_t i = 0; i < n; i++) h[i] = gen_uniform(seed, (uint32_t)stream, i) * scale;
}

void *reference_alloc(size_t n, size_t size) {
  if (n != 0 && n > SIZE_MAX / size) return NULL;
  return malloc(n ? n * size : 1);
}

/* Sets ref->in[slot]: given[slot] when the caller has it, else generated from the
 * slot's seed into owned[slot]. Returns 0 or -ENOMEM. */
static int take_input(struct reference *ref, const float *const *given, int slot) {
  if (given && given[slot]) {
    ref->in[slot] = given[slot];
    return 0;
  }
  const struct exp_input_desc *in = &ref->exp->inputs[slot];
  struct exp_shape shape;
  exp_input_shape(&ref->spec, slot, &shape);
  size_t n = (size_t)exp_shape_count(&shape);
  float *h = reference_alloc(n, sizeof *h);
  if (!h) return -ENOMEM;
  reference_fill_scaled(h, n, ref->spec.inputs[slot].value, (int)in->stream, in->scale);
  ref->owned[slot] = h;
  ref->in[slot] = h;
  return 0;
}

int reference_new(const struct exp_spec *spec, const float *const *given, struct reference **out) {
  *out = NULL;
  const struct exp_desc *d = exp_desc(spec->type);
  if (!d) return -EINVAL;
  for (int i = 0; i < d->n_params; i++)
    if (spec->p[i] < 0) return -EINVAL;
  struct reference *ref = calloc(1, sizeof *ref);
  if (!ref) return -ENOMEM;
  ref->spec = *spec;
  ref->exp = d;
  struct exp_shape shape;
  exp_output_shape(spec, &shape);
  ref->out_len = (size_t)exp_shape_count(&shape);
  int rc = 0;
  for (int slot = 0; slot < d->n_inputs && rc == 0; slot++) rc = take_input(ref, given, slot);
  if (rc == 0 && d->ref_init) rc = d->ref_init(ref);
  if (rc < 0) goto fail;
  *out = ref;
  return 0;
fail:
  reference_free(ref);
  return rc;
}

void reference_free(struct reference *ref) {
  if (!ref) return;
  if (ref->exp->ref_fini)
    ref->exp->ref_fini(ref);
  else
    free(ref->state); /* one block of init's, or NULL */
  for (int i = 0; i < EXP_MAX_INPUTS; i++) free(ref->owned[i]);
  free(ref);
}

const float *reference_input(const struct reference *ref, int slot) {
  return slot >= 0 && slot < EXP_MAX_INPUTS ? ref->in[slot] : NULL;
}

size_t reference_output_len(const struct reference *ref) { return ref->out_len; }

void reference_check(const struct reference *ref, int entry, const float *out,
                     struct exp_check *check) {
  memset(check, 0, sizeof *check);
  check->done = true;
  /* A user's kernel is held to the rule its experiment names for any correct kernel. */
  if (ref->exp->user && exp_variant_is_user(entry)) entry = ref->exp->user->check_variant;
  ref->exp->ref_check(ref, entry, out, check);
  check->passed = check->mismatches == 0 && !check->precision_failed;
}
