/* The gemm pickers (gemm_pick.h): menus, cost models fitted to a first run of every
 * configuration at some 20 shapes on the H200, and the rules added after a second run
 * (each rule's comment says what it measured). */
#include "kernels/gemm/gemm_pick.h"

#include <math.h>
#include <stdio.h>

/* ---- FP32 ----
 *
 * The menu: the register-tiled kernel at seven tile shapes (bpsm: the occupancy API's
 * blocks an SM on the H200; a guarded instance that would spill is capped lower), with
 * split-K over gridDim.y; the hybrid instance only for the two tiles that ran it on the
 * device (t64x128's spilled 16 bytes); gemv_t at m = 1 (1 row) and 2..8 (8 rows), the
 * instances that ran; gemv_n at n = 1 only (run 2: at n = 7 the 256x16 tile beat it, at
 * n = 1 it beat the tile). eff: fitted to run 1's timed candidates; the two narrow
 * tiles' is run 2's guess, which picked their best split at every shape measured.
 * hybrid_rate: added after bench/lab/gemm_forms.cu on an H100 (bench/RESULTS.md): at
 * 2500^3 and 3000^3 t128x128's hybrid ran 15-16% slower than this model, t64x64w4's 5%
 * (as far off as the whole t128x128 at 4096^3), and the model picked the slower. */
const struct gemm_tile_cfg gemm_tile_cfgs[GEMM_N_TILES] = {
    [GEMM_T128X128] = {"t128x128", "128x128x32, 256 threads, 8x8 a lane", 128, 128, 32, 256, 2, 2,
                       1.0446, 0, true, 0.91},
    [GEMM_T128X64] = {"t128x64", "128x64x32, 128 threads, 8x8 a lane", 128, 64, 32, 128, 4, 3,
                      0.8595, 0, false, 0},
    [GEMM_T64X128] = {"t64x128", "64x128x32, 128 threads, 8x8 a lane", 64, 128, 32, 128, 4, 4,
                      0.9631, 0, false, 0},
    [GEMM_T64X64] = {"t64x64", "64x64x16, 64 threads, 8x8 a lane, 3 stages", 64, 64, 16, 64, 8, 6,
                     0.8864, 0, false, 0},
    [GEMM_T64X64W4] = {"t64x64w4", "64x64x32, 128 threads, 4x8 a lane", 64, 64, 32, 128, 4, 4,
                       0.9290, 0, true, 1.0},
    [GEMM_T256X16] = {"t256x16", "256x16x32, 128 threads, 8x4 a lane", 256, 16, 32, 128, 2, 2, 0.60,
                      1, false, 0},
    [GEMM_T16X256] = {"t16x256", "16x256x32, 128 threads, 4x8 a lane", 16, 256, 32, 128, 3, 3, 0.60,
                      2, false, 0},
};

static const int split_menu[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32};
#define N_SPLITS ((int)(sizeof split_menu / sizeof split_menu[0]))

/* Model constants, fitted to run 1's measured times on the H200 (every configuration
 * at every shape it ran):
 *  R: one SM's FFMA rate (FLOP/s) at eff 1 when it holds >= SAT warps; with fewer, the
 *     rate falls as (warps / SAT)^ALPHA;
 *  GUARD: the rate factor of a guarded tile;
 *  EPI: seconds per C element a round of blocks on one SM stores (not overlapped: the
 *     blocks of an SM finish together);
 *  BW: the floor of the operands' bytes; LAUNCH, LAUNCH2: a launch, the split-K pass's;
 *  L2BW: the split-K partials' bytes while they fit in L2 (L2_BYTES, below the H100's
 *  50 MB; a rule added after bench/lab/gemm_forms.cu on an H100: at 3000^3 two splits'
 *  72 MB of partials ran 30 us slower than one split, where the model had them 18 us
 *  faster), at BW beyond. */
