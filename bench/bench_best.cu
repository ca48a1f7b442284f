/* The best variants against their ceilings, in one run on one GPU: each job goes
 * through the CUDA backend exactly as gpulabd runs it (checked against the CPU
 * reference, timed with events), the ceilings are measured here beside them:
 * device-to-device cudaMemcpyAsync (bytes read + written) and cuBLAS SGEMM with and
 * without TF32. Prints one table, the ratios last. Not a test: nothing fails on time.
 * Usage: bench_best [--quick]   (--quick: the smaller sizes only) */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/batch_timer.h"
#include "bench/cuda_try.h"
#include "kernels/backends/backend.h"
#include "kernels/backends/cuda/cublas_loader.h"
#include "kernels/gemm/gemm.h"
#include "kernels/stencil/stencil.h"
#include "kernels/transpose/transpose.h"

static cudaStream_t stream;

/* GB/s of a device-to-device copy of n floats, counting bytes read and written. */
static double d2d_gbs(size_t n) {
  float *dst, *src;
  CUDA_OR_EXIT(cudaMalloc(&dst, n * sizeof(float)));
  CUDA_OR_EXIT(cudaMalloc(&src, n * sizeof(float)));
  CUDA_OR_EXIT(cudaMemsetAsync(src, 0x3f, n * sizeof(float), stream));
  double ms = batch_timer_copy_ms(dst, src, n * sizeof(float), stream, 5, 9, 20);
  CUDA_OR_EXIT(cudaFree(dst));
  CUDA_OR_EXIT(cudaFree(src));
  return 8.0 * n / ms / 1e6;
}

struct gemm_arg {
  const struct cublas_fns *f;
  cublasHandle_t h;
  int n;
  float *a, *b, *c;
};
static void sgemm_once(void *p) {
  struct gemm_arg *g = (struct gemm_arg *)p;
  cublasStatus_t st = cublas_loader_sgemm_rowmajor(g->f, g->h, g->n, g->n, g->n, g->a, g->b, g->c);
  if (st != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "sgemm: %s\n", cublas_loader_status_name(st));
    exit(1);
  }
}

__global__ void fill_kernel(float *d, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    unsigned x = (unsigned)i * 2654435761u ^ seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    d[i] = (float)(x & 0xffffff) / 8388608.0f - 1.0f; /* random data, never zeros */
  }
}

/* TFLOP/s of cuBLAS SGEMM at n^3 with the given math mode. */
static double cublas_tflops(int n, cublasMath_t mode) {
  const char *why = "";
  struct gemm_arg g = {cublas_loader_get(&why), NULL, n, NULL, NULL, NULL};
  if (!g.f) {
    fprintf(stderr, "cuBLAS: %s\n", why);
    return 0;
  }
  size_t count = (size_t)n * n;
  CUDA_OR_EXIT(cudaMalloc(&g.a, count * sizeof(float)));
  CUDA_OR_EXIT(cudaMalloc(&g.b, count * sizeof(float)));
  CUDA_OR_EXIT(cudaMalloc(&g.c, count * sizeof(float)));
  fill_kernel<<<1024, 256, 0, stream>>>(g.a, count, 1);
  fill_kernel<<<1024, 256, 0, stream>>>(g.b, count, 2);
  CUDA_OR_EXIT(cudaGetLastError());
  if (cublas_loader_handle_new(g.f, stream, &g.h) != CUBLAS_STATUS_SUCCESS) exit(1);
  g.f->set_math_mode(g.h, mode);
  int reps = n >= 8192 ? 5 : 20;
  double ms = batch_timer_ms(sgemm_once, &g, stream, 3, 7, reps);
  g.f->destroy(g.h);
  CUDA_OR_EXIT(cudaFree(g.a));
  CUDA_OR_EXIT(cudaFree(g.b));
  CUDA_OR_EXIT(cudaFree(g.c));
  return 2.0 * n * (double)n * n / ms / 1e9;
}

/* ---- jobs through the backend ---- */

static struct backend *be;

struct row {
  char job[48], variant[16], kernel[40];
  double ms, figure, ceiling;
  const char *unit, *ceiling_name;
  bool passed;
  int regs, smem;
};
static struct row rows[64];
static int n_rows;

static void run_job(struct exp_spec *s, const char *job, const double *ceilings,
                    const char *const *ceiling_names) {
  static struct exp_result res;
  struct backend_job bj = {};
  bj.spec = s;
  char err[256] = "";
  int rc = backend_run(be, 0, &bj, NULL, &res, err, sizeof err);
  if (rc != 0) {
    fprintf(stderr, "%s: rc %d: %s\n", job, rc, err);
    exit(1);
  }
  for (int i = 0; i < res.n_runs; i++) {
    const struct exp_run *r = &res.runs[i];
    struct row *w = &rows[n_rows++];
    snprintf(w->job, sizeof w->job, "%s", job);
    snprintf(w->variant, sizeof w->variant, "%s", r->label);
    snprintf(w->kernel, sizeof w->kernel, "%s", r->available ? r->kernel.name : r->reason);
    w->ms = r->timing.median_ms;
    bool flops = exp_desc(s->type)->figure == EXP_FIGURE_GFLOPS;
    w->figure = r->figure / (flops ? 1e3 : 1.0); /* TFLOP/s or GB/s */
    w->unit = flops ? "TFLOP/s" : "GB/s";
    w->ceiling = ceilings[i];
    w->ceiling_name = ceiling_names[i];
    w->passed = r->available && r->check.done && r->check.passed;
    w->regs = r->kernel.registers;
    w->smem = r->kernel.static_shared_bytes + r->kernel.dynamic_shared_bytes;
    printf("  %-22s %-9s %9.4f ms %9.1f %-7s check %s (%s, max abs err %.3g)\n", job, w->variant,
           w->ms, w->figure, w->unit, w->passed ? "passed" : "FAILED", r->check.tolerance_rule,
           r->check.max_abs_err);
    fflush(stdout);
  }
  backend_buffer_free(be, bj.output);
  backend_fence_free(be, bj.done);
}

