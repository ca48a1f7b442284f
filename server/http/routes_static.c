/* The routes of the page and the API's description: GET / (the dashboard for a
 * browser, the list of routes for an API client), /static/<name> (the dashboard's files,
 * static.c) and /openapi.json (api/openapi.json as built in). */
#include <string.h>

#include "api/openapi.h"
#include "server/http/routes.h"
#include "server/http/static.h"

/* The routes, for an API client: POST /<experiment> for each, then the others. */
static enum MHD_Result index_page(struct request *r) {
  static const char *const fixed[] = {"POST /jobs",
                                      "GET /jobs",
                                      "GET /jobs/{id}",
                                      "DELETE /jobs/{id}",
                                      "GET /jobs/{id}/events",
                                      "GET /events",
                                      "POST /buffers",
                                      "GET /buffers",
                                      "GET /buffers/{id}",
                                      "DELETE /buffers/{id}",
                                      "GET /device",
                                      "GET /devices",
                                      "GET /health",
                                      "GET /openapi.json",
                                      "POST /sweeps",
                                      "GET /sweeps",
                                      "GET /sweeps/{id}",
                                      "DELETE /sweeps/{id}",
                                      "GET /me",
                                      "POST /kernels",
                                      "GET /kernels",
                                      "GET /kernels/{id}",
                                      "DELETE /kernels/{id}",
                                      "GET /kernels/signatures",
                                      "GET /leaderboard/{experiment}"};
  json_t *routes = json_array();
  for (int t = 0; t < EXP_TYPE_COUNT; t++)
    json_array_append_new(routes, json_sprintf("POST %s", exp_type_route((enum exp_type)t)));
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    json_array_append_new(routes, json_string(fixed[i]));
  return respond_json(r, 200, json_pack("{s:s,s:o}", "service", "gpulabd", "routes", routes));
}

enum MHD_Result route_index(struct request *r, const struct route_args *a) {
  const char *accept = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                   MHD_HTTP_HEADER_ACCEPT);
  return static_wants_html(accept) ? static_respond(r, a->url) : index_page(r);
}

enum MHD_Result route_static(struct request *r, const struct route_args *a) {
  return static_respond(r, a->url);
}

/* api/openapi.json as built in (api/openapi.h). */
enum MHD_Result route_openapi(struct request *r, const struct route_args *a) {
  struct MHD_Response *resp = MHD_create_response_from_buffer(
      api_openapi_json_len, (void *)api_openapi_json, MHD_RESPMEM_PERSISTENT);
  if (!resp) return MHD_NO;
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
  return request_queue(r, 200, resp, api_openapi_json_len);
}
