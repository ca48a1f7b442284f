#!/usr/bin/env python3
"""How long a batch of independent jobs takes on one gpulabd: N GEMMs (2048^3,
naive, exclusive: about 0.3 s of device time each, more than their host check)
submitted at once; the time is the last finished_at minus
the first created_at, from the engine's own timestamps. Run it against a gpulabd with
--devices 0 and again with --devices 0,1 to see what a second GPU buys.

usage: batch.py URL [N]   prints one line: devices, jobs, seconds, jobs per device."""
import json
import sys
import time
from datetime import datetime

from gpulab_http import Server

SERVER = Server(sys.argv[1])
call = SERVER.call
N = int(sys.argv[2]) if len(sys.argv) > 2 else 16
PARAMS = {"m": 2048, "n": 2048, "k": 2048, "variant": "naive", "warmup": 3, "batches": 5, "reps": 20}


def unix(ts):
    return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def main():
    devices = len(call("GET", "/devices")["devices"])
    ids = [call("POST", "/gemm?wait=0", PARAMS)["id"] for _ in range(N)]
    jobs = []
    for i in ids:
        while True:
            job = call("GET", f"/jobs/{i}")
            if job["state"] in ("done", "failed", "canceled"):
                break
            time.sleep(0.05)
        assert job["state"] == "done" and job["result"]["passed"], job
        jobs.append(job)
    wall = max(unix(j["finished_at"]) for j in jobs) - min(unix(j["created_at"]) for j in jobs)
    per = {}
    for j in jobs:
        per[j["device"]] = per.get(j["device"], 0) + 1
    print(f"| {devices} | {N} | {wall:.3f} | {json.dumps(per)} |")


if __name__ == "__main__":
    main()
