/* A problem's buffers in the CUDA runner (runner_proto.h's RUNNER_MSG_PROBLEM) and the
 * device code that fills and checks them: the inputs generated from a seed, one
 * allocation carved into the inputs, each run's output set and the reference's two
 * sets (on the job's inputs; on a fresh launch's inputs), and the comparisons of
 * outputs with a reference's and of inputs with what was generated, counted into slots
 * on the device. Everything runs on the caller's stream, nothing synchronizes: the
 * runner reads the slots once after a request. Built with nvcc into gpulab-runner only.
 *
 * The generator (gen.h's gen_uniform at (seed, stream = the input's index, counter)):
 * element i of a uniform [a, b) input is a + (b - a) t, t = (gen_uniform(i) + 1) / 2,
 * in FP64 with each operation rounded (no fused multiply-add); of a normal (a, b) input
 * a + b sqrt(-2 ln(1 - t1)) cos(2 pi t2), t1 and t2 from counters 2i and 2i + 1; of an
 * integers [a, b] input a + floor(t (b - a + 1)), at most b (ranges wider than 2^24
 * reach 2^24 of their values). The FP64 value is rounded to the dtype: float32 with
 * __double2float_rn, float16 and bfloat16 from that float with __float2half_rn and
 * __float2bfloat16_rn, the integer dtypes to the nearest integer, saturated. */
#ifndef GPULAB_RUNNER_PROBLEM_H
#define GPULAB_RUNNER_PROBLEM_H

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/user/runner_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One output's comparison: elements that failed and the first of them (UINT64_MAX
 * when none); the largest |got - want| and |got - want| / |want| over the elements
 * where both are finite (the relative one where want is not 0), as the bits of
 * non-negative doubles (they order as the doubles do, for atomicMax); got and want at
 * the first failure (compare only). */
struct runner_problem_count {
  unsigned long long bad, first;
  unsigned long long max_abs_bits, max_rel_bits;
  double got, want;
};

/* One launch's findings: each output against the reference's, each input against what
 * was generated (changed elements, the first of them; UINT64_MAX when none). */
struct runner_problem_slot {
  struct runner_problem_count out[RUNNER_PROBLEM_MAX_BUFFERS];
  unsigned long long in_bad[RUNNER_PROBLEM_MAX_BUFFERS], in_first[RUNNER_PROBLEM_MAX_BUFFERS];
};

/* The buffers of one problem, carved from one cudaMalloc (slab). */
struct runner_problem {
  struct runner_problem_msg m; /* as PROBLEM gave it */
  void *slab;
  void *in[RUNNER_PROBLEM_MAX_BUFFERS];
  /* Input i's values for the job's inputs when the job gave them (an attached buffer,
   * runner_problem_give), else NULL: generated from the job's seed. */
  const void *given[RUNNER_PROBLEM_MAX_BUFFERS];
  void *out[RUNNER_PROBLEM_MAX_RUNS][RUNNER_PROBLEM_MAX_BUFFERS]; /* run r's set */
  void *ref[RUNNER_PROBLEM_MAX_BUFFERS];       /* the reference's on the job's inputs */
  void *ref_fresh[RUNNER_PROBLEM_MAX_BUFFERS]; /* on a fresh launch's inputs */
  size_t set_bytes; /* one output set, from its first output to its last one's end */
  struct runner_problem_slot *check;   /* the PROBLEM's and a compare's findings (device) */
  struct runner_problem_slot *slots;   /* a fresh request's, one per launch (device), grown */
  struct runner_problem_slot *h_slots; /* their copy here */
  uint32_t n_slots;
};

/* Checks m (counts, dtypes, inits, sizes) and makes its buffers. Returns 0 with *out
 * (runner_problem_free it), or -EINVAL (a bad message) / -ENOMEM (the device has not
 * the memory) with msg. */
int runner_problem_new(const struct runner_problem_msg *m, struct runner_problem **out, char *msg,
                       size_t msg_len);
/* Frees p's device memory (synchronizing the device first: nothing may still use it)
 * and p. NULL is a no-op. */
void runner_problem_free(struct runner_problem *p);
/* Grows p's fresh slots to n launches: 0 or -ENOMEM with msg. */
int runner_problem_slots_ready(struct runner_problem *p, uint32_t n, char *msg, size_t msg_len);

/* Input i's job values from the attached buffer at src (bytes of it): 0, or -EINVAL
 * with msg when i gives none (m.in[i].given 0) or the buffer is too small. */
int runner_problem_give(struct runner_problem *p, uint32_t i, const void *src, uint64_t bytes,
                        char *msg, size_t msg_len);
/* Generates every input of p from seed into p->in (a fresh launch's). */
cudaError_t runner_problem_generate(const struct runner_problem *p, uint64_t seed,
                                    cudaStream_t stream);
/* The job's inputs into p->in: those given copied from their buffers, the others
 * generated from the job's seed (m.seed). */
cudaError_t runner_problem_job_inputs(const struct runner_problem *p, cudaStream_t stream);
/* The checks, enqueued on stream into slots on the device (nothing synchronized). An
 * output's element passes by runner_proto.h's rule (exact: bit for bit; else |got -
 * want| <= abs + rel |want| when both are finite; a non-finite value passes only
 * opposite the same infinity or another NaN):
 * - the reference's two launches on the job's inputs (its fresh set against the kept
 *   one) into p->check, bit for bit unless the problem is nondeterministic;
 * - run's outputs against the reference's fresh set (the reference launched on the
 *   job's inputs after the run's launch) into p->check, with got and want at each
 *   output's first failure;
 * - after launch l of a fresh request: every input against what seed generates
 *   (check_fresh_inputs, first: it resets p->slots[l]), then, the reference launched on
 *   seed's inputs into its fresh set, run's outputs against it (check_fresh), into
 *   p->slots[l] (slots ready).
 * No answer is in the device's memory while a kernel runs: the reference runs after it. */
cudaError_t runner_problem_check_reference(const struct runner_problem *p, cudaStream_t stream);
cudaError_t runner_problem_check_run(const struct runner_problem *p, uint32_t run,
                                     cudaStream_t stream);
cudaError_t runner_problem_check_fresh_inputs(const struct runner_problem *p, uint64_t seed,
                                              uint32_t l, cudaStream_t stream);
cudaError_t runner_problem_check_fresh(const struct runner_problem *p, uint32_t run, uint32_t l,
                                       cudaStream_t stream);

/* The arguments of a launch of p's kernels writing outs (a run's set, or the
 * reference's): every input's pointer, every output's, the params, into ptrs and ints,
 * and params[k] pointing at each. Returns their count (the scratch goes after them). */
int runner_problem_args(const struct runner_problem *p, void *const *outs,
                        void *ptrs[2 * RUNNER_PROBLEM_MAX_BUFFERS],
                        int32_t ints[RUNNER_PROBLEM_MAX_PARAMS], void **params);

/* The findings, read once the stream is idle (cudaMemcpy; a CUDA error is returned):
 * the reference's launches' into ready (agreed, or the first output that differed); a
 * run's into check; a fresh request's n launches' into done (fresh_checked and bad_*:
 * the first launch with a finding, an output's before an input's). */
cudaError_t runner_problem_read_reference(const struct runner_problem *p,
                                          struct runner_problem_ready_msg *ready);
cudaError_t runner_problem_read_run(const struct runner_problem *p,
                                    struct runner_problem_check *check);
cudaError_t runner_problem_read_fresh(const struct runner_problem *p, uint32_t n,
                                      struct runner_done_msg *done);

#ifdef __cplusplus
}
#endif
#endif
