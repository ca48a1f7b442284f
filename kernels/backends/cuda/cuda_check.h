/* The CUDA check macros of kernels/: one family of one shape. Each evaluates a CUDA call
 * (a cudaError_t expression) once and, when it is not cudaSuccess, leaves the calling
 * function in its context's way, naming the call as written ("call") where a message
 * takes it:
 *   CUDA_TRY(j, call)          a job's call: returns job_fail(j, e, "call"), the first
 *                              error classified into j->err (cuda_job_ops.h)
 *   CUDA_TRY_WHAT(what, call)  returns e with *what = "call" (the ceilings' measurement)
 *   CUDA_TRY_UTIL(be, call)    rc = cuda_classify(be, be->util, e, "call", err, err_len),
 *                              then goto fail (buffers and fences on the utility stream)
 *   CUDA_TRY_OPEN(name, call)  returns open_fail(e, name, why, why_len) (opening a device)
 * and RC_TRY(call) for a call that returns 0 or a negative errno. The names these use
 * (job_fail, cuda_classify, open_fail, rc, err, err_len, why, why_len, fail:) are the
 * caller's. */
#ifndef GPULAB_CUDA_CHECK_H
#define GPULAB_CUDA_CHECK_H

#include <cuda_runtime.h>

/* The family's shape: on_fail runs when call fails, with its error in e_. */
#define CUDA_TRY_OR(call, on_fail) \
  do {                             \
    cudaError_t e_ = (call);       \
    if (e_ != cudaSuccess) {       \
      on_fail;                     \
    }                              \
  } while (0)

#define CUDA_TRY(j, call) CUDA_TRY_OR(call, return job_fail((j), e_, #call))

#define CUDA_TRY_WHAT(what, call) CUDA_TRY_OR(call, *(what) = #call; return e_)

#define CUDA_TRY_UTIL(be, call) \
  CUDA_TRY_OR(call, rc = cuda_classify((be), (be)->util, e_, #call, err, err_len); goto fail)

#define CUDA_TRY_OPEN(name, call) CUDA_TRY_OR(call, return open_fail(e_, (name), why, why_len))

/* Returns from the calling function with call's rc when it is not 0. */
#define RC_TRY(call)          \
  do {                        \
    int rc_ = (call);         \
    if (rc_ != 0) return rc_; \
  } while (0)

#endif
