/* A problem's buffers in the CUDA runner and their device code (runner_problem.h): the
 * inputs generated from a seed as the header states it, outputs compared with a
 * reference's by each output's rule, inputs compared with what was generated. Every
 * kernel is grid-stride over one buffer's elements (thread t takes t, t + stride, ...:
 * neighbouring threads read neighbouring elements), 256 threads a block; the counting
 * ones reduce over each warp with shuffles and let its first lane do the atomics, so a
 * buffer that is wrong everywhere costs one atomic per warp, not one per element. */
#include "kernels/user/runner_problem.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/gen.h"

#define PROBLEM_THREADS 256
#define PROBLEM_MAX_BLOCKS 4096
#define PROBLEM_ALIGN 256 /* each buffer's start in the slab: whole 128-byte lines and more */
#define PROBLEM_MAX_ELEMS 0x7fffffffull /* the kernels' int indices */

static unsigned blocks_for(uint64_t n) {
  uint64_t b = (n + PROBLEM_THREADS - 1) / PROBLEM_THREADS;
  return (unsigned)(b < 1 ? 1 : b > PROBLEM_MAX_BLOCKS ? PROBLEM_MAX_BLOCKS : b);
}

static size_t dtype_bytes(uint32_t t) {
  switch (t) {
  case RUNNER_DTYPE_FLOAT16:
  case RUNNER_DTYPE_BFLOAT16: return 2;
  case RUNNER_DTYPE_INT8: return 1;
  default: return 4;
  }
}

/* ---- elements as bits: one place knows each dtype's width and encoding ---- */

__device__ static uint32_t get_bits(const void *d, uint32_t t, uint64_t i) {
  switch (t) {
  case RUNNER_DTYPE_FLOAT16:
  case RUNNER_DTYPE_BFLOAT16: return ((const uint16_t *)d)[i];
  case RUNNER_DTYPE_INT8: return ((const uint8_t *)d)[i];
  default: return ((const uint32_t *)d)[i];
  }
}

__device__ static void put_bits(void *d, uint32_t t, uint64_t i, uint32_t bits) {
  switch (t) {
  case RUNNER_DTYPE_FLOAT16:
  case RUNNER_DTYPE_BFLOAT16: ((uint16_t *)d)[i] = (uint16_t)bits; break;
  case RUNNER_DTYPE_INT8: ((uint8_t *)d)[i] = (uint8_t)bits; break;
  default: ((uint32_t *)d)[i] = bits; break;
  }
}

__device__ static long long saturate(double v, long long lo, long long hi) {
  long long k = __double2ll_rn(v); /* NaN: 0x8000...: the low end */
  return k < lo ? lo : k > hi ? hi : k;
}

/* v rounded to dtype t, as its bits (runner_problem.h: the conversions). */
__device__ static uint32_t encode(uint32_t t, double v) {
  switch (t) {
  case RUNNER_DTYPE_FLOAT32: return __float_as_uint(__double2float_rn(v));
  case RUNNER_DTYPE_FLOAT16: return __half_as_ushort(__float2half_rn(__double2float_rn(v)));
  case RUNNER_DTYPE_BFLOAT16:
    return __bfloat16_as_ushort(__float2bfloat16_rn(__double2float_rn(v)));
  case RUNNER_DTYPE_INT32: return (uint32_t)(int32_t)saturate(v, INT32_MIN, INT32_MAX);
  case RUNNER_DTYPE_UINT32: return (uint32_t)saturate(v, 0, UINT32_MAX);
  default: return (uint32_t)(uint8_t)(int8_t)saturate(v, INT8_MIN, INT8_MAX);
  }
}

__device__ static double decode(uint32_t t, uint32_t bits) {
  switch (t) {
  case RUNNER_DTYPE_FLOAT32: return (double)__uint_as_float(bits);
  case RUNNER_DTYPE_FLOAT16: return (double)__half2float(__ushort_as_half((unsigned short)bits));
  case RUNNER_DTYPE_BFLOAT16:
    return (double)__bfloat162float(__ushort_as_bfloat16((unsigned short)bits));
  case RUNNER_DTYPE_INT32: return (double)(int32_t)bits;
  case RUNNER_DTYPE_UINT32: return (double)bits;
  default: return (double)(int8_t)(uint8_t)bits;
  }
}

