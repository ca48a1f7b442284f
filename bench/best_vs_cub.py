#!/usr/bin/env python3
"""reduce, scan and histogram: `best` against `cub` through gpulabd's HTTP API.

usage: best_vs_cub.py URL [OUT_MD] [OUT_JSON]   (gpulabd must already listen at URL)
       SIZES=12,14 best_vs_cub.py ...          (other log2 sizes, e.g. for a CPU run)
Runs each experiment's best and cub side by side (one job, interleaved batches, the
descriptors' timing: warm-up 20, 5 batches of 100) at n = 2^20, 2^22, 2^24 and 2^26, the
histogram at 1, 256, 4096 and 65536 bins, and prints one markdown table: GB/s, % of the
device's measured copy ceiling and best / cub (the issue's aim: >= 0.95, both near the
copy ceiling at 2^26). Uses only the standard library."""
import json
import os
import sys

from gpulab_http import Server

SERVER = Server(sys.argv[1])
post = SERVER.post
SIZES = [int(e) for e in os.environ.get("SIZES", "20,22,24,26").split(",")]
JOBS = ([("reduce", {"n": 1 << e}) for e in SIZES] +
        [("scan", {"n": 1 << e}) for e in SIZES] +
        [("histogram", {"n": 1 << e, "bins": b}) for e in SIZES for b in (1, 256, 4096, 65536)])


def cell(run):
    if not run.get("available"):
        return f"unavailable: {run.get('reason')}"
    if run.get("figure") is None:
        return "FAIL"
    pct = run.get("percent_of_ceiling")
    return f"{run['figure']:.0f}" + (f" ({pct:.0f}%)" if pct is not None else "")


def main():
    device = SERVER.get("/device")
    copy = (device.get("ceilings") or {}).get("copy_gbps")
    lines = [f"device: {device.get('name')}, {device.get('sms')} SMs, copy ceiling "
             f"{copy:.0f} GB/s" if copy else f"device: {device.get('name')} (no ceilings)", "",
             "| job | n | bins | best GB/s (% of copy) | cub GB/s (% of copy) | best / cub | "
             "best ms | cub ms | checks |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    jobs, all_passed = [], True
    for kind, params in JOBS:
        job = post("/" + kind, dict(params, variant=["best", "cub"]))
        jobs.append(job)
        n = f"2^{params['n'].bit_length() - 1}"
        bins = str(params.get("bins", "-"))
        if job["state"] != "done":
            all_passed = False
            lines.append(f"| {kind} | {n} | {bins} | {job['state']}: {job.get('error')} |")
            continue
        best, cub = job["result"]["runs"]
        passed = all(r.get("check", {}).get("passed") for r in (best, cub) if r.get("available"))
        all_passed &= passed and best.get("available") and cub.get("available")
        ratio = (f"{best['figure'] / cub['figure']:.2f}"
                 if best.get("figure") and cub.get("figure") else "-")
        ms = [f"{r['timing']['median_ms']:.4f}" if r.get("available") else "-" for r in (best, cub)]
        lines.append(f"| {kind} | {n} | {bins} | {cell(best)} | {cell(cub)} | {ratio} | {ms[0]} | "
                     f"{ms[1]} | {'PASS' if passed else 'FAIL'} |")
    lines.append("")
    lines.append("all checks passed" if all_passed else "SOME CHECKS FAILED")
    print("\n".join(lines))
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            f.write("\n".join(lines) + "\n")
    if len(sys.argv) > 3:
        with open(sys.argv[3], "w") as f:
            json.dump({"device": device, "jobs": jobs}, f, indent=1)
    return 0 if all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
