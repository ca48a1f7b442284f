/* Submitting jobs (engine.h: engine_submit, engine_submit_all): every check a job
 * must pass is made under the engine's lock before anything is created (its inputs
 * resolved, its parents found, the client's queue, the memory, its id recorded),
 * then it gets its id, its parents and its first state. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/engine/engine_priv.h"

static int refuse(struct engine_error *err, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int refuse(struct engine_error *err, int code, const char *field, const char *fmt, ...) {
  err->code = code;
  snprintf(err->field, sizeof err->field, "%s", field);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  return code;
}

/* Resolves the inputs given as data: their shapes fit spec's sizes, buffers are
 * referenced now, job outputs when their producer is issued. Every input slot reads
 * float32: a buffer or a job's output of another dtype (a histogram's uint32 counts, an
 * int8 upload) is refused (-EPROTOTYPE, naming both), not converted: a count past 2^24
 * has no float. */
static int resolve_inputs_locked(struct engine *e, struct job *job, struct engine_error *err) {
  struct exp_spec *spec = &job->spec;
  for (int s = 0; s < exp_input_count(spec->type); s++) {
    struct exp_input in = spec->inputs[s];
    char field[48], source[48];
    snprintf(field, sizeof field, "%s", exp_input_name(spec->type, s));
    struct exp_shape shape;
    enum exp_dtype dtype;
    if (in.kind == EXP_INPUT_BUFFER) {
      struct ebuf *b = ebuf_find_locked(e, in.value);
      if (b && !job->req.admin && strcmp(b->client, job->req.client) != 0) b = NULL; /* not yours */
      if (!b) {
        err->missing_buffer = in.value;
        return refuse(err, -ENOENT, field, "no buffer %llu", (unsigned long long)in.value);
      }
      shape = b->shape;
      dtype = b->dtype;
      snprintf(source, sizeof source, "buffer %llu", (unsigned long long)b->id);
      ebuf_ref_locked(b);
      b->in_use++;
      job->inputs[s] = b;
    } else if (in.kind == EXP_INPUT_JOB) {
      struct job *p = find_locked(e, in.value);
      if (p && !job->req.admin && strcmp(p->req.client, job->req.client) != 0) p = NULL;
      if (!p) {
        err->missing_job = in.value;
        return refuse(err, -ENOENT, field, "no job %llu", (unsigned long long)in.value);
      }
      /* A finished producer's output lives on only as its kept buffer. */
      struct ebuf *out = job_state_final(p->state) ? ebuf_find_locked(e, p->output_buffer)
                                                   : p->output;
      if (job_state_final(p->state) && !out && p->state == JOB_DONE)
        return refuse(err, -EPIPE, field,
                      "job %llu has finished and its output was not kept (keep_output)",
                      (unsigned long long)p->id);
      exp_output_shape(&p->spec, &shape);
      dtype = exp_desc(p->spec.type)->out_dtype;
      snprintf(source, sizeof source, "job %llu's output", (unsigned long long)p->id);
      job->input_from[s] = p;
      if (out && (p->issued || job_state_final(p->state))) {
        ebuf_ref_locked(out);
        out->in_use++;
        job->inputs[s] = out;
      }
    } else {
      continue;
    }
    if (dtype != EXP_DTYPE_F32)
      return refuse(err, -EPROTOTYPE, field,
                    "input %s: %s holds %s%s; a %s job reads float32 (inputs are never "
                    "converted)",
                    field, source, exp_dtype_name(dtype),
                    dtype == EXP_DTYPE_U32 ? " counts" : " values", exp_type_name(spec->type));
    char why[240];
    if (exp_spec_fit_input(spec, s, &shape, why, sizeof why))
      return refuse(err, -EINVAL, field, "%s", why);
  }
  /* A problem's inputs given as buffers: their dtypes and shapes were checked against
   * the problem's at the request (problem_jobs_check_inputs; a buffer never changes
   * either), so here they are only found and held. */
  for (int k = 0; spec->type == EXP_PROBLEM && k < EXP_PROBLEM_MAX_INPUTS; k++) {
    uint64_t id = spec->problem.input_buffer[k];
    if (!id) continue;
    struct ebuf *b = ebuf_find_locked(e, id);
    if (b && !job->req.admin && strcmp(b->client, job->req.client) != 0) b = NULL; /* not yours */
    if (!b) {
      err->missing_buffer = id;
      return refuse(err, -ENOENT, "inputs", "no buffer %llu", (unsigned long long)id);
    }
    ebuf_ref_locked(b);
    b->in_use++;
    job->inputs[k] = b;
  }
  return 0;
}

static int add_parent_locked(struct job *job, struct job *parent) {
  for (int i = 0; i < job->n_parents; i++)
    if (job->parents[i] == parent) return 0;
  if (job->n_parents == ENGINE_MAX_PARENTS) return -E2BIG;
  job_ref(parent);
  job->parents[job->n_parents++] = parent;
  return 0;
}

