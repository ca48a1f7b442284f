/* A problem's job on the CUDA backend (cuda_job.h's cuda_problem_job_ops): its reference
 * and users' kernels of it, all in gpulab-runner (kernels/user/runner.h), never in this
 * context. The runner makes the problem's buffers at the job's params from its plan
 * (kernels/problem/problem_plan.h), generates the inputs from the job's seed and checks
 * the reference against itself there (RUNNER_MSG_PROBLEM); each run's warm-ups and
 * samples are RUN requests, each timed launch on fresh inputs from a seed drawn here and
 * checked by the runner against the reference on the same inputs; after the windows each
 * run's outputs are compared there with the reference's on the job's inputs, which is
 * the run's check. So the guarantees of users' kernels hold for every run of a problem:
 * fresh inputs per timed launch, every element checked on the device, outputs poisoned
 * and module state put back before every launch, inputs verified unchanged. Inputs the
 * job gives as buffers are copied into allocations of their own that the runner opens by
 * IPC (RUNNER_MSG_ATTACH) and makes the job's inputs from; fresh launches still get
 * generated ones. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backends/cuda/cuda_job.h"
#include "kernels/problem/problem_plan.h"
#include "kernels/user/runner.h"
#include "kernels/user/ukreg.h"

struct problem_job {
  struct problem_plan plan;
  struct runner *runner;
  bool held;
  struct ukreg_kernel *k[EXP_MAX_VARIANTS]; /* each run's image (the reference's for its runs) */
  struct runner_run_msg msg[EXP_MAX_VARIANTS];
  void *d_given[PROBLEM_PLAN_MAX_BUFFERS]; /* IPC copies of the inputs given (cudaMalloc) */
  int n_given;
};

static struct problem_job *pj_of(struct cuda_job *j) { return (struct problem_job *)j->priv; }

/* Whether launch l of image k fits the device; else run is unavailable, saying why. */
static bool fits(const struct cuda_job *j, struct exp_run *run, const struct problem_plan_launch *l,
                 const struct ukreg_kernel *k) {
  const long long grid[3] = {l->grid[0], l->grid[1], l->grid[2]};
  return cuda_launch_fits(j, run, l->block, grid, l->shared_bytes, l->cooperative, k);
}

/* Run r's identity, image, launch and message; unavailable when it cannot run here. */
static int plan_run(struct cuda_job *j, int r) {
  struct problem_job *pj = pj_of(j);
  struct exp_run *run = job_run_init(j, r, j->spec->variants[r],
                                     "events in gpulab-runner around each launch, each on fresh "
                                     "inputs checked against the reference");
  exp_run_label(j->spec, r, run->label, sizeof run->label);
  if (exp_variant_is_user(run->variant)) ukreg_run_user(run);
  const struct problem_plan_launch *l = &pj->plan.runs[r];
  if (!l->available) return job_run_unavailable(run, "%s", l->why);
  if (j->spec->graph)
    return job_run_unavailable(
        run,
        "graph: a problem's kernels run in gpulab-runner, another process with "
        "its own CUDA context, so they cannot join a CUDA Graph of this one");
  if (ukreg_get(l->id, &pj->k[r]) != 0 || !pj->k[r]->image)
    return job_run_unavailable(run, "kernel %lld is not loaded here", l->id);
  const struct ukreg_kernel *k = pj->k[r];
  if (k->refused[0])
    return job_run_unavailable(run, "refused by today's rules: %.64s; send it again", k->refused);
  if (!fits(j, run, l, k)) return 0;
  struct runner_run_msg *m = &pj->msg[r];
  memset(m, 0, sizeof *m);
  memcpy(m->key, k->key, sizeof m->key);
  for (int i = 0; i < 3; i++)
    m->grid[i] = (uint32_t)l->grid[i], m->block[i] = (uint32_t)l->block[i];
  m->dyn_shared_bytes = (uint32_t)l->shared_bytes;
  m->cooperative = l->cooperative;
  m->poison_each = 1;
  m->cold = j->spec->cold;
  m->problem.on = 1;
  m->problem.run = (uint32_t)r;
  struct exp_kernel_info *ki = &run->kernel;
  if (l->id < 0)
    snprintf(ki->name, sizeof ki->name, "%.40s (reference)", k->entry);
  else
    snprintf(ki->name, sizeof ki->name, "%.32s (kernel:%lld)", k->name, l->id); /* fits 64 */
  snprintf(ki->description, sizeof ki->description, "%.40s's %s of problem %.40s, in gpulab-runner",
           k->owner, l->id < 0 ? "reference" : "kernel", pj->plan.name);
  ki->has_launch = true;
  for (int i = 0; i < 3; i++) ki->grid[i] = l->grid[i], ki->block[i] = l->block[i];
  ki->registers = k->registers;
  ki->static_shared_bytes = k->static_shared_bytes;
  ki->dynamic_shared_bytes = l->shared_bytes;
  ki->local_bytes = k->stack_bytes;
  return 0;
}

