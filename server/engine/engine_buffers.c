/* The engine's buffer table: uploads and kept job outputs, listed by id, freed
 * once nothing refers to them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/engine/engine_priv.h"

void ebuf_ref_locked(struct ebuf *b) { b->refs++; }

void ebuf_unref_locked(struct engine *e, struct ebuf *b) {
  if (--b->refs > 0) return;
  /* Nothing refers to it: every job that used it has ended, so its device work is
   * complete and the memory can go back. */
  backend_buffer_free(e->devices[b->device], b->buf);
  job_unref(b->producer);
  free(b);
}

struct ebuf *ebuf_find_locked(struct engine *e, uint64_t id) {
  int lo = 0, hi = e->n_buffers - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    if (e->buffers[mid]->id == id) return e->buffers[mid];
    if (e->buffers[mid]->id < id)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return NULL;
}

/* Lists b under a new id; the table takes a reference. Returns 0, -ENOMEM, or the
 * error of reserving the id (err filled when not NULL). */
static int list_locked(struct engine *e, struct ebuf *b, struct engine_error *err) {
  int rc = reserve_id_locked(e, ENGINE_IDS_BUFFERS, e->next_buffer_id, err);
  if (rc) return rc;
  if (e->n_buffers == e->cap_buffers) {
    int cap = e->cap_buffers ? 2 * e->cap_buffers : 64;
    struct ebuf **bufs = realloc(e->buffers, (size_t)cap * sizeof *bufs);
    if (!bufs) return -ENOMEM;
    e->buffers = bufs;
    e->cap_buffers = cap;
  }
  b->id = e->next_buffer_id++;
  b->listed = true;
  b->refs++;
  e->buffers[e->n_buffers++] = b;
  if (e->cfg.on_buffer_change)
    b->record_ticket = e->cfg.on_buffer_change(e->cfg.on_buffer_change_arg, b->id, b->client,
                                               b->created_at, true);
  return 0;
}

void ebuf_unlist_locked(struct engine *e, struct ebuf *b) {
  int i = 0;
  while (i < e->n_buffers && e->buffers[i] != b) i++;
  if (i == e->n_buffers) return;
  memmove(&e->buffers[i], &e->buffers[i + 1], (size_t)(e->n_buffers - i - 1) * sizeof *e->buffers);
  e->n_buffers--;
  b->listed = false;
  if (e->cfg.on_buffer_change)
    e->cfg.on_buffer_change(e->cfg.on_buffer_change_arg, b->id, b->client, b->created_at, false);
  ebuf_unref_locked(e, b);
}

struct ebuf *ebuf_for_output_locked(struct engine *e, struct job *job, struct backend_buffer *buf) {
  struct ebuf *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->refs = 1; /* the job's, until it ends */
  b->buf = buf;
  b->device = job->device;
  exp_output_shape(&job->spec, &b->shape);
  b->dtype = exp_desc(job->spec.type)->out_dtype;
  job_ref(job);
  b->producer = job;
  snprintf(b->client, sizeof b->client, "%s", job->req.client);
  b->created_at = engine_now_unix();
  if (job->req.keep_output) {
    struct engine_error err = {0};
    if (list_locked(e, b, &err) == 0)
      job->output_buffer = b->id;
    else
      snprintf(job->error_message, sizeof job->error_message, "output not kept: %.200s",
               err.message[0] ? err.message : "out of memory");
  }
  return b;
}

void ebuf_free_all_locked(struct engine *e) {
  while (e->n_buffers) ebuf_unlist_locked(e, e->buffers[e->n_buffers - 1]);
}

static void view_of(const struct ebuf *b, struct engine_buffer_view *v) {
  v->id = b->id;
  v->shape = b->shape;
  v->dtype = b->dtype;
  v->bytes = (uint64_t)exp_shape_count(&b->shape) * exp_dtype_bytes(b->dtype);
  memcpy(v->client, b->client, sizeof v->client);
  v->created_at = b->created_at;
  v->producer_job = b->producer ? b->producer->id : 0;
  v->in_use = b->in_use;
  v->device = b->device;
  v->origin = b->origin;
  v->record_ticket = b->record_ticket;
}

/* Bytes of client's listed buffers. Lock held. */
static uint64_t client_bytes_locked(struct engine *e, const char *client) {
  uint64_t bytes = 0;
  for (int i = 0; i < e->n_buffers; i++)
    if (!strcmp(e->buffers[i]->client, client))
      bytes += backend_buffer_count(e->buffers[i]->buf) * sizeof(float);
  return bytes;
}

