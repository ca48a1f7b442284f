/* The lecture's table of a job, as gpulabctl prints it: one row per run (variant,
 * check, median with the quartiles of its samples, figure, % of the device's ceiling,
 * speedup against the first run with its range); runs that did not run say why. A
 * job that asked for a profile: the lecture's counters of each run's kernels below it
 * (sectors per request, bank conflicts, occupancy, DRAM and L2), or why it has none. */
#ifndef GPULAB_CTL_TABLE_H
#define GPULAB_CTL_TABLE_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

/* Prints job (a job document) to f: a head line, then the table of its result, or its
 * error. */
void ctl_table_print(FILE *f, json_t *job);

/* Whether the job is done and every run that ran passed its check. */
bool ctl_job_passed(json_t *job);

#endif
