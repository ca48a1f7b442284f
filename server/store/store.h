/* Durable job records in SQLite (WAL) or PostgreSQL: every accepted job, every change
 * of state, and a finished job's whole record (as GET /jobs/{id} shows it). The HTTP layer
 * waits for a job's first row (store_sync) before it answers, and refuses the job
 * when that row could not be written, so what a client was told is on disk. After a
 * crash or a restart gpulabd reads the jobs that had not finished back from here.
 * Ids handed out are recorded ahead (store_ids_reserve), so that none is handed out
 * twice, even after a failed write and a crash. SQLite: one gpulabd per database (the
 * file is locked). PostgreSQL: several gpulabd may share one database; each reserves
 * its ids from the stored mark it last saw, so two never hand out the same id (a node
 * whose mark another moved takes its next block past theirs: store_ids_take); which
 * node runs which job (claims, leases) is a fleet's (fleet.h), and a node's writes of
 * a job's row are fenced by it (store_set_node). Calls are serialized inside; safe
 * from any thread.
 *
 * Errors are negative errnos: -ENOSPC (the disk is full), -EFBIG (a file size limit,
 * RLIMIT_FSIZE), -EDQUOT, -EROFS (read-only), -EIO (anything else, a corrupted file
 * too), -ENOMEM. */
#ifndef GPULAB_STORE_H
#define GPULAB_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

enum store_table { STORE_JOBS, STORE_SWEEPS, STORE_BUFFERS };

/* One job's row. request is opaque bytes (what it takes to run the job again), read
 * back only while the job is unfinished (store_unfinished): SQLite drops it with a
 * row that has `finished`. A sweep's row (table STORE_SWEEPS) has only id, client,
 * created and record (its description and job ids as JSON text, written whole each
 * time). A buffer's row (STORE_BUFFERS: store_buffer_put's) has id, client, created
 * and create (made; false: gone). */
struct store_row {
  enum store_table table;
  uint64_t id;
  const char *client, *type, *state;
  double created, finished; /* unix seconds; 0 = not yet */
  const void *request;
  size_t request_len;
  const char *record; /* the job as JSON text, or NULL to keep the stored one */
  /* Or, with record NULL, a record made only when the row is written: make_record(arg)
   * on a copy of record_arg (record_arg_len bytes, no pointers in it), malloc'd text
   * or NULL; never called if a later row of the job replaces this one first. */
  char *(*make_record)(const void *arg);
  const void *record_arg;
  size_t record_arg_len;
  bool create; /* the job's first row (inserted, or replacing a restored job's);
                         else an update of a row that exists, and nothing if none does */
  /* A first row's: the jobs it depends on (a fleet claims it only where they run, or
   * once they ended: fleet.h). Kept by PostgreSQL only. */
  const uint64_t *parents;
  int n_parents;
};

/* Opens (creating) path; ":memory:" keeps nothing. Refuses a database it could not
 * keep jobs in: one that opens read-only, fails PRAGMA quick_check, or cannot take a
 * write (one is made here). A libpq URI (postgresql://user@host:port/dbname, or
 * postgres://) opens PostgreSQL instead: the schema is created or migrated (its
 * version in table gpulab_schema), and a lost connection is made again by the next
 * call (meanwhile writes fail -EIO, and store_check says so); a full disk is -ENOSPC.
 * Returns 0, or a negative errno with err (which names path, without a password, and
 * says why). */
int store_open(const char *path, struct store **out, char *err, size_t err_len);
void store_close(struct store *s); /* NULL is a no-op */

/* Queues row (copied) to be inserted or updated by the store's writer thread, which
 * commits what is queued in one transaction. Never waits for the database. A job's row
 * still queued when a later one of the same job comes is replaced by it (one write:
 * a tiny job's first row and its final one usually meet in the queue); the later
 * row keeps what it lacks of the earlier (its request, its record when it has none).
 * Returns 0 or -ENOMEM (logged). Write errors are logged by the writer and reported
 * by store_sync and store_status. */
int store_put(struct store *s, const struct store_row *row);

/* The ticket of the last row the calling thread queued with store_put (0 if none):
 * for a caller whose rows were queued for it on its own thread (the engine's
 * on_job_change, while it accepted a job) and that must know they are on disk. */
uint64_t store_ticket(struct store *s);
/* record (JSON text, malloc'd, taken over) becomes the record of the row of ticket, a
 * row queued with make_record and still waiting in the queue: for a caller that made
 * the same text anyway (one document built, not two). Returns 0, or -ENOENT when that
 * row has left the queue for its batch, was replaced by a later row of its job, or
 * has its record (record is freed then, and the row makes its own). */
