/* Submitting a job from a request (submit.h). */
#include "server/http/submit.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/http/auth.h"
#include "server/service/ukernels.h"

/* A job the client waits for may run on this thread (engine_run_inline) when it is
 * small and short: at most --inline-max-bytes of data and 256 timed or warm-up
 * launches per variant, with no noise rule that could extend it. Longer jobs would
 * hold an HTTP thread that other connections need. */
static bool job_may_run_inline(struct request *r, struct job *job) {
  if (r->srv->opts.inline_max_bytes <= 0) return false;
  struct job_view v; /* its spec as resolved: sizes taken from input buffers too */
  job_get_view(r->srv->engine, job, &v);
  const struct exp_timing_params *t = &v.spec.timing;
  long long launches = ((long long)t->warmup + (long long)t->batches) * (t->reps > 0 ? t->reps : 1);
  return exp_spec_bytes(&v.spec) <= (uint64_t)r->srv->opts.inline_max_bytes &&
         v.spec.stop.max_noise == 0 && launches <= 256;
}

/* 200 with a finished job; 202 and where to look while it is still going. What the
 * client is told is in the store first (accepted jobs survive a crash): a job whose
 * first row could not be written is taken back and refused (507 or 503). It waits
 * for its own rows only (group commit: they may share a transaction with others
 * queued before them), never for rows queued after them. A finished job is answered
 * with the document the store recorded (job_view.doc), not built again. */
static enum MHD_Result respond_job(struct request *r, struct job *job, unsigned status_done) {
  const struct service *svc = r->srv->opts.service;
  int err = service_sync(svc, r->store_ticket);
  if (err) {
    engine_job_withdraw(r->srv->engine, job);
    return respond_storage(r, err);
  }
  struct job_view v;
  job_get_view(r->srv->engine, job, &v);
  /* Its later rows too: the state it is answered in. */
  if (v.record_ticket > r->store_ticket) service_sync(svc, v.record_ticket);
  bool final = job_state_final(v.state);
  if (final && v.doc) return respond_json_text(r, status_done, v.doc);
  if (!final) snprintf(r->location, sizeof r->location, "/jobs/%" PRIu64, v.id);
  char *text = job_text(&v, true, NULL);
  enum MHD_Result ret = respond_json_text(r, final ? status_done : 202, text);
  free(text);
  return ret;
}

/* ?wait=0: job as it was accepted (its first row's state), taken before a worker was
 * woken for it. While that state is its last recorded one, the answer is that row's
 * document (built once: the row's record is the same text less "result"), and it waits
 * for that row alone; else (it ended at once, or another worker took it meanwhile) as
 * respond_job. */
static enum MHD_Result respond_accepted(struct request *r, struct job *job) {
  const struct service *svc = r->srv->opts.service;
  struct job_view v;
  job_get_view(r->srv->engine, job, &v);
  if (job_state_final(v.state) || v.record_ticket != r->store_ticket) {
    engine_wake(r->srv->engine, job);
    return respond_job(r, job, 200);
  }
  char *text = service_accepted_text(svc, &v, r->store_ticket);
  engine_wake(r->srv->engine, job); /* after its record was given: one document */
  int err = service_sync(svc, r->store_ticket);
  if (err) {
    free(text);
    engine_job_withdraw(r->srv->engine, job);
    return respond_storage(r, err);
  }
  snprintf(r->location, sizeof r->location, "/jobs/%" PRIu64, v.id);
  enum MHD_Result ret = respond_json_text(r, 202, text);
  free(text);
  return ret;
}

/* The waited-for job ended, or the wait ran out. */
static enum MHD_Result resumed(struct request *r) { return respond_job(r, r->job, 200); }

/* The request as the engine takes it, from r's client. */
static void job_request(struct request *r, const struct exp_spec *spec,
                        const struct api_job_options *opts, struct engine_job_request *req) {
  *req = (struct engine_job_request){.spec = *spec,
                                     .device = opts->device,
                                     .priority = opts->priority,
                                     .exclusive = opts->exclusive,
                                     .keep_output = opts->keep_output,
                                     .host_sync = opts->host_sync,
                                     .n_depends = opts->n_depends};
  memcpy(req->depends_on, opts->depends_on, sizeof req->depends_on);
  request_client(r, req->client, sizeof req->client);
  req->admin = request_sees_all(r);
  req->max_queued = r->who ? r->who->max_queued : 0;
}

