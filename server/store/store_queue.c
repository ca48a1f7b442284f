/* The store's row queue: rows queued by any thread (store_put), indexed by ticket and
 * by job, a later row of a job replacing its earlier one while both wait; the writer
 * thread that commits what has gathered in batches (group commit); and what an answer
 * waits for (store_sync: the accept journal, or a commit of its own). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/core/clock.h"
#include "server/log.h"
#include "server/store/journal.h"
#include "server/store/store.h"
#include "server/store/store_priv.h"

/* The ticket of the last row this thread queued, and in which store. */
static _Thread_local struct {
  const struct store *store;
  uint64_t ticket;
} last_put;

/* Takes queue_lock, counting the waits for it (store_status). */
void store_queue_lock(struct store *s) {
  lock_counting_waits(&s->queue_lock, &s->queue_lock_waits);
}

void store_note_write_locked(struct store *s, int err, const char *why) {
  if (err == 0) {
    if (!s->writable && clock_mono_s() >= s->retry_at) {
      log_info("store: writes succeed again; jobs are accepted");
      s->writable = true;
    }
    return;
  }
  s->retry_at = clock_mono_s() + 1;
  if (s->writable || s->error != err)
    log_warn("store: a write failed (%s: %s); new jobs are refused until one succeeds",
             strerror(-err), why);
  /* A write that failed on another thread (an answer's own commit, the ids, the
   * kernels) finds the writer asleep until a row comes, and none comes while new jobs
   * are refused: woken, it probes once a second until a write succeeds. */
  if (s->writable && s->writer_idle) pthread_cond_signal(&s->queue_ready);
  s->writable = false;
  s->error = err;
  snprintf(s->message, sizeof s->message, "%s", why);
  s->write_errors++;
}