int store_give_record(struct store *s, uint64_t ticket, char *record);
/* Waits until the row of ticket (or the later row of its job that replaced it in the
 * queue) is durable. On SQLite with durability NORMAL, a job's first or final row
 * (not one held, nor one of a job that depends on others) is appended to the accept
 * journal beside the database (journal.h: one write, as durable as such a commit)
 * and committed later with the rows gathered meanwhile; a restart applies what the
 * database lacks. Else it waits until the row has been written or has failed, writing
 * it now when no other write is under way: with the other rows waited for, and the first rows of the jobs it depends on
 * (never a job on disk before one it names), but no row nobody waits for until it has
 * gathered (store_set_gather_ms: most of a short job's rows are replaced by its last
 * one before then; the writer thread writes them then, or the next commit does).
 * Returns 0 (written, or ticket 0), or the negative errno of the failed transaction
 * that held it. */
int store_sync(struct store *s, uint64_t ticket);
/* How long rows nobody waits for gather before a commit takes them (ms, default 1): a
 * crash loses the rows of the last ms, none a client was told of (store_sync); and
 * those of a job whose client waits for its end (awaited_ms, default STORE_AWAITED_MS;
 * store_await). Tests set them to tell the rules apart without racing a clock. */
void store_set_gather_ms(struct store *s, int ms, int awaited_ms);
/* The row of ticket, still queued, is a job's whose client waits for its end (a
 * waited-for answer, not yet given): it and its job's later rows gather
 * STORE_AWAITED_MS (store_set_gather_ms's awaited_ms) rather than gather_ms, because
 * the job's final row (a row with `finished`), which that answer waits for, most
 * often replaces them first: under load a tiny job waits for a lane longer than
 * gather_ms, and would be written twice. That final row is wanted as soon as it is
 * queued: any commit takes it, and the answer most often finds it written. A crash
 * meanwhile loses only what no client was told. A row already written is left alone. */
#define STORE_AWAITED_MS 100
void store_await(struct store *s, uint64_t ticket);
/* Waits until every row queued before this call is written or failed, writing every
 * queued row. Reads below do this first, so they see every earlier store_put. */
void store_flush(struct store *s);
/* Rows queued between store_hold and store_release are written in one transaction,
 * all or none (the writer and flushers wait meanwhile): for rows that mean nothing
 * apart (a sweep and its jobs). Hold briefly; holds nest. */
void store_hold(struct store *s);
void store_release(struct store *s);

/* 0 while the store takes writes; else the negative errno of its last failed
 * write. Cheap: a caller asks before it accepts anything. A failing store tries a
 * small write of its own once a second and takes writes again once one succeeds. */
int store_check(struct store *s);

struct store_status {
  const char *backend;    /* "sqlite" or "postgresql" */
  bool writable;          /* store_check(s) == 0 */
  int error;              /* the last failed write's errno (negative), 0 if none yet */
  char message[200];      /* the database's words for it, "" if none */
  uint64_t write_errors;  /* transactions that failed, since start */
  uint64_t file_bytes;    /* the database file and its WAL on disk (PostgreSQL: the
                              tables with their indexes, on the server) */
  uint64_t used_bytes;    /* the database's pages in use (what --max-db-bytes bounds;
                              PostgreSQL: the live rows of jobs) */
  uint64_t max_bytes;     /* store_limit's bound, 0 for none */
  uint64_t pruned_jobs;   /* finished jobs deleted to keep within it, since start */
  const char *durability; /* PRAGMA synchronous as the database reports it: "normal",
                              "full" (store_set_durability), or "off", "extra";
                              PostgreSQL: "full" (its default) or "normal" */
  /* Group commit's work since start: rows queued (store_put), rows written (the rest
   * were replaced in the queue by a later row of their job), transactions committed,
   * and the store_sync calls that found their row unwritten, with the seconds they
   * spent until it was (their own commit included). */
  uint64_t rows_queued, rows_written, commits, syncs_waited;
  uint64_t rows_journaled; /* store_sync's rows that went to the accept journal */
  double sync_wait_s;
  double commit_s; /* time spent writing batches (one at a time): how busy the writing is */
  uint64_t queue_lock_waits; /* times a thread found the row queue's lock taken, */
  double queue_lock_wait_s;  /* and the seconds it waited for it */
};

