/* The defaults sized from the machine: without --http-threads and --streams a real
 * gpulabd runs an HTTP thread per core it may use (4..64) and cores / (2 x devices)
 * lanes per device (4..16), as its "listening on" line and /device say; the flags
 * override both. Run under `taskset` the counts follow the affinity mask. */
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/http_client.h"
#include "tests/runner.h"

extern char **environ;

static int clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static int cores(void) {
  cpu_set_t set;
  CHECK_INT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  return CPU_COUNT(&set);
}

/* Starts gpulabd with args on a free port, reads its stderr up to the "listening on"
 * line, takes the streams and HTTP threads it names, and stops it. */
static void listening_line(const char *const *args, int *streams, int *threads) {
  const char *bin = getenv("GPULABD");
  CHECK(bin != NULL);
  const char *argv[32] = {bin, "--port", "0", "--db", "none", "--backend", "cpu"};
  int n = 7;
  for (int i = 0; args[i]; i++) argv[n++] = args[i];
  argv[n] = NULL;
  int fds[2];
  CHECK_INT_EQ(pipe(fds), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  pid_t pid;
  CHECK_INT_EQ(posix_spawn(&pid, bin, &fa, NULL, (char *const *)argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  FILE *log = fdopen(fds[0], "r");
  char line[512];
  *streams = *threads = -1;
  while (fgets(line, sizeof line, log)) {
    const char *at = strstr(line, "device(s), ");
    if (strstr(line, "listening on") && at) {
      CHECK_INT_EQ(sscanf(at, "device(s), %d streams each, %d http threads", streams, threads), 2);
      break;
    }
  }
  kill(pid, SIGTERM);
  while (fgets(line, sizeof line, log)) continue; /* until it closes its stderr */
  fclose(log);
  int status;
  CHECK_INT_EQ(waitpid(pid, &status, 0), pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_from_the_machine(void) {
  int streams, threads;
  const char *none[] = {NULL};
  listening_line(none, &streams, &threads);
  printf("%d cores: %d streams, %d http threads\n", cores(), streams, threads);
  CHECK_INT_EQ(threads, clamp(cores(), 4, 64));
  CHECK_INT_EQ(streams, clamp(cores() / 2, 4, 16));
  /* Two devices (the CPU backend makes one per ordinal) share the cores. */
  const char *two[] = {"--devices", "0,1", NULL};
  listening_line(two, &streams, &threads);
  CHECK_INT_EQ(streams, clamp(cores() / 4, 4, 16));
  /* /device says the same. */
  struct gpulabd d;
  gpulabd_start(none, &d);
  json_t *dev = http_get_json(&d, "/device");
  CHECK_INT_EQ(JINT(dev, "streams"), clamp(cores() / 2, 4, 16));
  json_decref(dev);
  gpulabd_stop(&d);
}

static void test_flags_override(void) {
  int streams, threads;
  const char *args[] = {"--streams", "3", "--http-threads", "2", NULL};
  listening_line(args, &streams, &threads);
  CHECK_INT_EQ(streams, 3);
  CHECK_INT_EQ(threads, 2);
  const char *big[] = {"--streams", "17", "--http-threads", "65", NULL};
  listening_line(big, &streams, &threads);
  CHECK_INT_EQ(streams, 17); /* past the defaults' bounds, within the flags' */
  CHECK_INT_EQ(threads, 65);
}

static const struct test_case cases[] = {
    TEST(test_from_the_machine),
    TEST(test_flags_override),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases};
