/* Compact JSON text of a jansson value (json_text.h). */
#include "api/json_text.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool json_text_grow(struct json_text_buf *t, size_t more) {
  if (t->failed) return false;
  if (t->len + more + 1 <= t->cap) return true;
  size_t cap = t->cap ? t->cap : 1024;
  while (cap < t->len + more + 1) cap *= 2;
  char *at = t->borrowed ? malloc(cap) : realloc(t->at, cap);
  if (!at) {
    t->failed = true;
    return false;
  }
  if (t->borrowed) memcpy(at, t->at, t->len);
  t->at = at;
  t->cap = cap;
  t->borrowed = false;
  return true;
}

/* Length of the UTF-8 sequence at s (at most n bytes) whose first byte is >= 0x80, or
 * 0 when it is not one jansson accepts: no overlong forms, no surrogates, nothing past
 * U+10FFFF. */
static size_t utf8_sequence(const unsigned char *s, size_t n) {
  size_t len = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : 2;
  if (s[0] < 0xC2 || s[0] > 0xF4 || n < len) return 0;
  uint32_t cp = s[0] & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3F);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return len;
}

/* Bytes that a string cannot copy as they are: control characters, '"' (0x22), '\\'
 * (0x5C), and UTF-8's (0x80 up, checked). */
