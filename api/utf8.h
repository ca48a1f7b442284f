/* UTF-8 for text that goes into JSON: jansson refuses a string that is not valid
 * UTF-8, and requests bring any bytes (a path with %ff, a name cut by a length
 * limit). Plain C, no allocation. */
#ifndef GPULAB_API_UTF8_H
#define GPULAB_API_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* The length (1..4) of the valid UTF-8 character at s (len bytes available), or 0
 * when s does not start one: a stray or invalid byte, an overlong form, a surrogate,
 * past U+10FFFF, or a character cut short by the end. */
size_t utf8_char_len(const char *s, size_t len);

/* True when s (NUL-terminated) is valid UTF-8 throughout. */
bool utf8_valid(const char *s);

/* Copies src (NUL-terminated) into dst (cap >= 1 bytes, always NUL-terminated) as
 * valid UTF-8: valid characters as they are; a character cut short (its lead byte
 * and fewer continuation bytes than it needs, as a byte limit leaves it) dropped;
 * every other invalid byte as U+FFFD. dst is cut at a character boundary when it is
 * full. dst and src must not overlap. Returns the bytes written (without the NUL). */
size_t utf8_scrub(char *dst, size_t cap, const char *src);

/* utf8_scrub in place, for a buffer of cap bytes holding a string (its first 1023
 * bytes): the result may grow (U+FFFD is 3 bytes), up to cap. */
void utf8_scrub_in_place(char *s, size_t cap);

#endif