static int ticket_order(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The tickets of batch (its rows, and the rows they replaced) were in a transaction
 * that failed with err: for store_sync, as ranges of adjacent tickets in a ring. A
 * range the ring drops is remembered by its end (failed_forgotten). queue_lock held. */
static void note_failed_locked(struct store *s, const struct queued_row *batch, int err) {
  size_t n = 0, i = 0;
  for (const struct queued_row *q = batch; q; q = q->next)
    for (const struct queued_row *a = q; a; a = a->absorbed) n++;
  uint64_t one, *t = n > 1 ? malloc(n * sizeof *t) : &one;
  if (!t) { /* no memory to list them: every ticket up to the batch's last is in doubt */
    for (const struct queued_row *q = batch; q; q = q->next)
      if (q->ticket > s->failed_forgotten) s->failed_forgotten = q->ticket;
    return;
  }
  for (const struct queued_row *q = batch; q; q = q->next)
    for (const struct queued_row *a = q; a; a = a->absorbed) t[i++] = a->ticket;
  qsort(t, n, sizeof *t, ticket_order);
  for (i = 0; i < n; i++) {
    struct failed_range *last = s->n_failed ? &s->failed[(s->n_failed - 1) % FAILED_RANGES] : NULL;
    if (last && last->to + 1 == t[i] && last->error == err) {
      last->to = t[i];
      continue;
    }
    struct failed_range *next = &s->failed[s->n_failed % FAILED_RANGES];
    if (s->n_failed >= FAILED_RANGES && next->to > s->failed_forgotten)
      s->failed_forgotten = next->to;
    *next = (struct failed_range){t[i], t[i], err};
    s->n_failed++;
  }
  if (t != &one) free(t);
}

/* Frees a list of rows, the rows each replaced, and the records made for them. */
static void free_rows(struct queued_row *q) {
  while (q) {
    struct queued_row *next = q->next;
    free_rows(q->absorbed);
    free(q->made);
    free(q);
    q = next;
  }
}

/* ---- the queue and its indexes; queue_lock held ---- */

static struct queued_row **ticket_bucket(struct store *s, uint64_t t) {
  return &s->by_ticket[t % INDEX_BUCKETS];
}

static struct queued_row **job_bucket(struct store *s, uint64_t id) {
  return &s->by_job[id % INDEX_BUCKETS];
}

/* The row of ticket t, queued or in the batch being written (a replaced one too);
 * NULL once written or failed. */
static struct queued_row *ticket_find(struct store *s, uint64_t t) {
  struct queued_row *q = *ticket_bucket(s, t);
  while (q && q->ticket != t) q = q->ticket_next;
  return q;
}

/* The row holding ticket t: its own, or the row that replaced it; NULL if none. */
static struct queued_row *row_holding(struct store *s, uint64_t t) {
  struct queued_row *q = t ? ticket_find(s, t) : NULL;
  while (q && q->replaced_by) q = q->replaced_by;
  return q;
}

/* Forgets the tickets of q and of the rows it replaced (written or failed). */
static void tickets_forget(struct store *s, struct queued_row *q) {
  for (; q; q = q->absorbed) {
    struct queued_row **link = ticket_bucket(s, q->ticket);
    while (*link != q) link = &(*link)->ticket_next;
    *link = q->ticket_next;
  }
}

/* The queued row of job id; NULL if none. */
static struct queued_row *job_find(struct store *s, uint64_t id) {
  struct queued_row *q = *job_bucket(s, id);
  while (q && q->row.id != id) q = q->job_next;
  return q;
}

static void queue_append(struct store *s, struct queued_row *q) {
  q->next = NULL;
  q->prev = s->last;
  if (s->last)
    s->last->next = q;
  else
    s->head = q;
  s->last = q;
  if (q->row.table == STORE_JOBS) {
    struct queued_row **bucket = job_bucket(s, q->row.id);
    q->job_next = *bucket;
    *bucket = q;
  }
}

/* q leaves the queue (replaced, or taken for writing). */
static void queue_remove(struct store *s, struct queued_row *q) {
  if (q->prev)
    q->prev->next = q->next;
  else
    s->head = q->next;
  if (q->next)
    q->next->prev = q->prev;
  else
    s->last = q->prev;
  q->next = q->prev = NULL;
  if (q->row.table == STORE_JOBS) {
    struct queued_row **link = job_bucket(s, q->row.id);
    while (*link != q) link = &(*link)->job_next;
    *link = q->job_next;
  }
}

/* Whether a row of ticket <= target (or one it replaced) is in list. */
static bool holds_ticket_upto(const struct queued_row *list, uint64_t target) {
  for (const struct queued_row *q = list; q; q = q->next)
    for (const struct queued_row *a = q; a; a = a->absorbed)
      if (a->ticket <= target) return true;
  return false;
}

/* q is wanted (store_sync waits for it): a writer takes it at once, and the queued
 * first rows of the jobs it depends on with it, so that a job is never on disk
 * before the jobs it names. queue_lock held. */
static void want_locked(struct store *s, struct queued_row *q) {
  if (q->wanted) return;
  q->wanted = true;
  for (int i = 0; i < q->row.n_parents; i++) {
    struct queued_row *p = job_find(s, q->row.parents[i]);
    if (p) want_locked(s, p);
  }
}

/* When q has gathered: gather_ms after its job's first unwritten row was queued, or
 * awaited_ms when its job's client waits for its end. queue_lock held. */
static double gathered_at(const struct store *s, const struct queued_row *q) {
  return q->queued_at + (q->awaited ? s->awaited_ms : s->gather_ms) * 1e-3;
}

/* Takes the queued rows to write, in queue order: every one (all), or the wanted ones
 * and those that have gathered already (the writer thread would commit them on its
 * own now: a commit more, which an answer could meet), with the queued first rows of
 * the jobs they depend on (a job's row may gather longer than its dependent's, when
 * its client waits for it); they leave the queue. queue_lock held. */
static struct queued_row *take_rows_locked(struct store *s, bool all) {
  struct queued_row *batch = NULL, **batch_tail = &batch, *next;
  double now = clock_mono_s();
  for (struct queued_row *q = s->head; q && !all; q = q->next)
    if (!q->wanted && q->row.n_parents > 0 && gathered_at(s, q) <= now) want_locked(s, q);
  for (struct queued_row *q = s->head; q; q = next) {
    next = q->next;
    if (all || q->wanted || gathered_at(s, q) <= now) {
      queue_remove(s, q);
      q->in_batch = true;
      *batch_tail = q;
      batch_tail = &q->next;
    }
  }
  return batch;
}

/* A journaled row's commit failed: the journal keeps what it holds for the next start
 * (whose replay applies it) and takes no more entries. queue_lock held. */
static void journal_keep_locked(struct store *s) {
  if (s->journal_off) return;
  log_warn(
      "store: journaled rows could not be committed; they are kept in the accept journal "
      "for the next start, and answers wait for commits again");
  s->journal_off = true;
}

/* The journaled rows of batch (and of the rows they replaced) are in the database
 * now: done[gen] counts them by journal file, whose entries are no longer needed. Or
 * the batch failed: the journal keeps them for the next start, and takes no more
 * entries. queue_lock held. */
static void journal_batch_done_locked(struct store *s, const struct queued_row *batch, int err,
                                      uint64_t done[2]) {
  for (const struct queued_row *q = batch; q && s->journal; q = q->next)
    for (const struct queued_row *a = q; a; a = a->absorbed) {
      if (a->journal_gen < 0) continue;
      if (!err) {
        done[a->journal_gen]++;
      } else {
        journal_keep_locked(s);
      }
    }
}

/* Takes the rows to write (take_rows_locked's), writes them in one transaction and
 * notes the outcome of each. One writer at a time (s->writing): the writer thread, or a
 * store_sync or store_flush caller, which writes for itself rather than wait for a
 * thread to wake. Called and returns with queue_lock held. */
static void write_queued_locked(struct store *s, bool all) {
  struct queued_row *batch = take_rows_locked(s, all);
  if (!batch) return;
  s->inflight = batch;
  s->writing = true;
  pthread_mutex_unlock(&s->queue_lock);

  char why[200] = "";
  uint64_t bytes = 0, rows = 0;
  double began = clock_mono_s();
  for (struct queued_row *q = batch; q; q = q->next, rows++) {
    if (!q->row.record && q->row.make_record) /* outside the database's lock */
      q->row.record = q->made = q->row.make_record(q->row.record_arg);
    bytes += 64 + q->row.request_len + (q->row.record ? strlen(q->row.record) : 0);
  }
  pthread_mutex_lock(&s->lock);
  int err = s->ops->write_batch_locked(s, batch, why, sizeof why);
  s->written_since_check += bytes;
  if (err == 0) s->bytes_written += bytes;
  /* Over the bound with only unfinished jobs, every batch checks again: its rows are
   * those jobs ending (nothing new is taken meanwhile), and a few small rows must not
   * leave the store refusing jobs with finished ones to delete. */
  bool check = err == 0 && s->max_bytes &&
               (atomic_load(&s->over_limit) || s->written_since_check > s->max_bytes / 64 + 4096);
  pthread_mutex_unlock(&s->lock);

  store_queue_lock(s);
  s->commit_s += clock_mono_s() - began;
  store_note_write_locked(s, err, why);
  if (err) {
    note_failed_locked(s, batch, err);
  } else {
    s->commits++;
    for (const struct queued_row *q = batch; q; q = q->next) s->rows_written++;
  }
  uint64_t journaled[2] = {0, 0};
  journal_batch_done_locked(s, batch, err, journaled);
  bool journal_use = journaled[0] || journaled[1];
  s->journal_users += journal_use;
  for (struct queued_row *q = batch; q; q = q->next) tickets_forget(s, q);
  s->inflight = NULL;
  /* The size bound's check (which may prune) is the writer thread's, between batches
   * (prune_locked): a store_sync caller writing for itself answers first. A prune's
   * turn deletes twice the rows of the batch before, to keep pace with the writes. */
  s->prune_due |= check;
  s->prune_turn = s->prune_due; /* before the next batch (may_write_locked) */
  s->prune_owed = rows * 2 < 256 ? 256 : rows * 2;
  pthread_cond_broadcast(&s->committed_cond);
  pthread_mutex_unlock(&s->queue_lock);
  free_rows(batch);
  for (int gen = 0; gen < 2 && journal_use; gen++) /* outside queue_lock: it may truncate */
    if (journaled[gen]) journal_committed(s->journal, gen, journaled[gen]);
  store_queue_lock(s);
  s->journal_users -= journal_use;
  s->writing = false;
  pthread_cond_broadcast(&s->committed_cond);
  if (s->head || s->prune_due) pthread_cond_signal(&s->queue_ready); /* queued meanwhile */
}

/* The size bound's prune, on the writer thread between its batches: up to prune_owed
 * jobs (twice the rows of the batch before), in chunks of 4,096 at most, a transaction
 * each, whose rows stay in SQLite's page cache (16 MiB) from the read that finds them
 * to their delete. queue_lock held. */
static void prune_locked(struct store *s) {
  uint64_t owed = s->prune_owed;
  s->prune_due = s->prune_turn = false;
  s->writing = true;
  pthread_mutex_unlock(&s->queue_lock);
  bool more = true;
  for (uint64_t chunk; more && owed; owed -= chunk) {
    chunk = owed < 4096 ? owed : 4096;
    pthread_mutex_lock(&s->lock);
    more = store_prune_step_locked(s, chunk);
    pthread_mutex_unlock(&s->lock);
  }
  store_queue_lock(s);
  s->prune_due |= more;
  s->writing = false;
  pthread_cond_broadcast(&s->committed_cond);
}

/* A failing store's small write of its own (the backend's probe). queue_lock held. */
static void probe_locked(struct store *s) {
  s->writing = true;
  pthread_mutex_unlock(&s->queue_lock);
  char why[200] = "";
  pthread_mutex_lock(&s->lock);
  int err = s->ops->probe_locked(s, why, sizeof why);
  pthread_mutex_unlock(&s->lock);
  store_queue_lock(s);
  if (err == 0 || s->writable) store_note_write_locked(s, err, why);
  s->writing = false;
  pthread_cond_broadcast(&s->committed_cond);
}

/* A deadline `seconds` from now on the condition variable's clock. */
static struct timespec in_s(double seconds) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  long long ns = until.tv_nsec + (long long)(seconds * 1e9);
  until.tv_sec += (time_t)(ns / 1000000000);
  until.tv_nsec = (long)(ns % 1000000000);
  return until;
}

