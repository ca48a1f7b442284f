#!/usr/bin/env python3
"""Issue 15's table: `best` at every shape beside the library or the ceiling, through
gpulabd's HTTP API, each comparison inside one job (interleaved batches): gemm `best`
against `cublas` (FP32, TF32 off), `tf32` against `cublas_tf32`, both warm; transpose and
stencil `best` against the device's copy ceiling (copy_gbps, measured at start-up), with
"cold": true (an L2 flush before each timed launch). Each row names the configuration the
shape picked (the run's kernel) and the issue's target.

usage: shapes.py URL [OUT_MD]   (gpulabd on a GPU must listen at URL)
Prints a markdown table for bench/RESULTS.md; OUT_MD (optional) receives the same text.
Exits 1 when a job failed or a check did not pass. SHAPES_QUICK=1 in the environment
runs one small shape per experiment instead (a smoke test of the script, e.g. on the CPU
backend); SHAPES_ONLY=tf32,gemm (any of gemm, tf32, transpose, stencil) only those rows.
Standard library only."""
import os
import sys
import time

from gpulab_http import Server

SERVER = Server(sys.argv[1])
post = SERVER.post_or_error
OUT = sys.argv[2] if len(sys.argv) > 2 else None
lines = []

SQUARES = [256, 512, 768, 1024, 1536, 2048, 2500, 3000, 4096, 6144, 8192]
GEMM = [(s, s, s) for s in SQUARES] + [
    (1000, 1500, 777), (256, 4096, 4096), (4096, 256, 4096), (8192, 128, 8192),
    (128, 8192, 8192), (1, 4096, 4096), (4096, 1, 4096), (16, 4096, 4096), (4096, 16, 4096),
    (5, 3001, 2049), (3001, 7, 2049)]
TF32 = [(s, s, s) for s in (1024, 1536, 2048, 2500, 3000, 4096, 6144, 8192)] + [
    (1000, 1500, 777), (257, 383, 97)]
TRANSPOSE = [(2048, 2048), (4096, 4096), (8192, 8192), (4097, 3001), (3001, 4097),
             (8191, 8193), (3000, 5000), (5000, 3000), (2049, 2049), (1, 1 << 20),
             (1 << 20, 1), (16, 1 << 18), (1 << 18, 16), (6, 699051)]
STENCIL = [(1 << 22, r) for r in (0, 2, 32, 1024)] + [(1 << 23, r) for r in (0, 2, 32, 1024)] + \
    [(1 << 24, r) for r in (0, 2, 32, 1024)] + [(1 << 26, r) for r in (2, 32, 1024)] + \
    [((1 << 22) + 3, 32)]
if os.environ.get("SHAPES_QUICK"):
    GEMM, TF32, TRANSPOSE, STENCIL = [(33, 47, 18)], [(33, 47, 18)], [(33, 47)], [(1000, 2)]


def say(text=""):
    print(text, flush=True)
    lines.append(text)


def gemm_timing(m, n, k, rate=40e12):
    """Batches of about 20 ms (warm: reps back to back), 5 of them, 2 warm-ups."""
    t = 2.0 * m * n * k / rate + 5e-6
    return {"warmup": 2, "batches": 5, "reps": max(1, min(20, round(0.02 / t)))}


def runs_by_variant(job):
    return {r["variant"]: r for r in (job.get("result") or {}).get("runs", [])}


def config(run):
    """The configuration a `best` run took: its description's label, else its kernel."""
    k = run.get("kernel") or {}
    desc, name = k.get("description") or "", k.get("name") or "-"
    label = desc.split(":")[0] if ":" in desc else ""
    return label if label and " " not in label else name


def passed(run):
    return bool(run and run.get("available") and run.get("check") and run["check"]["passed"])


def fmt(x, nd=3):
    return "-" if x is None else f"{x:.{nd}f}"


def gemm_target(m, n, k, tf32):
    if tf32:
        if m == n == k and m >= 2048:
            return 0.90
        return 0.70 if m == n == k == 1024 else None
    if (m == n == k and 512 <= m <= 8192) or (m, n, k) == (1000, 1500, 777):
        return 0.90
    if m == 1 or (min(m, n) <= 256 and max(m, n) >= 4096 and k >= 4096):
        return 0.80
    return None


ok = True


