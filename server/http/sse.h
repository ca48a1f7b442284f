/* Server-Sent Events: a job's state changes and progress, or every job's, streamed
 * without a thread per listener. */
#ifndef GPULAB_HTTP_SSE_H
#define GPULAB_HTTP_SSE_H

#include "server/http/request.h"

/* Answers with a stream of one job's events (job != NULL, borrowed; the stream ends
 * with the job) or of every job r may see. Streams end when the engine stops (it
 * closes the event bus before the daemon stops). A reconnecting EventSource's
 * Last-Event-ID goes on from there. */
enum MHD_Result sse_respond(struct request *r, struct job *job);
/* The same for a job this gpulabd does not hold (a fleet's other node's), as the
 * store recorded it (record, borrowed), with the bus's events after seq after (read
 * before the record: a change between the two is said, and said once). Its events
 * come from the fleet (durable_fleet); a final record ends the stream at once. */
enum MHD_Result sse_respond_stored(struct request *r, uint64_t id, uint64_t after,
                                   const json_t *record);

#endif
