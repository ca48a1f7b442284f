/* gpulabctl against a real gpulabd (--backend cpu, --cpu-runner-test): a job run to its
 * table and exit 0; --json's document; a refused request as one problem line and exit
 * 2; a kernel submitted and run beside a built-in; one that does not compile (exit 1,
 * its error); a kernel whose check fails (exit 1); a kernel's versions and their diff;
 * jobs, show, kernels, leaderboard;
 * buffers up and down; cancel of a finished job refused (409); no server (exit 2);
 * options after the command's arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "http_client.h"
#include "runner.h"

static struct gpulabd D;
static char out[1 << 16];

/* Runs gpulabctl with args (a shell fragment) against D, stdout and stderr into out.
 * Returns its exit status. */
static int ctl(const char *args) {
  const char *exe = getenv("GPULABCTL");
  if (!exe) CHECK_FAIL_("%s", "GPULABCTL is not set (the path of the built gpulabctl)");
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "GPULAB_URL=http://127.0.0.1:%d '%s' %s 2>&1", D.port, exe, args);
  FILE *p = popen(cmd, "r");
  CHECK(p != NULL);
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  int status = pclose(p);
  printf("$ gpulabctl %s  -> %d\n%s", args, WIFEXITED(status) ? WEXITSTATUS(status) : -1, out);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void has(const char *what) {
  if (!strstr(out, what)) CHECK_FAIL_("no '%s' in the output above", what);
}

/* gpulabctl args must exit with status and show what it prints (NULL: anything). */
static void expect(const char *args, int status, const char *shows) {
  int got = ctl(args);
  if (got != status) CHECK_FAIL_("gpulabctl %s exited %d, not %d", args, got, status);
  if (shows) has(shows);
}

static char dir[] = "/tmp/gpulabctl-XXXXXX";

static int start(void) {
  const char *args[] = {"--backend", "cpu", "--cpu-runner-test", "--db", "none", "--access-log",
                        "off",       NULL};
  gpulabd_start(args, &D);
  CHECK(mkdtemp(dir) != NULL);
  return 0;
}

static void stop(void) {
  gpulabd_stop(&D);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
}

static void test_run(void) {
  /* A job: the lecture's table, every run checked, exit 0. */
  expect("run transpose m=64 n=48 --variant naive,padded33,best", 0, "job 1 transpose: done");
  has("variant ");
  has("padded33 ");
  has("passed");
  has("1.00x"); /* the first run is the speedup's baseline */
  /* Options after the arguments; --json prints the document. */
  expect("run gemm m=16 n=16 k=16 --variant naive --json", 0, "\"state\": \"done\"");
  /* A refused request: one problem line, exit 2. */
  expect("run transpose m=0", 2, "400 out_of_range (m): m must be between 1 and");
  expect("run transpose nonsense", 2, "'nonsense' is not name=value");
}

static void test_kernel(void) {
  char path[128], src[512], cmd[512];
  /* A kernel: compiled, then run beside padded33. */
  snprintf(path, sizeof path, "%s/tile.cu", dir);
  snprintf(src, sizeof src,
           "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n) {\n"
           "  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n"
           "  if (x < n && y < m) b[(size_t)x * m + y] = a[(size_t)y * n + x];\n}\n");
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(src, f);
  fclose(f);
  snprintf(
      cmd, sizeof cmd,
      "kernel submit %s --experiment transpose --block 32,32 --tile 32,32 --vs padded33 m=37 n=53",
      path);
  expect(cmd, 0, "kernel:1@1 (tile): ");
  has("kernel:1@1 ");
  /* The same name again: version 2; its versions and the diff. */
  f = fopen(path, "a");
  CHECK(f != NULL);
  fputs("// v2\n", f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "kernel submit %s --experiment transpose --block 32,32 --tile 32,32",
           path);
  expect(cmd, 0, "kernel:1@2 (tile): ");
  /* --cooperative: the version is launched cooperatively */
  snprintf(cmd, sizeof cmd, "kernel submit %s --experiment transpose --cooperative --json", path);
  expect(cmd, 0, "\"cooperative\": true");
  expect("kernel versions 1", 0, "kernel:1@3 ");
  expect("kernel versions 1", 0, "kernel:1@1 ");
  has("kernel:1@2 ");
  expect("kernel diff 1 1 2", 0, "\n+// v2\n");
  has("--- kernel:1@1/tile.cu");
  expect("kernel diff 1 1 9", 2, "404 version_not_found");
  /* An entry the source does not define: it does not compile, exit 1 and the error. */
  snprintf(cmd, sizeof cmd,
           "kernel submit %s --experiment transpose --entry wrong --vs padded33 m=37 n=53", path);
  CHECK_INT_EQ(ctl(cmd), 1);
  has("422 compile_failed (source): no extern \"C\" __global__ function named wrong");
  /* Defined: the CPU test runner's "wrong", three elements off; its check fails, exit 1. */
  snprintf(path, sizeof path, "%s/wrong.cu", dir);
  f = fopen(path, "w");
  CHECK(f != NULL);
  fputs("extern \"C\" __global__ void wrong(const float* a, float* b, int m, int n) {}\n", f);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "kernel submit %s --experiment transpose --entry wrong --vs padded33 m=37 n=53", path);
  expect(cmd, 1, "FAILED");
}