static int plan_runs(struct cuda_job *j) {
  struct problem_job *pj = (struct problem_job *)calloc(1, sizeof *pj);
  if (!pj) {
    snprintf(j->err, j->err_len, "host out of memory");
    return -ENOMEM;
  }
  j->priv = pj;
  char why[160];
  int rc = problem_plan_of(j->spec, &pj->plan, why, sizeof why);
  if (rc) {
    snprintf(j->err, j->err_len, "%s", why);
    return rc == -ENOMEM || rc == -EIO ? rc : -EINVAL; /* a store's failure is not the job's */
  }
  j->result->n_runs = j->spec->n_variants;
  for (int r = 0; r < j->spec->n_variants; r++) RC_TRY(plan_run(j, r));
  return 0;
}

/* A runner's error as the backend's (negative errno), its message in j->err. */
static int runner_error(struct cuda_job *j, int rc, const char *what, const char *msg) {
  snprintf(j->err, j->err_len, "problem %.40s: %s: %s", pj_of(j)->plan.name, what, msg);
  return rc == -EFAULT || rc == -ETIMEDOUT || rc == -ENOMEM ? rc : -EINVAL;
}

/* The problem's buffers as the runner makes them, from the plan. */
static void problem_msg(const struct cuda_job *j, const struct problem_plan *p,
                        const struct ukreg_kernel *ref, struct runner_problem_msg *m) {
  memset(m, 0, sizeof *m);
  m->n_in = (uint32_t)p->n_inputs;
  m->n_out = (uint32_t)p->n_outputs;
  m->n_params = (uint32_t)p->n_params;
  m->nondeterministic = p->nondeterministic;
  for (int i = 0; i < p->n_inputs; i++)
    m->in[i] = (struct runner_problem_input){(uint32_t)p->inputs[i].dtype,
                                             (uint32_t)p->inputs[i].init,
                                             p->inputs[i].a,
                                             p->inputs[i].b,
                                             (uint64_t)p->inputs[i].elems,
                                             0,
                                             0};
  for (int i = 0; i < p->n_outputs; i++)
    m->out[i] = (struct runner_problem_output){(uint32_t)p->outputs[i].dtype, p->outputs[i].exact,
                                               p->outputs[i].abs, p->outputs[i].rel,
                                               (uint64_t)p->outputs[i].elems};
  for (int i = 0; i < p->n_params; i++) m->params[i] = j->spec->problem.values[i];
  m->scratch_bytes = (uint64_t)p->scratch_bytes;
  m->seed = j->spec->seed;
  memcpy(m->ref_key, ref->key, sizeof m->ref_key);
  for (int i = 0; i < 3; i++)
    m->ref_grid[i] = (uint32_t)p->reference.grid[i],
    m->ref_block[i] = (uint32_t)p->reference.block[i];
  m->ref_shared_bytes = (uint32_t)p->reference.shared_bytes;
  m->n_runs = (uint32_t)j->result->n_runs;
}