/* When the first queued row gathers (gathered_at). The queue is not empty;
 * queue_lock held. */
static double first_gathered_locked(const struct store *s) {
  double first = gathered_at(s, s->head);
  for (const struct queued_row *q = s->head->next; q; q = q->next)
    if (gathered_at(s, q) < first) first = gathered_at(s, q);
  return first;
}

/* Writes what nobody waits for (a job's running row, the final row of a job nobody
 * waits for) once it has gathered for gather_ms, when no answer's commit took it
 * first: most of a short job's rows are replaced by its last before then. Until
 * closing and all written. While writes fail, it probes once a second. */
void *store_writer_main(void *arg) {
  struct store *s = arg;
  store_queue_lock(s);
  for (;;) {
    while (!s->head && !s->closing && !s->prune_due) {
      if (s->writable) {
        s->writer_idle = true;
        pthread_cond_wait(&s->queue_ready, &s->queue_lock);
        s->writer_idle = false;
        continue;
      }
      struct timespec second = in_s(1);
      if (pthread_cond_timedwait(&s->queue_ready, &s->queue_lock, &second) == ETIMEDOUT &&
          !s->head && !s->writable && !s->writing)
        probe_locked(s);
    }
    if (s->closing && s->prune_turn) { /* no more prunes: writers may go on */
      s->prune_turn = false;
      pthread_cond_broadcast(&s->committed_cond);
    }
    /* The prune's turn comes between two batches, or when none waits. */
    if ((s->prune_turn || (s->prune_due && !s->head)) && !s->closing && !s->writing && !s->holds) {
      prune_locked(s);
      continue;
    }
    /* Until the first row has gathered (a signal, a put into a queue a writer emptied
     * meanwhile, does not cut it short). */
    double left;
    while (!s->closing && s->head && (left = first_gathered_locked(s) - clock_mono_s()) > 0) {
      struct timespec until = in_s(left);
      pthread_cond_timedwait(&s->queue_ready, &s->queue_lock, &until);
    }
    if (s->writing || s->holds) { /* another writes, or rows are held: a signal comes */
      pthread_cond_wait(&s->committed_cond, &s->queue_lock);
      continue;
    }
    if (s->head)
      write_queued_locked(s, s->closing); /* what has gathered; all when closing */
    else if (s->closing)
      break; /* all written */
  }
  pthread_mutex_unlock(&s->queue_lock);
  return NULL;
}

