/* POST /<experiment>: one route per experiment of the registry (router.c matches
 * them), its body the params and job options of that experiment; ?profile= as the
 * body's "profile", for a quick look from curl. */
#include <string.h>

#include "api/params.h"
#include "server/http/routes.h"
#include "server/http/submit.h"

/* ?profile=1|true|counters|full|0|false|off over the body's: 0, or 400 answered. */
static int profile_query(struct request *r, struct exp_spec *spec, enum MHD_Result *ret) {
  const char *q = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "profile");
  if (!q) return 0;
  static const char *const on[] = {"1", "true", "counters"}, *const off[] = {"0", "false", "off"};
  for (int i = 0; i < 3; i++) {
    if (strcmp(q, on[i]) == 0) spec->profile = EXP_PROFILE_COUNTERS;
    if (strcmp(q, off[i]) == 0) spec->profile = EXP_PROFILE_OFF;
    if (strcmp(q, on[i]) == 0 || strcmp(q, off[i]) == 0) return 0;
  }
  if (strcmp(q, "full") == 0) {
    spec->profile = EXP_PROFILE_FULL;
    return 0;
  }
  *ret = respond_fail(r, 400, "out_of_range", "profile",
                      "?profile= takes 1, true, counters, full, 0, false or off, got '%.40s'", q);
  return -1;
}

enum MHD_Result route_experiment(struct request *r, const struct route_args *a) {
  struct exp_spec spec;
  struct api_job_options opts;
  struct api_error err;
  struct api_kernel_resolver kr = submit_kernel_resolver(r);
  if (api_params_parse_with((enum exp_type)a->type, r->body ? r->body : "", r->body_len, &spec,
                            &opts, &kr, &err))
    return respond_error(r, &err);
  enum MHD_Result ret;
  if (profile_query(r, &spec, &ret)) return ret;
  return submit_job(r, &spec, &opts, "");
}
