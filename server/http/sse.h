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

#endif