/* Appends src (n bytes) at *at and returns where it went. */
static void *put_bytes(char **at, const void *src, size_t n) {
  void *where = *at;
  memcpy(where, src, n);
  *at += n;
  return where;
}

/* q takes the place of the queued row of its job, if one is still in the queue: that
 * one leaves the queue unwritten (q->absorbed, freed with q), and q keeps what it
 * lacks of it (its first row's insert and request; its record; whether it is
 * wanted). Only job rows; queue_lock held. */
static void replace_queued_locked(struct store *s, struct queued_row *q) {
  struct queued_row *prev = q->row.table == STORE_JOBS ? job_find(s, q->row.id) : NULL;
  if (!prev) return;
  queue_remove(s, prev);
  prev->replaced_by = q;
  q->absorbed = prev;
  q->wanted = q->wanted || prev->wanted;
  q->awaited = q->awaited || prev->awaited;
  /* Gathering since its job's first unwritten row: never after a row that names the
   * job (a dependent's), so never written after it either. */
  q->queued_at = prev->queued_at;
  struct store_row *r = &q->row;
  const struct store_row *p = &prev->row;
  r->create = r->create || p->create;
  if (!r->request) r->request = p->request, r->request_len = p->request_len;
  if (!r->record && !r->make_record)
    r->record = p->record, r->make_record = p->make_record, r->record_arg = p->record_arg;
  if (!r->n_parents) r->parents = p->parents, r->n_parents = p->n_parents;
}

