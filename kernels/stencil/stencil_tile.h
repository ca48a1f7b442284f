/* Tile geometry of the stencil's `best` variant, shared by the CUDA kernel, its CPU
 * stand-in and the reference's tolerance, so that all three restart their running
 * sums at the same places. Compiled as C and as CUDA (host and device). */
#ifndef GPULAB_STENCIL_TILE_H
#define GPULAB_STENCIL_TILE_H

#ifdef __CUDACC__
#define STENCIL_BEST_HD __host__ __device__ __forceinline__
#else
#define STENCIL_BEST_HD static inline
#endif

/* A block scans a span of STENCIL_BEST_SPAN floats, the tile's outputs plus the halo;
 * a halo wider than half of it takes a span twice as long, so that the tile stays at
 * least half of the floats loaded (r up to STENCIL_BEST_MAX_RADIUS). */
#define STENCIL_BEST_SPAN 4096
#define STENCIL_BEST_MAX_RADIUS 2047

/* Floats before the tile that its span starts with: r + 1 rounded up to 4, so that
 * the span starts 16-byte aligned whenever x and the tile do. */
STENCIL_BEST_HD int stencil_best_lead(int r) { return (r + 1 + 3) & ~3; }

/* Span minus tile: the lead plus the r floats after the tile. */
STENCIL_BEST_HD int stencil_best_halo(int r) { return r + stencil_best_lead(r); }

/* Floats per span: STENCIL_BEST_SPAN while the halo is at most half of it, else twice
 * that. */
STENCIL_BEST_HD int stencil_best_span(int r) {
  return stencil_best_halo(r) <= STENCIL_BEST_SPAN / 2 ? STENCIL_BEST_SPAN : 2 * STENCIL_BEST_SPAN;
}

/* Outputs per tile (a multiple of 4, at least 2048), or 0 when r is negative or
 * above STENCIL_BEST_MAX_RADIUS. Tile t covers outputs [t*T, t*T + T); its span is
 * x[t*T - lead, t*T + T + r), zero outside [0, n) (the last up to 3 floats of the
 * span that the kernel loads past it feed no output). */
STENCIL_BEST_HD int stencil_best_tile(int r) {
  if (r < 0 || r > STENCIL_BEST_MAX_RADIUS) return 0;
  return (stencil_best_span(r) - stencil_best_halo(r)) & ~3;
}

#endif
