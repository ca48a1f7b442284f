/* Private to the engine (engine.c, engine_submit.c, engine_run.c, engine_buffers.c): its structures. One mutex,
 * engine.lock, guards every field below except where a comment says otherwise. */
#ifndef GPULAB_ENGINE_PRIV_H
#define GPULAB_ENGINE_PRIV_H

#include <pthread.h>
#include <stdatomic.h>

#include "server/engine/engine.h"
#include "server/engine/gate.h"
#include "server/engine/sched.h"
#include "server/lock_wait.h"

/* A buffer: an upload, or a job's output. Reference counted under the lock by the
 * table (while listed), by the job that produced it (until it ends) and by every
 * job that reads it (until it ends). */
struct ebuf {
  int refs;
  uint64_t id; /* 0 while not listed (an output nobody kept) */
  bool listed;
  struct exp_shape shape;
  enum exp_dtype dtype; /* F32, or the producer's out_dtype (a histogram's counts: U32) */
  struct backend_buffer *buf;
  int device;
  struct job *producer; /* referenced, for its done fence; NULL for an upload */
  int in_use;           /* unfinished jobs that read it */
  char client[64];
  double created_at;
  struct engine_buffer_origin origin; /* of an upload */
  uint64_t record_ticket;             /* on_buffer_change's, when it was listed */
};

struct job {
  atomic_int refs;
  atomic_bool cancel_requested;
  struct backend *backend; /* of the device it ran on, for the fence; NULL before */
  uint64_t id;
  enum job_state state;
  struct exp_spec spec;
  struct engine_job_request req; /* as asked; spec above is the resolved one */
  struct sched_item item;
  struct sched_client *sched_client;

  struct job *parents[ENGINE_MAX_PARENTS]; /* referenced */
  int n_parents;
  int deps_pending;      /* parents not yet issued (finished, with host_sync) */
  struct job **children; /* referenced until this job settles */
  int n_children, cap_children;
  struct engine_watch *watches;           /* pending on it (through job_next) */
  struct job *input_from[EXP_MAX_INPUTS]; /* slot fed by this parent's output */
  /* Referenced while unfinished: by input slot, or by a problem's input. */
  struct ebuf *inputs[EXP_MAX_JOB_BUFFERS];

  bool issued;
  struct backend_fence *done; /* freed with the job */
  struct ebuf *output;        /* referenced until the job ends */
  uint64_t output_buffer;     /* listed id when kept */

  double created_at, started_at, issued_at, finished_at;
  int device, lane;
  struct exp_result *result;
  char error_code[32];
  char error_message[256];
  /* A running job whose parent failed: it ends failed with this, not canceled. */
  char parent_failure[256];
  /* A running job stopped by the engine's shutdown (past its grace): it ends failed
   * `interrupted`, not canceled as if its owner had canceled it. */
  bool interrupted;
  /* engine_job_withdraw: nothing more is recorded of it (read without the lock too:
   * engine_unlock) */
  atomic_bool withdrawn;
  /* Its rows for on_job_change, numbered under the lock in the order of its states
   * (the first is rows 0); each is queued once the lock is released, by the thread
   * that changed the state (engine_unlock), and only after the rows before it:
   * rows_queued counts those queued, so that rows made by several threads reach the
   * store in order, and none is made under the lock. */
  unsigned rows_taken;            /* under the lock */
  atomic_uint rows_queued;        /* <= rows_taken */
  _Atomic uint64_t record_ticket; /* the store's ticket of its last queued row */
  _Atomic(char *) doc;            /* its document once its final row is queued (owned) */
  /* Final, with its rows queued: nothing in its view changes any more, which
   * job_get_view then reads without the lock (an answer's, a listing's). */
  atomic_bool view_final;
};

struct worker {
  struct engine *engine;
  int device, lane;
  pthread_t thread;
  bool idle; /* sleeping for work (lock held to read) */
  bool lent; /* its lane runs a job on another thread (engine_run_inline) */
};

struct engine {
  pthread_mutex_t lock;
  /* Per device: its queue gained a job (one worker is woken), or stopping (all). */
  pthread_cond_t work_ready[SCHED_MAX_QUEUES];
  pthread_cond_t timer_wake; /* a watch was added, or stopping */
  pthread_cond_t recorded;   /* a job's row was queued (job.rows_queued), while row_waiters */
  atomic_int row_waiters;    /* threads waiting on recorded */
  atomic_ullong row_waits;   /* engine_counts' */
  bool stopping, stopped;
  bool paused;    /* engine_pause: no job starts */
  double grace_s; /* the shutdown's grace, for the message of jobs it interrupted */

  struct backend *const *devices;
  struct gate **gates; /* one per device */
  int n_devices;
  struct engine_config cfg;

