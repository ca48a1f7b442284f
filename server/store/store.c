/* Durable job records, the part both backends share: opening one by what --db names,
 * what a write failure means, the store's status, and the reads, each a backend's
 * (store_priv.h's store_ops: what speaks SQL). The row queue and the writer thread that
 * commits it in batches are in store_queue.c. */
#include "server/store/store.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/log.h"
#include "server/store/journal.h"
#include "server/store/store_priv.h"

/* uri without its password (user:secret@ becomes user:***@), for messages and logs. */
static const char *redacted(const char *uri) {
  static _Thread_local char out[256];
  const char *scheme = strstr(uri, "://"), *at = scheme ? strchr(scheme + 3, '@') : NULL;
  const char *colon = scheme ? strchr(scheme + 3, ':') : NULL;
  if (!at || !colon || colon > at) return uri;
  snprintf(out, sizeof out, "%.*s:***%s", (int)(colon - uri), uri, at);
  return out;
}

/* The accept journal's entries a crash left are applied to the database, and the
 * journal opened empty: before the writer starts and anything reads. 0 or a negative
 * errno with why. */
static int journal_start(struct store *s, char *why, size_t why_len) {
  const char *base = s->ops->journal_base_locked ? s->ops->journal_base_locked(s) : NULL;
  if (!base) return 0;
  int rc = s->ops->replay_locked(s, base, why, why_len);
  return rc ? rc : journal_open(base, &s->journal, why, why_len);
}

int store_open(const char *path, struct store **out, char *err, size_t err_len) {
  struct store *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, err_len, "out of memory");
    return -ENOMEM;
  }
  pthread_mutex_init(&s->lock, NULL);
  pthread_mutex_init(&s->queue_lock, NULL);
  pthread_cond_init(&s->queue_ready, NULL);
  pthread_cond_init(&s->committed_cond, NULL);
  s->writable = true;
  s->gather_ms = 1;
  s->awaited_ms = STORE_AWAITED_MS;
  /* A libpq URI selects PostgreSQL; anything else is an SQLite file. */
  s->ops = strncmp(path, "postgresql://", 13) == 0 || strncmp(path, "postgres://", 11) == 0
               ? &store_pg_ops
               : &store_sqlite_ops;
  char why[256] = "";
  int rc = s->ops->open(s, path, why, sizeof why);
  if (rc == 0) rc = journal_start(s, why, sizeof why);
  if (rc == 0 && pthread_create(&s->writer, NULL, store_writer_main, s) != 0) {
    snprintf(why, sizeof why, "cannot start the store's writer thread");
    rc = -EAGAIN;
  }
  if (rc) {
    snprintf(err, err_len, "%s: %s", s->ops == &store_pg_ops ? redacted(path) : path, why);
    store_close(s);
    return rc;
  }
  s->writer_started = true;
  pthread_setname_np(s->writer, "gpulab-store");
  *out = s;
  return 0;
}

void store_close(struct store *s) {
  if (!s) return;
  if (s->writer_started) { /* it writes what is queued, then ends */
    store_queue_lock(s);
    s->closing = true;
    pthread_cond_signal(&s->queue_ready);
    pthread_mutex_unlock(&s->queue_lock);
    pthread_join(s->writer, NULL);
  }
  journal_close(s->journal); /* removed, unless rows it holds failed to be written */
  if (s->ops) s->ops->close(s);
  pthread_mutex_destroy(&s->lock);
  pthread_mutex_destroy(&s->queue_lock);
  pthread_cond_destroy(&s->queue_ready);
  pthread_cond_destroy(&s->committed_cond);
  free(s);
}

int store_check(struct store *s) {
  store_queue_lock(s);
  int err = s->writable ? 0 : s->error;
  pthread_mutex_unlock(&s->queue_lock);
  return err ? err : atomic_load(&s->over_limit) ? -ENOSPC : 0;
}

void store_status(struct store *s, struct store_status *out) {
  memset(out, 0, sizeof *out);
  store_queue_lock(s);
  out->writable = s->writable;
  out->error = s->error;
  snprintf(out->message, sizeof out->message, "%s", s->message);
  out->write_errors = s->write_errors;
  out->rows_queued = s->queued;
  out->rows_written = s->rows_written;
  out->commits = s->commits;
  out->syncs_waited = s->syncs_waited;
  out->rows_journaled = s->rows_journaled;
  out->sync_wait_s = s->sync_wait_s;
  out->commit_s = s->commit_s;
  out->queue_lock_waits = s->queue_lock_waits.n;
  out->queue_lock_wait_s = s->queue_lock_waits.seconds;
  pthread_mutex_unlock(&s->queue_lock);
  out->backend = s->ops->name;
  pthread_mutex_lock(&s->lock);
  out->file_bytes = s->ops->file_bytes_locked(s);
  out->used_bytes = s->ops->used_bytes_locked(s, false);
  out->max_bytes = s->max_bytes;
  out->pruned_jobs = s->pruned_jobs;
  out->durability = s->ops->durability_locked(s);
  pthread_mutex_unlock(&s->lock);
  if (out->writable && atomic_load(&s->over_limit)) { /* writes work; the bound refuses */
    out->writable = false;
    out->error = -ENOSPC;
    snprintf(out->message, sizeof out->message,
             "unfinished jobs alone hold more than --max-db-bytes (%llu bytes)",
             (unsigned long long)s->max_bytes);
  }
}