static const bool special[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

/* Whether the 8 bytes of x are all plain ASCII (none >= 0x80, < 0x20, '"' or '\\'):
 * (v - 0x01..) & ~v & 0x80.. is nonzero exactly when a byte of v is zero, and
 * (v - n * 0x01..) & ~v & 0x80.. when one is below n (n <= 0x80). */
static bool plain8(uint64_t x) {
  const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
  uint64_t quote = x ^ (ones * '"'), backslash = x ^ (ones * '\\');
  return ((x | ((x - ones * 0x20) & ~x) | ((quote - ones) & ~quote) |
           ((backslash - ones) & ~backslash)) &
          highs) == 0;
}

/* Runs of plain bytes copied whole; '"', '\\' and control characters escaped as jansson
 * does (\b \f \n \r \t, else \u00XX in capitals). */
bool json_text_put_string(struct json_text_buf *t, const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0; /* most strings (keys, names, words) are plain ASCII: one copy */
  for (uint64_t x; i + 8 <= n && (memcpy(&x, s + i, 8), plain8(x));) i += 8;
  while (i < n && !special[s[i]]) i++;
  if (i == n) {
    if (!json_text_reserve(t, n + 2)) return true;
    char *out = t->at + t->len;
    out[0] = '"';
    memcpy(out + 1, str, n);
    out[n + 1] = '"';
    t->len += n + 2;
    return true;
  }
  json_text_put_char(t, '"');
  size_t run = 0; /* start of the plain bytes not yet copied */
  for (; i < n && !t->failed;) {
    unsigned char c = s[i];
    if (c >= 0x80) {
      size_t len = utf8_sequence(s + i, n - i);
      if (!len) return false;
      i += len;
      continue;
    }
    if (!special[c]) {
      i++;
      continue;
    }
    json_text_put(t, str + run, i - run);
    char esc[8];
    const char *named = c == '"'    ? "\\\""
                        : c == '\\' ? "\\\\"
                        : c == '\b' ? "\\b"
                        : c == '\f' ? "\\f"
                        : c == '\n' ? "\\n"
                        : c == '\r' ? "\\r"
                        : c == '\t' ? "\\t"
                                    : NULL;
    if (!named) snprintf(esc, sizeof esc, "\\u%04X", (unsigned)c);
    json_text_put(t, named ? named : esc, named ? 2 : 6);
    run = ++i;
  }
  json_text_put(t, str + run, n - run);
  json_text_put_char(t, '"');
  return true;
}

/* printf's %lld, without printf. */
int json_text_integer(long long v, char *out) {
  char digits[24];
  unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
  int n = 0, len = 0;
  do digits[n++] = (char)('0' + u % 10);
  while ((u /= 10) != 0);
  if (v < 0) out[len++] = '-';
  while (n) out[len++] = digits[--n];
  out[len] = '\0';
  return len;
}

__extension__ typedef unsigned __int128 u128;

/* v's %.17g as json_text_real writes it, exactly in 128-bit integers, for 1e-6 <= |v| <
 * 1e16 (timings, rates, ratios): 0 elsewhere (printf's then). |v| = m * 2^e, and its 17
 * significant digits are N = m * 2^e * 10^(16 - X), 10^X <= |v| < 10^(X + 1), rounded
 * half to even as printf rounds (in the default rounding mode); then %g's layout:
 * fixed unless X < -4, trailing zeros dropped. */
static int real_exact(double v, char *out) {
  static const u128 p10[23] = {1u,
                               10u,
                               100u,
                               1000u,
                               10000u,
                               100000u,
                               1000000u,
                               10000000u,
                               100000000u,
                               1000000000u,
                               10000000000u,
                               100000000000u,
                               1000000000000u,
                               10000000000000u,
                               100000000000000u,
                               1000000000000000u,
                               10000000000000000u,
                               100000000000000000u,
                               1000000000000000000u,
                               10000000000000000000u,
                               (u128)10000000000000000000u * 10,
                               (u128)10000000000000000000u * 100,
                               (u128)10000000000000000000u * 1000};
  const u128 lo = p10[16], hi = p10[17];
  double a = fabs(v);
  if (!(a >= 1e-6 && a < 1e16)) return 0;
  uint64_t bits;
  memcpy(&bits, &a, sizeof bits);
  uint64_t m = (bits & ((1ull << 52) - 1)) | 1ull << 52;
  int shift = 1075 - (int)(bits >> 52); /* |v| = m / 2^shift; -1 <= shift <= 73 here */
  int x = (int)floor(log10(a));         /* an estimate, set right below */
  u128 n = 0, rest = 0, half = 1;
  for (int tries = 0;; tries++) {
    if (tries == 3 || x < -6 || x > 15) return 0;
    u128 p = m * p10[16 - x]; /* < 2^53 * 10^22 < 2^127 */
    if (shift <= 0) {
      n = p << -shift;
    } else {
      n = p >> shift;
      rest = p & (((u128)1 << shift) - 1);
      half = (u128)1 << (shift - 1);
    }
    if (n >= hi)
      x++;
    else if (n < lo)
      x--;
    else
      break;
  }
  if (rest > half || (rest == half && (n & 1))) n++;
  if (n == hi) {
    n = lo;
    x++;
  }
  char d[17]; /* the digits; significant: those before the trailing zeros */
  uint64_t left = (uint64_t)n;
  for (int i = 16; i >= 0; i--, left /= 10) d[i] = (char)('0' + left % 10);
  int sig = 17;
  while (sig > 1 && d[sig - 1] == '0') sig--;
  char *o = out;
  if (v < 0) *o++ = '-';
  if (x < -4) { /* d.ddde-5 or e-6 */
    *o++ = d[0];
    if (sig > 1) *o++ = '.';
    memcpy(o, d + 1, (size_t)(sig - 1));
    o += sig - 1;
    memcpy(o, x == -5 ? "e-5" : "e-6", 3);
    o += 3;
  } else if (x < 0) { /* 0.000ddd */
    memcpy(o, "0.000", (size_t)(1 - x));
    o += 1 - x;
    memcpy(o, d, (size_t)sig);
    o += sig;
  } else { /* ddd.ddd, or ddd.0 when integral */
    memcpy(o, d, (size_t)(x + 1));
    o += x + 1;
    *o++ = '.';
    if (sig > x + 1) {
      memcpy(o, d + x + 1, (size_t)(sig - x - 1));
      o += sig - x - 1;
    } else {
      *o++ = '0';
    }
  }
  *o = '\0';
  return (int)(o - out);
}

int json_text_real(double v, char *out) {
  /* Integral values up to 2^53 (a work's bytes, counts, 0.0) read the same as their
   * integer and printf would print no exponent for them: no printf. -0.0 is printf's. */
  if (v > -9007199254740992.0 && v < 9007199254740992.0 && v == (double)(long long)v &&
      (v != 0 || !signbit(v))) {
    int len = json_text_integer((long long)v, out);
    memcpy(out + len, ".0", 3);
    return len + 2;
  }
  int n = real_exact(v, out);
  if (n > 0) return n;
  n = strfromd(out, 32, "%.17g", v); /* printf's digits, without its format parsing */
  char *e = strchr(out, 'e');
  if (!e && !strchr(out, '.')) { /* integral: a real still reads back as a real */
    memcpy(out + n, ".0", 3);
    return n + 2;
  }
  if (!e) return n;
  /* The exponent without its '+' and leading zeros: e+17 is e17, e-05 is e-5. */
  char *digits = e + 1 + (e[1] == '-'), *from = e + 2;
  while (*from == '0' && from[1]) from++;
  memmove(digits, from, strlen(from) + 1);
  return (int)strlen(out);
}

static void put_value(struct json_text_buf *t, const json_t *j) {
  char num[40];
  switch (json_typeof(j)) {
  case JSON_OBJECT: {
    json_text_put_char(t, '{');
    for (void *it = json_object_iter((json_t *)j); it && !t->failed;) {
      if (!json_text_put_string(t, json_object_iter_key(it), json_object_iter_key_len(it)))
        t->failed = true;
      json_text_put_char(t, ':');
      put_value(t, json_object_iter_value(it));
      it = json_object_iter_next((json_t *)j, it);
      if (it) json_text_put_char(t, ',');
    }
    json_text_put_char(t, '}');
    break;
  }
  case JSON_ARRAY: {
    json_text_put_char(t, '[');
    size_t n = json_array_size(j);
    for (size_t i = 0; i < n && !t->failed; i++) {
      if (i) json_text_put_char(t, ',');
      put_value(t, json_array_get(j, i));
    }
    json_text_put_char(t, ']');
    break;
  }
  case JSON_STRING:
    if (!json_text_put_string(t, json_string_value(j), json_string_length(j))) t->failed = true;
    break;
  case JSON_INTEGER:
    json_text_put(t, num, (size_t)json_text_integer(json_integer_value(j), num));
    break;
  case JSON_REAL: json_text_put(t, num, (size_t)json_text_real(json_real_value(j), num)); break;
  case JSON_TRUE: json_text_put(t, "true", 4); break;
  case JSON_FALSE: json_text_put(t, "false", 5); break;
  case JSON_NULL: json_text_put(t, "null", 4); break;
  }
}

char *json_text(const json_t *j, size_t *len) {
  if (!j) return NULL;
  struct json_text_buf t = {0};
  put_value(&t, j);
  if (!json_text_reserve(&t, 0)) {
    free(t.at);
    return NULL;
  }
  t.at[t.len] = '\0';
  if (len) *len = t.len;
  return t.at;
}
