/* POST /<experiment>: one route per experiment of the registry (router.c matches
 * them), its body the params and job options of that experiment. */
#include "api/params.h"
#include "server/http/routes.h"
#include "server/http/submit.h"

enum MHD_Result route_experiment(struct request *r, const struct route_args *a) {
  struct exp_spec spec;
  struct api_job_options opts;
  struct api_error err;
  struct api_kernel_resolver kr = submit_kernel_resolver(r);
  if (api_params_parse_with((enum exp_type)a->type, r->body ? r->body : "", r->body_len, &spec,
                            &opts, &kr, &err))
    return respond_error(r, &err);
  return submit_job(r, &spec, &opts, "");
}
