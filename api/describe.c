/* The registry as JSON (describe.h): read from each experiment's descriptor, so a new
 * experiment, param or variant reaches the dashboard's forms by itself. */
#include "api/describe.h"

#include "api/encode.h"
#include "api/params.h"
#include "kernels/core/experiment.h"

static json_t *string_or_null(const char *s) { return s ? json_string(s) : json_null(); }

static json_t *params_json(const struct exp_desc *d) {
  json_t *list = json_array();
  for (int i = 0; i < d->n_params; i++) {
    const struct exp_param *p = &d->params[i];
    json_array_append_new(list, json_pack("{s:s,s:i,s:i,s:i,s:b,s:o}", "name", p->name, "min",
                                          p->min, "max", p->max, "default", p->def, "dim",
                                          (p->flags & EXP_PARAM_DIM) != 0, "doc",
                                          string_or_null(p->doc)));
  }
  return list;
}

/* The runs list param (the pipeline's streams), or null; its default is the spec's. */
static json_t *runs_json(const struct exp_desc *d, json_t *defaults) {
  const struct exp_runs_param *r = d->runs;
  if (!r) return json_null();
  return json_pack("{s:s,s:s,s:i,s:i,s:o,s:O}", "name", r->name, "noun", r->noun, "min", r->min,
                   "max", r->max, "word", string_or_null(r->word), "default",
                   json_object_get(defaults, r->name));
}

static json_t *experiment_json(enum exp_type t) {
  const struct exp_desc *d = exp_desc(t);
  struct exp_spec spec;
  exp_spec_default(t, &spec);
  struct exp_work work = {0};
  exp_spec_work_counts(&spec, &work);
  json_t *defaults = api_spec_to_json(&spec);
  json_t *variants = json_array(), *docs = json_object(), *inputs = json_array(),
         *baselines = json_array();
  for (int v = 0; v < d->n_variants; v++) {
    json_array_append_new(variants, json_string(d->variants[v].name));
    if (d->variants[v].flags & EXP_VARIANT_BASELINE) /* a yardstick, never a job's best */
      json_array_append_new(baselines, json_string(d->variants[v].name));
    json_object_set_new(docs, d->variants[v].name, string_or_null(d->variants[v].doc));
  }
  for (int s = 0; s < d->n_inputs; s++)
    json_array_append_new(inputs, json_string(d->inputs[s].name));
  json_t *o = json_pack(
      "{s:s,s:o,s:o,s:o,s:o,s:o,s:s,s:s,s:s,s:o,s:b,s:o,s:o}", "title",
      d->title ? d->title : d->name, "doc", string_or_null(d->doc), "params", params_json(d),
      "variants", variants, "variant_docs", docs, "inputs", inputs, "unit", exp_figure_unit(t),
      "work_unit", exp_work_unit(t), "counted", work.counted ? work.counted : "", "ceiling",
      string_or_null(exp_ceiling_name(d->ceiling)), "cold", !(d->flags & EXP_NO_COLD), "runs",
      runs_json(d, defaults), "defaults", defaults);
  if (o)
    json_object_set_new(o, "baselines", baselines);
  else
    json_decref(baselines);
  return o;
}

json_t *api_experiments_json(void) {
  json_t *types = json_object(), *order = json_array();
  for (int t = 0; t < EXP_TYPE_COUNT; t++) {
    json_object_set_new(types, exp_type_name((enum exp_type)t), experiment_json((enum exp_type)t));
    json_array_append_new(order, json_string(exp_type_name((enum exp_type)t)));
  }
  return json_pack("{s:o,s:o,s:o}", "types", types, "order", order, "common",
                   api_common_params_json());
}
