/* gpulabctl's commands of users' kernels and problems (ctl_cli.h): kernel submit (with
 * --vs, a job beside the built-ins), versions, diff, ptx and sass; the kernels' listing;
 * problem define, list, show and delete. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "clients/cli/ctl_cli.h"
#include "clients/cli/ctl_http.h"

static int kernel_versions(const struct opts *o, const char *id);

int ctl_cmd_kernel(const struct opts *o, char **args, int n) {
  char route[160];
  if (n == 2 && !strcmp(args[0], "versions")) return kernel_versions(o, args[1]);
  if (n == 4 && !strcmp(args[0], "diff")) {
    snprintf(route, sizeof route, "/kernels/%.40s/diff?from=%.20s&to=%.20s", args[1], args[2],
             args[3]);
    return ctl_get_text(o, route);
  }
  if ((n == 2 || n == 3) && (!strcmp(args[0], "ptx") || !strcmp(args[0], "sass"))) {
    if (n == 3)
      snprintf(route, sizeof route, "/kernels/%.40s/versions/%.20s/%s", args[1], args[2], args[0]);
    else
      snprintf(route, sizeof route, "/kernels/%.40s/%s", args[1], args[0]);
    return ctl_get_text(o, route);
  }
  if (n < 2 || strcmp(args[0], "submit") != 0 || !o->experiment == !o->problem) {
    fputs(ctl_usage, stderr);
    return EXIT_REFUSED;
  }
  size_t len = 0;
  char *src = ctl_read_file(args[1], &len);
  if (!src) {
    fprintf(stderr, "gpulabctl: %s: %s\n", args[1], strerror(errno));
    return EXIT_REFUSED;
  }
  char name[64];
  if (o->name) {
    snprintf(name, sizeof name, "%s", o->name);
  } else { /* the file's name without its folders and extension */
    const char *base = strrchr(args[1], '/');
    snprintf(name, sizeof name, "%s", base ? base + 1 : args[1]);
    name[strcspn(name, ".")] = '\0';
  }
  CURL *h = curl_easy_init();
  char path[1024] = "/kernels", num[32];
  ctl_query(h, path, sizeof path, "experiment", o->experiment);
  ctl_query(h, path, sizeof path, "problem", o->problem);
  ctl_query(h, path, sizeof path, "name", name);
  ctl_query(h, path, sizeof path, "entry", o->entry);
  ctl_query(h, path, sizeof path, "block", o->block);
  ctl_query(h, path, sizeof path, "tile", o->tile);
  ctl_query(h, path, sizeof path, "grid", o->grid);
  if (o->shared_bytes)
    snprintf(num, sizeof num, "%ld", o->shared_bytes),
        ctl_query(h, path, sizeof path, "shared_bytes", num);
  if (o->scratch_bytes)
    snprintf(num, sizeof num, "%ld", o->scratch_bytes),
        ctl_query(h, path, sizeof path, "scratch_bytes", num);
  if (o->cooperative) ctl_query(h, path, sizeof path, "cooperative", "1");
  char opts[1024] = "";
  for (int i = 0; i < o->n_options; i++)
    snprintf(opts + strlen(opts), sizeof opts - strlen(opts), "%s%s", i ? "," : "", o->options[i]);
  if (o->n_options) ctl_query(h, path, sizeof path, "options", opts);
  curl_easy_cleanup(h);
  struct ctl_reply r;
  char err[512];
  int rc = ctl_request(&o->ctl, "POST", path, "text/x-cuda", src, len, &r, err, sizeof err);
  free(src);
  if (rc) {
    fprintf(stderr, "gpulabctl: %s\n", err);
    ctl_reply_free(&r);
    return EXIT_REFUSED;
  }
  if (r.status != 201) {
    char line[768];
    ctl_problem_line(&r, line, sizeof line);
    fprintf(stderr, "gpulabctl: %s: %s\n", args[1], line);
    const char *log = json_string_value(json_object_get(json_object_get(r.json, "compile"), "log"));
    if (log && r.status == 422 && !o->json) fprintf(stderr, "%s", log);
    int status = r.status == 422 ? EXIT_FAILED : EXIT_REFUSED; /* it did not compile: the user's */
    ctl_reply_free(&r);
    return status;
  }
  json_t *c = json_object_get(r.json, "compile");
  const char *variant = json_string_value(json_object_get(r.json, "variant"));
  if (o->json && !o->vs)
    ctl_print_json(r.json);
  else
    fprintf(stderr,
            "%s (%s): %lld registers, %lld B shared, %lld B spilled, %lld module variables%s\n",
            variant ? variant : "?", name,
            (long long)json_integer_value(json_object_get(c, "registers")),
            (long long)json_integer_value(json_object_get(c, "shared_bytes")),
            (long long)(json_integer_value(json_object_get(c, "spill_store_bytes")) +
                        json_integer_value(json_object_get(c, "spill_load_bytes"))),
            (long long)json_integer_value(json_object_get(c, "module_variables")),
            json_is_true(json_object_get(c, "cached")) ? ", cached" : "");
  int x = EXIT_PASSED;
  if (o->vs && variant) { /* a job of the experiment: the kernel beside the variants named */
    json_t *body = json_object();
    json_t *list = ctl_variants(o->vs);
    json_array_append_new(list, json_string(variant));
    json_object_set_new(body, "variant", list);
    x = o->problem ? ctl_problem_params(body, args + 2, n - 2) : ctl_params(body, args + 2, n - 2);
    if (o->profile) json_object_set_new(body, "profile", json_true());
    char what[96];
    snprintf(what, sizeof what, "%s%s", o->problem ? "problem:" : "",
             o->problem ? o->problem : o->experiment);
    ctl_job_path(what, path, sizeof path);
    if (!x) x = ctl_submit_and_follow(o, path, body);
    json_decref(body);
  }
  ctl_reply_free(&r);
  return x;
}

