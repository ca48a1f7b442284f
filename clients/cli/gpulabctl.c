/* gpulabctl: gpulab from a terminal or a script. Submits jobs and users' kernels,
 * follows a job's events with a progress line (plain lines when stderr is not a
 * terminal), prints the lecture's table (or the job document with --json) and exits 0
 * only when the job is done and every run that ran passed its check: 1 when a check or
 * the job failed, 2 when the request was refused or gpulabd did not answer. Ctrl-C
 * detaches (the job runs on; `gpulabctl watch ID` follows it again), or cancels it with
 * --cancel-on-interrupt. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "clients/cli/ctl_cli.h"
#include "clients/cli/ctl_http.h"
#include "clients/cli/ctl_table.h"

const char ctl_usage[] =
    "usage: gpulabctl [options] COMMAND [arguments]\n"
    "commands:\n"
    "  run EXPERIMENT [name=value ...]   a job (transpose m=4096 n=4096 --variant padded33,best);\n"
    "                                    a value with commas is a list (streams=1,3)\n"
    "  run problem:NAME [name=value ...] a job of a problem you may see (its params by name,\n"
    "                                    --variant reference,kernel:mine, inputs='{\"x\":\n"
    "                                    {\"buffer\": 8}}')\n"
    "  kernel submit FILE --experiment E | --problem P [--name N] [--entry F] [--block X,Y]\n"
    "                [--tile X,Y]\n"
    "                [--grid X,Y,Z] [--shared-bytes B] [--scratch-bytes B] [--cooperative]\n"
    "                [--option O]... [--vs VARIANTS] [name=value ...]\n"
    "                                    compiles FILE (the same name again: a new version of\n"
    "                                    that kernel); with --vs also runs it beside VARIANTS\n"
    "  kernel versions ID                a kernel's versions, a line each\n"
    "  kernel diff ID FROM TO            a unified diff of two versions' sources\n"
    "  kernel ptx ID [VERSION] | kernel sass ID [VERSION]\n"
    "                                    the compiler's view: a version's PTX, or its SASS\n"
    "  problem define FILE.json | list | show NAME | delete NAME\n"
    "                                    problems you define: params, buffers, a reference\n"
    "  show ID | watch ID | cancel ID    a job: its table, its events then its table, cancel it\n"
    "  jobs [--state S] [--limit N]      the newest jobs, a line each\n"
    "  kernels                           your kernels and the public ones\n"
    "  buffers [put FILE.npy | get ID -o FILE.npy | delete ID]\n"
    "                                    your buffers: list, upload a .npy, download one, delete\n"
    "  leaderboard EXPERIMENT [--size S] the best verified run of every variant at a size\n"
    "options:\n"
    "  --server URL        gpulabd (default $GPULAB_URL, else http://127.0.0.1:8080)\n"
    "  --token T           API token (default $GPULAB_TOKEN)\n"
    "  --socket PATH       gpulabd's Unix socket (default $GPULAB_SOCKET)\n"
    "  --variant LIST      run: the variants, comma-separated (default: the experiment's all)\n"
    "  --profile           run, kernel submit --vs: each run's hardware counters too\n"
    "  --json              print documents as JSON instead of tables\n"
    "  -o, --output FILE   buffers get: where the .npy goes\n"
    "  --cancel-on-interrupt  Ctrl-C cancels the job instead of detaching from it\n"
    "exit: 0 done and every check passed; 1 a check or the job failed; 2 refused or no answer\n";

static void on_sigint(int sig) {
  (void)sig;
  ctl_interrupted = 1;
}

/* ---- requests ---- */

/* A request whose answer must be `want` (or, want 0, any 2xx): 0 with *r, else
 * EXIT_REFUSED after printing the problem (r freed). */
int ctl_expect(const struct opts *o, const char *method, const char *path, const char *ct,
               const void *body, size_t len, long want, struct ctl_reply *r) {
  char err[512];
  if (ctl_request(&o->ctl, method, path, ct, body, len, r, err, sizeof err)) {
    fprintf(stderr, "gpulabctl: %s\n", err);
    ctl_reply_free(r);
    return EXIT_REFUSED;
  }
  if (want ? r->status != want : r->status / 100 != 2) {
    char line[768];
    ctl_problem_line(r, line, sizeof line);
    fprintf(stderr, "gpulabctl: %s %s: %s\n", method, path, line);
    ctl_reply_free(r);
    return EXIT_REFUSED;
  }
  return 0;
}

