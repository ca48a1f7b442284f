/* A JSON-Schema subset validator for OpenAPI 3.0 documents (openapi_schema.h). */
#include "openapi_schema.h"

#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "http_client.h"

json_t *schema_ref(json_t *doc, const char *ref) {
  if (!ref || strncmp(ref, "#/", 2) != 0) return NULL;
  json_t *cur = doc;
  for (const char *p = ref + 2; cur && *p;) {
    char key[128];
    size_t n = 0;
    for (; *p && *p != '/' && n < sizeof key - 1; n++)
      if (p[0] == '~' && (p[1] == '0' || p[1] == '1')) {
        key[n] = p[1] == '0' ? '~' : '/';
        p += 2;
      } else {
        key[n] = *p++;
      }
    key[n] = '\0';
    if (*p == '/') p++;
    cur = json_object_get(cur, key);
  }
  return cur;
}

json_t *schema_deref(json_t *doc, json_t *o) {
  for (int i = 0; i < 8 && json_is_object(o) && json_object_get(o, "$ref"); i++)
    o = schema_ref(doc, json_string_value(json_object_get(o, "$ref")));
  return o;
}

static bool fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(char *err, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, len, fmt, ap);
  va_end(ap);
  return false;
}

static const char *kind(const json_t *v) {
  static const char *const names[] = {"object", "array", "string", "integer",
                                      "number", "true",  "false",  "null"};
  return names[json_typeof(v)];
}

static bool known_keyword(const char *k) {
  static const char *const known[] = {
      "$ref",          "allOf",         "oneOf",      "anyOf",     "nullable",
      "type",          "enum",          "properties", "required",  "additionalProperties",
      "minProperties", "maxProperties", "items",      "minItems",  "maxItems",
      "uniqueItems",   "minimum",       "maximum",    "minLength", "pattern",
      "format",        "description",   "default",    "example",   "title"};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (strcmp(k, known[i]) == 0) return true;
  return strncmp(k, "x-", 2) == 0;
}

static bool type_ok(const char *type, const json_t *v) {
  if (!strcmp(type, "object")) return json_is_object(v);
  if (!strcmp(type, "array")) return json_is_array(v);
  if (!strcmp(type, "string")) return json_is_string(v);
  if (!strcmp(type, "integer")) return json_is_integer(v);
  if (!strcmp(type, "number")) return json_is_number(v);
  if (!strcmp(type, "boolean")) return json_is_boolean(v);
  return false;
}

/* v < bound (-1), == (0) or > (1); integers compared exactly. */
static int compare(const json_t *v, const json_t *bound) {
  if (json_is_integer(v) && json_is_integer(bound))
    return json_integer_value(v) < json_integer_value(bound)
               ? -1
               : json_integer_value(v) > json_integer_value(bound);
  double a = json_number_value(v), b = json_number_value(bound);
  return a < b ? -1 : a > b;
}

static bool validate(json_t *doc, json_t *s, json_t *v, const char *at, char *err, size_t len);

/* oneOf (exactly one branch) or anyOf (at least one). */
static bool validate_branches(json_t *doc, json_t *branches, bool exactly_one, json_t *v, const char *at,
                              char *err, size_t len) {
  char why[2048] = "", one[1024];
  size_t i, used = 0;
  int matched = 0;
  json_t *b;
  json_array_foreach(branches, i, b) {
    if (validate(doc, b, v, at, one, sizeof one))
      matched++;
    else if (used < sizeof why)
      used += (size_t)snprintf(why + used, sizeof why - used, "\n    [%zu] %.300s", i, one);
  }
  if (exactly_one ? matched == 1 : matched >= 1) return true;
  return fail(err, len, "%s: matches %d of the %s branches (%s)%s", at, matched,
              exactly_one ? "oneOf" : "anyOf", exactly_one ? "exactly one must" : "one must", why);
}

static bool validate_object(json_t *doc, json_t *s, json_t *v, const char *at, char *err, size_t len) {
  json_t *props = json_object_get(s, "properties"), *extra = json_object_get(s, "additionalProperties");
  size_t i;
  json_t *x;
  json_array_foreach(json_object_get(s, "required"), i, x)
    if (!json_object_get(v, json_string_value(x)))
      return fail(err, len, "%s: the required field '%s' is missing", at, json_string_value(x));
  json_t *lo = json_object_get(s, "minProperties"), *hi = json_object_get(s, "maxProperties");
  if ((lo && (json_int_t)json_object_size(v) < json_integer_value(lo)) ||
      (hi && (json_int_t)json_object_size(v) > json_integer_value(hi)))
    return fail(err, len, "%s: %zu fields, outside %lld..%lld", at, json_object_size(v),
                lo ? (long long)json_integer_value(lo) : 0LL, hi ? (long long)json_integer_value(hi) : -1LL);
  const char *key;
  json_object_foreach(v, key, x) {
    char sub[512];
    snprintf(sub, sizeof sub, "%s.%s", at, key);
    json_t *ps = json_object_get(props, key);
    if (ps) {
      if (!validate(doc, ps, x, sub, err, len)) return false;
    } else if (json_is_false(extra)) {
      return fail(err, len, "%s: field '%s' is not documented (the object is closed)", at, key);
    } else if (json_is_object(extra) && !validate(doc, extra, x, sub, err, len)) {
      return false;
    }
  }
  return true;
}