/* A kernel a line: its variant, name, experiment, owner, who sees it, and its newest
 * version of how many ("v3/3"). */
void ctl_kernels_lines(json_t *doc) {
  size_t i;
  json_t *k;
  json_array_foreach(json_object_get(doc, "kernels"), i, k) {
    const char *refused = json_string_value(json_object_get(k, "refused"));
    char versions[32];
    snprintf(versions, sizeof versions, "v%lld/%lld",
             (long long)json_integer_value(json_object_get(k, "version")),
             (long long)json_integer_value(json_object_get(k, "versions")));
    printf("%-12s %-24s %-10s %-16s %-8s %s%s\n", json_string_value(json_object_get(k, "variant")),
           json_string_value(json_object_get(k, "name")),
           json_string_value(json_object_get(k, "experiment")),
           json_string_value(json_object_get(k, "owner")),
           json_is_true(json_object_get(k, "public")) ? "public" : "private", versions,
           refused ? "  REFUSED: " : "");
    if (refused) printf("             %s\n", refused);
  }
}

/* A version a line: its variant, when, its source's hash and the compiler's summary. */
static void versions_lines(json_t *doc) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(doc, "versions"), i, v) {
    json_t *c = json_object_get(v, "compile");
    const char *sha = json_string_value(json_object_get(v, "source_sha256"));
    printf("%-16s %-26s %.12s  %3lld registers  %6lld B shared  %lld B spilled\n",
           json_string_value(json_object_get(v, "variant")),
           json_string_value(json_object_get(v, "created")), sha ? sha : "",
           (long long)json_integer_value(json_object_get(c, "registers")),
           (long long)json_integer_value(json_object_get(c, "shared_bytes")),
           (long long)(json_integer_value(json_object_get(c, "spill_store_bytes")) +
                       json_integer_value(json_object_get(c, "spill_load_bytes"))));
  }
}

