/* The gemm variants' configurations against cuBLAS in the same process (issue 36's tf32
 * and gemm goals). tf32: the two wgmma forms, the Bt form (B transposed into a scratch,
 * then both operands from shared memory; its time includes the transpose) and the C^T
 * form (B's fragments straight from its rows into registers), each at every tile width it
 * has, one split (the C^T form also 2 and 4 where each has 8 k-tiles), beside the pick's
 * choice and cuBLAS TF32. fp32: best's tile kernel at
 * each of its five general tiles (hybrid where it has one) and 1, 2, 3, 4 and 6 splits,
 * beside the pick's choice and cuBLAS SGEMM (TF32 off). cuBLAS row-major as C^T = B^T A^T,
 * as the variants call it. Each timed back to back like bench_best (median of 7 batches,
 * 2 warm-ups) on the same operands, and compared with cuBLAS's output: the largest
 * |difference| over the largest |cuBLAS output| (TF32: about 2^-10 expected; FP32 about
 * 2^-20; a wrong kernel is near 1). Not a test.
 *   gemm_forms tf32|fp32 [m n k ...]   (default: the squares of bench/shapes.py; tf32's
 *                                       C^T form only where n % 8 and k % 8 allow) */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/batch_timer.h"
#include "bench/cuda_try.h"
#include "kernels/backends/cuda/cublas_loader.h"
#include "kernels/gemm/gemm.cuh"

static cudaStream_t stream;
static const struct cublas_fns *blas;
static cublasHandle_t handle;
static bool tf32; /* which variant's configurations */

/* One candidate: cuBLAS, the launcher's own pick, or a forced configuration. */
struct config {
  enum { LIB, AUTO, FORCED } kind;
  struct tf32_pick tp;
  struct gemm_pick gp;
  char name[48];
};

struct launch {
  const struct config *c;
  const float *a, *b;
  float *out;
  int m, n, k;
};

static void launch_fn(void *p) {
  const struct launch *l = (const struct launch *)p;
  switch (l->c->kind) {
  case config::LIB: {
    const cublasStatus_t st = cublas_loader_sgemm_rowmajor(blas, handle, l->m, l->n, l->k, l->a,
                                                           l->b, l->out);
    if (st != CUBLAS_STATUS_SUCCESS) {
      fprintf(stderr, "sgemm: %s\n", cublas_loader_status_name(st));
      exit(1);
    }
    return;
  }
  case config::AUTO:
    CUDA_OR_EXIT(tf32 ? gemm_tf32_launch(l->a, l->b, l->out, l->m, l->n, l->k, stream)
                      : gemm_best_launch(l->a, l->b, l->out, l->m, l->n, l->k, stream));
    return;
  case config::FORCED:
    CUDA_OR_EXIT(
        tf32 ? gemm_tf32_launch_pick(&l->c->tp, l->a, l->b, l->out, l->m, l->n, l->k, stream)
             : gemm_best_launch_pick(&l->c->gp, l->a, l->b, l->out, l->m, l->n, l->k, stream));
    return;
  }
}

static struct config tf32_forced(int tile, bool ct, int s, int k) {
  struct config c;
  memset(&c, 0, sizeof c);
  c.kind = config::FORCED;
  c.tp = tf32_pick_make(tile, ct, s, k);
  snprintf(c.name, sizeof c.name, "%s", c.tp.name);
  return c;
}

/* best's tile with s splits asked, hybrid where the tile has it (the launcher runs the
 * whole instance where the sizes tile). */
static struct config fp32_forced(int tile, int s, int k) {
  struct config c;
  memset(&c, 0, sizeof c);
  c.kind = config::FORCED;
  c.gp = gemm_pick_tile(tile, gemm_tile_cfgs[tile].hybrid, s, k);
  snprintf(c.name, sizeof c.name, "%s", c.gp.name);
  return c;
}