/* ---- the generator ---- */

/* gen_uniform's value at counter c as t in [0, 1), exactly (a multiple of 2^-24). */
__device__ static double unit(uint64_t seed, uint32_t stream, uint64_t c) {
  return ((double)gen_uniform(seed, stream, c) + 1.0) * 0.5;
}

/* Element i of input `in` (stream = its index) in FP64, before rounding to its dtype. */
__device__ static double gen_value(const struct runner_problem_input &in, uint64_t seed,
                                   uint32_t stream, uint64_t i) {
  switch (in.init) {
  case RUNNER_INIT_NORMAL: {
    double t1 = unit(seed, stream, 2 * i), t2 = unit(seed, stream, 2 * i + 1);
    double z = __dmul_rn(sqrt(-2.0 * log(1.0 - t1)), cospi(2.0 * t2));
    return __dadd_rn(in.a, __dmul_rn(in.b, z));
  }
  case RUNNER_INIT_INTEGERS: {
    double n = in.b - in.a + 1.0, k = floor(__dmul_rn(unit(seed, stream, i), n));
    return in.a + (k < n - 1.0 ? k : n - 1.0);
  }
  default: return __dadd_rn(in.a, __dmul_rn(__dsub_rn(in.b, in.a), unit(seed, stream, i)));
  }
}

__global__ void problem_gen_kernel(void *d, struct runner_problem_input in, uint64_t seed,
                                   uint32_t stream) {
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < in.elems;
       i += (uint64_t)gridDim.x * blockDim.x)
    put_bits(d, in.dtype, i, encode(in.dtype, gen_value(in, seed, stream, i)));
}

/* ---- counting: per thread, then per warp, then one atomic per warp ---- */

__device__ static unsigned long long warp_sum(unsigned long long v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ static unsigned long long warp_min(unsigned long long v) {
  for (int o = 16; o > 0; o /= 2) {
    unsigned long long w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w < v ? w : v;
  }
  return v;
}
__device__ static unsigned long long warp_max(unsigned long long v) {
  for (int o = 16; o > 0; o /= 2) {
    unsigned long long w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w > v ? w : v;
  }
  return v;
}

/* The warp's findings into *bad and *first (each lane brings its own). Every lane of
 * the warp calls it. */
__device__ static void warp_found(unsigned long long bad, unsigned long long first,
                                  unsigned long long *g_bad, unsigned long long *g_first) {
  bad = warp_sum(bad);
  first = warp_min(first);
  if ((threadIdx.x & 31) == 0 && bad) {
    atomicAdd(g_bad, bad);
    atomicMin(g_first, first);
  }
}

/* Grid-stride: input d against what (seed, stream) generates, bit for bit. */
__global__ void problem_input_check_kernel(const void *d, struct runner_problem_input in,
                                           uint64_t seed, uint32_t stream, unsigned long long *bad,
                                           unsigned long long *first) {
  unsigned long long n_bad = 0, lo = ~0ull;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < in.elems;
       i += (uint64_t)gridDim.x * blockDim.x)
    if (get_bits(d, in.dtype, i) != encode(in.dtype, gen_value(in, seed, stream, i))) {
      n_bad++;
      lo = i < lo ? i : lo;
    }
  warp_found(n_bad, lo, bad, first);
}

