/* The wire between gpulabd and its runner (gpulab-runner): frames over a socketpair,
 * each a header and a fixed payload struct, with file descriptors riding along
 * (SCM_RIGHTS) where the CPU mode shares buffers as memfds. Both ends are built from
 * the same tree, so payloads are the structs below as they lie in memory; the HELLO
 * carries RUNNER_PROTO_VERSION and a mismatch ends the runner. One request, one
 * answer, in order: gpulabd sends, the runner answers with OK, HELLO, LOADED, DONE,
 * FAULT or ERROR. */
#ifndef GPULAB_RUNNER_PROTO_H
#define GPULAB_RUNNER_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/core/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RUNNER_PROTO_MAGIC 0x4e524c47u /* "GLRN" */
#define RUNNER_PROTO_VERSION 8 /* 8: a problem's inputs given (runner_problem_input.given) */
#define RUNNER_MAX_BUFFERS 8
#define RUNNER_MAX_ARGS 12
#define RUNNER_MAX_IMAGE_BYTES (64u << 20)
#define RUNNER_FD 3 /* the runner's end of the socketpair, as exec leaves it */

enum runner_msg {
  /* gpulabd -> runner */
  RUNNER_MSG_ATTACH = 1, /* runner_attach_msg (+ one memfd per buffer in CPU mode) */
  RUNNER_MSG_DETACH,     /* no payload: forget the buffers */
  RUNNER_MSG_LOAD,       /* runner_load_msg + the image's bytes */
  RUNNER_MSG_RUN,        /* runner_run_msg */
  RUNNER_MSG_PING,       /* no payload */
  RUNNER_MSG_EXIT,       /* no payload: the runner answers OK and exits 0 */
  RUNNER_MSG_PROBLEM,    /* runner_problem_msg: a problem's buffers; answered PROBLEM_READY */
  /* runner -> gpulabd */
  RUNNER_MSG_HELLO = 32,    /* runner_hello_msg, once at start */
  RUNNER_MSG_OK,            /* no payload */
  RUNNER_MSG_LOADED,        /* runner_loaded_msg */
  RUNNER_MSG_DONE,          /* runner_done_msg */
  RUNNER_MSG_FAULT,         /* runner_fault_msg: the kernel faulted; the runner exits next */
  RUNNER_MSG_ERROR,         /* runner_error_msg: the request failed, the runner goes on */
  RUNNER_MSG_PROBLEM_READY, /* runner_problem_ready_msg */
};

struct runner_hdr {
  uint32_t magic;
  uint32_t type; /* enum runner_msg */
  uint32_t len;  /* payload bytes after the header */
  uint32_t n_fds;
};

enum runner_mode { RUNNER_MODE_CPU = 1, RUNNER_MODE_CUDA = 2 };

struct runner_hello_msg {
  uint32_t version, mode; /* RUNNER_PROTO_VERSION, enum runner_mode */
  int32_t pid, device;
  /* The device's launch limits (CUDA; CPU mode: generous stand-ins). */
  int32_t cc_major, cc_minor, sms;
  int32_t max_threads_per_block, max_block[3], max_grid[3];
  int32_t max_shared_per_block, max_shared_optin;
  char name[96];
};

/* A buffer of the job: in CUDA mode an IPC handle of a cudaMalloc allocation and the
 * buffer's offset in it; in CPU mode a memfd (in the frame's fds, in order) mapped
 * whole. */
struct runner_buffer_desc {
  uint64_t bytes;
  uint64_t offset;
  uint8_t ipc[64]; /* cudaIpcMemHandle_t */
};
struct runner_attach_msg {
  uint32_t n;
  struct runner_buffer_desc buf[RUNNER_MAX_BUFFERS];
};

struct runner_load_msg {
  uint8_t key[32]; /* the image's key: a runner keeps its modules by it until DETACH */
  char entry[64];
  uint64_t image_bytes; /* the bytes that follow this struct */
};
struct runner_loaded_msg {
  int32_t registers, static_shared_bytes, local_bytes, max_threads_per_block;
  int32_t cached; /* 1: the module was loaded already */
};

