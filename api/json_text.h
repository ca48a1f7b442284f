/* Compact JSON text of a jansson value, the same bytes as json_dumps(j, JSON_COMPACT |
 * JSON_ENCODE_ANY) but several times faster: one pass into one growing buffer, where
 * jansson's dump calls back per piece, checks for cycles through a hash table per
 * container and decodes every character's UTF-8. A finished job's document is made
 * once per job (its record and its answer), which made json_dumps a fifth of a tiny
 * job's server time (perf on the H200). Values with a cycle are not supported (jansson
 * refuses them; gpulab never builds one). */
#ifndef GPULAB_API_JSON_TEXT_H
#define GPULAB_API_JSON_TEXT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* The text of j (any value), malloc'd and NUL-terminated (the caller frees it), its
 * length in *len when len is not NULL; NULL when j is NULL, when a string in it is not
 * valid UTF-8 (as json_dumps), or when memory ran out. j is borrowed. */
char *json_text(const json_t *j, size_t *len);

/* The text of a real as json_dumps writes it (jansson 2.14 without dtoa): printf's
 * %.17g, ".0" after an integral value, the exponent without '+' or leading zeros
 * ("1e-05" is "1e-5"). out holds at least 32 bytes; returns the length. v finite. */
int json_text_real(double v, char *out);

/* The pieces json_text writes with, which api/json_writer.c's text back-end writes with
 * too (the same bytes from both). */

/* Text being written: at[0..len), room for cap bytes. at is malloc'd, or the caller's
 * (borrowed: on growth its bytes are copied into a malloc'd buffer and at stops being
 * theirs). failed: memory ran out, or the writer gave up: nothing more is written. */
struct json_text_buf {
  char *at;
  size_t len, cap;
  bool borrowed, failed;
};

/* Makes room for more bytes and a NUL after them; false when memory ran out (t->failed
 * set). */
bool json_text_grow(struct json_text_buf *t, size_t more);

static inline bool json_text_reserve(struct json_text_buf *t, size_t more) {
  return !t->failed && t->len + more + 1 <= t->cap ? true : json_text_grow(t, more);
}

static inline void json_text_put(struct json_text_buf *t, const char *s, size_t n) {
  if (!json_text_reserve(t, n)) return;
  memcpy(t->at + t->len, s, n);
  t->len += n;
}

static inline void json_text_put_char(struct json_text_buf *t, char c) {
  if (!json_text_reserve(t, 1)) return;
  t->at[t->len++] = c;
}

/* s (n bytes) as a JSON string, quotes and escapes as jansson writes them. Returns false
 * when s is not valid UTF-8 (jansson's rule), its text then cut short: the caller drops
 * or fails what it wrote. */
bool json_text_put_string(struct json_text_buf *t, const char *s, size_t n);

/* v in decimal at out (at least 21 bytes, NUL-terminated); returns the length. */
int json_text_integer(long long v, char *out);

#endif
