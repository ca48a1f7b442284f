/* The compile path of users' kernels with the real NVRTC (no GPU needed): every
 * experiment's template compiles against its own declaration, a good kernel with its
 * ptxas usage, a syntax error at its line, a kernel with the wrong signature, refused
 * options and includes, the entry check, the cache and its key. Without NVRTC (the
 * CUDA toolkit's libnvrtc) it fails, as a test whose tool is missing does. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/backends/cpu/cpu_user.h"
#include "kernels/core/experiment.h"
#include "kernels/user/image_cache.h"
#include "kernels/user/ucompile.h"
#include "kernels/user/uimage.h"
#include "kernels/user/ukreg.h"
#include "server/service/ukernels.h"
#include "tests/runner.h"

static struct nvrtc_lib *nvrtc;    /* opened by the setup */
static const char *transpose_decl; /* the transpose experiment's exp_user.declaration */

static const char *const padded33 =
    "#define T 32\n"
    "extern \"C\" __global__ void kernel(const float *a, float *b, int m, int n) {\n"
    "  __shared__ float tile[T][T + 1];\n"
    "  int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;\n"
    "  if (x < n && y < m) tile[threadIdx.y][threadIdx.x] = a[(size_t)y * n + x];\n"
    "  __syncthreads();\n"
    "  int ox = blockIdx.y * T + threadIdx.x, oy = blockIdx.x * T + threadIdx.y;\n"
    "  if (ox < m && oy < n) b[(size_t)oy * m + ox] = tile[threadIdx.x][threadIdx.y];\n"
    "}\n";

static struct ucompile_req req_of(const char *src, const char *const *opts, int n) {
  struct ucompile_req r = {.source = src,
                           .name = "my_tile.cu",
                           .entry = "kernel",
                           .declaration = transpose_decl,
                           .options = opts,
                           .n_options = n,
                           .arch = UCOMPILE_DEFAULT_ARCH,
                           .time_limit_s = 30};
  return r;
}

static void test_options(void) {
  char msg[256];
  const char *good[] = {"-DTILE=64", "--maxrregcount=64",   "-use_fast_math",
                        "-lineinfo", "--ftz=true",          "-std=c++17",
                        "-UFOO",     "--generate-line-info"};
  CHECK_INT_EQ(ucompile_options_check(good, 8, msg, sizeof msg), 0);
  const char *bad[][2] = {
      {"-I/etc", "include"},           {"--include-path=/x", "include"},
      {"-rdc=true", "separate"},       {"--gpu-architecture=sm_80", "architecture"},
      {"-arch=sm_90", "architecture"}, {"--maxrregcount=9999", "16..255"},
      {"-DX=\"a b\"", "quotes"},       {"-D1X", "identifier"},
      {"-Xptxas=-O0", "ptxas"},        {"--fdevice-time-trace=/tmp/x", "whitelist"},
      {"foo.cu", "not an option"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *o[] = {bad[i][0]};
    CHECK_INT_EQ(ucompile_options_check(o, 1, msg, sizeof msg), -EINVAL);
    if (!strstr(msg, bad[i][1])) CHECK_STR_EQ(msg, bad[i][1]);
  }
}

/* What a source may not hold, with and without a toolkit to include from (nvrtc's:
 * its include/ and include/cccl/): only #include <name> of a file there passes. */
static void test_source_check(void) {
  char msg[256];
  int line;
  CHECK_INT_EQ(ucompile_source_check(padded33, NULL, &line, msg, sizeof msg), 0);
  CHECK(nvrtc->n_include_dirs >= 1); /* found beside libnvrtc */
  printf("toolkit headers: %s%s%s\n", nvrtc->include_dirs[0], nvrtc->n_include_dirs > 1 ? ", " : "",
         nvrtc->n_include_dirs > 1 ? nvrtc->include_dirs[1] : "");
  const char *srcs[][2] = {
      {"int x;\n#include \"/etc/passwd\"\n", "2"}, /* quoted */
      {"\n\n  #  include <stdio.h>\n", "3"},       /* not the toolkit's */
      {"%:include <x>\n", "1"},
      {"# /* hidden */ include <x>\n", "1"},
      {"#inc\\\nlude <x>\n", "1"},
      {"/* a\nb */ #import <x>\n", "2"},
      {"#include </etc/passwd>\n", "1"},                        /* absolute */
      {"#include <../../../../../../etc/passwd>\n", "1"},       /* out of the folder */
      {"#include <cuda_fp16.h/../../../../etc/passwd>\n", "1"}, /* through a header */
      {"#include <cuda//../../etc/passwd>\n", "1"},
      {"#define H <cuda_fp16.h>\n#include H\n", "2"}, /* computed */
      {"#include_next <cuda_fp16.h>\n", "1"},
      {"#embed <cuda_fp16.h>\n", "1"},
      {"#include <cuda_fp16.h\n", "1"}, /* unterminated */
      {"#include <cuda_fp16.h> /* ok */\n#include <passwd>\n", "2"}};
  for (size_t i = 0; i < sizeof srcs / sizeof srcs[0]; i++) {
    int rc = ucompile_source_check(srcs[i][0], nvrtc, &line, msg, sizeof msg);
    if (rc != -EINVAL) fprintf(stderr, "taken: %s\n", srcs[i][0]);
    CHECK_INT_EQ(rc, -EINVAL);
    CHECK_INT_EQ(line, atoi(srcs[i][1]));
  }
  /* Not directives: in a string, in a comment, an identifier that starts alike; and
   * the toolkit's headers by name (include/ and, since CUDA 13, include/cccl/). */
  const char *fine[] = {"const char *s = \"#include <x>\";\n",
                        "// #include <x>\n",
                        "/* #include <x> */\n",
                        "#define includes 1\n",
                        "#pragma unroll\n",
                        "#include <cuda_fp16.h>\n",
                        "  #  include <mma.h>\n#include <cooperative_groups.h>\n",
                        "#include <cuda_bf16.h>\n",
                        "#include <cuda_fp16.h\\\n>\n"}; /* a line splice joins it first */
  for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
    int rc = ucompile_source_check(fine[i], nvrtc, &line, msg, sizeof msg);
    if (rc) fprintf(stderr, "refused: %s: %s\n", fine[i], msg);
    CHECK_INT_EQ(rc, 0);
  }
  /* Without a toolkit's folders (lib NULL) no header is one of them. */
  CHECK_INT_EQ(ucompile_source_check("#include <cuda_fp16.h>\n", NULL, &line, msg, sizeof msg),
               -EINVAL);
}