#define MODEL_R 3.891e11
#define MODEL_SAT_WARPS 9.812
#define MODEL_ALPHA 0.6065
#define MODEL_GUARD 0.7336
#define MODEL_EPI_S 1.718e-10
#define MODEL_BW 3.3e12
#define MODEL_LAUNCH_S 2.5e-6
#define MODEL_LAUNCH2_S 2.652e-6
#define MODEL_L2BW 33.0e12
#define MODEL_L2_BYTES 40e6

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* k per split for s splits in steps of `step`; *splits gets the splits that remain. */
static int kchunk_for(int k, int s, int step, int *splits) {
  int kc = (int)(cdiv(cdiv(k, s), step) * step);
  if (kc < step) kc = step;
  *splits = (int)cdiv(k, kc);
  if (*splits < 1) *splits = 1;
  return kc;
}

/* One round of j blocks of tile t on an SM: their FLOPs at the rate j blocks' warps
 * reach, plus their epilogue. */
static double tile_round_s(const struct gemm_tile_cfg *t, int j, double block_flops, double eff) {
  double u = (double)j * t->threads / 32.0 / MODEL_SAT_WARPS;
  u = u >= 1.0 ? 1.0 : pow(u, MODEL_ALPHA);
  return (double)j * block_flops / (MODEL_R * eff * u) + MODEL_EPI_S * (double)j * t->bm * t->bn;
}

/* Predicted seconds of tile c with s splits (hyb: the hybrid instance): the busiest
 * SM's blocks in rounds of bpsm (a partial last round runs at its own, lower
 * occupancy), each round's FLOPs at that occupancy's rate plus its epilogue; at least
 * the operands' bytes; plus the split-K pass. */
static double predict_tile(int c, int s, int m, int n, int k, int sms, bool hyb, int *kchunk,
                           int *splits, bool *whole_out) {
  const struct gemm_tile_cfg *t = &gemm_tile_cfgs[c];
  const int kc = kchunk_for(k, s, t->bk, splits);
  const bool whole = m % t->bm == 0 && n % t->bn == 0 && k % t->bk == 0 && kc % t->bk == 0;
  const int bpsm = whole ? t->bpsm : t->bpsm_guarded;
  const int64_t tiles = cdiv(m, t->bm) * cdiv(n, t->bn);
  /* hybrid: only the edge tiles run at the guarded rate */
  const double inner = hyb ? (double)(m / t->bm) * (n / t->bn) / (double)tiles : 0.0;
  double eff = t->eff * (whole ? 1.0 : inner + (1.0 - inner) * MODEL_GUARD);
  if (hyb && !whole) eff *= t->hybrid_rate;
  const int64_t blocks = tiles * *splits;
  const int64_t left = cdiv(blocks, sms); /* blocks on the busiest SM */
  const double block_flops = 2.0 * t->bm * t->bn * kc;
  double sec = (double)(left / bpsm) * tile_round_s(t, bpsm, block_flops, eff);
  if (left % bpsm) sec += tile_round_s(t, (int)(left % bpsm), block_flops, eff);
  const double bytes = 4.0 * ((double)m * k + (double)k * n + (double)m * n * *splits);
  if (bytes / MODEL_BW > sec) sec = bytes / MODEL_BW;
  sec += MODEL_LAUNCH_S;
  if (*splits > 1) {
    const double ws_bytes = 4.0 * *splits * m * n;
    const double bw = ws_bytes <= MODEL_L2_BYTES ? MODEL_L2BW : MODEL_BW;
    sec += (2.0 * *splits + 1.0) * m * n * 4.0 / bw + MODEL_LAUNCH2_S;
  }
  *kchunk = kc;
  *whole_out = whole;
  return sec;
}

/* Whether s splits leave enough k steps a split: at least 4 (run 1's fit), or for the
 * narrow tiles at least 3 of the rounded chunk (run 2 at 3001x7x2049: t256x16 at 22
 * splits of 96 ran faster than at 13 of 160, and than gemv_n). */
static bool enough_k(const struct gemm_tile_cfg *t, int k, int s) {
  if (!t->narrow) return cdiv(k, s) >= 4 * t->bk;
  int sp;
  return kchunk_for(k, s, t->bk, &sp) >= 3 * t->bk;
}

