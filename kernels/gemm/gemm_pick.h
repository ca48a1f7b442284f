/* Which kernel configuration the gemm's `best` (FP32) and `tf32` variants run at a
 * shape: pure host C, a function of m, n, k and the device's SM count, so that the
 * plan, the launch, the job's memory count (gemm.c) and the tests agree. Both pickers
 * predict every configuration of a small menu with a cost model fitted on the H200
 * (every configuration timed at each of some 20 shapes, twice) and take the cheapest;
 * no shape is looked up. C[m,n] = A[m,k] B[k,n]. */
#ifndef GPULAB_GEMM_PICK_H
#define GPULAB_GEMM_PICK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The SM count at which a job's scratch is counted (exp_desc.scratch_floats runs before
 * the job has a device): the H200's. On a device with another count the pickers are
 * given that scratch as their limit, so a launch never needs more than was counted. */
#define GEMM_PICK_COUNT_SMS 132

/* ---- FP32 (`best`) ---- */

enum gemm_kind {
  GEMM_KIND_TILE,   /* the register-tiled kernel at one of gemm_tile_cfgs */
  GEMM_KIND_GEMV_T, /* m <= 8: lanes own float4 columns of B, warps and blocks split k */
  GEMM_KIND_GEMV_N, /* n == 1: warps own rows of A, lanes split k */
};

/* A tile configuration of the kernel (gemm_best.cu instantiates each, in this order). */
enum gemm_tile_id {
  GEMM_T128X128, /* today's 128x128 kernel */
  GEMM_T128X64,
  GEMM_T64X128,
  GEMM_T64X64,   /* BK 16, 3 stages */
  GEMM_T64X64W4, /* 4x8 outputs a lane */
  GEMM_T256X16,  /* only where n <= 16 */
  GEMM_T16X256,  /* only where m <= 16 */
  GEMM_N_TILES
};

struct gemm_tile_cfg {
  const char *name;  /* "t128x128" */
  const char *shape; /* for people: "128x128x32, 256 threads, 8x8 a lane" */
  int bm, bn, bk, threads;
  int bpsm, bpsm_guarded; /* blocks an SM holds (occupancy API on the H200), whole / guarded */
  double eff;             /* FFMA rate when full, relative to the model's R */
  int narrow;             /* 0; 1: only where n <= 16; 2: only where m <= 16 */
  bool hybrid;            /* has the hybrid instance (inner tiles unguarded) */
  double hybrid_rate;     /* the hybrid instance's rate against the model's for it */
};
extern const struct gemm_tile_cfg gemm_tile_cfgs[GEMM_N_TILES];

struct gemm_pick {
  enum gemm_kind kind;
  int tile;    /* GEMM_KIND_TILE: an enum gemm_tile_id */
  bool whole;  /* tile: m, n, k and kchunk multiples of the tile: no guards at all */
  bool hybrid; /* tile, not whole: edge tiles guarded, inner tiles not */
  int splits;  /* blocks along k; > 1: partial tiles in a workspace, then the split-K pass */
  int kchunk;  /* k per split, a multiple of the kernel's k step */
  int rows;    /* gemv_t: the kernel's row count (1 or 8); gemv_n: its column count (1) */
  double pred_s;
  char name[32]; /* "t128x64h_s4", "gemv_t8_s13" */
};

/* The cheapest predicted configuration for m x n x k (each >= 1) on sms multiprocessors
 * whose split-K workspace (gemm_pick_ws_floats) is at most max_ws_floats. Cannot fail. */
struct gemm_pick gemm_pick_for(int m, int n, int k, int sms, uint64_t max_ws_floats);

/* Floats of the pick's split-K workspace: splits * m * n when splits > 1, else 0. */
uint64_t gemm_pick_ws_floats(const struct gemm_pick *p, int m, int n);

/* Tile `tile` (its hybrid instance where hybrid) with s splits asked, as gemm_pick_for
 * makes one: the k chunk rounded up to the tile's k step, the splits that remain, the
 * name; pred_s 0 (the launcher finds whole shapes itself). For tests and labs that run
 * a configuration the model would not pick. */
