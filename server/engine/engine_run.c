/* The engine's workers: one thread per lane of each device takes jobs off that
 * device's fair queue, runs them on the backend, and ends them. Device work runs
 * under the device's gate (shared, or exclusive for an exclusive job's timed
 * windows); the hooks below are how the backend reports its phases. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/engine/engine_priv.h"
#include "server/log.h"

/* What a worker knows about the job it runs, for the hooks. */
struct run_ctx {
  struct engine *e;
  struct job *job;
  struct backend_job *bj;
  struct gate *gate;
  int held; /* 0, or holding the gate shared (1) or exclusively (2) */
  struct gate_window window;
  bool window_open;
};

static bool hook_canceled(void *arg) {
  struct run_ctx *c = arg;
  return atomic_load(&c->job->cancel_requested);
}

static void hook_progress(void *arg, int run, int batch, double sample_ms) {
  struct run_ctx *c = arg;
  struct event ev = {.job_id = c->job->id,
                     .kind = EVENT_PROGRESS,
                     .run = run,
                     .batch = batch,
                     .sample_ms = sample_ms};
  snprintf(ev.job_type, sizeof ev.job_type, "%s", exp_type_name(c->job->spec.type));
  snprintf(ev.state, sizeof ev.state, "running");
  memcpy(ev.client, c->job->req.client, sizeof ev.client);
  events_publish(c->e->events, &ev);
}

/* Moves to holding the gate in mode (0 none, 1 shared, 2 exclusive). Returns false
 * when the job was canceled while it waited: it then holds nothing. */
static bool hold(struct run_ctx *c, int mode) {
  if (c->held == mode) return true;
  if (c->held) gate_leave(c->gate, c->held == 2);
  c->held = 0;
  if (mode && gate_enter(c->gate, mode == 2, hook_canceled, c) != 0) return false;
  c->held = mode;
  return true;
}

static void hold_uncancelable(struct run_ctx *c, int mode) {
  gate_enter(c->gate, mode == 2, NULL, NULL);
  c->held = mode;
}

/* Whether job's timed windows have the device to themselves: asked for, or a profiled
 * job's (another job's kernels would be counted among its own). */
static bool exclusive(const struct job *job) { return job->req.exclusive || job->spec.profile; }

/* Device work runs under the gate: shared, or exclusive for an exclusive job's
 * timed windows. */
static bool hook_phase(void *arg, enum backend_phase phase) {
  struct run_ctx *c = arg;
  switch (phase) {
  case BACKEND_PHASE_SETUP: return !hold(c, 1); /* true: canceled while it waited */
  case BACKEND_PHASE_TIMED:
    if (!hold(c, exclusive(c->job) ? 2 : 1)) return true; /* canceled while waiting */
    gate_window_open(c->gate, &c->window);
    c->window_open = true;
    return false;
  case BACKEND_PHASE_UNTIMED: {
    bool contended = c->window_open && gate_window_close(c->gate, &c->window);
    c->window_open = false;
    if (!hold(c, 1)) hold_uncancelable(c, 1); /* copies for the check run under it too */
    return contended;
  }
  case BACKEND_PHASE_IDLE: hold(c, 0); return false;
  }
  return false;
}

/* The job's output and fence exist: children may be issued behind it. */
static void hook_issued(void *arg) {
  struct run_ctx *c = arg;
  struct engine *e = c->e;
  struct job *job = c->job;
  engine_lock(e);
  job->issued = true;
  job->issued_at = engine_now_unix();
  job->done = c->bj->done;
  c->bj->done = NULL;
  if (c->bj->output) {
    job->output = ebuf_for_output_locked(e, job, c->bj->output);
    if (job->output) c->bj->output = NULL; /* else freed by the worker */
  }
  parent_ready_locked(e, job, false);
  engine_unlock(e);
}

/* Marks job (taken off its queue) running on w's lane and fills bj for it. */
static void start_job_locked(struct engine *e, struct worker *w, struct job *job,
                             struct backend_job *bj, struct backend_fence **after) {
  e->n_queued--;
  sched_pending_add(job->sched_client, -1);
  job->state = JOB_RUNNING;
  job->started_at = engine_now_unix();
  e->running[w->device]++;
  job->lane = w->lane;
  job->backend = e->devices[w->device];
  job_ref(job);
  *bj = (struct backend_job){.spec = &job->spec, .after = after, .exclusive = exclusive(job)};
  for (int s = 0; s < EXP_MAX_JOB_BUFFERS; s++)
    bj->input[s] = job->inputs[s] ? job->inputs[s]->buf : NULL;
  for (int i = 0; i < job->n_parents; i++)
    if (job->parents[i]->done) after[bj->n_after++] = job->parents[i]->done;
  publish_state_locked(e, job);
}

/* Takes the next job off the fair queue and marks it running; NULL when stopping.
 * A lane lent to engine_run_inline takes nothing until it is back. */
static struct job *next_job(struct engine *e, struct worker *w, struct backend_job *bj,
                            struct backend_fence **after) {
  engine_lock(e);
  struct sched_item *item;
  /* A lost device takes no more jobs: they wait for the restart (the store keeps them). */
  while (!e->stopping && (w->lent || e->paused || !backend_healthy(e->devices[w->device]) ||
                          !(item = sched_pop(e->sched, w->device)))) {
    w->idle = true;
    pthread_cond_wait(&e->work_ready[w->device], &e->lock);
    w->idle = false;
  }
  if (e->stopping) {
    engine_unlock(e);
    return NULL;
  }
  struct job *job = (struct job *)((char *)item - offsetof(struct job, item));
  start_job_locked(e, w, job, bj, after);
  engine_unlock(e);
  return job;
}