/* The hybrid instance applies: the tile has it, the shape is not whole, and B's and C's
 * rows are whole float4 (its unguarded copies and stores are 16 bytes wide). */
static bool hybrid_applies(int c, int m, int n, int k) {
  const struct gemm_tile_cfg *t = &gemm_tile_cfgs[c];
  const bool whole = m % t->bm == 0 && n % t->bn == 0 && k % t->bk == 0;
  return t->hybrid && !whole && n % 4 == 0;
}

/* k steps of the gemv kernels (a split's k is a multiple) */
#define GEMV_T_KSTEP 32
#define GEMV_N_KSTEP 128

/* gemv_t: 128 columns a block, k split for >= 4 blocks an SM, at least 128 k a split
 * (run 1 at 5x3001x2049: 13 splits of 160 beat 8 of 288). By its bytes. */
static double predict_gemv_t(int m, int n, int k, int sms, int *kchunk, int *splits) {
  int s = (int)cdiv(4 * sms, cdiv(n, 128));
  const int smax = k / 128 > 1 ? k / 128 : 1;
  if (s > smax) s = smax;
  if (s < 1) s = 1;
  *kchunk = kchunk_for(k, s, GEMV_T_KSTEP, splits);
  const double bytes = 4.0 * ((double)k * n + (double)m * k + (double)m * n * (*splits + 1));
  return bytes / MODEL_BW + MODEL_LAUNCH_S + (*splits > 1 ? MODEL_LAUNCH2_S : 0.0);
}

/* gemv_n (one column): 8 warps x 2 rows a block, k split for >= 4 blocks an SM, at
 * least 256 k a split. By its bytes. */
static double predict_gemv_n(int m, int n, int k, int sms, int *kchunk, int *splits) {
  int s = (int)cdiv(4 * sms, cdiv(m, 16));
  const int smax = k / 256 > 1 ? k / 256 : 1;
  if (s > smax) s = smax;
  if (s < 1) s = 1;
  *kchunk = kchunk_for(k, s, GEMV_N_KSTEP, splits);
  const double bytes = 4.0 * ((double)m * k + (double)k * n + (double)m * n * (*splits + 1));
  return bytes / MODEL_BW + MODEL_LAUNCH_S + (*splits > 1 ? MODEL_LAUNCH2_S : 0.0);
}

uint64_t gemm_pick_ws_floats(const struct gemm_pick *p, int m, int n) {
  return p->splits > 1 ? (uint64_t)p->splits * (uint64_t)m * (uint64_t)n : 0;
}

static void pick_name(struct gemm_pick *p) {
  if (p->kind == GEMM_KIND_TILE)
    snprintf(p->name, sizeof p->name, "%s%s_s%d", gemm_tile_cfgs[p->tile].name,
             p->hybrid ? "h" : "", p->splits);
  else
    snprintf(p->name, sizeof p->name, "%s%d_s%d", p->kind == GEMM_KIND_GEMV_T ? "gemv_t" : "gemv_n",
             p->rows, p->splits);
}