void ctl_print_json(json_t *doc) {
  char *text = json_dumps(doc, JSON_INDENT(2));
  if (text) puts(text);
  free(text);
}

/* ---- following a job ---- */

struct follow {
  long long id;
  int total; /* batches the job will time, for the progress line (0: unknown) */
  int seen;  /* progress events seen */
  bool tty;  /* a progress bar on stderr, else plain lines */
  char state[16];
};

static bool is_final(const char *state) {
  return !strcmp(state, "done") || !strcmp(state, "failed") || !strcmp(state, "canceled");
}

static bool on_event(const char *event, json_t *data, void *arg) {
  struct follow *f = arg;
  if (!strcmp(event, "state")) {
    const char *state = json_string_value(json_object_get(data, "state"));
    if (!state) return false;
    snprintf(f->state, sizeof f->state, "%s", state);
    if (f->tty) fprintf(stderr, "\r\033[K");
    if (!f->tty || is_final(state)) fprintf(stderr, "job %lld: %s\n", f->id, state);
    return is_final(state);
  }
  if (!strcmp(event, "progress")) {
    f->seen++;
    if (!f->tty) return false;
    int width = 30, done = f->total ? f->seen * width / f->total : 0;
    if (done > width) done = width;
    fprintf(stderr, "\r\033[K[%.*s%.*s] run %lld batch %lld  %.4f ms", done,
            "##############################", width - done, "..............................",
            (long long)json_integer_value(json_object_get(data, "run")) + 1,
            (long long)json_integer_value(json_object_get(data, "batch")),
            json_number_value(json_object_get(data, "sample_ms")));
    fflush(stderr);
  }
  return false;
}

/* The batches job will time: its runs times its batches (the stopping rule may take
 * fewer or more; the bar is a guide). */
static int batches_of(json_t *job) {
  json_t *params = json_object_get(job, "params");
  json_t *v = json_object_get(params, "variant");
  int runs = json_is_array(v) ? (int)json_array_size(v) : 1;
  json_t *streams = json_object_get(params, "streams");
  if (json_is_array(streams)) runs = (int)json_array_size(streams);
  return runs * (int)json_integer_value(json_object_get(params, "batches"));
}

/* Follows job id until it ends (its events; polling when they end early), then prints
 * it. Returns the exit status. */
static int follow_job(const struct opts *o, long long id, int total) {
  char path[96], err[512];
  struct follow f = {.id = id, .total = total, .tty = isatty(STDERR_FILENO)};
  snprintf(path, sizeof path, "/jobs/%lld/events", id);
  int rc = ctl_events(&o->ctl, path, on_event, &f, err, sizeof err);
  if (rc == 2) {
    ctl_interrupted = 0;
    if (f.tty) fprintf(stderr, "\r\033[K");
    if (!o->cancel_on_interrupt) {
      fprintf(stderr, "gpulabctl: detached; job %lld runs on (gpulabctl watch %lld)\n", id, id);
      return EXIT_FAILED;
    }
    struct ctl_reply r;
    snprintf(path, sizeof path, "/jobs/%lld", id);
    int x = ctl_expect(o, "DELETE", path, NULL, NULL, 0, 0, &r);
    if (x) return x;
    ctl_reply_free(&r);
    fprintf(stderr, "gpulabctl: job %lld canceled\n", id);
    return EXIT_FAILED;
  }
  if (rc < 0) fprintf(stderr, "gpulabctl: %s; polling instead\n", err);
  snprintf(path, sizeof path, "/jobs/%lld", id);
  for (;;) {
    struct ctl_reply r;
    int x = ctl_expect(o, "GET", path, NULL, NULL, 0, 200, &r);
    if (x) return x;
    const char *state = json_string_value(json_object_get(r.json, "state"));
    if (state && is_final(state)) {
      if (o->json)
        ctl_print_json(r.json);
      else
        ctl_table_print(stdout, r.json);
      int status = ctl_job_passed(r.json) ? EXIT_PASSED : EXIT_FAILED;
      ctl_reply_free(&r);
      return status;
    }
    ctl_reply_free(&r);
    if (ctl_interrupted) return EXIT_FAILED;
    usleep(200 * 1000);
  }
}