int store_set_durability(struct store *s, enum store_durability d) {
  /* FULL: an answer's row is fsync'ed in its commit, which the journal's write is not
   * (that is NORMAL's trade): the journal takes no more entries, what it holds is
   * committed by the flush, and it closes for good. */
  bool full = d == STORE_DURABILITY_FULL;
  if (full) {
    store_queue_lock(s);
    s->journal_off = true;
    pthread_mutex_unlock(&s->queue_lock);
  }
  store_flush(s); /* rows queued before are committed under the old setting */
  pthread_mutex_lock(&s->lock);
  int rc = s->ops->set_durability_locked(s, d);
  pthread_mutex_unlock(&s->lock);
  if (full) {
    store_queue_lock(s);
    while (s->journal_users > 0) pthread_cond_wait(&s->committed_cond, &s->queue_lock);
    journal_close(s->journal); /* kept on disk if a flushed row failed */
    s->journal = NULL;
    pthread_mutex_unlock(&s->queue_lock);
  }
  return rc;
}

int store_ids_reserve(struct store *s, const char *name, uint64_t upto) {
  return store_ids_take(s, name, NULL, upto);
}

int store_ids_take(struct store *s, const char *name, uint64_t *from, uint64_t upto) {
  char why[200] = "";
  pthread_mutex_lock(&s->lock);
  int err = s->ops->ids_reserve_locked(s, name, from, upto, why, sizeof why);
  pthread_mutex_unlock(&s->lock);
  /* Another gpulabd's ids (PostgreSQL) say nothing of whether the store takes writes. */
  if (err == -EBUSY)
    log_warn("store: %s", why);
  else if (err)
    store_note_write(s, err, why);
  return err;
}

void store_note_write(struct store *s, int err, const char *why) {
  store_queue_lock(s);
  store_note_write_locked(s, err, why);
  pthread_mutex_unlock(&s->queue_lock);
}

/* ---- the reads: the backend's, after what both share ---- */

void store_limit(struct store *s, uint64_t max_bytes) {
  pthread_mutex_lock(&s->lock);
  s->max_bytes = max_bytes;
  s->prune_left = 0; /* a prune under way was for the old bound */
  if (max_bytes) {
    if (s->ops->limit_locked) s->ops->limit_locked(s, max_bytes);
    while (store_prune_step_locked(s, UINT64_MAX)) continue; /* all of it, now */
  }
  pthread_mutex_unlock(&s->lock);
}

void store_lock_for_read(struct store *s) {
  store_flush(s);
  pthread_mutex_lock(&s->lock);
}

void store_set_node(struct store *s, const char *node) {
  pthread_mutex_lock(&s->lock); /* the writer reads it under the database lock */
  snprintf(s->node, sizeof s->node, "%s", node ? node : "");
  pthread_mutex_unlock(&s->lock);
}

uint64_t store_ids_floor(struct store *s, const char *name) {
  pthread_mutex_lock(&s->lock);
  uint64_t value = s->ops->ids_floor_locked(s, name);
  pthread_mutex_unlock(&s->lock);
  return value;
}

char *store_record(struct store *s, uint64_t id) { return s->ops->record(s, id); }

int store_job_cancel(struct store *s, uint64_t id, const char *canceled_record) {
  return s->ops->cancel ? s->ops->cancel(s, id, canceled_record) : -ENOENT;
}

int store_job_elsewhere(struct store *s, uint64_t id, char *url, size_t url_len) {
  return s->ops->elsewhere ? s->ops->elsewhere(s, id, url, url_len) : -ENOENT;
}

/* Through the writer's queue, not a statement of its own: the engine records a
 * buffer under its lock (a kept output is listed by a worker as its job starts, a
 * delete unlists), where nothing may wait for the database; and uploads in a burst
 * share a transaction with each other and with jobs' rows. The upload's answer waits
 * for its ticket (store_sync), so the row is committed before the 201, as a job's
 * first row is before its answer. SQLite queues nothing: an upload there waits for
 * no write at all. */
