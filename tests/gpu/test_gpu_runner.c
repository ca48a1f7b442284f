/* The runner in CUDA mode on a real GPU (label gpu; skips with 77 where no CUDA device
 * answers): buffers this process allocated with cudaMalloc, exported as IPC handles,
 * written by users' kernels compiled with NVRTC for the device and launched in the
 * runner's own context. The lecture's padded33 transposes right; a wrong kernel is
 * caught; the kernel that computes only on a NaN output does every launch's work; the
 * one that counts its launches in a __device__ variable to work once finds the count
 * put back before every launch, so every launch computes only the blocks that start
 * before its first block counts, and the rest stays NaN: caught; cold runs answer one L2 flush of twice the
 * device's L2 per timed launch and stay right; __trap(), an out-of-range store and an
 * endless loop each fail with the right code, this process's context stays healthy,
 * and the next job passes. GPULAB_RUNNER names the executable. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/clock.h"
#include "kernels/core/experiment.h"
#include "tests/runner.h"

#ifndef GPULAB_HAVE_CUDA
static int skip(void) {
  printf("SKIP: a build without CUDA\n");
  return CHECK_SKIP;
}

static const struct test_case cases[] = {TEST_END};
const struct test_suite test_suite = {.cases = cases, .setup = skip};
#else
#include <cuda_runtime_api.h>

#include "kernels/user/image_cache.h"
#include "kernels/user/runner.h"
#include "kernels/user/ucompile.h"

enum { M = 4096 + 3, N = 2048 + 5 };

/* The lecture's tiled<33> (kernels/transpose/transpose.cu) as a user would send it. */
static const char *const padded33 =
    "#define TILE 32\n"
    "extern \"C\" __global__ void kernel(const float *a, float *b, int m, int n) {\n"
    "  __shared__ float tile[TILE][TILE + 1];\n"
    "  int tx = threadIdx.x, ty = threadIdx.y;\n"
    "  size_t x = (size_t)blockIdx.x * TILE + tx, y = (size_t)blockIdx.y * TILE + ty;\n"
    "  if (x < (size_t)n && y < (size_t)m) tile[ty][tx] = a[y * n + x];\n"
    "  __syncthreads();\n"
    "  size_t ox = (size_t)blockIdx.y * TILE + tx, oy = (size_t)blockIdx.x * TILE + ty;\n"
    "  if (ox < (size_t)m && oy < (size_t)n) b[oy * m + ox] = tile[tx][ty];\n"
    "}\n";
static const char *const wrong = /* forgets the last row of every tile */
    "extern \"C\" __global__ void kernel(const float *a, float *b, int m, int n) {\n"
    "  size_t x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n"
    "  if (threadIdx.y == 31) return;\n"
    "  if (x < n && y < m) b[x * m + y] = a[y * n + x];\n"
    "}\n";
static const char *const lazy = /* computes only when it sees its output poisoned */
    "extern \"C\" __global__ void kernel(const float *a, float *b, int m, int n) {\n"
    "  size_t x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n"
    "  if (x < n && y < m && b[x * m + y] != b[x * m + y]) b[x * m + y] = a[y * n + x];\n"
    "}\n";
static const char *const once = /* works on its first launch only */
    "__device__ int calls;\n"
    "extern \"C\" __global__ void kernel(const float *a, float *b, int m, int n) {\n"
    "  size_t x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n"
    "  __shared__ int seen;\n"
    "  if (threadIdx.x == 0 && threadIdx.y == 0) seen = *(volatile int *)&calls;\n"
    "  __syncthreads();\n"
    "  if (seen > 0) return;\n"
    "  if (x < n && y < m) b[x * m + y] = a[y * n + x];\n"
    "  if (x == 0 && y == 0) atomicAdd(&calls, 1);\n"
    "}\n";
static const char *const trap =
    "extern \"C\" __global__ void kernel(const float *a, float *b, int m, int n) { __trap(); }\n";
static const char *const oob =
    "extern \"C\" __global__ void kernel(const float *a, float *b, int m, int n) {\n"
    "  b[(size_t)m * n + (1ull << 36) + threadIdx.x] = 1.0f;\n"
    "}\n";
static const char *const endless =
    "extern \"C\" __global__ void kernel(const float *a, float *b, int m, int n) {\n"
    "  for (;;) __nanosleep(1000); /* a side effect each turn: the loop cannot be dropped */\n"
    "}\n";

static struct nvrtc_lib *lib;
static int arch;
static float *d_a, *d_b, *h_a, *h_b;
static struct runner_buffer_desc bufs[2];

static struct ucompile_report *compile(const char *src) {
  /* Against the transpose experiment's own declaration, as POST /kernels compiles. */
  const struct exp_user *u = exp_user_of((enum exp_type)exp_type_from_name("transpose"));
  CHECK(u != NULL);
  struct ucompile_req req = {.source = src,
                             .name = "user.cu",
                             .entry = "kernel",
                             .declaration = u->declaration,
                             .arch = arch,
                             .time_limit_s = 60};
  struct ucompile_report *r;
  char msg[256];
  CHECK_INT_EQ(ucompile_run(lib, &req, &r, msg, sizeof msg), 0);
  if (!r->ok) fprintf(stderr, "%s\n", r->log);
  CHECK(r->ok);
  return r;
}