struct gemm_pick gemm_pick_tile(int tile, bool hybrid, int s, int k);

/* gemv_n (rows 1) where kind is GEMM_KIND_GEMV_N, else gemv_t (rows 1 or 8), with s
 * splits asked, as gemm_pick_tile. */
struct gemm_pick gemm_pick_gemv(enum gemm_kind kind, int rows, int s, int k);

/* The workspace the pick at GEMM_PICK_COUNT_SMS needs: what a job counts, and the limit
 * a launch on any device picks under. */
uint64_t gemm_best_scratch_floats(int m, int n, int k);

/* One line for the run's kernel description: the configuration and why the model chose
 * it (its tiles against the SMs, the splits, guards). */
void gemm_pick_describe(const struct gemm_pick *p, int m, int n, int k, int sms, char *buf,
                        size_t len);

/* ---- TF32 (`tf32`: wgmma + TMA, sm_90a) ----
 *
 * Two forms of the kernel (gemm_tf32.cu). Bt: B transposed into a scratch Bt first, then
 * C = A Bt^T with both operands from shared memory; C tiles of 128 (m) x bn (n). C^T:
 * C^T = B^T A^T with B's fragments loaded from its own rows into registers, no
 * transpose; tiles of 128 (n) x bn (m); only where k % 8 == 0 and n % 8 == 0 (A and B
 * read in place, rows whole 32-byte sectors). */

/* The tile widths; the kernel has one Bt instance per entry, and a C^T one where ct. */
enum { TF32_N_TILES = 5 };
struct tf32_tile_cfg {
  int bn;          /* wgmma m64n<bn>k8, two consumer warpgroups */
  int stages;      /* TMA ring */
  int ctas_per_sm; /* what shared memory and the registers allow (Bt form; C^T: 1) */
  double eff;      /* tensor rate when full, relative to the 128x256 tile */
  bool ct;         /* has a C^T instance */
};
extern const struct tf32_tile_cfg tf32_tile_cfgs[TF32_N_TILES];

struct tf32_pick {
  int tile;    /* index in tf32_tile_cfgs */
  bool ct;     /* the C^T form (no Bt, no copy of A) */
  int splits;  /* > 1: partial tiles in a workspace, then the split-K pass */
  int kchunk;  /* k per split, a multiple of 32 */
  int kp;      /* row pitch (floats) of A as the kernel reads it and of the scratch Bt */
  bool copy_a; /* A is copied to pitch kp first (k % 8 != 0) */
  double pred_s;
  char name[32]; /* "wg224_s1_p32" (_p32: A and Bt at a 128-byte multiple pitch), "ct256_s1" */
};

/* Whether m x n x k may take the C^T form. */
bool tf32_ct_fits(int m, int n, int k);

/* The cheapest predicted configuration, as gemm_pick_for (each size >= 1). */
struct tf32_pick tf32_pick_for(int m, int n, int k, int sms, uint64_t max_ws_floats);

/* Width `tile` in the C^T form (ct) or the Bt form with s splits asked, as tf32_pick_for
 * makes one (k chunk, splits, A's copy and pitch, name; pred_s 0), as gemm_pick_tile. */
struct tf32_pick tf32_pick_make(int tile, bool ct, int s, int k);

/* Floats of the pick's split-K workspace (splits > 1: splits * m * n). */
uint64_t tf32_pick_ws_floats(const struct tf32_pick *p, int m, int n);

/* The scratch a launch of the pick allocates as one block: Bt (n rows at pitch kp; not in
 * the C^T form), A's copy (m rows, when copy_a), the workspace; each part rounded up to
 * 32 floats (128 bytes, TMA's alignment). */
uint64_t tf32_pick_scratch_floats(const struct tf32_pick *p, int m, int n);

/* What a tf32 job counts: tf32_pick_scratch_floats of the pick at GEMM_PICK_COUNT_SMS. */
uint64_t gemm_tf32_scratch_floats(int m, int n, int k);

/* One line for the run's kernel description, as gemm_pick_describe. */
void tf32_pick_describe(const struct tf32_pick *p, int m, int n, int k, int sms, char *buf,
                        size_t len);

#ifdef __cplusplus
}
#endif
#endif