/* The inputs the job gives as buffers: each copied (after the parents' fences, on the
 * lane's stream) into a cudaMalloc of its own exported by IPC, its desc into desc and
 * its number into m's input. Returns how many, or a negative errno with j->err. */
static int give_inputs(struct cuda_job *j, struct runner_problem_msg *m,
                       struct runner_buffer_desc *desc) {
  struct problem_job *pj = pj_of(j);
  for (int k = 0; k < pj->plan.n_inputs; k++) {
    const struct backend_buffer *given = j->bj->input[k];
    if (!given) continue;
    size_t bytes = (size_t)pj->plan.inputs[k].bytes;
    if (given->count * sizeof(float) < bytes) {
      snprintf(j->err, j->err_len,
               "problem %.40s: input %s's buffer holds %llu bytes, it needs %zu", pj->plan.name,
               pj->plan.inputs[k].name, (unsigned long long)(given->count * sizeof(float)), bytes);
      return -EINVAL;
    }
    void **d = &pj->d_given[pj->n_given]; /* release frees it */
    RC_TRY(cuda_ipc_buffer(j, bytes, d, &desc[pj->n_given++]));
    CUDA_TRY(j, cudaMemcpyPeerAsync(*d, j->be->device, given->data, given->device, bytes,
                                    j->lane->stream));
    m->in[k].given = (uint32_t)pj->n_given;
  }
  if (pj->n_given) CUDA_TRY(j, cudaStreamSynchronize(j->lane->stream)); /* the runner reads them */
  return pj->n_given;
}

/* The runner taken, the inputs given attached (first: an ATTACH forgets what was
 * loaded), the reference's and the runs' images loaded, the problem's buffers made and
 * its reference checked against itself; then the job's fence (it has no output: its
 * runs' outputs stay in the runner). */
static int setup(struct cuda_job *j) {
  struct problem_job *pj = pj_of(j);
  if (job_first_available(j) >= 0) {
    struct ukreg_kernel *ref = NULL;
    char err[256] = "";
    struct runner_loaded_msg loaded;
    if (ukreg_get(pj->plan.reference.id, &ref) != 0 || !ref->image) {
      ukreg_kernel_free(ref);
      snprintf(j->err, j->err_len, "problem %.40s: its reference is not loaded here",
               pj->plan.name);
      return -EINVAL;
    }
    struct exp_run as_ref = {};
    if (!fits(j, &as_ref, &pj->plan.reference, ref)) { /* the truth every run needs */
      snprintf(j->err, j->err_len, "problem %.40s: its reference cannot run here: %s",
               pj->plan.name, as_ref.reason);
      ukreg_kernel_free(ref);
      return -EINVAL;
    }
    if (!(pj->runner = cuda_user_runner(j->be->device))) snprintf(err, sizeof err, "out of memory");
    int rc = pj->runner ? runner_acquire(pj->runner, err, sizeof err) : -ENOMEM;
    if (rc) {
      ukreg_kernel_free(ref);
      return runner_error(j, rc, "gpulab-runner did not start", err);
    }
    pj->held = true;
    struct runner_problem_msg m;
    problem_msg(j, &pj->plan, ref, &m);
    struct runner_buffer_desc desc[RUNNER_MAX_BUFFERS];
    memset(desc, 0, sizeof desc);
    int n_given = give_inputs(j, &m, desc);
    if (n_given < 0) {
      ukreg_kernel_free(ref);
      return n_given;
    }
    if (n_given && (rc = runner_attach(pj->runner, desc, NULL, n_given, err, sizeof err))) {
      ukreg_kernel_free(ref);
      return runner_error(j, rc, "attach", err);
    }
    rc = runner_load(pj->runner, ref->key, ref->entry, ref->image, ref->image_bytes, &loaded, err,
                     sizeof err);
    for (int r = 0; rc == 0 && r < j->result->n_runs; r++) {
      const struct ukreg_kernel *k = pj->k[r];
      if (j->result->runs[r].available)
        rc = runner_load(pj->runner, k->key, k->entry, k->image, k->image_bytes, &loaded, err,
                         sizeof err);
    }
    ukreg_kernel_free(ref);
    if (rc) return runner_error(j, rc, "load", err);
    struct runner_problem_ready_msg ready;
    struct runner_fault fault;
    rc = runner_problem(pj->runner, &m, ukreg_deadline(), &ready, &fault, err, sizeof err);
    if (rc) return runner_error(j, rc, "its buffers and reference", err);
    if (!ready.agreed) {
      snprintf(j->err, j->err_len,
               "problem %.40s: its reference disagrees with itself on the job's inputs (%llu "
               "elements of output %s, the first at %llu): make it deterministic, or define the "
               "problem \"nondeterministic\"",
               pj->plan.name, (unsigned long long)ready.differ,
               ready.output < (uint32_t)pj->plan.n_outputs ? pj->plan.outputs[ready.output].name
                                                           : "?",
               (unsigned long long)ready.index);
      return -EINVAL;
    }
  }
  return job_issue_output(j, NULL);
}

