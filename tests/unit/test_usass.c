/* child_run.h and usass.h: a tool in a child cut at its output bound or killed at its
 * time limit, its standard error kept, a program that is not there; the disassembler's
 * search (nvdisasm before cuobjdump, the toolkit before $PATH) and its run, with
 * stand-in tools on $PATH, its flags, its temporary file removed, a listing cut at 8 MiB
 * with a note. The real nvdisasm's output: test_kernel_code where the toolkit has it. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernels/core/clock.h"
#include "server/service/child_run.h"
#include "server/service/usass.h"
#include "tests/check.h"
#include "tests/runner.h"

static void test_cut(void) {
  char *argv[] = {"sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x", NULL};
  struct child_run_limits lim = {.time_s = 10, .max_bytes = 1000, .truncate = true};
  struct child_run_result res;
  char why[200];
  CHECK_INT_EQ(child_run("sh", argv, &lim, &res, why, sizeof why), 0);
  CHECK(res.truncated);
  CHECK_INT_EQ(res.out_bytes, 1000);
  CHECK_INT_EQ(strlen(res.out), 1000);
  free(res.out);
  lim.truncate = false;
  CHECK_INT_EQ(child_run("sh", argv, &lim, &res, why, sizeof why), -EFBIG);
  CHECK(res.out == NULL);
  CHECK(strstr(why, "over 1000 bytes") != NULL);
}

static void test_time_limit(void) {
  char *argv[] = {"sh", "-c", "exec sleep 30", NULL};
  struct child_run_limits lim = {.time_s = 0.3, .max_bytes = 1000};
  struct child_run_result res;
  char why[200];
  CHECK_INT_EQ(child_run("sh", argv, &lim, &res, why, sizeof why), -ETIMEDOUT);
  CHECK(strstr(why, "ran past 0.3 s") != NULL);
  CHECK(WIFSIGNALED(res.status)); /* killed, and waited for */
  /* One that closes its output and runs on: still killed at the limit, not waited on
   * for 30 s. */
  char *quiet[] = {"sh", "-c", "exec >&- 2>&-; exec sleep 30", NULL};
  double t0 = clock_mono_s();
  CHECK_INT_EQ(child_run("sh", quiet, &lim, &res, why, sizeof why), -ETIMEDOUT);
  CHECK(clock_mono_s() - t0 < 5);
  CHECK(WIFSIGNALED(res.status));
}

static void test_exit_and_stderr(void) {
  char *argv[] = {"sh", "-c", "echo out; echo oops >&2; exit 4", NULL};
  struct child_run_limits lim = {.time_s = 10, .max_bytes = 1000};
  struct child_run_result res;
  char why[200];
  CHECK_INT_EQ(child_run("sh", argv, &lim, &res, why, sizeof why), 0);
  CHECK(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 4);
  CHECK_STR_EQ(res.out, "out\n");
  CHECK_STR_EQ(res.err, "oops\n");
  free(res.out);
  char *none[] = {"gpulab-no-such-tool", NULL};
  CHECK_INT_EQ(child_run("/nonexistent/gpulab-no-such-tool", none, &lim, &res, why, sizeof why),
               -ENOENT);
  CHECK(strstr(why, "could not be run") != NULL);
}

static void test_temp_file(void) {
  char path[256];
  CHECK_INT_EQ(child_temp_file("a\0b", 3, "t", path, sizeof path), 0);
  struct stat st;
  CHECK_INT_EQ(stat(path, &st), 0);
  CHECK_INT_EQ(st.st_mode & 0777, 0600);
  CHECK_INT_EQ(st.st_size, 3);
  CHECK(strstr(path, "/gpulab-t-") != NULL);
  unlink(path);
}

static char bin[512];

/* A stand-in tool named name in bin: body after "#!/bin/sh". */
static void tool(const char *name, const char *body) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", bin, name);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fprintf(f, "#!/bin/sh\n%s\n", body);
  fclose(f);
  CHECK_INT_EQ(chmod(path, 0700), 0);
}

static bool toolkit_has_one(void) {
  return access("/usr/local/cuda/bin/nvdisasm", X_OK) == 0 ||
         access("/usr/local/cuda/bin/cuobjdump", X_OK) == 0;
}