struct gemm_pick gemm_pick_for(int m, int n, int k, int sms, uint64_t max_ws_floats) {
  struct gemm_pick best = {
      .kind = GEMM_KIND_TILE, .tile = GEMM_T128X128, .splits = 1, .kchunk = k, .pred_s = 1e30};
  const uint64_t mn = (uint64_t)m * (uint64_t)n;
  if (sms < 1) sms = 1;
  for (int c = 0; c < GEMM_N_TILES; c++) {
    const struct gemm_tile_cfg *t = &gemm_tile_cfgs[c];
    if ((t->narrow == 1 && n > 16) || (t->narrow == 2 && m > 16)) continue;
    for (int i = 0; i < N_SPLITS; i++) {
      const int s = split_menu[i];
      if (s > 1 && !enough_k(t, k, s)) break;
      for (int h = 0; h <= (int)hybrid_applies(c, m, n, k); h++) {
        int kc, sp;
        bool whole;
        const double sec = predict_tile(c, s, m, n, k, sms, h, &kc, &sp, &whole);
        if (sp > 1 && (uint64_t)sp * mn > max_ws_floats) continue;
        if (sec < best.pred_s)
          best = (struct gemm_pick){.kind = GEMM_KIND_TILE,
                                    .tile = c,
                                    .whole = whole,
                                    .hybrid = h && !whole,
                                    .splits = sp,
                                    .kchunk = kc,
                                    .pred_s = sec};
      }
    }
  }
  int kc, sp;
  if (m <= 8) {
    const double sec = predict_gemv_t(m, n, k, sms, &kc, &sp);
    if (sec < best.pred_s && (sp == 1 || (uint64_t)sp * mn <= max_ws_floats))
      best = (struct gemm_pick){.kind = GEMM_KIND_GEMV_T,
                                .tile = -1,
                                .splits = sp,
                                .kchunk = kc,
                                .rows = m == 1 ? 1 : 8,
                                .pred_s = sec};
  }
  if (n == 1) {
    const double sec = predict_gemv_n(m, n, k, sms, &kc, &sp);
    if (sec < best.pred_s && (sp == 1 || (uint64_t)sp * mn <= max_ws_floats))
      best = (struct gemm_pick){.kind = GEMM_KIND_GEMV_N,
                                .tile = -1,
                                .splits = sp,
                                .kchunk = kc,
                                .rows = 1,
                                .pred_s = sec};
  }
  pick_name(&best);
  return best;
}

struct gemm_pick gemm_pick_tile(int tile, bool hybrid, int s, int k) {
  struct gemm_pick p = {.kind = GEMM_KIND_TILE, .tile = tile, .hybrid = hybrid};
  p.kchunk = kchunk_for(k, s, gemm_tile_cfgs[tile].bk, &p.splits);
  pick_name(&p);
  return p;
}

struct gemm_pick gemm_pick_gemv(enum gemm_kind kind, int rows, int s, int k) {
  const bool t = kind != GEMM_KIND_GEMV_N; /* gemv_t unless gemv_n is asked */
  struct gemm_pick p = {.kind = t ? GEMM_KIND_GEMV_T : GEMM_KIND_GEMV_N, .tile = -1, .rows = rows};
  p.kchunk = kchunk_for(k, s, t ? GEMV_T_KSTEP : GEMV_N_KSTEP, &p.splits);
  pick_name(&p);
  return p;
}

uint64_t gemm_best_scratch_floats(int m, int n, int k) {
  if (m < 1 || n < 1 || k < 1) return 0;
  const struct gemm_pick p = gemm_pick_for(m, n, k, GEMM_PICK_COUNT_SMS, UINT64_MAX);
  return gemm_pick_ws_floats(&p, m, n);
}

void gemm_pick_describe(const struct gemm_pick *p, int m, int n, int k, int sms, char *buf,
                        size_t len) {
  (void)k;
  char split[64] = "";
  if (p->splits > 1)
    snprintf(split, sizeof split, ", split-K %d (k by %d) + pass", p->splits, p->kchunk);
  if (p->kind == GEMM_KIND_GEMV_T) {
    snprintf(buf, len,
             "%s: m = %d: lanes own float4 columns of B, warps split k%s; by B's bytes "
             "(model %.1f us)",
             p->name, m, split, p->pred_s * 1e6);
    return;
  }
  if (p->kind == GEMM_KIND_GEMV_N) {
    snprintf(buf, len,
             "%s: n = 1: warps own rows of A, lanes split k%s; by A's bytes (model %.1f us)",
             p->name, split, p->pred_s * 1e6);
    return;
  }
  const struct gemm_tile_cfg *t = &gemm_tile_cfgs[p->tile];
  const long long tiles = (long long)cdiv(m, t->bm) * cdiv(n, t->bn);
  const int bpsm = p->whole ? t->bpsm : t->bpsm_guarded;
  snprintf(buf, len, "%s: %s, %s%s: %lld tiles x %d on %d SMs x %d (model %.1f us)", p->name,
           t->shape,
           p->whole    ? "whole"
           : p->hybrid ? "edges guarded"
                       : "guarded",
           split, tiles, p->splits, sms, bpsm, p->pred_s * 1e6);
}