/* POSTs body to path (?wait=0) and follows the job it made. */
int ctl_submit_and_follow(const struct opts *o, const char *path, json_t *body) {
  char *text = json_dumps(body, JSON_COMPACT);
  if (!text) return EXIT_REFUSED;
  struct ctl_reply r;
  int x = ctl_expect(o, "POST", path, "application/json", text, strlen(text), 0, &r);
  free(text);
  if (x) return x;
  long long id = json_integer_value(json_object_get(r.json, "id"));
  int total = batches_of(r.json);
  ctl_reply_free(&r);
  if (id <= 0) {
    fprintf(stderr, "gpulabctl: %s answered without a job id\n", path);
    return EXIT_REFUSED;
  }
  fprintf(stderr, "job %lld submitted\n", id);
  return follow_job(o, id, total);
}

/* ---- params ---- */

/* A value as the API takes it: JSON (an object or a list), an integer, a number,
 * true/false, a comma list of them, or a string. */
static json_t *value_of(const char *v) {
  if (*v == '{' || *v == '[') { /* JSON as it is: a={"buffer": 3} */
    json_t *doc = json_loads(v, JSON_DECODE_ANY, NULL);
    if (doc) return doc;
  }
  if (strchr(v, ',')) {
    json_t *list = json_array();
    char *copy = strdup(v), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
      json_array_append_new(list, value_of(t));
    free(copy);
    return list;
  }
  char *end;
  long long i = strtoll(v, &end, 10);
  if (*v && !*end) return json_integer(i);
  double d = strtod(v, &end);
  if (*v && !*end) return json_real(d);
  if (!strcmp(v, "true") || !strcmp(v, "false")) return json_boolean(!strcmp(v, "true"));
  return json_string(v);
}

/* name=value arguments into body; EXIT_REFUSED for one without '='. */
int ctl_params(json_t *body, char **args, int n) {
  for (int i = 0; i < n; i++) {
    char *eq = strchr(args[i], '=');
    if (!eq || eq == args[i]) {
      fprintf(stderr, "gpulabctl: '%s' is not name=value\n", args[i]);
      return EXIT_REFUSED;
    }
    *eq = '\0';
    json_object_set_new(body, args[i], value_of(eq + 1));
    *eq = '=';
  }
  return 0;
}

int ctl_problem_params(json_t *body, char **args, int n) {
  static const char *const job_fields[] = {
      "seed",       "warmup",     "batches",  "reps",        "order",    "cold",      "profile",
      "graph",      "max_noise",  "max_time", "min_samples", "priority", "isolation", "device",
      "depends_on", "dependency", "variant",  "inputs",      NULL};
  json_t *params = json_object();
  int x = 0;
  for (int i = 0; i < n && !x; i++) {
    char *eq = strchr(args[i], '=');
    bool job_field = false;
    for (int f = 0; eq && job_fields[f]; f++)
      job_field = job_field || ((size_t)(eq - args[i]) == strlen(job_fields[f]) &&
                                !strncmp(args[i], job_fields[f], (size_t)(eq - args[i])));
    x = ctl_params(job_field ? body : params, args + i, 1);
  }
  json_object_set_new(body, "params", params);
  return x;
}

void ctl_job_path(const char *what, char *path, size_t len) {
  if (!strncmp(what, "problem:", 8))
    snprintf(path, len, "/problems/%s/jobs?wait=0", what + 8);
  else
    snprintf(path, len, "/%s?wait=0", what);
}

/* The variants of a comma list, as the API takes them. */
json_t *ctl_variants(const char *list) {
  json_t *v = value_of(list);
  if (json_is_array(v)) return v;
  json_t *one = json_array();
  json_array_append_new(one, json_is_string(v) ? v : json_string(list));
  if (!json_is_string(v)) json_decref(v);
  return one;
}

/* ---- commands ---- */

static int cmd_run(const struct opts *o, char **args, int n) {
  if (n < 1) {
    fputs(ctl_usage, stderr);
    return EXIT_REFUSED;
  }
  json_t *body = json_object();
  bool problem = !strncmp(args[0], "problem:", 8);
  int x = problem ? ctl_problem_params(body, args + 1, n - 1) : ctl_params(body, args + 1, n - 1);
  if (!x && o->variant) json_object_set_new(body, "variant", ctl_variants(o->variant));
  if (!x && o->profile) json_object_set_new(body, "profile", json_true());
  char path[160];
  ctl_job_path(args[0], path, sizeof path);
  if (!x) x = ctl_submit_and_follow(o, path, body);
  json_decref(body);
  return x;
}