uint64_t store_buffer_put(struct store *s, uint64_t id, const char *client, double created,
                          bool listed) {
  if (!store_shared(s)) return 0; /* one box: its buffers are where every request comes */
  struct store_row row = {
      .table = STORE_BUFFERS, .id = id, .client = client, .created = created, .create = listed};
  return store_put(s, &row) == 0 ? store_ticket(s) : 0;
}

int store_buffer_elsewhere(struct store *s, uint64_t id, struct store_buffer_home *home) {
  return s->ops->buffer_elsewhere ? s->ops->buffer_elsewhere(s, id, home) : -ENOENT;
}

int store_buffers_forget(struct store *s) {
  return s->ops->buffers_forget ? s->ops->buffers_forget(s) : 0;
}

bool store_shared(const struct store *s) { return s->ops->shared; }

bool store_job_held(struct store *s, uint64_t id) {
  return s->ops->held ? s->ops->held(s, id) : true;
}

int store_list(struct store *s, uint64_t before_id, const char *state, const char *type,
               const char *client, int limit,
               void (*fn)(void *arg, uint64_t id, const char *record), void *arg) {
  return s->ops->list(s, before_id, state, type, client, limit, fn, arg);
}

int store_unfinished(struct store *s,
                     void (*fn)(void *arg, uint64_t id, const char *state, const void *request,
                                size_t request_len),
                     void *arg) {
  return s->ops->unfinished(s, fn, arg);
}

uint64_t store_max_id(struct store *s) { return s->ops->max_id(s, "jobs"); }
uint64_t store_max_sweep_id(struct store *s) { return s->ops->max_id(s, "sweeps"); }

int store_sweeps(struct store *s, int limit,
                 void (*fn)(void *arg, uint64_t id, const char *client, double created,
                            const char *record),
                 void *arg) {
  return s->ops->sweeps(s, limit, fn, arg);
}

int store_sweeps_page(struct store *s, uint64_t before_id, const char *client, int limit,
                      void (*fn)(void *arg, uint64_t id, const char *client, double created,
                                 const char *record),
                      void *arg) {
  if (!s->ops->sweeps_page) return -ENOTSUP;
  return s->ops->sweeps_page(s, before_id, client, limit, fn, arg);
}

int store_prune(struct store *s, double before) { return s->ops->prune(s, before); }

int store_kernel_insert(struct store *s, const struct store_kernel *k, int64_t *id, int *version) {
  return s->ops->kernel_insert(s, k, id, version);
}

int store_kernel_get(struct store *s, int64_t id, struct store_kernel *out) {
  return s->ops->kernel_get(s, id, out);
}
int store_kernel_delete(struct store *s, int64_t id) { return s->ops->kernel_delete(s, id); }
int store_kernel_drop(struct store *s, int64_t kernel_id) {
  return s->ops->kernel_drop(s, kernel_id);
}

int store_kernel_versions(struct store *s, int64_t kernel_id,
                          void (*fn)(void *arg, const struct store_kernel *k), void *arg) {
  return s->ops->kernel_versions(s, kernel_id, fn, arg);
}

int store_kernel_named(struct store *s, const char *owner, const char *experiment, const char *name,
                       int64_t *ids, int max) {
  return s->ops->kernel_named(s, owner, experiment, name, ids, max);
}

int store_kernel_list(struct store *s, const char *owner, const char *experiment,
                      void (*fn)(void *arg, const struct store_kernel *k), void *arg) {
  return s->ops->kernel_list(s, owner, experiment, fn, arg);
}

int store_kernel_count(struct store *s, const char *owner, int *n, size_t *source_bytes) {
  return s->ops->kernel_count(s, owner, n, source_bytes);
}

void store_kernel_clear(struct store_kernel *k) {
  free(k->source);
  free(k->spec);
  free(k->report);
  free(k->image);
  free(k->ptx);
  k->source = k->spec = k->report = k->ptx = NULL;
  k->image = NULL;
  k->image_bytes = 0;
}

int store_problem_insert(struct store *s, const struct store_problem *p, int64_t *id,
                         int *version) {
  return s->ops->problem_insert(s, p, id, version);
}
int store_problem_get(struct store *s, const char *name, int version, struct store_problem *out) {
  return s->ops->problem_get(s, name, version, out);
}
int store_problem_each(struct store *s, const char *name,
                       void (*fn)(void *arg, const struct store_problem *p), void *arg) {
  return s->ops->problem_each(s, name, fn, arg);
}
int store_problem_delete(struct store *s, const char *name) {
  return s->ops->problem_delete(s, name);
}
void store_problem_clear(struct store_problem *p) {
  if (!p) return;
  free(p->definition);
  free(p->report);
  free(p->image);
  memset(p, 0, sizeof *p);
}
