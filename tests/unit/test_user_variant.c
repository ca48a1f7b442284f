/* A user's kernel as a job's run, below HTTP: its encoding in the spec and its label,
 * every experiment's user block (a sound signature, grid rule and check), the check
 * rule a user's output borrows (every built-in's CPU stand-in, but a baseline's, passes
 * it; one wrong element fails it), the memory counted for the runner's copies, and the
 * refusal of a figure above the ceiling. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/experiment.h"
#include "kernels/core/reference.h"
#include "tests/runner.h"

static void test_encoding(void) {
  CHECK(!exp_variant_is_user(0));
  CHECK(!exp_variant_is_user(EXP_MAX_VARIANTS));
  int v = exp_user_variant(7);
  CHECK(exp_variant_is_user(v));
  CHECK_INT_EQ(exp_user_kernel_id(v), 7);
  CHECK_INT_EQ(exp_user_kernel_id(exp_user_variant(EXP_USER_KERNEL_MAX_ID)),
               EXP_USER_KERNEL_MAX_ID);
  CHECK(exp_user_variant(EXP_USER_KERNEL_MAX_ID) > 0);
}

/* The block's arguments name real slots and params, one output, a declaration with one
 * %s, a grid rule over dims, a check variant of the experiment's own. */
static void test_blocks(void) {
  int with = 0;
  for (int t = 0; t < EXP_TYPE_COUNT; t++) {
    const struct exp_desc *d = exp_desc((enum exp_type)t);
    const struct exp_user *u = d->user;
    CHECK(u == exp_user_of((enum exp_type)t));
    if (!u) continue;
    with++;
    CHECK(d->runs == NULL); /* users' kernels are variants */
    CHECK(u->n_args >= 2 && u->n_args <= EXP_USER_MAX_ARGS);
    int outputs = 0;
    for (int a = 0; a < u->n_args; a++) {
      const struct exp_user_arg *arg = &u->args[a];
      if (arg->kind == EXP_USER_ARG_OUTPUT) outputs++;
      if (arg->kind == EXP_USER_ARG_INPUT) CHECK(arg->index >= 0 && arg->index < d->n_inputs);
      if (arg->kind == EXP_USER_ARG_PARAM) CHECK(arg->index >= 0 && arg->index < d->n_params);
    }
    CHECK_INT_EQ(outputs, 1);
    const char *s = strstr(u->declaration, "%s");
    CHECK(s != NULL && strstr(s + 2, "%") == NULL);
    CHECK(strstr(u->signature, " kernel(") != NULL);
    CHECK(strstr(u->template_source, " kernel(") != NULL);
    CHECK(u->grid_x >= 0 && u->grid_x < d->n_params);
    CHECK(u->grid_y >= -1 && u->grid_y < d->n_params);
    CHECK(u->default_block[0] * u->default_block[1] * u->default_block[2] <= 1024);
    CHECK(u->default_tile[0] > 0 && u->default_tile[1] > 0);
    CHECK(u->check_variant >= 0 && u->check_variant <= d->n_variants); /* n: a rule of its own */
    CHECK(u->meaning[0] && u->grid_rule[0]);
  }
  CHECK(with >= 6); /* transpose, gemm, stencil, reduce, scan, histogram */
}

/* At each param's odd size: every built-in stand-in's output (a correct kernel of the
 * experiment's, in its own summation order) passes the user's rule; one element off
 * fails it with one mismatch. */
static void test_check_rule(void) {
  for (int t = 0; t < EXP_TYPE_COUNT; t++) {
    const struct exp_desc *d = exp_desc((enum exp_type)t);
    if (!d->user) continue;
    struct exp_spec spec;
    CHECK_INT_EQ(exp_spec_default((enum exp_type)t, &spec), 0);
    for (int i = 0; i < d->n_params; i++) spec.p[i] = d->params[i].odd;
    spec.n_variants = 1;
    spec.variants[0] = exp_user_variant(3);
    struct reference *ref = NULL;
    CHECK_INT_EQ(reference_new(&spec, NULL, &ref), 0);
    size_t n = reference_output_len(ref);
    float *out = malloc((n ? n : 1) * sizeof *out);
    /* The scratch of the hungriest variant (reduce's depends on which runs). */
    size_t scratch_n = 0;
    for (int v = 0; v < d->n_variants && d->cpu_scratch_floats; v++) {
      struct exp_spec one = spec;
      one.variants[0] = v;
      size_t k = d->cpu_scratch_floats(&one);
      if (k > scratch_n) scratch_n = k;
    }
    float *scratch = scratch_n ? malloc(scratch_n * sizeof *scratch) : NULL;
    CHECK(out && (scratch || !scratch_n));
    const float *in[EXP_MAX_INPUTS] = {reference_input(ref, 0), reference_input(ref, 1)};
    int passed = 0;
    for (int v = 0; v < d->n_variants; v++) {
      const struct exp_variant *var = &d->variants[v];
      if (!var->cpu.fn || (var->flags & EXP_VARIANT_BASELINE)) continue;
      struct exp_spec one = spec;
      one.variants[0] = v;
      char err[128] = "";
      struct exp_cpu_call call = {&one, in, out, scratch, v, NULL, err, sizeof err};
      CHECK_INT_EQ(var->cpu.fn(&call), 0);
      struct exp_check c;
      reference_check(ref, exp_user_variant(3), out, &c);
      if (!c.passed)
        CHECK_FAIL_("%s: %s's output fails the users' rule (%s): %lld mismatches", d->name,
                    var->name, c.tolerance_rule, (long long)c.mismatches);
      CHECK_INT_EQ(c.compared, (long long)n);
      passed++;
    }
    CHECK(passed > 0);
    out[n / 2] += 1.0f + fabsf(out[n / 2]);
    struct exp_check c;
    reference_check(ref, exp_user_variant(3), out, &c);
    CHECK(!c.passed);
    CHECK_INT_EQ(c.mismatches, 1);
    printf("%s: users' rule \"%s\", %d built-ins pass it\n", d->name, c.tolerance_rule, passed);
    free(scratch);
    free(out);
    reference_free(ref);
  }
}

