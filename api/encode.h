/* Result encoding: experiments, results and devices as JSON. Each document is written
 * once, to a JSON writer (api/json_writer.h: text, or a jansson tree); the *_to_json
 * functions return its tree, a new reference the caller owns (json_decref), or NULL
 * when memory ran out. The *_write functions write it to w as key's value (key: as
 * json_writer.h's). */
#ifndef GPULAB_API_ENCODE_H
#define GPULAB_API_ENCODE_H

#include <jansson.h>
#include "api/error.h"
#include "api/json_writer.h"
#include "kernels/backends/backend.h"
#include "kernels/core/experiment.h"

/* The effective params of spec (defaults filled in), as a request would give them;
 * nothing (NULL) for an unknown type. */
void api_spec_write(struct jw *w, const char *key, const struct exp_spec *spec);
json_t *api_spec_to_json(const struct exp_spec *spec);
/* {"backend", "device", "unit", "runs": [...]}: the lecture's table as data. */
void api_result_write(struct jw *w, const char *key, const struct exp_spec *spec,
                      const struct exp_result *result);
json_t *api_result_to_json(const struct exp_spec *spec, const struct exp_result *result);
void api_device_write(struct jw *w, const char *key, const struct backend_device_info *info);
json_t *api_device_to_json(const struct backend_device_info *info);
/* err as RFC 9457 problem details (application/problem+json): {"type", "title",
 * "status", "detail", "instance", "code", "field"}, with code and field (null when
 * empty) as extension members. instance is the URI reference of the request that
 * failed (its path); it is percent-encoded here where it needs to be. */
json_t *api_error_to_json(const struct api_error *err, const char *instance);

/* Formats a unix time (seconds, with fraction) as RFC 3339 UTC with milliseconds,
 * e.g. "2026-11-29T15:04:05.123Z", into buf (at least 32 bytes). */
void api_format_time(double unix_s, char *buf, size_t len);

#endif
