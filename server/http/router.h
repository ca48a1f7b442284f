/* The router: which route a URL names (router.c's table, and POST /<name> for every
 * experiment of the registry), the checks made before a body is read, and the
 * dispatch once it has arrived. Every route is also under "/v1" ("/v1/jobs/{id}" is
 * "/jobs/{id}", with the same route name in metrics and logs); the unversioned paths
 * are its aliases. */
#ifndef GPULAB_HTTP_ROUTER_H
#define GPULAB_HTTP_ROUTER_H

#include <stdbool.h>

#include "server/http/request.h"

/* Early answers, once the head has arrived and before the body is read: 404 (no
 * route), 401 (a token needed or wrong), 405 (method), 415 (media type) and 413 (by
 * Content-Length). Sets r's route name, Allow and body limit. Returns true when it
 * answered (*result), false when the request goes on. */
bool router_precheck(struct request *r, const char *url, enum MHD_Result *result);
/* Answers the request whose whole body has arrived (router_precheck let it on). */
enum MHD_Result router_dispatch(struct request *r, const char *url);

#endif
