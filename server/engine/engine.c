/* The job engine: job table, dependencies, states, views, and the engine's life. The
 * rows for the store and the event bus are in engine_rows.c, watches and their timer
 * in engine_watch.c, the workers that run jobs (one per lane, with the device gates)
 * in engine_run.c. One mutex guards it all; backends run outside the lock. */
#include "server/engine/engine.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/core/clock.h"
#include "server/engine/engine_priv.h"
#include "server/log.h"

/* ---- the job table ---- */

struct job *find_locked(struct engine *e, uint64_t id) {
  int lo = 0, hi = e->n_jobs - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    uint64_t mid_id = e->jobs[mid]->id;
    if (mid_id == id) return e->jobs[mid];
    if (mid_id < id)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return NULL;
}

/* New jobs' ids only grow, so they go at the end; a restored job (after a restart,
 * or claimed from a fleet's queue: any id) goes where its id sorts. */
void table_insert_locked(struct engine *e, struct job *job) {
  int at = e->n_jobs;
  while (at > 0 && e->jobs[at - 1]->id > job->id) at--;
  memmove(&e->jobs[at + 1], &e->jobs[at], (size_t)(e->n_jobs - at) * sizeof *e->jobs);
  e->jobs[at] = job;
  e->n_jobs++;
}

void table_remove_locked(struct engine *e, struct job *job) {
  for (int i = e->n_jobs - 1; i >= 0; i--)
    if (e->jobs[i] == job) {
      memmove(&e->jobs[i], &e->jobs[i + 1], (size_t)(e->n_jobs - i - 1) * sizeof *e->jobs);
      e->n_jobs--;
      job_unref(job); /* the table's */
      return;
    }
}

/* Forgets the oldest finished jobs while more than max_jobs_kept are kept. */
static void prune_locked(struct engine *e) {
  int excess = e->n_jobs - e->cfg.max_jobs_kept + 1, kept = 0; /* room for one more */
  for (int i = 0; i < e->n_jobs; i++) {
    struct job *job = e->jobs[i];
    if (excess > 0 && job_state_final(job->state)) {
      excess--;
      job_unref(job);
    } else {
      e->jobs[kept++] = job;
    }
  }
  e->n_jobs = kept;
}

/* The table may hold 1/16 more than max_jobs_kept before it is pruned back, so
 * that pruning (a pass over the table) runs once per that many jobs, not per job. */
int table_reserve_locked(struct engine *e, int n) {
  if (e->n_jobs + n > e->cfg.max_jobs_kept + e->cfg.max_jobs_kept / 16) prune_locked(e);
  if (e->n_jobs + n > e->cap_jobs) {
    int cap = e->cap_jobs ? 2 * e->cap_jobs : 1024;
    while (cap < e->n_jobs + n) cap *= 2;
    struct job **jobs = realloc(e->jobs, (size_t)cap * sizeof *jobs);
    if (!jobs) return -ENOMEM;
    e->jobs = jobs;
    e->cap_jobs = cap;
  }
  return 0;
}

/* ---- states and dependencies ---- */

/* Where a job runs: where it was pinned, else where its data lives, else on the
 * least loaded device. */
static int place_locked(struct engine *e, const struct job *job) {
  if (job->req.device >= 0) return job->req.device;
  for (int s = 0; s < EXP_MAX_JOB_BUFFERS; s++)
    if (job->inputs[s]) return job->inputs[s]->device;
  for (int s = 0; s < EXP_MAX_INPUTS; s++)
    if (job->input_from[s] && job->input_from[s]->device >= 0) return job->input_from[s]->device;
  int best = 0, best_load = -1;
  for (int d = 0; d < e->n_devices; d++) {
    int load = sched_queued(e->sched, d) + e->running[d];
    if (best_load < 0 || load < best_load) {
      best = d;
      best_load = load;
    }
  }
  return best;
}

void make_queued_locked(struct engine *e, struct job *job, bool wake) {
  /* Every input given as data must be here by now; a job never computes on numbers
   * made up in their place. */
  for (int s = 0; s < exp_input_count(job->spec.type); s++)
    if (job->spec.inputs[s].kind != EXP_INPUT_SEED && !job->inputs[s]) {
      char why[160];
      snprintf(why, sizeof why, "input %s: job %llu produced no output",
               exp_input_name(job->spec.type, s), (unsigned long long)job->spec.inputs[s].value);
      sched_pending_add(job->sched_client, -1);
      end_job_locked(e, job, JOB_FAILED, "input_missing", why);
      return;
    }
  job->state = JOB_QUEUED;
  job->device = place_locked(e, job);
  sched_push(e->sched, job->device, job->sched_client, &job->item);
  e->n_queued++;
  publish_state_locked(e, job);
  if (wake) wake_for_locked(e, job);
}

