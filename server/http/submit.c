/* Submitting a job from a request (submit.h). */
#include "server/http/submit.h"

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

int submit_kernels_resolve(struct request *r, const struct exp_spec *spec, const char *field,
                           struct api_error *err) {
  struct ukernels *u = r->srv->opts.service->ukernels;
  for (int i = 0; i < spec->n_variants; i++) {
    if (!exp_variant_is_user(spec->variants[i]) || !exp_user_of(spec->type)) continue;
    long long id = exp_user_kernel_id(spec->variants[i]);
    struct store_kernel k;
    if (ukernels_get(u, id, &k))
      return api_error_set(err, 400, "unknown_variant", field, "no kernel %lld (kernel:%lld)", id,
                           id);
    int rc = 0;
    if (!request_may_see(r, k.owner) && !k.is_public)
      rc = api_error_set(err, 400, "unknown_variant", field, "no kernel %lld (kernel:%lld)", id,
                         id);
    else if (strcmp(k.experiment, exp_type_name(spec->type)) != 0)
      rc = api_error_set(err, 400, "unknown_variant", field, "kernel:%lld is a %s kernel, not %s",
                         id, k.experiment, exp_type_name(spec->type));
    else if (ukernels_register(&k))
      rc = api_error_set(err, 500, "out_of_memory", NULL, "out of memory");
    ukernels_clear(&k);
    if (rc) return rc;
  }
  return 0;
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
  char variant_field[32];
  snprintf(variant_field, sizeof variant_field, "%svariant", params_prefix);
  if (submit_kernels_resolve(r, spec, variant_field, &err)) return respond_error(r, &err);
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
