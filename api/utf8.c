/* UTF-8 validation and repair (utf8.h). */
#include "api/utf8.h"

#include <string.h>

size_t utf8_char_len(const char *text, size_t len) {
  const unsigned char *s = (const unsigned char *)text;
  if (len == 0) return 0;
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t n;
  unsigned lo = 0x80, hi = 0xbf; /* the range of the second byte */
  if (c >= 0xc2 && c <= 0xdf)
    n = 2;
  else if (c == 0xe0)
    n = 3, lo = 0xa0; /* no overlong forms */
  else if (c == 0xed)
    n = 3, hi = 0x9f; /* no surrogates */
  else if (c >= 0xe1 && c <= 0xef)
    n = 3;
  else if (c == 0xf0)
    n = 4, lo = 0x90;
  else if (c == 0xf4)
    n = 4, hi = 0x8f; /* nothing past U+10FFFF */
  else if (c >= 0xf1 && c <= 0xf3)
    n = 4;
  else
    return 0; /* a continuation byte, 0xc0, 0xc1 or 0xf5..0xff */
  if (len < n || s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < n; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  return n;
}

bool utf8_valid(const char *s) {
  size_t len = strlen(s);
  while (len) {
    size_t n = utf8_char_len(s, len);
    if (n == 0) return false;
    s += n;
    len -= n;
  }
  return true;
}

/* How many bytes at s (len available) are a character cut short: a lead byte and
 * the continuation bytes that follow it, fewer than it needs. 0 if not such a cut. */
static size_t cut_char_len(const unsigned char *s, size_t len) {
  size_t need = s[0] >= 0xf0 && s[0] <= 0xf4   ? 4
                : s[0] >= 0xe0 && s[0] <= 0xef ? 3
                : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
                                               : 0;
  if (need == 0) return 0;
  size_t have = 1;
  while (have < need && have < len && (s[have] & 0xc0) == 0x80) have++;
  return have < need ? have : 0;
}

size_t utf8_scrub(char *dst, size_t cap, const char *src) {
  static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
  size_t len = strlen(src), out = 0;
  while (len) {
    size_t n = utf8_char_len(src, len), cut = n ? 0 : cut_char_len((const unsigned char *)src, len);
    const char *put = n ? src : replacement;
    size_t put_len = n ? n : cut ? 0 : 3, skip = n ? n : cut ? cut : 1;
    if (out + put_len + 1 > cap) break; /* full: stop at a character boundary */
    memcpy(dst + out, put, put_len);
    out += put_len;
    src += skip;
    len -= skip;
  }
  if (cap) dst[out] = '\0';
  return out;
}

void utf8_scrub_in_place(char *s, size_t cap) {
  if (utf8_valid(s)) return;
  char copy[1024]; /* more than any message, code or field holds */
  size_t n = strlen(s);
  if (n >= sizeof copy) n = sizeof copy - 1;
  memcpy(copy, s, n);
  copy[n] = '\0';
  utf8_scrub(s, cap, copy);
}