int store_put(struct store *s, const struct store_row *r) {
  const char *type_s = r->type ? r->type : "", *state_s = r->state ? r->state : "";
  size_t client = strlen(r->client) + 1, type = strlen(type_s) + 1, state = strlen(state_s) + 1;
  size_t record = r->record ? strlen(r->record) + 1 : 0, request = r->request ? r->request_len : 0;
  size_t arg = !r->record && r->make_record ? r->record_arg_len : 0;
  size_t parents = r->n_parents > 0 ? (size_t)r->n_parents * sizeof *r->parents : 0;
  struct queued_row *q = malloc(sizeof *q + parents + arg + client + type + state + record +
                                request);
  if (!q) {
    log_warn("store: job %llu: out of memory", (unsigned long long)r->id);
    return -ENOMEM;
  }
  char *at = (char *)(q + 1); /* aligned as malloc's, for parents and record_arg first */
  q->row = *r;
  q->row.parents = parents ? put_bytes(&at, r->parents, parents) : NULL;
  q->row.n_parents = parents ? r->n_parents : 0;
  q->row.record_arg = arg ? put_bytes(&at, r->record_arg, arg) : NULL;
  if (!arg) q->row.make_record = NULL;
  q->absorbed = q->replaced_by = NULL;
  q->made = NULL;
  q->awaited = q->in_batch = false;
  q->journal_gen = JOURNAL_NONE;
  q->queued_at = clock_mono_s();
  q->row.client = put_bytes(&at, r->client, client);
  q->row.type = put_bytes(&at, type_s, type);
  q->row.state = put_bytes(&at, state_s, state);
  q->row.record = r->record ? put_bytes(&at, r->record, record) : NULL;
  q->row.request = r->request ? put_bytes(&at, r->request, request) : NULL;
  store_queue_lock(s);
  /* Wanted from the start: a shared store's rows (other nodes read them: a fleet's
   * claims follow the order of its rows), held rows (all in one transaction), and
   * rows other than jobs' (sweeps, buffers: their answers wait for them at once). */
  q->wanted = s->ops->shared || s->holds || r->table != STORE_JOBS;
  q->held = s->holds > 0;
  replace_queued_locked(s, q);
  /* The final row of a job whose client waits for it: its answer is about to want it,
   * and any commit meanwhile takes it (one commit fewer), the earlier rows it replaced
   * never written. */
  if (q->awaited && r->finished > 0) want_locked(s, q);
  /* The writer wakes once per batch: not while it gathers one, nor while it probes. */
  if (!s->head && s->writer_idle) pthread_cond_signal(&s->queue_ready);
  queue_append(s, q);
  last_put.store = s;
  last_put.ticket = q->ticket = ++s->queued;
  struct queued_row **bucket = ticket_bucket(s, q->ticket);
  q->ticket_next = *bucket;
  *bucket = q;
  pthread_mutex_unlock(&s->queue_lock);
  return 0;
}

