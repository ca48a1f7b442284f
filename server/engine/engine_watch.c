/* Watches: a caller's function run once a job ends or a deadline passes
 * (engine_watch_add), by the thread that ended it or by the timer thread. */
#include <time.h>

#include "server/engine/engine_priv.h"

/* w leaves the pending watches: every job's list and its job's. */
static void watch_unlink_locked(struct engine *e, struct engine_watch *w) {
  if (w->prev)
    w->prev->next = w->next;
  else
    e->watches = w->next;
  if (w->next) w->next->prev = w->prev;
  struct engine_watch **link = &w->job->watches;
  while (*link != w) link = &(*link)->job_next;
  *link = w->job_next;
  w->next = w->prev = w->job_next = NULL;
}

/* job ended: its watches are due (e->due). */
void job_watches_due_locked(struct engine *e, struct job *job) {
  while (job->watches) {
    struct engine_watch *w = job->watches;
    watch_unlink_locked(e, w);
    w->next = e->due;
    e->due = w;
  }
}

void take_due_watches_locked(struct engine *e, struct engine_watch **fired) {
  while (e->due) {
    struct engine_watch *w = e->due;
    e->due = w->next;
    w->next = *fired;
    *fired = w;
  }
}

/* The due watches, and the pending ones whose deadline passed (every one, stopped). */
void collect_due_watches(struct engine *e, double now, struct engine_watch **fired) {
  take_due_watches_locked(e, fired);
  struct engine_watch *next;
  for (struct engine_watch *w = e->watches; w; w = next) {
    next = w->next;
    if (e->stopped || w->deadline <= now) {
      watch_unlink_locked(e, w);
      w->next = *fired;
      *fired = w;
    }
  }
}

void run_watches(struct engine_watch *fired) {
  while (fired) {
    struct engine_watch *next = fired->next;
    struct job *job = fired->job;
    fired->job = NULL;
    fired->fn(fired->arg); /* may free fired */
    job_unref(job);
    fired = next;
  }
}

void engine_watch_add(struct engine *e, struct job *job, struct engine_watch *w, double deadline,
                      void (*fn)(void *arg), void *arg) {
  job_ref(job);
  *w = (struct engine_watch){.job = job, .deadline = deadline, .fn = fn, .arg = arg};
  struct engine_watch *fired = NULL;
  engine_lock(e);
  if (e->stopped || job_state_final(job->state) || deadline <= engine_now_mono()) {
    fired = w; /* due at once */
  } else {
    w->next = e->watches;
    if (w->next) w->next->prev = w;
    e->watches = w;
    w->job_next = job->watches;
    job->watches = w;
    /* The timer thread sleeps past this deadline: it wakes to sleep less. */
    if (deadline < e->timer_until) pthread_cond_signal(&e->timer_wake);
  }
  engine_unlock(e);
  run_watches(fired);
}

/* Sleeps until the earliest watch deadline, fires what is due, repeats. */
void *engine_timer_main(void *arg) {
  struct engine *e = arg;
  engine_lock(e);
  while (!e->stopped) {
    double earliest = engine_now_mono() + 3600;
    for (struct engine_watch *w = e->watches; w; w = w->next)
      if (w->deadline < earliest) earliest = w->deadline;
    /* Condition variables wait on CLOCK_REALTIME by default: convert. */
    double until = engine_now_unix() + (earliest - engine_now_mono());
    struct timespec ts = {(time_t)until, (long)((until - (double)(time_t)until) * 1e9)};
    e->timer_until = e->due ? 0 : earliest;
    if (!e->due) pthread_cond_timedwait(&e->timer_wake, &e->lock, &ts);
    e->timer_until = 0;
    struct engine_watch *fired = NULL;
    collect_due_watches(e, engine_now_mono(), &fired);
    if (fired) {
      engine_unlock(e);
      run_watches(fired);
      engine_lock(e);
    }
  }
  engine_unlock(e);
  return NULL;
}