void wake_for_locked(struct engine *e, struct job *job) {
  if (job->state == JOB_QUEUED)
    pthread_cond_signal(&e->work_ready[job->device]); /* one worker takes one job */
}

void engine_wake(struct engine *e, struct job *job) {
  engine_lock(e);
  wake_for_locked(e, job);
  engine_unlock(e);
}

/* Takes a job out of the queue or the waiting set; it no longer counts as pending. */
void leave_pending_locked(struct engine *e, struct job *job) {
  if (job->state == JOB_QUEUED) {
    sched_remove(e->sched, &job->item);
    e->n_queued--;
  }
  if (job->state == JOB_QUEUED || job->state == JOB_WAITING)
    sched_pending_add(job->sched_client, -1);
}

static void release_buffers_locked(struct engine *e, struct job *job) {
  for (int s = 0; s < EXP_MAX_JOB_BUFFERS; s++)
    if (job->inputs[s]) {
      job->inputs[s]->in_use--;
      ebuf_unref_locked(e, job->inputs[s]);
      job->inputs[s] = NULL;
    }
  if (job->output) {
    ebuf_unref_locked(e, job->output);
    job->output = NULL;
  }
}

/* Children of a parent that failed or was canceled fail too, and theirs. */
static void fail_children_locked(struct engine *e, struct job *parent) {
  char message[256];
  /* Its code says more than its state unless it is only "canceled" ("was canceled:
   * canceled" said it twice). */
  bool code = parent->error_code[0] && strcmp(parent->error_code, "canceled") != 0;
  snprintf(message, sizeof message, "parent job %llu %s%s%s", (unsigned long long)parent->id,
           parent->state == JOB_CANCELED ? "was canceled" : "failed", code ? ": " : "",
           code ? parent->error_code : "");
  for (int i = 0; i < parent->n_children; i++) {
    struct job *child = parent->children[i];
    if (job_state_final(child->state)) continue;
    if (child->state == JOB_RUNNING) { /* stops at its next batch, then fails */
      snprintf(child->parent_failure, sizeof child->parent_failure, "%s", message);
      atomic_store(&child->cancel_requested, true);
    } else {
      leave_pending_locked(e, child);
      end_job_locked(e, child, JOB_FAILED, "parent_failed", message);
    }
  }
}

/* A parent got issued (or finished, for host_sync children): children whose
 * parents are all ready join the queue. Children reading its output get it now. */
void parent_ready_locked(struct engine *e, struct job *parent, bool finished) {
  for (int i = 0; i < parent->n_children; i++) {
    struct job *child = parent->children[i];
    if (child->state != JOB_WAITING || child->req.host_sync != finished) continue;
    for (int s = 0; s < EXP_MAX_INPUTS; s++)
      if (child->input_from[s] == parent && !child->inputs[s] && parent->output) {
        ebuf_ref_locked(parent->output);
        parent->output->in_use++;
        child->inputs[s] = parent->output;
      }
    if (--child->deps_pending == 0) make_queued_locked(e, child, true);
  }
}

/* Ends a job: final state, buffers released, children told, listeners woken. */
void end_job_locked(struct engine *e, struct job *job, enum job_state state, const char *code,
                    const char *message) {
  job->state = state;
  job->finished_at = engine_now_unix();
  if (code) snprintf(job->error_code, sizeof job->error_code, "%s", code);
  if (message) snprintf(job->error_message, sizeof job->error_message, "%s", message);
  publish_state_locked(e, job);
  if (e->cfg.on_job_end) {
    struct job_view v;
    job_view_locked(e, job, &v);
    e->cfg.on_job_end(e->cfg.on_job_end_arg, &v);
  }
  if (state == JOB_DONE) {
    if (!job->issued) parent_ready_locked(e, job, false);
    parent_ready_locked(e, job, true);
  } else {
    fail_children_locked(e, job);
  }
  /* After the children took what they read of its output. */
  release_buffers_locked(e, job);
  /* Waiting children can only have failed above or been queued: drop them. */
  for (int i = 0; i < job->n_children; i++) job_unref(job->children[i]);
  job->n_children = 0;
  job_watches_due_locked(e, job); /* run by its caller (take_due_watches_locked), or the timer */
  /* Its view is complete (no row of it is to come: else queue_pending_rows says so). */
  if (!e->cfg.on_job_change || job->withdrawn) atomic_store(&job->view_final, true);
}