/* ---- TF32 ----
 *
 * The menu: C tiles 128 x {256, 224, 192, 128, 64} of the wgmma + TMA kernel (64: 2 CTAs
 * an SM), split-K over work units. Model fitted to run 1 on the H200:
 * one SM's TF32 rate at eff 1, a unit's fixed cost (the ring's fill, the epilogue), a
 * launch, the operand copies' bandwidth and fixed cost, the split-K pass; an SM's CTAs
 * share its tensor cores only when it has that many units. Rule added after run 2: A and
 * Bt at a pitch of a multiple of 32 floats when k % 8 != 0 (rows of k floats would start
 * 16 bytes into a 32-byte sector every other row; the 128-byte pitch won at every such
 * shape measured, 2500^3, 1000x1500x777 and 257x383x97, and lost at 3000^3, whose
 * 12000-byte rows are whole sectors). The split-K pass refitted after
 * bench/lab/gemm_forms.cu on an H100 (bench/RESULTS.md): in the C^T form two splits cost
 * 6.4, 7.7 and 9.7 us beyond one split's time at 512^3, 768^3 and 1024^3 (the model
 * said 3.5 us) and never won; a fixed 5.3 us and the partials' bytes at 4.5 TB/s fit
 * them. */
const struct tf32_tile_cfg tf32_tile_cfgs[TF32_N_TILES] = {
    {256, 4, 1, 1.000, true}, {224, 4, 1, 1.033, true}, {192, 4, 1, 1.038, true},
    {128, 4, 1, 0.923, true}, {64, 4, 2, 0.599, false},
};

static const int tf32_split_menu[] = {1, 2, 3, 4, 6, 8};
#define TF32_N_SPLITS ((int)(sizeof tf32_split_menu / sizeof tf32_split_menu[0]))

#define TF32_SM_FLOPS 2.763e12
#define TF32_UNIT_S 3.4e-6
#define TF32_LAUNCH_S 2.5e-6
#define TF32_BW 6.518e12
#define TF32_PREP_S 4.188e-6
#define TF32_L2BW 4.5e12
#define TF32_LAUNCH2_S 5.3e-6

bool tf32_ct_fits(int m, int n, int k) {
  return m >= 1 && n >= 1 && k >= 1 && n % 8 == 0 && k % 8 == 0;
}

/* ct: the C^T form, whose tiles are 128 columns of C by bn rows and which reads B in
 * place. */
static double tf32_predict(int c, bool ct, int s, int m, int n, int k, int sms, int *kchunk,
                           int *splits) {
  const struct tf32_tile_cfg *t = &tf32_tile_cfgs[c];
  const int kc = kchunk_for(k, s, 32, splits);
  *kchunk = kc;
  const int64_t units = (ct ? cdiv(n, 128) * cdiv(m, t->bn) : cdiv(m, 128) * cdiv(n, t->bn)) *
                        *splits;
  const int64_t left = cdiv(units, sms); /* units of the busiest SM */
  const double unit_flops = 2.0 * 128 * t->bn * kc;
  /* rounds of up to ctas_per_sm CTAs sharing the tensor cores */
  const int64_t rounds = cdiv(left, t->ctas_per_sm);
  double sec = (double)left * unit_flops / (TF32_SM_FLOPS * t->eff) + (double)rounds * TF32_UNIT_S;
  sec += TF32_LAUNCH_S;
  if (!ct) sec += 8.0 * k * n / TF32_BW + TF32_PREP_S;   /* B -> Bt */
  if (k % 8) sec += 8.0 * m * k / TF32_BW + TF32_PREP_S; /* A's copy */
  if (*splits > 1) sec += (2.0 * *splits + 1.0) * m * n * 4.0 / TF32_L2BW + TF32_LAUNCH2_S;
  return sec;
}

uint64_t tf32_pick_ws_floats(const struct tf32_pick *p, int m, int n) {
  return p->splits > 1 ? (uint64_t)p->splits * (uint64_t)m * (uint64_t)n : 0;
}

/* What follows from the form and k: A's copy where the Bt form meets k % 8 != 0 (rows
 * not 16-byte aligned), its pitch, and the name. */
