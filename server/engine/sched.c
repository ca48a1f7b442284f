/* Fair queueing: per queue (device), the clients with items there form a ring;
 * sched_pop serves the ring's head and moves it to the back. Client records are few
 * (one per address or token), so a list is enough. */
#include "server/engine/sched.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sched_client {
  struct sched_client *next_known; /* every client */
  char name[64];
  int pending;
  /* per queue: */
  struct sched_client *next_ready[SCHED_MAX_QUEUES]; /* ring of clients with items */
  bool ready[SCHED_MAX_QUEUES];
  struct sched_item *head[SCHED_MAX_QUEUES]; /* sorted: priority desc, then seq asc */
};

struct ring {
  struct sched_client *head, *tail;
  int items;
};

struct sched {
  struct sched_client *known;
  int n_queues;
  struct ring rings[SCHED_MAX_QUEUES];
};

int sched_new(int n_queues, struct sched **out) {
  if (n_queues < 1 || n_queues > SCHED_MAX_QUEUES) return -EINVAL;
  *out = calloc(1, sizeof **out);
  if (!*out) return -ENOMEM;
  (*out)->n_queues = n_queues;
  return 0;
}

int sched_queued(const struct sched *s, int queue) { return s->rings[queue].items; }

void sched_free(struct sched *s) {
  if (!s) return;
  for (struct sched_client *c = s->known, *next; c; c = next) {
    next = c->next_known;
    free(c);
  }
  free(s);
}

struct sched_client *sched_client(struct sched *s, const char *name) {
  for (struct sched_client *c = s->known; c; c = c->next_known)
    if (strncmp(c->name, name, sizeof c->name - 1) == 0) return c;
  struct sched_client *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  snprintf(c->name, sizeof c->name, "%s", name);
  c->next_known = s->known;
  s->known = c;
  return c;
}

int sched_pending(const struct sched_client *c) { return c->pending; }
void sched_pending_add(struct sched_client *c, int delta) { c->pending += delta; }

static void ring_append(struct ring *r, int q, struct sched_client *c) {
  c->ready[q] = true;
  c->next_ready[q] = NULL;
  if (r->tail)
    r->tail->next_ready[q] = c;
  else
    r->head = c;
  r->tail = c;
}

static void ring_remove(struct ring *r, int q, struct sched_client *c) {
  struct sched_client **link = &r->head, *prev = NULL;
  while (*link && *link != c) {
    prev = *link;
    link = &(*link)->next_ready[q];
  }
  if (!*link) return;
  *link = c->next_ready[q];
  if (r->tail == c) r->tail = prev;
  c->ready[q] = false;
}

static bool goes_before(const struct sched_item *a, const struct sched_item *b) {
  return a->priority != b->priority ? a->priority > b->priority : a->seq < b->seq;
}

void sched_push(struct sched *s, int queue, struct sched_client *c, struct sched_item *item) {
  item->client = c;
  item->queue = queue;
  struct sched_item **link = &c->head[queue];
  while (*link && !goes_before(item, *link)) link = &(*link)->next;
  item->next = *link;
  *link = item;
  s->rings[queue].items++;
  if (!c->ready[queue]) ring_append(&s->rings[queue], queue, c);
}

struct sched_item *sched_pop(struct sched *s, int queue) {
  struct ring *r = &s->rings[queue];
  struct sched_client *c = r->head;
  if (!c) return NULL;
  struct sched_item *item = c->head[queue];
  c->head[queue] = item->next;
  item->next = NULL;
  r->items--;
  ring_remove(r, queue, c);
  if (c->head[queue]) ring_append(r, queue, c); /* its next item waits for the others' turns */
  return item;
}

void sched_remove(struct sched *s, struct sched_item *item) {
  struct sched_client *c = item->client;
  if (!c) return;
  int q = item->queue;
  struct sched_item **link = &c->head[q];
  while (*link && *link != item) link = &(*link)->next;
  if (!*link) return;
  *link = item->next;
  item->next = NULL;
  s->rings[q].items--;
  if (!c->head[q]) ring_remove(&s->rings[q], q, c);
}