static int link_parents_locked(struct engine *e, struct job *job, struct engine_error *err) {
  const struct engine_job_request *req = &job->req;
  for (int i = 0; i < req->n_depends; i++) {
    struct job *p = find_locked(e, req->depends_on[i]);
    if (p && !req->admin && strcmp(p->req.client, req->client) != 0) p = NULL; /* ids do not leak */
    if (!p) {
      err->missing_job = req->depends_on[i];
      return refuse(err, -ENOENT, "depends_on", "no job %llu",
                    (unsigned long long)req->depends_on[i]);
    }
    if (add_parent_locked(job, p))
      return refuse(err, -EINVAL, "depends_on", "a job may have at most %d parents",
                    ENGINE_MAX_PARENTS);
  }
  for (int s = 0; s < EXP_MAX_INPUTS; s++)
    if (job->input_from[s] && add_parent_locked(job, job->input_from[s]))
      return refuse(err, -EINVAL, "depends_on", "a job may have at most %d parents",
                    ENGINE_MAX_PARENTS);
  return 0;
}

/* Registers job with its parents; returns the failure message if one already failed. */
static const char *attach_to_parents_locked(struct job *job, char *why, size_t why_len) {
  for (int i = 0; i < job->n_parents; i++) {
    struct job *p = job->parents[i];
    if (p->state == JOB_FAILED || p->state == JOB_CANCELED) {
      snprintf(why, why_len, "parent job %llu %s", (unsigned long long)p->id,
               p->state == JOB_CANCELED ? "was canceled" : "failed");
      return why;
    }
    /* Registered with every unfinished parent, so that a parent failing later
     * fails it too; pending only on the parents not yet ready for it. */
    bool ready = job->req.host_sync ? p->state == JOB_DONE : (p->issued || p->state == JOB_DONE);
    if (p->state == JOB_DONE) continue;
    if (p->n_children == p->cap_children) {
      int cap = p->cap_children ? 2 * p->cap_children : 4;
      struct job **c = realloc(p->children, (size_t)cap * sizeof *c);
      if (!c) return strcpy(why, "out of memory");
      p->children = c;
      p->cap_children = cap;
    }
    job_ref(job);
    p->children[p->n_children++] = job;
    if (!ready) job->deps_pending++;
  }
  return NULL;
}

static void discard_locked(struct engine *e, struct job *job) {
  for (int s = 0; s < EXP_MAX_JOB_BUFFERS; s++)
    if (job->inputs[s]) {
      job->inputs[s]->in_use--;
      ebuf_unref_locked(e, job->inputs[s]);
    }
  job_unref(job);
}

/* A new job for req, not yet checked or listed; NULL when out of memory. */
static struct job *job_new(const struct engine_job_request *req) {
  struct job *job = calloc(1, sizeof *job);
  if (!job) return NULL;
  atomic_init(&job->refs, 1);
  atomic_init(&job->cancel_requested, false);
  job->req = *req;
  job->spec = req->spec;
  job->device = job->lane = -1;
  job->created_at = engine_now_unix();
  return job;
}

/* Every check of job but its id, with `more` jobs of its client accepted along
 * with it (engine_submit_all): its inputs are resolved and its parents linked. */
static int check_locked(struct engine *e, struct job *job, int more, struct engine_error *err) {
  const struct engine_job_request *req = &job->req;
  int limit = req->max_queued ? req->max_queued : e->cfg.max_queued, rc;
  if (e->stopping) return refuse(err, -ESHUTDOWN, "", "gpulabd is shutting down");
  if (!(job->sched_client = sched_client(e->sched, req->client)))
    return refuse(err, -ENOMEM, "", "out of memory");
  if (req->restore_id && find_locked(e, req->restore_id))
    return refuse(err, -EINVAL, "id", "job %llu cannot be restored here: it is here already",
                  (unsigned long long)req->restore_id);
  if (req->device >= e->n_devices)
    return refuse(err, -EINVAL, "device", "device %d does not exist; this gpulabd has %d device(s)",
                  req->device, e->n_devices);
  if (sched_pending(job->sched_client) + more >= limit)
    return more ? refuse(err, -EAGAIN, "",
                         "these %d jobs, with the %d jobs this client already has queued or "
                         "waiting, would pass its limit of %d",
                         more + 1, sched_pending(job->sched_client), limit)
                : refuse(err, -EAGAIN, "",
                         "this client already has %d jobs queued or waiting (its limit)",
                         sched_pending(job->sched_client));
  if ((rc = resolve_inputs_locked(e, job, err)) || (rc = link_parents_locked(e, job, err)))
    return rc;
  char why[192];
  for (int i = 0; job->spec.profile && i < e->n_devices; i++)
    if (backend_profiling(e->devices[i], why, sizeof why) == BACKEND_PROFILE_REFUSE)
      return refuse(err, -EOPNOTSUPP, "profile", "%s", why);
  if (exp_spec_bytes(&job->spec) > engine_memory_limit(e))
    return refuse(
        err, -EFBIG, "", "this job needs %llu bytes of memory; the limit per job is %llu bytes",
        (unsigned long long)exp_spec_bytes(&job->spec), (unsigned long long)engine_memory_limit(e));
  return 0;
}