static int64_t mismatches(void) {
  CHECK_CUDA(cudaMemcpy(h_b, d_b, sizeof(float) * M * N, cudaMemcpyDeviceToHost));
  int64_t bad = 0;
  for (size_t y = 0; y < M; y++)
    for (size_t x = 0; x < N; x++) bad += !(h_b[x * M + y] == h_a[y * N + x]);
  return bad;
}

/* Cold jobs (job's timed batches with m.cold): each must answer 20 flushes of
 * flush_bytes, twice the device's L2 (rounded up to whole float4s). */
static int cold;
static uint64_t flush_bytes;

/* One job of src: attach, load, warm 3, 5 timed batches of 20 poisoned launches
 * (cold: each after an L2 flush). Returns runner_run's code; *median_ms the batches'
 * median. */
static int job(struct runner *r, const char *src, double deadline_s, struct runner_fault *fault,
               double *median_ms) {
  struct ucompile_report *img = compile(src);
  uint8_t key[32];
  image_sha256(img->image, img->image_bytes, key);
  char err[256];
  CHECK_INT_EQ(runner_acquire(r, err, sizeof err), 0);
  CHECK_INT_EQ(runner_attach(r, bufs, NULL, 2, err, sizeof err), 0);
  struct runner_loaded_msg loaded;
  CHECK_INT_EQ(
      runner_load(r, key, "kernel", img->image, img->image_bytes, &loaded, err, sizeof err), 0);
  CHECK_CUDA(cudaMemset(d_b, 0xff, sizeof(float) * M * N));
  CHECK_CUDA(cudaDeviceSynchronize()); /* the runner, another process, does not wait for it */
  struct runner_run_msg m;
  memset(&m, 0, sizeof m);
  memcpy(m.key, key, 32);
  m.grid[0] = (N + 31) / 32, m.grid[1] = (M + 31) / 32, m.grid[2] = 1;
  m.block[0] = 32, m.block[1] = 32, m.block[2] = 1;
  m.n_args = 4;
  m.args[0] = (struct runner_arg){RUNNER_ARG_BUFFER, 0};
  m.args[1] = (struct runner_arg){RUNNER_ARG_BUFFER, 1};
  m.args[2] = (struct runner_arg){RUNNER_ARG_I32, M};
  m.args[3] = (struct runner_arg){RUNNER_ARG_I32, N};
  m.out_buffer = 1;
  m.out_floats = (uint64_t)M * N;
  m.poison_each = 1;
  m.n_launches = 3;
  struct runner_done_msg done;
  int rc = runner_run(r, &m, deadline_s, &done, fault, err, sizeof err);
  double s[5];
  for (int b = 0; rc == 0 && b < 5; b++) {
    m.n_launches = 20, m.timed = 1, m.cold = (uint32_t)cold;
    rc = runner_run(r, &m, deadline_s, &done, fault, err, sizeof err);
    s[b] = done.ms_per_launch;
    if (rc == 0) {
      CHECK_INT_EQ(done.l2_flushes, cold ? 20 : 0);
      CHECK_INT_EQ(done.flush_bytes, cold ? flush_bytes : 0);
    }
  }
  if (rc == 0) {
    for (int i = 0; i < 5; i++)
      for (int j = i + 1; j < 5; j++)
        if (s[j] < s[i]) {
          double t = s[i];
          s[i] = s[j], s[j] = t;
        }
    if (median_ms) *median_ms = s[2];
    runner_detach(r);
  } else {
    printf("  failed: %s\n", err);
  }
  runner_release(r);
  ucompile_report_free(img);
  return rc;
}

static struct runner *r; /* one runner for every case: a fault replaces it */