enum runner_arg_kind { RUNNER_ARG_BUFFER = 1, RUNNER_ARG_I32 = 2 };
struct runner_arg {
  uint32_t kind; /* enum runner_arg_kind */
  int32_t value; /* a buffer's index in the attach, or the int */
};

/* What the runner's own check of a timed launch computes (runner_fresh.check). */
enum runner_check {
  RUNNER_CHECK_NONE = 0,
  RUNNER_CHECK_TRANSPOSE, /* (a, b, m, n): b = a^T, exactly; p = {m, n} */
  RUNNER_CHECK_GEMM,      /* (A, B, C, m, n, k): C = A B within k 2^-23 sum |a b|; p = {m, n, k} */
  RUNNER_CHECK_STENCIL,   /* (x, y, n, r): y[i] = window sum / (2r+1) within its rule; p = {n, r} */
  RUNNER_CHECK_REDUCE,    /* (x, out, n): out[0] = sum x within any order's rule; p = {n} */
  RUNNER_CHECK_SCAN,      /* (x, y, n): y[i] = x[0] + ... + x[i] within any order's rule; p = {n} */
  RUNNER_CHECK_HISTOGRAM, /* (x, counts, n, bins): exact counts (uint32); p = {n, bins} */
};
#define RUNNER_MAX_FRESH 4

/* Fresh inputs and a check at every timed launch (a run's timed requests when check is
 * not NONE): before launch l of the request, untimed, input buffer i (0 .. n_in-1 of the
 * attach) is filled with gen_uniform(seed + l, stream[i], index) * scale[i] (gen.h), a
 * seed the kernel cannot predict (gpulabd draws it from its CSPRNG per request); after
 * it, untimed, the output is compared with what the experiment's definition gives on
 * those inputs (every element; gemm: sample_rows rows drawn from the launch's seed, 0:
 * all), every output element must be finite, and the inputs with what was generated.
 * The answer (runner_done_msg.bad_*) names the first launch that failed. */
struct runner_fresh {
  uint32_t check; /* enum runner_check */
  uint32_t n_in;
  uint32_t stream[RUNNER_MAX_FRESH];
  float scale[RUNNER_MAX_FRESH];
  uint64_t floats[RUNNER_MAX_FRESH];
  int64_t p[4];
  uint64_t seed;
  uint32_t sample_rows;
  uint32_t pad;
};

/* ---- problems users define (api/problem_def.h, docs/problems.md) ----
 * A problem's job gives the runner no buffers but the inputs given as data (ATTACHed
 * first): RUNNER_MSG_PROBLEM (after LOADs of the reference's image and the kernels')
 * describes its inputs and outputs at the job's params, and the runner allocates them
 * itself (in CUDA mode; the CPU mode answers -ENOTSUP), until DETACH or the next
 * PROBLEM: the inputs, generated on the device from `seed` (the job's) or copied from
 * the attached buffer given; the reference's outputs on them, from two launches of the
 * reference compared with each other (the answer says whether they agreed); per run,
 * its own outputs. RUN requests with `problem` set then launch a kernel of it with the
 * problem's arguments: every input (const T *), every output of that run (T *), the
 * params (int, in order), then a zeroed scratch of scratch_bytes when it has one. */
#define RUNNER_PROBLEM_MAX_BUFFERS 8 /* inputs, and outputs, each */
#define RUNNER_PROBLEM_MAX_PARAMS 16
#define RUNNER_PROBLEM_MAX_RUNS 8 /* runs (reference included) that have outputs at once */

/* api/problem_def.h's dtypes and inits, numbered as there. */
enum runner_dtype {
  RUNNER_DTYPE_FLOAT32,
  RUNNER_DTYPE_FLOAT16,
  RUNNER_DTYPE_BFLOAT16,
  RUNNER_DTYPE_INT32,
  RUNNER_DTYPE_UINT32,
  RUNNER_DTYPE_INT8
};
enum runner_init { RUNNER_INIT_UNIFORM, RUNNER_INIT_NORMAL, RUNNER_INIT_INTEGERS };

/* An input: elems elements of dtype, element i of a set generated from seed s drawn as
 * init says with (a, b) (uniform [a, b), normal (mean a, std b), integers [a, b]) from
 * gen.h's counter-based generator at (s, stream = the input's index, i), rounded to
 * dtype the way CUDA's conversions round (round to nearest even). given (0: none): the
 * job's values of it are in attached buffer given - 1 (ATTACH before PROBLEM; at least
 * elems of dtype), copied in wherever the job's inputs are made; fresh launches still
 * get generated ones. */