/* The name this gpulabd records on the jobs it creates (copied; NULL or "": none):
 * PostgreSQL's jobs.node, for a fleet's nodes sharing one database (--node), whose
 * unfinished jobs store_unfinished reads back, and the fence of its writes: a job's
 * row is updated only while it is this node's and unfinished (fleet.h). SQLite, one
 * box's file, keeps none. Call before rows are queued. */
void store_set_node(struct store *s, const char *node);

/* How much a commit survives (store_open starts NORMAL). NORMAL: WAL with
 * synchronous=NORMAL, no fsync per commit: every commit survives gpulabd crashing
 * (kill -9, a segfault, the OOM killer), and a power loss or kernel panic may lose
 * the commits since the last WAL checkpoint (never a corrupted database); the accept
 * journal (store_sync), unsynced too, likewise. FULL: an fsync of the WAL per commit
 * (a group commit, so one per batch of rows): a commit survives a power loss too, if
 * the disk honors fsync; the journal closes for good (what it held committed first). PostgreSQL starts FULL (its
 * synchronous_commit=on: the WAL flushed before a commit is answered); NORMAL sets
 * synchronous_commit=off for the session: a commit survives gpulabd crashing, and a
 * crash of the server or its machine may lose the last few hundred milliseconds of
 * commits (never a corrupted database). Returns 0 or -EIO. */
enum store_durability { STORE_DURABILITY_NORMAL, STORE_DURABILITY_FULL };
int store_set_durability(struct store *s, enum store_durability d);

/* Keeps the database's pages in use within max_bytes (0: no bound): once a batch
 * has gone past it, the oldest finished jobs are deleted until it holds 90% of it
 * (free pages go back to the file system where the database allows it: new ones
 * are made with incremental auto-vacuum). Checked now, and as rows are written.
 * When finished jobs are not enough, store_check says -ENOSPC (new jobs are
 * refused) until they are. The WAL is kept to a sixteenth of it too. PostgreSQL:
 * the bound is on the jobs' live rows (what pruning frees; the table's size on disk
 * only shrinks with a VACUUM FULL). */
void store_limit(struct store *s, uint64_t max_bytes);
void store_status(struct store *s, struct store_status *out);

/* The stored record (JSON text, malloc'd: the caller frees it), or NULL. */
char *store_record(struct store *s, uint64_t id);

/* Records of jobs with ids below before_id (0: any), newest first, matching the
 * filters (NULL: any), at most limit: fn(arg, id, record) for each, called after the
 * database is released (fn may call into the engine). Returns how many. */
int store_list(struct store *s, uint64_t before_id, const char *state, const char *type,
               const char *client, int limit,
               void (*fn)(void *arg, uint64_t id, const char *record), void *arg);

/* Every job not finished (queued, waiting, running), oldest first:
 * fn(arg, id, state, request, request_len). PostgreSQL: those of this gpulabd's node
 * (store_set_node) only; another node's are its own to recover. Returns how many, or
 * -1. */
int store_unfinished(struct store *s,
                     void (*fn)(void *arg, uint64_t id, const char *state, const void *request,
                                size_t request_len),
                     void *arg);

/* DELETE of a job this gpulabd does not hold (a fleet's other node's, PostgreSQL):
 * one queued and claimed by no node is canceled in the store at once, its record
 * replaced by canceled_record (JSON text); one a node holds gets a cancel request
 * that the node's fleet applies (fleet.h). Written at once. Returns 0 (canceled), 1
 * (requested), -EALREADY (finished), -ENOENT (no such job; SQLite: always, every
 * unfinished job is in memory), or a negative errno of the write. */
int store_job_cancel(struct store *s, uint64_t id, const char *canceled_record);

/* The advertised URL (--advertise) of the live node of a fleet, not this one, that
 * holds job id, into url: where a chain on that job can run. 0, or -ENOENT (the job
 * is this node's, nobody's, a dead node's, or unknown; SQLite: always). */
int store_job_elsewhere(struct store *s, uint64_t id, char *url, size_t url_len);

/* Buffers live in the memory of the node that made them (an upload, a job's kept
 * output); on PostgreSQL their ids and homes are recorded (table buffers), so that the
 * fleet's other nodes can say where one is. */

/* Buffer id made (listed: uploaded, or a job's output kept) by this node
 * (store_set_node), for client at unix time created; or gone (listed false: deleted,
 * freed). Queued as store_put queues a job's row, so that the engine may call it under
 * its lock. Returns the row's ticket: store_sync it before anyone is told of the
 * buffer (a redirect from another node right after finds it). 0 when nothing was
 * queued: SQLite (one box: no fleet to tell), or out of memory (logged). */
uint64_t store_buffer_put(struct store *s, uint64_t id, const char *client, double created,
                          bool listed);