/* "kernel:<name or id>[@<version>]": the part before '@' into what (at most len - 1
 * characters), the version (0: none given) into *version. False when malformed. */
static bool split_kernel_name(const char *text, char *what, size_t len, int *version) {
  const char *at = strchr(text, '@');
  size_t n = at ? (size_t)(at - text) : strlen(text);
  *version = 0;
  if (n == 0 || n >= len) return false;
  memcpy(what, text, n);
  what[n] = '\0';
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)what[i]) && !strchr("_-.", what[i])) return false;
  if (!at) return true;
  uint64_t v;
  if (!parse_id(at + 1, &v) || v < 1 || v > 0x7fffffff) return false;
  *version = (int)v;
  return true;
}

/* The experiment a job of type on r names kernels of: a problem's route says which. */
static const char *kernels_of(const struct request *r, enum exp_type type) {
  return r->kernels_of ? r->kernels_of : exp_type_name(type);
}

/* The kernel id text names for r: itself when all digits, else r's client's own
 * kernel of that name and experiment, of which there must be one. 0 or err. */
static int kernel_named(struct request *r, enum exp_type type, const char *what, const char *text,
                        const char *field, int64_t *id, struct api_error *err) {
  uint64_t v;
  if (strspn(what, "0123456789") == strlen(what)) { /* an id; "0", "007": none */
    *id = parse_id(what, &v) && v <= INT64_MAX ? (int64_t)v : 0;
    return 0;
  }
  char me[64];
  int64_t ids[4];
  request_client(r, me, sizeof me);
  const char *of = kernels_of(r, type);
  int n = ukernels_named(r->srv->opts.service->ukernels, me, of, what, ids, 4);
  if (n < 0) return api_error_set(err, 503, "store_unavailable", field, "the store did not answer");
  if (n == 0)
    return api_error_set(err, 400, "unknown_variant", field,
                         "%s: you have no %s kernel named '%s' (GET /kernels lists yours)", text,
                         of, what);
  if (n > 1)
    return api_error_set(err, 400, "ambiguous_kernel", field,
                         "%s: you have %d %s kernels named '%s' (ids %lld, %lld%s), stored before "
                         "kernels had versions; name one by id, kernel:<id>",
                         text, n, of, what, (long long)ids[0], (long long)ids[1],
                         n > 2 ? ", ..." : "");
  *id = ids[0];
  return 0;
}

static int resolve_kernel(void *ctx, enum exp_type type, const char *text, const char *field,
                          int *variant, struct api_error *err) {
  struct request *r = ctx;
  struct ukernels *u = r->srv->opts.service->ukernels;
  char what[64];
  int version, versions = 0;
  int64_t id = 0;
  if (!split_kernel_name(text + 7, what, sizeof what, &version))
    return api_error_set(err, 400, "unknown_variant", field,
                         "'%.80s': a user's kernel is kernel:<id>, kernel:<id>@<version> or "
                         "kernel:<name> (one of yours)",
                         text);
  if (kernel_named(r, type, what, text, field, &id, err)) return -EINVAL;
  struct store_kernel k;
  int rc = id > 0 ? ukernels_version(u, id, 0, &k, &versions) : -ENOENT;
  if (rc == 0 && !k.is_public && !request_may_see(r, k.owner)) {
    ukernels_clear(&k);
    rc = -ENOENT;
  }
  if (rc) return api_error_set(err, 400, "unknown_variant", field, "%s: no kernel %s", text, what);
  if (version && version != k.version) {
    ukernels_clear(&k);
    rc = ukernels_version(u, id, version, &k, NULL);
    if (rc == 0 && !k.is_public && !request_may_see(r, k.owner)) ukernels_clear(&k), rc = -ENOENT;
    if (rc)
      return api_error_set(err, 400, "unknown_variant", field,
                           "%s: kernel %lld has no version %d (its versions: GET "
                           "/kernels/%lld/versions)",
                           text, (long long)id, version, (long long)id);
  }
  if (strcmp(k.experiment, kernels_of(r, type)) != 0)
    rc = api_error_set(err, 400, "unknown_variant", field, "%s is a %s kernel, not %s", text,
                       k.experiment, kernels_of(r, type));
  else if (k.id > EXP_USER_KERNEL_MAX_ID)
    rc = api_error_set(err, 400, "unknown_variant", field, "%s: its id is past what a job holds",
                       text);
  else if (ukernels_register(&k)) /* its label, kernel:<id>@<n>, from the backends' table */
    rc = api_error_set(err, 500, "out_of_memory", NULL, "out of memory");
  else
    *variant = exp_user_variant(k.id);
  ukernels_clear(&k);
  return rc ? -EINVAL : 0;
}

