/* Request parsing and validation: JSON bodies into exp_spec, rejecting anything
 * unknown, mistyped or out of range with an api_error that names the field. Which
 * fields a job type takes comes from its descriptor (kernels/core/experiment.h). */
#ifndef GPULAB_API_PARAMS_H
#define GPULAB_API_PARAMS_H

#include <jansson.h>
#include <stddef.h>
#include "api/error.h"
#include "kernels/core/experiment.h"

/* Allowed ranges, also quoted in error messages and the manual (docs/api.md). An
 * experiment's size params carry their own (exp_desc.params). */
#define API_MAX_WARMUP 1000
#define API_MAX_REPS 10000
#define API_MAX_WAIT_S 600
#define API_MIN_TIME_S 0.01 /* max_time: seconds of one run's timed batches (noise rule) */
#define API_MAX_TIME_S 600

#define API_MAX_PRIORITY 1000
#define API_MAX_DEPENDS 16
#define API_MAX_DEVICE 15

/* How a job runs, beside what it computes. */
struct api_job_options {
  int priority;     /* -API_MAX_PRIORITY..API_MAX_PRIORITY, default 0 */
  bool exclusive;   /* "isolation": "exclusive" (default) or "shared" */
  bool keep_output; /* keep the output as a buffer */
  bool host_sync;   /* "dependency": "event" (default) or "host" */
  int device;       /* pin to this device; -1 (default): the engine places it */
  int n_depends;
  uint64_t depends_on[API_MAX_DEPENDS];
};

/* A POST /jobs body: the job type, its parameters and its options. */
struct api_job_request {
  struct exp_spec spec;
  struct api_job_options opts;
};

/* Resolves a user's kernel that a variant names, text: "kernel:<id>" (its newest
 * version), "kernel:<id>@<version>" or "kernel:<name>" (the caller's own), to the
 * variant value of the version it names (exp_user_variant of the version's id); field
 * is where it was given. Returns 0, or -EINVAL with err filled (400). The HTTP layer
 * gives one; without one, "kernel:<n>" is the variant of id n unchecked and the other
 * forms are unknown variants. */
struct api_kernel_resolver {
  int (*resolve)(void *ctx, enum exp_type type, const char *text, const char *field, int *variant,
                 struct api_error *err);
  void *ctx;
};

/* Parses the body of POST /transpose etc. into spec (from the lecture's defaults)
 * and opts (the job options may stand beside the params there). Returns 0, or -EINVAL
 * with err filled (400). body need not be NUL-terminated. */
int api_params_parse(enum exp_type type, const char *body, size_t len, struct exp_spec *spec,
                     struct api_job_options *opts, struct api_error *err);

/* Parses a POST /jobs body {"type", "params", and the job options}. Returns 0 or -EINVAL (err filled). */
int api_job_request_parse(const char *body, size_t len, struct api_job_request *req,
                          struct api_error *err);
/* The same two with users' kernels named in variants resolved by kr (NULL: none). */
int api_params_parse_with(enum exp_type type, const char *body, size_t len, struct exp_spec *spec,
                          struct api_job_options *opts, const struct api_kernel_resolver *kr,
                          struct api_error *err);
int api_job_request_parse_with(const char *body, size_t len, struct api_job_request *req,
                               const struct api_kernel_resolver *kr, struct api_error *err);
/* api_params_parse_with over a body already parsed (root, an object, borrowed). */
int api_params_parse_json(enum exp_type type, json_t *root, struct exp_spec *spec,
                          struct api_job_options *opts, const struct api_kernel_resolver *kr,
                          struct api_error *err);

/* The params every experiment takes beside its own, for forms (api/describe.c): an
 * array of {"name", "kind": "integer" | "number" | "choice" | "boolean", and "min" and
 * "max" (the ranges the parser enforces) or "values" (a choice's, the default first)}.
 * The caller owns it. */
json_t *api_common_params_json(void);

/* Lets requests carry "fault": "device_lost" (gpulabd --allow-fault-injection, for
 * the recovery tests). Off by default: the field is then unknown. */
void api_params_allow_faults(bool allow);

/* Parses the ?wait= query value (seconds, 0..API_MAX_WAIT_S, may be fractional);
 * NULL gives default_s. Returns 0 or -EINVAL with err. */
int api_wait_parse(const char *text, double default_s, double *wait_s, struct api_error *err);

#endif