/* Where buffer id lives when another node of a fleet made it. */
struct store_buffer_home {
  char node[64];   /* its name (--node) */
  char url[256];   /* where it is (--advertise) */
  char client[64]; /* whose buffer it is */
};
/* 0: a live node, not this one, holds buffer id (home filled: its request goes to
 * home->url). -EHOSTDOWN: the node that made it is dead (its lease ran out, or it was
 * taken over): the buffer was lost with it (home->node and client filled). -ENOENT:
 * the buffer is this node's, unknown, or deleted; SQLite: always. */
int store_buffer_elsewhere(struct store *s, uint64_t id, struct store_buffer_home *home);

/* This node's buffers of a previous run (a crash left their rows; they lived in its
 * memory) are forgotten: at start-up, before the node makes any. Written at once.
 * Returns 0 or a negative errno (logged); SQLite: 0, nothing to forget. */
int store_buffers_forget(struct store *s);

/* Whether other gpulabd may read this store's rows (PostgreSQL: a fleet's nodes). */
bool store_shared(const struct store *s);

/* Whether job id's row is this gpulabd's (store_set_node) and unfinished: what a
 * fleet's node that was taken over keeps running (fleet.h). False when the row is
 * another node's, finished, absent, or cannot be read; SQLite: always true. */
bool store_job_held(struct store *s, uint64_t id);

uint64_t store_max_id(struct store *s); /* 0 when empty */

/* The newest `limit` sweeps, oldest first: fn(arg, id, client, created, record).
 * Returns how many. */
int store_sweeps(struct store *s, int limit,
                 void (*fn)(void *arg, uint64_t id, const char *client, double created,
                            const char *record),
                 void *arg);
uint64_t store_max_sweep_id(struct store *s); /* 0 when none */
/* A fleet's sweeps, whichever node made them (PostgreSQL): newest first, up to limit
 * with ids below before_id (0: no bound), of client only (NULL: everyone's), each
 * fn(arg, id, client, created, record). Returns how many, or -ENOTSUP on SQLite (a
 * box's sweeps are all in its memory: sweeps.h), -EIO when it cannot be read. */
int store_sweeps_page(struct store *s, uint64_t before_id, const char *client, int limit,
                      void (*fn)(void *arg, uint64_t id, const char *client, double created,
                                 const char *record),
                      void *arg);

/* Ids of the sequence name ("jobs", "buffers", "sweeps") up to upto are recorded as
 * handed out: a later run starts above them (store_ids_floor). Written at once, in
 * a transaction of its own. Returns 0 or a negative errno (PostgreSQL: -EBUSY when
 * another gpulabd moved the mark since this one read or set it). */
int store_ids_reserve(struct store *s, const char *name, uint64_t upto);
uint64_t store_ids_floor(struct store *s, const char *name); /* 0 when never reserved */
/* store_ids_reserve for the ids from *from up to upto, about to be handed out. On
 * PostgreSQL, when another gpulabd sharing the database took ids past this one's
 * mark, the block moves past every id taken, its length kept: *from is then its first
 * id (and upto as far on). SQLite: store_ids_reserve. Returns 0 or a negative errno. */
int store_ids_take(struct store *s, const char *name, uint64_t *from, uint64_t upto);

/* Deletes finished jobs that finished before unix time `before`, sweeps made
 * before it (and all but the newest 1000), and the rows of buffers made before it by
 * nodes that are dead (PostgreSQL: kept until then to say they were lost). Returns
 * how many jobs. */
int store_prune(struct store *s, double before);

/* ---- users' kernels (store_kernels.c): their table beside the jobs ---- */

/* One version of a kernel as its owner sent it, with its compile report and image, so
 * that a restart neither loses nor recompiles it. A kernel is its versions: the same
 * owner, name and experiment sent again make a new version. Each version has an id of
 * its own (the backends' table and a job's variant name it); the kernel's id is its
 * first version's, kept when that version is deleted. */
struct store_kernel {
  int64_t id;        /* the version's own id */
  int64_t kernel_id; /* the kernel's: its first version's id */
  int version;       /* 1, 2, ... within the kernel; never reused */
  int versions;      /* store_kernel_list only: how many versions the kernel has */
  char owner[64], name[64], experiment[80]; /* a problem's: "problem:<name>" */
  bool is_public;
  double created; /* unix seconds */
  char source_sha[65];
  char *source; /* the CUDA C as sent */
  char *spec;   /* JSON text: entry, block, tile or grid, shared_bytes, options */
  char *report; /* JSON text: the compile report (no image) */
  void *image;  /* the CUBIN, or NULL (a listing) */
  size_t image_bytes;
  /* The PTX NVRTC gave with the CUBIN (NUL-terminated), or NULL: a listing, or a
   * version stored before gpulab kept PTX. */
  char *ptx;
};

