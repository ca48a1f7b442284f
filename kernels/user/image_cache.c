/* The image cache (image_cache.h): a list in recency order under one mutex; a handful
 * to a few thousand entries, so a linear search costs less than a compile by far. */
#include "kernels/user/image_cache.h"

#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int image_sha256(const void *data, size_t n, uint8_t out[IMAGE_KEY_BYTES]) {
  unsigned int len = 0;
  return EVP_Digest(data, n, out, &len, EVP_sha256(), NULL) == 1 && len == IMAGE_KEY_BYTES ? 0
                                                                                           : -EIO;
}

void image_key_hex(const uint8_t key[IMAGE_KEY_BYTES], char hex[2 * IMAGE_KEY_BYTES + 1]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < IMAGE_KEY_BYTES; i++) {
    hex[2 * i] = digits[key[i] >> 4];
    hex[2 * i + 1] = digits[key[i] & 15];
  }
  hex[2 * IMAGE_KEY_BYTES] = '\0';
}

/* Feeds one field: its length (8 bytes, little-endian) and its bytes. */
static int feed(EVP_MD_CTX *ctx, const void *p, size_t n) {
  uint8_t len[8];
  for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)n >> (8 * i));
  return EVP_DigestUpdate(ctx, len, sizeof len) == 1 &&
         (n == 0 || EVP_DigestUpdate(ctx, p, n) == 1);
}
static int feed_str(EVP_MD_CTX *ctx, const char *s) {
  return feed(ctx, s ? s : "", s ? strlen(s) : 0);
}

int image_cache_key(const struct ucompile_req *req, int nvrtc_major, int nvrtc_minor,
                    uint8_t key[IMAGE_KEY_BYTES]) {
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  if (!ctx) return -EIO;
  int ints[4] = {req->arch, nvrtc_major, nvrtc_minor, req->n_options};
  int ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 && feed_str(ctx, "gpulab-image-1") &&
           feed_str(ctx, req->source) && feed_str(ctx, req->entry) &&
           feed_str(ctx, req->declaration) && feed_str(ctx, req->signature_of) &&
           feed(ctx, ints, sizeof ints);
  for (int i = 0; ok && i < req->n_options; i++) ok = feed_str(ctx, req->options[i]);
  unsigned int len = 0;
  ok = ok && EVP_DigestFinal_ex(ctx, key, &len) == 1 && len == IMAGE_KEY_BYTES;
  EVP_MD_CTX_free(ctx);
  return ok ? 0 : -EIO;
}

struct entry {
  uint8_t key[IMAGE_KEY_BYTES];
  struct ucompile_report *r;
  size_t bytes;
  struct entry *prev, *next; /* prev: more recently used */
};

struct image_cache {
  pthread_mutex_t mu;
  size_t max_bytes;
  struct entry *head, *tail; /* head: most recently used */
  struct image_cache_stats stats;
};

static size_t report_bytes(const struct ucompile_report *r) {
  return sizeof *r + r->image_bytes + (r->log ? strlen(r->log) + 1 : 0) +
         (r->ptx ? strlen(r->ptx) + 1 : 0);
}

/* A deep copy of r, or NULL when memory ran out. */
static struct ucompile_report *report_copy(const struct ucompile_report *r) {
  struct ucompile_report *c = malloc(sizeof *c);
  if (!c) return NULL;
  *c = *r;
  c->log = r->log ? strdup(r->log) : NULL;
  c->ptx = r->ptx ? strdup(r->ptx) : NULL;
  c->image = r->image_bytes ? malloc(r->image_bytes) : NULL;
  if ((r->log && !c->log) || (r->ptx && !c->ptx) || (r->image_bytes && !c->image)) {
    free(c->log);
    free(c->ptx);
    free(c->image);
    free(c);
    return NULL;
  }
  if (c->image) memcpy(c->image, r->image, r->image_bytes);
  return c;
}

