/* The pipeline experiment's descriptor: phases x (chunk * chunks) in, y out, one run
 * per streams entry with its plan, checked against an FP64 sum of sines; GB/s moved =
 * 8 chunk chunks / t against the device's both-directions copy. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/core/gen.h"
#include "kernels/core/reference_impl.h"
#include "kernels/pipeline/pipeline.h"

static void input_shape(const struct exp_spec *s, int slot, struct exp_shape *shape) {
  *shape = (struct exp_shape){1, {(int64_t)s->p[PIPELINE_CHUNK] * s->p[PIPELINE_CHUNKS], 0}};
}

static void output_shape(const struct exp_spec *s, struct exp_shape *shape) {
  input_shape(s, 0, shape);
}

/* x's element count is chunk * chunks: chunks follows from a chunk the request gave
 * (at most PIPELINE_MAX_CHUNKS), else chunk from chunks. */
static int fit_input(struct exp_spec *s, int slot, const struct exp_shape *shape, char *msg,
                     size_t len) {
  int64_t count = exp_shape_count(shape), chunk = s->p[PIPELINE_CHUNK],
          chunks = s->p[PIPELINE_CHUNKS];
  bool ok;
  if (s->dims_given & (1u << PIPELINE_CHUNK)) {
    ok = chunk > 0 && count % chunk == 0 && count / chunk <= PIPELINE_MAX_CHUNKS;
    chunks = ok ? count / chunk : 0;
  } else {
    ok = chunks > 0 && count % chunks == 0;
    chunk = ok ? count / chunks : 0;
  }
  if (!ok || chunk < 1 || chunk > INT32_MAX || chunks < 1)
    return exp_fit_mismatch(s, slot, shape, "its length must be chunk * chunks", msg, len);
  s->p[PIPELINE_CHUNK] = (int)chunk;
  s->p[PIPELINE_CHUNKS] = (int)chunks;
  s->dims_given |= 1u << PIPELINE_CHUNK;
  return 0;
}

static void work(const struct exp_spec *s, struct exp_work *w) {
  double n = (double)s->p[PIPELINE_CHUNK] * s->p[PIPELINE_CHUNKS];
  w->bytes = 8.0 * n;
  w->flops = (double)s->p[PIPELINE_TERMS] * n;
  w->counted =
      "bytes: uploaded and downloaded over the bus; flops: sin terms (terms per "
      "sample), not counted in the figure";
}

/* ---- plans ---- */

/* best: chunks of about total / 24 (between 1 and 16 MiB, whole KiB), enough that
 * filling and draining the pipeline costs little, big enough that each copy runs at
 * the bus's speed; four streams, so that the upload of chunk c+3 never queues behind
 * the download of chunk c on its stream. */
static void best_plan(int64_t total, struct exp_pipeline_plan *p) {
  int64_t bytes = total * (int64_t)sizeof(float), target = bytes / 24;
  if (target < PIPELINE_BEST_CHUNK_MIN_BYTES) target = PIPELINE_BEST_CHUNK_MIN_BYTES;
  if (target > PIPELINE_BEST_CHUNK_MAX_BYTES) target = PIPELINE_BEST_CHUNK_MAX_BYTES;
  int64_t chunk = (target / (int64_t)sizeof(float) + 1023) / 1024 * 1024;
  if (chunk > total) chunk = total;
  p->chunk = chunk;
  p->chunks = chunk > 0 ? (int)((total + chunk - 1) / chunk) : 0;
  p->streams = p->chunks < PIPELINE_BEST_STREAMS ? (p->chunks > 0 ? p->chunks : 1)
                                                 : PIPELINE_BEST_STREAMS;
  p->depth_first = true;
  p->best = true;
}

void pipeline_plan(const struct exp_spec *spec, int entry, struct exp_pipeline_plan *p) {
  memset(p, 0, sizeof *p);
  p->total = (int64_t)spec->p[PIPELINE_CHUNK] * spec->p[PIPELINE_CHUNKS];
  if (entry == PIPELINE_STREAMS_BEST || entry == PIPELINE_STREAMS_BEST_GRAPH) {
    best_plan(p->total, p);
    p->graph = entry == PIPELINE_STREAMS_BEST_GRAPH;
    return;
  }
  p->chunk = spec->p[PIPELINE_CHUNK];
  p->chunks = spec->p[PIPELINE_CHUNKS];
  p->streams = entry;
}

