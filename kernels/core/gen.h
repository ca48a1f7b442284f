/* One counter-based generator for inputs, compiled both as C and as CUDA, so the
 * CPU and GPU backends see bit-identical numbers for the same (seed, stream, index).
 * Value i depends only on its coordinates, so any thread can make any element. */
#ifndef GPULAB_GEN_H
#define GPULAB_GEN_H

#include <stdint.h>

#ifdef __CUDACC__
#define GEN_HD __host__ __device__ __forceinline__
#else
#define GEN_HD static inline
#endif

/* Input streams of one job: different tensors must not share numbers. */
enum gen_stream { GEN_A = 1, GEN_B = 2, GEN_X = 3 };

/* splitmix64's finalizer: a bijective 64-bit mix with good avalanche. */
GEN_HD uint64_t gen_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in [-1, 1) on a grid of 2^-23: exactly representable as float, so no
 * rounding differs between compilers. */
GEN_HD float gen_uniform(uint64_t seed, uint32_t stream, uint64_t index) {
  uint64_t key = gen_mix64(seed * 0x9E3779B97F4A7C15ull + stream);
  uint64_t bits = gen_mix64(key ^ (index * 0xD1B54A32D192ED03ull));
  int32_t q = (int32_t)(bits >> 40) - (1 << 23); /* 24 bits, centred */
  return (float)q * (1.0f / 8388608.0f);
}

#endif