/* Appends &name=value (escaped) to url. */
void ctl_query(CURL *h, char *url, size_t len, const char *name, const char *value) {
  if (!value) return;
  char *esc = curl_easy_escape(h, value, 0);
  size_t used = strlen(url);
  snprintf(url + used, len - used, "%s%s=%s", strchr(url, '?') ? "&" : "?", name, esc ? esc : "");
  curl_free(esc);
}

char *ctl_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *text = NULL;
  size_t cap = 0, n = 0, got;
  do {
    if (n + 4096 > cap) {
      char *p = realloc(text, cap = cap ? 2 * cap : 8192);
      if (!p) break;
      text = p;
    }
    got = fread(text + n, 1, cap - n, f);
    n += got;
  } while (got > 0);
  fclose(f);
  *len = n;
  return text;
}

/* GET path and print its JSON, or hand it to lines(). */
int ctl_get_list(const struct opts *o, const char *path, void (*lines)(json_t *)) {
  struct ctl_reply r;
  int x = ctl_expect(o, "GET", path, NULL, NULL, 0, 200, &r);
  if (x) return x;
  if (o->json)
    ctl_print_json(r.json);
  else
    lines(r.json);
  ctl_reply_free(&r);
  return EXIT_PASSED;
}

static void jobs_lines(json_t *doc) {
  size_t i;
  json_t *j;
  json_array_foreach(json_object_get(doc, "jobs"), i, j) printf(
      "%8lld  %-10s %-9s %s\n", (long long)json_integer_value(json_object_get(j, "id")),
      json_string_value(json_object_get(j, "type")), json_string_value(json_object_get(j, "state")),
      json_string_value(json_object_get(j, "created_at")));
}

/* GET path and print its text as it came (a diff, PTX, SASS). */
int ctl_get_text(const struct opts *o, const char *path) {
  struct ctl_reply r;
  int x = ctl_expect(o, "GET", path, NULL, NULL, 0, 200, &r);
  if (x) return x;
  fwrite(r.body, 1, r.len, stdout);
  ctl_reply_free(&r);
  return EXIT_PASSED;
}

static void board_lines(json_t *doc) {
  size_t i;
  json_t *row;
  json_array_foreach(json_object_get(doc, "rows"), i, row)
      printf("%3lld  %-20s %12.1f %-8s %10.4f ms  job %lld\n",
             (long long)json_integer_value(json_object_get(row, "rank")),
             json_string_value(json_object_get(row, "variant")),
             json_number_value(json_object_get(row, "figure")),
             json_string_value(json_object_get(row, "unit")),
             json_number_value(json_object_get(row, "median_ms")),
             (long long)json_integer_value(json_object_get(row, "job")));
  if (!json_array_size(json_object_get(doc, "rows"))) printf("no verified runs at this size yet\n");
}

/* A job id argument, or -1 after saying why. */
static long long job_id(char **args, int n) {
  char *end;
  long long id = n >= 1 ? strtoll(args[0], &end, 10) : 0;
  if (n < 1 || *end || id <= 0) {
    fprintf(stderr, "gpulabctl: a job id, please\n");
    return -1;
  }
  return id;
}

static void buffers_lines(json_t *doc) {
  size_t i;
  json_t *b;
  json_array_foreach(json_object_get(doc, "buffers"), i, b) {
    char shape[64] = "";
    size_t k;
    json_t *d;
    json_array_foreach(json_object_get(b, "shape"), k, d)
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", k ? "x" : "",
                 (long long)json_integer_value(d));
    printf("%8lld  %-16s %s\n", (long long)json_integer_value(json_object_get(b, "id")), shape,
           json_string_value(json_object_get(b, "created_at"))
               ? json_string_value(json_object_get(b, "created_at"))
               : "");
  }
}