static void tf32_pick_finish(struct tf32_pick *p, int k) {
  p->copy_a = !p->ct && k % 8 != 0;
  p->kp = p->copy_a ? (int)(cdiv(k, 32) * 32) : k;
  snprintf(p->name, sizeof p->name, "%s%d_s%d%s", p->ct ? "ct" : "wg", tf32_tile_cfgs[p->tile].bn,
           p->splits, p->copy_a ? "_p32" : "");
}

struct tf32_pick tf32_pick_for(int m, int n, int k, int sms, uint64_t max_ws_floats) {
  struct tf32_pick p = {.tile = 0, .splits = 1, .kchunk = (int)(cdiv(k, 32) * 32), .pred_s = 1e30};
  const uint64_t mn = (uint64_t)m * (uint64_t)n;
  if (sms < 1) sms = 1;
  const int forms = tf32_ct_fits(m, n, k) ? 2 : 1;
  for (int f = 0; f < forms; f++)
    for (int c = 0; c < TF32_N_TILES; c++) {
      if (f == 1 && !tf32_tile_cfgs[c].ct) continue;
      for (int i = 0; i < TF32_N_SPLITS; i++) {
        const int s = tf32_split_menu[i];
        if (s > 1 && cdiv(k, s) < 8 * 32) break; /* at least 8 k-tiles a split */
        int kc, sp;
        const double sec = tf32_predict(c, f == 1, s, m, n, k, sms, &kc, &sp);
        if (sp > 1 && (uint64_t)sp * mn > max_ws_floats) continue;
        if (sec < p.pred_s) p.tile = c, p.ct = f == 1, p.splits = sp, p.kchunk = kc, p.pred_s = sec;
      }
    }
  tf32_pick_finish(&p, k);
  return p;
}

struct tf32_pick tf32_pick_make(int tile, bool ct, int s, int k) {
  struct tf32_pick p = {.tile = tile, .ct = ct};
  p.kchunk = kchunk_for(k, s, 32, &p.splits);
  tf32_pick_finish(&p, k);
  return p;
}

static uint64_t round32(uint64_t f) { return (f + 31) / 32 * 32; }

uint64_t tf32_pick_scratch_floats(const struct tf32_pick *p, int m, int n) {
  return (p->ct ? 0 : round32((uint64_t)n * p->kp)) +
         (p->copy_a ? round32((uint64_t)m * p->kp) : 0) + round32(tf32_pick_ws_floats(p, m, n));
}

uint64_t gemm_tf32_scratch_floats(int m, int n, int k) {
  if (m < 1 || n < 1 || k < 1) return 0;
  const struct tf32_pick p = tf32_pick_for(m, n, k, GEMM_PICK_COUNT_SMS, UINT64_MAX);
  return tf32_pick_scratch_floats(&p, m, n);
}

void tf32_pick_describe(const struct tf32_pick *p, int m, int n, int k, int sms, char *buf,
                        size_t len) {
  (void)k;
  const int bn = tf32_tile_cfgs[p->tile].bn;
  const long long tiles = p->ct ? (long long)cdiv(n, 128) * cdiv(m, bn)
                                : (long long)cdiv(m, 128) * cdiv(n, bn);
  char split[48] = "";
  if (p->splits > 1) snprintf(split, sizeof split, ", split-K %d + pass", p->splits);
  if (p->ct) {
    snprintf(buf, len,
             "%s: C^T = B^T A^T, B's fragments from its rows to registers; %dx128 tiles, TMA + "
             "2 wgmma warpgroups%s: %lld units on %d SMs (model %.1f us)",
             p->name, bn, split, tiles * p->splits, sms, p->pred_s * 1e6);
    return;
  }
  snprintf(buf, len,
           "%s: B^T%s to scratch (pitch %d); 128x%d tiles, TMA + 2 wgmma warpgroups%s: %lld "
           "units on %d SMs (model %.1f us)",
           p->name, p->copy_a ? " and A" : "", p->kp, bn, split, tiles * p->splits, sms,
           p->pred_s * 1e6);
}
