/* The API's error value: what went wrong with a request, as the HTTP layer will
 * answer it: an RFC 9457 problem details object (api_error_to_json). No HTTP here. */
#ifndef GPULAB_API_ERROR_H
#define GPULAB_API_ERROR_H

#include <stddef.h>

struct api_error {
  int status;        /* HTTP status to answer with */
  char code[40];     /* stable machine-readable code, e.g. "out_of_range" */
  char message[320]; /* one sentence for a person: the problem's "detail" */
  char field[64];    /* the offending field ("m", "params.radius"), or "" */
};

/* Fills err and returns the negative errno parsers answer with (-ENOMEM for
 * "out_of_memory", else -EINVAL), so they can `return api_error_set(...)`. message and
 * field are made valid UTF-8 (utf8.h): a character cut by their size is dropped. */
int api_error_set(struct api_error *err, int status, const char *code, const char *field,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The problem type's "title" for code: a short summary that is the same for every
 * occurrence. A code without one of its own gets its status's reason phrase
 * ("Bad Request"). Static: never freed. */
const char *api_error_title(const char *code, int status);

/* The problem type's URI for code: a reference into the OpenAPI document that gpulabd
 * serves, where the code is described
 * ("/openapi.json#/components/x-problem-types/<code>"), into buf. */
void api_error_type(const char *code, char *buf, size_t len);

#endif