static void finish_run(struct engine *e, struct job *job, struct backend_job *bj, int rc,
                       struct exp_result *result, const char *err) {
  struct engine_watch *fired = NULL;
  /* A done job's result lives as long as the job (--max-jobs-kept of them): its runs only. */
  struct exp_result *kept = rc == 0 ? exp_result_kept(result) : NULL;
  if (kept) {
    free(result);
    result = kept;
  }
  engine_lock(e);
  e->running[job->device]--;
  if (bj->done) job->done = bj->done; /* the backend failed before issuing */
  if (bj->output) backend_buffer_free(job->backend, bj->output);
  if (rc == 0 && !job->parent_failure[0]) {
    job->result = result;
    result = NULL;
    end_job_locked(e, job, JOB_DONE, NULL, NULL);
  } else if ((rc == 0 || rc == -ECANCELED) && job->parent_failure[0]) {
    /* Its parent failed or was canceled while it ran: it fails too, also when it ended
     * before its next batch saw the cancel. */
    end_job_locked(e, job, JOB_FAILED, "parent_failed", job->parent_failure);
  } else if (rc == -ECANCELED && job->withdrawn) {
    end_job_locked(e, job, JOB_CANCELED, "not_stored", "the store could not record the job");
  } else if (rc == -ECANCELED && job->interrupted) {
    char why[160];
    snprintf(why, sizeof why,
             "gpulabd was stopped and the job did not finish within the grace "
             "period (%g s): it was interrupted, and is not run again",
             e->grace_s);
    end_job_locked(e, job, JOB_FAILED, "interrupted", why);
  } else if (rc == -ECANCELED) {
    end_job_locked(e, job, JOB_CANCELED, "canceled", err);
  } else {
    const char *code = rc == -ENOMEM      ? "out_of_memory"
                       : rc == -EIO       ? "gpu_context_lost"
                       : rc == -EFAULT    ? "kernel_fault"
                       : rc == -ETIMEDOUT ? "kernel_timeout"
                       : rc == -EROFS     ? "input_modified"
                                          : "backend_error";
    end_job_locked(e, job, JOB_FAILED, code, err);
  }
  take_due_watches_locked(e, &fired); /* its watches, run here: no thread woken for them */
  engine_unlock(e);
  free(result);
  run_watches(fired);
}

/* Runs job (marked running on w's lane) to its end, on the calling thread. */
static void run_job(struct engine *e, struct worker *w, struct job *job, struct backend_job *bj) {
  char err[256] = "";
  int rc = -ENOMEM;
  struct exp_result *result = calloc(1, sizeof *result);
  struct run_ctx ctx = {.e = e, .job = job, .bj = bj, .gate = e->gates[w->device]};
  if (!result) {
    snprintf(err, sizeof err, "out of host memory for the result");
  } else {
    struct backend_hooks hooks = {hook_canceled, hook_progress, hook_phase, hook_issued, &ctx};
    rc = backend_run(e->devices[w->device], w->lane, bj, &hooks, result, err, sizeof err);
  }
  hold(&ctx, 0);
  if (rc && rc != -ECANCELED) log_warn("job %llu failed: %s", (unsigned long long)job->id, err);
  finish_run(e, job, bj, rc, result, err);
}

void *engine_worker_main(void *arg) {
  struct worker *w = arg;
  struct engine *e = w->engine;
  struct backend_fence *after[ENGINE_MAX_PARENTS];
  struct backend_job bj;
  struct job *job;
  while ((job = next_job(e, w, &bj, after))) {
    run_job(e, w, job, &bj);
    job_unref(job);
  }
  return NULL;
}

bool engine_run_inline(struct engine *e, struct job *job) {
  struct backend_fence *after[ENGINE_MAX_PARENTS];
  struct backend_job bj;
  struct worker *w = NULL;
  engine_lock(e);
  /* Only a job nobody waits behind (alone in its device's queue) on an idle,
   * healthy device: running it here takes nothing from anyone, and it starts
   * exactly as a worker would have started it. Under load (the device busy) jobs
   * go through the workers, so HTTP threads never wait on the GPU while other
   * connections wait for them (64 connections on the H200: 7.9k tiny jobs/s run here
   * against 10k through the workers). */
  if (!e->stopping && !e->paused && job->state == JOB_QUEUED &&
      sched_queued(e->sched, job->device) == 1 && e->running[job->device] == 0 &&
      backend_healthy(e->devices[job->device]))
    for (int i = 0; i < e->n_workers && !w; i++)
      if (e->workers[i].device == job->device && e->workers[i].idle && !e->workers[i].lent)
        w = &e->workers[i];
  if (!w) { /* left to the workers: one wakes for it (engine_submit_inline woke none) */
    wake_for_locked(e, job);
    engine_unlock(e);
    return false;
  }
  sched_remove(e->sched, &job->item);
  w->lent = true;
  start_job_locked(e, w, job, &bj, after);
  engine_unlock(e);

  run_job(e, w, job, &bj);
  job_unref(job); /* start_job_locked's */

  engine_lock(e);
  w->lent = false;
  e->ran_inline++;
  /* A wake-up its sleeping worker swallowed while lent is passed on now. */
  if (sched_queued(e->sched, w->device) > 0) pthread_cond_broadcast(&e->work_ready[w->device]);
  engine_unlock(e);
  return true;
}
