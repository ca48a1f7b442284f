/* What the engine may hand out: ids, reserved in the store ahead of use
 * (engine_config.reserve_ids), and device memory. Calls into no other file of the engine. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "server/engine/engine_priv.h"

int reserve_id_locked(struct engine *e, enum engine_ids kind, uint64_t id,
                      struct engine_error *err) {
  if (!e->cfg.reserve_ids || id <= e->ids_reserved[kind]) return 0;
  uint64_t *next = kind == ENGINE_IDS_JOBS ? &e->next_id : &e->next_buffer_id;
  uint64_t from = *next, upto = id + (e->cfg.ids_block ? e->cfg.ids_block : ENGINE_IDS_BLOCK) - 1;
  int rc = e->cfg.reserve_ids(e->cfg.reserve_ids_arg, kind, &from, upto);
  if (rc == 0 && from < *next) rc = -EINVAL; /* a block only moves forward */
  if (rc == 0) {
    e->ids_reserved[kind] = upto + (from - *next); /* moved on: the same length */
    *next = from;
  } else if (err) {
    err->code = rc;
    snprintf(err->field, sizeof err->field, "store");
    snprintf(err->message, sizeof err->message,
             "the store cannot record new %s ids (%s): nothing was accepted",
             kind == ENGINE_IDS_JOBS ? "job" : "buffer", strerror(-rc));
  }
  return rc;
}

uint64_t engine_memory_limit(const struct engine *e) {
  uint64_t limit = UINT64_MAX;
  for (int i = 0; i < e->n_devices; i++) {
    uint64_t l = backend_memory_limit(e->devices[i]);
    if (l < limit) limit = l;
  }
  return limit;
}
