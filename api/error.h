/* The API's error value: what went wrong with a request, as the HTTP layer will
 * answer it ({"error": {"status", "code", "message", "field"}}). No HTTP here. */
#ifndef GPULAB_API_ERROR_H
#define GPULAB_API_ERROR_H

struct api_error {
  int status;         /* HTTP status to answer with */
  char code[40];      /* stable machine-readable code, e.g. "out_of_range" */
  char message[320];  /* one sentence for a person */
  char field[64];     /* the offending field ("m", "params.radius"), or "" */
};

/* Fills err and returns -1, so parsers can `return api_error_set(...)`. message and
 * field are made valid UTF-8 (utf8.h): a character cut by their size is dropped. */
int api_error_set(struct api_error *err, int status, const char *code, const char *field,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