struct job *engine_job_get(struct engine *e, uint64_t id) {
  engine_lock(e);
  struct job *job = find_locked(e, id);
  if (job) job_ref(job);
  engine_unlock(e);
  return job;
}

/* A state whose row its thread is still queuing (engine_unlock): the moment between
 * the state change and its row's ticket (a final one's, and its document). */
static bool state_unrecorded(const struct engine *e, const struct job *job) {
  return e->cfg.on_job_change && atomic_load(&job->rows_queued) != job->rows_taken;
}

/* A state is shown only with its row queued (record_ticket; a final one's doc), so
 * that an answer that waits for the ticket never says "done" (or a crash's
 * "interrupted", "running") before the store has it. */
void job_get_view(struct engine *e, struct job *job, struct job_view *v) {
  if (atomic_load(&job->view_final)) { /* nothing in it changes: no lock needed */
    job_view_locked(e, job, v);
    return;
  }
  engine_lock(e);
  while (state_unrecorded(e, job)) /* rows taken meanwhile too */
    wait_for_rows_locked(e, job, job->rows_taken);
  job_view_locked(e, job, v);
  engine_unlock(e);
}

void engine_job_snapshot(struct engine *e, struct job *job, struct job_view *v, uint64_t *seq) {
  engine_lock(e);
  job_view_locked(e, job, v);
  *seq = events_last_seq(e->events); /* state events are published under our lock */
  engine_unlock(e);
}

struct events *engine_events(struct engine *e) {
  return e->events;
}

int engine_job_cancel(struct engine *e, struct job *job) {
  struct engine_watch *fired = NULL;
  int rc = 0;
  engine_lock(e);
  if (job_state_final(job->state)) {
    rc = -EALREADY;
  } else if (job->state == JOB_RUNNING) {
    atomic_store(&job->cancel_requested, true); /* the worker ends it at a batch boundary */
  } else {
    leave_pending_locked(e, job);
    end_job_locked(e, job, JOB_CANCELED, "canceled", "canceled before it ran");
    take_due_watches_locked(e, &fired);
  }
  engine_unlock(e);
  run_watches(fired);
  return rc;
}

void engine_job_withdraw(struct engine *e, struct job *job) {
  struct engine_watch *fired = NULL;
  engine_lock(e);
  job->withdrawn = true;
  if (job->state == JOB_RUNNING) {
    atomic_store(&job->cancel_requested, true); /* ends at its next batch (engine_run.c) */
  } else if (!job_state_final(job->state)) {
    leave_pending_locked(e, job);
    end_job_locked(e, job, JOB_CANCELED, "not_stored", "the store could not record the job");
    take_due_watches_locked(e, &fired);
  }
  struct ebuf *kept = job->output_buffer ? ebuf_find_locked(e, job->output_buffer) : NULL;
  if (kept && kept->in_use == 0) ebuf_unlist_locked(e, kept);
  table_remove_locked(e, job);
  engine_unlock(e);
  run_watches(fired);
}

uint64_t engine_next_id(struct engine *e, enum engine_ids kind) {
  engine_lock(e);
  uint64_t id = kind == ENGINE_IDS_JOBS ? e->next_id : e->next_buffer_id;
  engine_unlock(e);
  return id;
}

uint64_t engine_first_id(const struct engine *e, enum engine_ids kind) {
  return e->first_ids[kind];
}

int engine_jobs_list(struct engine *e, const struct engine_list_filter *f, struct job **out,
                     int max) {
  int n = 0;
  engine_lock(e);
  for (int i = e->n_jobs - 1; i >= 0 && n < max; i--) {
    struct job *job = e->jobs[i];
    if (f->before_id && job->id >= f->before_id) continue;
    if (f->state >= 0 && (int)job->state != f->state) continue;
    if (f->type >= 0 && (int)job->spec.type != f->type) continue;
    if (f->client && strcmp(f->client, job->req.client) != 0) continue;
    job_ref(job);
    out[n++] = job;
  }
  engine_unlock(e);
  return n;
}