static void test_log_parsing(void) {
  int line;
  char err[256];
  const char *log =
      "my_tile.cu(12): warning #177-D: variable \"q\" was declared\n"
      "my_tile.cu(14): error: identifier \"argc\" is undefined\n  x\n";
  CHECK(ucompile_first_error(log, "my_tile.cu", &line, err, sizeof err));
  CHECK_INT_EQ(line, 14);
  CHECK_STR_EQ(err, "my_tile.cu(14): error: identifier \"argc\" is undefined");
  CHECK(!ucompile_first_error("ptxas info : 0 bytes gmem\n", "my_tile.cu", &line, err, sizeof err));
  struct ucompile_report r = {0};
  ucompile_parse_usage(
      "ptxas info    : Compiling entry function 'other' for 'sm_90'\n"
      "ptxas info    : Used 32 registers, used 0 barriers\n"
      "ptxas info    : Compiling entry function 'kernel' for 'sm_90'\n"
      "ptxas info    : Function properties for kernel\n"
      "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 12 registers, used 1 barriers, 4224 bytes smem\n",
      "kernel", &r);
  CHECK(r.has_usage);
  CHECK_INT_EQ(r.registers, 12);
  CHECK_INT_EQ(r.barriers, 1);
  CHECK_INT_EQ(r.shared_bytes, 4224);
  CHECK_INT_EQ(r.stack_bytes, 8);
  CHECK_INT_EQ(r.spill_store_bytes, 4);
  CHECK_INT_EQ(r.spill_load_bytes, 12);
}

/* Each experiment's template, as the dashboard's editor starts from it. */
static void test_templates(void) {
  const struct nvrtc_lib *lib = nvrtc;
  for (int t = 0; t < EXP_TYPE_COUNT; t++) {
    const struct exp_user *u = exp_user_of((enum exp_type)t);
    if (!u) continue;
    struct ucompile_req req = {.source = u->template_source,
                               .name = "template.cu",
                               .entry = "kernel",
                               .declaration = u->declaration,
                               .arch = UCOMPILE_DEFAULT_ARCH,
                               .time_limit_s = 30};
    struct ucompile_report *r;
    char msg[256];
    CHECK_INT_EQ(ucompile_run(lib, &req, &r, msg, sizeof msg), 0);
    if (!r->ok)
      CHECK_FAIL_("%s's template: %s\n%s", exp_type_name((enum exp_type)t), r->error, r->log);
    CHECK(r->has_usage && r->image_bytes > 0);
    printf("%s template: %d registers, %.1f ms\n", exp_type_name((enum exp_type)t), r->registers,
           r->compile_ms);
    ucompile_report_free(r);
  }
}

