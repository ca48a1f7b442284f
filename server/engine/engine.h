/* The job engine: the job and buffer tables, fair queues, one worker per lane of
 * each device, dependencies (children issued behind their parents' fences),
 * exclusive timed windows, cancellation, and the events and watches the HTTP layer
 * listens to. Knows jobs, buffers, backends and threads; not JSON, not HTTP.
 *
 * Ownership: jobs are reference counted. The engine's table holds one reference
 * until the job is pruned; every `struct job *` returned to a caller carries a new
 * reference that the caller drops with job_unref. A finished job never changes
 * again, so its result may be read without locks while a reference is held. */
#ifndef GPULAB_ENGINE_H
#define GPULAB_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include "kernels/backends/backend.h"
#include "kernels/core/experiment.h"
#include "server/engine/events.h"

enum job_state {
  JOB_QUEUED,
  JOB_WAITING,
  JOB_RUNNING,
  JOB_DONE,
  JOB_FAILED,
  JOB_CANCELED,
  JOB_STATE_COUNT
};

const char *job_state_name(enum job_state state);
int job_state_from_name(const char *name); /* -1 if unknown */
static inline bool job_state_final(enum job_state s) { return s >= JOB_DONE; }

#define ENGINE_MAX_PARENTS 16

struct job;
struct engine;

/* What a client asks for. spec's inputs name buffers or jobs by id; the engine
 * resolves them and fits spec's sizes to their shapes. */
struct engine_job_request {
  struct exp_spec spec;
  char client[64];
  int device;     /* pin to this device; -1: placed by the engine */
  int priority;   /* higher runs first among the client's jobs */
  bool exclusive; /* timed windows alone on the device (isolation "exclusive") */
  bool keep_output;
  bool host_sync;      /* wait for parents to finish, not just to be issued (benchmarks) */
  bool admin;          /* may name other clients' jobs and buffers */
  int max_queued;      /* this client's limit; 0: the engine's */
  uint64_t restore_id; /* after a restart, or claimed from a fleet's queue: run under
                          this id (any id not in the table); 0: a new id */
  int n_depends;
  uint64_t depends_on[ENGINE_MAX_PARENTS];
};

/* Why a request was refused: code is a negative errno the HTTP layer maps. */
struct engine_error {
  int code; /* -ENOENT (unknown job or buffer), -EINVAL (shapes), -EFBIG (memory),
                      -EAGAIN (client's queue full), -ESHUTDOWN, -ENOMEM, -EPIPE (output gone),
                      or reserve_ids' error (new ids could not be recorded: field "store") */
  char field[48];
  char message[320];
  uint64_t missing_job;    /* -ENOENT for a job (depends_on, an output as input): its id */
  uint64_t missing_buffer; /* -ENOENT for a buffer input not in the table: its id */
};

/* A consistent copy of a job's fields. result points into the job: valid while the
 * caller holds its reference, non-NULL only once the job is done. */
struct job_view {
  uint64_t id;
  enum job_state state;
  struct exp_spec spec;
  char client[64];
  int priority;
  bool exclusive, keep_output, host_sync, cancel_requested;
  int n_parents;
  uint64_t parents[ENGINE_MAX_PARENTS];
  double created_at, started_at, issued_at, finished_at; /* unix seconds; 0 = not yet */
  int device, lane; /* device: where it is placed (-1 while waiting); lane: where it ran */
  bool device_pinned;
  uint64_t output_buffer; /* kept output's buffer id, 0 if none */
  const struct exp_result *result;
  char error_code[32];
  char error_message[256];
  /* What on_job_change kept of the job's last recorded change: the store's ticket for
   * its row (0: none yet), and once final, the job's document as it recorded it (JSON
   * text, or NULL): borrowed, valid while the caller holds a reference to the job. */
  uint64_t record_ticket;
  const char *doc;
  const char *node; /* engine_config's */
};

/* What on_job_change hands back (zeroed before the call): the ticket of the row it
 * queued (store.h's store_ticket), and for a final state the job's document (JSON
 * text, malloc'd, or NULL). The engine owns doc from then on, shows it in job_view
 * and frees it with the job. */
struct engine_recorded {
  uint64_t ticket;
  char *doc;
};