struct runner_problem_input {
  uint32_t dtype, init;
  double a, b;
  uint64_t elems;
  uint32_t given, pad;
};
/* An output: elems of dtype; a run's element passes when it equals the reference's bit
 * for bit (exact) or |got - want| <= abs + rel * |want| (both finite: a NaN or an
 * infinity where the reference has a finite value fails, and the reverse). */
struct runner_problem_output {
  uint32_t dtype, exact;
  double abs, rel;
  uint64_t elems;
};
struct runner_problem_msg {
  uint32_t n_in, n_out, n_params, nondeterministic;
  struct runner_problem_input in[RUNNER_PROBLEM_MAX_BUFFERS];
  struct runner_problem_output out[RUNNER_PROBLEM_MAX_BUFFERS];
  int32_t params[RUNNER_PROBLEM_MAX_PARAMS];
  uint64_t scratch_bytes; /* 0: the kernels take no scratch argument */
  uint64_t seed;          /* the job's inputs */
  /* The reference: a loaded image, its launch at these params. */
  uint8_t ref_key[32];
  uint32_t ref_grid[3], ref_block[3], ref_shared_bytes;
  uint32_t n_runs; /* outputs to allocate: one set per run, 1 .. RUNNER_PROBLEM_MAX_RUNS */
};
/* The reference's two launches on the job's inputs: agreed (bit for bit, or within the
 * tolerance when nondeterministic); else differ elements of output `output` differed,
 * the first at `index`. */
struct runner_problem_ready_msg {
  uint32_t agreed, output;
  uint64_t differ, index;
  double ref_ms; /* the reference's second launch, in ms (events; for the log) */
};
/* The comparison of one run's outputs with the reference's on the job's inputs (a RUN
 * request's problem.compare), over every element of every output. */
struct runner_problem_check {
  uint64_t compared, mismatches; /* elements, over all outputs */
  uint32_t first_output, pad;    /* of the first mismatch, when any */
  uint64_t first_index;
  double max_abs_err, max_rel_err; /* over the elements compared (non-finite ones: mismatches) */
  double got, want;                /* at the first mismatch */
};
/* runner_run_msg.problem: a RUN of a problem's kernel (key: its image, or the reference's). */
struct runner_problem_run {
  uint32_t on;  /* 1: this RUN is a problem's; args, out_buffer, out_floats, fresh ignored */
  uint32_t run; /* which set of outputs (0 .. n_runs-1) the launches write */
  /* 1: after the n launches (untimed: on the job's inputs), compare the outputs with the
   * reference's on the job's inputs: the answer's problem_check. */
  uint32_t compare;
  /* Timed launches each run on fresh inputs: before launch l, untimed, every input is
   * generated from fresh_seed + l (fresh_seed drawn by gpulabd from its CSPRNG per
   * request) and the run's outputs poisoned (all bits set); after it, untimed, the
   * inputs are compared with what was generated, the reference is launched on those
   * inputs into a set of its own (after the kernel: no answer is in the device's memory
   * while it runs) and the outputs compared with that reference's. The answer's bad_*
   * name the first launch that failed (bad_what 1: output bad_input wrong in bad_count
   * elements, the first at bad_index; 2: input bad_input changed), and fresh_checked
   * counts the launches checked. Then the job's inputs are made again (from the job's
   * seed, or copied from what was given), so that the next request finds them. fresh_seed 0: no fresh inputs
   * (untimed). compare's truth is likewise the reference launched on the job's inputs
   * after the run's launches; the reference's sets are poisoned once PROBLEM compared
   * its two launches. */
  uint64_t fresh_seed;
};