void engine_counts(struct engine *e, struct engine_counts *out) {
  memset(out, 0, sizeof *out);
  engine_lock(e);
  for (int i = 0; i < e->n_jobs; i++) out->by_state[e->jobs[i]->state]++;
  out->submitted = e->next_id - 1;
  out->ran_inline = e->ran_inline;
  out->lock_waits = e->lock_waits.n;
  out->lock_wait_s = e->lock_waits.seconds;
  out->row_waits = atomic_load(&e->row_waits);
  out->buffers = e->n_buffers;
  for (int i = 0; i < e->n_buffers; i++)
    out->buffer_bytes += backend_buffer_count(e->buffers[i]->buf) * sizeof(float);
  engine_unlock(e);
}

int engine_client_loads(struct engine *e, struct engine_client_load *out, int max) {
  int n = 0;
  engine_lock(e);
  for (int i = 0; i < e->n_jobs; i++) {
    const struct job *job = e->jobs[i];
    if (job_state_final(job->state)) continue;
    int k = 0;
    while (k < n && strcmp(out[k].client, job->req.client) != 0) k++;
    if (k == n && n < max) {
      memset(&out[n], 0, sizeof out[n]);
      snprintf(out[n].client, sizeof out[n].client, "%s", n == max - 1 ? "other" : job->req.client);
      n++;
    }
    if (k == n) k = n - 1; /* full: "other" */
    out[k].queued += job->state == JOB_QUEUED;
    out[k].waiting += job->state == JOB_WAITING;
    out[k].running += job->state == JOB_RUNNING;
  }
  engine_unlock(e);
  return n;
}

bool engine_healthy(const struct engine *e) {
  for (int i = 0; i < e->n_devices; i++)
    if (!backend_healthy(e->devices[i])) return false;
  return true;
}

int engine_device_count(const struct engine *e) { return e->n_devices; }
struct backend *engine_device(struct engine *e, int index) {
  return e->devices[index];
}

/* ---- life ---- */

int engine_new(struct backend *const *devices, int n_devices, const struct engine_config *cfg,
               struct engine **out) {
  if (n_devices < 1 || n_devices > SCHED_MAX_QUEUES) return -EINVAL;
  struct engine *e = calloc(1, sizeof *e);
  if (!e) return -ENOMEM;
  pthread_mutex_init(&e->lock, NULL);
  for (int d = 0; d < SCHED_MAX_QUEUES; d++) pthread_cond_init(&e->work_ready[d], NULL);
  pthread_cond_init(&e->timer_wake, NULL);
  pthread_cond_init(&e->recorded, NULL);
  e->devices = devices;
  e->n_devices = n_devices;
  e->cfg = *cfg;
  e->next_id = cfg->first_id ? cfg->first_id : 1;
  e->next_buffer_id = cfg->first_buffer_id ? cfg->first_buffer_id : 1;
  /* Ids below the first are a previous run's: reserved then, or never handed out. */
  e->first_ids[ENGINE_IDS_JOBS] = e->next_id;
  e->first_ids[ENGINE_IDS_BUFFERS] = e->next_buffer_id;
  e->ids_reserved[ENGINE_IDS_JOBS] = e->next_id - 1;
  e->ids_reserved[ENGINE_IDS_BUFFERS] = e->next_buffer_id - 1;
  for (int d = 0; d < n_devices; d++) e->n_workers += backend_lanes(devices[d]);
  e->workers = calloc((size_t)e->n_workers, sizeof *e->workers);
  e->gates = calloc((size_t)n_devices, sizeof *e->gates);
  if (!e->workers || !e->gates || sched_new(n_devices, &e->sched) || events_new(4096, &e->events))
    goto fail;
  for (int d = 0; d < n_devices; d++)
    if (gate_new(&e->gates[d])) goto fail;
  if (pthread_create(&e->timer, NULL, engine_timer_main, e)) goto fail;
  pthread_setname_np(e->timer, "gpulab-timer");
  int started = 0;
  for (int d = 0; d < n_devices; d++)
    for (int l = 0; l < backend_lanes(devices[d]); l++) {
      struct worker *w = &e->workers[started];
      *w = (struct worker){.engine = e, .device = d, .lane = l};
      if (pthread_create(&w->thread, NULL, engine_worker_main, w)) {
        e->n_workers = started; /* engine_stop joins only those */
        engine_free(e);
        return -EAGAIN;
      }
      char name[32]; /* as top -H and /proc/PID/task/TID/comm show it */
      snprintf(name, sizeof name, "gpulab-lane%d.%d", d, l);
      name[15] = '\0'; /* the kernel keeps 15 characters; pthread_setname_np refuses more */
      pthread_setname_np(w->thread, name);
      started++;
    }
  *out = e;
  return 0;
fail:
  for (int d = 0; e->gates && d < n_devices; d++) gate_free(e->gates[d]);
  events_free(e->events);
  sched_free(e->sched);
  free(e->gates);
  free(e->workers);
  free(e);
  return -ENOMEM;
}