static void test_compile(void) {
  const struct nvrtc_lib *lib = nvrtc;
  char msg[256];
  struct ucompile_report *r;
  const char *opts[] = {"-lineinfo"};
  struct ucompile_req req = req_of(padded33, opts, 1);
  CHECK_INT_EQ(ucompile_run(lib, &req, &r, msg, sizeof msg), 0);
  if (!r->ok) fprintf(stderr, "log: %s\nerror: %s\n", r->log, r->error);
  CHECK(r->ok);
  CHECK(r->image_bytes > 0);
  CHECK(r->has_usage);
  CHECK(r->registers > 0);
  CHECK_INT_EQ(r->shared_bytes, 32 * 33 * 4);
  CHECK_INT_EQ(r->spill_store_bytes, 0);
  CHECK(r->compile_ms > 0);
  /* The PTX beside the CUBIN: the entry, the target, the padded tile's 4224 bytes. */
  CHECK(r->ptx != NULL);
  CHECK(strstr(r->ptx, ".entry kernel") != NULL);
  CHECK(strstr(r->ptx, ".target sm_90") != NULL);
  CHECK(strstr(r->ptx, ".shared .align 4 .b8") != NULL && strstr(r->ptx, "[4224]") != NULL);
  /* -lineinfo's .file names the program, not the server's working directory. */
  char cwd[512], file_line[640];
  CHECK(getcwd(cwd, sizeof cwd) != NULL);
  snprintf(file_line, sizeof file_line, "\"%s/", cwd);
  CHECK(strstr(r->ptx, ".file") != NULL);
  CHECK(strstr(r->ptx, file_line) == NULL);
  snprintf(file_line, sizeof file_line, "\"%s\"", req.name);
  CHECK(strstr(r->ptx, file_line) != NULL);
  printf("padded33: %zu bytes of CUBIN, %d registers, %d bytes smem, %.1f ms\n", r->image_bytes,
         r->registers, r->shared_bytes, r->compile_ms);
  ucompile_report_free(r);

  /* A syntax error on line 3 of the user's source: 0 and ok false, the line, the log. */
  req = req_of(
      "extern \"C\" __global__ void kernel(const float *a, float *b, int m, int n) {\n"
      "  int x = threadIdx.x;\n"
      "  b[x] = a[x] +;\n"
      "}\n",
      NULL, 0);
  CHECK_INT_EQ(ucompile_run(lib, &req, &r, msg, sizeof msg), 0);
  CHECK(!r->ok);
  CHECK_INT_EQ(r->error_line, 3);
  CHECK(strstr(r->error, "error") != NULL);
  CHECK(strstr(r->log, "my_tile.cu(3)") != NULL);
  CHECK(r->ptx == NULL && r->image == NULL);
  CHECK(r->image == NULL);
  ucompile_report_free(r);

  /* Another signature than the experiment's: an error at the user's definition. */
  req = req_of("\nextern \"C\" __global__ void kernel(float *a, int m) {}\n", NULL, 0);
  CHECK_INT_EQ(ucompile_run(lib, &req, &r, msg, sizeof msg), 0);
  CHECK(!r->ok);
  printf("wrong signature: %s\n", r->error);
  CHECK(strstr(r->error, "does not have the experiment's signature") != NULL);
  CHECK(strstr(r->error, "kernel(const float *a, float *b, int m, int n)") != NULL);
  CHECK(strstr(r->error, "declares kernel(float *a, int m)") != NULL);
  CHECK_INT_EQ(r->error_line, 2);
  ucompile_report_free(r);

  /* The entry missing (declared by the signature only, or C++-mangled). */
  req = req_of(
      "__global__ void kernel(const float *a, float *b, int m, int n, int k) {}\n"
      "extern \"C\" __global__ void other(float *b) { b[0] = 1; }\n",
      NULL, 0);
  CHECK_INT_EQ(ucompile_run(lib, &req, &r, msg, sizeof msg), 0);
  CHECK(!r->ok);
  CHECK(strstr(r->error, "no extern \"C\" __global__ function named kernel") != NULL);
  ucompile_report_free(r);

  /* Refused before NVRTC: an option, an include, a bad entry. */
  const char *bad[] = {"-I/usr/include"};
  req = req_of(padded33, bad, 1);
  CHECK_INT_EQ(ucompile_run(lib, &req, &r, msg, sizeof msg), -EINVAL);
  CHECK(r == NULL);
  req = req_of("#include \"/etc/hostname\"\n", NULL, 0);
  CHECK_INT_EQ(ucompile_run(lib, &req, &r, msg, sizeof msg), -EINVAL);
  req = req_of(padded33, NULL, 0);
  req.entry = "bad name";
  CHECK_INT_EQ(ucompile_run(lib, &req, &r, msg, sizeof msg), -EINVAL);

  /* An architecture NVRTC does not know: a compile error (invalid option), no crash. */
  req = req_of(padded33, NULL, 0);
  req.arch = 1;
  CHECK_INT_EQ(ucompile_run(lib, &req, &r, msg, sizeof msg), 0);
  CHECK(!r->ok);
  ucompile_report_free(r);
}