/* Grid-stride: got against want (o's elems of its dtype) by o's rule (exact: bits). */
__global__ void problem_compare_kernel(const void *got, const void *want,
                                       struct runner_problem_output o, bool exact,
                                       struct runner_problem_count *c) {
  unsigned long long n_bad = 0, lo = ~0ull;
  double max_abs = 0, max_rel = 0;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < o.elems;
       i += (uint64_t)gridDim.x * blockDim.x) {
    uint32_t gb = get_bits(got, o.dtype, i), wb = get_bits(want, o.dtype, i);
    double g = decode(o.dtype, gb), w = decode(o.dtype, wb);
    bool finite = isfinite(g) && isfinite(w), ok;
    if (finite) {
      double e = fabs(g - w);
      max_abs = fmax(max_abs, e);
      if (w != 0) max_rel = fmax(max_rel, e / fabs(w));
    }
    if (exact)
      ok = gb == wb;
    else if (finite)
      ok = fabs(g - w) <= o.abs + o.rel * fabs(w);
    else
      ok = (isnan(g) && isnan(w)) || g == w; /* the same infinity */
    if (!ok) {
      n_bad++;
      lo = i < lo ? i : lo;
    }
  }
  warp_found(n_bad, lo, &c->bad, &c->first);
  unsigned long long a = warp_max((unsigned long long)__double_as_longlong(max_abs)),
                     r = warp_max((unsigned long long)__double_as_longlong(max_rel));
  if ((threadIdx.x & 31) == 0) {
    if (a) atomicMax(&c->max_abs_bits, a);
    if (r) atomicMax(&c->max_rel_bits, r);
  }
}

/* One thread: got and want at c's first failure, when it has one. */
__global__ void problem_pick_kernel(const void *got, const void *want, uint32_t dtype,
                                    struct runner_problem_count *c) {
  if (!c->bad) return;
  c->got = decode(dtype, get_bits(got, dtype, c->first));
  c->want = decode(dtype, get_bits(want, dtype, c->first));
}

/* One block: the slot without findings (firsts all bits set, for atomicMin). */
__global__ void problem_slot_reset_kernel(struct runner_problem_slot *s) {
  for (int k = threadIdx.x; k < RUNNER_PROBLEM_MAX_BUFFERS; k += blockDim.x) {
    s->out[k] = (struct runner_problem_count){0, ~0ull, 0, 0, 0.0, 0.0};
    s->in_bad[k] = 0, s->in_first[k] = ~0ull;
  }
}

/* ---- the host side ---- */

static size_t align_up(size_t n) { return (n + PROBLEM_ALIGN - 1) / PROBLEM_ALIGN * PROBLEM_ALIGN; }

/* Whether m describes buffers this runner can make; else msg says what is wrong. */
static bool msg_ok(const struct runner_problem_msg *m, char *msg, size_t msg_len) {
  if (m->n_in < 1 || m->n_in > RUNNER_PROBLEM_MAX_BUFFERS || m->n_out < 1 ||
      m->n_out > RUNNER_PROBLEM_MAX_BUFFERS || m->n_params > RUNNER_PROBLEM_MAX_PARAMS ||
      m->n_runs < 1 || m->n_runs > RUNNER_PROBLEM_MAX_RUNS) {
    snprintf(msg, msg_len, "problem: %u inputs, %u outputs, %u params, %u runs", m->n_in, m->n_out,
             m->n_params, m->n_runs);
    return false;
  }
  for (uint32_t i = 0; i < m->n_in; i++) {
    const struct runner_problem_input *x = &m->in[i];
    bool ok = x->dtype <= RUNNER_DTYPE_INT8 && x->init <= RUNNER_INIT_INTEGERS && x->elems >= 1 &&
              x->elems <= PROBLEM_MAX_ELEMS && x->given <= RUNNER_MAX_BUFFERS && isfinite(x->a) &&
              isfinite(x->b) && (x->init == RUNNER_INIT_NORMAL ? x->b >= 0 : x->a <= x->b);
    if (!ok) {
      snprintf(msg, msg_len, "problem: input %u (dtype %u, init %u (%g, %g), %llu elements)", i,
               x->dtype, x->init, x->a, x->b, (unsigned long long)x->elems);
      return false;
    }
  }
  for (uint32_t o = 0; o < m->n_out; o++) {
    const struct runner_problem_output *y = &m->out[o];
    if (y->dtype > RUNNER_DTYPE_INT8 || y->exact > 1 || y->elems < 1 ||
        y->elems > PROBLEM_MAX_ELEMS || !(y->abs >= 0) || !(y->rel >= 0)) {
      snprintf(msg, msg_len,
               "problem: output %u (dtype %u, exact %u, abs %g, rel %g, %llu elements)", o,
               y->dtype, y->exact, y->abs, y->rel, (unsigned long long)y->elems);
      return false;
    }
  }
  for (int k = 0; k < 3; k++)
    if (!m->ref_grid[k] || !m->ref_block[k]) {
      snprintf(msg, msg_len, "problem: the reference's grid or block has a 0");
      return false;
    }
  return true;
}