/* $PATH only bin (and /bin for sh, od): cuobjdump alone, then nvdisasm before it. */
static void test_search(void) {
  if (toolkit_has_one()) {
    printf("skipped: this toolkit has its own disassembler, found first\n");
    return;
  }
  snprintf(bin, sizeof bin, "%s/bin", test_dir());
  CHECK_INT_EQ(mkdir(bin, 0700), 0);
  char path[700], found[600], why[800];
  snprintf(path, sizeof path, "%s:/usr/bin:/bin", bin);
  setenv("PATH", path, 1);
  unsetenv("CUDA_HOME");
  CHECK_INT_EQ(usass_find(NULL, found, sizeof found, why, sizeof why), -ENOENT);
  CHECK(strstr(why, "neither nvdisasm nor cuobjdump is in the CUDA toolkit's bin folder") != NULL);
  CHECK(strstr(why, "cuda-nvdisasm") != NULL);
  CHECK(strstr(why, "/usr/local/cuda") == NULL && strstr(why, bin) == NULL); /* the log's */
  tool("cuobjdump", "echo \"cuobjdump $1\"; od -An -c \"$2\"");
  CHECK_INT_EQ(usass_find(NULL, found, sizeof found, why, sizeof why), 0);
  CHECK(strstr(found, "/cuobjdump") != NULL);
  char *out;
  bool cut;
  CHECK_INT_EQ(usass_disassemble(NULL, "\177ELF", 4, &out, &cut, why, sizeof why), 0);
  CHECK(strstr(out, "cuobjdump --dump-sass\n") == out && strstr(out, "E   L   F") != NULL);
  CHECK(!cut);
  free(out);
  tool("nvdisasm", "echo \"nvdisasm $1\"");
  CHECK_INT_EQ(usass_find(NULL, found, sizeof found, why, sizeof why), 0);
  CHECK(strstr(found, "/nvdisasm") != NULL);
  CHECK_INT_EQ(usass_disassemble(NULL, "\177ELF", 4, &out, &cut, why, sizeof why), 0);
  CHECK_STR_EQ(out, "nvdisasm --print-code\n");
  free(out);
}

/* A listing past 8 MiB: cut there, with the note; a tool that fails: -EIO with its
 * exit and message. */
static void test_bounds(void) {
  if (toolkit_has_one()) return;
  tool("nvdisasm", "head -c 9000000 /dev/zero | tr '\\0' x");
  char *out, why[800];
  bool cut;
  CHECK_INT_EQ(usass_disassemble(NULL, "x", 1, &out, &cut, why, sizeof why), 0);
  CHECK(cut);
  CHECK_INT_EQ(strlen(out), USASS_MAX_BYTES + strlen(USASS_TRUNCATED_NOTE));
  CHECK(strstr(out, "more than 8 MiB") != NULL);
  free(out);
  tool("nvdisasm", "echo 'nvdisasm fatal : not a cubin' >&2; exit 2");
  CHECK_INT_EQ(usass_disassemble(NULL, "x", 1, &out, &cut, why, sizeof why), -EIO);
  CHECK(out == NULL);
  CHECK(strstr(why, "exited with 2: nvdisasm fatal : not a cubin") != NULL);
  /* The temporary file's path (a server folder) is said as <cubin>, the tool by name. */
  tool("nvdisasm", "echo \"nvdisasm fatal : $2 is not a cubin\" >&2; exit 2");
  CHECK_INT_EQ(usass_disassemble(NULL, "x", 1, &out, &cut, why, sizeof why), -EIO);
  CHECK(strstr(why, "nvdisasm exited with 2: nvdisasm fatal : <cubin> is not a cubin") == why);
}

static void *slow_disassembly(void *arg) {
  char *out = NULL, why[300];
  bool cut;
  *(int *)arg = usass_disassemble(NULL, "x", 1, &out, &cut, why, sizeof why);
  free(out);
  return NULL;
}

/* USASS_SLOTS at once: a third while two run is -EBUSY, and runs once they ended. */
static void test_slots(void) {
  if (toolkit_has_one()) return;
  tool("nvdisasm", "sleep 1; echo listed");
  pthread_t t[USASS_SLOTS];
  int rc[USASS_SLOTS];
  for (int i = 0; i < USASS_SLOTS; i++) pthread_create(&t[i], NULL, slow_disassembly, &rc[i]);
  usleep(300 * 1000); /* both started: each sleeps a second in its child */
  char *out = NULL, why[300];
  bool cut;
  CHECK_INT_EQ(usass_disassemble(NULL, "x", 1, &out, &cut, why, sizeof why), -EBUSY);
  CHECK(strstr(why, "disassemblies are running") != NULL);
  for (int i = 0; i < USASS_SLOTS; i++) {
    pthread_join(t[i], NULL);
    CHECK_INT_EQ(rc[i], 0);
  }
  CHECK_INT_EQ(usass_disassemble(NULL, "x", 1, &out, &cut, why, sizeof why), 0);
  CHECK(strstr(out, "listed") != NULL);
  free(out);
}

static const struct test_case cases[] = {TEST(test_cut),
                                         TEST(test_time_limit),
                                         TEST(test_exit_and_stderr),
                                         TEST(test_temp_file),
                                         TEST(test_search),
                                         TEST_AFTER(test_bounds, test_search),
                                         TEST_AFTER(test_slots, test_search),
                                         TEST_END};
const struct test_suite test_suite = {.cases = cases};
