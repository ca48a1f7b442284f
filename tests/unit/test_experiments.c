/* The table-driven test: every registered experiment x every run (each variant, or a
 * runs list's defaults and its word's runs) x one backend, against the experiment's
 * reference, at each param's odd size (exp_param.odd: tails against every tile), plus
 * the registry's own invariants. argv[1]: "cpu" (the default) or "cuda" (ctest's
 * test_gpu_experiments, label gpu: exits 77 where no CUDA device answers). A new
 * experiment is covered by its line in experiments.def. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backends/backend.h"
#include "kernels/core/reference.h"
#include "tests/runner.h"
#include "tests/unit/mode_backend.h"

/* ---- the registry ---- */

static void check_descriptor(enum exp_type t) {
  const struct exp_desc *d = exp_desc(t);
  char route[80];
  CHECK(d != NULL && d->name != NULL);
  CHECK_STR_EQ(exp_type_name(t), d->name);
  snprintf(route, sizeof route, "/%s", d->name);
  CHECK_STR_EQ(exp_type_route(t), route); /* experiments.def's name is the descriptor's */
  CHECK_INT_EQ(exp_type_from_name(d->name), t);
  CHECK(d->n_params >= 1 && d->n_params <= EXP_MAX_PARAMS);
  for (int i = 0; i < d->n_params; i++) {
    const struct exp_param *p = &d->params[i];
    CHECK(p->name && p->min <= p->def && p->def <= p->max && p->min <= p->odd && p->odd <= p->max);
    CHECK_INT_EQ(exp_param_index(t, p->name), i);
  }
  CHECK((d->n_variants > 0) != (d->runs != NULL)); /* runs are variants or a list */
  CHECK(d->n_variants <= EXP_MAX_VARIANTS);
  for (int v = 0; v < d->n_variants; v++) {
    const struct exp_variant *var = &d->variants[v];
    CHECK(var->name && var->doc);
    CHECK_INT_EQ(exp_variant_from_name(t, var->name), v); /* names are unique */
    CHECK(var->cpu.fn ? var->cpu.name && var->cpu.description && var->cpu.mapped_to
                      : var->cpu.reason != NULL);
  }
  if (d->runs) {
    CHECK(d->cpu_run && d->runs->name && d->runs->noun && d->runs->min <= d->runs->max);
    CHECK(d->runs->n_defaults >= 1 && d->runs->n_defaults <= EXP_MAX_VARIANTS);
    for (int w = 0; d->runs->word && w < d->runs->n_word_runs; w++)
      CHECK(d->runs->word_labels[w] &&
            (d->runs->word_runs[w] < d->runs->min || d->runs->word_runs[w] > d->runs->max));
  }
  CHECK(d->n_inputs >= 1 && d->n_inputs <= EXP_MAX_INPUTS);
  for (int s = 0; s < d->n_inputs; s++) CHECK_STR_EQ(exp_input_name(t, s), d->inputs[s].name);
  const bool vector = d->flags & EXP_VECTOR; /* the core's shapes for x of n elements */
  CHECK((d->input_shape || vector) && (d->output_shape || vector) && (d->fit_input || vector) &&
        d->work && d->ref_check);
  CHECK(d->ceiling != EXP_CEILING_DEFAULT && exp_ceiling_name(d->ceiling) != NULL);
  CHECK(exp_figure_unit(t) && exp_work_unit(t));
  struct exp_spec s;
  CHECK_INT_EQ(exp_spec_default(t, &s), 0);
  CHECK(s.type == t && s.n_variants >= 1 && s.timing.batches >= 1);
}

static void check_registry(void) {
  char list[256];
  exp_type_list(list, sizeof list);
  printf("experiments: %s\n", list);
  for (int t = 0; t < EXP_TYPE_COUNT; t++) check_descriptor((enum exp_type)t);
  struct exp_spec s;
  /* Past the registry: a problem's jobs' one descriptor, which no route or list names
   * (its type name is not an experiment's), then nothing. */
  CHECK_STR_EQ(exp_type_name(EXP_PROBLEM), "problem");
  CHECK(exp_type_from_name("problem") == -1 && exp_type_route(EXP_PROBLEM) == NULL);
  CHECK_INT_EQ(exp_spec_default(EXP_PROBLEM, &s), 0);
  CHECK(s.n_variants == 1 && s.variants[0] == 0 && exp_input_count(EXP_PROBLEM) == 0);
  enum exp_type past = (enum exp_type)(EXP_PROBLEM + 1);
  CHECK(exp_desc(past) == NULL && exp_desc((enum exp_type) - 1) == NULL);
  CHECK(exp_type_name(past) == NULL && exp_type_from_name("nope") == -1);
  CHECK_INT_EQ(exp_spec_default(past, &s), -EINVAL); /* never another one */
  CHECK(exp_figure_unit(past) == NULL && exp_input_count(past) == 0);
  struct reference *ref = NULL;
  CHECK_INT_EQ(reference_new(&s, NULL, &ref), -EINVAL);
}

/* ---- every run of every experiment on one backend ---- */

/* type's spec at its odd sizes, with every run: all variants, or the runs list's
 * defaults and then its word's runs. Minimal timing. */