static int setup(void) {
  int n_dev = 0;
  if (cudaGetDeviceCount(&n_dev) != cudaSuccess || n_dev == 0) {
    printf("SKIP: no CUDA device answers\n");
    return CHECK_SKIP;
  }
  char why[512];
  CHECK_INT_EQ(nvrtc_lib_open(NULL, &lib, why, sizeof why), 0);
  int major = 0, minor = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  CHECK_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
  arch = major * 10 + minor;
  CHECK_CUDA(cudaMalloc((void **)&d_a, sizeof(float) * M * N));
  CHECK_CUDA(cudaMalloc((void **)&d_b, sizeof(float) * M * N));
  h_a = malloc(sizeof(float) * M * N);
  h_b = malloc(sizeof(float) * M * N);
  CHECK(h_a && h_b);
  for (size_t i = 0; i < (size_t)M * N; i++) h_a[i] = (float)(i % 8191) * 0.25f;
  CHECK_CUDA(cudaMemcpy(d_a, h_a, sizeof(float) * M * N, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaDeviceSynchronize()); /* the copy's DMA may outlive cudaMemcpy's return */
  float *ptrs[2] = {d_a, d_b};
  for (int i = 0; i < 2; i++) {
    cudaIpcMemHandle_t h;
    CHECK_CUDA(cudaIpcGetMemHandle(&h, ptrs[i]));
    memcpy(bufs[i].ipc, &h, sizeof h);
    bufs[i].bytes = sizeof(float) * M * N;
    bufs[i].offset = 0;
  }
  const char *exe = getenv("GPULAB_RUNNER");
  struct runner_config cfg = {.exe = exe ? exe : "./gpulab-runner", .mode = RUNNER_MODE_CUDA};
  CHECK_INT_EQ(runner_new(&cfg, &r), 0);
  return 0;
}

static void teardown(void) {
  runner_free(r);
  cudaFree(d_a);
  cudaFree(d_b);
  free(h_a);
  free(h_b);
  nvrtc_lib_free(lib);
}

/* padded33, hot and cold (each timed launch after the runner's L2 flush): right. */
static void test_good(void) {
  struct runner_fault fault;
  struct runner_stats st;
  double med = 0;
  CHECK_INT_EQ(job(r, padded33, 5, &fault, &med), 0);
  CHECK_INT_EQ(mismatches(), 0);
  runner_stats(r, &st);
  double gbps = 2.0 * sizeof(float) * M * N / (med * 1e-3) / 1e9;
  printf("padded33 (user, runner): median %.4f ms = %.0f GB/s; runner start %.0f ms\n", med, gbps,
         st.last_start_ms);
  /* Cold: the same kernel, each timed launch after the runner's L2 flush; still right. */
  int l2 = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  flush_bytes = ((uint64_t)2 * (uint64_t)l2 / 4 + 3) / 4 * 4 * 4;
  cold = 1;
  double cold_med = 0;
  CHECK_INT_EQ(job(r, padded33, 5, &fault, &cold_med), 0);
  CHECK_INT_EQ(mismatches(), 0);
  CHECK_INT_EQ(job(r, once, 5, &fault, NULL), 0); /* poisoned, then flushed: still caught */
  CHECK(mismatches() > 0);
  cold = 0;
  printf("padded33 cold (L2 %d bytes, flush reads %llu): median %.4f ms (hot %.4f)\n", l2,
         (unsigned long long)flush_bytes, cold_med, med);
}

/* Kernels the check must catch: wrong, lazy, once. */
static void test_caught(void) {
  struct runner_fault fault;
  CHECK_INT_EQ(job(r, wrong, 5, &fault, NULL), 0);
  int64_t bad = mismatches();
  printf("wrong: %lld mismatches\n", (long long)bad);
  CHECK(bad > 0);
  CHECK_INT_EQ(job(r, lazy, 5, &fault, NULL), 0);
  CHECK_INT_EQ(mismatches(), 0);
  CHECK_INT_EQ(job(r, once, 5, &fault, NULL), 0);
  bad = mismatches(); /* the blocks that start after block (0, 0) counted: NaN */
  printf("once: %lld of %lld elements wrong\n", (long long)bad, (long long)M * N);
  CHECK(bad > 0);
}

/* Faults stay in the runner: this process's context is untouched, the next job passes. */
static void test_faults(void) {
  struct runner_fault fault;
  struct runner_stats st;
  runner_stats(r, &st);
  int starts_before = (int)st.starts;
  const char *bad_src[3] = {trap, oob, endless};
  const char *names[3] = {"__trap()", "out-of-range store", "endless loop"};
  for (int i = 0; i < 3; i++) {
    double t0 = clock_mono_ms();
    int rc = job(r, bad_src[i], 1.0, &fault, NULL);
    double failed = clock_mono_ms() - t0;
    printf("%s: %s (%s: %s) after %.0f ms\n", names[i], strerror(-rc), fault.name, fault.msg,
           failed);
    CHECK_INT_EQ(rc, i == 2 ? -ETIMEDOUT : -EFAULT);
    if (i < 2) CHECK(strncmp(fault.name, "cudaError", 9) == 0);
    /* This process's context is untouched. */
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaGetLastError());
    t0 = clock_mono_ms();
    CHECK_INT_EQ(job(r, padded33, 5, &fault, NULL), 0);
    CHECK_INT_EQ(mismatches(), 0);
    runner_stats(r, &st);
    printf("  next job passed %.0f ms later (runner restart %.0f ms)\n", clock_mono_ms() - t0,
           st.last_start_ms);
  }
  runner_stats(r, &st);
  /* A new runner after each fault (and the first start, where none ran yet). */
  CHECK_INT_EQ(st.starts, starts_before + 3 + (starts_before == 0));
}

static const struct test_case cases[] = {
    TEST(test_good),
    TEST(test_caught),
    TEST(test_faults),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = setup, .teardown = teardown};
#endif
