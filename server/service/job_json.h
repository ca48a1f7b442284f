/* A job (GET /jobs/{id}, built from a job_view) and a device (GET /devices) as the
 * API shows them: shared by the HTTP routes and the durable store (records, a fleet
 * node's devices). */
#ifndef GPULAB_JOB_JSON_H
#define GPULAB_JOB_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include "server/engine/engine.h"

/* The job; with_result adds "result" (else only "passed"). A new reference, or
 * NULL when out of memory. */
json_t *job_json(const struct job_view *v, bool with_result);
/* job_json's document as its compact JSON text, the bytes json_text(job_json(...))
 * would be (malloc'd, the caller's; its length in *len when len is not NULL; NULL when
 * out of memory), written straight from v (api/json_writer.h): no tree. */
char *job_text(const struct job_view *v, bool with_result, size_t *len);
/* A job that no engine here holds, ended now: its stored record (JSON text; NULL or
 * unreadable: only its id is known) with state, finished_at and error {code, message}.
 * For a job a restart interrupted, or a fleet's job canceled in the store. A new
 * reference. */
json_t *job_json_ended(uint64_t id, const char *record, enum job_state state, const char *code,
                       const char *message);
/* Device index of engine e as GET /devices lists it ("index": its position here, the
 * "device" of jobs). A new reference. */
json_t *device_json(struct engine *e, int index);
/* Every device of e, as that list. A new reference. */
json_t *devices_json(struct engine *e);
/* RFC 3339 UTC with milliseconds, or null for 0. */
json_t *time_json(double unix_s);

#endif
