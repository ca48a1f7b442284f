/* The sweeps' table: a ring of the newest sweeps, oldest forgotten first. */
#include "server/sweeps.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sweep {
  struct sweep_copy c; /* owned by the table */
};

struct sweeps {
  pthread_mutex_t lock;
  struct sweep *ring; /* max_kept slots; slot of id: (id - 1) % max_kept */
  int max_kept;
  uint64_t next_id;   /* the next sweep's id; ids below next_id - max_kept are gone */
};

void sweep_copy_free(struct sweep_copy *c) {
  if (!c) return;
  free(c->jobs);
  free(c->desc);
  memset(c, 0, sizeof *c);
}

int sweeps_new(int max_kept, struct sweeps **out) {
  *out = NULL;
  if (max_kept < 1) return -EINVAL;
  struct sweeps *s = calloc(1, sizeof *s);
  if (!s || !(s->ring = calloc((size_t)max_kept, sizeof *s->ring))) {
    free(s);
    return -ENOMEM;
  }
  pthread_mutex_init(&s->lock, NULL);
  s->max_kept = max_kept;
  s->next_id = 1;
  *out = s;
  return 0;
}

void sweeps_free(struct sweeps *s) {
  if (!s) return;
  for (int i = 0; i < s->max_kept; i++) sweep_copy_free(&s->ring[i].c);
  pthread_mutex_destroy(&s->lock);
  free(s->ring);
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

int sweeps_add(struct sweeps *s, const char *client, const uint64_t *jobs, int n_jobs,
               const char *desc, double created_at, uint64_t *id) {
  if (n_jobs < 1 || !desc) return -EINVAL;
  struct sweep_copy c = {.n_jobs = n_jobs, .created_at = created_at, .jobs = (uint64_t *)jobs,
                         .desc = (char *)desc};
  snprintf(c.client, sizeof c.client, "%s", client);
  struct sweep_copy owned;
  if (copy(&c, &owned)) return -ENOMEM;
  pthread_mutex_lock(&s->lock);
  owned.id = s->next_id++;
  struct sweep *slot = &s->ring[(owned.id - 1) % (uint64_t)s->max_kept];
  sweep_copy_free(&slot->c); /* the oldest, forgotten */
  slot->c = owned;
  pthread_mutex_unlock(&s->lock);
  *id = owned.id;
  return 0;
}

/* The slot holding id, or NULL. Under the lock. */
static const struct sweep *find_locked(const struct sweeps *s, uint64_t id) {
  if (id == 0 || id >= s->next_id) return NULL;
  const struct sweep *slot = &s->ring[(id - 1) % (uint64_t)s->max_kept];
  return slot->c.id == id ? slot : NULL;
}

int sweeps_get(struct sweeps *s, uint64_t id, struct sweep_copy *out) {
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&s->lock);
  const struct sweep *sw = find_locked(s, id);
  int rc = sw ? copy(&sw->c, out) : -ENOENT;
  pthread_mutex_unlock(&s->lock);
  return rc;
}

int sweeps_list(struct sweeps *s, const char *client, uint64_t before_id, struct sweep_copy *out,
                int max) {
  int n = 0, rc = 0;
  pthread_mutex_lock(&s->lock);
  uint64_t id = before_id && before_id < s->next_id ? before_id : s->next_id;
  for (id = id - 1; id >= 1 && n < max && rc == 0; id--) {
    const struct sweep *sw = find_locked(s, id);
    if (!sw) break; /* older ones are gone too */
    if (client && strcmp(client, sw->c.client) != 0) continue;
    if ((rc = copy(&sw->c, &out[n])) == 0) n++;
  }
  pthread_mutex_unlock(&s->lock);
  if (rc == 0) return n;
  for (int i = 0; i < n; i++) sweep_copy_free(&out[i]);
  return rc;
}
