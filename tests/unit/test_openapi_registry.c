/* The OpenAPI document's per-experiment parts against the registry: api/openapi.json
 * (as built into gpulabd) has, for every registered experiment, its route POST /<name>
 * with a request schema <X>Request beside <X>Params (a member of POST /jobs' params),
 * <X>Spec (its effective params) and, with variants, <X>Variant and <X>VariantChoice;
 * each lists exactly the descriptor's size params with their min, max and default, its
 * variants in their order (or its runs list param with its range and defaults), its
 * inputs, and "cold" as the descriptor takes it; every documented default is gpulabd's
 * (exp_spec_default as the API renders it). JobType, Experiments and ExperimentInfo
 * list every experiment. A new experiment's document parts are checked by its line in
 * experiments.def alone. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api/encode.h"
#include "api/openapi.h"
#include "kernels/core/experiment.h"
#include "tests/runner.h"

static json_t *doc;

static json_t *schema_named(const char *name) {
  return json_object_get(json_object_get(json_object_get(doc, "components"), "schemas"), name);
}

/* The schema a {"$ref": "#/components/schemas/X"} names (followed through), or node. */
static json_t *deref(json_t *node) {
  static const char prefix[] = "#/components/schemas/";
  for (int hops = 0; hops < 8; hops++) {
    const char *ref = json_string_value(json_object_get(node, "$ref"));
    if (!ref || strncmp(ref, prefix, sizeof prefix - 1) != 0) return node;
    node = schema_named(ref + sizeof prefix - 1);
  }
  return node;
}

static const char *ref_name(json_t *node) {
  const char *ref = json_string_value(json_object_get(node, "$ref"));
  const char *slash = ref ? strrchr(ref, '/') : NULL;
  return slash ? slash + 1 : NULL;
}

/* key of a property schema: its own, else its $ref's, else an allOf member's. */
static json_t *facet(json_t *prop, const char *key) {
  json_t *v = json_object_get(prop, key);
  if (v) return v;
  if ((v = json_object_get(deref(prop), key))) return v;
  size_t i;
  json_t *part;
  json_array_foreach(json_object_get(prop, "allOf"), i, part) if ((v = facet(part, key))) return v;
  return NULL;
}

/* The first integer schema in node's oneOf tree (a runs list's entry). */
static json_t *integer_schema(json_t *node) {
  node = deref(node);
  const char *type = json_string_value(json_object_get(node, "type"));
  if (type && strcmp(type, "integer") == 0) return node;
  json_t *found = NULL, *part;
  size_t i;
  json_array_foreach(json_object_get(node, "oneOf"), i, part) if (!found)
      found = integer_schema(part);
  if (!found && json_object_get(node, "items"))
    found = integer_schema(json_object_get(node, "items"));
  return found;
}

static bool array_has_string(json_t *array, const char *s) {
  size_t i;
  json_t *v;
  json_array_foreach(array, i,
                     v) if (json_is_string(v) && strcmp(json_string_value(v), s) == 0) return true;
  return false;
}

static bool array_has_ref(json_t *array, const char *name) {
  size_t i;
  json_t *v;
  json_array_foreach(array, i, v) if (ref_name(v) && strcmp(ref_name(v), name) == 0) return true;
  return false;
}

static void check_int_facet(const char *where, const char *field, json_t *prop, const char *key,
                            long long want) {
  json_t *v = facet(prop, key);
  if (!json_is_integer(v) || json_integer_value(v) != want)
    CHECK_FAIL_("%s.%s: the document's %s is %lld, the descriptor's %lld", where, field, key,
                json_is_integer(v) ? (long long)json_integer_value(v) : -1LL, want);
}

/* Whether node (a schema, or a list of them under "anyOf"/"oneOf") names the user's
 * kernel variant; *other: the first other member, followed through its $ref. */
static bool names_user_kernel(json_t *node, const char *key, json_t **other) {
  bool user = false;
  *other = NULL;
  size_t i;
  json_t *part;
  json_array_foreach(json_object_get(node, key), i, part) {
    if (ref_name(part) && strcmp(ref_name(part), "UserKernelVariant") == 0)
      user = true;
    else if (!*other)
      *other = deref(part);
  }
  return user;
}

/* The variant enum V (names in order) and its choice C (one, a user's kernel where the
 * descriptor has a user block, a list, or "all"). A list holds up to the descriptor's
 * variants, or EXP_MAX_VARIANTS runs when users' kernels may join them. */
