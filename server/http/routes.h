/* The routes, one file per resource (routes_<resource>.c), as the router's table
 * (router.c) calls them: each answers one request of its route, once the whole body
 * has arrived, for any of the methods the table allows it (HEAD as GET). No routes
 * file includes another; what several share is in request.h, submit.h, sse.h and
 * static.h. */
#ifndef GPULAB_HTTP_ROUTES_H
#define GPULAB_HTTP_ROUTES_H

#include "server/http/request.h"

/* What the router matched. */
struct route_args {
  const char *url; /* the request's path */
  const char *id;  /* the text of the pattern's "{id}", "" without one */
  const char *id2; /* the text of its second "{...}" ("{version}"), "" without one */
  int type;        /* POST /<experiment>: its enum exp_type; -1 for other routes */
};

typedef enum MHD_Result route_fn(struct request *r, const struct route_args *a);

/* routes_jobs.c: POST and GET /jobs, GET and DELETE /jobs/{id}, and the event
 * streams GET /jobs/{id}/events and GET /events. */
route_fn route_jobs, route_job, route_job_events, route_events;
/* routes_problems.c: POST and GET /problems, GET and DELETE /problems/{name}, GET
 * /problems/{name}/versions and /problems/{name}/versions/{version}, POST
 * /problems/{name}/jobs. */
route_fn route_problems, route_problem, route_problem_versions, route_problem_version,
    route_problem_jobs;
/* routes_experiments.c: POST /<experiment>, one per registered experiment. */
route_fn route_experiment;
/* routes_buffers.c: POST and GET /buffers, GET and DELETE /buffers/{id}. */
route_fn route_buffers, route_buffer;
/* routes_sweeps.c: POST and GET /sweeps, GET and DELETE /sweeps/{id}. */
route_fn route_sweeps, route_sweep;
/* routes_device.c: GET /device, /devices, /health, /metrics and /me. */
route_fn route_device, route_devices, route_health, route_metrics, route_me;
/* routes_kernels.c: POST and GET /kernels, GET and DELETE /kernels/{id}, GET
 * /kernels/signatures; route_kernels_media_type: whether POST /kernels takes a body of
 * Content-Type ct (JSON, text/x-cuda or text/plain with the fields as query
 * parameters, multipart/form-data; NULL: JSON). */
route_fn route_kernels, route_kernel, route_kernel_signatures;
bool route_kernels_media_type(const char *ct);
/* routes_kernel_versions.c: a kernel's versions: GET /kernels/{id}/versions, GET and
 * DELETE /kernels/{id}/versions/{version}, GET /kernels/{id}/diff?from=&to=; the
 * compiler's view, GET /kernels/{id}/ptx and /sass (the newest version) and
 * /kernels/{id}/versions/{version}/ptx and /sass. */
route_fn route_kernel_versions, route_kernel_version, route_kernel_diff, route_kernel_ptx,
    route_kernel_sass;
/* routes_problems.c's rule of who sees a problem, for the routes that take one: version
 * `version` of problem name (0: the newest, which must not be deleted) when r may see it
 * (its owner's, or public), into *row and *def (the caller clears both). 0, -ENOENT
 * (none that r may see), or the store's negative errno. */
struct store_problem;
struct problem_def;
int route_problem_visible(struct request *r, const char *name, int version,
                          struct store_problem *row, struct problem_def **def);
/* routes_leaderboard.c: GET /leaderboard/{experiment}; route_leaderboard_board: its
 * document for experiment type (one that takes users' kernels) at size (?size='s text;
 * NULL: the default), also what a kernel's versions take their best figures from.
 * NULL with err (400 for a bad size). The caller owns it. */
route_fn route_leaderboard;
json_t *route_leaderboard_board(struct request *r, int type, const char *size,
                                struct api_error *err);
/* routes_static.c: GET / (the dashboard, or the list of routes), /static/... and
 * /openapi.json. */
route_fn route_index, route_static, route_openapi;

#endif