extern "C" int runner_problem_new(const struct runner_problem_msg *m, struct runner_problem **out,
                                  char *msg, size_t msg_len) {
  *out = NULL;
  if (!msg_ok(m, msg, msg_len)) return -EINVAL;
  struct runner_problem *p = (struct runner_problem *)calloc(1, sizeof *p);
  if (!p) {
    snprintf(msg, msg_len, "problem: out of memory");
    return -ENOMEM;
  }
  p->m = *m;
  /* The slab: the inputs, then n_runs + 2 output sets (the runs', the reference's two),
   * then the check's slot. */
  size_t in_off[RUNNER_PROBLEM_MAX_BUFFERS], out_off[RUNNER_PROBLEM_MAX_BUFFERS], at = 0;
  for (uint32_t i = 0; i < m->n_in; i++, at = align_up(at))
    in_off[i] = at, at += m->in[i].elems * dtype_bytes(m->in[i].dtype);
  size_t set = 0;
  for (uint32_t o = 0; o < m->n_out; o++, set = align_up(set))
    out_off[o] = set, set += m->out[o].elems * dtype_bytes(m->out[o].dtype);
  const size_t sets_at = at, slot_at = at + set * (m->n_runs + 2);
  const size_t bytes = slot_at + sizeof(struct runner_problem_slot);
  cudaError_t e = cudaMalloc(&p->slab, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    snprintf(msg, msg_len, "problem: %zu bytes of buffers: %s", bytes, cudaGetErrorName(e));
    free(p);
    return -ENOMEM;
  }
  char *base = (char *)p->slab;
  for (uint32_t i = 0; i < m->n_in; i++) p->in[i] = base + in_off[i];
  for (uint32_t s = 0; s < m->n_runs + 2; s++)
    for (uint32_t o = 0; o < m->n_out; o++) {
      void *ptr = base + sets_at + s * set + out_off[o];
      if (s < m->n_runs)
        p->out[s][o] = ptr;
      else if (s == m->n_runs)
        p->ref[o] = ptr;
      else
        p->ref_fresh[o] = ptr;
    }
  p->set_bytes = set;
  p->check = (struct runner_problem_slot *)(base + slot_at);
  *out = p;
  return 0;
}

extern "C" void runner_problem_free(struct runner_problem *p) {
  if (!p) return;
  cudaFree(p->slab); /* cudaFree waits for the device's work */
  if (p->slots) cudaFree(p->slots);
  free(p->h_slots);
  free(p);
}

extern "C" int runner_problem_slots_ready(struct runner_problem *p, uint32_t n, char *msg,
                                          size_t msg_len) {
  if (n <= p->n_slots) return 0;
  if (p->slots) cudaFree(p->slots);
  free(p->h_slots);
  p->n_slots = 0;
  p->h_slots = (struct runner_problem_slot *)malloc((size_t)n * sizeof *p->h_slots);
  cudaError_t e = p->h_slots ? cudaMalloc((void **)&p->slots, (size_t)n * sizeof *p->slots)
                             : cudaErrorMemoryAllocation;
  if (e != cudaSuccess) {
    cudaGetLastError();
    p->slots = NULL;
    snprintf(msg, msg_len, "run: the problem check's %u slots: %s", n, cudaGetErrorName(e));
    return -ENOMEM;
  }
  p->n_slots = n;
  return 0;
}

