#!/usr/bin/env python3
"""The lecture's tables measured through gpulabd's HTTP API.

usage: lecture_tables.py URL [OUT_JSON]   (gpulabd must already listen at URL)
Prints one markdown table per experiment; OUT_JSON receives every job as returned.
Uses only the standard library, so it runs wherever python3 does."""
import json
import sys
import urllib.request

URL = sys.argv[1].rstrip("/")
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


def post(path, body):
    req = urllib.request.Request(URL + path + "?wait=600", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=700) as r:
        return json.load(r)


def size_of(kind, p):
    return {"transpose": lambda: f"{p['m']}x{p['n']}",
            "gemm": lambda: f"{p['m']}x{p['n']}x{p['k']}",
            "stencil": lambda: f"n=2^{p['n'].bit_length() - 1} R={p['radius']}",
            "pipeline": lambda: f"chunk=2^{p['chunk'].bit_length() - 1} x{p['chunks']} terms={p['terms']}",
            "reduce": lambda: f"n=2^{p['n'].bit_length() - 1}",
            "scan": lambda: f"n=2^{p['n'].bit_length() - 1}",
            "histogram": lambda: f"n=2^{p['n'].bit_length() - 1} bins={p['bins']}"}[kind]()


def main():
    device = json.load(urllib.request.urlopen(URL + "/device"))
    print(f"device: {device.get('name')} (cc {device.get('compute_capability')}, "
          f"{device.get('sms')} SMs, runtime {device.get('cuda_runtime')}, driver {device.get('cuda_driver')})\n")
    jobs, all_passed = [], True
    print("| job | size | variant | median ms | min ms | max ms | figure | speedup | check | regs | kernel |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for kind, params in JOBS:
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
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            json.dump({"device": device, "jobs": jobs}, f, indent=1)
    print("\nall checks passed" if all_passed else "\nSOME CHECKS FAILED")
    return 0 if all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