static void test_labels_and_bytes(void) {
  int transpose = exp_type_from_name("transpose");
  CHECK(transpose >= 0);
  struct exp_spec spec;
  exp_spec_default((enum exp_type)transpose, &spec);
  spec.n_variants = 2;
  spec.variants[0] = exp_variant_from_name((enum exp_type)transpose, "padded33");
  spec.variants[1] = exp_user_variant(7);
  char label[32];
  exp_run_label(&spec, 1, label, sizeof label);
  CHECK_STR_EQ(label, "kernel:7");
  CHECK(exp_variant_of(&spec, spec.variants[1]) == NULL);
  /* The runner reads copies of the inputs: counted once more. */
  uint64_t with = exp_spec_bytes(&spec);
  spec.variants[1] = exp_variant_from_name((enum exp_type)transpose, "naive");
  uint64_t without = exp_spec_bytes(&spec);
  CHECK_INT_EQ(with - without, 4ull * (uint64_t)spec.p[0] * (uint64_t)spec.p[1]);
  /* The pipeline takes none: its label stays its runs list's. */
  int pipeline = exp_type_from_name("pipeline");
  CHECK(pipeline >= 0 && exp_user_of((enum exp_type)pipeline) == NULL);
}

/* Above the ceiling by more than the margin: the user's run is refused, the built-in
 * (however fast) is not judged; no ceiling: nothing refused. */
static void test_implausible(void) {
  int transpose = exp_type_from_name("transpose");
  struct exp_spec spec;
  exp_spec_default((enum exp_type)transpose, &spec);
  spec.n_variants = 2;
  spec.variants[0] = 2;
  spec.variants[1] = exp_user_variant(7);
  static struct exp_result res;
  memset(&res, 0, sizeof res);
  res.n_runs = 2;
  res.ceilings.copy_gbps = 1000;
  for (int i = 0; i < 2; i++) {
    res.runs[i].variant = spec.variants[i];
    res.runs[i].available = true;
    res.runs[i].check.done = res.runs[i].check.passed = true;
    res.runs[i].figure = 2000;
    res.runs[i].speedup = 1;
  }
  CHECK_INT_EQ(exp_result_refuse_implausible(&spec, &res), 1);
  CHECK(res.runs[0].check.passed && res.runs[0].figure == 2000 && !res.runs[0].refused[0]);
  CHECK(!res.runs[1].check.passed);
  CHECK(res.runs[1].figure == 0 && res.runs[1].speedup == 0);
  CHECK(strncmp(res.runs[1].refused, "implausible_result: 2000 GB/s", 29) == 0);
  CHECK(!exp_result_passed(&res));
  res.runs[1].figure = 1040; /* within 5%: measurement noise near the ceiling */
  res.runs[1].check.passed = true;
  res.runs[1].refused[0] = '\0';
  CHECK_INT_EQ(exp_result_refuse_implausible(&spec, &res), 0);
  /* Where the copy at the job's size beats the ceiling (the L2), it is the bound. */
  res.runs[1].figure = 2000;
  res.limit = (struct exp_limit){1 << 25, 1950, EXP_LIMIT_ALONE};
  CHECK_INT_EQ(exp_result_refuse_implausible(&spec, &res), 0);
  res.runs[1].figure = 2100;
  CHECK_INT_EQ(exp_result_refuse_implausible(&spec, &res), 1);
  CHECK(strstr(res.runs[1].refused, "above a copy of as many bytes on this device") != NULL);
  res.runs[1].check.passed = true;
  res.runs[1].refused[0] = '\0';
  res.limit = (struct exp_limit){0};
  res.runs[1].figure = 5000;
  res.ceilings.copy_gbps = 0;
  CHECK_INT_EQ(exp_result_refuse_implausible(&spec, &res), 0);
  /* exp_result_finish refuses too: 8mn bytes in 1 us is far past 1000 GB/s. */
  res.ceilings.copy_gbps = 1000;
  for (int i = 0; i < 2; i++) {
    res.runs[i].timing.n_samples = 1;
    res.runs[i].timing.samples_ms[0] = res.runs[i].timing.median_ms = 1e-3;
    res.runs[i].timing.min_ms = res.runs[i].timing.max_ms = 1e-3;
  }
  exp_result_finish(&spec, &res);
  CHECK(res.runs[0].figure > 1000 && res.runs[1].figure == 0 && res.runs[1].refused[0]);
}