  struct job **jobs; /* sorted by id: ids only grow */
  int n_jobs, cap_jobs;
  uint64_t next_id;
  struct sched *sched;
  int n_queued;
  int running[SCHED_MAX_QUEUES]; /* per device */

  struct ebuf **buffers; /* listed, sorted by id */
  int n_buffers, cap_buffers;
  uint64_t next_buffer_id;
  uint64_t ids_reserved[2]; /* enum engine_ids: ids up to these are recorded as used */
  uint64_t first_ids[2];    /* this run's first ids (set once) */

  struct events *events; /* has its own lock; published to under ours */
  /* Pending watches, every job's (through next and prev): the timer thread walks them
   * for deadlines only when it wakes; a job's end takes its own (job.watches) to due,
   * run by the thread that ended it, or else by the timer thread, which engine_unlock
   * wakes for them. timer_until: when the timer thread will wake (0 while awake). */
  struct engine_watch *watches, *due;
  double timer_until;
  struct worker *workers;
  int n_workers;
  uint64_t ran_inline;          /* jobs engine_run_inline ran */
  struct lock_waits lock_waits; /* engine_lock's */
  pthread_t timer;
};

/* engine.c: takes the lock, counting the waits for it (engine_counts: /metrics). */
void engine_lock(struct engine *e);
/* engine.c: releases the lock, then tells on_job_change of the state changes this
 * thread made while it held it (publish_state_locked), each job's in turn. Every
 * unlock after a state may have changed is this one (never a wait on a condition
 * variable in between), before watches run, so an answer waits for its job's row. */
void engine_unlock(struct engine *e);

/* engine.c, lock held: */
struct job *find_locked(struct engine *e, uint64_t id); /* in the table, or NULL */
/* Makes room in the table for n more jobs (pruning finished ones first): 0 or -ENOMEM. */
int table_reserve_locked(struct engine *e, int n);
void table_insert_locked(struct engine *e, struct job *job); /* room reserved */
void table_remove_locked(struct engine *e, struct job *job); /* drops the table's reference */
/* Joins the job (all parents ready) to its device's queue, or fails it when an
 * input it needs never came. wake: a worker is woken for it (engine_submit_inline's
 * job: none, its caller runs it or wakes one). */
void make_queued_locked(struct engine *e, struct job *job, bool wake);
/* Wakes a worker of job's device if job is queued. */
void wake_for_locked(struct engine *e, struct job *job);
/* Takes a job out of the queue or the waiting set; it no longer counts as pending. */
void leave_pending_locked(struct engine *e, struct job *job);
void publish_state_locked(struct engine *e, struct job *job);
/* engine_submit.c: makes sure id of kind is reserved (engine_config.reserve_ids).
 * Returns 0 or the callback's error, with err filled when err is not NULL. */
int reserve_id_locked(struct engine *e, enum engine_ids kind, uint64_t id,
                      struct engine_error *err);
/* Ends a job: final state, buffers released, children told, listeners due. */
void end_job_locked(struct engine *e, struct job *job, enum job_state state, const char *code,
                    const char *message);
/* A parent got issued (finished: or finished, for host_sync children). */
void parent_ready_locked(struct engine *e, struct job *parent, bool finished);
/* Moves due watches (of jobs that ended, past their deadline, or every one once
 * stopped) to *fired; run them with run_watches once the lock is released. Walks every
 * pending watch: the timer thread's. */
void collect_due_watches(struct engine *e, double now, struct engine_watch **fired);
/* Moves the watches of jobs that ended (e->due) to *fired, for the caller to run
 * after its unlock. */
void take_due_watches_locked(struct engine *e, struct engine_watch **fired);
void run_watches(struct engine_watch *fired);
/* job ended: its watches are due (run by take_due_watches_locked's caller, or the timer). */
void job_watches_due_locked(struct engine *e, struct job *job);
void *engine_timer_main(void *arg); /* engine_watch.c: the timer thread */
/* job's view as it is now (the lock held). */
void job_view_locked(const struct engine *e, struct job *job, struct job_view *v);
/* Waits, the lock held, until upto rows of job are queued (engine_rows.c). */
void wait_for_rows_locked(struct engine *e, struct job *job, unsigned upto);

/* engine_run.c: a worker thread's body (arg: its struct worker). */
void *engine_worker_main(void *arg);

/* engine_buffers.c, lock held: */
void ebuf_ref_locked(struct ebuf *b);
void ebuf_unref_locked(struct engine *e, struct ebuf *b);
struct ebuf *ebuf_find_locked(struct engine *e, uint64_t id);
void ebuf_unlist_locked(struct engine *e, struct ebuf *b); /* drops the table's reference */
/* Wraps a job's output; listed (given an id) when kept. NULL when out of memory. */
struct ebuf *ebuf_for_output_locked(struct engine *e, struct job *job, struct backend_buffer *buf);
void ebuf_free_all_locked(struct engine *e);

#endif