/* Compiles src (a transpose kernel) into *r; ok or not, the caller frees it. */
static struct ucompile_report *compile_src(const struct nvrtc_lib *lib, const char *src,
                                           uint64_t max_var_bytes) {
  char msg[256];
  struct ucompile_report *r = NULL;
  struct ucompile_req req = req_of(src, NULL, 0);
  req.max_var_bytes = max_var_bytes;
  int rc = ucompile_run(lib, &req, &r, msg, sizeof msg);
  if (rc) CHECK_FAIL_("ucompile_run: %d %s", rc, msg);
  return r;
}

/* The variable named name in im, or NULL. */
static const struct uimage_var *var_named(const struct uimage *im, const char *name) {
  for (int i = 0; i < im->n_vars; i++)
    if (!strcmp(im->vars[i].name, name)) return &im->vars[i];
  return NULL;
}

#define KERNEL_HEAD \
  "extern \"C\" __global__ void kernel(const float *a, float *b, int m, int n) {\n"

/* The compile-time half of the red-team list: state that no runner can put back before
 * a launch is refused (stateful), state it can put back compiles and is listed with
 * its initial bytes. Each case's idea is in its comment. */
static void test_state(void) {
  const struct nvrtc_lib *lib = nvrtc;
  struct {
    const char *idea, *src, *word;
    int line;
  } refused[] = {
      /* A result cache in the device heap: malloc'ed once, found again by a later launch
       * through a __device__ pointer. */
      {"heap cache",
       "__device__ float *memo;\n" KERNEL_HEAD "  if (!memo) memo = (float *)malloc(4096);\n"
       "  b[0] = memo[0];\n}\n",
       "malloc", 3},
      /* The same with new and delete, which call malloc and free. */
      {"new/delete",
       KERNEL_HEAD "  float *t = new float[4];\n  t[0] = a[0];\n  b[0] = t[0];\n"
                   "  delete[] t;\n}\n",
       "malloc", 2},
      /* A launch counter in managed memory, which outlives every launch and is seen by
       * the host as well. */
      {"managed counter",
       "__managed__ int launches;\n" KERNEL_HEAD
       "  if (threadIdx.x == 0) atomicAdd(&launches, 1);\n  b[0] = a[0];\n}\n",
       "__managed__", 1},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    struct ucompile_report *r = compile_src(lib, refused[i].src, 0);
    if (r->ok || !r->stateful)
      CHECK_FAIL_("%s: not refused as stateful (ok %d, error '%s')", refused[i].idea, r->ok,
                  r->error);
    CHECK(r->image == NULL && r->image_bytes == 0);
    if (!strstr(r->error, refused[i].word))
      CHECK_FAIL_("%s: '%s' does not name %s", refused[i].idea, r->error, refused[i].word);
    if (r->error_line != refused[i].line)
      CHECK_FAIL_("%s: line %d, not %d", refused[i].idea, r->error_line, refused[i].line);
    ucompile_report_free(r);
  }

  /* Kept, and put back before every launch: a __device__ array (a cache keyed on the
   * input), an initialized counter, a __constant__ table, printf's format string. */
  struct ucompile_report *r = compile_src(
      lib,
      "__device__ float cache[1024];\n"
      "__device__ int counter = 7;\n"
      "static __device__ int hidden[4] = {1, 2, 3, 4};\n"
      "__constant__ float table[16] = {1.5f};\n" KERNEL_HEAD
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < m * n) b[i] = a[i] + cache[i % 1024] + table[i % 16] + hidden[i % 4];\n"
      "  if (i == 0) { counter++; printf(\"launch %d\\n\", counter); }\n"
      "}\n",
      0);
  if (!r->ok) CHECK_FAIL_("globals: %s\n%s", r->error, r->log);
  CHECK(!r->stateful);
  struct uimage im;
  char msg[256];
  CHECK_INT_EQ(uimage_inspect(r->image, r->image_bytes, &im, msg, sizeof msg), 0);
  CHECK_INT_EQ(r->n_vars, im.n_vars);
  CHECK_INT_EQ(r->var_bytes, im.var_bytes);
  const struct uimage_var *v = var_named(&im, "cache");
  CHECK(v && v->space == UIMAGE_GLOBAL && v->bytes == 4096 && v->init == NULL);
  CHECK((v = var_named(&im, "counter")) && v->bytes == 4 && v->init);
  int32_t seven;
  memcpy(&seven, v->init, 4);
  CHECK_INT_EQ(seven, 7);
  CHECK((v = var_named(&im, "table")) && v->space == UIMAGE_CONSTANT && v->bytes == 64 && v->init);
  float first;
  memcpy(&first, v->init, 4);
  CHECK_NEAR(first, 1.5, 0);
  int hidden = 0, strings = 0;
  for (int i = 0; i < im.n_vars; i++) {
    if (strstr(im.vars[i].name, "hidden") && im.vars[i].bytes == 16) hidden++;
    if (!strncmp(im.vars[i].name, "$str", 4)) strings++;
  }
  CHECK_INT_EQ(hidden, 1); /* a static one too, under whatever name the compiler gives it */
  CHECK(strings >= 1);     /* printf's format string */
  CHECK(im.stateful[0] == '\0');
  printf("globals: %d variables, %llu bytes\n", im.n_vars, (unsigned long long)im.var_bytes);

  /* Every prefix of the image is read safely: an error, never a read past its end. */
  for (size_t len = 0; len < r->image_bytes; len += len < 256 ? 1 : 61) {
    uint8_t *cut = malloc(len ? len : 1);
    memcpy(cut, r->image, len);
    struct uimage part;
    int rc = uimage_inspect(cut, len, &part, msg, sizeof msg);
    CHECK(rc == 0 || rc == -EINVAL);
    uimage_release(&part);
    free(cut);
  }
  uimage_release(&im);
  ucompile_report_free(r);

  /* More variable bytes than are put back before each launch: refused, saying so. */
  r = compile_src(
      lib, "__device__ float big[1 << 20];\n" KERNEL_HEAD "  b[0] = big[(int)a[0]];\n}\n", 1 << 20);
  CHECK(!r->ok && r->stateful);
  CHECK(strstr(r->error, "4194304 bytes") && strstr(r->error, "scratch_bytes"));
  ucompile_report_free(r);
}

