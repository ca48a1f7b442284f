/* HTTP tests of gpulabd on the CUDA backend: every variant of every experiment at
 * sizes with tails and at the lecture's sizes, all available and all passing, with
 * launch details. Skips (77) where no CUDA device answers. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_client.h"
#include "runner.h"

static struct gpulabd D;

/* Starts gpulabd --backend cuda, or exits 77 when it says CUDA is unavailable. */
static void start_or_skip(void) {
  static const char *const args[] = {"--backend", "cuda", "--streams", "2", NULL};
  gpulabd_start_or_skip(args, &D);
}

static void test_device(void) {
  struct http_reply r;
  http_get(&D, "/health", &r);
  CHECK_STATUS(&r, 200);
  CHECK_STR_EQ(JSTR(r.json, "status"), "ok");
  CHECK_STR_EQ(JSTR(r.json, "backend"), "cuda");
  http_reply_free(&r);

  http_get(&D, "/device", &r);
  CHECK_STATUS(&r, 200);
  fprintf(stderr, "device: %s\n", r.body);
  CHECK_STR_EQ(JSTR(r.json, "backend"), "cuda");
  CHECK(*JSTR(r.json, "name"));
  int major = -1, minor = -1;
  CHECK(sscanf(JSTR(r.json, "compute_capability"), "%d.%d", &major, &minor) == 2);
  CHECK(major >= 1 && minor >= 0);
  CHECK(JINT(r.json, "sms") > 0);
  CHECK(JINT(r.json, "memory_total_bytes") > 0);
  CHECK(JINT(r.json, "job_memory_limit_bytes") > 0);
  CHECK_INT_EQ(JINT(r.json, "streams"), 2);
  CHECK(JBOOL(r.json, "healthy"));
  /* measured at start-up: every ceiling, and NVML's status (clocks where it works) */
  static const char *const ceilings[] = {"copy_gbps", "sgemm_gflops", "tf32_gflops",
                                         "h2d_gbps",  "d2h_gbps",     "bidir_gbps"};
  for (size_t i = 0; i < sizeof ceilings / sizeof ceilings[0]; i++) {
    char key[48];
    snprintf(key, sizeof key, "ceilings.%s", ceilings[i]);
    CHECK(JNUM(r.json, key) > 0);
  }
  const char *nvml = JSTR(r.json, "nvml");
  CHECK(strcmp(nvml, "available") == 0 ? JINT(r.json, "clocks.sm_mhz") > 0
                                       : strncmp(nvml, "unavailable: ", 13) == 0);
  http_reply_free(&r);
}

/* /metrics on a GPU: the device series labelled as the DCGM exporter labels it (a
 * UUID as nvidia-smi -L shows it, NVML's form of the PCI bus id), memory in all as
 * /device says, gpulab_build_info with CUDA's version and, with NVML, the driver's,
 * and NVML's utilization gauges in [0, 1]. */
static void test_metrics(void) {
  struct http_reply r;
  http_get(&D, "/device", &r);
  CHECK_STATUS(&r, 200);
  bool nvml = strcmp(JSTR(r.json, "nvml"), "available") == 0;
  long long total = JINT(r.json, "memory_total_bytes");
  http_reply_free(&r);
  http_get(&D, "/metrics", &r);
  CHECK_INT_EQ(r.status, 200); /* text, not JSON: CHECK_STATUS would refuse it */
  const char *at = strstr(r.body, "\ngpulab_device_memory_total_bytes{gpu=\"0\",UUID=\"GPU-");
  CHECK(at != NULL);
  char uuid[64] = "", pci[32] = "";
  CHECK(
      sscanf(
          at,
          "\ngpulab_device_memory_total_bytes{gpu=\"0\",UUID=\"%63[^\"]\",pci_bus_id=\"%31[^\"]\"",
          uuid, pci) == 2);
  fprintf(stderr, "metrics: UUID %s, pci_bus_id %s\n", uuid, pci);
  CHECK_INT_EQ(strlen(uuid), 40); /* GPU-8-4-4-4-12 */
  CHECK(uuid[12] == '-' && uuid[17] == '-' && uuid[22] == '-' && uuid[27] == '-');
  unsigned domain, bus, dev;
  CHECK(strlen(pci) == 16 && sscanf(pci, "%8X:%2X:%2X.0", &domain, &bus, &dev) == 3);
  CHECK(strstr(at, "modelName=\"") && strstr(at, "Hostname=\""));
  const char *value = strstr(at + 1, "} ");
  CHECK(value && atoll(value + 2) == total);
  if (system("command -v nvidia-smi >/dev/null 2>&1") == 0) { /* the UUID is nvidia-smi's */
    char cmd[128];
    snprintf(cmd, sizeof cmd, "nvidia-smi -L | grep -q 'UUID: %s)'", uuid);
    CHECK_INT_EQ(system(cmd), 0);
  }
  CHECK(strstr(r.body, "gpulab_build_info{version=\"0.1.0\",cuda=\"1") ||
        strstr(r.body, "gpulab_build_info{version=\"0.1.0\",cuda=\"2"));
  CHECK(!nvml == (strstr(r.body, "\",driver=\"\"} 1") != NULL));
  at = strstr(r.body, "\ngpulab_device_utilization_ratio{gpu=\"0\"");
  CHECK(!nvml == !at);
  if (at) {
    double util = atof(strstr(at + 1, "} ") + 2);
    CHECK(util >= 0 && util <= 1);
    CHECK(strstr(r.body, "\ngpulab_device_memory_utilization_ratio{gpu=\"0\""));
  }
  /* The exposition's format is promtool's to check, in test_service on every CI run;
   * the GPU machine has no promtool (nothing can be installed there). */
  if (system("command -v promtool >/dev/null 2>&1") == 0)
    check_promtool_metrics(r.body, "/tmp/gpulab-gpu-metrics.txt");
  else
    fprintf(stderr,
            "metrics: promtool not on this machine: the labels were checked, not the format\n");
  http_reply_free(&r);
}