/* buffers: list; put FILE (a .npy); get ID -o FILE; delete ID. */
static int cmd_buffers(const struct opts *o, char **args, int n) {
  if (n == 0) return ctl_get_list(o, "/buffers", buffers_lines);
  struct ctl_reply r;
  char path[96];
  int x;
  if (!strcmp(args[0], "put") && n == 2) {
    size_t len = 0;
    char *data = ctl_read_file(args[1], &len);
    if (!data) {
      fprintf(stderr, "gpulabctl: %s: %s\n", args[1], strerror(errno));
      return EXIT_REFUSED;
    }
    x = ctl_expect(o, "POST", "/buffers", "application/x-npy", data, len, 201, &r);
    free(data);
    if (x) return x;
    if (o->json)
      ctl_print_json(r.json);
    else
      printf("buffer %lld\n", (long long)json_integer_value(json_object_get(r.json, "id")));
    ctl_reply_free(&r);
    return EXIT_PASSED;
  }
  long long id = n == 2 ? strtoll(args[1], NULL, 10) : 0;
  if (id <= 0 || (strcmp(args[0], "get") && strcmp(args[0], "delete")) ||
      (!strcmp(args[0], "get") && !o->output)) {
    fputs(ctl_usage, stderr);
    return EXIT_REFUSED;
  }
  snprintf(path, sizeof path, "/buffers/%lld", id);
  if (!strcmp(args[0], "delete")) {
    x = ctl_expect(o, "DELETE", path, NULL, NULL, 0, 0, &r);
    if (!x) ctl_reply_free(&r);
    return x;
  }
  if ((x = ctl_expect(o, "GET", path, NULL, NULL, 0, 200, &r))) return x;
  FILE *f = fopen(o->output, "wb");
  bool ok = f && fwrite(r.body, 1, r.len, f) == r.len;
  if (f && fclose(f)) ok = false;
  if (!ok)
    fprintf(stderr, "gpulabctl: %s: %s\n", o->output, strerror(errno));
  else
    fprintf(stderr, "buffer %lld: %zu bytes into %s\n", id, r.len, o->output);
  ctl_reply_free(&r);
  return ok ? EXIT_PASSED : EXIT_REFUSED;
}

static int command(const struct opts *o, const char *cmd, char **args, int n) {
  char path[256];
  if (!strcmp(cmd, "run")) return cmd_run(o, args, n);
  if (!strcmp(cmd, "kernel")) return ctl_cmd_kernel(o, args, n);
  if (!strcmp(cmd, "problem")) return ctl_cmd_problem(o, args, n);
  if (!strcmp(cmd, "jobs")) {
    snprintf(path, sizeof path, "/jobs?limit=%ld%s%s", o->limit ? o->limit : 20,
             o->state ? "&state=" : "", o->state ? o->state : "");
    return ctl_get_list(o, path, jobs_lines);
  }
  if (!strcmp(cmd, "kernels")) return ctl_get_list(o, "/kernels", ctl_kernels_lines);
  if (!strcmp(cmd, "buffers")) return cmd_buffers(o, args, n);
  if (!strcmp(cmd, "leaderboard")) {
    if (n < 1) {
      fputs(ctl_usage, stderr);
      return EXIT_REFUSED;
    }
    snprintf(path, sizeof path, "/leaderboard/%s%s%s", args[0], o->size ? "?size=" : "",
             o->size ? o->size : "");
    return ctl_get_list(o, path, board_lines);
  }
  if (!strcmp(cmd, "show") || !strcmp(cmd, "watch") || !strcmp(cmd, "cancel")) {
    long long id = job_id(args, n);
    if (id < 0) return EXIT_REFUSED;
    snprintf(path, sizeof path, "/jobs/%lld", id);
    struct ctl_reply r;
    if (!strcmp(cmd, "watch")) return follow_job(o, id, 0);
    int x = ctl_expect(o, !strcmp(cmd, "cancel") ? "DELETE" : "GET", path, NULL, NULL, 0, 0, &r);
    if (x) return x;
    if (o->json)
      ctl_print_json(r.json);
    else
      ctl_table_print(stdout, r.json);
    x = !strcmp(cmd, "cancel") || ctl_job_passed(r.json) ? EXIT_PASSED : EXIT_FAILED;
    ctl_reply_free(&r);
    return x;
  }
  fprintf(stderr, "gpulabctl: no command '%s'\n%s", cmd, ctl_usage);
  return EXIT_REFUSED;
}