struct api_kernel_resolver submit_kernel_resolver(struct request *r) {
  return (struct api_kernel_resolver){resolve_kernel, r};
}

bool submit_elsewhere(struct request *r, const struct engine_error *refusal,
                      const char *params_prefix, enum MHD_Result *ret) {
  char url[256], field[64];
  if (refusal->code != -ENOENT) return false;
  if (refusal->missing_job &&
      service_job_elsewhere(r->srv->opts.service, refusal->missing_job, url, sizeof url) == 0) {
    *ret = respond_elsewhere(r, url, "job", refusal->missing_job);
    return true;
  }
  snprintf(field, sizeof field, "%s%s", params_prefix, refusal->field); /* as respond_refusal */
  return refusal->missing_buffer &&
         request_buffer_elsewhere(r, refusal->missing_buffer, field, ret);
}

enum MHD_Result submit_job(struct request *r, const struct exp_spec *spec,
                           const struct api_job_options *opts, const char *params_prefix) {
  struct api_error err;
  double wait_s;
  const char *wait_text = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "wait");
  if (api_wait_parse(wait_text, r->srv->opts.default_wait_s, &wait_s, &err))
    return respond_error(r, &err);
  struct engine *e = r->srv->engine;
  if (!engine_healthy(e))
    return respond_fail(r, 503, "backend_unavailable", NULL,
                        "the device failed and gpulabd is not accepting jobs; see /health");
  enum MHD_Result refused;
  if (request_store_refuses(r, &refused)) return refused;
  struct engine_job_request req;
  job_request(r, spec, opts, &req);
  double wait_for_rate = r->who ? rate_take_n(r->srv, r->who, 1) : 0;
  if (wait_for_rate > 0) {
    r->retry_after_s = (int)wait_for_rate + 1;
    return respond_fail(r, 429, "rate_limited", NULL,
                        "this client may submit %g jobs per second; retry in %.1f s", r->who->rate,
                        wait_for_rate);
  }
  struct job *job;
  struct engine_error refusal = {0};
  /* A waited-for job may run here: no worker is woken for it until it is known not to;
   * nor for one answered at once, until its view as accepted is taken. Not while more
   * requests are in flight than there are HTTP threads: then some thread serves several
   * connections, and a job run on it would hold the others (64 connections on the H200
   * answered more jobs a second through the workers: 21,000 against 17,900). */
  bool here = wait_s > 0 && r->srv->opts.inline_max_bytes > 0 &&
              atomic_load(&r->srv->in_flight) <= r->srv->opts.threads;
  if ((here || wait_s <= 0 ? engine_submit_inline : engine_submit)(e, &req, &job, &refusal)) {
    enum MHD_Result sent;
    return submit_elsewhere(r, &refusal, params_prefix, &sent)
               ? sent
               : respond_refusal(r, spec, &refusal, params_prefix);
  }
  r->job_id = job_id(job); /* the access log's "job" */
  /* Its first row was queued on this thread, under engine_submit: respond_job waits for it. */
  r->store_ticket = service_ticket(r->srv->opts.service);
  enum MHD_Result ret;
  bool ran_here = false;
  if (here) {
    if (job_may_run_inline(r, job))
      ran_here = engine_run_inline(e, job); /* false: a worker was woken for it */
    else
      engine_wake(e, job);
  }
  /* Its answer waits for its end: its first row need not be written before its last. */
  if (!ran_here && wait_s > 0) service_await(r->srv->opts.service, r->store_ticket);
  if (ran_here) {
    ret = respond_job(r, job, 200); /* it ran here, to its end */
  } else if (wait_s > 0) {
    request_wait_for_job(r, job, wait_s, resumed);
    ret = MHD_YES;
  } else {
    ret = respond_accepted(r, job);
  }
  job_unref(job);
  return ret;
}