static void run_shape(int m, int n, int k) {
  const size_t na = (size_t)m * k, nb = (size_t)k * n, nc = (size_t)m * n;
  float *h = (float *)malloc((na > nb ? na : nb) * sizeof(float));
  float *ref = (float *)malloc(nc * sizeof(float)), *got = (float *)malloc(nc * sizeof(float));
  if (!h || !ref || !got) exit(1);
  float *d_a, *d_b, *d_c, *d_ref;
  CUDA_OR_EXIT(cudaMalloc(&d_a, na * sizeof(float)));
  CUDA_OR_EXIT(cudaMalloc(&d_b, nb * sizeof(float)));
  CUDA_OR_EXIT(cudaMalloc(&d_c, nc * sizeof(float)));
  CUDA_OR_EXIT(cudaMalloc(&d_ref, nc * sizeof(float)));
  unsigned s = 36;
  for (size_t i = 0; i < na; i++) s = s * 1664525u + 1013904223u, h[i] = (s >> 8) * 0x1p-24f - 0.5f;
  CUDA_OR_EXIT(cudaMemcpy(d_a, h, na * sizeof(float), cudaMemcpyHostToDevice));
  for (size_t i = 0; i < nb; i++) s = s * 1664525u + 1013904223u, h[i] = (s >> 8) * 0x1p-24f - 0.5f;
  CUDA_OR_EXIT(cudaMemcpy(d_b, h, nb * sizeof(float), cudaMemcpyHostToDevice));

  const double flops = 2.0 * m * n * k, t_est = flops / (tf32 ? 300e12 : 40e12) + 5e-6;
  const int reps = t_est > 2e-3 ? 2 : (int)fmin(20, fmax(1, 0.01 / t_est));
  static struct config cs[64];
  int ncs = 0;
  memset(cs, 0, sizeof cs);
  cs[ncs].kind = config::LIB;
  snprintf(cs[ncs++].name, sizeof cs[0].name, tf32 ? "cublas_tf32" : "cublas");
  cs[ncs].kind = config::AUTO;
  if (tf32) {
    snprintf(cs[ncs++].name, sizeof cs[0].name, "the pick: %s",
             tf32_pick_for(m, n, k, 132, UINT64_MAX).name);
    for (int t = 0; t < TF32_N_TILES; t++) cs[ncs++] = tf32_forced(t, false, 1, k);
    if (tf32_ct_fits(m, n, k))
      for (int t = 0; t < TF32_N_TILES; t++)
        if (tf32_tile_cfgs[t].ct)
          for (int s = 1; s <= 4; s *= 2)
            if (s == 1 || (k + s - 1) / s >= 8 * 32) cs[ncs++] = tf32_forced(t, true, s, k);
  } else {
    snprintf(cs[ncs++].name, sizeof cs[0].name, "the pick: %s",
             gemm_pick_for(m, n, k, 132, gemm_best_scratch_floats(m, n, k)).name);
    static const int splits[] = {1, 2, 3, 4, 6};
    for (int t = 0; t < GEMM_N_TILES; t++)
      if (!gemm_tile_cfgs[t].narrow)
        for (int i = 0; i < 5; i++) cs[ncs++] = fp32_forced(t, splits[i], k);
  }

  struct launch lib = {&cs[0], d_a, d_b, d_ref, m, n, k};
  launch_fn(&lib);
  CUDA_OR_EXIT(cudaStreamSynchronize(stream));
  CUDA_OR_EXIT(cudaMemcpy(ref, d_ref, nc * sizeof(float), cudaMemcpyDeviceToHost));
  double ref_max = 0;
  for (size_t i = 0; i < nc; i++) ref_max = fmax(ref_max, fabs(ref[i]));
  const double lib_ms = batch_timer_ms(launch_fn, &lib, stream, 2, 7, reps);
  printf(
      "\n%dx%dx%d\n| configuration | ms | TFLOP/s | cuBLAS / it | max diff / max out |\n"
      "| --- | --- | --- | --- | --- |\n| %s | %.4f | %.1f | 1 | 0 |\n",
      m, n, k, cs[0].name, lib_ms, flops / lib_ms * 1e-9);
  for (int i = 1; i < ncs; i++) {
    struct launch c = {&cs[i], d_a, d_b, d_c, m, n, k};
    CUDA_OR_EXIT(cudaMemsetAsync(d_c, 0xff, nc * sizeof(float), stream));
    launch_fn(&c);
    CUDA_OR_EXIT(cudaStreamSynchronize(stream));
    CUDA_OR_EXIT(cudaMemcpy(got, d_c, nc * sizeof(float), cudaMemcpyDeviceToHost));
    double diff = 0;
    for (size_t j = 0; j < nc; j++) {
      const double dj = fabs((double)got[j] - ref[j]);
      diff = dj == dj ? fmax(diff, dj) : INFINITY; /* NaN: not written */
    }
    const double ms = batch_timer_ms(launch_fn, &c, stream, 2, 7, reps);
    printf("| %s | %.4f | %.1f | %.3f | %.2e |\n", cs[i].name, ms, flops / ms * 1e-9, lib_ms / ms,
           diff / ref_max);
  }
  CUDA_OR_EXIT(cudaFree(d_a));
  CUDA_OR_EXIT(cudaFree(d_b));
  CUDA_OR_EXIT(cudaFree(d_c));
  CUDA_OR_EXIT(cudaFree(d_ref));
  free(h), free(ref), free(got);
}

int main(int argc, char **argv) {
  if (argc < 2 || (strcmp(argv[1], "tf32") != 0 && strcmp(argv[1], "fp32") != 0)) {
    fprintf(stderr, "usage: gemm_forms tf32|fp32 [m n k ...]\n");
    return 2;
  }
  tf32 = strcmp(argv[1], "tf32") == 0;
  const char *why = NULL;
  blas = cublas_loader_get(&why);
  if (!blas) {
    fprintf(stderr, "cuBLAS: %s\n", why);
    return 1;
  }
  CUDA_OR_EXIT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  if (cublas_loader_handle_new(blas, stream, &handle) != CUBLAS_STATUS_SUCCESS ||
      blas->set_math_mode(handle, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH) !=
          CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "cuBLAS handle\n");
    return 1;
  }
  cudaDeviceProp prop;
  CUDA_OR_EXIT(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs, %s\n", prop.name, prop.multiProcessorCount, argv[1]);
  if (argc > 2) {
    for (int i = 2; i + 2 < argc; i += 3)
      run_shape(atoi(argv[i]), atoi(argv[i + 1]), atoi(argv[i + 2]));
  } else {
    static const int sq[] = {1024, 1536, 2048, 2500, 3000, 4096, 6144, 8192};
    for (size_t i = 0; i < sizeof sq / sizeof sq[0]; i++) run_shape(sq[i], sq[i], sq[i]);
  }
  return 0;
}
