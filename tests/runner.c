/* The test programs' main (tests/runner.h): picks the cases from the command line, runs
 * the suite's setup, the cases in their listed order and its teardown, and names each
 * case's result. A CHECK that fails exits inside the case; an exit handler then names the
 * case (in the process that ran it, not in a child it forked). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "tests/runner.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int check_soft_failures;
const char *test_mode;

static const char *current; /* the running case's name, or NULL */
static bool *chosen;        /* the cases to run, by index (static: reachable at exit) */
static pid_t runner_pid;

const char *test_case_name(void) { return current; }

/* "test_odd" is listed and asked for as "odd". */
static const char *short_name(const char *name) {
  return strncmp(name, "test_", 5) == 0 ? name + 5 : name;
}

static int find(const struct test_case *cases, const char *name) {
  for (int i = 0; cases[i].name; i++)
    if (strcmp(short_name(cases[i].name), short_name(name)) == 0) return i;
  return -1;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void on_exit_status(int status, void *arg) {
  (void)arg;
  if (!current || getpid() != runner_pid) return;
  fprintf(stderr, "%s %s (exit %d)\n", status == CHECK_SKIP ? "skip" : "FAIL", current, status);
}

static int usage(const char *prog, int status) {
  FILE *f = status ? stderr : stdout;
  fprintf(f, "usage: %s [--list]", prog);
  if (test_suite.modes) {
    fprintf(f, " [");
    for (int i = 0; test_suite.modes[i]; i++) fprintf(f, "%s%s", i ? "|" : "", test_suite.modes[i]);
    fprintf(f, "]");
  }
  fprintf(f, " [case...]\n  no case: every case in order; --list: their names\n");
  return status;
}

static char dir[128];
static const char *program = "test";

const char *test_dir(void) {
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/gpulab-%s-XXXXXX", program);
    CHECK(mkdtemp(dir) != NULL);
  }
  return dir;
}

static void remove_test_dir(void) {
  if (!dir[0]) return;
  char cmd[sizeof dir + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

int main(int argc, char **argv) {
  const char *slash = strrchr(argv[0], '/');
  program = slash ? slash + 1 : argv[0];
  const struct test_case *cases = test_suite.cases;
  int n = 0;
  while (cases[n].name) n++;
  chosen = calloc((size_t)n + 1, sizeof *chosen);
  if (!chosen) return 1;
  bool list = false, named = false;
  for (int a = 1; a < argc; a++) {
    const char *arg = argv[a];
    if (strcmp(arg, "--list") == 0) {
      list = true;
      continue;
    }
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) return usage(argv[0], 0);
    bool mode = false;
    for (int m = 0; a == 1 && test_suite.modes && test_suite.modes[m]; m++)
      if (strcmp(arg, test_suite.modes[m]) == 0) test_mode = arg, mode = true;
    if (mode) continue;
    if (arg[0] == '-') {
      fprintf(stderr, "%s: unknown option %s\n", argv[0], arg);
      return usage(argv[0], 2);
    }
    int i = find(cases, arg);
    if (i < 0) {
      fprintf(stderr, "%s: no case named %s (--list names them)\n", argv[0], arg);
      return 2;
    }
    /* It and the cases it starts from, in turn. */
    for (int guard = 0; i >= 0 && !chosen[i] && guard <= n; guard++) {
      chosen[i] = named = true;
      if (!cases[i].after) break;
      if (strcmp(cases[i].after, "*") == 0) {
        for (int j = 0; j < i; j++) chosen[j] = true;
        break;
      }
      int before = find(cases, cases[i].after);
      if (before < 0 || before >= i) {
        fprintf(stderr, "%s: case %s runs after %s, which is not listed before it\n", argv[0],
                cases[i].name, cases[i].after);
        return 2;
      }
      i = before;
    }
  }
  if (list) {
    for (int i = 0; i < n; i++) printf("%s\n", short_name(cases[i].name));
    free(chosen);
    return 0;
  }
  for (int i = 0; i < n && !named; i++) chosen[i] = true;

  setvbuf(stdout, NULL, _IOLBF, 0); /* its lines among stderr's in the order written */
  runner_pid = getpid();
  on_exit(on_exit_status, NULL);
  if (test_suite.setup) {
    int status = test_suite.setup();
    if (status != 0) {
      free(chosen);
      return status;
    }
  }
  int ran = 0, failed = 0;
  double t_all = now_s();
  for (int i = 0; i < n; i++) {
    if (!chosen[i]) continue;
    int soft_before = check_soft_failures;
    double t0 = now_s();
    current = short_name(cases[i].name);
    if (test_suite.before_each) test_suite.before_each();
    cases[i].run();
    ran++;
    if (check_soft_failures != soft_before) {
      failed++;
      fprintf(stderr, "FAIL %s (%d soft check(s) failed, see above)\n", current,
              check_soft_failures - soft_before);
    } else {
      printf("ok %s (%.2f s)\n", current, now_s() - t0);
    }
    current = NULL;
  }
  if (test_suite.teardown) test_suite.teardown();
  free(chosen);
  if (!failed) remove_test_dir();
  if (failed) {
    fprintf(stderr, "%d of %d case(s) failed\n", failed, ran);
    return 1;
  }
  printf("all %d case(s) passed (%.1f s)\n", ran, now_s() - t_all);
  return 0;
}
