#!/usr/bin/env python3
"""What a chain of N dependent jobs costs: each link reads the previous job's output
({"a": {"job": prev}}), linked on the device with events ("dependency": "event")
or through the host ("dependency": "host": a child starts only once its parent has
finished). Tiny jobs (transpose 64x64, one launch, shared isolation), so the cost is
the link, not the work. The whole chain is submitted behind a blocker job, so HTTP
submission is not timed: the cost is the last link's finished_at minus the
blocker's finished_at, from the engine's own timestamps.

usage: chain.py URL [N] [repeats]   prints a markdown table."""
import statistics
import sys
import time

from gpulab_http import Server

SERVER = Server(sys.argv[1])
call = SERVER.call
N = int(sys.argv[2]) if len(sys.argv) > 2 else 100
REPEATS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
PARAMS = {"m": 64, "n": 64, "variant": "naive", "warmup": 0, "batches": 1, "reps": 1}


BLOCKER = {"n": 1 << 24, "radius": 32, "variant": "naive", "warmup": 1, "batches": 20, "reps": 100}


def unix(ts):
    """RFC 3339 with milliseconds -> seconds."""
    from datetime import datetime
    return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def chain(dependency):
    """Queues a blocker, the chain behind it, waits for the last link."""
    blocker = call("POST", "/jobs?wait=0", {"type": "stencil", "params": BLOCKER,
                                             "isolation": "shared"})["id"]
    prev = blocker
    ids = []
    for _ in range(N):
        params = dict(PARAMS, a={"job": prev}) if prev != blocker else PARAMS
        body = {"type": "transpose", "params": params, "isolation": "shared",
                "dependency": dependency}
        if prev == blocker:  # the first link starts once the blocker has finished
            body.update(depends_on=[blocker], dependency="host")
        prev = call("POST", "/jobs?wait=0", body)["id"]
        ids.append(prev)
    last = call("GET", f"/jobs/{prev}")
    while last["state"] not in ("done", "failed", "canceled"):
        time.sleep(0.05)
        last = call("GET", f"/jobs/{prev}")
    jobs = [call("GET", f"/jobs/{i}") for i in ids]
    assert all(j["state"] == "done" and j["result"]["passed"] for j in jobs), last
    start = unix(call("GET", f"/jobs/{blocker}")["finished_at"])
    return unix(last["finished_at"]) - start


def main():
    rows = []
    for dependency in ("event", "host"):
        walls = [chain(dependency) for _ in range(REPEATS)]
        med = statistics.median(walls)
        rows.append((dependency, med, med / N * 1e6, min(walls), max(walls)))
    print(f"| dependency | {N}-link chain after its blocker, median s | per link us | min s | max s |")
    print("| --- | --- | --- | --- | --- |")
    for dep, med, per, lo, hi in rows:
        print(f"| {dep} | {med:.4f} | {per:.1f} | {lo:.4f} | {hi:.4f} |")


if __name__ == "__main__":
    main()
