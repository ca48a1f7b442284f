#!/usr/bin/env python3
"""Each figure against the limit at its own size (issue 36), through gpulabd's HTTP API.

usage: limits.py URL [OUT_MD]   (gpulabd must already listen at URL, with its ceilings)
Prints GET /device's limits (the copy at each power of two of bytes moved, in each
timing mode) and then, for reduce, scan, histogram (256 bins), transpose and stencil
(r = 32) at 2^20, 2^22, 2^24 and 2^26 elements (transpose: square, and 4097 x 3001 and
8191 x 8193), `best` (and `cub` where there is one) in one job each: GB/s, % of the copy
ceiling, % of the limit at the job's size and that limit. The goals: >= 95% of the limit
from 2^24 elements up and >= 85% at 2^22. Uses only the standard library."""
import sys

from gpulab_http import Server

SERVER = Server(sys.argv[1])
post = SERVER.post
SIZES = [20, 22, 24, 26]
JOBS = ([("reduce", {"n": 1 << e}, ["best", "cub"]) for e in SIZES] +
        [("scan", {"n": 1 << e}, ["best", "cub"]) for e in SIZES] +
        [("histogram", {"n": 1 << e, "bins": 256}, ["best", "cub"]) for e in SIZES] +
        [("stencil", {"n": 1 << e, "radius": 32}, ["best"]) for e in SIZES] +
        [("transpose", {"m": 1 << (e // 2), "n": 1 << (e // 2)}, ["best"]) for e in SIZES] +
        [("transpose", {"m": 4097, "n": 3001}, ["best"]), ("transpose", {"m": 8191, "n": 8193}, ["best"])])


def pct(v):
    return "-" if v is None else f"{v:.1f}%"


def main():
    device = SERVER.get("/device")
    limits = device.get("limits")
    lines = [f"device: {device.get('name')}, copy ceiling "
             f"{(device.get('ceilings') or {}).get('copy_gbps') or 0:.0f} GB/s", ""]
    if limits:
        lines += ["| bytes moved | batch GB/s | alone GB/s | cold GB/s |", "| --- | --- | --- | --- |"]
        for b, a, c in zip(limits["batch"], limits["alone"], limits["cold"]):
            lines.append(f"| 2^{b['bytes'].bit_length() - 1} | {b['gbps']:.0f} | {a['gbps']:.0f} | "
                         f"{c['gbps']:.0f} |")
        lines += ["", limits["method"], ""]
    lines += ["| job | size | variant | GB/s | % of ceiling | % of limit | limit (bytes, GB/s, mode) | check |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    ok = True
    for kind, params, variants in JOBS:
        job = post("/" + kind, dict(params, variant=variants))
        size = ", ".join(f"{k}={v}" for k, v in params.items())
        if job["state"] != "done":
            ok = False
            lines.append(f"| {kind} | {size} | - | {job['state']}: {job.get('error')} |")
            continue
        lim = job["result"].get("limit")
        lim_text = f"2^{lim['bytes'].bit_length() - 1}, {lim['gbps']:.0f}, {lim['mode']}" if lim else "-"
        for run in job["result"]["runs"]:
            passed = run.get("available") and run["check"]["passed"]
            ok &= bool(passed)
            fig = f"{run['figure']:.0f}" if run.get("figure") else "-"
            lines.append(f"| {kind} | {size} | {run['variant']} | {fig} | {pct(run.get('percent_of_ceiling'))} | "
                         f"{pct(run.get('percent_of_limit'))} | {lim_text} | {'PASS' if passed else 'FAIL'} |")
    lines += ["", "all checks passed" if ok else "SOME CHECKS FAILED"]
    print("\n".join(lines))
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
