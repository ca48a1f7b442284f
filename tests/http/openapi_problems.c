/* test_openapi's problems: every operation of /problems with the statuses it gives,
 * each answer checked against the document, and definitions the document's request
 * schema must accept (gpulabd defines them) or refuse (gpulabd refuses them). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "openapi_common.h"

/* A definition: a copy kernel of n floats, its params' max as given. */
static void definition(char *buf, size_t len, const char *name, int max, const char *extra) {
  snprintf(buf, len,
           "{\"name\":\"%s\",\"public\":true,\"params\":{\"n\":{\"default\":1024,\"min\":1,"
           "\"max\":%d}},\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[\"n\"],"
           "\"init\":{\"normal\":[0,1]}}],\"outputs\":[{\"name\":\"y\",\"dtype\":\"float32\","
           "\"shape\":[\"n\"],\"tolerance\":\"exact\"}],\"reference\":{\"source\":\"extern "
           "\\\"C\\\" __global__ void kernel(const float* x, float* y, int n) { int i = "
           "blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }\",\"block\":[256],"
           "\"grid\":[\"cdiv(n, 256)\"]},\"figure\":{\"bytes\":\"8 * n\"}%s}",
           name, max, extra);
}

void check_problems(void) {
  char body[2048];
  definition(body, sizeof body, "copy_n", 1 << 24, "");
  json_decref(post("/problems", "/problems", body, 201, NULL, ACCEPTED));
  json_decref(post("/problems", "/problems", body, 201, NULL, ACCEPTED)); /* version 2 */
  definition(body, sizeof body, "copy_n", 1 << 24, ",\"colour\":1");
  json_decref(post("/problems", "/problems", body, 400, "unknown_field", REFUSED));
  definition(body, sizeof body, "too_big", 2147483647, ",\"scratch_bytes\":\"n * n * n * 8\"");
  json_decref(post("/problems", "/problems", body, 400, "invalid_expression", ACCEPTED));
  definition(body, sizeof body, "broken", 1024, "");
  char *semicolon = strstr(body, "y[i] = x[i];");
  memcpy(semicolon, "y[i] = x[i] ", 12); /* no semicolon: NVRTC refuses it */
  json_decref(post("/problems", "/problems", body, 422, "compile_failed", ACCEPTED));
  struct reply r;
  call_get_head("/problems", "/problems", 200, NULL);
  call("/problems/{name}", "GET", "/problems/copy_n", 200, NULL, &r);
  CHECK_INT_EQ(JINT(r.json, "versions"), 2);
  reply_free(&r);
  call("/problems/{name}", "HEAD", "/problems/copy_n", 200, NULL, NULL);
  call("/problems/{name}", "GET", "/problems/nope", 404, "problem_not_found", NULL);
  call_get_head("/problems/{name}/versions", "/problems/copy_n/versions", 200, NULL);
  call("/problems/{name}/versions", "GET", "/problems/nope/versions", 404, "problem_not_found",
       NULL);
  call("/problems/{name}/versions/{version}", "GET", "/problems/copy_n/versions/1", 200, NULL,
       NULL);
  call("/problems/{name}/versions/{version}", "HEAD", "/problems/copy_n/versions/2", 200, NULL,
       NULL);
  call("/problems/{name}/versions/{version}", "GET", "/problems/copy_n/versions/3", 404,
       "version_not_found", NULL);
  call("/problems/{name}/versions/{version}", "GET", "/problems/copy_n/versions/0", 400,
       "out_of_range", NULL);
  /* Its jobs: a finished one (its runs unavailable on the CPU backend), one accepted
   * and left (202), and refusals of the body the document must refuse too. */
  const char *jobs = "/problems/{name}/jobs";
  json_decref(post(jobs, "/problems/copy_n/jobs?wait=30", "{\"params\":{\"n\":4096},\"seed\":3}",
                   200, NULL, ACCEPTED));
  json_decref(post(jobs, "/problems/copy_n/jobs?wait=0", "{}", 202, NULL, ACCEPTED));
  json_decref(post(jobs, "/problems/copy_n/jobs", "{\"params\":{\"n\":0}}", 400, "out_of_range",
                   ACCEPTED)); /* a range the document cannot know */
  json_decref(post(jobs, "/problems/copy_n/jobs", "{\"colour\":1}", 400, "unknown_field", REFUSED));
  json_decref(post(jobs, "/problems/nope/jobs", "{}", 404, "problem_not_found", ACCEPTED));
  /* A sweep of its params. */
  json_decref(post("/sweeps", "/sweeps?wait=30",
                   "{\"type\":\"problem:copy_n\",\"axes\":{\"n\":[256,4096]},\"seed\":5}", 200,
                   NULL, ACCEPTED));
  /* Its leaderboard: empty here (the CPU backend runs none of its runs). */
  call("/leaderboard/{experiment}", "GET", "/leaderboard/problem:copy_n?size=4096", 200, NULL,
       NULL);
  call("/leaderboard/{experiment}", "GET", "/leaderboard/problem:copy_n?size=0", 400,
       "out_of_range", NULL);
  call("/leaderboard/{experiment}", "GET", "/leaderboard/problem:nope", 404, "problem_not_found",
       NULL);
  call("/problems/{name}", "DELETE", "/problems/copy_n", 200, NULL, NULL);
  call("/problems/{name}", "DELETE", "/problems/copy_n", 404, "problem_not_found", NULL);
  call("/problems/{name}/versions/{version}", "GET", "/problems/copy_n/versions/2", 200, NULL,
       NULL); /* a deleted problem's version stays readable */
}