/* The toolkit's headers compile with a user's kernel (half, WMMA, cooperative groups,
 * and CUDA 13's <cuda/barrier> from include/cccl when NVRTC has it), and a compile log
 * names nothing outside the toolkit. */
static void test_toolkit_headers(void) {
  const char *src =
      "#include <cuda_fp16.h>\n"
      "#include <mma.h>\n"
      "#include <cooperative_groups.h>\n"
      "extern \"C\" __global__ void kernel(const float *a, float *b, int m, int n) {\n"
      "  namespace cg = cooperative_groups;\n"
      "  cg::thread_block block = cg::this_thread_block();\n"
      "  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + "
      "threadIdx.y;\n"
      "  block.sync();\n"
      "  if (x < n && y < m) b[(size_t)x * m + y] = __half2float(__float2half(a[(size_t)y * n + "
      "x]));\n"
      "}\n";
  struct ucompile_report *r = compile_src(nvrtc, src, 0);
  if (!r->ok) fprintf(stderr, "%s\n%s\n", r->error, r->log);
  CHECK(r->ok);
  ucompile_report_free(r);
  if (nvrtc->n_include_dirs > 1) { /* include/cccl */
    r = compile_src(
        nvrtc,
        "#include <cuda/barrier>\n" KERNEL_HEAD
        "  if (threadIdx.x == 0 && blockIdx.x == 0 && m > 0 && n > 0) b[0] = a[0];\n}\n",
        0);
    if (!r->ok) fprintf(stderr, "%s\n%s\n", r->error, r->log);
    CHECK(r->ok);
    ucompile_report_free(r);
  }
  /* A header the toolkit does not have is refused before NVRTC reads anything. */
  char msg[256];
  struct ucompile_report *none = NULL;
  struct ucompile_req req = req_of("#include <shadow>\n" KERNEL_HEAD "}\n", NULL, 0);
  CHECK_INT_EQ(ucompile_run(nvrtc, &req, &none, msg, sizeof msg), -EINVAL);
  CHECK(none == NULL && strstr(msg, "not a header of the CUDA toolkit") != NULL);
}