/* A checked job joins the table (room made for it) under its id, its parents and
 * its first state: waiting, queued, or failed at once when a parent had. */
static void accept_locked(struct engine *e, struct job *job, bool hold_wake) {
  char why[160];
  job->id = job->req.restore_id ? job->req.restore_id : e->next_id++;
  table_insert_locked(e, job);
  job_ref(job); /* the caller's */
  job->item.priority = job->req.priority;
  job->item.seq = job->id;
  const char *failure = attach_to_parents_locked(job, why, sizeof why);
  sched_pending_add(job->sched_client, 1);
  job->state = JOB_WAITING;
  if (failure) {
    leave_pending_locked(e, job);
    end_job_locked(e, job, JOB_FAILED, "parent_failed", failure);
  } else if (job->deps_pending == 0) {
    make_queued_locked(e, job, !hold_wake);
  } else {
    publish_state_locked(e, job);
  }
}

static int submit_all(struct engine *e, const struct engine_job_request *reqs, int n,
                      struct job **out, struct engine_error *err, int *failed, bool hold_wake) {
  memset(err, 0, sizeof *err);
  *failed = -1;
  int rc = 0, made = 0;
  for (; made < n && (out[made] = job_new(&reqs[made])); made++) {}
  if (made < n) rc = refuse(err, -ENOMEM, "", "out of memory");
  engine_lock(e);
  for (int i = 0; i < n && rc == 0; i++) {
    int more = 0; /* the others of its client in this batch */
    for (int k = 0; k < n; k++) more += k != i && strcmp(reqs[k].client, reqs[i].client) == 0;
    if ((rc = check_locked(e, out[i], more, err))) *failed = i;
  }
  /* Ids for all of them recorded at once (restored jobs keep theirs). */
  if (rc == 0 && !reqs[0].restore_id)
    rc = reserve_id_locked(e, ENGINE_IDS_JOBS, e->next_id + (uint64_t)n - 1, err);
  if (rc == 0 && (rc = table_reserve_locked(e, n))) refuse(err, rc, "", "out of memory");
  if (rc) {
    for (int i = 0; i < made; i++) {
      discard_locked(e, out[i]);
      out[i] = NULL;
    }
    engine_unlock(e);
    return rc;
  }
  for (int i = 0; i < n; i++) accept_locked(e, out[i], hold_wake);
  engine_unlock(e);
  return 0;
}

int engine_submit_all(struct engine *e, const struct engine_job_request *reqs, int n,
                      struct job **out, struct engine_error *err, int *failed) {
  return submit_all(e, reqs, n, out, err, failed, false);
}

int engine_submit(struct engine *e, const struct engine_job_request *req, struct job **out,
                  struct engine_error *err) {
  int failed;
  return submit_all(e, req, 1, out, err, &failed, false);
}

int engine_submit_inline(struct engine *e, const struct engine_job_request *req, struct job **out,
                         struct engine_error *err) {
  int failed;
  return submit_all(e, req, 1, out, err, &failed, true);
}

/* Nothing ties the queued job to this engine: no parents or children, inputs only
 * generated, no output kept, no one waiting on it; and it has waited min_age_s (a job
 * just accepted may be about to get its waiter). */
static bool movable_locked(struct engine *e, struct job *job, double now, double min_age_s) {
  if (job->state != JOB_QUEUED || job->n_parents || job->n_children || job->output ||
      job->req.keep_output || now - job->created_at < min_age_s)
    return false;
  return !exp_spec_reads_data(&job->req.spec) && job->watches == NULL;
}

int engine_jobs_release(struct engine *e, int keep, double min_age_s, uint64_t *ids, int max) {
  double now = engine_now_unix();
  int n = 0;
  engine_lock(e);
  for (int i = e->n_jobs - 1; i >= 0 && n < max && e->n_queued > keep; i--) {
    struct job *job = e->jobs[i];
    if (!movable_locked(e, job, now, min_age_s)) continue;
    ids[n++] = job->id;
    leave_pending_locked(e, job);
    job->withdrawn = true; /* nothing more is recorded of it here */
    table_remove_locked(e, job);
  }
  pthread_mutex_unlock(&e->lock);
  return n;
}
