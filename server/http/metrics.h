/* gpulabd's Prometheus metrics: HTTP requests by route, method and status, jobs by
 * type, outcome and device, histograms of queue wait, run time and request duration
 * (by route and method), the process's standard metrics, gpulab_build_info, and
 * gauges read from the engine and the devices (labelled as the DCGM exporter labels
 * a GPU) when scraped. Rendered in the text exposition format, with the store's
 * size and health. Thread-safe. */
#ifndef GPULAB_METRICS_H
#define GPULAB_METRICS_H

#include <stddef.h>
#include "server/engine/engine.h"

struct metrics;

/* version (copied) is gpulabd's, for gpulab_build_info. Returns 0 or -ENOMEM. */
int metrics_new(const char *version, struct metrics **out);
void metrics_free(struct metrics *m); /* NULL is a no-op */

/* route is the matched pattern ("/jobs/{id}"), not the path, so series stay few. */
void metrics_http_request(struct metrics *m, const char *route, const char *method, int status,
                          double seconds);
/* A job ended in state ("done", "failed", "canceled") on device (its ordinal, -1:
 * never placed). queue_s < 0: it never ran. */
void metrics_job_ended(struct metrics *m, const char *type, const char *state, int device,
                       double queue_s, double run_s);

struct service;
/* The whole exposition, with the engine's, the store's and a fleet node's (NULL: none)
 * gauges read now (svc: the service's store and fleet, each NULL when none). Returns a malloc'd, NUL-terminated text (the caller frees it) and
 * its length, or NULL. */
char *metrics_render(struct metrics *m, struct engine *e, const struct service *svc, size_t *len);

#endif