static struct exp_spec spec(enum exp_type type, int n_variants, const int *variants,
                            struct exp_timing_params timing) {
  struct exp_spec s;
  exp_spec_default(type, &s);
  s.n_variants = n_variants;
  for (int i = 0; i < n_variants; i++) s.variants[i] = variants[i];
  s.timing = timing;
  return s;
}

int main(int argc, char **argv) {
  bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  char why[256];
  if (backend_open(BACKEND_CUDA, 0, 1, &be, why, sizeof why) != 0) {
    printf("skip: %s\n", why);
    return 77;
  }
  printf("%s\n", why);
  CUDA_OR_EXIT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  double d2d26 = d2d_gbs((size_t)1 << 26), d2d28 = quick ? d2d26 : d2d_gbs((size_t)1 << 28);
  double sg4 = cublas_tflops(4096, CUBLAS_DEFAULT_MATH);
  double tf4 = cublas_tflops(4096, CUBLAS_TF32_TENSOR_OP_MATH);
  double sg8 = quick ? sg4 : cublas_tflops(8192, CUBLAS_DEFAULT_MATH);
  double tf8 = quick ? tf4 : cublas_tflops(8192, CUBLAS_TF32_TENSOR_OP_MATH);
  printf(
      "ceilings: d2d copy 2^26 %.0f GB/s, 2^28 %.0f GB/s; cuBLAS SGEMM 4096 %.1f, 8192 %.1f "
      "TFLOP/s; TF32 4096 %.1f, 8192 %.1f TFLOP/s\n",
      d2d26, d2d28, sg4, sg8, tf4, tf8);

  const struct exp_timing_params mem = {5, 5, 50}, gemm4 = {2, 5, 10}, gemm8 = {1, 5, 3};
  const char *d2d = "d2d copy", *cub = "cuBLAS FP32", *cubt = "cuBLAS TF32";
  for (int big = 0; big <= (quick ? 0 : 1); big++) {
    int n = big ? 16384 : 8192;
    const int tv[] = {TRANSPOSE_COPY, TRANSPOSE_PADDED33, TRANSPOSE_BEST};
    struct exp_spec s = spec(EXP_TRANSPOSE, 3, tv, mem);
    s.p[TRANSPOSE_M] = s.p[TRANSPOSE_N] = n;
    double c = big ? d2d28 : d2d26;
    const double cs[] = {c, c, c};
    const char *cn[] = {d2d, d2d, d2d};
    char job[48];
    snprintf(job, sizeof job, "transpose %dx%d", n, n);
    run_job(&s, job, cs, cn);
  }
  for (int big = 0; big <= (quick ? 0 : 1); big++) {
    int n = big ? 8192 : 4096;
    const int gv[] = {GEMM_CUBLAS, GEMM_BEST, GEMM_TF32};
    struct exp_spec s = spec(EXP_GEMM, 3, gv, big ? gemm8 : gemm4);
    s.p[GEMM_M] = s.p[GEMM_N] = s.p[GEMM_K] = n;
    const double cs[] = {big ? sg8 : sg4, big ? sg8 : sg4, big ? tf8 : tf4};
    const char *cn[] = {cub, cub, cubt};
    char job[48];
    snprintf(job, sizeof job, "gemm %d^3", n);
    run_job(&s, job, cs, cn);
  }
  const int radii[] = {2, 32};
  for (int i = 0; i < 2; i++) {
    const int sv[] = {STENCIL_NAIVE, STENCIL_SHARED, STENCIL_BEST};
    struct exp_spec s = spec(EXP_STENCIL, 3, sv, mem);
    s.p[STENCIL_N] = 1 << 26;
    s.p[STENCIL_RADIUS] = radii[i];
    const double cs[] = {d2d26, d2d26, d2d26};
    const char *cn[] = {d2d, d2d, d2d};
    char job[48];
    snprintf(job, sizeof job, "stencil 2^26 R=%d", radii[i]);
    run_job(&s, job, cs, cn);
  }

  printf(
      "\n| job | variant | median ms | figure | ceiling | %% of ceiling | check | regs | smem B "
      "| kernel |\n");
  printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (int i = 0; i < n_rows; i++) {
    const struct row *w = &rows[i];
    printf("| %s | %s | %.4f | %.1f %s | %s %.1f | %.1f%% | %s | %d | %d | %s |\n", w->job,
           w->variant, w->ms, w->figure, w->unit, w->ceiling_name, w->ceiling,
           w->ceiling > 0 ? 100.0 * w->figure / w->ceiling : 0.0, w->passed ? "PASS" : "FAIL",
           w->regs, w->smem, w->kernel);
  }
  backend_free(be);
  return 0;
}