int image_cache_new(size_t max_bytes, struct image_cache **out) {
  struct image_cache *c = calloc(1, sizeof *c);
  if (!c) return -ENOMEM;
  pthread_mutex_init(&c->mu, NULL);
  c->max_bytes = max_bytes;
  *out = c;
  return 0;
}

static void unlink_entry(struct image_cache *c, struct entry *e) {
  if (e->prev)
    e->prev->next = e->next;
  else
    c->head = e->next;
  if (e->next)
    e->next->prev = e->prev;
  else
    c->tail = e->prev;
  e->prev = e->next = NULL;
}

static void push_front(struct image_cache *c, struct entry *e) {
  e->prev = NULL;
  e->next = c->head;
  if (c->head) c->head->prev = e;
  c->head = e;
  if (!c->tail) c->tail = e;
}

static void drop(struct image_cache *c, struct entry *e) {
  unlink_entry(c, e);
  c->stats.entries--;
  c->stats.bytes -= e->bytes;
  ucompile_report_free(e->r);
  free(e);
}

void image_cache_free(struct image_cache *c) {
  if (!c) return;
  while (c->head) drop(c, c->head);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

static struct entry *find(struct image_cache *c, const uint8_t key[IMAGE_KEY_BYTES]) {
  for (struct entry *e = c->head; e; e = e->next)
    if (!memcmp(e->key, key, IMAGE_KEY_BYTES)) return e;
  return NULL;
}

int image_cache_get(struct image_cache *c, const uint8_t key[IMAGE_KEY_BYTES],
                    struct ucompile_report **out) {
  *out = NULL;
  int rc = -ENOENT;
  pthread_mutex_lock(&c->mu);
  struct entry *e = find(c, key);
  if (e) {
    unlink_entry(c, e);
    push_front(c, e);
    *out = report_copy(e->r);
    rc = *out ? 0 : -ENOMEM;
    c->stats.hits++;
  } else {
    c->stats.misses++;
  }
  pthread_mutex_unlock(&c->mu);
  return rc;
}

int image_cache_put(struct image_cache *c, const uint8_t key[IMAGE_KEY_BYTES],
                    const struct ucompile_report *r) {
  size_t bytes = report_bytes(r);
  if (r->timed_out || bytes > c->max_bytes) return 0;
  struct entry *e = calloc(1, sizeof *e);
  struct ucompile_report *copy = report_copy(r);
  if (!e || !copy) {
    free(e);
    ucompile_report_free(copy);
    return -ENOMEM;
  }
  memcpy(e->key, key, IMAGE_KEY_BYTES);
  e->r = copy;
  e->bytes = bytes;
  pthread_mutex_lock(&c->mu);
  struct entry *old = find(c, key);
  if (old) drop(c, old);
  while (c->tail && c->stats.bytes + bytes > c->max_bytes) {
    drop(c, c->tail);
    c->stats.evictions++;
  }
  push_front(c, e);
  c->stats.entries++;
  c->stats.bytes += bytes;
  pthread_mutex_unlock(&c->mu);
  return 0;
}

void image_cache_stats(struct image_cache *c, struct image_cache_stats *s) {
  pthread_mutex_lock(&c->mu);
  *s = c->stats;
  pthread_mutex_unlock(&c->mu);
}

int image_cache_compile(struct image_cache *c, const struct nvrtc_lib *lib,
                        const struct ucompile_req *req, struct ucompile_report **out, bool *cached,
                        char *msg, size_t msg_len) {
  *cached = false;
  uint8_t key[IMAGE_KEY_BYTES];
  if (c && image_cache_key(req, lib->major, lib->minor, key) == 0) {
    /* A cached report answers only a request whose options pass today's checks. */
    int rc = ucompile_options_check(req->options, req->n_options, msg, msg_len);
    if (rc) return rc;
    if (image_cache_get(c, key, out) == 0) {
      *cached = true;
      return 0;
    }
  } else {
    c = NULL;
  }
  int rc = ucompile_run(lib, req, out, msg, msg_len);
  if (rc == 0 && c) image_cache_put(c, key, *out); /* a failed put only costs a compile */
  return rc;
}
