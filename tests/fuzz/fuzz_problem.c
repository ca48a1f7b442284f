/* libFuzzer target for problems users define: the definition parser (api/problem_def.c)
 * and its expressions (kernels/problem/pexpr.c), the two parsers of a problem's
 * untrusted text. An input that starts with '{' is a definition: one accepted must give
 * its signature, template and canonical JSON, read back to the same canonical JSON, and
 * have sizes at its params' defaults, minima and maxima, every buffer within 2^31 - 1
 * elements. Any other input is an expression over n in [1, 4096] and m in [0, 2^20]:
 * one bounded must evaluate, without error, inside its bound at the ranges' corners
 * and at values the input's last bytes pick. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/problem_def.h"
#include "kernels/problem/pexpr.h"
#include "tests/fuzz/fuzz_check.h"

static void check_sizes(const struct problem_def *d, int which) {
  int64_t values[PROBLEM_MAX_PARAMS];
  for (int i = 0; i < d->n_params; i++)
    values[i] = which == 0 ? d->params[i].def : which == 1 ? d->params[i].min : d->params[i].max;
  struct problem_sizes s;
  struct api_error err;
  FUZZ_CHECK(problem_def_sizes(d, values, &s, &err) == 0);
  for (int i = 0; i < d->n_inputs; i++) FUZZ_CHECK(s.inputs[i].elems <= INT32_MAX);
  for (int i = 0; i < d->n_outputs; i++) FUZZ_CHECK(s.outputs[i].elems <= INT32_MAX);
}

static void definition(const uint8_t *data, size_t size) {
  json_t *root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
  if (!root) return;
  struct problem_def *d = NULL;
  struct api_error err;
  int rc = problem_def_parse(root, 0, &d, &err);
  json_decref(root);
  if (rc) {
    FUZZ_CHECK(rc == -EINVAL && (err.status == 400 || err.status == 413) && err.code[0]);
    return;
  }
  char sig[PROBLEM_SIGNATURE_MAX];
  FUZZ_CHECK(problem_def_signature(d, sig, sizeof sig) == 0 && strstr(sig, "%s"));
  char *template = problem_def_template(d);
  FUZZ_CHECK(template != NULL);
  free(template);
  for (int which = 0; which < 3; which++) check_sizes(d, which);
  json_t *canonical = problem_def_to_json(d);
  FUZZ_CHECK(canonical != NULL);
  struct problem_def *again = NULL;
  FUZZ_CHECK(problem_def_parse(canonical, 0, &again, &err) == 0);
  json_t *twice = problem_def_to_json(again);
  FUZZ_CHECK(twice && json_equal(canonical, twice));
  json_decref(twice);
  json_decref(canonical);
  problem_def_free(again);
  problem_def_free(d);
}

static void expression(const uint8_t *data, size_t size) {
  char text[PEXPR_MAX_TEXT + 1];
  size_t n = size < PEXPR_MAX_TEXT ? size : PEXPR_MAX_TEXT;
  memcpy(text, data, n);
  text[n] = '\0';
  static const char *const names[] = {"n", "m"};
  struct pexpr *e = NULL;
  struct pexpr_error err;
  if (pexpr_parse(text, names, 2, &e, &err)) {
    FUZZ_CHECK(err.message[0]);
    return;
  }
  const struct pexpr_range ranges[2] = {{1, 4096}, {0, 1 << 20}};
  struct pexpr_range bound;
  if (pexpr_bound(e, ranges, &bound, &err) == 0) {
    uint32_t pick = 0;
    memcpy(&pick, data + (size >= 4 ? size - 4 : 0), size >= 4 ? 4 : 0);
    const int64_t points[5][2] = {{1, 0},
                                  {4096, 1 << 20},
                                  {1, 1 << 20},
                                  {4096, 0},
                                  {1 + pick % 4096, (pick >> 12) % ((1 << 20) + 1)}};
    for (int p = 0; p < 5; p++) {
      int64_t v;
      FUZZ_CHECK(pexpr_eval(e, points[p], &v, &err) == 0);
      FUZZ_CHECK(v >= bound.lo && v <= bound.hi);
    }
  }
  pexpr_free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 0 && data[0] == '{')
    definition(data, size);
  else
    expression(data, size);
  return 0;
}
