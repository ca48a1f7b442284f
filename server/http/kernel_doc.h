/* A user's kernel as the API shows it, shared by the kernels' routes and their
 * versions' (routes_kernels.c, routes_kernel_versions.c): the kernel (its newest
 * version) or one version, every href under the prefix the request came by. */
#ifndef GPULAB_HTTP_KERNEL_DOC_H
#define GPULAB_HTTP_KERNEL_DOC_H

#include <stdbool.h>

#include <jansson.h>

#include "server/http/request.h"
#include "server/service/ukernels.h" /* struct store_kernel */

enum kernel_doc_kind {
  KERNEL_DOC_KERNEL,  /* the kernel: href /kernels/{id}, variant kernel:<id> */
  KERNEL_DOC_VERSION, /* one version: href /kernels/{id}/versions/{n}, kernel:<id>@<n> */
};

/* k's document (the caller owns it; NULL when out of memory): the summary, and with
 * full its source and log too; versions > 0 adds the kernel's count of versions. */
json_t *kernel_doc_json(const struct store_kernel *k, enum kernel_doc_kind kind, bool full,
                        int versions, const char *prefix);

/* 422: source (field: "source", "reference.source") cannot be compiled as sent, saying
 * why (detail); line: the user's line (0: none); report: the compile report (consumed),
 * or NULL. */
enum MHD_Result kernel_unprocessable(struct request *r, const char *code, const char *field,
                                     int line, json_t *report, const char *detail);
/* The 422 of a compile that failed (rep->ok false): compile_timeout, stateful_kernel or
 * compile_failed at its line, report (consumed) beside. */
enum MHD_Result kernel_compile_failed(struct request *r, const struct ucompile_report *rep,
                                      json_t *report, const char *field);

#endif