int store_give_record(struct store *s, uint64_t ticket, char *record) {
  int rc = -ENOENT;
  store_queue_lock(s);
  struct queued_row *q = ticket ? ticket_find(s, ticket) : NULL;
  if (q && !q->in_batch && !q->replaced_by && !q->row.record && q->row.make_record) {
    q->row.record = q->made = record;
    rc = 0;
  }
  pthread_mutex_unlock(&s->queue_lock);
  if (rc) free(record);
  return rc;
}

uint64_t store_ticket(struct store *s) { return last_put.store == s ? last_put.ticket : 0; }

/* Whether a writer may take a batch now: not while another writes, rows are held, or
 * the prune's turn has come (the writer thread's, store_writer_main). queue_lock held. */
static bool may_write_locked(const struct store *s) {
  return !s->writing && !s->holds && !s->prune_turn;
}

/* The error of the failed transaction that held ticket's row (written or failed: no
 * longer queued), or 0 when it was written. queue_lock held. */
static int ticket_failed(const struct store *s, uint64_t ticket) {
  int err = 0;
  uint64_t kept = s->n_failed < FAILED_RANGES ? s->n_failed : FAILED_RANGES;
  for (uint64_t i = 0; i < kept && ticket && !err; i++) {
    const struct failed_range *f = &s->failed[(s->n_failed - 1 - i) % FAILED_RANGES];
    if (ticket >= f->from && ticket <= f->to) err = f->error;
  }
  /* Past the ring's memory: it may have failed, and is never said to be written. */
  if (!err && ticket && ticket <= s->failed_forgotten) err = s->error ? s->error : -EIO;
  return err;
}

/* Whether the row of ticket, or a later row of its job that replaced it, is in the
 * accept journal. queue_lock held. */
static bool ticket_journaled(struct store *s, uint64_t ticket) {
  for (const struct queued_row *q = ticket ? ticket_find(s, ticket) : NULL; q; q = q->replaced_by)
    if (q->journal_gen >= 0) return true;
  return false;
}

/* Whether q may go to the accept journal in place of a commit: a job's first row as it
 * was queued, or its final row (what answers wait for; what a restart needs), whose
 * replay never depends on the order of entries (replay_locked's rule); not a row
 * between (a running job's: a replayed first row would not go back over it), nor one
 * of rows that mean nothing apart (store_hold), nor one of a job that depends on
 * others (a job is never on disk before one it names). A row in the batch being
 * committed too, rather than wait for that whole commit, unless its record is still
 * to be made (the writer makes it outside the lock). queue_lock held. */
static bool journal_may_take(const struct store *s, const struct queued_row *q) {
  const struct store_row *r = &q->row;
  return s->journal && !s->journal_off && q->journal_gen == JOURNAL_NONE && !q->held && !s->holds &&
         r->table == STORE_JOBS && r->n_parents == 0 &&
         (r->finished > 0 || (r->create && !q->absorbed)) && (!q->in_batch || !r->make_record);
}

/* Appends q (journal_may_take) to the accept journal: encoded under queue_lock, written
 * outside it (other threads queue rows meanwhile), so q may have been replaced, or
 * committed, by then: its entry is then found by its ticket (a batch that has not
 * ended counts it), or counted as committed at once. Its commit is left to the
 * writer. Returns 0 when journaled; -ENOMEM (q untouched: commit it); or -EAGAIN when
 * the write failed, the journal now off (queue_lock was released: look again). Called
 * and returns with queue_lock held. */
