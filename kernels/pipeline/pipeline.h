/* The pipeline experiment (the lecture's streams, pinned memory and events): chunk *
 * chunks phases uploaded, turned into y[i] = sum_{k=1..terms} sin(k x[i]) / k by the
 * `synthesize` kernel and downloaded, over 1..32 streams; one run per entry of its
 * `streams` list. Its descriptor, plans and reference (pipeline.c), the CPU passes
 * (pipeline_cpu.c: threads stand in for streams) and the CUDA passes (pipeline.cu). */
#ifndef GPULAB_PIPELINE_H
#define GPULAB_PIPELINE_H

#include "kernels/core/experiment.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Params (exp_spec.p[]); its runs are the entries of "streams" (exp_spec.variants). */
enum pipeline_param { PIPELINE_CHUNK, PIPELINE_CHUNKS, PIPELINE_TERMS };
#define PIPELINE_MAX_CHUNK (1 << 28)
#define PIPELINE_MAX_CHUNKS 64
#define PIPELINE_MAX_TERMS 4096
#define PIPELINE_MAX_STREAMS 32 /* largest stream count a run may use */

/* Generated phases: gen_uniform * this, in [-pi, pi). */
#define PIPELINE_PHASE_SCALE 3.14159265f

/* Entries of "streams" that are not counts: "best" in a request asks for both, the
 * best overlap the copy engines allow (chunking and streams chosen from the total
 * size, issued chunk by chunk) and the same pass as one CUDA Graph. */
#define PIPELINE_STREAMS_BEST 0
#define PIPELINE_STREAMS_BEST_GRAPH (-1)
#define PIPELINE_BEST_CHUNK_MIN_BYTES (1 << 20) /* best's chunks: total / 24, clamped */
#define PIPELINE_BEST_CHUNK_MAX_BYTES (16 << 20)
#define PIPELINE_BEST_STREAMS 4

/* The plan of streams entry `entry` (a count, or PIPELINE_STREAMS_BEST*) of spec
 * (experiment.h's exp_pipeline_plan). Cannot fail; a total of 0 gives 0 chunks. */
void pipeline_plan(const struct exp_spec *spec, int entry, struct exp_pipeline_plan *plan);
/* Floats in chunk c of plan. */
int64_t pipeline_chunk_len(const struct exp_pipeline_plan *plan, int c);

/* ---- private to kernels/pipeline/: the CPU passes (pipeline_cpu.c) ---- */

/* One pass of the run's entry over all chunks: upload (the input to the first half of
 * scratch), synthesize (to the second half), download (to out), each chunk on its
 * stream (a thread started for the pass; the caller is stream 0), in the plan's order.
 * Records the pass's timeline when call->timeline is set. */
int pipeline_cpu_pass(const struct exp_cpu_call *call);
size_t pipeline_cpu_scratch_floats(const struct exp_spec *spec); /* 2 * chunk * chunks */
/* Each run's plan and name on the CPU; best_graph is unavailable there. */
void pipeline_cpu_describe(const struct exp_spec *spec, struct exp_run *run);

#ifdef __cplusplus
}
#endif
#endif
