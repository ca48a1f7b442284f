/* The stencil experiment (the lecture's halos): y[i] = sum x[i-r..i+r] / (2r+1), x zero
 * outside [0, n). Its descriptor and exact reference (stencil.c), CPU stand-ins
 * (stencil_cpu.c), lecture kernels (stencil.cu) and best kernel (stencil_best.cu, with
 * its tile geometry in stencil_tile.h). */
#ifndef GPULAB_STENCIL_H
#define GPULAB_STENCIL_H

#include "kernels/core/experiment.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Params (exp_spec.p[]) and variants, in the descriptor's order. */
enum stencil_param { STENCIL_N, STENCIL_RADIUS };
enum stencil_variant { STENCIL_NAIVE, STENCIL_SHARED, STENCIL_BEST };
#define STENCIL_MAX_N (1 << 30) /* n a request may give */
#define STENCIL_MAX_RADIUS 1024 /* radius a request may give */

/* ---- private to kernels/stencil/: the CPU stand-ins (stencil_cpu.c) ---- */

/* naive: the direct 2r+1 float sum per output (stencil_naive).
 * shared: stencil_shared's algorithm: per tile of CPU_STENCIL_TILE outputs copy the
 * tile plus r-wide halos (zero-padded) into the call's scratch, then sum from there
 * (scratch: CPU_STENCIL_TILE + 2r floats, stencil_cpu_scratch_floats).
 * window: the stand-in for best: per tile of stencil_best_tile(r) outputs (the CUDA
 * kernel's tiles), the first window summed directly, then slid one output at a time
 * (add x[i+r+1], subtract x[i-r]); the running sum is a double and restarts at every
 * tile, as the kernel's prefix sums do, so the same tolerance holds. Requires
 * 0 <= r <= STENCIL_BEST_MAX_RADIUS (stencil_tile.h). */
#define CPU_STENCIL_TILE 256
exp_cpu_stand_in cpu_stencil_naive, cpu_stencil_shared, cpu_stencil_window;
size_t stencil_cpu_scratch_floats(const struct exp_spec *spec);

#ifdef __cplusplus
}
#endif
#endif
