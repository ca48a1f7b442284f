/* A job submitted from a request (POST /jobs, POST /<experiment>, and any route that
 * makes a job): the checks before the engine's (health, the store, the users' kernels
 * it names, the client's rate), then the answer: at once, after running it here when it is tiny, or once it ends
 * (?wait=). */
#ifndef GPULAB_HTTP_SUBMIT_H
#define GPULAB_HTTP_SUBMIT_H

#include "api/params.h"
#include "server/http/request.h"

/* Submits spec with opts as r's client's job and answers r: 200 with the finished job
 * or 202 with it as it stands (and Location), or the refusal; params_prefix names
 * refused input fields ("params." under /jobs, "" under /<experiment>). */
enum MHD_Result submit_job(struct request *r, const struct exp_spec *spec,
                           const struct api_job_options *opts, const char *params_prefix);

/* The resolver of users' kernels named in r's variants (api/params.h), for the
 * parsers of r's body: "kernel:<id>" the kernel's newest version now, "kernel:<id>@<n>"
 * version n, "kernel:<name>" (also "@<n>") r's client's own kernel of that name and the
 * job's experiment. Each must exist, be r's or public and of the job's experiment: else
 * 400 unknown_variant, saying which part is wrong; each resolved is then in the
 * backends' table (kernels/user/ukreg.h). Every route that submits users' kernels
 * parses with it, so submit_job finds them checked. The job keeps the version resolved,
 * so that its run's label, kernel:<id>@<n>, says which code ran, also after a restart. */
struct api_kernel_resolver submit_kernel_resolver(struct request *r);

/* A fleet's refusal that another node can take: a job (or sweep) on a job another live
 * node holds (depends_on, or its output as an input) goes to that node (307
 * job_elsewhere), where the chain can run; one on a buffer another node made goes
 * where the buffer lives (307 buffer_elsewhere), or is 410 buffer_lost when that node
 * died with it. True when it answered (*ret); false: answer the refusal as usual. */
bool submit_elsewhere(struct request *r, const struct engine_error *refusal,
                      const char *params_prefix, enum MHD_Result *ret);

#endif