static struct exp_spec odd_spec(enum exp_type t) {
  const struct exp_desc *d = exp_desc(t);
  struct exp_spec s;
  exp_spec_default(t, &s);
  for (int i = 0; i < d->n_params; i++) s.p[i] = d->params[i].odd;
  s.timing = (struct exp_timing_params){1, 2, 1};
  for (int w = 0; d->runs && d->runs->word && w < d->runs->n_word_runs; w++)
    if (s.n_variants < EXP_MAX_VARIANTS) s.variants[s.n_variants++] = d->runs->word_runs[w];
  return s;
}

static float *download(struct backend *b, struct backend_buffer *buf, struct backend_fence *f) {
  float *h = malloc((backend_buffer_count(buf) + 1) * sizeof *h);
  char err[160];
  CHECK(h != NULL);
  CHECK_INT_EQ(backend_buffer_download(b, buf, f, h, err, sizeof err), 0);
  return h;
}

/* The job's output: the first available run's, complete after its fence. */
static void check_output(struct backend *b, const struct exp_spec *s, struct backend_job *job,
                         const struct exp_result *res) {
  int first = 0;
  while (first < res->n_runs && !res->runs[first].available) first++;
  CHECK(job->done != NULL);
  if (first == res->n_runs) {
    CHECK(job->output == NULL);
    return;
  }
  struct exp_shape shape;
  exp_output_shape(s, &shape);
  CHECK_INT_EQ(backend_buffer_count(job->output), exp_shape_count(&shape));
  float *out = download(b, job->output, job->done);
  struct reference *ref = NULL;
  struct exp_check c;
  CHECK_INT_EQ(reference_new(s, NULL, &ref), 0);
  reference_check(ref, res->runs[first].variant, out, &c);
  CHECK(c.done && c.passed);
  reference_free(ref);
  free(out);
}

static int run_all(struct backend *b, const struct exp_spec *s, const char *how) {
  static struct exp_result res; /* large */
  struct backend_job job = {.spec = s, .exclusive = true};
  char err[256] = "", label[32];
  int rc = backend_run(b, 0, &job, NULL, &res, err, sizeof err);
  if (rc != 0) fprintf(stderr, "%s %s: rc %d: %s\n", exp_type_name(s->type), how, rc, err);
  CHECK_INT_EQ(rc, 0);
  CHECK_INT_EQ(res.n_runs, s->n_variants);
  struct exp_work work;
  exp_spec_work_counts(s, &work);
  int available = 0;
  for (int i = 0; i < res.n_runs; i++) {
    const struct exp_run *run = &res.runs[i];
    const struct exp_check *c = &run->check;
    exp_run_label(s, i, label, sizeof label);
    CHECK_STR_EQ(run->label, label);
    CHECK_INT_EQ(run->variant, s->variants[i]);
    if (!run->available) {
      printf("  %-9s %-8s %-11s unavailable: %s\n", exp_type_name(s->type), how, run->label,
             run->reason);
      CHECK(run->reason[0] && !c->done);
      continue;
    }
    available++;
    printf("  %-9s %-8s %-11s %-28s %s: %lld compared, max abs err %.3g (tol %.3g)\n",
           exp_type_name(s->type), how, run->label, run->kernel.name,
           c->passed ? "passed" : "FAILED", (long long)c->compared, c->max_abs_err, c->tolerance);
    CHECK(c->done && c->passed && c->compared > 0);
    CHECK(run->kernel.name[0] && run->kernel.has_work);
    CHECK(run->timing.n_samples >= 1 && run->timing.median_ms >= 0 && run->timing.stopped_by);
    CHECK(run->figure > 0 || run->timing.median_ms == 0 ||
          (exp_desc(s->type)->figure == EXP_FIGURE_GFLOPS ? work.flops : work.bytes) == 0);
  }
  CHECK(exp_result_passed(&res) == (available > 0));
  check_output(b, s, &job, &res);
  backend_buffer_free(b, job.output);
  backend_fence_free(b, job.done);
  return available;
}

static struct backend *be;
static bool cuda;

/* The CPU's backend, or CUDA's with test_mode "cuda" (test_gpu_experiments). */
static int open_backend(void) { return mode_backend_open(&be, &cuda); }
static void close_backend(void) { mode_backend_close(be); }

static void test_registry(void) { check_registry(); }

static void test_every_experiment(void) {
  for (int t = 0; t < EXP_TYPE_COUNT; t++) {
    struct exp_spec s = odd_spec((enum exp_type)t);
    CHECK(run_all(be, &s, "odd") > 0);
    s.order = EXP_ORDER_SEQUENTIAL; /* one window per run */
    CHECK(run_all(be, &s, "seq") > 0);
    if (cuda) { /* the same runs as captured CUDA Graphs */
      s.graph = true;
      CHECK(run_all(be, &s, "graph") > 0);
    }
  }
}

static const char *const modes[] = {"cuda", NULL};
static const struct test_case cases[] = {
    TEST(test_registry),
    TEST(test_every_experiment),
    TEST_END,
};
const struct test_suite test_suite = {
    .cases = cases, .modes = modes, .setup = open_backend, .teardown = close_backend};
