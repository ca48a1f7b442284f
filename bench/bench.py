#!/usr/bin/env python3
"""gpulab's benchmark, through the HTTP API, with PyTorch side by side when it is
installed: the best variants at large sizes against the device's measured ceilings
and against PyTorch's matching operations, then a tiny job's HTTP latency and
throughput from gpulab's keep-alive load client (bench/loadgen.c).

usage: bench.py URL LOADGEN [OUT_MD]   (gpulabd must listen at URL on a GPU)
Prints markdown; OUT_MD (optional) receives the same text."""
import json
import statistics
import subprocess
import sys
import time

from gpulab_http import Server

SERVER = Server(sys.argv[1])
URL = SERVER.url
post, get = SERVER.post, SERVER.get
LOADGEN = sys.argv[2]
OUT = sys.argv[3] if len(sys.argv) > 3 else None
lines = []


def say(text=""):
    print(text, flush=True)
    lines.append(text)


# ---- PyTorch, timed like gpulab: CUDA events, median of samples of `reps` calls ----

def torch_bench():
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001 - any import failure means no PyTorch here
        return None, f"PyTorch not available ({e.__class__.__name__})"
    dev = torch.device("cuda")

    def median_ms(fn, reps=20, samples=5):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        out = []
        for _ in range(samples):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(reps):
                fn()
            e.record()
            e.synchronize()
            out.append(s.elapsed_time(e) / reps)
        return statistics.median(out)

    res = {}
    for m in (8192, 16384):
        a = torch.randn(m, m, device=dev)
        b = torch.empty(m, m, device=dev)
        res[f"transpose {m}"] = 8 * m * m / median_ms(lambda: b.copy_(a.t())) / 1e6
    torch.backends.cuda.matmul.allow_tf32 = False
    for m in (4096, 8192):
        a, b = torch.randn(m, m, device=dev), torch.randn(m, m, device=dev)
        c = torch.empty(m, m, device=dev)
        res[f"sgemm {m}"] = 2 * m ** 3 / median_ms(lambda: torch.mm(a, b, out=c), reps=5) / 1e6
    torch.backends.cuda.matmul.allow_tf32 = True
    a, b = torch.randn(8192, 8192, device=dev), torch.randn(8192, 8192, device=dev)
    c = torch.empty(8192, 8192, device=dev)
    res["tf32 8192"] = 2 * 8192 ** 3 / median_ms(lambda: torch.mm(a, b, out=c), reps=5) / 1e6
    torch.backends.cuda.matmul.allow_tf32 = False
    for r in (2, 32):
        x = torch.randn(1, 1, 1 << 26, device=dev)
        w = torch.full((1, 1, 2 * r + 1), 1.0 / (2 * r + 1), device=dev)
        res[f"stencil r={r}"] = 8 * (1 << 26) / median_ms(lambda: F.conv1d(x, w, padding=r)) / 1e6
    h = torch.randn(12 << 22).pin_memory()
    d = torch.empty(12 << 22, device=dev)
    h2d = median_ms(lambda: d.copy_(h, non_blocking=True), reps=3)
    res["pipeline copy"] = 4 * (12 << 22) / h2d / 1e6  # one direction only
    return res, "PyTorch " + torch.__version__


# ---- gpulab through HTTP ----

JOBS = [
    ("transpose", "8192^2", {"m": 8192, "n": 8192, "reps": 20}, "transpose 8192"),
    ("transpose", "16384^2", {"m": 16384, "n": 16384, "reps": 10,
                              "variant": ["naive", "padded33", "copy", "best"]}, "transpose 16384"),
    ("gemm", "4096^3", {"m": 4096, "n": 4096, "k": 4096, "variant": ["tiled", "best", "tf32", "cublas"],
                        "warmup": 2, "batches": 5, "reps": 5}, "sgemm 4096"),
    ("gemm", "8192^3", {"m": 8192, "n": 8192, "k": 8192, "variant": ["best", "tf32", "cublas"],
                        "warmup": 1, "batches": 3, "reps": 3}, "sgemm 8192"),
    ("stencil", "2^26, R=2", {"n": 1 << 26, "radius": 2, "reps": 20}, "stencil r=2"),
    ("stencil", "2^26, R=32", {"n": 1 << 26, "radius": 32, "reps": 20}, "stencil r=32"),
    ("pipeline", "2^22 x 12", {"chunk": 1 << 22, "chunks": 12, "terms": 8, "streams": [1, 3]},
     "pipeline copy"),
]


def fmt(x, nd=1):
    return "-" if x is None else f"{x:.{nd}f}"


def main():
    device = get("/device")
    ceilings = device.get("ceilings") or {}
    say(f"device: {device.get('name')}, cc {device.get('compute_capability')}, "
        f"{device.get('sms')} SMs, CUDA runtime {device.get('cuda_runtime')}, "
        f"driver {device.get('cuda_driver')}; measured at start-up: "
        + ", ".join(f"{k} {v:.0f}" for k, v in ceilings.items() if isinstance(v, (int, float))))
    torch_res, torch_note = torch_bench()
    say(f"side by side: {torch_note}")
    say()
    say("| job | size | variant | median ms | figure | % of ceiling | PyTorch | gpulab / PyTorch | check |")
    say("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for kind, size, params, torch_key in JOBS:
        job = post("/" + kind, params)
        if job["state"] != "done":
            say(f"| {kind} | {size} | - | {job['state']}: {job.get('error')} |")
            continue
        for run in job["result"]["runs"]:
            if not run["available"]:
                continue
            key = torch_key if not (kind == "gemm" and run["variant"] == "tf32") else "tf32 8192" if "8192" in size else None
            pt = torch_res.get(key) if torch_res and key else None
            fig = run.get("figure")
            pct = run.get("percent_of_ceiling")
            ratio = fig / pt if fig and pt else None
            say(f"| {kind} | {size} | {run['variant']} | {run['timing']['median_ms']:.4f} | "
                f"{fmt(fig)} {run['unit']} | {fmt(pct)} | {fmt(pt)} | {fmt(ratio, 2)} | "
                f"{'PASS' if run['check'] and run['check']['passed'] else 'FAIL'} |")
    say()
    tiny = json.dumps({"m": 64, "n": 64, "variant": "naive", "warmup": 0, "batches": 1, "reps": 1,
                       "isolation": "shared"})
    say("| HTTP load (tiny transpose 64x64, one launch, shared isolation) | connections | "
        "requests | errors | per second | p50 us | p99 us |")
    say("| --- | --- | --- | --- | --- | --- | --- |")
    for conns in (1, 64):
        out = subprocess.run([LOADGEN, URL + "/transpose", tiny, str(conns), "10"],
                             capture_output=True, text=True)
        r = json.loads(out.stdout)
        say(f"| loadgen | {conns} | {r['requests']} | {r['errors']} | {r['per_second']:.0f} | "
            f"{r['p50_us']:.0f} | {r['p99_us']:.0f} |")
    if OUT:
        with open(OUT, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