static bool validate_array(json_t *doc, json_t *s, json_t *v, const char *at, char *err, size_t len) {
  json_t *lo = json_object_get(s, "minItems"), *hi = json_object_get(s, "maxItems"),
         *items = json_object_get(s, "items");
  size_t n = json_array_size(v), i;
  if (lo && (json_int_t)n < json_integer_value(lo))
    return fail(err, len, "%s: %zu items, fewer than %lld", at, n, (long long)json_integer_value(lo));
  if (hi && (json_int_t)n > json_integer_value(hi))
    return fail(err, len, "%s: %zu items, more than %lld", at, n, (long long)json_integer_value(hi));
  if (json_is_true(json_object_get(s, "uniqueItems")))
    for (i = 0; i < n; i++)
      for (size_t j = i + 1; j < n; j++)
        if (json_equal(json_array_get(v, i), json_array_get(v, j)))
          return fail(err, len, "%s: items %zu and %zu are equal", at, i, j);
  json_t *x;
  json_array_foreach(v, i, x) {
    char sub[512];
    snprintf(sub, sizeof sub, "%s[%zu]", at, i);
    if (items && !validate(doc, items, x, sub, err, len)) return false;
  }
  return true;
}

static bool validate_scalar(json_t *s, json_t *v, const char *at, char *err, size_t len) {
  json_t *lo = json_object_get(s, "minimum"), *hi = json_object_get(s, "maximum");
  if (json_is_number(v) && lo && compare(v, lo) < 0) return fail(err, len, "%s: below the minimum", at);
  if (json_is_number(v) && hi && compare(v, hi) > 0) return fail(err, len, "%s: above the maximum", at);
  if (!json_is_string(v)) return true;
  const char *text = json_string_value(v), *format = json_string_value(json_object_get(s, "format"));
  json_t *min_len = json_object_get(s, "minLength"), *pattern = json_object_get(s, "pattern");
  if (min_len && (json_int_t)strlen(text) < json_integer_value(min_len))
    return fail(err, len, "%s: shorter than %lld", at, (long long)json_integer_value(min_len));
  if (format && !strcmp(format, "date-time") && !is_rfc3339_utc(text))
    return fail(err, len, "%s: '%s' is not RFC 3339 UTC", at, text);
  if (pattern) {
    regex_t re;
    CHECK(regcomp(&re, json_string_value(pattern), REG_EXTENDED | REG_NOSUB) == 0);
    int rc = regexec(&re, text, 0, NULL, 0);
    regfree(&re);
    if (rc) return fail(err, len, "%s: '%s' does not match %s", at, text, json_string_value(pattern));
  }
  return true;
}

static bool validate(json_t *doc, json_t *s, json_t *v, const char *at, char *err, size_t len) {
  const char *key;
  json_t *x;
  if (!json_is_object(s)) return fail(err, len, "%s: the schema is not an object", at);
  json_object_foreach(s, key, x)
    if (!known_keyword(key)) return fail(err, len, "%s: the test's validator does not know '%s'", at, key);
  if ((x = json_object_get(s, "$ref"))) {
    json_t *target = schema_ref(doc, json_string_value(x));
    if (!target) return fail(err, len, "%s: $ref %s resolves to nothing", at, json_string_value(x));
    return validate(doc, target, v, at, err, len);
  }
  if (json_is_null(v) && json_is_true(json_object_get(s, "nullable"))) return true;
  size_t i;
  json_t *sub;
  json_array_foreach(json_object_get(s, "allOf"), i, sub)
    if (!validate(doc, sub, v, at, err, len)) return false;
  if ((x = json_object_get(s, "oneOf")) && !validate_branches(doc, x, true, v, at, err, len)) return false;
  if ((x = json_object_get(s, "anyOf")) && !validate_branches(doc, x, false, v, at, err, len)) return false;
  const char *type = json_string_value(json_object_get(s, "type"));
  if (type && !type_ok(type, v)) return fail(err, len, "%s: expected %s, got %s", at, type, kind(v));
  if ((x = json_object_get(s, "enum"))) {
    bool found = false;
    json_array_foreach(x, i, sub) found |= json_equal(sub, v);
    if (!found) {
      char *text = json_dumps(v, JSON_ENCODE_ANY);
      fail(err, len, "%s: %s is not one of the documented values", at, text ? text : "?");
      free(text);
      return false;
    }
  }
  if (json_is_object(v)) return validate_object(doc, s, v, at, err, len);
  if (json_is_array(v)) return validate_array(doc, s, v, at, err, len);
  return validate_scalar(s, v, at, err, len);
}

bool schema_validate(json_t *doc, json_t *schema, json_t *v, const char *at, char *err, size_t len) {
  return validate(doc, schema, v, at, err, len);
}