/* A kernel stored before today's rules that they refuse (its image calls malloc, made
 * here with NVRTC directly, past ucompile's refusal): registered with its refusal, shown
 * by ukreg, and its runs unavailable saying why. */
static void test_stored_refusal(void) {
  const struct nvrtc_lib *lib = nvrtc;
  const char *src =
      "extern \"C\" __global__ void kernel(const float *a, float *b, int m, int n) {\n"
      "  float *t = (float *)malloc(16); t[0] = a[0]; b[0] = t[0]; free(t);\n}\n";
  nvrtc_program prog = NULL;
  CHECK_INT_EQ(lib->fn.create_program(&prog, src, "old.cu", 0, NULL, NULL), 0);
  const char *opts[] = {"--gpu-architecture=sm_90"};
  CHECK_INT_EQ(lib->fn.compile_program(prog, 1, opts), 0);
  size_t bytes = 0;
  CHECK_INT_EQ(lib->fn.get_cubin_size(prog, &bytes), 0);
  void *image = malloc(bytes);
  CHECK_INT_EQ(lib->fn.get_cubin(prog, image), 0);
  lib->fn.destroy_program(&prog);
  struct store_kernel row = {.id = 4242,
                             .owner = "old",
                             .name = "from_before",
                             .experiment = "transpose",
                             .spec = (char *)"{\"entry\":\"kernel\",\"block\":[32,8,1]}",
                             .report = (char *)"{}",
                             .image = image,
                             .image_bytes = bytes};
  CHECK_INT_EQ(ukernels_register(&row), 0);
  struct ukreg_kernel k;
  CHECK_INT_EQ(ukreg_identity(4242, &k), 0);
  if (!strstr(k.refused, "malloc")) CHECK_STR_EQ(k.refused, "it calls malloc ...");
  struct exp_spec spec;
  exp_spec_default(EXP_TRANSPOSE, &spec);
  struct exp_run run = {.variant = exp_user_variant(4242)};
  ukreg_set_cpu_runner(true);
  cpu_user_describe(&spec, &run);
  CHECK(!run.available);
  if (!strstr(run.reason, "refused by today's rules"))
    CHECK_STR_EQ(run.reason, "... refused by today's rules ...");
  printf("stored before the rules: %s\n", run.reason);
  ukreg_set_cpu_runner(false);
  ukreg_remove(4242);
  free(image);
}

