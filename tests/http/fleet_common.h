/* What the fleet's tests share (test_fleet.c: jobs, events, sweeps, kernels, devices
 * and buffers seen across nodes; test_fleet_takeover.c: a busy node's queue handed
 * over, a dead node taken over, fencing, fair claims, PostgreSQL restarted or away):
 * their database, nodes started on it, and the checks of a job seen from another
 * node. */
#ifndef GPULAB_TEST_FLEET_COMMON_H
#define GPULAB_TEST_FLEET_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include "tests/http_client.h"

extern char db[512];
#define SMALL "{\"m\":33,\"n\":47,\"variant\":\"naive\",\"warmup\":0,\"batches\":1,\"reps\":1}"
/* Keeps the one stream busy for seconds. */
#define SLOW \
  "{\"n\":2000000,\"radius\":64,\"variant\":\"naive\",\"warmup\":0,\"batches\":40,\"reps\":1}"
/* A second or so on one stream. */
#define MEDIUM \
  "{\"n\":2000000,\"radius\":64,\"variant\":\"naive\",\"warmup\":0,\"batches\":4,\"reps\":1}"
#define FLOOD 12           /* one client's queued jobs behind another's one */
#define RESTART_POSTS 2000 /* at most, while PostgreSQL restarts */
/* Node name with `streams` streams and a 2 s lease; cpu_runner: users' kernels run in
 * the CPU test runner (--cpu-runner-test). */
void start_node_with(struct gpulabd *d, const char *name, const char *streams, bool cpu_runner);
/* Node name with one stream (a long job keeps it busy) and a 2 s lease. */
void start_node(struct gpulabd *d, const char *name);
double now_s(void);
long long post_on(struct http_client *c, const char *path, const char *body);
/* SLOW on d's one stream, running once this returns. */
long long start_slow(struct gpulabd *d);
/* The one value sql reads ("" for NULL). */
void query_text(const char *sql, char *out, size_t len);
/* Runs sql, which must succeed. */
void exec_sql(const char *sql);
/* The jobs.node column of job id ("" for NULL). */
void node_of(long long id, char *out, size_t len);
/* Until table nodes has d's URL (--port 0's, known once it listens: a renewal later). */
void wait_advertised(struct gpulabd *d, const char *name);
bool listed(json_t *page, long long id);
/* a's queued job read and listed from b, before a goes. */
void check_seen_from(struct gpulabd *b, long long id);
void delete_on(struct gpulabd *d, long long id);
void check_canceled(struct gpulabd *d, long long id);
/* b's /metrics, once it counts one job queued on a (the count is of b's last lease
 * tick), through promtool. */
void check_fleet_metrics(struct gpulabd *b);

/* A suite's setup: a database named name on the cluster of $GPULAB_TEST_DB (which
 * $GPULAB_PG_CLUSTER and $GPULAB_PG_DIR name), or CHECK_SKIP without them; before
 * each case it is emptied (fleet_db_reset), and dropped at the end (fleet_db_drop). */
int fleet_db_setup(const char *name);
void fleet_db_reset(void);
void fleet_db_drop(void);

#endif
