/* The registry as clients read it: every experiment's descriptor as JSON (jansson),
 * what GET /static/experiments.json serves and the dashboard builds its forms from.
 * No HTTP. */
#ifndef GPULAB_API_DESCRIBE_H
#define GPULAB_API_DESCRIBE_H

#include <jansson.h>

/* {"types": {"<name>": {...}, ...}, "order": [names], "common": [...]}, one entry per registered
 * experiment, "order" listing them in registry order (the routes' order): its title and doc, its size params with their ranges, defaults and docs,
 * its variants (or its runs list param), inputs, figure unit, what the work counts,
 * its ceiling, whether it takes "cold", and its default params as a spec; "common" the
 * params every experiment takes, with their kinds (api_common_params_json). A new
 * reference (json_decref), or NULL when memory ran out. */
json_t *api_experiments_json(void);

#endif
