/* Which kernel the transpose's `best` runs at a shape: pure host C, so that the plan,
 * the launch and the tests agree. A is m x n row-major, B = A^T is n x m. A stated rule
 * from two runs of every candidate kernel at some 20 shapes on the H200 (why each
 * branch: transpose_pick.c). */
#ifndef GPULAB_TRANSPOSE_PICK_H
#define GPULAB_TRANSPOSE_PICK_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum transpose_kind {
  TRANSPOSE_KIND_COPY,       /* m == 1 or n == 1: B has A's bytes, a float4 copy */
  TRANSPOSE_KIND_TILE,       /* the 64x64 float4 tile kernel (4-byte accesses unless m, n
                                are multiples of 4 and the pointers 16-byte aligned) */
  TRANSPOSE_KIND_GATHER,     /* 2 <= m < 32: each thread one float4 of B, gathered from A */
  TRANSPOSE_KIND_SEC,        /* rows not whole float4: 4-byte coalesced loads, B written in
                                whole 32-byte sectors, 32 x 64 tiles */
  TRANSPOSE_KIND_SEC_NARROW, /* 2 <= n < 32 (m >= 32): the same kernel at 16 x 256 tiles */
};

struct transpose_pick {
  enum transpose_kind kind;
  const char *why; /* static: the rule that chose it */
};

/* aligned: both pointers 16-byte aligned (every device allocation is; a plan assumes
 * it). Without it the pick is the tile kernel's 4-byte path, which takes any pointer.
 * Cannot fail. */
struct transpose_pick transpose_pick_for(int64_t m, int64_t n, bool aligned);

#ifdef __cplusplus
}
#endif
#endif