int engine_buffer_upload(struct engine *e, const void *host, const struct exp_shape *shape,
                         enum exp_dtype dtype, const struct engine_buffer_origin *origin,
                         const char *client, int device, uint64_t client_max_bytes, uint64_t *id,
                         struct engine_error *err) {
  uint64_t bytes = (uint64_t)exp_shape_count(shape) * exp_dtype_bytes(dtype);
  /* Backends hold 4-byte words: a last partial word is padded with zeros. */
  uint64_t count = (bytes + 3) / 4;
  memset(err, 0, sizeof *err);
  if (bytes > engine_memory_limit(e)) {
    err->code = -EFBIG;
    snprintf(err->message, sizeof err->message,
             "the buffer has %llu bytes; the limit per job is %llu bytes",
             (unsigned long long)bytes, (unsigned long long)engine_memory_limit(e));
    return err->code;
  }
  struct ebuf *b = calloc(1, sizeof *b);
  void *padded = NULL;
  if (b && bytes % 4) {
    padded = calloc(count, 4);
    if (padded) host = memcpy(padded, host, bytes);
  }
  if (!b || (bytes % 4 && !padded)) {
    free(b);
    return err->code = -ENOMEM;
  }
  /* The copy to the device happens outside the lock: it may take milliseconds. */
  int rc = backend_buffer_upload(e->devices[device], host, count, &b->buf, err->message,
                                 sizeof err->message);
  free(padded);
  if (rc) {
    free(b);
    return err->code = rc == -ENOMEM ? -ENOMEM : -EIO;
  }
  b->shape = *shape;
  b->dtype = dtype;
  b->device = device;
  if (origin) b->origin = *origin;
  snprintf(b->client, sizeof b->client, "%s", client);
  b->created_at = engine_now_unix();
  engine_lock(e);
  uint64_t held = client_bytes_locked(e, client);
  if (e->stopping)
    rc = -ESHUTDOWN;
  else if (client_max_bytes && held + count * sizeof(float) > client_max_bytes)
    rc = -EDQUOT;
  else
    rc = list_locked(e, b, err);
  if (rc == 0) *id = b->id;
  pthread_mutex_unlock(&e->lock);
  if (rc) {
    backend_buffer_free(e->devices[device], b->buf);
    free(b);
    if (rc == -EDQUOT)
      snprintf(err->message, sizeof err->message,
               "this client's buffers hold %llu bytes; %llu more would pass its limit of %llu",
               (unsigned long long)held, (unsigned long long)(count * sizeof(float)),
               (unsigned long long)client_max_bytes);
    else if (!err->message[0]) /* else the id's reservation said why */
      snprintf(err->message, sizeof err->message, "%s",
               rc == -ESHUTDOWN ? "gpulabd is shutting down" : "out of memory");
    return err->code = rc;
  }
  return 0;
}

int engine_buffer_get(struct engine *e, uint64_t id, struct engine_buffer_view *view) {
  engine_lock(e);
  struct ebuf *b = ebuf_find_locked(e, id);
  if (b) view_of(b, view);
  pthread_mutex_unlock(&e->lock);
  return b ? 0 : -ENOENT;
}

int engine_buffer_read(struct engine *e, uint64_t id, void *host, struct engine_error *err) {
  memset(err, 0, sizeof *err);
  engine_lock(e);
  struct ebuf *b = ebuf_find_locked(e, id);
  struct backend_fence *fence = NULL;
  if (b) {
    ebuf_ref_locked(b); /* kept alive across the copy, even if deleted meanwhile */
    fence = b->producer ? b->producer->done : NULL;
  }
  pthread_mutex_unlock(&e->lock);
  if (!b) return err->code = -ENOENT;
  /* A last partial word (a padded upload) comes through a copy: host holds bytes only. */
  uint64_t bytes = (uint64_t)exp_shape_count(&b->shape) * exp_dtype_bytes(b->dtype);
  float *words = bytes % 4 ? malloc(backend_buffer_count(b->buf) * 4) : host;
  int rc = words ? backend_buffer_download(e->devices[b->device], b->buf, fence, words,
                                           err->message, sizeof err->message)
                 : -ENOMEM;
  if (words && words != host) {
    if (rc == 0) memcpy(host, words, bytes);
    free(words);
  }
  engine_lock(e);
  ebuf_unref_locked(e, b);
  pthread_mutex_unlock(&e->lock);
  return rc ? (err->code = -EIO) : 0;
}

int engine_buffer_delete(struct engine *e, uint64_t id) {
  engine_lock(e);
  struct ebuf *b = ebuf_find_locked(e, id);
  int rc = !b ? -ENOENT : b->in_use > 0 ? -EBUSY : 0;
  if (rc == 0) ebuf_unlist_locked(e, b);
  pthread_mutex_unlock(&e->lock);
  return rc;
}

int engine_buffers_list(struct engine *e, uint64_t before_id, const char *client,
                        struct engine_buffer_view *out, int max) {
  int n = 0;
  engine_lock(e);
  for (int i = e->n_buffers - 1; i >= 0 && n < max; i--)
    if ((!before_id || e->buffers[i]->id < before_id) &&
        (!client || !strcmp(client, e->buffers[i]->client)))
      view_of(e->buffers[i], &out[n++]);
  pthread_mutex_unlock(&e->lock);
  return n;
}