static void test_cache(void) {
  const struct nvrtc_lib *lib = nvrtc;
  uint8_t k1[IMAGE_KEY_BYTES], k2[IMAGE_KEY_BYTES];
  char hex[65];
  CHECK_INT_EQ(image_sha256("abc", 3, k1), 0);
  image_key_hex(k1, hex);
  CHECK_STR_EQ(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

  const char *o1[] = {"-DA", "-DB"}, *o2[] = {"-DA -DB"}, *o3[] = {"-DB", "-DA"};
  struct ucompile_req a = req_of(padded33, o1, 2), b = req_of(padded33, o2, 1),
                      c = req_of(padded33, o3, 2);
  CHECK_INT_EQ(image_cache_key(&a, 13, 0, k1), 0);
  CHECK_INT_EQ(image_cache_key(&b, 13, 0, k2), 0);
  CHECK(memcmp(k1, k2, sizeof k1) != 0);
  CHECK_INT_EQ(image_cache_key(&c, 13, 0, k2), 0);
  CHECK(memcmp(k1, k2, sizeof k1) != 0);
  a.arch = 80;
  CHECK_INT_EQ(image_cache_key(&a, 13, 0, k2), 0);
  CHECK(memcmp(k1, k2, sizeof k1) != 0);
  a.arch = 90;
  CHECK_INT_EQ(image_cache_key(&a, 13, 1, k2), 0);
  CHECK(memcmp(k1, k2, sizeof k1) != 0);
  CHECK_INT_EQ(image_cache_key(&a, 13, 0, k2), 0);
  CHECK(memcmp(k1, k2, sizeof k1) == 0);

  struct image_cache *cache;
  CHECK_INT_EQ(image_cache_new(1 << 20, &cache), 0);
  struct ucompile_report *r1, *r2;
  bool cached;
  char msg[256];
  struct ucompile_req req = req_of(padded33, NULL, 0);
  CHECK_INT_EQ(image_cache_compile(cache, lib, &req, &r1, &cached, msg, sizeof msg), 0);
  CHECK(!cached && r1->ok);
  CHECK_INT_EQ(image_cache_compile(cache, lib, &req, &r2, &cached, msg, sizeof msg), 0);
  CHECK(cached && r2->ok);
  CHECK_INT_EQ(r2->image_bytes, r1->image_bytes);
  CHECK(memcmp(r1->image, r2->image, r1->image_bytes) == 0);
  CHECK_STR_EQ(r2->log, r1->log);
  CHECK(r1->ptx != NULL);
  CHECK_STR_EQ(r2->ptx, r1->ptx);
  struct image_cache_stats st;
  image_cache_stats(cache, &st);
  CHECK_INT_EQ(st.hits, 1);
  CHECK_INT_EQ(st.entries, 1);
  ucompile_report_free(r1);
  ucompile_report_free(r2);
  image_cache_free(cache);

  /* Eviction: a cache that holds one report keeps the latest. */
  CHECK_INT_EQ(image_cache_new(sizeof(struct ucompile_report) + 100, &cache), 0);
  struct ucompile_report small = {.ok = false, .log = (char *)"x"};
  uint8_t keys[3][IMAGE_KEY_BYTES];
  for (int i = 0; i < 3; i++) {
    memset(keys[i], i + 1, IMAGE_KEY_BYTES);
    small.error_line = i;
    CHECK_INT_EQ(image_cache_put(cache, keys[i], &small), 0);
  }
  image_cache_stats(cache, &st);
  CHECK(st.evictions >= 1);
  CHECK_INT_EQ(image_cache_get(cache, keys[2], &r1), 0);
  CHECK_INT_EQ(r1->error_line, 2);
  ucompile_report_free(r1);
  CHECK_INT_EQ(image_cache_get(cache, keys[0], &r1), -ENOENT);
  image_cache_free(cache);
}

static int setup(void) {
  int transpose = exp_type_from_name("transpose");
  CHECK(transpose >= 0 && exp_user_of((enum exp_type)transpose));
  transpose_decl = exp_user_of((enum exp_type)transpose)->declaration;
  char why[1024];
  if (nvrtc_lib_open(NULL, &nvrtc, why, sizeof why) != 0)
    CHECK_FAIL_("no NVRTC (the CUDA toolkit's libnvrtc.so, e.g. /usr/local/cuda/lib64): %s", why);
  printf("NVRTC %d.%d from %s, %d architectures, sm_90 %s\n", nvrtc->major, nvrtc->minor,
         nvrtc->path, nvrtc->n_archs, nvrtc_lib_supports(nvrtc, 90) ? "yes" : "no");
  return 0;
}

static void teardown(void) { nvrtc_lib_free(nvrtc); }

static void test_lib_open(void) {
  struct nvrtc_lib *lib = NULL;
  char why[1024];
  CHECK_INT_EQ(nvrtc_lib_open("/nonexistent/libnvrtc.so", &lib, why, sizeof why), -ENOENT);
  CHECK(strstr(why, "/nonexistent/libnvrtc.so") != NULL);
  CHECK(nvrtc_lib_supports(nvrtc, 90));
}

static const struct test_case cases[] = {
    TEST(test_options),
    TEST(test_source_check),
    TEST(test_log_parsing),
    TEST(test_lib_open),
    TEST(test_templates),
    TEST(test_compile),
    TEST(test_state),
    TEST(test_toolkit_headers),
    TEST(test_stored_refusal),
    TEST(test_cache),
    TEST_END,
};
const struct test_suite test_suite = {.cases = cases, .setup = setup, .teardown = teardown};