static void check_variants(const struct exp_desc *d, const char *where, json_t *choice) {
  json_t *c = deref(choice), *one = NULL, *list = NULL, *names = json_array();
  bool user = d->user != NULL;
  size_t i;
  json_t *part;
  json_array_foreach(json_object_get(c, "oneOf"), i, part) {
    const char *type = json_string_value(json_object_get(deref(part), "type"));
    if (type && strcmp(type, "string") == 0 && !one) one = deref(part);
    if (type && strcmp(type, "array") == 0 && !list) list = part;
  }
  json_t *other;
  if (names_user_kernel(c, "oneOf", &other) != user)
    CHECK_FAIL_("%s.variant: one variant %s kernel:<id>, the descriptor %s a user block", where,
                user ? "lacks" : "takes", user ? "has" : "has no");
  json_t *items = json_object_get(list, "items"), *item_enum = deref(items);
  if (json_object_get(items, "anyOf")) {
    if (names_user_kernel(items, "anyOf", &item_enum) != user)
      CHECK_FAIL_("%s.variant: a list's items and the descriptor's user block disagree", where);
  } else if (user) {
    CHECK_FAIL_("%s.variant: a list's items take no kernel:<id>", where);
  }
  for (int v = 0; v < d->n_variants; v++)
    json_array_append_new(names, json_string(d->variants[v].name));
  if (!json_equal(json_object_get(item_enum, "enum"), names))
    CHECK_FAIL_(
        "%s.variant: the document's variant enum differs from the descriptor's (%d variants)",
        where, d->n_variants);
  json_array_append_new(names, json_string("all"));
  if (!json_equal(json_object_get(one, "enum"), names))
    CHECK_FAIL_("%s.variant: one variant's enum is not the variants and \"all\"", where);
  CHECK_STR_EQ(json_string_value(json_object_get(c, "default")), "all");
  check_int_facet(where, "variant", list, "maxItems", user ? EXP_MAX_VARIANTS : d->n_variants);
  json_decref(names);
}

static void check_runs(const struct exp_desc *d, const char *where, json_t *prop,
                       json_t *defaults) {
  const struct exp_runs_param *r = d->runs;
  json_t *entry = integer_schema(prop);
  if (!entry) CHECK_FAIL_("%s.%s: no integer entry", where, r->name);
  check_int_facet(where, r->name, entry, "minimum", r->min);
  check_int_facet(where, r->name, entry, "maximum", r->max);
  if (!json_equal(facet(prop, "default"), json_object_get(defaults, r->name)))
    CHECK_FAIL_("%s.%s: the document's default differs from gpulabd's", where, r->name);
  char *text = json_dumps(prop, JSON_COMPACT);
  bool word_documented = !r->word || (text && strstr(text, r->word));
  free(text);
  if (!word_documented) CHECK_FAIL_("%s.%s: \"%s\" is not documented", where, r->name, r->word);
}

/* Fields a job of every experiment takes beside its own; and POST /<name>'s options. */
static bool common_field(const char *name, bool request) {
  static const char *const common[] = {"seed",     "warmup", "batches",     "reps",
                                       "graph",    "order",  "min_samples", "max_noise",
                                       "max_time", "cold",   "profile",     NULL};
  static const char *const options[] = {"priority",   "isolation", "dependency", "keep_output",
                                        "depends_on", "device",    NULL};
  for (const char *const *p = common; *p; p++)
    if (!strcmp(*p, name)) return true;
  for (const char *const *p = options; request && *p; p++)
    if (!strcmp(*p, name)) return true;
  return false;
}

static bool descriptor_field(const struct exp_desc *d, const char *name) {
  for (int i = 0; i < d->n_params; i++)
    if (!strcmp(d->params[i].name, name)) return true;
  for (int i = 0; i < d->n_inputs; i++)
    if (!strcmp(d->inputs[i].name, name)) return true;
  return d->runs ? !strcmp(d->runs->name, name) : !strcmp(name, "variant");
}

/* A params schema (<X>Params, or <X>Request with the job options): the descriptor's
 * fields and no other size param, their ranges and defaults. */
static void check_params_schema(enum exp_type t, const char *where, json_t *schema, bool request,
                                json_t *defaults) {
  const struct exp_desc *d = exp_desc(t);
  json_t *props = json_object_get(schema, "properties");
  if (!json_is_object(props)) CHECK_FAIL_("%s: no such schema with properties", where);
  for (int i = 0; i < d->n_params; i++) {
    const struct exp_param *p = &d->params[i];
    json_t *prop = json_object_get(props, p->name);
    if (!prop) CHECK_FAIL_("%s: the descriptor's param %s is not documented", where, p->name);
    check_int_facet(where, p->name, prop, "minimum", p->min);
    check_int_facet(where, p->name, prop, "maximum", p->max);
    check_int_facet(where, p->name, prop, "default", p->def);
  }
  for (int i = 0; i < d->n_inputs; i++)
    if (!json_object_get(props, d->inputs[i].name))
      CHECK_FAIL_("%s: the descriptor's input %s is not documented", where, d->inputs[i].name);
  if (d->runs) {
    json_t *prop = json_object_get(props, d->runs->name);
    if (!prop) CHECK_FAIL_("%s: the runs list %s is not documented", where, d->runs->name);
    check_runs(d, where, prop, defaults);
    if (json_object_get(props, "variant"))
      CHECK_FAIL_("%s: variant documented without variants", where);
  } else {
    if (!json_object_get(props, "variant")) CHECK_FAIL_("%s: variant is not documented", where);
    check_variants(d, where, json_object_get(props, "variant"));
  }
  json_t *cold = json_object_get(props, "cold");
  if (!cold) CHECK_FAIL_("%s: cold is not documented", where);
  json_t *only_false = json_pack("[b]", 0);
  bool cold_ok = !(d->flags & EXP_NO_COLD) || json_equal(json_object_get(cold, "enum"), only_false);
  json_decref(only_false);
  if (!cold_ok) CHECK_FAIL_("%s.cold: the descriptor takes no cold, the document does", where);
  const char *name;
  json_t *prop;
  json_object_foreach(props, name, prop) {
    if (!descriptor_field(d, name) && !common_field(name, request) && strcmp(name, "fault") != 0)
      CHECK_FAIL_("%s: documents %s, which the descriptor does not have", where, name);
    json_t *def = facet(prop, "default"); /* a param's: not the variant choice's or an option's */
    if (def && strcmp(name, "variant") != 0 &&
        (!common_field(name, true) || common_field(name, false)) &&
        !json_equal(def, json_object_get(defaults, name)))
      CHECK_FAIL_("%s.%s: the document's default differs from gpulabd's", where, name);
  }
}