/* The engine's id sequences, for engine_config.reserve_ids. */
enum engine_ids { ENGINE_IDS_JOBS, ENGINE_IDS_BUFFERS };
#define ENGINE_IDS_BLOCK 1024 /* ids reserved at a time, unless ids_block says */

struct engine_config {
  int max_jobs_kept; /* finished jobs beyond this many are forgotten, oldest first, in
                        passes: the table may hold 1/16 more before one runs */
  int max_queued;    /* queued or waiting jobs per client; more are refused (-EAGAIN) */
  /* Called (may be NULL) when a job ends, under the engine's lock: keep it short and
   * never call back into the engine. */
  void (*on_job_end)(void *arg, const struct job_view *view);
  void *on_job_end_arg;
  /* Called (may be NULL) whenever a job is accepted or changes state, with what was
   * asked: what the durable store records. first: the job's first call (it was just
   * accepted, or restored after a restart). Never under the lock: the thread that
   * changed the state calls it once it has released it, in order for each job (a
   * job's call waits for its earlier ones, and a first call for its parents' first). */
  void (*on_job_change)(void *arg, const struct job_view *view,
                        const struct engine_job_request *req, bool first,
                        struct engine_recorded *out);
  void *on_job_change_arg;
  uint64_t first_id;        /* ids start here (above those of a previous run); 0 means 1 */
  uint64_t first_buffer_id; /* the same for buffers */
  /* Called (may be NULL) under the lock before an id past the last reserved one of
   * kind is handed out: ids from *next (the next one the engine would hand out) up to
   * upto must be recorded as used, so that no later run hands them out again (the
   * store keeps the mark). The callee may move the block forward, its length kept
   * (*next and so upto further on: another gpulabd sharing the store took those
   * ids); the engine goes on from *next. Returns 0 or a negative errno (-ENOSPC,
   * -EROFS, -EIO, ...): the job (or buffer) is then refused with it. */
  int (*reserve_ids)(void *arg, enum engine_ids kind, uint64_t *next, uint64_t upto);
  void *reserve_ids_arg;
  /* Ids reserved at a time (0: ENGINE_IDS_BLOCK). The call is made under the engine's
   * lock and waits for the store's: a larger block makes it rarer (a crash skips up
   * to that many ids). */
  uint64_t ids_block;
  /* Called (may be NULL) under the lock when a buffer gets its id (an upload, a job's
   * kept output: listed) and when it leaves the table (deleted, its job withdrawn, the
   * engine freed: listed false): what a fleet's store records of where buffers live.
   * Keep it short. Returns the ticket of the row it queued (0: none), which the
   * buffer's view shows (engine_buffer_view.record_ticket). */
  uint64_t (*on_buffer_change)(void *arg, uint64_t id, const char *client, double created_at,
                               bool listed);
  void *on_buffer_change_arg;
  const char *node; /* a fleet's node (fleet.h): named on every job it runs; NULL: none */
};

/* Starts one worker thread per lane of each device. devices are borrowed and must
 * outlive the engine. Returns 0 or a negative errno. */
int engine_new(struct backend *const *devices, int n_devices, const struct engine_config *cfg,
               struct engine **out);
/* Stops: cancels queued and waiting jobs, stops running ones at their next batch
 * (failed, "interrupted"), waits for the workers, fires every pending watch and closes the event
 * stream. Jobs stay readable; submitting is refused. Idempotent. */
void engine_stop(struct engine *e);
/* Stops gracefully (SIGTERM): no new job starts, running ones get up to grace_s
 * seconds to finish before they are stopped at their next batch (they end failed,
 * code "interrupted", not canceled); queued and waiting jobs are left as they are
 * (the durable store runs them again after a restart). Then as engine_stop. */
void engine_shutdown(struct engine *e, double grace_s);
/* While paused no job starts (queued ones wait; running ones go on); jobs are still
 * accepted. For a fleet's node that cannot renew its lease (fleet.h). */
void engine_pause(struct engine *e, bool paused);
/* Stops if needed and frees everything. NULL is a no-op. */
void engine_free(struct engine *e);

/* Queues a job. Returns 0 and a new reference in *out (the job may already have
 * failed, when a parent had), or a negative errno with err filled. */
int engine_submit(struct engine *e, const struct engine_job_request *req, struct job **out,
                  struct engine_error *err);