/* The compiler's view of kernel 1 (test_kernel's): its PTX; its SASS unavailable here. */
static void test_compiler_view(void) {
  expect("kernel ptx 1", 0, ".entry kernel(");
  has(".target sm_90");
  expect("kernel ptx 1 1", 0, ".entry kernel(");
  expect("kernel ptx 1 9", 2, "404 version_not_found");
  expect("kernel sass 1", 2, "503 sass_unavailable");
}

/* --profile: the run's counters, or (the CPU) why there are none, once. */
static void test_profile(void) {
  expect("run transpose m=64 n=48 --variant naive,padded33 --profile", 0,
         "profile: the CPU backend has no hardware counters");
  expect("run transpose m=64 n=48 --variant naive --profile --json", 0,
         "\"profile\": \"counters\"");
}

/* A problem: defined (its signature), listed, shown (its template), one whose reference
 * does not compile (exit 1, the compiler's log), deleted. */
static void test_problem(void) {
  char path[128], cmd[256];
  snprintf(path, sizeof path, "%s/scale.json", dir);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(
      "{\"name\":\"scale\",\"params\":{\"n\":{\"default\":1000,\"min\":1,\"max\":1000000}},"
      "\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[\"n\"],"
      "\"init\":{\"uniform\":[0,1]}}],\"outputs\":[{\"name\":\"y\",\"dtype\":\"float32\","
      "\"shape\":[\"n\"],\"tolerance\":\"exact\"}],\"reference\":{\"source\":\"extern "
      "\\\"C\\\" __global__ void kernel(const float* x, float* y, int n) { int i = blockIdx.x "
      "* 256 + threadIdx.x; if (i < n) y[i] = 2 * x[i]; }\",\"block\":[256],\"grid\":"
      "[\"cdiv(n, 256)\"]},\"figure\":{\"bytes\":\"8 * n\"}}",
      f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "problem define %s", path);
  expect(cmd, 0,
         "problem scale v1: extern \"C\" __global__ void kernel(const float *x, float *y, int n);");
  expect("problem list", 0, "scale ");
  has("n=1..1000000");
  expect("problem show scale", 0, "scale v1 (");
  has("// scale: a kernel of this problem.");
  /* Its jobs: the params by name beside a job's fields; here every run is unavailable. */
  expect("run problem:scale n=4096 seed=5", 0, "reference        not run: problems run on a CUDA");
  expect("run problem:scale n=0", 2, "400 out_of_range (params.n)");
  expect("run problem:scale --json n=10 seed=3", 0, "\"type\": \"problem\"");
  has("\"n\": 10");
  has("\"seed\": 3");
  /* A kernel of it, its grid an expression with a comma; run beside the reference. */
  char cu[128];
  snprintf(cu, sizeof cu, "%s/twice.cu", dir);
  f = fopen(cu, "w");
  CHECK(f != NULL);
  fputs(
      "extern \"C\" __global__ void kernel(const float* x, float* y, int n) {\n"
      "  int i = blockIdx.x * 512 + threadIdx.x;\n  if (i < n) y[i] = 2 * x[i];\n}\n",
      f);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "kernel submit %s --problem scale --block 512 --grid 'cdiv(n, 512)' --vs reference "
           "n=100",
           cu);
  expect(cmd, 0, "kernel:");
  has("twice");
  snprintf(cmd, sizeof cmd, "kernel submit %s --problem scale --experiment transpose", cu);
  expect(cmd, 2, "usage:");
  expect("problem define /nonexistent.json", 2, "/nonexistent.json: No such file");
  snprintf(cmd, sizeof cmd, "sed -i 's/2 \\* x\\[i\\];/2 * x[i]/' %s", path);
  CHECK(system(cmd) == 0);
  snprintf(cmd, sizeof cmd, "problem define %s", path);
  expect(cmd, 1, "422 compile_failed (reference.source): line 1:");
  expect("problem delete scale", 0, NULL);
  expect("problem show scale", 2, "404 problem_not_found");
}

