#!/usr/bin/env python3
"""The lecture's tables measured through gpulabd's HTTP API.

usage: lecture_tables.py [--profile] URL [OUT_JSON]   (gpulabd must already listen at URL)
Prints one markdown table per experiment; OUT_JSON receives every job as returned.
--profile: the transpose and gemm jobs ask for "profile": true, and a second table puts
the counters that explain each time beside it (the lecture's: sectors per request, bank
conflicts per request, occupancy, DRAM traffic).
Uses only the standard library, so it runs wherever python3 does."""
import json
import sys

from gpulab_http import Server

PROFILE = "--profile" in sys.argv
ARGS = [a for a in sys.argv[1:] if a != "--profile"]
SERVER = Server(ARGS[0])
post = SERVER.post
JOBS = [
    ("transpose", {"m": 4096, "n": 4096, "reps": 20}),
    ("transpose", {"m": 1024, "n": 1024, "reps": 100}),
    ("gemm", {"m": 512, "n": 512, "k": 512}),
    ("gemm", {"m": 1024, "n": 1024, "k": 1024}),
    ("stencil", {"n": 1 << 22, "radius": 2}),
    ("stencil", {"n": 1 << 22, "radius": 32}),
    ("stencil", {"n": 1 << 24, "radius": 2}),
    ("stencil", {"n": 1 << 24, "radius": 32}),
    ("pipeline", {"chunk": 1 << 20, "streams": [1, 3]}),
    ("pipeline", {"chunk": 1 << 22, "streams": [1, 3]}),
    ("reduce", {"n": 1 << 22}),
    ("scan", {"n": 1 << 22}),
    ("histogram", {"n": 1 << 22, "bins": 256}),
    ("histogram", {"n": 1 << 22, "bins": 65536}),
]


def size_of(kind, p):
    return {"transpose": lambda: f"{p['m']}x{p['n']}",
            "gemm": lambda: f"{p['m']}x{p['n']}x{p['k']}",
            "stencil": lambda: f"n=2^{p['n'].bit_length() - 1} R={p['radius']}",
            "pipeline": lambda: f"chunk=2^{p['chunk'].bit_length() - 1} x{p['chunks']} terms={p['terms']}",
            "reduce": lambda: f"n=2^{p['n'].bit_length() - 1}",
            "scan": lambda: f"n=2^{p['n'].bit_length() - 1}",
            "histogram": lambda: f"n=2^{p['n'].bit_length() - 1} bins={p['bins']}"}[kind]()


def metric(kernel, name, fmt="{:.2f}", scale=1.0):
    v = kernel["metrics"].get(name, {}).get("value")
    return "-" if v is None else fmt.format(v * scale)


def why_table(jobs):
    """The counters of every profiled run's kernels beside its median time."""
    print("\n| job | size | variant | median ms | kernel | ld sect/req | st sect/req | "
          "smem ld conflicts/req | occupancy achieved / theoretical (limit) | DRAM MB r / w | "
          "DRAM % peak | L2 hit % |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for job in jobs:
        if job.get("state") != "done" or not job["params"].get("profile"):
            continue
        for run in job["result"]["runs"]:
            prof = run.get("profile") or {}
            head = f"| {job['type']} | {size_of(job['type'], job['params'])} | {run['variant']} |"
            if not prof.get("available"):
                print(f"{head} - | no profile: {prof.get('reason', 'unavailable')} |")
                continue
            for k in prof["kernels"]:
                occ = (f"{metric(k, 'achieved_occupancy_pct', '{:.0f}%')} / "
                       f"{metric(k, 'theoretical_occupancy_pct', '{:.0f}%')} "
                       f"({k.get('occupancy_limiter') or '-'})")
                print(f"{head} {run['timing']['median_ms']:.4f} | {k['name'][:40]} | "
                      f"{metric(k, 'global_load_sectors_per_request')} | "
                      f"{metric(k, 'global_store_sectors_per_request')} | "
                      f"{metric(k, 'shared_load_conflicts_per_request')} | {occ} | "
                      f"{metric(k, 'dram_bytes_read', '{:.1f}', 1e-6)} / "
                      f"{metric(k, 'dram_bytes_written', '{:.1f}', 1e-6)} | "
                      f"{metric(k, 'dram_peak_pct', '{:.0f}')} | {metric(k, 'l2_hit_pct', '{:.0f}')} |")


def main():
    device = SERVER.get("/device")
    print(f"device: {device.get('name')} (cc {device.get('compute_capability')}, "
          f"{device.get('sms')} SMs, runtime {device.get('cuda_runtime')}, driver {device.get('cuda_driver')})\n")
    jobs, all_passed = [], True
    print("| job | size | variant | median ms | min ms | max ms | figure | speedup | check | regs | kernel |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for kind, params in JOBS:
        if PROFILE and kind in ("transpose", "gemm"):
            params = dict(params, profile=True)
        job = post("/" + kind, params)
        jobs.append(job)
        res = job.get("result") or {}
        if job["state"] != "done":
            all_passed = False
            print(f"| {kind} | {size_of(kind, job['params'])} | - | {job['state']}: {job.get('error')} |")
            continue
        for run in res["runs"]:
            if not run["available"]:
                print(f"| {kind} | {size_of(kind, job['params'])} | {run['variant']} | unavailable: {run['reason']} |")
                continue
            t, c, k = run["timing"], run["check"], run["kernel"]
            all_passed &= bool(c and c["passed"])
            fig = f"{run['figure']:.1f} {run['unit']}" if run["figure"] else "null"
            check = ("PASS" if c["passed"] else "FAIL") + (f" ({c['rows_checked']} rows)" if c["checked"] == "sample" else "")
            print(f"| {kind} | {size_of(kind, job['params'])} | {run['variant']} | {t['median_ms']:.4f} | "
                  f"{t['min_ms']:.4f} | {t['max_ms']:.4f} | {fig} | {run['speedup']:.2f} | {check} | "
                  f"{k.get('registers', '-')} | {k['name']} |")
    if PROFILE:
        why_table(jobs)
    if len(ARGS) > 1:
        with open(ARGS[1], "w") as f:
            json.dump({"device": device, "jobs": jobs}, f, indent=1)
    print("\nall checks passed" if all_passed else "\nSOME CHECKS FAILED")
    return 0 if all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