extern "C" int runner_problem_give(struct runner_problem *p, uint32_t i, const void *src,
                                   uint64_t bytes, char *msg, size_t msg_len) {
  const struct runner_problem_input *x = i < p->m.n_in ? &p->m.in[i] : NULL;
  uint64_t need = x ? x->elems * dtype_bytes(x->dtype) : 0;
  if (!x || !x->given || bytes < need) {
    snprintf(msg, msg_len, "problem: input %u given in a buffer of %llu bytes, it needs %llu", i,
             (unsigned long long)bytes, (unsigned long long)need);
    return -EINVAL;
  }
  p->given[i] = src;
  return 0;
}

extern "C" cudaError_t runner_problem_generate(const struct runner_problem *p, uint64_t seed,
                                               cudaStream_t stream) {
  for (uint32_t i = 0; i < p->m.n_in; i++)
    problem_gen_kernel<<<blocks_for(p->m.in[i].elems), PROBLEM_THREADS, 0, stream>>>(
        p->in[i], p->m.in[i], seed, i);
  return cudaGetLastError();
}

extern "C" cudaError_t runner_problem_job_inputs(const struct runner_problem *p,
                                                 cudaStream_t stream) {
  for (uint32_t i = 0; i < p->m.n_in; i++) {
    const struct runner_problem_input *x = &p->m.in[i];
    if (p->given[i]) {
      cudaError_t e = cudaMemcpyAsync(p->in[i], p->given[i], x->elems * dtype_bytes(x->dtype),
                                      cudaMemcpyDeviceToDevice, stream);
      if (e != cudaSuccess) return e;
    } else {
      problem_gen_kernel<<<blocks_for(x->elems), PROBLEM_THREADS, 0, stream>>>(p->in[i], *x,
                                                                               p->m.seed, i);
    }
  }
  return cudaGetLastError();
}

/* Every output o: got[o] against want[o] into slot->out[o], cleared first; bitwise or
 * by o's rule; with_values: got and want at the first failure. */
static void compare(const struct runner_problem *p, void *const *got, void *const *want,
                    bool bitwise, bool with_values, struct runner_problem_slot *slot,
                    cudaStream_t stream) {
  for (uint32_t o = 0; o < p->m.n_out; o++) {
    const struct runner_problem_output *y = &p->m.out[o];
    problem_compare_kernel<<<blocks_for(y->elems), PROBLEM_THREADS, 0, stream>>>(
        got[o], want[o], *y, bitwise || y->exact, &slot->out[o]);
    if (with_values)
      problem_pick_kernel<<<1, 1, 0, stream>>>(got[o], want[o], y->dtype, &slot->out[o]);
  }
}

extern "C" cudaError_t runner_problem_check_reference(const struct runner_problem *p,
                                                      cudaStream_t stream) {
  problem_slot_reset_kernel<<<1, 32, 0, stream>>>(p->check);
  compare(p, p->ref_fresh, p->ref, !p->m.nondeterministic, false, p->check, stream);
  return cudaGetLastError();
}

extern "C" cudaError_t runner_problem_check_run(const struct runner_problem *p, uint32_t run,
                                                cudaStream_t stream) {
  problem_slot_reset_kernel<<<1, 32, 0, stream>>>(p->check);
  compare(p, p->out[run], p->ref_fresh, false, true, p->check, stream);
  return cudaGetLastError();
}

extern "C" cudaError_t runner_problem_check_fresh_inputs(const struct runner_problem *p,
                                                         uint64_t seed, uint32_t l,
                                                         cudaStream_t stream) {
  struct runner_problem_slot *slot = &p->slots[l];
  problem_slot_reset_kernel<<<1, 32, 0, stream>>>(slot);
  for (uint32_t i = 0; i < p->m.n_in; i++)
    problem_input_check_kernel<<<blocks_for(p->m.in[i].elems), PROBLEM_THREADS, 0, stream>>>(
        p->in[i], p->m.in[i], seed, i, &slot->in_bad[i], &slot->in_first[i]);
  return cudaGetLastError();
}

