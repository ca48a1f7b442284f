"""gpulab's Python client (clients/python) against a real gpulabd (--backend cpu), as
installed into a virtual environment by tests/python/run.sh: a numpy array up, a job on
it with its output kept, the output down and compared with numpy's transpose; the
lecture's table and rows; a kernel compiled from a file and run beside a built-in; a
refused request as Problem; jobs, cancel, leaderboard. And the client against
api/openapi.json: every route it calls is in the document, and every field it reads of
a job is in the job's schema (the document keeps growing; this follows it).
  GPULABD=build/gpulabd .venv/bin/python tests/python/test_client.py
Exits 0, or 1 at the first failure."""
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

import gpulab

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def start():
    exe = os.environ.get("GPULABD")
    check(exe, "GPULABD is not set (the path of the built gpulabd)")
    p = subprocess.Popen([exe, "--backend", "cpu", "--db", "none", "--port", "0", "--host", "127.0.0.1",
                          "--access-log", "off"], stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if m:
            return p, int(m.group(1))
    fail("gpulabd did not start")


def openapi_follows(client_source):
    """Every /v1 path the client calls matches a path of the document, and the job
    fields it reads are in the Job schema."""
    doc = json.load(open(os.path.join(ROOT, "api", "openapi.json")))
    paths = [re.sub(r"\{[^}]+\}", "[^/]+", p) for p in doc["paths"]]
    called = set(re.findall(r'request\("(?:GET|POST|DELETE)", f?"(/[^"?]*)', client_source))
    called = {re.sub(r"^/v1", "", p) for p in called}
    for path in called:
        concrete = re.sub(r"\{[^}]+\}", "7", path)
        if concrete == "/7":  # f"/{experiment}": every experiment's route
            concrete = "/transpose"
        check(any(re.fullmatch(p, concrete) for p in paths), f"the client calls {path}, not in api/openapi.json")
    schemas = doc["components"]["schemas"]
    job = schemas["Job"]["properties"]
    for field in ("id", "type", "state", "result", "error", "output"):
        check(field in job, f"the client reads job.{field}, not in the Job schema")
    print(f"openapi: the client's {len(called)} routes and the job fields it reads are in the document")


def main():
    client_source = open(gpulab.__file__).read()
    openapi_follows(client_source)
    proc, port = start()
    try:
        c = gpulab.Client(f"http://127.0.0.1:{port}")
        a = (np.arange(300 * 200, dtype=np.float32).reshape(300, 200) / 7).astype(np.float32)
        b = c.upload(a)
        check(isinstance(b, int) and b > 0, f"upload gave {b!r}")
        job = c.run("transpose", a={"buffer": b}, variant="naive", keep_output=True)
        check(job.state == "done" and job.passed, f"job {job.id}: {job.state}")
        out = c.download(job)
        check(out.shape == (200, 300) and (out == a.T).all(), "the kept output is not A^T")
        print("upload, run with keep_output, download: A^T bit for bit")

        job = c.run("transpose", m=64, n=48, variant=["naive", "padded33", "best"])
        table = job.table()
        print(table)
        check(re.search(r"^naive +\S+ \[\S+-\S+\] .* 1\.00x .* passed$", table, re.M), "no naive row in the table")
        rows = job.rows()
        check([r["variant"] for r in rows] == ["naive", "padded33", "best"], f"rows: {rows}")
        check(all(r["passed"] and r["q1_ms"] <= r["median_ms"] <= r["q3_ms"] for r in rows), f"rows: {rows}")

        try:
            c.run("transpose", m=0)
            fail("m=0 was accepted")
        except gpulab.Problem as p:
            check(p.status == 400 and p.code == "out_of_range" and p.field == "m", f"problem: {p}")
            print(f"refused: {p}")

        with tempfile.NamedTemporaryFile("w", suffix=".cu", delete=False) as f:
            f.write('extern "C" __global__ void kernel(const float* a, float* b, int m, int n) {\n'
                    '  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n'
                    '  if (x < n && y < m) b[(size_t)x * m + y] = a[(size_t)y * n + x];\n}\n')
        k = c.kernel(f.name, experiment="transpose", block=[32, 32], tile=[32, 32])
        os.unlink(f.name)
        check(k["variant"].startswith("kernel:") and k["compile"]["ok"], f"kernel: {k}")
        job = c.run("transpose", m=64, n=64, variant=["padded33", k["variant"]])
        check(job.state == "done", f"job {job.id}: {job.state}")
        check(not job.runs[1]["available"] and "CPU backend" in job.runs[1]["reason"], "the kernel ran on the CPU?")
        check("not run:" in job.table(), "the table does not say why the kernel did not run")
        try:
            c.kernel('extern "C" __global__ void kernel(const float* a, float* b, int m, int n) {\n b[0] = a[0] +;\n}\n',
                     experiment="transpose", name="broken")
            fail("a broken kernel compiled")
        except gpulab.Problem as p:
            check(p.status == 422 and p.doc.get("line") == 2, f"problem: {p}")
        print(f"kernel {k['variant']} compiled and listed unavailable on the CPU backend; a broken one: 422 at line 2")
        # The same name again: version 2 of the same kernel; its versions and the diff.
        k2 = c.kernel('// v2\n' + c.kernel_version(k["id"], 1)["source"], experiment="transpose",
                      name=k["name"], block=[32, 32], tile=[32, 32])
        check(k2["id"] == k["id"] and k["version"] == 1 and k2["version"] == 2, f"versions: {k}, {k2}")
        check([v["version"] for v in c.kernel_versions(k["id"])] == [1, 2], "the versions listed")
        check("\n+// v2\n" in c.kernel_diff(k["id"], 1, 2), "the diff")
        check(c.delete_kernel(k["id"], 2)["kernel_deleted"] is False, "a version deleted")
        print(f"kernel {k['id']}: versions 1 and 2, their diff, version 2 deleted")
        # The compiler's view; a run's profile (the CPU says why it has none).
        check(".entry kernel(" in c.kernel_ptx(k["id"]) and ".target sm_90" in c.kernel_ptx(k["id"], 1), "ptx")
        try:
            c.kernel_sass(k["id"])
            fail("SASS without a disassembler")
        except gpulab.Problem as p:
            check(p.status == 503 and p.doc.get("code") == "sass_unavailable", f"sass: {p}")
        prof = c.run("transpose", m=64, n=48, variant="naive", profile=True)
        check(prof.doc["params"]["profile"] == "counters" and not prof.runs[0]["profile"]["available"],
              f"profile: {prof.runs[0].get('profile')}")
        # A problem: defined, read, listed, a bad one refused naming its field, deleted.
        problem = {"name": "double_it", "params": {"n": {"default": 1000, "min": 1, "max": 1 << 20}},
                   "inputs": [{"name": "x", "dtype": "float32", "shape": ["n"], "init": {"uniform": [0, 1]}}],
                   "outputs": [{"name": "y", "dtype": "float32", "shape": ["n"], "tolerance": "exact"}],
                   "reference": {"source": 'extern "C" __global__ void kernel(const float* x, float* y, int n) '
                                           '{ int i = blockIdx.x * 256 + threadIdx.x; if (i < n) y[i] = 2 * x[i]; }',
                                 "block": [256], "grid": ["cdiv(n, 256)"]},
                   "figure": {"bytes": "8 * n"}}
        d = c.define_problem(problem)
        check(d["version"] == 1 and d["signature"].endswith("(const float *x, float *y, int n);"), f"problem: {d}")
        check(c.problem("double_it", 1)["definition"]["reference"]["grid"] == ["cdiv(n, 256)", 1, 1], "problem read")
        check([p["name"] for p in c.problems()] == ["double_it"], "problems listed")
        try:
            c.define_problem({**problem, "figure": {"bytes": "8 * m"}})
            fail("an unknown name in an expression was taken")
        except gpulab.Problem as p:
            check(p.status == 400 and p.doc.get("field") == "figure.bytes", f"bad problem: {p}")
        k = c.kernel('extern "C" __global__ void kernel(const float* x, float* y, int n) '
                     '{ int i = blockIdx.x * 512 + threadIdx.x; if (i < n) y[i] = 2 * x[i]; }',
                     "problem:double_it", name="wide", block=[512], grid=["cdiv(n, 512)"])
        check(k["experiment"] == "problem:double_it" and k["grid"][0] == "cdiv(n, 512)", f"problem kernel: {k}")
        pj = c.run("problem:double_it", n=4096, seed=9, variant=["reference", "kernel:wide"])
        check(pj.doc["type"] == "problem" and pj.doc["params"]["n"] == 4096 and pj.doc["params"]["seed"] == 9
              and [r["variant"] for r in pj.runs] == ["reference", k["variant"]]
              and not pj.runs[0]["available"], f"problem job: {pj.doc}")
        x = np.arange(4096, dtype=np.float32)
        given = c.run("problem:double_it", n=4096, inputs={"x": x})  # uploaded, then named
        check(given.doc["params"]["inputs"]["x"]["buffer"] > 0 and given.state == "done",
              f"problem job with its input: {given.doc}")
        check(c.download(given.doc["params"]["inputs"]["x"]["buffer"]).dtype == np.float32, "input's dtype kept")
        try:
            c.run("problem:double_it", n=4096, inputs={"x": x.astype(np.int32)})
            fail("an int32 buffer was taken for a float32 input")
        except gpulab.Problem as p:
            check(p.status == 400 and p.code == "dtype_mismatch" and p.field == "inputs.x", f"dtype: {p}")
        try:
            c.run("problem:double_it", n=0)
            fail("n=0 was taken")
        except gpulab.Problem as p:
            check(p.status == 400 and p.field == "params.n", f"bad problem job: {p}")
        check(c.delete_problem("double_it")["deleted"] is True and c.problems() == [], "problem deleted")
        print("ptx, a profile's reason, a problem defined, read, refused, its kernel and job, deleted")

        queued = c.run("transpose", m=2048, n=2048, wait=False)
        c.cancel(queued)
        check(c.wait(queued).state in ("canceled", "done"), "cancel")
        check(len(c.jobs(limit=3)) == 3, "jobs")
        board = c.leaderboard("transpose", size="64")
        check(board["rows"][0]["rank"] == 1, f"leaderboard: {board}")
        print("test_client: ok")
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