/* The first failure of a fresh request of n launches, for people. */
static void fresh_failure(const struct problem_plan *p, const struct runner_done_msg *done,
                          uint32_t n, char *out, size_t len) {
  bool input = done->bad_what == 2;
  const struct problem_plan_buffer *b = input ? p->inputs : p->outputs;
  int nb = input ? p->n_inputs : p->n_outputs;
  const char *name = done->bad_input < (uint32_t)nb ? b[done->bad_input].name : "?";
  snprintf(out, len,
           input ? "timed launch %u of %u on fresh inputs: it changed its input %s (%llu "
                   "elements, the first at %llu)"
                 : "timed launch %u of %u on fresh inputs: output %s wrong or not finite in %llu "
                   "elements, the first at %llu",
           done->bad_launch, n, name, (unsigned long long)done->bad_count,
           (unsigned long long)done->bad_index);
}

/* A CSPRNG seed for one request's fresh inputs: a kernel cannot predict them. */
static uint64_t fresh_seed(void) {
  uint64_t s = ((uint64_t)arc4random() << 32) | arc4random();
  return s ? s : 1;
}

/* One request of n launches of run r (timed: each on fresh inputs, checked), its
 * answer into *done. */
static int request(struct cuda_job *j, int r, uint32_t n, bool timed, bool compare,
                   struct runner_done_msg *done) {
  struct problem_job *pj = pj_of(j);
  struct runner_run_msg *m = &pj->msg[r];
  m->n_launches = n;
  m->timed = timed;
  m->problem.compare = compare;
  m->problem.fresh_seed = timed ? fresh_seed() : 0;
  struct runner_fault fault;
  char err[256];
  int rc = runner_run(pj->runner, m, ukreg_deadline(), done, &fault, err, sizeof err);
  if (rc) return runner_error(j, rc, j->result->runs[r].label, err);
  if (timed && done->fresh_checked != n) {
    snprintf(err, sizeof err, "the runner checked %u of %u timed launches on fresh inputs",
             done->fresh_checked, n);
    return runner_error(j, -EPROTO, j->result->runs[r].label, err);
  }
  if (timed && m->cold && done->l2_flushes != n) {
    snprintf(err, sizeof err, "cold: the runner flushed the L2 before %u of %u timed launches",
             done->l2_flushes, n);
    return runner_error(j, -EPROTO, j->result->runs[r].label, err);
  }
  struct exp_run *run = &j->result->runs[r];
  if (done->bad_launch && !run->launch_failure[0])
    fresh_failure(&pj->plan, done, n, run->launch_failure, sizeof run->launch_failure);
  return 0;
}

static int prepare(struct cuda_job *j, int r) { /* the runner poisons before each launch */
  (void)j, (void)r;
  return 0;
}

static int warm(struct cuda_job *j, int r, bool graph) {
  (void)graph;
  struct runner_done_msg done;
  return request(j, r, 1, false, false, &done);
}

static int sample(struct cuda_job *j, int r, bool graph, double *ms) {
  (void)graph;
  struct runner_done_msg done;
  RC_TRY(request(j, r, (uint32_t)j->result->runs[r].timing.reps, true, false, &done));
  *ms = done.ms_per_launch;
  return 0;
}