int main(int argc, char **argv) {
  struct opts o = {.ctl = {.server = getenv("GPULAB_URL"),
                           .token = getenv("GPULAB_TOKEN"),
                           .socket = getenv("GPULAB_SOCKET")}};
  if (!o.ctl.server || !*o.ctl.server) o.ctl.server = "http://127.0.0.1:8080";
  enum {
    O_SERVER = 256,
    O_TOKEN,
    O_SOCKET,
    O_VARIANT,
    O_JSON,
    O_CANCEL,
    O_STATE,
    O_LIMIT,
    O_SIZE,
    O_EXPERIMENT,
    O_PROBLEM,
    O_NAME,
    O_ENTRY,
    O_BLOCK,
    O_TILE,
    O_GRID,
    O_SHARED,
    O_SCRATCH,
    O_COOPERATIVE,
    O_OPTION,
    O_VS,
    O_PROFILE,
    O_HELP,
    O_OUTPUT = 'o'
  };
  static const struct option longs[] = {{"server", required_argument, 0, O_SERVER},
                                        {"token", required_argument, 0, O_TOKEN},
                                        {"socket", required_argument, 0, O_SOCKET},
                                        {"variant", required_argument, 0, O_VARIANT},
                                        {"json", no_argument, 0, O_JSON},
                                        {"cancel-on-interrupt", no_argument, 0, O_CANCEL},
                                        {"state", required_argument, 0, O_STATE},
                                        {"limit", required_argument, 0, O_LIMIT},
                                        {"size", required_argument, 0, O_SIZE},
                                        {"experiment", required_argument, 0, O_EXPERIMENT},
                                        {"problem", required_argument, 0, O_PROBLEM},
                                        {"name", required_argument, 0, O_NAME},
                                        {"entry", required_argument, 0, O_ENTRY},
                                        {"block", required_argument, 0, O_BLOCK},
                                        {"tile", required_argument, 0, O_TILE},
                                        {"grid", required_argument, 0, O_GRID},
                                        {"shared-bytes", required_argument, 0, O_SHARED},
                                        {"scratch-bytes", required_argument, 0, O_SCRATCH},
                                        {"cooperative", no_argument, 0, O_COOPERATIVE},
                                        {"option", required_argument, 0, O_OPTION},
                                        {"vs", required_argument, 0, O_VS},
                                        {"profile", no_argument, 0, O_PROFILE},
                                        {"output", required_argument, 0, O_OUTPUT},
                                        {"help", no_argument, 0, O_HELP},
                                        {0, 0, 0, 0}};
  int c; /* GNU getopt takes options anywhere: run transpose m=64 --json */
  while ((c = getopt_long(argc, argv, "o:", longs, NULL)) != -1) {
    switch (c) {
    case O_SERVER: o.ctl.server = optarg; break;
    case O_TOKEN: o.ctl.token = optarg; break;
    case O_SOCKET: o.ctl.socket = optarg; break;
    case O_VARIANT: o.variant = optarg; break;
    case O_JSON: o.json = true; break;
    case O_CANCEL: o.cancel_on_interrupt = true; break;
    case O_STATE: o.state = optarg; break;
    case O_LIMIT: o.limit = strtol(optarg, NULL, 10); break;
    case O_SIZE: o.size = optarg; break;
    case O_EXPERIMENT: o.experiment = optarg; break;
    case O_PROBLEM: o.problem = optarg; break;
    case O_NAME: o.name = optarg; break;
    case O_ENTRY: o.entry = optarg; break;
    case O_BLOCK: o.block = optarg; break;
    case O_TILE: o.tile = optarg; break;
    case O_GRID: o.grid = optarg; break;
    case O_SHARED: o.shared_bytes = strtol(optarg, NULL, 10); break;
    case O_SCRATCH: o.scratch_bytes = strtol(optarg, NULL, 10); break;
    case O_COOPERATIVE: o.cooperative = true; break;
    case O_OPTION:
      if (o.n_options < 16) o.options[o.n_options++] = optarg;
      break;
    case O_VS: o.vs = optarg; break;
    case O_PROFILE: o.profile = true; break;
    case O_OUTPUT: o.output = optarg; break;
    case O_HELP: fputs(ctl_usage, stdout); return EXIT_PASSED;
    default: fputs(ctl_usage, stderr); return EXIT_REFUSED;
    }
  }
  if (optind >= argc) {
    fputs(ctl_usage, stderr);
    return EXIT_REFUSED;
  }
  if (o.ctl.socket && !strncmp(o.ctl.server, "http://127.0.0.1:8080", 21))
    o.ctl.server = "http://localhost";
  curl_global_init(CURL_GLOBAL_DEFAULT);
  struct sigaction sa = {.sa_handler = on_sigint};
  sigaction(SIGINT, &sa, NULL);
  int x = command(&o, argv[optind], argv + optind + 1, argc - optind - 1);
  curl_global_cleanup();
  return x;
}
