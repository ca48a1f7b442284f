/* The transpose's picker (transpose_pick.h). Run 1 measured the tile kernel's 4-byte path
 * and a shifted float4 kernel equally far below the copy ceiling at odd shapes, both
 * writing partial 32-byte sectors; run 2's sector-exact kernel (`sec`) wrote whole
 * sectors and at 32 x 128 tiles was the fastest candidate at every odd shape (ahead of
 * 64 x 64 and 16 x 256), and 16 x 256 at few columns; gather and the float4 copy came
 * near the same-size cold memcpy at thin shapes and vectors. Ratios to the copy ceiling,
 * sec 32x128 against the tile kernel: 4097x3001 0.79 / 0.62, 8191x8193 0.86 / 0.64;
 * aligned shapes keep the tile kernel (8192^2 0.96 against sec's 0.91). Run 3
 * (bench/lab/transpose_tiles.cu, H100, two runs) launched sec's tiles down whole
 * columns (groups of 256 tile rows, not 32) and at 32 x 64: 8191x8193 0.886 -> 0.911 of
 * the copy ceiling, 4097x3001 0.831 -> 0.847 (0.987 of a copy of the same bytes). */
#include "kernels/transpose/transpose_pick.h"

struct transpose_pick transpose_pick_for(int64_t m, int64_t n, bool aligned) {
  const int64_t lo = m < n ? m : n;
  if (!aligned)
    return (struct transpose_pick){TRANSPOSE_KIND_TILE,
                                   "pointers not 16-byte aligned: the tile kernel's 4-byte path"};
  if (lo <= 1)
    return (struct transpose_pick){TRANSPOSE_KIND_COPY, "a vector: B has A's bytes, a float4 copy"};
  if (m < 32)
    return (struct transpose_pick){TRANSPOSE_KIND_GATHER,
                                   "m < 32: B's rows are short, one float4 of B a thread"};
  if (n < 32)
    return (struct transpose_pick){TRANSPOSE_KIND_SEC_NARROW,
                                   "n < 32: B's rows are long, 16x256 sector-exact tiles"};
  if (m % 4 == 0 && n % 4 == 0)
    return (struct transpose_pick){TRANSPOSE_KIND_TILE, "m, n multiples of 4: float4 both ways"};
  return (struct transpose_pick){TRANSPOSE_KIND_SEC,
                                 "m or n not a multiple of 4: whole-sector float4 stores of B, "
                                 "4-byte loads"};
}