/* n launches of the loaded image `key`. poison_each: fill the output with NaN (all
 * bits set; with reset_zero: with 0.0f, for a kernel that accumulates into it) before
 * every launch, outside the timed part; timed: answer the mean ms of one launch
 * (events in the runner's own context; per launch when poison_each or cold, else one
 * pair around all n). cold (0 or 1; a timed run's): before every launch, untimed and
 * after the poisoning, flush the L2 as gpulabd flushes it for its built-ins
 * (kernels/backends/cuda/cuda_l2flush.h: a kernel reads a scratch buffer of twice the
 * device's L2, cudaDevAttrL2CacheSize, allocated once per runner and kept), then time
 * that one launch alone; the CPU mode accepts it and flushes nothing (runner_cpu.c
 * says why). deadline_ms is a launch's: gpulabd kills a runner whose answer has not
 * come within n of them and a margin.
 * Before every launch, timed or not, untimed: the module's variables are put back to
 * their initial values from the image (uimage.h; CUDA mode), and with scratch_bytes > 0
 * a scratch buffer of that many bytes, the runner's own, is zeroed and passed as one
 * more last argument after args. So nothing a launch leaves in the module or the
 * scratch reaches the next. */
struct runner_run_msg {
  uint8_t key[32];
  uint32_t grid[3], block[3];
  uint32_t dyn_shared_bytes;
  uint32_t n_args;
  struct runner_arg args[RUNNER_MAX_ARGS];
  uint32_t out_buffer; /* index of the output buffer */
  uint64_t out_floats; /* its floats to poison */
  uint32_t n_launches;
  uint32_t poison_each, timed;
  uint32_t reset_zero;
  uint32_t cold;
  /* 1: launch with cuLaunchCooperativeKernel (a grid-wide sync may be used); the runner
   * refuses a grid of more blocks than fit on the device at once. */
  uint32_t cooperative;
  /* 1: the one launch (n_launches 1, untimed) runs under CUPTI's range profiler
   * (kernels/backends/cuda/cuda_profiler.h) in the runner's context; the answer's
   * profile holds its counters, or why it has none. */
  uint32_t profile;
  double deadline_ms;
  uint64_t scratch_bytes;
  struct runner_fresh fresh;
  struct runner_problem_run problem;
};
struct runner_done_msg {
  double ms_per_launch; /* timed runs; 0 otherwise */
  double wall_ms;       /* the runner's wall time for the request */
  uint32_t
      l2_flushes; /* L2 flushes done before the launches (cold: n in CUDA mode, 0 in CPU mode) */
  uint32_t pad;
  uint64_t flush_bytes; /* the bytes each of them read (2x the device's L2); 0 when none */
  /* Fresh runs (runner_fresh): launches checked, and the first that failed (1-based; 0:
   * none): bad_what 1 its output was wrong in bad_count elements, the first at
   * bad_index; 2 it changed input bad_input (bad_count elements, the first at
   * bad_index). */
  uint32_t fresh_checked, bad_launch, bad_what, bad_input;
  uint64_t bad_count, bad_index;
  struct exp_profile profile; /* runner_run_msg.profile's answer; requested false otherwise */
  struct runner_problem_check problem_check; /* runner_run_msg.problem.compare's answer */
};

struct runner_fault_msg {
  char name[64]; /* e.g. "cudaErrorIllegalAddress", "SIGSEGV" */
  char msg[192];
};
struct runner_error_msg {
  int32_t code; /* a negative errno value */
  char msg[256];
};

/* Sends one frame: header, payload, and fds (n_fds of them, may be 0). Returns 0 or a
 * negative errno (-EPIPE: the other end is gone). Blocks; writes it whole. */
int runner_send(int sock, uint32_t type, const void *payload, size_t len, const void *extra,
                size_t extra_len, const int *fds, int n_fds);
/* Receives one frame: its header into hdr, its payload into *payload (malloc'ed, the
 * caller frees it; NULL when len is 0; at most RUNNER_MAX_IMAGE_BYTES + 4 KiB, a longer
 * frame is -EPROTO), and up to max_fds fds into fds (*n_fds of them, owned by the
 * caller then; extra ones are closed). timeout_ms < 0: wait for ever, else for the
 * whole frame. Returns 0, -ETIMEDOUT, -EPIPE when the other end closed, -EPROTO for a
 * bad frame, or another negative errno. */
int runner_recv(int sock, struct runner_hdr *hdr, void **payload, int *fds, int max_fds, int *n_fds,
                int timeout_ms);

#ifdef __cplusplus
}
#endif
#endif
