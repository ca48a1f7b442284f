/* test_openapi's users' kernels: each route and its main answers, a job that names
 * one (its run carries the kernel's identity), the ranking, each answer checked
 * against the document. S keeps 3 kernels a client. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "http_client.h"
#include "openapi_common.h"
#include "server/service/usass.h"

void check_kernels(void) {
  static const char *const cuda_ct[] = {"Content-Type: text/x-cuda", NULL};
  static const char *const png_ct[] = {"Content-Type: image/png", NULL};
  const char *good =
      "{\"experiment\":\"stencil\",\"name\":\"copy\",\"block\":[128],\"source\":\"extern \\\"C\\\" "
      "__global__ void kernel(const float* x, float* y, int n, int r) { int i = "
      "blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }\"}";
  json_t *k = post("/kernels", "/kernels", good, 201, NULL, ACCEPTED);
  long long id = JINT(k, "id");
  json_decref(k);
  json_decref(post("/kernels", "/kernels",
                   "{\"experiment\":\"stencil\",\"name\":\"bad\",\"source\":\"int x = ;\"}", 422,
                   "compile_failed", ACCEPTED));
  json_decref(
      post("/kernels", "/kernels",
           "{\"experiment\":\"stencil\",\"name\":\"inc\",\"source\":\"#include <x>\\nint x;\"}",
           422, "source_not_allowed", ACCEPTED));
  json_decref(post(
      "/kernels", "/kernels",
      "{\"experiment\":\"stencil\",\"name\":\"o\",\"source\":\"int x;\",\"options\":[\"-I/x\"]}",
      400, "option_not_allowed", ACCEPTED));
  json_decref(post("/kernels", "/kernels",
                   "{\"experiment\":\"nope\",\"name\":\"o\",\"source\":\"int x;\"}", 400,
                   "unknown_type", REFUSED));
  json_decref(post("/kernels", "/kernels", "{\"experiment\":\"stencil\",\"name\":\"o\"}", 400,
                   "missing_field", REFUSED));
  json_decref(post("/kernels", "/kernels",
                   "{\"experiment\":\"stencil\",\"name\":\"o\",\"source\":\"x\",\"tile\":[0]}", 400,
                   "out_of_range", REFUSED));
  const char *src =
      "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n) {\n"
      "  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n"
      "  if (x < n && y < m) b[(size_t)x * m + y] = a[(size_t)y * n + x];\n}\n";
  struct reply r;
  call_h(&S, "/kernels", "POST", "/kernels?experiment=transpose&name=file&block=32,32&tile=32,32",
         cuda_ct, src, strlen(src), 201, NULL, &r);
  long long transpose = JINT(r.json, "id");
  reply_free(&r);
  /* The same name again: its version 2, which the quota does not count; the versions'
   * routes, the diff, names and versions as variants. */
  char body[256], path[80];
  const char *src2 =
      "extern \"C\" __global__ void kernel(const float* a, float* b, int m, int n) {\n"
      "  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n"
      "  if (y < m && x < n) b[(size_t)x * m + y] = a[(size_t)y * n + x];\n}\n";
  call_h(&S, "/kernels", "POST",
         "/v1/kernels?experiment=transpose&name=file&block=32,32&tile=32,32", cuda_ct, src2,
         strlen(src2), 201, NULL, &r);
  CHECK_INT_EQ(JINT(r.json, "id"), transpose);
  CHECK_INT_EQ(JINT(r.json, "version"), 2);
  reply_free(&r);
  snprintf(path, sizeof path, "/kernels/%lld/versions", transpose);
  call_get_head("/kernels/{id}/versions", path, 200, NULL);
  call("/kernels/{id}/versions", "GET", "/kernels/99999/versions", 404, "kernel_not_found", NULL);
  call("/kernels/{id}/versions", "HEAD", "/kernels/x/versions", 404, NULL, NULL);
  snprintf(path, sizeof path, "/kernels/%lld/versions?size=33,47", transpose);
  call("/kernels/{id}/versions", "GET", path, 200, NULL, NULL);
  snprintf(path, sizeof path, "/kernels/%lld/versions?size=x", transpose);
  call_get_head("/kernels/{id}/versions", path, 400, "wrong_type");
  snprintf(path, sizeof path, "/v1/kernels/%lld/versions/1", transpose);
  call_get_head("/kernels/{id}/versions/{version}", path, 200, NULL);
  snprintf(path, sizeof path, "/kernels/%lld/versions/7", transpose);
  call_get_head("/kernels/{id}/versions/{version}", path, 404, "version_not_found");
  call("/kernels/{id}/versions/{version}", "DELETE", path, 404, "version_not_found", NULL);
  snprintf(path, sizeof path, "/kernels/%lld/versions/0", transpose);
  call_get_head("/kernels/{id}/versions/{version}", path, 400, "out_of_range");
  call("/kernels/{id}/versions/{version}", "DELETE", path, 400, "out_of_range", NULL);
  snprintf(path, sizeof path, "/kernels/%lld/diff?from=1&to=2", transpose);
  call_get_head("/kernels/{id}/diff", path, 200, NULL);
  snprintf(path, sizeof path, "/kernels/%lld/diff?from=1", transpose);
  call_get_head("/kernels/{id}/diff", path, 400, "missing_field");
  snprintf(path, sizeof path, "/kernels/%lld/diff?from=1&to=9", transpose);
  call_get_head("/kernels/{id}/diff", path, 404, "version_not_found");
  /* The compiler's view: the PTX; the SASS where the toolkit has a disassembler, else
   * 503 sass_unavailable (this machine's). */
  snprintf(path, sizeof path, "/kernels/%lld/ptx", transpose);
  call_get_head("/kernels/{id}/ptx", path, 200, NULL);
  call_get_head("/kernels/{id}/ptx", "/kernels/99999/ptx", 404, "kernel_not_found");
  snprintf(path, sizeof path, "/v1/kernels/%lld/versions/1/ptx", transpose);
  call_get_head("/kernels/{id}/versions/{version}/ptx", path, 200, NULL);
  snprintf(path, sizeof path, "/kernels/%lld/versions/9/ptx", transpose);
  call_get_head("/kernels/{id}/versions/{version}/ptx", path, 404, "version_not_found");
  snprintf(path, sizeof path, "/kernels/%lld/versions/0/ptx", transpose);
  call_get_head("/kernels/{id}/versions/{version}/ptx", path, 400, "out_of_range");
  char tool[512], why[800];
  bool sass = usass_find(NULL, tool, sizeof tool, why, sizeof why) == 0;
  snprintf(path, sizeof path, "/kernels/%lld/sass", transpose);
  call_get_head("/kernels/{id}/sass", path, sass ? 200 : 503, sass ? NULL : "sass_unavailable");
  call_get_head("/kernels/{id}/sass", "/kernels/99999/sass", 404, "kernel_not_found");
  snprintf(path, sizeof path, "/kernels/%lld/versions/1/sass", transpose);
  call_get_head("/kernels/{id}/versions/{version}/sass", path, sass ? 200 : 503,
                sass ? NULL : "sass_unavailable");
  snprintf(path, sizeof path, "/kernels/%lld/versions/9/sass", transpose);
  call_get_head("/kernels/{id}/versions/{version}/sass", path, 404, "version_not_found");
  snprintf(path, sizeof path, "/kernels/%lld/versions/0/sass", transpose);
  call_get_head("/kernels/{id}/versions/{version}/sass", path, 400, "out_of_range");
  json_decref(post("/transpose", "/transpose", "{\"variant\":[\"kernel:nosuch\"]}", 400,
                   "unknown_variant", ACCEPTED));
  call_h(&S, "/kernels", "POST", "/kernels", png_ct, "x", 1, 415, "unsupported_media_type", NULL);
  /* A job naming it: on the CPU backend its run is unavailable, with the kernel's identity. */
  snprintf(body, sizeof body,
           "{\"m\":33,\"n\":47,\"variant\":[\"naive\",\"kernel:%lld\"]," FAST "}", transpose);
  json_t *job = post("/transpose", "/transpose", body, 200, NULL, ACCEPTED);
  CHECK_INT_EQ(JINT(job, "result.runs[1].user_kernel.id"), transpose);
  CHECK_INT_EQ(JINT(job, "result.runs[1].user_kernel.version"), 2);
  json_decref(job);
  /* By name and version: the run says which. */
  job = post("/transpose", "/transpose",
             "{\"m\":33,\"n\":47,\"variant\":[\"kernel:file@1\"]," FAST "}", 200, NULL, ACCEPTED);
  snprintf(path, sizeof path, "kernel:%lld@1", transpose);
  CHECK_STR_EQ(JSTR(job, "result.runs[0].variant"), path);
  json_decref(job);
  /* The newest version deleted: the kernel goes back to version 1. */
  snprintf(path, sizeof path, "/kernels/%lld/versions/2", transpose);
  call("/kernels/{id}/versions/{version}", "DELETE", path, 200, NULL, NULL);
  json_decref(post("/transpose", "/transpose", "{\"variant\":[\"kernel:99999\"]}", 400,
                   "unknown_variant", ACCEPTED));
  json_decref(post("/transpose", "/transpose", "{\"variant\":\"kernel:0\"}", 400, "unknown_variant",
                   REFUSED));
  /* ?run=1: a job of the default size beside every built-in (202 here: it waits for none). */
  call_h(&S, "/kernels", "POST",
         "/kernels?experiment=transpose&name=ran&block=32,32&tile=32,32&run=1&wait=0", cuda_ct, src,
         strlen(src), 202, NULL, &r);
  long long ran = JINT(r.json, "id");
  reply_free(&r);
  json_decref(job_wait(ran));
  call_h(&S, "/kernels", "POST", "/kernels?experiment=transpose&name=four", cuda_ct, src,
         strlen(src), 403, "kernel_quota", NULL);
  call("/kernels", "GET", "/kernels", 200, NULL, NULL);
  call("/kernels", "GET", "/kernels?experiment=stencil", 200, NULL, NULL);
  call("/kernels", "HEAD", "/kernels", 200, NULL, NULL);
  call_get_head("/kernels/signatures", "/kernels/signatures", 200, NULL);
  snprintf(path, sizeof path, "/kernels/%lld", id);
  call_get_head("/kernels/{id}", path, 200, NULL);
  call("/kernels/{id}", "DELETE", path, 200, NULL, NULL);
  call_get_head("/kernels/{id}", path, 404, "kernel_not_found");
  call("/kernels/{id}", "DELETE", path, 404, "kernel_not_found", NULL);
  call("/kernels/{id}", "GET", "/kernels/abc", 404, "kernel_not_found", NULL);
  call("/leaderboard/{experiment}", "GET", "/leaderboard/transpose", 200, NULL, NULL);
  call("/leaderboard/{experiment}", "GET", "/leaderboard/transpose?size=33,47", 200, NULL, &r);
  CHECK(json_array_size(json_object_get(r.json, "rows")) >= 1);
  reply_free(&r);
  call("/leaderboard/{experiment}", "HEAD", "/leaderboard/gemm?size=64", 200, NULL, NULL);
  call("/leaderboard/{experiment}", "GET", "/leaderboard/transpose?size=x", 400, "wrong_type",
       NULL);
  call("/leaderboard/{experiment}", "GET", "/leaderboard/transpose?size=0", 400, "out_of_range",
       NULL);
  call("/leaderboard/{experiment}", "HEAD", "/leaderboard/stencil?size=1,2", 400, NULL, NULL);
  call("/leaderboard/{experiment}", "GET", "/leaderboard/pipeline", 404, "not_found", NULL);
  call("/leaderboard/{experiment}", "HEAD", "/leaderboard/nope", 404, NULL, NULL);
}
