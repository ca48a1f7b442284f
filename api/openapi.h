/* The OpenAPI 3.1 document of gpulabd's API (api/openapi.json), built into the
 * binary by api/openapi.cmake so that GET /openapi.json serves exactly the file
 * the tests check responses against. */
#ifndef GPULAB_API_OPENAPI_H
#define GPULAB_API_OPENAPI_H

#include <stddef.h>

/* The document's bytes (valid JSON, checked at build time), NUL-terminated;
 * api_openapi_json_len excludes the NUL. Static: never freed. */
extern const unsigned char api_openapi_json[];
extern const size_t api_openapi_json_len;

#endif
