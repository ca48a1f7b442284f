/* The job engine: a table of jobs, one FIFO queue, a worker thread per lane, and a
 * timer thread for watch deadlines. One mutex guards all of it; backends run
 * outside the lock. */
#include "server/engine.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/log.h"

struct job {
  atomic_int refs;
  atomic_bool cancel_requested;
  uint64_t id;
  enum job_state state;
  struct exp_spec spec;
  char client[64];
  double created_at, started_at, finished_at;
  int device, lane;
  struct exp_result *result; /* set once, when done */
  char error_code[32];
  char error_message[256];
  struct job *next_queued;
};

struct worker {
  struct engine *engine;
  int device, lane;
  pthread_t thread;
};

struct engine {
  pthread_mutex_t lock;
  pthread_cond_t work_ready;  /* queue gained a job, or stopping */
  pthread_cond_t timer_wake;  /* a watch was added, or stopping */
  bool stopping;

  struct backend *const *devices;
  int n_devices;
  struct engine_config cfg;

  struct job **jobs; /* sorted by id: ids only grow */
  int n_jobs, cap_jobs;
  uint64_t next_id;
  struct job *queue_head, *queue_tail;
  int n_queued;

  struct engine_watch *watches;

  struct worker *workers;
  int n_workers;
  pthread_t timer;
};

static const char *const state_names[JOB_STATE_COUNT] = {"queued", "waiting", "running",
                                                         "done", "failed", "canceled"};

const char *job_state_name(enum job_state s) {
  return (unsigned)s < JOB_STATE_COUNT ? state_names[s] : "unknown";
}

int job_state_from_name(const char *name) {
  for (int i = 0; i < JOB_STATE_COUNT; i++)
    if (strcmp(name, state_names[i]) == 0) return i;
  return -1;
}