static int journal_row(struct store *s, struct queued_row *q) {
  const struct store_row *r = &q->row;
  if (!r->record && r->make_record) q->row.record = q->made = r->make_record(r->record_arg);
  struct journal_entry e = {.id = r->id,
                            .created = r->created,
                            .finished = r->finished,
                            .create = r->create,
                            .client = r->client,
                            .type = r->type,
                            .state = r->state,
                            .record = r->record,
                            .request = r->request,
                            .request_len = r->request_len};
  size_t len;
  void *entry = journal_encode(s->journal, &e, &len);
  if (!entry) return -ENOMEM;
  uint64_t ticket = q->ticket;
  q->journal_gen = JOURNAL_WRITING;
  s->journal_users++;
  pthread_mutex_unlock(&s->queue_lock);
  int gen = journal_append(s->journal, entry, len);
  free(entry);
  store_queue_lock(s);
  s->journal_users--;
  struct queued_row *row = ticket_find(s, ticket); /* NULL: committed meanwhile */
  if (row) row->journal_gen = gen >= 0 ? (int8_t)gen : JOURNAL_NONE;
  /* Unwanted: no answer waits for its commit. A final row gathers no longer than
   * gather_ms (none of its job's rows comes after it): the queue stays short. */
  if (row && gen >= 0 && !row->in_batch) {
    row->wanted = false;
    if (row->row.finished > 0) row->awaited = false;
  }
  if (!row && gen >= 0 && !ticket_failed(s, ticket)) {
    journal_committed(s->journal, gen, 1);
  } else if (!row && gen >= 0) { /* its batch failed: the entry stays */
    journal_keep_locked(s);
  }
  pthread_cond_broadcast(&s->committed_cond); /* syncers of the same row, store_set_durability */
  if (gen < 0) {
    log_warn("store: the accept journal takes no more entries (%s); answers wait for commits",
             strerror(-gen));
    s->journal_off = true;
    return -EAGAIN;
  }
  s->rows_journaled++;
  return 0;
}

int store_sync(struct store *s, uint64_t ticket) {
  int err = 0;
  double since = 0;       /* when it found its row unwritten */
  bool journaled = false; /* durable in the journal, whatever its commit's fate */
  store_queue_lock(s);
  for (;;) {
    struct queued_row *q = row_holding(s, ticket);
    if (!q) break; /* written, or failed */
    if ((journaled = ticket_journaled(s, ticket))) break;
    if (q->journal_gen == JOURNAL_WRITING) { /* another syncer's write: its outcome */
      pthread_cond_wait(&s->committed_cond, &s->queue_lock);
      continue;
    }
    if (journal_may_take(s, q)) {
      int rc = journal_row(s, q);
      if ((journaled = rc == 0)) break;
      if (rc == -EAGAIN) continue;
    }
    if (since == 0) since = clock_mono_s();
    if (!q->in_batch) want_locked(s, q);
    if (!q->in_batch && may_write_locked(s))
      write_queued_locked(s, false); /* wanted and gathered rows, ours among them */
    else
      pthread_cond_wait(&s->committed_cond, &s->queue_lock);
  }
  if (!journaled) err = ticket_failed(s, ticket);
  if (since > 0) {
    s->syncs_waited++;
    s->sync_wait_s += clock_mono_s() - since;
  }
  pthread_mutex_unlock(&s->queue_lock);
  return err;
}

void store_flush(struct store *s) {
  store_queue_lock(s);
  uint64_t target = s->queued;
  while (holds_ticket_upto(s->head, target) || holds_ticket_upto(s->inflight, target)) {
    if (s->head && may_write_locked(s))
      write_queued_locked(s, true);
    else
      pthread_cond_wait(&s->committed_cond, &s->queue_lock);
  }
  pthread_mutex_unlock(&s->queue_lock);
}

void store_set_gather_ms(struct store *s, int ms, int awaited_ms) {
  store_queue_lock(s);
  s->gather_ms = ms;
  s->awaited_ms = awaited_ms;
  pthread_mutex_unlock(&s->queue_lock);
}

void store_await(struct store *s, uint64_t ticket) {
  store_queue_lock(s);
  struct queued_row *q = row_holding(s, ticket);
  if (q && !q->in_batch)
    q->awaited = true; /* the writer, asleep until the first row gathers, wakes early: harmless */
  pthread_mutex_unlock(&s->queue_lock);
}