/* Runs one job and checks that every variant ran on the GPU and passed, in order,
 * each with its launch shape (a library call such as cuBLAS may lack one). */
static void run_all(const char *type, const char *body, const char *const *variants, int n) {
  char path[32];
  snprintf(path, sizeof path, "/%s", type);
  json_t *job = job_post_done(&D, "cuda", path, type, body);
  json_t *runs = json_at(job, "result.runs");
  const char *unit = strcmp(type, "gemm") == 0 ? "GFLOP/s" : "GB/s";
  CHECK_INT_EQ(json_array_size(runs), n);
  for (int i = 0; i < n; i++) {
    json_t *run = json_array_get(runs, (size_t)i);
    CHECK_STR_EQ(JSTR(run, "variant"), variants[i]);
    if (!JBOOL(run, "available"))
      CHECK_FAIL_("%s %s is unavailable on the GPU: %s", type, variants[i], JSTR(run, "reason"));
    bool library = strncmp(variants[i], "cublas", 6) == 0;
    bool tf32 = strcmp(variants[i], "tf32") == 0 || strcmp(variants[i], "cublas_tf32") == 0;
    CHECK_RUN(run, unit, i == 0, !library);
    /* the figure against the matching ceiling, the speedup's spread, the rule */
    const char *ceiling = JSTR(run, "ceiling");
    CHECK(strcmp(ceiling, strcmp(type, "gemm")
                              ? (strcmp(type, "pipeline") ? "copy_gbps" : "bidir_gbps")
                              : (tf32 ? "tf32_gflops" : "sgemm_gflops")) == 0);
    CHECK(JNUM(run, "percent_of_ceiling") > 0);
    /* Against the copy at its own size too, where the copy is its ceiling. */
    if (strcmp(ceiling, "copy_gbps") == 0) {
      CHECK(JNUM(run, "percent_of_limit") > 0);
      CHECK(JNUM(job, "result.limit.gbps") > 0);
      fprintf(stderr, "    %.1f%% of the limit at 2^%.0f bytes (%.0f GB/s, %s)\n",
              JNUM(run, "percent_of_limit"), log2(JNUM(job, "result.limit.bytes")),
              JNUM(job, "result.limit.gbps"), JSTR(job, "result.limit.mode"));
    } else {
      CHECK(json_is_null(json_at(run, "percent_of_limit")));
    }
    CHECK_INT_EQ(json_array_size(json_at(run, "speedup_range")), 2);
    CHECK_STR_EQ(JSTR(run, "timing.stopped_by"), "batches");
    fprintf(stderr, "  %s %s %s: %.3f ms, %.1f %s, %.1f%% of %s\n", type, body, variants[i],
            JNUM(run, "timing.median_ms"), JNUM(run, "figure"), unit,
            JNUM(run, "percent_of_ceiling"), ceiling);
  }
  json_decref(job);
}

static const char *const transpose_all[] = {"naive", "shared32", "padded33", "copy", "best"};
static const char *const gemm_all[] = {"naive", "tiled", "cublas", "best", "tf32", "cublas_tf32"};
static const char *const stencil_all[] = {"naive", "shared", "best"};
enum { N_TRANSPOSE = 5, N_GEMM = 6, N_STENCIL = 3 }; /* the lists above, "all" */
static const char *const streams_1_3[] = {"streams=1", "streams=3"};

static void test_odd_sizes(void) {
  run_all("transpose", "{\"m\":33,\"n\":47}", transpose_all, N_TRANSPOSE);
  run_all("transpose", "{\"m\":47,\"n\":33}", transpose_all, N_TRANSPOSE);
  run_all("gemm", "{\"m\":33,\"n\":47,\"k\":18}", gemm_all, N_GEMM);
  run_all("stencil", "{\"n\":1000,\"radius\":0}", stencil_all, N_STENCIL);
  run_all("stencil", "{\"n\":1000,\"radius\":2}", stencil_all, N_STENCIL);
  run_all("stencil", "{\"n\":1000,\"radius\":32}", stencil_all, N_STENCIL);
  run_all("pipeline", "{\"chunk\":1000,\"chunks\":3,\"streams\":[1,3],\"terms\":8}", streams_1_3,
          2);
}

static void test_lecture_sizes(void) {
  run_all("transpose", "{\"m\":4096,\"n\":4096}", transpose_all, N_TRANSPOSE);
  run_all("gemm", "{\"m\":1024,\"n\":1024,\"k\":1024}", gemm_all, N_GEMM);
  run_all("stencil", "{\"n\":16777216,\"radius\":2}", stencil_all, N_STENCIL);
  run_all("stencil", "{\"n\":16777216,\"radius\":32}", stencil_all, N_STENCIL);
  run_all("pipeline", "{\"chunk\":4194304,\"streams\":[1,3]}", streams_1_3, 2);
}

static int start(void) {
  start_or_skip();
  return 0;
}

static void stop(void) { gpulabd_stop(&D); }

static const struct test_case cases[] = {
    TEST(test_device), TEST(test_metrics), TEST(test_odd_sizes), TEST(test_lecture_sizes), TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = start, .teardown = stop};