extern "C" cudaError_t runner_problem_check_fresh(const struct runner_problem *p, uint32_t run,
                                                  uint32_t l, cudaStream_t stream) {
  compare(p, p->out[run], p->ref_fresh, false, false, &p->slots[l], stream);
  return cudaGetLastError();
}

extern "C" int runner_problem_args(const struct runner_problem *p, void *const *outs,
                                   void *ptrs[2 * RUNNER_PROBLEM_MAX_BUFFERS],
                                   int32_t ints[RUNNER_PROBLEM_MAX_PARAMS], void **params) {
  int n = 0, k = 0;
  for (uint32_t i = 0; i < p->m.n_in; i++, k++) ptrs[k] = p->in[i], params[n++] = &ptrs[k];
  for (uint32_t o = 0; o < p->m.n_out; o++, k++) ptrs[k] = outs[o], params[n++] = &ptrs[k];
  for (uint32_t j = 0; j < p->m.n_params; j++) ints[j] = p->m.params[j], params[n++] = &ints[j];
  return n;
}

static double from_bits(unsigned long long b) {
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
}

extern "C" cudaError_t runner_problem_read_reference(const struct runner_problem *p,
                                                     struct runner_problem_ready_msg *ready) {
  struct runner_problem_slot h;
  cudaError_t e = cudaMemcpy(&h, p->check, sizeof h, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) return e;
  ready->agreed = 1;
  for (uint32_t o = 0; o < p->m.n_out && ready->agreed; o++)
    if (h.out[o].bad) {
      ready->agreed = 0, ready->output = o;
      ready->differ = h.out[o].bad, ready->index = h.out[o].first;
    }
  return cudaSuccess;
}

extern "C" cudaError_t runner_problem_read_run(const struct runner_problem *p,
                                               struct runner_problem_check *check) {
  struct runner_problem_slot h;
  cudaError_t e = cudaMemcpy(&h, p->check, sizeof h, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) return e;
  memset(check, 0, sizeof *check);
  for (uint32_t o = 0; o < p->m.n_out; o++) {
    const struct runner_problem_count *c = &h.out[o];
    check->compared += p->m.out[o].elems;
    if (c->bad && !check->mismatches) {
      check->first_output = o, check->first_index = c->first;
      check->got = c->got, check->want = c->want;
    }
    check->mismatches += c->bad;
    double a = from_bits(c->max_abs_bits), r = from_bits(c->max_rel_bits);
    check->max_abs_err = a > check->max_abs_err ? a : check->max_abs_err;
    check->max_rel_err = r > check->max_rel_err ? r : check->max_rel_err;
  }
  return cudaSuccess;
}

extern "C" cudaError_t runner_problem_read_fresh(const struct runner_problem *p, uint32_t n,
                                                 struct runner_done_msg *done) {
  if (n > p->n_slots) return cudaErrorInvalidValue;
  cudaError_t e = cudaMemcpy(p->h_slots, p->slots, (size_t)n * sizeof *p->h_slots,
                             cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) return e;
  done->fresh_checked = n;
  for (uint32_t l = 0; l < n && !done->bad_launch; l++) {
    const struct runner_problem_slot *s = &p->h_slots[l];
    for (uint32_t o = 0; o < p->m.n_out && !done->bad_launch; o++)
      if (s->out[o].bad) {
        done->bad_launch = l + 1, done->bad_what = 1, done->bad_input = o;
        done->bad_count = s->out[o].bad, done->bad_index = s->out[o].first;
      }
    for (uint32_t i = 0; i < p->m.n_in && !done->bad_launch; i++)
      if (s->in_bad[i]) {
        done->bad_launch = l + 1, done->bad_what = 2, done->bad_input = i;
        done->bad_count = s->in_bad[i], done->bad_index = s->in_first[i];
      }
  }
  return cudaSuccess;
}