static void check_experiment(enum exp_type t) {
  const struct exp_desc *d = exp_desc(t);
  json_t *post = json_object_get(json_object_get(json_object_get(doc, "paths"), exp_type_route(t)),
                                 "post");
  if (!post) CHECK_FAIL_("%s: the document has no POST %s", d->name, exp_type_route(t));
  json_t *content = json_object_get(json_object_get(post, "requestBody"), "content");
  const char *request = ref_name(
      json_object_get(json_object_get(content, "application/json"), "schema"));
  size_t n = request ? strlen(request) : 0;
  if (n <= 7 || strcmp(request + n - 7, "Request") != 0)
    CHECK_FAIL_("POST %s: its body's schema is not an <X>Request", exp_type_route(t));
  char base[64], params[80], spec_name[80];
  snprintf(base, sizeof base, "%.*s", (int)(n - 7), request);
  snprintf(params, sizeof params, "%sParams", base);
  snprintf(spec_name, sizeof spec_name, "%sSpec", base);
  struct exp_spec spec;
  CHECK_INT_EQ(exp_spec_default(t, &spec), 0);
  json_t *defaults = api_spec_to_json(&spec);
  check_params_schema(t, request, schema_named(request), true, defaults);
  check_params_schema(t, params, schema_named(params), false, defaults);
  json_t *spec_schema = schema_named(spec_name);
  json_t *required = json_object_get(spec_schema, "required");
  const char *name;
  json_t *value;
  json_object_foreach(defaults, name, value) if (!array_has_string(required, name))
      CHECK_FAIL_("%s: %s is not required", spec_name, name);
  json_t *job_params = json_object_get(json_object_get(schema_named("JobRequest"), "properties"),
                                       "params");
  if (!array_has_ref(json_object_get(job_params, "anyOf"), params))
    CHECK_FAIL_("JobRequest.params: %s is not one of its schemas", params);
  json_t *info_defaults = json_object_get(
      json_object_get(schema_named("ExperimentInfo"), "properties"), "defaults");
  /* anyOf, not oneOf: two experiments may have specs of the same fields (reduce's and
   * scan's), which a oneOf would refuse for matching both. */
  if (!array_has_ref(json_object_get(info_defaults, "anyOf"), spec_name))
    CHECK_FAIL_("ExperimentInfo.defaults: %s is not one of its schemas", spec_name);
  json_t *types = json_object_get(json_object_get(schema_named("Experiments"), "properties"),
                                  "types");
  if (!array_has_string(json_object_get(types, "required"), d->name) ||
      !json_object_get(json_object_get(types, "properties"), d->name))
    CHECK_FAIL_("Experiments.types: %s is not listed", d->name);
  json_decref(defaults);
}

static int load_doc(void) {
  json_error_t je;
  doc = json_loadb((const char *)api_openapi_json, api_openapi_json_len, 0, &je);
  if (!doc) CHECK_FAIL_("api/openapi.json: %s at line %d", je.text, je.line);
  return 0;
}

static void free_doc(void) { json_decref(doc); }

static void test_experiments(void) {
  json_t *types = json_object_get(schema_named("JobType"), "enum");
  CHECK_INT_EQ(json_array_size(types), EXP_TYPE_COUNT + 1); /* and a problem's, last */
  CHECK_STR_EQ(json_string_value(json_array_get(types, EXP_TYPE_COUNT)),
               exp_type_name(EXP_PROBLEM));
  for (int t = 0; t < EXP_TYPE_COUNT; t++) { /* in the registry's order */
    CHECK_STR_EQ(json_string_value(json_array_get(types, (size_t)t)),
                 exp_type_name((enum exp_type)t));
    check_experiment((enum exp_type)t);
  }
  printf("the document's parts of %d experiments match their descriptors\n", EXP_TYPE_COUNT);
}

static void test_experiments_listed(void) {
  json_t *listed = json_object_get(
      json_object_get(json_object_get(schema_named("Experiments"), "properties"), "types"),
      "required");
  CHECK_INT_EQ(json_array_size(listed), EXP_TYPE_COUNT);
}

static const struct test_case cases[] = {
    TEST(test_experiments),
    TEST(test_experiments_listed),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = load_doc, .teardown = free_doc};
