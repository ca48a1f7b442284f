/* What gpulabctl's command files share (gpulabctl.c: the options, the requests, a job
 * followed to its table; ctl_kernels.c: users' kernels and problems): the options as
 * parsed, the exit statuses, and the helpers every command answers through. */
#ifndef GPULAB_CTL_CLI_H
#define GPULAB_CTL_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include <curl/curl.h>
#include <jansson.h>

#include "clients/cli/ctl_http.h"

/* 0: done and every check passed; 1: a check, the job or the user's code failed; 2: the
 * request was refused or no gpulabd answered. */
enum { EXIT_PASSED = 0, EXIT_FAILED = 1, EXIT_REFUSED = 2 };

extern const char ctl_usage[];

/* The command line's options (strings borrowed from argv). */
struct opts {
  struct ctl ctl;
  bool json, cancel_on_interrupt, profile, cooperative;
  const char *variant, *state, *size, *experiment, *problem, *name, *entry, *block, *tile, *grid,
      *vs, *output;
  long limit, shared_bytes, scratch_bytes;
  const char *options[16];
  int n_options;
};

/* A request whose answer must be `want` (or, want 0, any 2xx): 0 with *r, else
 * EXIT_REFUSED after printing the problem (r freed). */
int ctl_expect(const struct opts *o, const char *method, const char *path, const char *ct,
               const void *body, size_t len, long want, struct ctl_reply *r);
void ctl_print_json(json_t *doc);
/* GET path and print its JSON (--json), or hand it to lines(). */
int ctl_get_list(const struct opts *o, const char *path, void (*lines)(json_t *));
/* GET path and print its text as it came (a diff, PTX, SASS). */
int ctl_get_text(const struct opts *o, const char *path);
/* Submits body to path (?wait=0), follows the job's events, prints its table: the exit
 * status. */
int ctl_submit_and_follow(const struct opts *o, const char *path, json_t *body);
/* name=value arguments into body; EXIT_REFUSED for one without '='. */
int ctl_params(json_t *body, char **args, int n);
/* The same for a problem's job: the fields every job takes (seed, warmup, ...) into body,
 * the others into body's "params" (the problem's). */
int ctl_problem_params(json_t *body, char **args, int n);
/* The path a job of `what` goes to with ?wait=0: "/transpose?wait=0", or for
 * "problem:NAME" "/problems/NAME/jobs?wait=0". */
void ctl_job_path(const char *what, char *path, size_t len);
/* The variants of a comma list, as the API takes them (a new reference). */
json_t *ctl_variants(const char *list);
/* Appends &name=value (escaped) to url; value NULL: nothing. */
void ctl_query(CURL *h, char *url, size_t len, const char *name, const char *value);
/* A file's bytes (malloc'd, *len set), or NULL with errno. */
char *ctl_read_file(const char *path, size_t *len);

/* ctl_kernels.c: kernel submit|versions|diff|ptx|sass, the kernels' listing's lines, and
 * problem define|list|show|delete. */
int ctl_cmd_kernel(const struct opts *o, char **args, int n);
void ctl_kernels_lines(json_t *doc);
int ctl_cmd_problem(const struct opts *o, char **args, int n);

#endif
