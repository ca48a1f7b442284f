/* The sweeps' table: the newest sweeps in id order, oldest forgotten first. */
#include "server/service/sweeps.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sweeps {
  pthread_mutex_t lock;
  struct sweep_copy *list; /* n of max_kept, in id order (ids only grow) */
  int n, max_kept;
  uint64_t next_id;  /* the next sweep's id */
  uint64_t reserved; /* ids up to this are recorded as used */
  int (*reserve)(void *arg, uint64_t *next, uint64_t upto);
  void *reserve_arg;
};

void sweep_copy_free(struct sweep_copy *c) {
  if (!c) return;
  free(c->jobs);
  free(c->desc);
  memset(c, 0, sizeof *c);
}

int sweeps_new(int max_kept, uint64_t first_id,
               int (*reserve)(void *arg, uint64_t *next, uint64_t upto), void *arg,
               struct sweeps **out) {
  *out = NULL;
  if (max_kept < 1) return -EINVAL;
  struct sweeps *s = calloc(1, sizeof *s);
  if (!s || !(s->list = calloc((size_t)max_kept, sizeof *s->list))) {
    free(s);
    return -ENOMEM;
  }
  pthread_mutex_init(&s->lock, NULL);
  s->max_kept = max_kept;
  s->next_id = first_id ? first_id : 1;
  s->reserved = s->next_id - 1;
  s->reserve = reserve;
  s->reserve_arg = arg;
  *out = s;
  return 0;
}

void sweeps_free(struct sweeps *s) {
  if (!s) return;
  for (int i = 0; i < s->n; i++) sweep_copy_free(&s->list[i]);
  pthread_mutex_destroy(&s->lock);
  free(s->list);
  free(s);
}

/* A deep copy of from into to; -ENOMEM leaves to zeroed. */
static int copy(const struct sweep_copy *from, struct sweep_copy *to) {
  *to = *from;
  to->jobs = malloc((size_t)from->n_jobs * sizeof *to->jobs);
  to->desc = strdup(from->desc);
  if (!to->jobs || !to->desc) {
    sweep_copy_free(to);
    return -ENOMEM;
  }
  memcpy(to->jobs, from->jobs, (size_t)from->n_jobs * sizeof *to->jobs);
  return 0;
}

/* Appends owned (its id above every listed one), forgetting the oldest when full.
 * Under the lock. */
static void append_locked(struct sweeps *s, struct sweep_copy *owned) {
  if (s->n == s->max_kept) {
    sweep_copy_free(&s->list[0]);
    memmove(&s->list[0], &s->list[1], (size_t)(s->n - 1) * sizeof *s->list);
    s->n--;
  }
  s->list[s->n++] = *owned;
}

int sweeps_add(struct sweeps *s, const char *client, const uint64_t *jobs, int n_jobs,
               const char *desc, double created_at, uint64_t *id) {
  if (n_jobs < 1 || !desc) return -EINVAL;
  struct sweep_copy c = {
      .n_jobs = n_jobs, .created_at = created_at, .jobs = (uint64_t *)jobs, .desc = (char *)desc};
  snprintf(c.client, sizeof c.client, "%s", client);
  struct sweep_copy owned;
  if (copy(&c, &owned)) return -ENOMEM;
  pthread_mutex_lock(&s->lock);
  int rc = 0;
  if (s->reserve && s->next_id > s->reserved) {
    uint64_t from = s->next_id, upto = from + SWEEPS_IDS_BLOCK - 1;
    if ((rc = s->reserve(s->reserve_arg, &from, upto)) == 0 && from < s->next_id) rc = -EINVAL;
    if (rc == 0) {
      s->reserved = upto + (from - s->next_id); /* moved on: the same length */
      s->next_id = from;
    }
  }
  if (rc == 0) {
    owned.id = s->next_id++;
    append_locked(s, &owned);
    *id = owned.id;
  }
  pthread_mutex_unlock(&s->lock);
  if (rc) sweep_copy_free(&owned);
  return rc;
}

int sweeps_restore(struct sweeps *s, const struct sweep_copy *c) {
  if (c->n_jobs < 1 || !c->desc || c->id == 0) return -EINVAL;
  struct sweep_copy owned;
  if (copy(c, &owned)) return -ENOMEM;
  pthread_mutex_lock(&s->lock);
  int rc = (s->n && s->list[s->n - 1].id >= c->id) || c->id >= s->next_id ? -EINVAL : 0;
  if (rc == 0) append_locked(s, &owned);
  pthread_mutex_unlock(&s->lock);
  if (rc) sweep_copy_free(&owned);
  return rc;
}

/* The index of id in the list, or -1. Under the lock. */
static int find_locked(const struct sweeps *s, uint64_t id) {
  int lo = 0, hi = s->n - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    if (s->list[mid].id == id) return mid;
    if (s->list[mid].id < id)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return -1;
}

int sweeps_remove(struct sweeps *s, uint64_t id) {
  pthread_mutex_lock(&s->lock);
  int i = find_locked(s, id);
  if (i >= 0) {
    sweep_copy_free(&s->list[i]);
    memmove(&s->list[i], &s->list[i + 1], (size_t)(s->n - i - 1) * sizeof *s->list);
    s->n--;
  }
  pthread_mutex_unlock(&s->lock);
  return i >= 0 ? 0 : -ENOENT;
}

int sweeps_get(struct sweeps *s, uint64_t id, struct sweep_copy *out) {
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&s->lock);
  int i = find_locked(s, id);
  int rc = i >= 0 ? copy(&s->list[i], out) : -ENOENT;
  pthread_mutex_unlock(&s->lock);
  return rc;
}

int sweeps_list(struct sweeps *s, const char *client, uint64_t before_id, struct sweep_copy *out,
                int max) {
  int n = 0, rc = 0;
  pthread_mutex_lock(&s->lock);
  for (int i = s->n - 1; i >= 0 && n < max && rc == 0; i--) {
    const struct sweep_copy *sw = &s->list[i];
    if ((before_id && sw->id >= before_id) || (client && strcmp(client, sw->client) != 0)) continue;
    if ((rc = copy(sw, &out[n])) == 0) n++;
  }
  pthread_mutex_unlock(&s->lock);
  if (rc == 0) return n;
  for (int i = 0; i < n; i++) sweep_copy_free(&out[i]);
  return rc;
}

uint64_t sweeps_next_id(struct sweeps *s) {
  pthread_mutex_lock(&s->lock);
  uint64_t id = s->next_id;
  pthread_mutex_unlock(&s->lock);
  return id;
}