def row(exp, shape, cfg, fig, ref, ratio, target, unit_note):
    met = "-" if target is None or ratio is None else ("yes" if ratio >= target else "no")
    tgt = "-" if target is None else f">= {target:.2f} {unit_note}"
    say(f"| {exp} | {shape} | {cfg} | {fig} | {ref} | {fmt(ratio)} | {tgt} | {met} |")


def gemm_rows(shapes, tf32):
    global ok
    mine, lib = ("tf32", "cublas_tf32") if tf32 else ("best", "cublas")
    for m, n, k in shapes:
        job = post("/gemm", dict(m=m, n=n, k=k, variant=[lib, mine], **gemm_timing(m, n, k,
                                 300e12 if tf32 else 40e12)))
        shape = f"{m}x{n}x{k}"
        if job.get("state") != "done":
            ok = False
            exp = "tf32" if tf32 else "gemm"
            say(f"| {exp} | {shape} | {job.get('state')}: {job.get('error')} |")
            continue
        runs = runs_by_variant(job)
        a, b = runs.get(mine), runs.get(lib)
        lib_ok = passed(b) or not (b and b.get("available"))  # unavailable: no ratio
        ok &= passed(a) and lib_ok
        fa = a.get("figure") if a else None
        fb = b.get("figure") if b and b.get("available") else None
        ratio = fa / fb if fa and fb else None
        check = "" if passed(a) and lib_ok else " (CHECK FAILED)"
        libtxt = f"{fmt(fb / 1e3, 1)} TFLOP/s" if fb else \
            ("unavailable" if b and not b.get("available") else "-")
        row("tf32" if tf32 else "gemm", shape, config(a) + check,
            f"{fmt(fa and fa / 1e3, 1)} TFLOP/s", libtxt, ratio, gemm_target(m, n, k, tf32),
            f"of {lib}")


def bandwidth_rows(exp, cases):
    global ok
    for params, shape, target in cases:
        job = post("/" + exp, dict(params, variant="best", cold=True, warmup=3, batches=5, reps=20))
        if job.get("state") != "done":
            ok = False
            say(f"| {exp} | {shape} | {job.get('state')}: {job.get('error')} |")
            continue
        run = runs_by_variant(job).get("best")
        ok &= passed(run)
        pct = run.get("percent_of_ceiling") if run else None
        fig = run.get("figure") if run else None
        check = "" if passed(run) else " (CHECK FAILED)"
        row(exp, shape, config(run) + check, f"{fmt(fig, 0)} GB/s", "copy ceiling",
            pct / 100 if pct is not None else None, target, "of copy_gbps")


def main():
    device = SERVER.get("/device")
    c = device.get("ceilings") or {}
    say(f"device: {device.get('name')}, {device.get('sms')} SMs; ceilings at start-up: "
        f"copy {fmt(c.get('copy_gbps'), 0)} GB/s, sgemm {fmt(c.get('sgemm_gflops'), 0)} GFLOP/s, "
        f"tf32 {fmt(c.get('tf32_gflops'), 0)} GFLOP/s")
    say()
    say("ratio: gemm `best` / `cublas` and `tf32` / `cublas_tf32` (figures of one job, warm); "
        "transpose and stencil `best` / the copy ceiling (`cold`: true)")
    say()
    say("| exp | shape | configuration (the run's kernel) | best | library | ratio | target | met |")
    say("| --- | --- | --- | --- | --- | --- | --- | --- |")
    t0 = time.time()
    only = set(filter(None, os.environ.get("SHAPES_ONLY", "").split(","))) or \
        {"gemm", "tf32", "transpose", "stencil"}
    if "gemm" in only:
        gemm_rows(GEMM, False)
    if "tf32" in only:
        gemm_rows(TF32, True)
    if "transpose" in only:
        bandwidth_rows("transpose", [({"m": m, "n": n}, f"{m}x{n}", 0.90) for m, n in TRANSPOSE])
    if "stencil" in only:
        bandwidth_rows("stencil", [({"n": n, "radius": r}, f"n={n}, r={r}",
                                    0.90 if n >= 1 << 24 else 0.75 if n == 1 << 22 else None)
                                   for n, r in STENCIL])
    say()
    say(f"{'all checks passed' if ok else 'SOME JOBS FAILED OR CHECKS DID NOT PASS'} "
        f"({time.time() - t0:.0f} s)")
    if OUT:
        with open(OUT, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