static double clock_seconds(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
double engine_now_mono(void) { return clock_seconds(CLOCK_MONOTONIC); }
double engine_now_unix(void) { return clock_seconds(CLOCK_REALTIME); }

void job_ref(struct job *job) { atomic_fetch_add(&job->refs, 1); }

void job_unref(struct job *job) {
  if (job && atomic_fetch_sub(&job->refs, 1) == 1) {
    free(job->result);
    free(job);
  }
}

/* ---- watches ---- */

/* Moves the watches that are due (job final, or deadline passed) from the engine's
 * list to *fired. Called with the lock held; the caller runs them unlocked. */
static void collect_due_watches(struct engine *e, double now, struct engine_watch **fired) {
  struct engine_watch **link = &e->watches;
  while (*link) {
    struct engine_watch *w = *link;
    if (e->stopping || job_state_final(w->job->state) || w->deadline <= now) {
      *link = w->next;
      w->next = *fired;
      *fired = w;
    } else {
      link = &w->next;
    }
  }
}

static void run_watches(struct engine_watch *fired) {
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
  w->job = job;
  w->deadline = deadline;
  w->fn = fn;
  w->arg = arg;
  struct engine_watch *fired = NULL;
  pthread_mutex_lock(&e->lock);
  w->next = e->watches;
  e->watches = w;
  collect_due_watches(e, engine_now_mono(), &fired);
  pthread_cond_signal(&e->timer_wake);
  pthread_mutex_unlock(&e->lock);
  run_watches(fired);
}

/* Sleeps until the earliest watch deadline, fires what is due, repeats. */
static void *timer_main(void *arg) {
  struct engine *e = arg;
  pthread_mutex_lock(&e->lock);
  while (!e->stopping) {
    double earliest = engine_now_mono() + 3600;
    for (struct engine_watch *w = e->watches; w; w = w->next)
      if (w->deadline < earliest) earliest = w->deadline;
    /* Condition variables wait on CLOCK_REALTIME by default: convert. */
    double until = engine_now_unix() + (earliest - engine_now_mono());
    struct timespec ts = {(time_t)until, (long)((until - (double)(time_t)until) * 1e9)};
    pthread_cond_timedwait(&e->timer_wake, &e->lock, &ts);
    struct engine_watch *fired = NULL;
    collect_due_watches(e, engine_now_mono(), &fired);
    if (fired) {
      pthread_mutex_unlock(&e->lock);
      run_watches(fired);
      pthread_mutex_lock(&e->lock);
    }
  }
  pthread_mutex_unlock(&e->lock);
  return NULL;
}

/* ---- the job table ---- */

static struct job *find_locked(struct engine *e, uint64_t id) {
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

/* Forgets the oldest finished jobs while more than max_jobs_kept are kept. */
static void prune_locked(struct engine *e) {
  int excess = e->n_jobs - e->cfg.max_jobs_kept, kept = 0;
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

static int table_add_locked(struct engine *e, struct job *job) {
  if (e->n_jobs == e->cap_jobs) {
    prune_locked(e);
    if (e->n_jobs == e->cap_jobs) {
      int cap = e->cap_jobs ? 2 * e->cap_jobs : 1024;
      struct job **jobs = realloc(e->jobs, (size_t)cap * sizeof *jobs);
      if (!jobs) return -ENOMEM;
      e->jobs = jobs;
      e->cap_jobs = cap;
    }
  }
  e->jobs[e->n_jobs++] = job;
  return 0;
}

uint64_t engine_memory_limit(const struct engine *e) {
  uint64_t limit = UINT64_MAX;
  for (int i = 0; i < e->n_devices; i++) {
    uint64_t l = backend_memory_limit(e->devices[i]);
    if (l < limit) limit = l;
  }
  return limit;
}

int engine_submit(struct engine *e, const struct exp_spec *spec, const char *client,
                  struct job **out) {
  *out = NULL;
  if (exp_spec_bytes(spec) > engine_memory_limit(e)) return -EFBIG;
  struct job *job = calloc(1, sizeof *job);
  if (!job) return -ENOMEM;
  atomic_init(&job->refs, 2); /* the table's and the caller's */
  atomic_init(&job->cancel_requested, false);
  job->spec = *spec;
  snprintf(job->client, sizeof job->client, "%s", client ? client : "");
  job->device = job->lane = -1;
  job->state = JOB_QUEUED;
  job->created_at = engine_now_unix();

  pthread_mutex_lock(&e->lock);
  int rc = 0;
  if (e->stopping)
    rc = -ESHUTDOWN;
  else if (e->n_queued >= e->cfg.max_queued)
    rc = -EAGAIN;
  else
    rc = table_add_locked(e, job);
  if (rc == 0) {
    job->id = e->next_id++;
    if (e->queue_tail)
      e->queue_tail->next_queued = job;
    else
      e->queue_head = job;
    e->queue_tail = job;
    e->n_queued++;
    pthread_cond_signal(&e->work_ready);
  }
  pthread_mutex_unlock(&e->lock);
  if (rc) {
    free(job);
    return rc;
  }
  *out = job;
  return 0;
}

struct job *engine_job_get(struct engine *e, uint64_t id) {
  pthread_mutex_lock(&e->lock);
  struct job *job = find_locked(e, id);
  if (job) job_ref(job);
  pthread_mutex_unlock(&e->lock);
  return job;
}

void job_get_view(struct engine *e, struct job *job, struct job_view *v) {
  pthread_mutex_lock(&e->lock);
  v->id = job->id;
  v->state = job->state;
  v->spec = job->spec;
  memcpy(v->client, job->client, sizeof v->client);
  v->created_at = job->created_at;
  v->started_at = job->started_at;
  v->finished_at = job->finished_at;
  v->device = job->device;
  v->lane = job->lane;
  v->result = job->state == JOB_DONE ? job->result : NULL;
  memcpy(v->error_code, job->error_code, sizeof v->error_code);
  memcpy(v->error_message, job->error_message, sizeof v->error_message);
  pthread_mutex_unlock(&e->lock);
}

static void unlink_queued_locked(struct engine *e, struct job *job) {
  struct job **link = &e->queue_head, *prev = NULL;
  while (*link && *link != job) {
    prev = *link;
    link = &(*link)->next_queued;
  }
  if (!*link) return;
  *link = job->next_queued;
  if (e->queue_tail == job) e->queue_tail = prev;
  job->next_queued = NULL;
  e->n_queued--;
}

/* Ends a job that never ran. Lock held; the caller fires watches. */
static void finish_unrun_locked(struct engine *e, struct job *job, const char *message) {
  unlink_queued_locked(e, job);
  job->state = JOB_CANCELED;
  job->finished_at = engine_now_unix();
  snprintf(job->error_code, sizeof job->error_code, "canceled");
  snprintf(job->error_message, sizeof job->error_message, "%s", message);
}

int engine_job_cancel(struct engine *e, struct job *job) {
  struct engine_watch *fired = NULL;
  int rc = 0;
  pthread_mutex_lock(&e->lock);
  if (job_state_final(job->state)) {
    rc = -EALREADY;
  } else if (job->state == JOB_RUNNING) {
    atomic_store(&job->cancel_requested, true); /* the worker ends it at a batch boundary */
  } else {
    finish_unrun_locked(e, job, "canceled before it ran");
    collect_due_watches(e, engine_now_mono(), &fired);
  }
  pthread_mutex_unlock(&e->lock);
  run_watches(fired);
  return rc;
}

int engine_jobs_list(struct engine *e, const struct engine_list_filter *f, struct job **out,
                     int max) {
  int n = 0;
  pthread_mutex_lock(&e->lock);
  for (int i = e->n_jobs - 1; i >= 0 && n < max; i--) {
    struct job *job = e->jobs[i];
    if (f->before_id && job->id >= f->before_id) continue;
    if (f->state >= 0 && (int)job->state != f->state) continue;
    if (f->type >= 0 && (int)job->spec.type != f->type) continue;
    job_ref(job);
    out[n++] = job;
  }
  pthread_mutex_unlock(&e->lock);
  return n;
}

void engine_counts(struct engine *e, struct engine_counts *out) {
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&e->lock);
  for (int i = 0; i < e->n_jobs; i++) out->by_state[e->jobs[i]->state]++;
  out->submitted = e->next_id - 1;
  pthread_mutex_unlock(&e->lock);
}

bool engine_healthy(const struct engine *e) {
  for (int i = 0; i < e->n_devices; i++)
    if (!backend_healthy(e->devices[i])) return false;
  return true;
}

int engine_device_count(const struct engine *e) { return e->n_devices; }
struct backend *engine_device(struct engine *e, int index) { return e->devices[index]; }

/* ---- workers ---- */

static bool job_canceled(void *arg) {
  struct job *job = arg;
  return atomic_load(&job->cancel_requested);
}

static void finish_run(struct engine *e, struct job *job, int rc, struct exp_result *result,
                       const char *err) {
  struct engine_watch *fired = NULL;
  pthread_mutex_lock(&e->lock);
  job->finished_at = engine_now_unix();
  if (rc == 0) {
    job->state = JOB_DONE;
    job->result = result;
    result = NULL;
  } else {
    const char *code = rc == BACKEND_ECANCELED ? "canceled"
                       : rc == BACKEND_ENOMEM  ? "out_of_memory"
                       : rc == BACKEND_EDEVICE ? "device_error"
                                               : "backend_error";
    job->state = rc == BACKEND_ECANCELED ? JOB_CANCELED : JOB_FAILED;
    snprintf(job->error_code, sizeof job->error_code, "%s", code);
    snprintf(job->error_message, sizeof job->error_message, "%s", err);
  }
  collect_due_watches(e, engine_now_mono(), &fired);
  pthread_mutex_unlock(&e->lock);
  free(result);
  run_watches(fired);
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  struct engine *e = w->engine;
  struct backend *b = e->devices[w->device];
  for (;;) {
    pthread_mutex_lock(&e->lock);
    while (!e->stopping && !e->queue_head) pthread_cond_wait(&e->work_ready, &e->lock);
    if (e->stopping) {
      pthread_mutex_unlock(&e->lock);
      return NULL;
    }
    struct job *job = e->queue_head;
    unlink_queued_locked(e, job);
    job->state = JOB_RUNNING;
    job->started_at = engine_now_unix();
    job->device = w->device;
    job->lane = w->lane;
    job_ref(job);
    pthread_mutex_unlock(&e->lock);

    char err[256] = "";
    int rc = -1;
    struct exp_result *result = calloc(1, sizeof *result);
    if (!result) {
      rc = BACKEND_ENOMEM;
      snprintf(err, sizeof err, "out of host memory for the result");
    } else {
      struct backend_hooks hooks = {.canceled = job_canceled, .arg = job};
      rc = backend_run(b, w->lane, &job->spec, &hooks, result, err, sizeof err);
    }
    if (rc && rc != BACKEND_ECANCELED) log_warn("job %llu failed: %s", (unsigned long long)job->id, err);
    finish_run(e, job, rc, result, err);
    job_unref(job);
  }
}

int engine_new(struct backend *const *devices, int n_devices, const struct engine_config *cfg,
               struct engine **out) {
  struct engine *e = calloc(1, sizeof *e);
  if (!e) return -ENOMEM;
  pthread_mutex_init(&e->lock, NULL);
  pthread_cond_init(&e->work_ready, NULL);
  pthread_cond_init(&e->timer_wake, NULL);
  e->devices = devices;
  e->n_devices = n_devices;
  e->cfg = *cfg;
  e->next_id = 1;
  for (int d = 0; d < n_devices; d++) e->n_workers += backend_lanes(devices[d]);
  e->workers = calloc((size_t)e->n_workers, sizeof *e->workers);
  if (!e->workers) goto fail;
  if (pthread_create(&e->timer, NULL, timer_main, e)) goto fail;
  int started = 0;
  for (int d = 0; d < n_devices; d++)
    for (int l = 0; l < backend_lanes(devices[d]); l++) {
      struct worker *w = &e->workers[started];
      *w = (struct worker){.engine = e, .device = d, .lane = l};
      if (pthread_create(&w->thread, NULL, worker_main, w)) {
        e->n_workers = started; /* engine_stop joins only those */
        engine_free(e);
        return -EAGAIN;
      }
      started++;
    }
  *out = e;
  return 0;
fail:
  free(e->workers);
  free(e);
  return -ENOMEM;
}

void engine_stop(struct engine *e) {
  struct engine_watch *fired = NULL;
  pthread_mutex_lock(&e->lock);
  if (e->stopping) {
    pthread_mutex_unlock(&e->lock);
    return;
  }
  e->stopping = true;
  while (e->queue_head) finish_unrun_locked(e, e->queue_head, "gpulabd is shutting down");
  for (int i = 0; i < e->n_jobs; i++)
    if (e->jobs[i]->state == JOB_RUNNING) atomic_store(&e->jobs[i]->cancel_requested, true);
  pthread_cond_broadcast(&e->work_ready);
  pthread_cond_broadcast(&e->timer_wake);
  pthread_mutex_unlock(&e->lock);
  for (int i = 0; i < e->n_workers; i++) pthread_join(e->workers[i].thread, NULL);
  pthread_join(e->timer, NULL);
  pthread_mutex_lock(&e->lock);
  collect_due_watches(e, engine_now_mono(), &fired);
  pthread_mutex_unlock(&e->lock);
  run_watches(fired);
}

void engine_free(struct engine *e) {
  if (!e) return;
  engine_stop(e);
  for (int i = 0; i < e->n_jobs; i++) job_unref(e->jobs[i]);
  free(e->jobs);
  free(e->workers);
  pthread_cond_destroy(&e->work_ready);
  pthread_cond_destroy(&e->timer_wake);
  pthread_mutex_destroy(&e->lock);
  free(e);
}