static int kernel_versions(const struct opts *o, const char *id) {
  char path[96];
  snprintf(path, sizeof path, "/kernels/%.40s/versions", id);
  return ctl_get_list(o, path, versions_lines);
}

/* A problem a line: its name, newest version, owner, who sees it, its params. */
static void problems_lines(json_t *doc) {
  size_t i;
  json_t *p;
  json_array_foreach(json_object_get(doc, "problems"), i, p) {
    char params[160] = "";
    const char *name;
    json_t *range;
    json_object_foreach(json_object_get(p, "params"), name, range) snprintf(
        params + strlen(params), sizeof params - strlen(params), "%s%s=%lld..%lld",
        params[0] ? " " : "", name, (long long)json_integer_value(json_object_get(range, "min")),
        (long long)json_integer_value(json_object_get(range, "max")));
    printf("%-24s v%-4lld %-16s %-8s %s\n", json_string_value(json_object_get(p, "name")),
           (long long)json_integer_value(json_object_get(p, "version")),
           json_string_value(json_object_get(p, "owner")),
           json_is_true(json_object_get(p, "public")) ? "public" : "private", params);
  }
}

/* problem define FILE.json | list | show NAME | delete NAME. A definition whose
 * reference does not compile exits 1 (the user's), with the compiler's log. */
int ctl_cmd_problem(const struct opts *o, char **args, int n) {
  char path[128];
  struct ctl_reply r;
  int x;
  if (n == 1 && !strcmp(args[0], "list")) return ctl_get_list(o, "/problems", problems_lines);
  if (n != 2) {
    fputs(ctl_usage, stderr);
    return EXIT_REFUSED;
  }
  snprintf(path, sizeof path, "/problems/%.70s", args[1]);
  if (!strcmp(args[0], "delete")) {
    if (!(x = ctl_expect(o, "DELETE", path, NULL, NULL, 0, 200, &r))) ctl_reply_free(&r);
    return x;
  }
  if (!strcmp(args[0], "show")) {
    if ((x = ctl_expect(o, "GET", path, NULL, NULL, 0, 200, &r))) return x;
    if (o->json)
      ctl_print_json(r.json);
    else
      printf("%s v%lld (%s)\n%s\n", json_string_value(json_object_get(r.json, "name")),
             (long long)json_integer_value(json_object_get(r.json, "version")),
             json_string_value(json_object_get(r.json, "owner")),
             json_string_value(json_object_get(r.json, "template")));
    ctl_reply_free(&r);
    return EXIT_PASSED;
  }
  if (strcmp(args[0], "define") != 0) {
    fputs(ctl_usage, stderr);
    return EXIT_REFUSED;
  }
  size_t len = 0;
  char *def = ctl_read_file(args[1], &len);
  if (!def) {
    fprintf(stderr, "gpulabctl: %s: %s\n", args[1], strerror(errno));
    return EXIT_REFUSED;
  }
  char err[512];
  x = ctl_request(&o->ctl, "POST", "/problems", "application/json", def, len, &r, err, sizeof err);
  free(def);
  if (x) {
    fprintf(stderr, "gpulabctl: %s\n", err);
    ctl_reply_free(&r);
    return EXIT_REFUSED;
  }
  x = r.status == 201 ? EXIT_PASSED : r.status == 422 ? EXIT_FAILED : EXIT_REFUSED;
  if (x) {
    char line[768];
    ctl_problem_line(&r, line, sizeof line);
    fprintf(stderr, "gpulabctl: %s: %s\n", args[1], line);
    const char *log = json_string_value(json_object_get(json_object_get(r.json, "compile"), "log"));
    if (log && r.status == 422) fprintf(stderr, "%s", log);
  } else if (o->json) {
    ctl_print_json(r.json);
  } else {
    printf("problem %s v%lld: %s\n", json_string_value(json_object_get(r.json, "name")),
           (long long)json_integer_value(json_object_get(r.json, "version")),
           json_string_value(json_object_get(r.json, "signature")));
  }
  ctl_reply_free(&r);
  return x;
}
