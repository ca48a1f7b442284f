/* backend.h's calls, forwarded to the backend's ops (backend_impl.h). */
#include "kernels/backends/backend_impl.h"

#include <stdio.h>

void backend_free(struct backend *b) {
  if (b) b->ops->free(b);
}

const char *backend_name(const struct backend *b) { return b->ops->name; }
int backend_lanes(const struct backend *b) { return b->n_lanes; }

void backend_device_info(struct backend *b, struct backend_device_info *info) {
  b->ops->device_info(b, info);
}

int backend_measure_ceilings(struct backend *b, char *why, size_t why_len) {
  if (!b->ops->measure_ceilings) {
    snprintf(why, why_len, "%s backend: no ceilings to measure", b->ops->name);
    return -ENODEV;
  }
  return b->ops->measure_ceilings(b, why, why_len);
}

uint64_t backend_memory_limit(const struct backend *b) { return b->ops->memory_limit(b); }
bool backend_healthy(const struct backend *b) { return b->ops->healthy(b); }

enum backend_profiling backend_profiling(const struct backend *b, char *why, size_t why_len) {
  if (b->ops->profiling) return b->ops->profiling(b, why, why_len);
  snprintf(why, why_len, "the %s backend has no hardware counters", b->ops->name);
  return BACKEND_PROFILE_MARK;
}

/* A job that asked for a profile from a backend that replays none: each run says why. */
static void profile_mark(const struct backend *b, const struct exp_spec *spec,
                         struct exp_result *result) {
  char why[sizeof result->runs[0].profile.reason];
  if (!spec->profile || backend_profiling(b, why, sizeof why) == BACKEND_PROFILE_REPLAY) return;
  for (int i = 0; i < result->n_runs; i++) exp_profile_unavailable(&result->runs[i].profile, why);
}

int backend_run(struct backend *b, int lane, struct backend_job *job,
                const struct backend_hooks *hooks, struct exp_result *result, char *err,
                size_t err_len) {
  if (lane < 0 || lane >= b->n_lanes) {
    snprintf(err, err_len, "lane %d out of range 0..%d", lane, b->n_lanes - 1);
    return -EINVAL;
  }
  int rc = b->ops->run(b, lane, job, hooks, result, err, err_len);
  profile_mark(b, job->spec, result);
  return rc;
}

int backend_buffer_upload(struct backend *b, const float *host, uint64_t count,
                          struct backend_buffer **out, char *err, size_t err_len) {
  return b->ops->buffer_upload(b, host, count, out, err, err_len);
}

int backend_buffer_download(struct backend *b, struct backend_buffer *buf,
                            struct backend_fence *fence, float *host, char *err, size_t err_len) {
  return b->ops->buffer_download(b, buf, fence, host, err, err_len);
}

uint64_t backend_buffer_count(const struct backend_buffer *buf) { return buf->count; }

void backend_buffer_free(struct backend *b, struct backend_buffer *buf) {
  if (buf) b->ops->buffer_free(b, buf);
}

void backend_fence_free(struct backend *b, struct backend_fence *fence) {
  if (fence) b->ops->fence_free(b, fence);
}
