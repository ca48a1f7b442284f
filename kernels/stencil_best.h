/* Tile geometry of the stencil's `best` variant, shared by the CUDA kernel, its CPU
 * stand-in and the reference's tolerance, so that all three restart their running
 * sums at the same places. Compiled as C and as CUDA (host and device). */
#ifndef GPULAB_STENCIL_BEST_H
#define GPULAB_STENCIL_BEST_H

#ifdef __CUDACC__
#define STENCIL_BEST_HD __host__ __device__ __forceinline__
#else
#define STENCIL_BEST_HD static inline
#endif

/* A block loads its span of input in steps of STENCIL_BEST_STEP floats (256 threads,
 * one float4 each), 4 or 5 steps; the span is the tile's outputs plus the halo. */
#define STENCIL_BEST_STEP 1024
#define STENCIL_BEST_MAX_STEPS 5
#define STENCIL_BEST_MAX_RADIUS 2047

/* Floats before the tile that its span starts with: r + 1 rounded up to 4, so that
 * the span starts 16-byte aligned whenever the tile does. */
STENCIL_BEST_HD int stencil_best_lead(int r) { return (r + 1 + 3) & ~3; }

/* Span minus tile: the lead plus the r floats after the tile. */
STENCIL_BEST_HD int stencil_best_halo(int r) { return r + stencil_best_lead(r); }

/* Steps of one span: 4 while the halo is at most a quarter of them, else 5. */
STENCIL_BEST_HD int stencil_best_steps(int r) { return stencil_best_halo(r) <= 1024 ? 4 : 5; }

/* Outputs per tile (a multiple of 4, at least 1024), or 0 when r is negative or
 * above STENCIL_BEST_MAX_RADIUS. Tile t covers outputs [t*T, t*T + T); its span is
 * x[t*T - lead, t*T + T + r), zero outside [0, n). */
STENCIL_BEST_HD int stencil_best_tile(int r) {
  if (r < 0 || r > STENCIL_BEST_MAX_RADIUS) return 0;
  return (STENCIL_BEST_STEP * stencil_best_steps(r) - stencil_best_halo(r)) & ~3;
}

#endif
