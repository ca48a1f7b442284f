/* The SQLite backend's checkpoint thread (store_sqlite.h says why): PASSIVE checkpoints
 * on a connection of its own as the WAL grows, which neither wait for commits nor make
 * them wait, but for one past a hard limit (ckpt_main). */
#include <errno.h>
#include <stdio.h>

#include "server/log.h"
#include "server/store/store_sqlite.h"

/* Whether the thread's checkpoint without s->lock was under way; returns once it has
 * ended. (The thread then waits for s->lock, which the caller holds.) */
static bool waited_for_unlocked(struct lite_ckpt *c) {
  pthread_mutex_lock(&c->lock);
  bool running = c->unlocked_running;
  while (c->unlocked_running) pthread_cond_wait(&c->unlocked_done, &c->lock);
  pthread_mutex_unlock(&c->lock);
  return running;
}

/* The writing connection's wal hook, after each commit (s->lock held, the commit's
 * locks released): notes the WAL's size and wakes the thread at its next mark.
 * Setting it ends SQLite's auto-checkpoint on that connection (sqlite3_wal_hook). At
 * twice the hard limit the thread has fallen behind (it got no CPU, or its checkpoint
 * waits for a slow disk, while the commits went on): this commit's thread checkpoints
 * then, as SQLite's auto-checkpoint would, under the database lock it holds, so that
 * the WAL keeps to its bound however busy the machine. While the thread's own
 * checkpoint runs, a second one is refused (SQLITE_BUSY): the commit waits for it to
 * end, then checkpoints what is left. */
static int on_commit(void *arg, sqlite3 *db, const char *name, int frames) {
  (void)name;
  struct lite_ckpt *c = arg;
  pthread_mutex_lock(&c->lock);
  if (frames < c->frames) { /* the WAL started over: a checkpoint had copied it all */
    c->next = c->threshold;
    c->hard = c->limit;
  }
  c->frames = frames;
  if (frames >= c->next) pthread_cond_signal(&c->wake);
  bool behind = c->hard > 0 && frames >= 2 * c->hard;
  pthread_mutex_unlock(&c->lock);
  if (behind)
    while (sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL) ==
               SQLITE_BUSY &&
           waited_for_unlocked(c))
      ;
  return SQLITE_OK;
}

/* One PASSIVE checkpoint on the thread's connection; logs a failure once. */
static void checkpoint(struct lite_ckpt *c, int *failed, int *log, int *copied) {
  int rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, log, copied);
  /* SQLITE_BUSY: another checkpoint (lite_probe_locked's) runs; a later commit wakes
   * the thread again. Other failures (a full disk) are the writes' to report. */
  if (rc != SQLITE_OK && rc != SQLITE_BUSY && rc != *failed)
    log_warn("store: a WAL checkpoint failed (%s); the WAL grows until one succeeds",
             sqlite3_errstr(rc));
  if (rc != SQLITE_BUSY) *failed = rc;
  if (rc != SQLITE_OK) *copied = *log = 0;
}

/* Checkpoints each time the WAL has grown by the threshold. A PASSIVE checkpoint copies
 * the frames committed before it began, and the WAL starts over (at the next commit)
 * only once one copied them all: under steady load a commit comes during nearly every
 * checkpoint, and the WAL would grow without end. Past the hard limit the thread
 * therefore takes the database lock (s->lock) for a second checkpoint, right after one
 * without it: no commit comes meanwhile, so it copies the frames the first left (a few)
 * and the WAL starts over; commits wait that long (two fsyncs, mostly) once per hard
 * limit, where before one waited for a whole auto-checkpoint per threshold. A WAL of
 * the threshold alone (hard limit as low, a small --max-db-bytes) skips the first. If
 * frames are still left (another process's reader holds an old snapshot), the limit
 * doubles, so that commits do not wait for a checkpoint each. */
static void *ckpt_main(void *arg) {
  struct store *s = arg;
  struct lite_ckpt *c = &lite_of(s)->ckpt;
  int failed = SQLITE_OK;
  pthread_mutex_lock(&c->lock);
  while (!c->stopping) {
    if (c->frames < c->next) {
      pthread_cond_wait(&c->wake, &c->lock);
      continue;
    }
    int frames = c->frames, log = 0, copied = 0;
    bool hard = frames >= c->hard, first = !hard || c->hard > c->threshold;
    c->next = frames + c->threshold;
    c->unlocked_running = first;
    pthread_mutex_unlock(&c->lock);
    if (first) {
      checkpoint(c, &failed, &log, &copied);
      pthread_mutex_lock(&c->lock);
      c->unlocked_running = false;
      pthread_cond_broadcast(&c->unlocked_done);
      pthread_mutex_unlock(&c->lock);
    }
    if (hard) {
      pthread_mutex_lock(&s->lock);
      checkpoint(c, &failed, &log, &copied);
      pthread_mutex_unlock(&s->lock);
    }
    pthread_mutex_lock(&c->lock);
    if (hard && copied < log) c->hard *= 2;
  }
  pthread_mutex_unlock(&c->lock);
  return NULL;
}

int lite_ckpt_start(struct store *s, const char *path, char *why, size_t why_len) {
  struct lite *l = lite_of(s);
  struct lite_ckpt *c = &l->ckpt;
  int rc = sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE, LITE_VFS);
  /* A read opens the connection's WAL, which a checkpoint needs. synchronous: a
   * checkpoint syncs the WAL before it copies and the database after, as the writing
   * connection's did under NORMAL and FULL alike. */
  if (rc == SQLITE_OK)
    rc = sqlite3_exec(c->db, "PRAGMA synchronous=NORMAL; SELECT count(*) FROM sqlite_schema;", NULL,
                      NULL, NULL);
  if (rc != SQLITE_OK) {
    snprintf(why, why_len, "the checkpoints' connection: %s",
             c->db ? sqlite3_errmsg(c->db) : "out of memory");
    return c->db ? lite_errno(c->db, rc) : -ENOMEM;
  }
  sqlite3_wal_hook(l->db, on_commit, c);
  if (pthread_create(&c->thread, NULL, ckpt_main, s) != 0) {
    sqlite3_wal_hook(l->db, NULL, NULL);
    snprintf(why, why_len, "cannot start the store's checkpoint thread");
    return -EAGAIN;
  }
  c->started = true;
  pthread_setname_np(c->thread, "gpulab-ckpt");
  return 0;
}

void lite_ckpt_stop(struct lite *l) {
  struct lite_ckpt *c = &l->ckpt;
  if (c->started) {
    pthread_mutex_lock(&c->lock);
    c->stopping = true;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->thread, NULL);
    sqlite3_wal_hook(l->db, NULL, NULL);
    c->started = false;
  }
  sqlite3_close(c->db); /* NULL: a no-op */
  c->db = NULL;
}

void lite_ckpt_threshold(struct lite *l, int frames, int limit) {
  struct lite_ckpt *c = &l->ckpt;
  pthread_mutex_lock(&c->lock);
  c->threshold = c->next = frames;
  c->hard = c->limit = limit;
  pthread_mutex_unlock(&c->lock);
}
