/* profile.h: the metrics' table and a run's profile marked unavailable. */
#include "kernels/core/profile.h"

#include <stdio.h>

/* NVIDIA's names are Nsight Compute's (ncu --query-metrics lists them); where the
 * API's value is a formula of several, the formula is NVIDIA's own (its roofline's
 * FP32 count: adds and multiplies once, fused multiply-adds twice). */
const struct exp_profile_metric_def exp_profile_metrics[EXP_METRIC_COUNT] = {
    [EXP_METRIC_DURATION_NS] = {"duration_ns", "gpu__time_duration.sum", "ns",
                                "the kernel's time under the profiler (clocks as stated)"},
    [EXP_METRIC_DRAM_READ_BYTES] = {"dram_bytes_read", "dram__bytes_read.sum", "bytes",
                                    "bytes read from device memory"},
    [EXP_METRIC_DRAM_WRITE_BYTES] = {"dram_bytes_written", "dram__bytes_write.sum", "bytes",
                                     "bytes written to device memory (lines still dirty in "
                                     "the L2 at the kernel's end are not counted)"},
    [EXP_METRIC_DRAM_PEAK_PCT] = {"dram_peak_pct",
                                  "dram__throughput.avg.pct_of_peak_sustained_elapsed", "%",
                                  "device memory throughput, % of its peak"},
    [EXP_METRIC_L2_HIT_PCT] = {"l2_hit_pct", "lts__t_sector_hit_rate.pct", "%",
                               "L2 sectors that hit"},
    [EXP_METRIC_LOAD_SECTORS] = {"global_load_sectors",
                                 "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sectors",
                                 "32-byte sectors that global loads touched"},
    [EXP_METRIC_LOAD_REQUESTS] = {"global_load_requests",
                                  "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "requests",
                                  "global load instructions, one request per warp"},
    [EXP_METRIC_STORE_SECTORS] = {"global_store_sectors",
                                  "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "sectors",
                                  "32-byte sectors that global stores touched"},
    [EXP_METRIC_STORE_REQUESTS] = {"global_store_requests",
                                   "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "requests",
                                   "global store instructions, one request per warp"},
    [EXP_METRIC_SHARED_LOAD_CONFLICTS] =
        {"shared_load_bank_conflicts", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
         "conflicts", "extra shared-memory wavefronts of loads"},
    [EXP_METRIC_SHARED_STORE_CONFLICTS] = {"shared_store_bank_conflicts",
                                           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st."
                                           "sum",
                                           "conflicts", "extra shared-memory wavefronts of stores"},
    [EXP_METRIC_SHARED_LOAD_REQUESTS] = {"shared_load_requests",
                                         "smsp__sass_inst_executed_op_shared_ld.sum", "requests",
                                         "shared-memory load instructions, one request per warp"},
    [EXP_METRIC_SHARED_STORE_REQUESTS] = {"shared_store_requests",
                                          "smsp__sass_inst_executed_op_shared_st.sum", "requests",
                                          "shared-memory store instructions, one request per warp"},
    [EXP_METRIC_ACHIEVED_OCCUPANCY_PCT] = {"achieved_occupancy_pct",
                                           "sm__warps_active.avg.pct_of_peak_sustained_active", "%",
                                           "warps resident per active cycle, % of the most"},
    /* Nsight Compute works this one out from the launch (CUPTI's host API has no such
     * counter on GH100): NVIDIA's occupancy calculator gives it (occupancy.h). */
    [EXP_METRIC_THEORETICAL_OCCUPANCY_PCT] = {"theoretical_occupancy_pct",
                                              "cudaOccMaxActiveBlocksPerMultiprocessor", "%",
                                              "the most warps this launch shape lets reside"},
    [EXP_METRIC_SM_THROUGHPUT_PCT] = {"sm_throughput_pct",
                                      "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%",
                                      "the busiest SM unit, % of its peak"},
    [EXP_METRIC_FP32_FLOPS] = {"fp32_flops",
                               "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum + "
                               "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum + 2 * "
                               "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
                               "flops", "FP32 operations executed by threads"},
    [EXP_METRIC_TENSOR_PIPE_PCT] = {"tensor_pipe_pct",
                                    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_"
                                    "active",
                                    "%", "cycles the tensor cores were busy, % of the most"},
};

const char *exp_profile_mode_name(enum exp_profile_mode mode) {
  switch (mode) {
  case EXP_PROFILE_COUNTERS: return "counters";
  case EXP_PROFILE_FULL: return "full";
  default: return NULL;
  }
}

void exp_profile_unavailable(struct exp_profile *p, const char *reason) {
  p->requested = true;
  p->available = false;
  p->n_kernels = 0;
  snprintf(p->reason, sizeof p->reason, "%s", reason ? reason : "");
}