/* Inserts k (borrowed; its id, version and versions ignored) and sets *id and
 * *version, written at once: a kernel is stored as durably as a job, and refused as
 * one is (store_check first). k->kernel_id 0: a new kernel (version 1, its id the
 * version's); else a new version of that kernel, numbered after its newest (-ENOENT
 * when it has none left). Returns 0 or a negative errno (store.h's list), the store
 * then failing as after any write. Ids are never reused, also after a delete. */
int store_kernel_insert(struct store *s, const struct store_kernel *k, int64_t *id, int *version);
/* Version id into *out (strings, image and PTX malloc'd: store_kernel_clear it). 0,
 * -ENOENT, -EIO, -ENOMEM. */
int store_kernel_get(struct store *s, int64_t id, struct store_kernel *out);
/* Deletes version id, at once. 0, -ENOENT, or a write's negative errno. */
int store_kernel_delete(struct store *s, int64_t id);
/* Deletes every version of kernel kernel_id, at once. 0, -ENOENT, or a write's
 * negative errno. */
int store_kernel_drop(struct store *s, int64_t kernel_id);
/* fn(arg, k) for every kernel owner may see (its own and the public ones; owner NULL:
 * all) of experiment (NULL: any), newest kernel first, each as its newest version with
 * k->versions set, without source, image or PTX; k is valid during the call, which comes
 * after the database is released. Returns how many, or -EIO / -ENOMEM. */
int store_kernel_list(struct store *s, const char *owner, const char *experiment,
                      void (*fn)(void *arg, const struct store_kernel *k), void *arg);
/* fn(arg, k) for every version of kernel kernel_id, oldest first, as store_kernel_list
 * (no source, image or PTX). Returns how many (0: no such kernel), or -EIO / -ENOMEM. */
int store_kernel_versions(struct store *s, int64_t kernel_id,
                          void (*fn)(void *arg, const struct store_kernel *k), void *arg);
/* The ids of owner's kernels named name of experiment, newest first: up to max into
 * ids. Returns how many there are (may exceed max), or -EIO. */
int store_kernel_named(struct store *s, const char *owner, const char *experiment, const char *name,
                       int64_t *ids, int max);
/* How many kernels (not versions) owner has stored, and their newest versions' source
 * bytes. 0 or -EIO. */
int store_kernel_count(struct store *s, const char *owner, int *n, size_t *source_bytes);
void store_kernel_clear(struct store_kernel *k); /* frees what a read allocated */

/* ---- problems users define (server/service/problems.h), a row per version ---- */

/* A problem's name is the one owner's: its first definition takes it. */
struct store_problem {
  int64_t id;  /* the version's own id */
  int version; /* 1, 2, ... within the name; never reused */
  char owner[64], name[64];
  bool is_public;
  bool deleted; /* hidden, and refusing new jobs; its versions stay readable */
  double created;
  char *definition; /* JSON text: the canonical definition (api/problem_def.h) */
  char *report;     /* JSON text: the reference's compile report (no image) */
  void *image;      /* the reference's CUBIN, or NULL (a listing) */
  size_t image_bytes;
};

/* Inserts p (borrowed; id, version and deleted ignored) as the next version of its name
 * (1 for a new name), written at once and refused as a job is (store_check first);
 * sets *id and *version. -EEXIST when another owner has the name; else as
 * store_kernel_insert. A name deleted before is shown again from this version on. */
int store_problem_insert(struct store *s, const struct store_problem *p, int64_t *id, int *version);
/* Version `version` of name (0: its newest) in full into *out (store_problem_clear it).
 * 0, -ENOENT, -EIO, -ENOMEM. */
int store_problem_get(struct store *s, const char *name, int version, struct store_problem *out);
/* fn(arg, p) without image, after the database is released: name NULL, the newest
 * version of every name, names in order; else every version of name, oldest first.
 * Returns how many, or -EIO / -ENOMEM. */
int store_problem_each(struct store *s, const char *name,
                       void (*fn)(void *arg, const struct store_problem *p), void *arg);
/* Marks every version of name deleted, at once. 0, -ENOENT, or a write's errno. */
int store_problem_delete(struct store *s, const char *name);
void store_problem_clear(struct store_problem *p); /* frees what a read allocated */

#endif
