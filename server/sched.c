/* Fair queueing: clients with queued items form a ring; sched_pop serves the ring's
 * head and moves it to the back. Client records are few (one per address or
 * token), so a list is enough. */
#include "server/sched.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sched_client {
  struct sched_client *next_known; /* every client */
  struct sched_client *next_ready; /* ring of clients with items */
  bool ready;
  char name[64];
  struct sched_item *head; /* sorted: priority desc, then seq asc */
  int pending;
};

struct sched {
  struct sched_client *known;
  struct sched_client *ready_head, *ready_tail;
};

int sched_new(struct sched **out) {
  *out = calloc(1, sizeof **out);
  return *out ? 0 : -ENOMEM;
}

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

static void ring_append(struct sched *s, struct sched_client *c) {
  c->ready = true;
  c->next_ready = NULL;
  if (s->ready_tail)
    s->ready_tail->next_ready = c;
  else
    s->ready_head = c;
  s->ready_tail = c;
}

static void ring_remove(struct sched *s, struct sched_client *c) {
  struct sched_client **link = &s->ready_head, *prev = NULL;
  while (*link && *link != c) {
    prev = *link;
    link = &(*link)->next_ready;
  }
  if (!*link) return;
  *link = c->next_ready;
  if (s->ready_tail == c) s->ready_tail = prev;
  c->ready = false;
}

static bool goes_before(const struct sched_item *a, const struct sched_item *b) {
  return a->priority != b->priority ? a->priority > b->priority : a->seq < b->seq;
}

void sched_push(struct sched *s, struct sched_client *c, struct sched_item *item) {
  item->client = c;
  struct sched_item **link = &c->head;
  while (*link && !goes_before(item, *link)) link = &(*link)->next;
  item->next = *link;
  *link = item;
  if (!c->ready) ring_append(s, c);
}

struct sched_item *sched_pop(struct sched *s) {
  struct sched_client *c = s->ready_head;
  if (!c) return NULL;
  struct sched_item *item = c->head;
  c->head = item->next;
  item->next = NULL;
  ring_remove(s, c);
  if (c->head) ring_append(s, c); /* its next item waits for the others' turns */
  return item;
}

void sched_remove(struct sched *s, struct sched_item *item) {
  struct sched_client *c = item->client;
  if (!c) return;
  struct sched_item **link = &c->head;
  while (*link && *link != item) link = &(*link)->next;
  if (!*link) return;
  *link = item->next;
  item->next = NULL;
  if (!c->head) ring_remove(s, c);
}