/* Stops the workers: queued and waiting jobs are canceled unless keep_queued;
 * running ones get grace_s seconds to finish, then are asked to stop. */
static void stop_workers(struct engine *e, bool keep_queued, double grace_s) {
  engine_lock(e);
  if (e->stopping) {
    engine_unlock(e);
    return;
  }
  e->stopping = true; /* no worker takes another job */
  for (int i = 0; i < e->n_jobs && !keep_queued; i++) {
    struct job *job = e->jobs[i];
    if (job->state == JOB_QUEUED || job->state == JOB_WAITING) {
      leave_pending_locked(e, job);
      end_job_locked(e, job, JOB_CANCELED, "canceled", "gpulabd is shutting down");
    }
  }
  for (int d = 0; d < e->n_devices; d++) pthread_cond_broadcast(&e->work_ready[d]);
  double deadline = engine_now_mono() + grace_s;
  for (;;) {
    int running = 0;
    for (int d = 0; d < e->n_devices; d++) running += e->running[d];
    if (running == 0 || engine_now_mono() >= deadline) break;
    engine_unlock(e);
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
    engine_lock(e);
  }
  for (int i = 0; i < e->n_jobs; i++) {
    struct job *job = e->jobs[i];
    if (job->state != JOB_RUNNING) continue;
    if (!atomic_load(&job->cancel_requested)) job->interrupted = true; /* not its owner's cancel */
    atomic_store(&job->cancel_requested, true);
  }
  e->grace_s = grace_s;
  engine_unlock(e);
}

void engine_pause(struct engine *e, bool paused) {
  engine_lock(e);
  bool resumed = e->paused && !paused;
  e->paused = paused;
  for (int d = 0; resumed && d < e->n_devices; d++) pthread_cond_broadcast(&e->work_ready[d]);
  pthread_mutex_unlock(&e->lock);
}

void engine_shutdown(struct engine *e, double grace_s) {
  stop_workers(e, true, grace_s);
  engine_stop(e);
}

uint64_t engine_oldest_id(struct engine *e) {
  engine_lock(e);
  uint64_t id = e->n_jobs ? e->jobs[0]->id : 0;
  engine_unlock(e);
  return id;
}

void engine_stop(struct engine *e) {
  stop_workers(e, false, 0);
  engine_lock(e);
  if (e->stopped) {
    engine_unlock(e);
    return;
  }
  engine_unlock(e);
  for (int i = 0; i < e->n_workers; i++) pthread_join(e->workers[i].thread, NULL);
  struct engine_watch *fired = NULL;
  engine_lock(e);
  e->stopped = true; /* every watch is due now */
  collect_due_watches(e, engine_now_mono(), &fired);
  pthread_cond_broadcast(&e->timer_wake);
  engine_unlock(e);
  pthread_join(e->timer, NULL);
  run_watches(fired);
  events_close(e->events);
}

void engine_free(struct engine *e) {
  if (!e) return;
  engine_stop(e);
  engine_lock(e);
  ebuf_free_all_locked(e);
  for (int i = 0; i < e->n_jobs; i++) job_unref(e->jobs[i]);
  engine_unlock(e);
  events_free(e->events);
  for (int d = 0; d < e->n_devices; d++) gate_free(e->gates[d]);
  sched_free(e->sched);
  free(e->gates);
  free(e->jobs);
  free(e->buffers);
  free(e->workers);
  for (int d = 0; d < SCHED_MAX_QUEUES; d++) pthread_cond_destroy(&e->work_ready[d]);
  pthread_cond_destroy(&e->timer_wake);
  pthread_cond_destroy(&e->recorded);
  pthread_mutex_destroy(&e->lock);
  free(e);
}