static void test_buffers(void) {
  char path[128], cmd[512];
  FILE *f;
  /* Buffers: a .npy up, a job on it, the same bytes down, deleted. */
  char npy[128 + 48];
  const char head[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
  memset(npy, ' ', 128);
  memcpy(npy, "\x93NUMPY\x01\x00", 8);
  npy[8] = 128 - 10, npy[9] = 0; /* the header's length: the data starts 16-aligned at 128 */
  memcpy(npy + 10, head, strlen(head));
  npy[127] = '\n';
  for (int i = 0; i < 12; i++) {
    float v = (float)i;
    memcpy(npy + 128 + 4 * i, &v, 4);
  }
  snprintf(path, sizeof path, "%s/a.npy", dir);
  f = fopen(path, "wb");
  CHECK(f != NULL && fwrite(npy, 1, sizeof npy, f) == sizeof npy);
  fclose(f);
  snprintf(cmd, sizeof cmd, "buffers put %s", path);
  expect(cmd, 0, "buffer 1");
  expect("buffers", 0, "3x4");
  expect("run transpose 'a={\"buffer\": 1}' --variant naive,padded33", 0, "passed");
  snprintf(cmd, sizeof cmd, "buffers get 1 -o %s/back.npy", dir);
  CHECK_INT_EQ(ctl(cmd), 0);
  snprintf(path, sizeof path, "%s/back.npy", dir);
  f = fopen(path, "rb");
  char back[sizeof npy + 1];
  CHECK(f != NULL);
  size_t got = fread(back, 1, sizeof back, f);
  fclose(f);
  CHECK_INT_EQ(got, sizeof npy);
  CHECK(memcmp(back + 128, npy + 128, 48) == 0); /* the same floats */
  CHECK_INT_EQ(ctl("buffers delete 1"), 0);
  expect("buffers get 1 -o /dev/null", 2, "404 buffer_not_found");
}

/* The jobs, kernel and buffer of the cases before. */
static void test_listings(void) {
  expect("jobs --limit 2", 0, " done ");
  expect("show 1", 0, "job 1 transpose: done");
  expect("kernels", 0, "kernel:1");
  has(" v3/3"); /* the third: --cooperative */
  expect("leaderboard transpose --size 37,53", 0, "padded33");
  expect("show 999", 2, "404 job_not_found");
  CHECK_INT_EQ(ctl("cancel 1"), 2); /* done: nothing to cancel */
  has("409");
  expect("frobnicate", 2, "no command 'frobnicate'");
}

/* Last: it stops the server. */
static void test_no_server(void) {
  gpulabd_stop(&D);
  /* No server: exit 2, saying so. */
  expect("jobs", 2, "Could");
}

static const struct test_case cases[] = {
    TEST(test_run),
    TEST(test_kernel),
    TEST_AFTER(test_compiler_view, test_kernel),
    TEST(test_profile),
    TEST(test_problem),
    TEST(test_buffers),
    TEST_AFTER_ALL(test_listings),
    TEST(test_no_server),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = start, .teardown = stop};
