/* A job's own small parts, which every file of the engine uses and which call into
 * none of them: its references, its state's name, its view, and the engine's clocks. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/core/clock.h"
#include "server/engine/engine_priv.h"

static const char *const state_names[JOB_STATE_COUNT] = {"queued", "waiting", "running",
                                                         "done",   "failed",  "canceled"};

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
double engine_now_mono(void) { return clock_mono_s(); }
double engine_now_unix(void) { return clock_seconds(CLOCK_REALTIME); }

void job_ref(struct job *job) { atomic_fetch_add(&job->refs, 1); }

uint64_t job_id(const struct job *job) { return job->id; }

/* The last reference frees the job. By then it holds no buffers (released when it
 * ended), only its fence, its result and its parents. */
void job_unref(struct job *job) {
  if (!job || atomic_fetch_sub(&job->refs, 1) != 1) return;
  if (job->done) backend_fence_free(job->backend, job->done);
  for (int i = 0; i < job->n_parents; i++) job_unref(job->parents[i]);
  free(job->children);
  free(job->result);
  free(atomic_load(&job->doc));
  free(job);
}

/* The lock held, or the job's view final (view_final). */
void job_view_locked(const struct engine *e, struct job *job, struct job_view *v) {
  v->id = job->id;
  v->state = job->state;
  v->spec = job->spec;
  memcpy(v->client, job->req.client, sizeof v->client);
  v->priority = job->req.priority;
  v->exclusive = job->req.exclusive;
  v->keep_output = job->req.keep_output;
  v->host_sync = job->req.host_sync;
  v->cancel_requested = atomic_load(&job->cancel_requested);
  v->n_parents = job->n_parents;
  for (int i = 0; i < job->n_parents; i++) v->parents[i] = job->parents[i]->id;
  v->created_at = job->created_at;
  v->started_at = job->started_at;
  v->issued_at = job->issued_at;
  v->finished_at = job->finished_at;
  v->device = job->device;
  v->device_pinned = job->req.device >= 0;
  v->lane = job->lane;
  v->output_buffer = job->output_buffer;
  v->result = job->state == JOB_DONE ? job->result : NULL;
  memcpy(v->error_code, job->error_code, sizeof v->error_code);
  memcpy(v->error_message, job->error_message, sizeof v->error_message);
  v->record_ticket = atomic_load(&job->record_ticket);
  v->doc = atomic_load(&job->doc);
  v->node = e->cfg.node;
}