/* The check of a user's output (user variant) at n elements of experiment name on
 * generated inputs, or on inputs given as data (the same values): passed or not, the
 * rule's text in rule. */
static bool user_check(const char *name, int n, bool given,
                       void (*fill)(const float *, float *, int), char *rule, size_t rule_len) {
  struct exp_spec spec;
  CHECK_INT_EQ(exp_spec_default((enum exp_type)exp_type_from_name(name), &spec), 0);
  spec.p[0] = n;
  spec.n_variants = 1;
  spec.variants[0] = exp_user_variant(3);
  struct reference *gen = NULL, *ref = NULL;
  CHECK_INT_EQ(reference_new(&spec, NULL, &gen), 0);
  const float *x = reference_input(gen, 0);
  if (given) {
    spec.inputs[0] = (struct exp_input){EXP_INPUT_BUFFER, 1};
    const float *in[EXP_MAX_INPUTS] = {x, NULL};
    CHECK_INT_EQ(reference_new(&spec, in, &ref), 0);
  }
  float *out = calloc((size_t)n, sizeof *out);
  fill(x, out, n);
  struct exp_check c;
  reference_check(given ? ref : gen, exp_user_variant(3), out, &c);
  snprintf(rule, rule_len, "%s", c.tolerance_rule);
  free(out);
  reference_free(ref);
  reference_free(gen);
  return c.passed;
}

static void sum_float(const float *x, float *out, int n) {
  for (int i = 0; i < n; i++) out[0] += x[i];
}
static void sum_half_of_x(const float *x, float *out, int n) { sum_float(x, out, n / 2); }
static void sum_zero(const float *x, float *out, int n) { (void)x, (void)out, (void)n; }
static void scan_float(const float *x, float *y, int n) {
  float s = 0;
  for (int i = 0; i < n; i++) y[i] = s += x[i];
}
/* y[i] rounded to 11 significant bits, as half precision keeps them */
static void scan_half(const float *x, float *y, int n) {
  scan_float(x, y, n);
  for (int i = 0; i < n; i++) {
    int e = 0;
    const float mantissa = frexpf(y[i], &e); /* before e is read: an argument's order is free */
    y[i] = ldexpf(rintf(ldexpf(mantissa, 11)), e - 11);
  }
}

/* Users' sums and scans on generated inputs are held to rounding as it happens
 * (kernels/core/sum_rule.h): a sequential float loop, the worst common order, passes at
 * a million values; an answer of 0, a sum of half of x, a scan in half precision fail.
 * On the same values given as data, only any order's bound holds, which passes 0. */
static void test_sum_rule(void) {
  char rule[128];
  const int n = 1 << 20;
  CHECK(user_check("reduce", n, false, sum_float, rule, sizeof rule));
  CHECK(strstr(rule, "sqrt(n)") != NULL);
  CHECK(!user_check("reduce", n, false, sum_zero, rule, sizeof rule));
  CHECK(!user_check("reduce", n, false, sum_half_of_x, rule, sizeof rule));
  CHECK(user_check("reduce", n, true, sum_float, rule, sizeof rule));
  CHECK(user_check("reduce", n, true, sum_zero, rule, sizeof rule)); /* why random exists */
  CHECK(strstr(rule, "any order") != NULL);
  CHECK(user_check("scan", n, false, scan_float, rule, sizeof rule));
  CHECK(!user_check("scan", n, false, scan_half, rule, sizeof rule));
  /* where a rule of the largest prefix of all, held at every y[i], passed it */
  CHECK(!user_check("scan", 4 * n, false, scan_half, rule, sizeof rule));
  printf("reduce and scan at 2^20: a float loop passes; 0, half of x, half precision fail\n");
}

static const struct test_case cases[] = {
    TEST(test_encoding),
    TEST(test_blocks),
    TEST(test_check_rule),
    TEST(test_labels_and_bytes),
    TEST(test_implausible),
    TEST(test_sum_rule),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases};