/* Queues n jobs, all or none: every one is checked (inputs, parents, device, the
 * client's queue with the others counted, memory, ids) before any is created. Returns
 * 0 and n new references in out[0..n), or a negative errno with err filled, *failed
 * the index of the request refused (-1 when none in particular), and nothing created. */
int engine_submit_all(struct engine *e, const struct engine_job_request *reqs, int n,
                      struct job **out, struct engine_error *err, int *failed);
/* Runs job to its end on the calling thread, when it can start at once on an idle
 * device: it is queued, alone in its device's queue, and nothing runs there. The lane
 * is lent for the run (its worker takes nothing meanwhile), so the job runs exactly
 * as a worker would run it, minus the two thread hand-offs (to the worker and back
 * to the caller) that dominate a tiny job's latency. For jobs the caller knows are
 * short: the caller waits for the whole run. Returns true when it ran the job (now
 * final), false when the job is left to the workers. */
bool engine_run_inline(struct engine *e, struct job *job);
/* engine_submit for a job its caller means to run next with engine_run_inline: no
 * worker is woken for it here (one that woke would only race the caller for it, or
 * find nothing and sleep again). The caller must follow with engine_run_inline (which
 * wakes one when it leaves the job to the workers) or engine_wake. */
int engine_submit_inline(struct engine *e, const struct engine_job_request *req, struct job **out,
                         struct engine_error *err);
/* Wakes a worker for job if it is queued. */
void engine_wake(struct engine *e, struct job *job);

/* Smallest per-job memory limit over the devices, in bytes. */
uint64_t engine_memory_limit(const struct engine *e);

struct job *engine_job_get(struct engine *e, uint64_t id); /* new reference, or NULL */
/* The smallest id still kept in memory (older ones live only in the store); 0 if
 * none. */
uint64_t engine_oldest_id(struct engine *e);
void job_ref(struct job *job);
void job_unref(struct job *job); /* NULL is a no-op */
void job_get_view(struct engine *e, struct job *job, struct job_view *view);
uint64_t job_id(const struct job *job); /* fixed at submission: no lock */

/* Cancels a queued or waiting job at once, a running one at its next batch
 * boundary. Returns 0, or -EALREADY if the job had already finished. */
int engine_job_cancel(struct engine *e, struct job *job);
/* For a fleet (fleet.h): takes queued jobs out of this engine, for another node to
 * run, while more than keep are queued: the newest first, of those nothing ties here
 * (no parents or children, no buffer or job output as input, no kept output, no
 * engine_watch on them) that have waited min_age_s. Nothing is recorded of them (the
 * store keeps them queued, to be claimed under their ids: restore_id). Returns how
 * many ids it wrote (at most max). */
int engine_jobs_release(struct engine *e, int keep, double min_age_s, uint64_t *ids, int max);
/* Takes back a job whose acceptance could not be recorded (its first row never
 * reached the store): unfinished, it is canceled (code "not_stored"; a running one
 * at its next batch); on_job_change hears nothing more of it; its kept output is
 * deleted; and it leaves the table, so that it reads as unknown now, as it will
 * after a restart. The caller's reference stays valid. */
void engine_job_withdraw(struct engine *e, struct job *job);
/* The id the next job (ENGINE_IDS_JOBS) or buffer will get; the first of this run
 * (ids below it are a previous run's). */
uint64_t engine_next_id(struct engine *e, enum engine_ids kind);
uint64_t engine_first_id(const struct engine *e, enum engine_ids kind);

struct engine_list_filter {
  int state;          /* enum job_state, or -1 for any */
  int type;           /* enum exp_type, or -1 for any */
  uint64_t before_id; /* only ids below this (paging); 0 for no bound */
  const char *client; /* only this client's jobs; NULL for everyone's */
};
/* Newest first: up to max jobs matching filter, as new references in out.
 * Returns how many. */
int engine_jobs_list(struct engine *e, const struct engine_list_filter *filter, struct job **out,
                     int max);

/* ---- buffers ---- */

/* What an upload was before it became C order (float64: float32) (kept to be reported). */
struct engine_buffer_origin {
  bool converted;            /* false: sent as kept, in C order */
  char dtype[12];            /* as sent: "float64", or the kept dtype's name */
  bool fortran_order;        /* sent column-major */
  double max_rounding_error; /* the largest |sent - kept|; 0: exact */
};

