/* The CUDA runner's fresh inputs and its own check of every timed launch
 * (runner_proto.h's runner_fresh): the inputs generated on the device from the launch's
 * seed (gen.h, the same numbers gpulabd's generators make), and after the launch the
 * output compared with the experiment's definition on them and the inputs with what was
 * generated, counted into a slot per launch on the device. Everything on the caller's
 * stream, nothing synchronized: the runner reads the slots once after the request.
 * Built with nvcc into gpulab-runner only. */
#ifndef GPULAB_RUNNER_CHECK_H
#define GPULAB_RUNNER_CHECK_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/user/runner_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One launch's findings: wrong (or non-finite) output elements and the first of them,
 * changed elements of each input and the first of them (firsts: UINT64_MAX when none). */
struct runner_check_slot {
  unsigned long long out_bad, out_first;
  unsigned long long in_bad[RUNNER_MAX_FRESH], in_first[RUNNER_MAX_FRESH];
};

/* Fills in[i] (f->floats[i] floats each) with launch's inputs. */
cudaError_t runner_fresh_generate(const struct runner_fresh *f, float *const *in, uint32_t launch,
                                  cudaStream_t stream);
/* Resets *slot (device memory), then checks out (out_floats floats) and the inputs of
 * launch into it. */
cudaError_t runner_fresh_check(const struct runner_fresh *f, const float *const *in,
                               const float *out, uint64_t out_floats, uint32_t launch,
                               struct runner_check_slot *slot, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
