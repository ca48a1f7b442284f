/* The job engine: the job table, the queue, one worker per lane of each device,
 * cancellation, and watches that tell the HTTP layer when a job ends. Knows jobs,
 * backends and threads; not JSON, not HTTP.
 *
 * Ownership: jobs are reference counted. The engine's table holds one reference
 * until the job is pruned; every `struct job *` returned to a caller carries a new
 * reference that the caller drops with job_unref. A finished job never changes
 * again, so its result may be read without locks while a reference is held. */
#ifndef GPULAB_ENGINE_H
#define GPULAB_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include "kernels/backend.h"
#include "kernels/experiment.h"

enum job_state { JOB_QUEUED, JOB_WAITING, JOB_RUNNING, JOB_DONE, JOB_FAILED, JOB_CANCELED, JOB_STATE_COUNT };

const char *job_state_name(enum job_state state);
int job_state_from_name(const char *name); /* -1 if unknown */
static inline bool job_state_final(enum job_state s) { return s >= JOB_DONE; }

struct job;
struct engine;

/* A consistent copy of a job's fields. result points into the job: valid while the
 * caller holds its reference, non-NULL only once the job is done. */
struct job_view {
  uint64_t id;
  enum job_state state;
  struct exp_spec spec;
  char client[64];
  double created_at, started_at, finished_at; /* unix seconds; 0 = not yet */
  int device, lane;                           /* where it ran; -1 before */
  const struct exp_result *result;
  char error_code[32];
  char error_message[256];
};

struct engine_config {
  int max_jobs_kept; /* finished jobs beyond this many are forgotten, oldest first */
  int max_queued;    /* queued jobs in total; more are refused (-EAGAIN) */
};

/* Starts one worker thread per lane of each device. devices are borrowed and must
 * outlive the engine. Returns 0 or a negative errno. */
int engine_new(struct backend *const *devices, int n_devices, const struct engine_config *cfg,
               struct engine **out);
/* Stops: cancels queued jobs, asks running ones to stop at their next batch, waits
 * for the workers, fires every pending watch. Jobs stay readable; submitting is
 * refused (-ESHUTDOWN). Idempotent. */
void engine_stop(struct engine *e);
/* Stops if needed and frees everything. NULL is a no-op. */
void engine_free(struct engine *e);

/* Queues a job. Returns 0 and a new reference in *out, or -EFBIG (the spec needs
 * more memory than engine_memory_limit), -EAGAIN (queue full), -ESHUTDOWN. */
int engine_submit(struct engine *e, const struct exp_spec *spec, const char *client,
                  struct job **out);
/* Smallest per-job memory limit over the devices, in bytes. */
uint64_t engine_memory_limit(const struct engine *e);

struct job *engine_job_get(struct engine *e, uint64_t id); /* new reference, or NULL */
void job_ref(struct job *job);
void job_unref(struct job *job); /* NULL is a no-op */
void job_get_view(struct engine *e, struct job *job, struct job_view *view);

/* Cancels a queued job at once, a running one at its next batch boundary (it then
 * ends `canceled`). Returns 0, or -EALREADY if the job had already finished. */
int engine_job_cancel(struct engine *e, struct job *job);

struct engine_list_filter {
  int state;           /* enum job_state, or -1 for any */
  int type;            /* enum exp_type, or -1 for any */
  uint64_t before_id;  /* only ids below this (paging); 0 for no bound */
};
/* Newest first: up to max jobs matching filter, as new references in out.
 * Returns how many. */
int engine_jobs_list(struct engine *e, const struct engine_list_filter *filter,
                     struct job **out, int max);

/* A one-shot notification: fn(arg) runs once, from an engine thread, when the job
 * reaches a final state or when the monotonic clock passes deadline, whichever
 * comes first (at once if the job already ended). The caller owns w and must keep
 * it alive until fn has run. */
struct engine_watch {
  struct engine_watch *next;
  struct job *job; /* referenced while pending */
  double deadline;
  void (*fn)(void *arg);
  void *arg;
};
void engine_watch_add(struct engine *e, struct job *job, struct engine_watch *w,
                      double deadline, void (*fn)(void *arg), void *arg);

struct engine_counts {
  int by_state[JOB_STATE_COUNT]; /* jobs currently kept, per state */
  uint64_t submitted;
};
void engine_counts(struct engine *e, struct engine_counts *out);

bool engine_healthy(const struct engine *e); /* every device healthy */
int engine_device_count(const struct engine *e);
struct backend *engine_device(struct engine *e, int index); /* borrowed */

double engine_now_mono(void); /* seconds, CLOCK_MONOTONIC */
double engine_now_unix(void); /* seconds, CLOCK_REALTIME */

#endif
