/* Users' kernels as a service of gpulabd: NVRTC (loaded once at start, or known to be
 * missing and why), the image cache, the kernels' table in the store, and the limits a
 * shared box needs (kernels and source bytes per client, compile time, compiles at
 * once). The HTTP layer (server/http/routes_kernels.c) turns requests into calls here; the
 * backends find the kernels a job names in kernels/user/ukreg.h, which this fills. */
#ifndef GPULAB_UKERNELS_H
#define GPULAB_UKERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "kernels/user/image_cache.h"
#include "kernels/user/nvrtc_loader.h"
#include "kernels/user/ucompile.h"
#include "server/store/store.h"

struct ukernels_config {
  const char *nvrtc_path;   /* NULL: the usual search; "none": no NVRTC (503 on POST) */
  int arch;                 /* SM to compile for (the first device's); 0: UCOMPILE_DEFAULT_ARCH */
  int max_per_client;       /* stored kernels per owner (their versions not counted); 0: 32 */
  int max_versions;         /* versions kept of one kernel; 0: 64 */
  size_t max_source_bytes;  /* 0: 64 KiB */
  double compile_time_s;    /* 0: 10 s */
  int compile_slots;        /* compiles at once; 0: 2 */
  double compile_wait_s;    /* for a free slot, then 503 compile_busy; 0: 5 s */
  size_t cache_bytes;       /* 0: 64 MiB */
  int max_shared_optin;     /* dynamic shared bytes a kernel may ask; 0: 227 KiB (sm_90) */
  size_t max_scratch_bytes; /* scratch a kernel may ask (zeroed before each launch); 0: none */
  /* Bytes of module-scope variables put back before every launch; a kernel with more is
   * refused as stateful. 0: UCOMPILE_MAX_VAR_BYTES. */
  uint64_t max_var_bytes;
  struct store *store; /* borrowed; NULL: a store in memory of the service's own */
};

struct ukernels;

/* Opens the service (cfg copied; cfg->store borrowed, it must outlive u) and puts
 * every stored kernel in the backends' table. NVRTC missing is not an error:
 * ukernels_nvrtc says so. Returns 0 with *out (ukernels_free it) or -1 with err. */
int ukernels_new(const struct ukernels_config *cfg, struct ukernels **out, char *err,
                 size_t err_len);
void ukernels_free(struct ukernels *u); /* NULL is a no-op */

const struct ukernels_config *ukernels_config(const struct ukernels *u); /* defaults filled */
/* The store the kernels (and problems: problems.h) are kept in; u's. */
struct store *ukernels_store(struct ukernels *u);
/* The loaded NVRTC, or NULL with *why (u's, static to it) saying why there is none. */
const struct nvrtc_lib *ukernels_nvrtc(const struct ukernels *u, const char **why);
/* The stored kernels (in cfg->store, or the service's own store), as store.h's
 * store_kernel_* answer; a kernel is its versions (store_kernel), ids are versions'
 * unless named kernel_id. u NULL (no users' kernels): get answers -ENOENT, list and
 * count none. */
int ukernels_insert(struct ukernels *u, const struct store_kernel *k, int64_t *id, int *version);
int ukernels_get(struct ukernels *u, int64_t id, struct store_kernel *out);
/* Version `version` of kernel kernel_id (0: its newest) in full into *out
 * (ukernels_clear it), and how many versions it has into *versions (may be NULL).
 * 0, -ENOENT (no such kernel or version), -EIO, -ENOMEM. */
int ukernels_version(struct ukernels *u, int64_t kernel_id, int version, struct store_kernel *out,
                     int *versions);
/* Deletes version id from the store and then from the backends' table (ukreg). */
int ukernels_delete(struct ukernels *u, int64_t id);
/* Deletes every version of kernel kernel_id, from the store and the backends' table. */
int ukernels_drop(struct ukernels *u, int64_t kernel_id);
int ukernels_list(struct ukernels *u, const char *owner, const char *experiment,
                  void (*fn)(void *arg, const struct store_kernel *k), void *arg);
int ukernels_versions(struct ukernels *u, int64_t kernel_id,
                      void (*fn)(void *arg, const struct store_kernel *k), void *arg);
int ukernels_named(struct ukernels *u, const char *owner, const char *experiment, const char *name,
                   int64_t *ids, int max);
int ukernels_count(struct ukernels *u, const char *owner, int *n, size_t *source_bytes);
void ukernels_clear(struct store_kernel *k); /* frees what ukernels_get allocated */
/* Why today's rules refuse stored version id (ukreg's `refused`), or NULL when they
 * take it or it is not registered; copied into why. */
const char *ukernels_refused(int64_t id, char *why, size_t why_len);

/* Compiles req through the cache, within the compile slots and time limit (req's
 * time_limit_s and arch are set from the config). Returns as image_cache_compile, and
 * -ENODEV without NVRTC, -EBUSY when no slot freed within compile_wait_s. */
int ukernels_compile(struct ukernels *u, struct ucompile_req *req, struct ucompile_report **out,
                     bool *cached, char *msg, size_t msg_len);

/* r as the API shows a compile report (the caller owns it; NULL when out of memory):
 * ok, cached, arch, NVRTC's version, the time, the log; the image's size, hash and
 * module variables, or the first error and its line; ptxas' usage. */
json_t *ukernels_report_json(const struct ukernels *u, const struct ucompile_report *r,
                             bool cached);

/* The theoretical occupancy of a kernel that compiled as r (ptxas' registers and static
 * shared bytes) with its block and dynamic shared bytes on u's architecture, as the
 * API shows it (kernels/core/occupancy.h): {"blocks_per_sm", "warps_per_sm",
 * "max_warps_per_sm", "fraction", "limiter", "blocks_by": {...}, "arch"}, or
 * {"available": false, "reason"} (no block fits, an architecture gpulab knows no limits
 * of). NULL when r has no usage. The caller owns it. */
json_t *ukernels_occupancy_json(const struct ukernels *u, const int block[3],
                                int dynamic_shared_bytes, const struct ucompile_report *r);

/* A stored kernel (its image included; borrowed) into the backends' table, so that
 * jobs can run it. 0 or -ENOMEM. */
int ukernels_register(const struct store_kernel *k);

#endif
