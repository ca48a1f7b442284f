/* Compact JSON text of a jansson value, the same bytes as json_dumps(j, JSON_COMPACT |
 * JSON_ENCODE_ANY) but several times faster: one pass into one growing buffer, where
 * jansson's dump calls back per piece, checks for cycles through a hash table per
 * container and decodes every character's UTF-8. A finished job's document is made
 * once per job (its record and its answer), which made json_dumps a fifth of a tiny
 * job's server time (bench/RESULTS.md). Values with a cycle are not supported (jansson
 * refuses them; gpulab never builds one). */
#ifndef GPULAB_API_JSON_TEXT_H
#define GPULAB_API_JSON_TEXT_H

#include <jansson.h>
#include <stddef.h>

/* The text of j (any value), malloc'd and NUL-terminated (the caller frees it), its
 * length in *len when len is not NULL; NULL when j is NULL, when a string in it is not
 * valid UTF-8 (as json_dumps), or when memory ran out. j is borrowed. */
char *json_text(const json_t *j, size_t *len);

/* The text of a real as json_dumps writes it (jansson 2.14 without dtoa): printf's
 * %.17g, ".0" after an integral value, the exponent without '+' or leading zeros
 * ("1e-05" is "1e-5"). out holds at least 32 bytes; returns the length. v finite. */
int json_text_real(double v, char *out);

#endif