/* How an output's tolerance reads, for the check's rule. */
static void tolerance_text(const struct problem_plan *p, char *out, size_t len) {
  size_t used = (size_t)snprintf(out, len, "the problem's:");
  for (int i = 0; i < p->n_outputs && used < len; i++) {
    const struct problem_plan_buffer *b = &p->outputs[i];
    used += (size_t)(b->exact ? snprintf(out + used, len - used, " %s exact", b->name)
                              : snprintf(out + used, len - used, " %s %g + %g|want|", b->name,
                                         b->abs, b->rel));
  }
}

/* Each run once more on the job's inputs, its outputs compared by the runner with the
 * reference's there, every element of every output: the run's check. */
static int check(struct cuda_job *j) {
  struct problem_job *pj = pj_of(j);
  for (int r = 0; r < j->result->n_runs; r++) {
    struct exp_run *run = &j->result->runs[r];
    if (!run->available) continue;
    struct runner_done_msg done;
    RC_TRY(request(j, r, 1, false, true, &done));
    const struct runner_problem_check *pc = &done.problem_check;
    struct exp_check *c = &run->check;
    c->done = true;
    c->compared = (int64_t)pc->compared;
    c->mismatches = (int64_t)pc->mismatches;
    c->passed = pc->mismatches == 0 && pc->compared > 0;
    c->max_abs_err = pc->max_abs_err;
    c->max_rel_err = pc->max_rel_err;
    tolerance_text(&pj->plan, c->tolerance_rule, sizeof c->tolerance_rule);
    if (pc->mismatches && !run->launch_failure[0]) /* where, on the job's inputs */
      snprintf(run->launch_failure, sizeof run->launch_failure,
               "on the job's inputs: output %s wrong in %llu elements, the first at %llu (got "
               "%g, want %g)",
               pc->first_output < (uint32_t)pj->plan.n_outputs
                   ? pj->plan.outputs[pc->first_output].name
                   : "?",
               (unsigned long long)pc->mismatches, (unsigned long long)pc->first_index, pc->got,
               pc->want);
    snprintf(c->reference, sizeof c->reference, "%.40s v%d's reference", pj->plan.name,
             pj->plan.version);
  }
  return 0;
}

static int profile(struct cuda_job *j, int r, struct exp_profile *out) {
  struct problem_job *pj = pj_of(j);
  struct runner_run_msg m = pj->msg[r]; /* the run's launch, as it is timed */
  m.n_launches = 1;
  m.timed = m.cold = 0;
  m.profile = 1;
  m.problem.compare = 0;
  m.problem.fresh_seed = 0;
  struct runner_done_msg done;
  struct runner_fault fault;
  char err[256];
  int rc = runner_run(pj->runner, &m, ukreg_deadline(), &done, &fault, err, sizeof err);
  if (rc) return runner_error(j, rc, "profile", err);
  *out = done.profile;
  return 0;
}

static void release(struct cuda_job *j) {
  struct problem_job *pj = pj_of(j);
  if (!pj) return;
  if (pj->held) {
    runner_detach(pj->runner);  /* frees the problem's buffers, closes the given ones */
    runner_release(pj->runner); /* a runner that died is started again here */
  }
  if (pj->n_given) (void)cudaStreamSynchronize(j->lane->stream);
  for (int k = 0; k < pj->n_given; k++) (void)cudaFree(pj->d_given[k]);
  (void)cudaGetLastError();
  for (int r = 0; r < EXP_MAX_VARIANTS; r++) ukreg_kernel_free(pj->k[r]);
  free(pj);
  j->priv = NULL;
}

const struct cuda_job_ops cuda_problem_job_ops = {
    .plan_runs = plan_runs,
    .setup = setup,
    .prepare = prepare,
    .warm = warm,
    .sample = sample,
    .host_output = NULL,
    .release = release,
    .host_timed = false,
    .check = check,
    .profile = profile,
};
