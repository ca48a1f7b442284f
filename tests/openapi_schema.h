/* A JSON-Schema subset validator for OpenAPI 3.0 documents, for test_openapi:
 * $ref (to "#/..." within the document), allOf, oneOf, anyOf, nullable, type,
 * enum, properties, required, additionalProperties, minProperties, maxProperties,
 * items, minItems, maxItems, uniqueItems, minimum, maximum, minLength, pattern and
 * format date-time. A schema keyword it does not know is an error, so a document
 * cannot promise more than the test checks. */
#ifndef GPULAB_TEST_OPENAPI_SCHEMA_H
#define GPULAB_TEST_OPENAPI_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The value a "#/a/b" reference names within doc (borrowed), or NULL. */
json_t *schema_ref(json_t *doc, const char *ref);
/* o itself, or what its $ref (and theirs) names; borrowed. */
json_t *schema_deref(json_t *doc, json_t *o);
/* Whether v is valid against schema (of doc); otherwise err (len bytes) says
 * where, starting from the path at ("$"), and why. */
bool schema_validate(json_t *doc, json_t *schema, json_t *v, const char *at, char *err, size_t len);

#endif
