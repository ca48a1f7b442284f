/* The benchmark programs' back-to-back timing (bench_best and the labs): the median over
 * `batches` (at most 32) of the mean time of `reps` calls of fn, each of which enqueues
 * its work on s, after `warmup` calls, timed between two events on s. A failed CUDA call
 * exits (cuda_try.h). */
#ifndef GPULAB_BENCH_BATCH_TIMER_H
#define GPULAB_BENCH_BATCH_TIMER_H

#include <cuda_runtime.h>

#include "bench/cuda_try.h"
#include "kernels/core/stats.h"

static inline double batch_timer_ms(void (*fn)(void *), void *arg, cudaStream_t s, int warmup,
                                    int batches, int reps) {
  double samples[32];
  if (batches < 1 || batches > 32 || reps < 1) {
    fprintf(stderr, "batch_timer_ms: %d batches of %d\n", batches, reps);
    exit(1);
  }
  cudaEvent_t ev0, ev1;
  CUDA_OR_EXIT(cudaEventCreate(&ev0));
  CUDA_OR_EXIT(cudaEventCreate(&ev1));
  for (int i = 0; i < warmup; i++) fn(arg);
  for (int b = 0; b < batches; b++) {
    CUDA_OR_EXIT(cudaEventRecord(ev0, s));
    for (int i = 0; i < reps; i++) fn(arg);
    CUDA_OR_EXIT(cudaEventRecord(ev1, s));
    CUDA_OR_EXIT(cudaEventSynchronize(ev1));
    float ms = 0;
    CUDA_OR_EXIT(cudaEventElapsedTime(&ms, ev0, ev1));
    samples[b] = ms / reps;
  }
  CUDA_OR_EXIT(cudaEventDestroy(ev0));
  CUDA_OR_EXIT(cudaEventDestroy(ev1));
  struct stats_summary st;
  stats_summarize(samples, batches, &st);
  return st.median;
}

/* The same with the reps calls captured once into a CUDA Graph on s and each batch one
 * launch of it: what the GPU takes without the host's time to issue each call. */
static inline double batch_timer_graph_ms(void (*fn)(void *), void *arg, cudaStream_t s, int warmup,
                                          int batches, int reps) {
  cudaGraph_t g;
  cudaGraphExec_t x;
  CUDA_OR_EXIT(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < reps; i++) fn(arg);
  CUDA_OR_EXIT(cudaStreamEndCapture(s, &g));
  CUDA_OR_EXIT(cudaGraphInstantiate(&x, g, 0));
  struct batch_timer_graph_launch {
    cudaGraphExec_t x;
    cudaStream_t s;
  } l = {x, s};
  const double ms = batch_timer_ms(
      [](void *p) {
        const struct batch_timer_graph_launch *l = (const struct batch_timer_graph_launch *)p;
        CUDA_OR_EXIT(cudaGraphLaunch(l->x, l->s));
      },
      &l, s, warmup, batches, 1);
  CUDA_OR_EXIT(cudaGraphExecDestroy(x));
  CUDA_OR_EXIT(cudaGraphDestroy(g));
  return ms / reps;
}

struct batch_timer_copy {
  void *dst;
  const void *src;
  size_t bytes;
  cudaStream_t s;
};
static inline void batch_timer_copy_once(void *p) {
  const struct batch_timer_copy *c = (const struct batch_timer_copy *)p;
  CUDA_OR_EXIT(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, c->s));
}

/* batch_timer_ms of cudaMemcpyAsync D2D of `bytes` from src to dst on s: the copy every
 * figure is held against. */
static inline double batch_timer_copy_ms(void *dst, const void *src, size_t bytes, cudaStream_t s,
                                         int warmup, int batches, int reps) {
  struct batch_timer_copy c = {dst, src, bytes, s};
  return batch_timer_ms(batch_timer_copy_once, &c, s, warmup, batches, reps);
}

#endif
