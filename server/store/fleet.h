/* A fleet: several gpulabd sharing one PostgreSQL database (--db postgresql://...).
 * With an SQLite store there is no fleet and nothing here runs.
 *
 * Who owns what. The store's jobs table is the fleet's queue: a row's node column
 * says which gpulabd runs the job (NULL: nobody yet, any node may claim it). This
 * module speaks the fleet's SQL on a connection of its own, from a thread of its own
 * (never an HTTP thread, never the store's writer, so a slow batch delays no lease);
 * it knows neither the engine nor JSON: what a claimed job becomes, and what a failed
 * record says, are its caller's callbacks (durable.c glues them to the engine).
 *
 * The protocol, every L/3 seconds (L = --lease-s):
 *  - Nodes and leases: each node has a row in table nodes (name, advertised URL,
 *    started, lease_until, epoch, devices). Registering bumps the epoch; a renewal
 *    moves lease_until to the database's now + L where the epoch is still ours, and
 *    says the node's devices again (GET /devices lists the fleet's). Times
 *    are the database's clock, so nodes' clocks need not agree.
 *  - Self-fencing: a node whose last renewal succeeded more than L/2 ago must stop
 *    starting jobs (fleet_fenced: its caller pauses the engine) until it renews; a
 *    renewal that finds its epoch moved (another node expired it) calls taken_over,
 *    which must drop the jobs the take-over moved, and then registers afresh.
 *  - Expiry: a node past its lease is taken over by the first live node that sees it,
 *    in one transaction holding the node's row: its epoch bumped, its unstarted jobs
 *    (queued, waiting) put back unclaimed as queued, its running ones failed
 *    `interrupted` with a record from interrupted_record. No accepted job is lost.
 *  - Claims: queued unclaimed jobs are claimed in batches with FOR UPDATE SKIP LOCKED,
 *    in a round robin over clients (each client's oldest first, then each one's
 *    second...), at most what capacity says the node can start now, and handed to
 *    run_claimed. A job whose parents (depends_on, the jobs.parents column) have not
 *    all ended is claimed only by the node that runs them (its chain waits there on
 *    the engine's events); once they ended, by any node (run_claimed fails it when a
 *    parent failed, as a child of a failed parent fails on one node).
 *  - Any node answers any job from the store; a DELETE of a job another node holds
 *    leaves a cancel request on its row (store_job_cancel), which the holder applies;
 *    a job on a job another node holds goes there (store_job_elsewhere: 307).
 *    Buffers stay in the memory of the node that made them; table buffers says which
 *    (store_buffer_elsewhere): a request for one, or a job on one, goes there (307),
 *    or finds it lost once that node is dead (410).
 *    LISTEN/NOTIFY wakes the thread at once for a cancel request or jobs left
 *    unclaimed; the L/3 period is the fallback.
 *  - Events: a trigger (store_pg.c) notifies every state change of a job the database
 *    records; while wants_events says so, the thread listens and hands each to
 *    job_event, so a node's event streams show the jobs of other nodes too.
 *  - Fencing of writes: the store writes a job's row only where its node is still this
 *    node and the job is unfinished (store_pg.c), so a node taken over changes nothing
 *    of what others now own, and no job is run by two nodes at once.
 *  - Local first: a job accepted by a node is claimed by it at once (its row carries
 *    its name) and runs there as on one box, inline runs too. A node with more
 *    queued than its lanes hands the newest of them back to the queue (node NULL),
 *    those that nothing ties to it (no chains, buffers or waiters: release), retrying
 *    until the database has them: they run wherever there is room first. */
#ifndef GPULAB_FLEET_H
#define GPULAB_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fleet;

struct fleet_config {
  const char *uri;       /* the store's libpq URI (a connection of the fleet's own) */
  const char *node;      /* this node's name, as store_set_node */
  const char *advertise; /* the URL others reach this one at (or fleet_advertise) */
  double lease_s;        /* L */
  void *arg;             /* the callbacks' */
  /* This node's devices as JSON text (an array, as GET /devices lists them), malloc'd
   * (NULL: out of memory); asked at every renewal, so others see its health. */
  char *(*devices)(void *arg);
  /* How many more jobs this node could start now (0: claim none). */
  int (*capacity)(void *arg);
  /* A job claimed by this node: run it under its id (request as the store keeps it). */
  void (*run_claimed)(void *arg, uint64_t id, const void *request, size_t request_len);
  /* A failed `interrupted` record for a job the dead node ran (record: its stored
   * one, or NULL): malloc'd text, or NULL to keep the stored record. */
  char *(*interrupted_record)(void *arg, uint64_t id, const char *record, const char *why);
  /* Another node took this one over: drop the jobs whose rows are no longer this
   * node's (store_job_held; writes about them change nothing). */
  void (*taken_over)(void *arg);
  /* A cancel request another node left for job id, which this node holds. */
  void (*cancel)(void *arg, uint64_t id);
  /* Jobs queued here past what this node starts soon, taken out of its engine for
   * the fleet's queue: their ids (at most max) into ids, their rows written. */
  int (*release)(void *arg, uint64_t *ids, int max);
  /* A job's state changed in the database (any node's job, this one's too): payload
   * is JSON {job, state, node, client, type, error}, error a code or null. Called on
   * the fleet's thread, often: it must be quick. */
  void (*job_event)(void *arg, const char *payload);
  /* Whether job_event is wanted now: the channel is listened to only then (every
   * node would read every node's changes), asked at every pass; fleet_wake when it
   * changes. */
  bool (*wants_events)(void *arg);
};

/* Registers the node and starts the fleet's thread: before the node takes any job, so
 * that whatever it accepts is under its lease. cfg's strings are copied.
 * Returns 0, or a negative errno with err (-EIO: the database cannot be reached). */
int fleet_start(const struct fleet_config *cfg, struct fleet **out, char *err, size_t err_len);
/* Stopping: claims nothing more and hands nothing back, while the lease is still
 * renewed (the jobs running here may finish, as theirs). */
void fleet_drain(struct fleet *f);
/* Stops the thread. The lease is left to run out: a node back before then (a
 * restart) keeps its unfinished jobs; after it, others take them. NULL: a no-op. */
void fleet_stop(struct fleet *f);

/* The URL others reach this node at, once it is known (--port 0 picks the port as
 * the server starts, after the node joined): written at the next renewal. */
void fleet_advertise(struct fleet *f, const char *url);
const char *fleet_node(const struct fleet *f); /* its name (--node) */
/* A pass of the fleet's thread now (wants_events changed). Any thread. */
void fleet_wake(struct fleet *f);
/* The fleet's queued jobs per node as of the last lease tick (node "": unclaimed),
 * for /metrics: up to max (FLEET_QUEUED_MAX at most) into out; returns how many. */
#define FLEET_QUEUED_MAX 64
struct fleet_queued {
  char node[64];
  int64_t jobs;
};
int fleet_queued(struct fleet *f, struct fleet_queued *out, int max);
/* The live nodes (this one too), as of the last lease tick, by name: up to max
 * (FLEET_NODES_MAX at most) into out; returns how many. Each devices is the node's
 * devices' JSON text, malloc'd: the caller frees it. */
#define FLEET_NODES_MAX 64
struct fleet_node {
  char name[64];
  char advertise[256];
  char *devices;
};
int fleet_nodes(struct fleet *f, struct fleet_node *out, int max);
/* True while the last successful renewal is older than L/2: start no job. */
bool fleet_fenced(struct fleet *f);
/* Seconds since the last successful renewal. */
double fleet_lease_age(struct fleet *f);

#endif