int64_t pipeline_chunk_len(const struct exp_pipeline_plan *p, int c) {
  int64_t start = (int64_t)c * p->chunk, left = p->total - start;
  return left < 0 ? 0 : left < p->chunk ? left : p->chunk;
}

/* ---- the reference ---- */

/* The kernel's sinf argument is the float product (float)k * x; the reference takes
 * that same argument, then sin, division and sum in double. */
static int ref_init(struct reference *ref) {
  int terms = ref->spec.p[PIPELINE_TERMS];
  double *want = reference_alloc(ref->out_len, sizeof *want);
  if (!want) return -ENOMEM;
  ref->state = want;
  for (size_t i = 0; i < ref->out_len; i++) {
    double sum = 0;
    for (int k = 1; k <= terms; k++) sum += sin((double)((float)k * ref->in[0][i])) / k;
    want[i] = sum;
  }
  return 0;
}

static void ref_check(const struct reference *ref, int entry, const float *out,
                      struct exp_check *c) {
  const double *want = ref->state;
  double tol = 2e-6 * ref->spec.p[PIPELINE_TERMS] + 1e-6;
  for (size_t i = 0; i < ref->out_len; i++) reference_compare(c, out[i], want[i], tol);
  c->tolerance = tol;
  snprintf(c->tolerance_rule, sizeof c->tolerance_rule, "|y - ref| <= 2e-6 * terms + 1e-6");
  snprintf(c->reference, sizeof c->reference, "cpu fp64");
}

/* ---- the descriptor ---- */

static const struct exp_param params[] = {
    [PIPELINE_CHUNK] = {"chunk", 1, PIPELINE_MAX_CHUNK, 1 << 20, EXP_PARAM_DIM, 1001,
                        "floats per chunk"},
    [PIPELINE_CHUNKS] = {"chunks", 1, PIPELINE_MAX_CHUNKS, 3, 0, 5, "chunks per pass"},
    [PIPELINE_TERMS] = {"terms", 1, PIPELINE_MAX_TERMS, 64, 0, 17, "sine terms per element"},
};

static const struct exp_runs_param streams = {
    .name = "streams",
    .noun = "stream count",
    .min = 1,
    .max = PIPELINE_MAX_STREAMS,
    .word = "best",
    .n_word_runs = 2,
    .word_runs = {PIPELINE_STREAMS_BEST, PIPELINE_STREAMS_BEST_GRAPH},
    .word_labels = {"best", "best_graph"},
    .word_gives = "\"best\" gives two: best and best_graph",
    .n_defaults = 2,
    .defaults = {1, 3},
};

static const struct exp_input_desc inputs[] = {{"x", GEN_X, PIPELINE_PHASE_SCALE}};

const struct exp_desc exp_pipeline = {
    .name = "pipeline",
    .title = "Pipeline",
    .doc =
        "Upload, synthesize kernel and download of every chunk over 1..n streams. Figure: GB/s "
        "moved = 8 · chunk · chunks / t.",
    .flags = EXP_NO_COLD,
    .no_cold_why = "a pass starts from host memory, so the L2 holds nothing of it to flush",
    .n_params = EXP_COUNT_OF(params),
    .params = params,
    .runs = &streams,
    .n_inputs = EXP_COUNT_OF(inputs),
    .inputs = inputs,
    .input_shape = input_shape,
    .output_shape = output_shape,
    .fit_input = fit_input,
    .timing = {5, 9, 1}, /* the lecture's: 5 warm-ups, 9 samples of one pass */
    .work = work,
    .figure = EXP_FIGURE_GBPS,
    .ceiling = EXP_CEILING_BIDIR, /* its figure counts both directions */
    .ref_init = ref_init,
    .ref_check = ref_check,
    .cpu_run = pipeline_cpu_pass,
    .cpu_describe = pipeline_cpu_describe,
    .cpu_scratch_floats = pipeline_cpu_scratch_floats,
};