void store_hold(struct store *s) {
  store_queue_lock(s);
  s->holds++;
  pthread_mutex_unlock(&s->queue_lock);
}

void store_release(struct store *s) {
  store_queue_lock(s);
  if (--s->holds == 0) {
    pthread_cond_broadcast(&s->committed_cond); /* flushers and the writer may go on */
    if (s->head) pthread_cond_signal(&s->queue_ready);
  }
  pthread_mutex_unlock(&s->queue_lock);
}

/* ---- the size bound: pruned by the writer between its batches ---- */

/* Jobs to delete to bring used bytes down to target, from the bytes per job over the
 * span of their ids (a little more than their count: the plan errs short, and the
 * next pass measures again). 0: no jobs. */
static uint64_t plan_locked(struct store *s, uint64_t used, uint64_t target) {
  int64_t span = s->ops->id_span_locked(s);
  if (span <= 0) return 0;
  uint64_t per_job = used / (uint64_t)span + 1;
  return (used - target) / per_job + 16;
}

/* The end of a prune: freed pages handled (after_prune_locked) and a line in the log.
 * New jobs are refused only while unfinished ones alone pass the bound (none finished
 * was left to delete); a prune that ran out of passes while writes went on leaves that
 * to the next check. */
static void prune_done_locked(struct store *s, uint64_t used, bool none_left) {
  s->prune_left = 0;
  if (s->ops->after_prune_locked) s->ops->after_prune_locked(s);
  /* An estimate errs high (PostgreSQL's counts an updated row whole): measured before
   * it refuses anything. */
  if (none_left && used > s->max_bytes && s->ops->used_bytes_exact_locked)
    used = s->ops->used_bytes_exact_locked(s);
  bool over = none_left && used > s->max_bytes;
  if (over != atomic_load(&s->over_limit) || s->pruned_jobs != s->prune_first)
    log_info("store: %llu bytes in use after pruning %llu finished job(s) (--max-db-bytes %llu)%s",
             (unsigned long long)used, (unsigned long long)(s->pruned_jobs - s->prune_first),
             (unsigned long long)s->max_bytes,
             over ? ": unfinished jobs alone pass it, new ones are refused" : "");
  atomic_store(&s->over_limit, over);
}

bool store_prune_step_locked(struct store *s, uint64_t chunk) {
  s->written_since_check = 0;
  if (!s->max_bytes) { /* the bound was lifted (store_limit) */
    s->prune_left = 0;
    return false;
  }
  uint64_t target = s->max_bytes / 10 * 9, used;
  if (!s->prune_left) { /* none under way: begins one past the bound */
    used = s->ops->used_bytes_locked(s, true);
    if (used <= s->max_bytes) {
      atomic_store(&s->over_limit, false);
      return false;
    }
    s->prune_first = s->pruned_jobs;
    s->prune_passes = 0;
    if (!(s->prune_left = plan_locked(s, used, target))) {
      prune_done_locked(s, used, true);
      return false;
    }
  }
  uint64_t n = chunk < s->prune_left ? chunk : s->prune_left;
  int deleted = s->ops->delete_oldest_locked(s, n);
  if (deleted > 0) s->pruned_jobs += (uint64_t)deleted;
  /* Fewer than asked: no finished job is left (or the delete failed). */
  bool none_left = deleted < 0 || (uint64_t)deleted < n;
  s->prune_left = none_left ? 0 : s->prune_left - n;
  if (s->prune_left) return true;
  /* The plan done: measured again, and planned again while writes keep it above the
   * target (a pass's rows may have come meanwhile); 64 passes at most. */
  used = s->ops->used_bytes_locked(s, true);
  if (used > target && !none_left && ++s->prune_passes < 64 &&
      (s->prune_left = plan_locked(s, used, target)))
    return true;
  prune_done_locked(s, used, none_left);
  return false;
}

int store_journal_held_locked(struct store *s, uint64_t **ids, size_t *n) {
  *ids = NULL;
  *n = 0;
  store_queue_lock(s); /* s->journal's; under the database lock, which queue_lock never waits for */
  int err = s->journal ? journal_held_ids(s->journal, ids, n) : 0;
  pthread_mutex_unlock(&s->queue_lock);
  return err;
}
