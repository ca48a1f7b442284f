/* Fair queueing of runnable jobs, per device: on each device one queue per client,
 * served round robin; within a client, higher priority first, then first come
 * first served. Also counts each client's pending jobs (queued or waiting, on any
 * device) for the per-client limit. Not thread-safe: the engine's lock guards it. */
#ifndef GPULAB_SCHED_H
#define GPULAB_SCHED_H

#include <stdint.h>

/* Embedded in what is queued; the scheduler never owns it. */
struct sched_item {
  struct sched_item *next;
  int priority;
  uint64_t seq; /* submission order */
  struct sched_client *client;
  int queue; /* the device it waits for */
};

#define SCHED_MAX_QUEUES 16

struct sched;

/* n_queues: one per device, 1..SCHED_MAX_QUEUES. Returns 0 or -ENOMEM / -EINVAL. */
int sched_new(int n_queues, struct sched **out);
void sched_free(struct sched *s); /* NULL is a no-op; items are not touched */

/* The client's record, created on first use (NULL when out of memory). Lives as
 * long as the scheduler. */
struct sched_client *sched_client(struct sched *s, const char *name);
/* Pending jobs (queued or waiting) of the client; adjust with delta. */
int sched_pending(const struct sched_client *c);
void sched_pending_add(struct sched_client *c, int delta);

void sched_push(struct sched *s, int queue, struct sched_client *c, struct sched_item *item);
/* The next item of queue in round-robin order, removed; NULL when none is queued. */
struct sched_item *sched_pop(struct sched *s, int queue);
int sched_queued(const struct sched *s, int queue); /* items waiting in queue */
/* Removes item if queued. */
void sched_remove(struct sched *s, struct sched_item *item);

#endif
