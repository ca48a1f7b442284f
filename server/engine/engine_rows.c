/* The engine's rows for on_job_change (engine_config): a state change taken under the
 * lock (publish_state_locked) is queued by the same thread once it has released it
 * (engine_unlock), each job's rows in the order they were taken, with the event bus
 * told at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/engine/engine_priv.h"
#include "server/log.h"

/* A state change for on_job_change, taken under the lock (publish_state_locked) and
 * queued by the same thread once it has released it (engine_unlock): the store's row
 * (a view, a copy, the store's queue; a finished job's whole document) is made while
 * other threads have the lock. */
struct pending_row {
  struct job *job;           /* referenced until queued */
  unsigned seq;              /* the job's rows before it (job.rows_taken): its turn */
  bool final;                /* its view is taken after the release: a final state never changes */
  uint32_t parents_unqueued; /* a first row: its parents (bits) whose first rows were
                                not queued yet when it was taken */
  struct job_view view;
};

/* This thread's rows of the section it holds the lock for. */
#define PENDING_INLINE 4
static _Thread_local struct {
  int n, cap;
  struct pending_row *rows; /* inline, or malloc'd past PENDING_INLINE */
  struct pending_row inline_rows[PENDING_INLINE];
} pending;

static struct pending_row *pending_row_add(void) {
  if (!pending.rows) pending.rows = pending.inline_rows, pending.cap = PENDING_INLINE;
  if (pending.n == pending.cap) { /* a section that changes many jobs (a shutdown, a sweep) */
    struct pending_row *more = malloc(2 * (size_t)pending.cap * sizeof *more);
    if (!more) return NULL;
    memcpy(more, pending.rows, (size_t)pending.n * sizeof *more);
    if (pending.rows != pending.inline_rows) free(pending.rows);
    pending.rows = more;
    pending.cap *= 2;
  }
  return &pending.rows[pending.n++];
}

void publish_state_locked(struct engine *e, struct job *job) {
  if (e->cfg.on_job_change && !job->withdrawn) { /* withdrawn: nothing more of it is recorded */
    struct pending_row *r = pending_row_add();
    if (r) {
      job_ref(job);
      r->job = job;
      r->seq = job->rows_taken++;
      r->final = job_state_final(job->state);
      if (!r->final) job_view_locked(e, job, &r->view);
      /* The store never has a job before one it names (its parents' rows may still be
       * with the threads that accepted them). */
      r->parents_unqueued = 0;
      for (int i = 0; i < job->n_parents && r->seq == 0; i++)
        if (job->parents[i]->rows_taken > 0 && atomic_load(&job->parents[i]->rows_queued) == 0)
          r->parents_unqueued |= 1u << i;
    } else {
      log_warn("engine: out of memory: job %llu's state %s is not recorded",
               (unsigned long long)job->id, job_state_name(job->state));
    }
  }
  struct event ev = {.job_id = job->id, .kind = EVENT_STATE};
  snprintf(ev.job_type, sizeof ev.job_type, "%s", exp_type_name(job->spec.type));
  snprintf(ev.state, sizeof ev.state, "%s", job_state_name(job->state));
  memcpy(ev.client, job->req.client, sizeof ev.client);
  memcpy(ev.error_code, job->error_code, sizeof ev.error_code);
  events_publish(e->events, &ev);
}

/* Waits, the lock held, until upto rows of job are queued. Counted in row_waiters
 * before the check, so that row_queued either sees the waiter or the waiter sees the
 * row. */
void wait_for_rows_locked(struct engine *e, struct job *job, unsigned upto) {
  atomic_fetch_add(&e->row_waiters, 1);
  while (atomic_load(&job->rows_queued) < upto) pthread_cond_wait(&e->recorded, &e->lock);
  atomic_fetch_sub(&e->row_waiters, 1);
}

/* Waits, the lock not held, until seq rows of job are queued. Other threads queue
 * them: those that held the lock before this one (those rows were taken first), and
 * that queue them without waiting for any taken after. */
static void await_rows(struct engine *e, struct job *job, unsigned seq) {
  if (atomic_load(&job->rows_queued) >= seq) return;
  atomic_fetch_add(&e->row_waits, 1);
  engine_lock(e);
  wait_for_rows_locked(e, job, seq);
  pthread_mutex_unlock(&e->lock);
}

/* One more of job's rows is queued; its waiters, if any, are woken (the lock is taken
 * only then). */
static void row_queued(struct engine *e, struct job *job) {
  atomic_fetch_add(&job->rows_queued, 1);
  if (atomic_load(&e->row_waiters) > 0) {
    pthread_mutex_lock(&e->lock);
    pthread_cond_broadcast(&e->recorded);
    pthread_mutex_unlock(&e->lock);
  }
}

/* Queues this thread's pending rows (the lock not held), in the order they were taken. */
static void queue_pending_rows(struct engine *e) {
  for (int i = 0; i < pending.n; i++) {
    struct pending_row *r = &pending.rows[i];
    struct job *job = r->job;
    for (int p = 0; r->parents_unqueued && p < job->n_parents; p++)
      if (r->parents_unqueued & 1u << p) await_rows(e, job->parents[p], 1);
    await_rows(e, job, r->seq);
    if (r->final) job_view_locked(e, job, &r->view); /* final: nothing in it changes */
    struct engine_recorded kept = {0, NULL};
    if (!job->withdrawn)
      e->cfg.on_job_change(e->cfg.on_job_change_arg, &r->view, &job->req, r->seq == 0, &kept);
    if (kept.ticket) atomic_store(&job->record_ticket, kept.ticket);
    char *none = NULL; /* the document its answer is given: a final state's, kept once */
    if (kept.doc && !atomic_compare_exchange_strong(&job->doc, &none, kept.doc)) free(kept.doc);
    row_queued(e, job);
    if (r->final) atomic_store(&job->view_final, true); /* its last row */
    job_unref(job);
  }
  if (pending.rows != pending.inline_rows) {
    free(pending.rows);
    pending.rows = pending.inline_rows;
    pending.cap = PENDING_INLINE;
  }
  pending.n = 0;
}

void engine_lock(struct engine *e) { lock_counting_waits(&e->lock, &e->lock_waits); }

void engine_unlock(struct engine *e) {
  /* Watches of jobs that ended, which the thread that ended them did not take. */
  if (e->due) pthread_cond_signal(&e->timer_wake);
  pthread_mutex_unlock(&e->lock);
  if (pending.n) queue_pending_rows(e);
}