struct engine_buffer_view {
  uint64_t id;
  struct exp_shape shape;
  enum exp_dtype dtype; /* an upload's, or a job's out_dtype (U32 counts) */
  uint64_t bytes;       /* its elements times exp_dtype_bytes(dtype) */
  char client[64];
  double created_at;
  uint64_t producer_job; /* 0 for an upload */
  int in_use;            /* queued, waiting or running jobs that read it */
  int device;
  struct engine_buffer_origin origin;
  uint64_t record_ticket; /* on_buffer_change's ticket of its listing (0: none) */
};

/* Uploads shape's count of dtype elements of host (borrowed; any alignment) as a new
 * buffer on device (0 <= device < engine_device_count). origin (borrowed; NULL: kept
 * as sent) is recorded for its view. client_max_bytes (0: none) caps the
 * bytes of the client's listed buffers (-EDQUOT past it). Returns 0 and its id, or
 * a negative errno with err. */
int engine_buffer_upload(struct engine *e, const void *host, const struct exp_shape *shape,
                         enum exp_dtype dtype, const struct engine_buffer_origin *origin,
                         const char *client, int device, uint64_t client_max_bytes, uint64_t *id,
                         struct engine_error *err);
/* 0 or -ENOENT. */
int engine_buffer_get(struct engine *e, uint64_t id, struct engine_buffer_view *view);
/* Copies the buffer into host (view.bytes long), waiting for the job that writes
 * it. Returns 0, -ENOENT, or a backend error with err. */
int engine_buffer_read(struct engine *e, uint64_t id, void *host, struct engine_error *err);
/* 0, -ENOENT, or -EBUSY while a queued, waiting or running job needs it. */
int engine_buffer_delete(struct engine *e, uint64_t id);
/* Newest first, ids below before_id (0: no bound), of client (NULL: everyone's).
 * Returns how many. */
int engine_buffers_list(struct engine *e, uint64_t before_id, const char *client,
                        struct engine_buffer_view *out, int max);

/* ---- listening ---- */

/* The event stream of job state changes and progress. Borrowed; lives as long as
 * the engine. */
struct events *engine_events(struct engine *e);
/* The job's view and the last event seq, taken together: events after that seq
 * are exactly the job's later changes. */
void engine_job_snapshot(struct engine *e, struct job *job, struct job_view *view, uint64_t *seq);

/* A one-shot notification: fn(arg) runs once, when the job reaches a final state (on
 * the thread that ended it, once its record is queued, or on the engine's timer
 * thread) or when the monotonic clock passes deadline (the timer thread), whichever
 * comes first (at once, on the caller's thread, if the job already ended). The
 * caller owns w and must keep it alive until fn has run. */
struct engine_watch {
  struct engine_watch *next, *prev, *job_next; /* the engine's links */
  struct job *job;                             /* referenced while pending */
  double deadline;
  void (*fn)(void *arg);
  void *arg;
};
void engine_watch_add(struct engine *e, struct job *job, struct engine_watch *w, double deadline,
                      void (*fn)(void *arg), void *arg);

struct engine_counts {
  int by_state[JOB_STATE_COUNT]; /* jobs currently kept, per state */
  uint64_t submitted;
  uint64_t ran_inline; /* of them, run by engine_run_inline */
  uint64_t lock_waits; /* times a thread found the engine's lock taken, */
  double lock_wait_s;  /* and the seconds it waited for it */
  uint64_t row_waits;  /* times a job's row waited for an earlier one (its own or a parent's
                          first) still with another thread (engine_unlock) */
  int buffers;
  uint64_t buffer_bytes;
};
void engine_counts(struct engine *e, struct engine_counts *out);

/* One client's unfinished jobs. */
struct engine_client_load {
  char client[64];
  int queued, waiting, running;
};
/* The clients with unfinished jobs, in the order first seen in the table, at most
 * max (>= 2): when there are more, the last entry, named "other", counts the rest.
 * Returns how many entries it filled. */
int engine_client_loads(struct engine *e, struct engine_client_load *out, int max);

bool engine_healthy(const struct engine *e); /* every device healthy */
int engine_device_count(const struct engine *e);
struct backend *engine_device(struct engine *e, int index); /* borrowed */

double engine_now_mono(void); /* seconds, CLOCK_MONOTONIC */
double engine_now_unix(void); /* seconds, CLOCK_REALTIME */

#endif
