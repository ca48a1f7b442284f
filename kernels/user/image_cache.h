/* Compiled users' kernels, kept in memory by a SHA-256 (OpenSSL's libcrypto) of what
 * decides the image: the source, the entry, the signature's declaration, the options
 * in order, the architecture and NVRTC's version. A kernel sent again, or another
 * user's identical one, is not compiled again. Bounded in bytes; the least recently
 * used entry goes first. Failed compiles are kept too (their log is the answer);
 * cancelled ones not. */
#ifndef GPULAB_IMAGE_CACHE_H
#define GPULAB_IMAGE_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include "kernels/user/ucompile.h"

#ifdef __cplusplus
extern "C" {
#endif

#define IMAGE_KEY_BYTES 32

struct image_cache;

/* SHA-256 of data[0..n) into out. Returns 0 or -EIO (libcrypto failed). */
int image_sha256(const void *data, size_t n, uint8_t out[IMAGE_KEY_BYTES]);
/* The lower-case hex of a digest: 64 characters and a NUL. */
void image_key_hex(const uint8_t key[IMAGE_KEY_BYTES], char hex[2 * IMAGE_KEY_BYTES + 1]);
/* The cache key of req compiled by NVRTC major.minor: each field length-prefixed, so
 * that no two different requests share an encoding. Returns 0 or -EIO. */
int image_cache_key(const struct ucompile_req *req, int nvrtc_major, int nvrtc_minor,
                    uint8_t key[IMAGE_KEY_BYTES]);

/* A cache of at most max_bytes (images and logs counted). Returns 0 with *out
 * (image_cache_free it) or -ENOMEM. */
int image_cache_new(size_t max_bytes, struct image_cache **out);
void image_cache_free(struct image_cache *c); /* NULL is a no-op */

/* A copy of the report cached under key into *out (the caller frees it with
 * ucompile_report_free): 0, -ENOENT when none is, -ENOMEM. Thread-safe. */
int image_cache_get(struct image_cache *c, const uint8_t key[IMAGE_KEY_BYTES],
                    struct ucompile_report **out);
/* Keeps a copy of r under key (replacing one there), evicting the least recently used
 * entries to stay within max_bytes; a report larger than the whole cache, or one that
 * timed out, is not kept. r stays the caller's. Returns 0 or -ENOMEM. Thread-safe. */
int image_cache_put(struct image_cache *c, const uint8_t key[IMAGE_KEY_BYTES],
                    const struct ucompile_report *r);

struct image_cache_stats {
  uint64_t hits, misses, entries, bytes, evictions;
};
void image_cache_stats(struct image_cache *c, struct image_cache_stats *s);

/* Compiles req through the cache: a cached report when there is one (*cached true),
 * else ucompile_run and, when it did not fail or time out, keeps the result. c may be
 * NULL (no cache). Returns as ucompile_run. */
int image_cache_compile(struct image_cache *c, const struct nvrtc_lib *lib,
                        const struct ucompile_req *req, struct ucompile_report **out, bool *cached,
                        char *msg, size_t msg_len);

#ifdef __cplusplus
}
#endif
#endif
