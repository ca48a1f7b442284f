/* The lecture's table (ctl_table.h). */
#include "clients/cli/ctl_table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* variant, median [quartiles], figure, % of ceiling, speedup [range], check */
#define ROW "%-16s %-28s %-16s %-7s %-20s %s\n"

static const char *str(json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The q-quantile of the samples (linear between order statistics, as the dashboard's
 * whiskers); NAN when there are none. */
static double quantile(json_t *samples, double q) {
  size_t n = json_array_size(samples);
  if (n == 0) return NAN;
  double *v = malloc(n * sizeof *v);
  if (!v) return NAN;
  for (size_t i = 0; i < n; i++) v[i] = json_number_value(json_array_get(samples, i));
  qsort(v, n, sizeof *v, by_value);
  double at = q * (double)(n - 1), lo = floor(at);
  size_t i = (size_t)lo;
  double x = i + 1 < n ? v[i] + (at - lo) * (v[i + 1] - v[i]) : v[i];
  free(v);
  return x;
}

/* The run's check, short: "passed", "FAILED 3 of 1961", "failed: timed launch ...". */
static void check_cell(json_t *run, char *out, size_t len) {
  json_t *c = json_object_get(run, "check");
  if (!json_is_object(c)) {
    snprintf(out, len, "-");
  } else if (json_is_true(json_object_get(c, "passed"))) {
    snprintf(out, len, "passed");
  } else if (json_string_value(json_object_get(c, "failure"))) {
    snprintf(out, len, "FAILED: %s", str(c, "failure"));
  } else if (json_is_false(json_object_get(json_object_get(c, "precision"), "passed"))) {
    snprintf(out, len, "FAILED: not FP32's precision");
  } else {
    snprintf(out, len, "FAILED: %lld of %lld wrong",
             (long long)json_integer_value(json_object_get(c, "mismatches")),
             (long long)json_integer_value(json_object_get(c, "compared")));
  }
}

static void run_row(FILE *f, json_t *run) {
  const char *variant = str(run, "variant");
  char label[48];
  json_t *streams = json_object_get(run, "streams");
  if (json_is_integer(streams))
    snprintf(label, sizeof label, "streams=%lld", (long long)json_integer_value(streams));
  else
    snprintf(label, sizeof label, "%s", variant);
  if (!json_is_true(json_object_get(run, "available"))) {
    fprintf(f, "%-16s not run: %s\n", label, str(run, "reason"));
    return;
  }
  char check[192], median[48] = "-", figure[48] = "-", pct[16] = "-", speedup[48] = "-";
  check_cell(run, check, sizeof check);
  json_t *t = json_object_get(run, "timing");
  if (json_is_object(t)) {
    json_t *samples = json_object_get(t, "samples_ms");
    /* Four decimals, or three significant digits below 0.01 ms (the CPU's tiny jobs). */
    double med = json_number_value(json_object_get(t, "median_ms"));
    const char *fmt = med >= 0.01 ? "%.4f [%.4f-%.4f]" : "%.3g [%.3g-%.3g]";
    snprintf(median, sizeof median, fmt, med, quantile(samples, 0.25), quantile(samples, 0.75));
  }
  json_t *fig = json_object_get(run, "figure");
  if (json_is_number(fig))
    snprintf(figure, sizeof figure, "%.1f %s", json_number_value(fig), str(run, "unit"));
  json_t *p = json_object_get(run, "percent_of_ceiling");
  if (json_is_number(p)) snprintf(pct, sizeof pct, "%.1f%%", json_number_value(p));
  json_t *s = json_object_get(run, "speedup"), *range = json_object_get(run, "speedup_range");
  if (json_is_number(s))
    snprintf(speedup, sizeof speedup, "%.2fx [%.2f-%.2f]", json_number_value(s),
             json_number_value(json_array_get(range, 0)),
             json_number_value(json_array_get(range, 1)));
  fprintf(f, ROW, label, median, figure, pct, speedup, check);
}

/* A profiled kernel's metric (profile.metrics.<name>.value) into out: "-" when not read. */
static void metric_cell(json_t *kernel, const char *name, const char *fmt, char *out, size_t len) {
  json_t *v = json_object_get(json_object_get(json_object_get(kernel, "metrics"), name), "value");
  if (json_is_number(v))
    snprintf(out, len, fmt, json_number_value(v));
  else
    snprintf(out, len, "-");
}

#define WHY "%-16s %-28s %-9s %-9s %-11s %-22s %-7s %s\n"

/* The runs' profiles: the lecture's counters a kernel a row, or why there are none
 * (once, when every run says the same). */
static void profiles_print(FILE *f, json_t *runs) {
  size_t i, k;
  json_t *run, *kernel;
  const char *why = NULL;
  bool any = false, same = true;
  json_array_foreach(runs, i, run) {
    json_t *p = json_object_get(run, "profile");
    if (!json_is_object(p)) continue;
    any = any || json_is_true(json_object_get(p, "available"));
    const char *reason = json_string_value(json_object_get(p, "reason"));
    if (reason && why && strcmp(reason, why)) same = false;
    if (reason && !why) why = reason;
  }
  if (!any) {
    if (why) fprintf(f, "profile: %s\n", same ? why : "not available for every run");
    return;
  }
  fprintf(f, "\n" WHY, "variant", "kernel", "ld sect/r", "st sect/r", "bank confl", "occupancy",
          "DRAM %", "L2 hit %");
  json_array_foreach(runs, i, run) {
    json_t *p = json_object_get(run, "profile");
    if (!json_is_true(json_object_get(p, "available"))) {
      if (json_is_object(p))
        fprintf(f, "%-16s no profile: %s\n", str(run, "variant"), str(p, "reason"));
      continue;
    }
    json_array_foreach(json_object_get(p, "kernels"), k, kernel) {
      char ld[16], st[16], cl[16], cs[16], ach[16], th[16], occ[48], dram[16], l2[16], conf[40];
      metric_cell(kernel, "global_load_sectors_per_request", "%.1f", ld, sizeof ld);
      metric_cell(kernel, "global_store_sectors_per_request", "%.1f", st, sizeof st);
      metric_cell(kernel, "shared_load_bank_conflicts", "%.0f", cl, sizeof cl);
      metric_cell(kernel, "shared_store_bank_conflicts", "%.0f", cs, sizeof cs);
      metric_cell(kernel, "achieved_occupancy_pct", "%.0f%%", ach, sizeof ach);
      metric_cell(kernel, "theoretical_occupancy_pct", "%.0f%%", th, sizeof th);
      metric_cell(kernel, "dram_peak_pct", "%.1f", dram, sizeof dram);
      metric_cell(kernel, "l2_hit_pct", "%.1f", l2, sizeof l2);
      snprintf(conf, sizeof conf, "%s/%s", cl, cs);
      snprintf(occ, sizeof occ, "%s of %s %s", ach, th, str(kernel, "occupancy_limiter"));
      fprintf(f, WHY, k ? "" : str(run, "variant"), str(kernel, "name"), ld, st, conf, occ, dram,
              l2);
    }
  }
}

void ctl_table_print(FILE *f, json_t *job) {
  json_t *result = json_object_get(job, "result");
  fprintf(f, "job %lld %s: %s", (long long)json_integer_value(json_object_get(job, "id")),
          str(job, "type"), str(job, "state"));
  if (json_is_object(result))
    fprintf(f, " on %s (%s)", str(result, "device"), str(result, "backend"));
  fprintf(f, "\n");
  json_t *error = json_object_get(job, "error");
  if (json_is_object(error))
    fprintf(f, "error %s: %s\n", str(error, "code"), str(error, "message"));
  json_t *runs = json_object_get(result, "runs");
  if (!json_array_size(runs)) return;
  fprintf(f, ROW, "variant", "median ms [q1-q3]", "figure", "% ceil", "speedup [range]", "check");
  size_t i;
  json_t *run;
  json_array_foreach(runs, i, run) run_row(f, run);
  profiles_print(f, runs);
}

bool ctl_job_passed(json_t *job) {
  if (strcmp(str(job, "state"), "done") != 0) return false;
  size_t i;
  json_t *run;
  json_array_foreach(json_object_get(json_object_get(job, "result"), "runs"), i, run) {
    json_t *c = json_object_get(run, "check");
    if (json_is_true(json_object_get(run, "available")) && json_is_object(c) &&
        !json_is_true(json_object_get(c, "passed")))
      return false;
  }
  return true;
}
