#!/usr/bin/python3
"""What numpy users send, through a real gpulabd (--backend cpu): np.random.rand's
float64, np.asfortranarray and transposed views (Fortran order), slices, raw
float32; each uploaded as np.save writes it, downloaded as .npy and as raw float32
(Accept), compared bit for bit with numpy's own astype(np.float32), and one of them
transposed by a job. float16, int32, uint32 and int8 (a problem's inputs) kept as
sent, in C order, and back bit for bit; bfloat16's bits raw with ?dtype=. Every
array gpulabd refuses (int64, uint8, bool, complex,
big-endian, 3-D, 0-d, strings, dates, objects, structured, float64 past float32's
range, .npz, a file mangled by curl -d) is refused with the numpy call that fixes
it in its detail, and that call, run here, gives an array it accepts.
  GPULABD=build/gpulabd /usr/bin/python3 tests/numpy/numpy_http.py
Exits 0, or 1 at the first failure. numpy missing is a failure (python3-numpy)."""
import http.client
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
except ImportError:
    print("FAIL: numpy is not installed for /usr/bin/python3 (apt-get install python3-numpy; "
          "scripts/gpulab test installs it)")
    sys.exit(1)

GPULABD = os.environ.get("GPULABD")
PORT = None
checks = 0


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def check(cond, msg):
    global checks
    checks += 1
    if not cond:
        fail(msg)


def request(method, path, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
    conn.request(method, path, body=body, headers=headers or {})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data


def npy_bytes(a):
    f = io.BytesIO()
    np.save(f, a)
    return f.getvalue()


def upload(a, expect=201, content_type="application/x-npy", query="", body=None):
    status, hdr, data = request("POST", "/buffers" + query, body if body is not None else npy_bytes(a),
                                {"Content-Type": content_type})
    doc = json.loads(data)
    check(status == expect, f"POST /buffers{query} ({content_type}): {status}, expected {expect}: {doc}")
    return doc


def download(buf_id, accept=None):
    status, hdr, data = request("GET", f"/buffers/{buf_id}", headers={"Accept": accept} if accept else {})
    check(status == 200, f"GET /buffers/{buf_id} (Accept {accept}): {status} {data[:300]!r}")
    check(hdr.get("vary") == "Accept", f"GET /buffers/{buf_id}: Vary {hdr.get('vary')}")
    shape = tuple(int(x) for x in hdr["gpulab-shape"].split(","))
    if hdr["content-type"] == "application/x-npy":
        a = np.load(io.BytesIO(data))
        check(a.shape == shape, f"buffer {buf_id}: .npy shape {a.shape}, Gpulab-Shape {shape}")
        return "npy", a
    check(hdr["content-type"] == "application/octet-stream", f"buffer {buf_id}: {hdr['content-type']}")
    check(f'filename="buffer-{buf_id}.f32"' in hdr["content-disposition"], hdr["content-disposition"])
    return "raw", np.frombuffer(data, dtype="<f4").reshape(shape)


def same(got, want, what):
    check(got.dtype == np.float32 and got.shape == want.shape and got.flags.c_contiguous,
          f"{what}: {got.dtype} {got.shape}, expected float32 {want.shape} in C order")
    check(np.array_equal(got.view(np.uint32), np.ascontiguousarray(want).view(np.uint32)),
          f"{what}: values differ from numpy's astype(np.float32)")


def rounding_error(a):
    a = np.asarray(a)
    e = np.abs(a.astype(np.float64) - a.astype(np.float32).astype(np.float64))
    return float(np.max(e[np.isfinite(e)], initial=0.0))


def round_trip(name, a, dtype, fortran):
    """Uploads a as np.save writes it; the record and both downloads must be numpy's float32 of a."""
    doc = upload(a)
    want = a.astype(np.float32)
    check(doc["shape"] == list(a.shape) and doc["dtype"] == "float32" and doc["bytes"] == 4 * a.size,
          f"{name}: record {doc}")
    conv = doc["converted_from"]
    if dtype == "float32" and not fortran:
        check(conv is None, f"{name}: sent as float32 in C order, but converted_from is {conv}")
    else:
        check(conv == {"dtype": dtype, "fortran_order": fortran, "max_rounding_error": rounding_error(a)},
              f"{name}: converted_from {conv}, expected {dtype}, fortran_order {fortran}, "
              f"max_rounding_error {rounding_error(a)!r}")
    status, _, data = request("GET", f"/buffers/{doc['id']}")
    check(json.loads(request("GET", "/buffers?limit=1000")[2])["buffers"][0]["converted_from"] == conv,
          f"{name}: GET /buffers lists another converted_from")
    for accept in (None, "application/octet-stream"):
        kind, got = download(doc["id"], accept)
        check(kind == ("raw" if accept else "npy"), f"{name}: Accept {accept} answered {kind}")
        same(got, want, f"{name} ({kind})")
    print(f"ok   {name}: {a.dtype} {a.shape} {'F' if np.isfortran(a) else 'C'} order -> buffer {doc['id']}, "
          f"converted_from {conv}")
    return doc["id"]


def test_round_trips():
    rng = np.random.default_rng(17)
    np.random.seed(17)
    ids = {}
    ids["rand"] = round_trip("np.random.rand(33, 47)", np.random.rand(33, 47), "float64", False)
    round_trip("np.random.rand(1000)", np.random.rand(1000), "float64", False)
    f = np.asfortranarray(np.random.rand(33, 47))
    check(np.isfortran(f), "np.asfortranarray is Fortran order")
    ids["fortran"] = round_trip("np.asfortranarray(np.random.rand(33, 47))", f, "float64", True)
    a32 = rng.standard_normal((47, 33)).astype(np.float32)
    check(np.isfortran(a32.T), "a transposed view is Fortran order")
    round_trip("a.T (float32 view)", a32.T, "float32", True)
    round_trip("np.random.rand(20, 30).T (float64 view)", np.random.rand(20, 30).T, "float64", True)
    round_trip("a[::2, ::3] (a strided slice: np.save writes C order)", a32[::2, ::3], "float32", False)
    round_trip("float32 C order, as before", a32, "float32", False)
    round_trip("np.arange(12.0).reshape(3, 4) (float64, exact in float32)", np.arange(12.0).reshape(3, 4),
               "float64", False)
    wide = rng.standard_normal(2000) * 10.0 ** rng.integers(-50, 38, 2000)
    wide[:3] = [np.nan, np.inf, -np.inf]
    with np.errstate(invalid="ignore"):
        round_trip("float64 over every exponent (subnormal float32, underflow, nan, inf)", wide, "float64",
                   False)
    round_trip("(5, 1) Fortran order (laid out as C order)", np.asfortranarray(np.ones((5, 1))), "float64",
               False)
    return ids


def test_job_on_converted(ids):
    """A job reads the converted buffer: the transpose of the Fortran-order float64 upload."""
    src_status, _, src = request("GET", f"/buffers/{ids['fortran']}")
    a = np.load(io.BytesIO(src))
    body = json.dumps({"a": {"buffer": ids["fortran"]}, "variant": "naive", "keep_output": True,
                       "warmup": 0, "batches": 1, "reps": 1}).encode()
    status, _, data = request("POST", "/transpose", body, {"Content-Type": "application/json"})
    job = json.loads(data)
    check(status == 200 and job["state"] == "done" and job["result"]["passed"], f"POST /transpose: {status} {job}")
    _, out = download(job["output"]["buffer"])
    same(out, a.T, "the transpose job's output")
    print(f"ok   job {job['id']} transposed buffer {ids['fortran']} (an np.asfortranarray float64 upload)")


# What gpulabd refuses, the fix its detail must name, and that fix as run here
# (None: nothing to run; the fix is about sending the file).
def structured():
    return np.zeros(3, dtype=[("x", "<f4"), ("y", "<f8")])


REFUSED = [
    ("np.arange(10) (int64)", lambda: np.arange(10), "(int64)", "a.astype(np.float32)"),
    ("int16", lambda: np.arange(10, dtype=np.int16), "(int16)", "a.astype(np.float32)"),
    ("uint8 image", lambda: np.zeros((4, 6), dtype=np.uint8), "(uint8)", "a.astype(np.float32)"),
    ("bool mask", lambda: np.array([True, False, True]), "(bool)", "a.astype(np.float32)"),
    ("big-endian int32", lambda: np.ones(3, dtype=">i4"), "(big-endian int32)", "a.astype('<i4')"),
    ("complex64", lambda: np.ones(3, dtype=np.complex64), "(complex64)", "a.real.astype(np.float32)"),
    ("complex128", lambda: np.ones((2, 2)) * 1j, "(complex128)", "a.real.astype(np.float32)"),
    ("big-endian float32", lambda: np.ones((2, 3), dtype=">f4"), "(big-endian float32)", "a.astype('<f4')"),
    ("big-endian float64", lambda: np.ones((2, 3), dtype=">f8"), "(big-endian float64)", "a.astype('<f4')"),
    ("3-D", lambda: np.zeros((2, 3, 4), dtype=np.float32), "has 3 dimensions", "a.reshape(a.shape[0], -1)"),
    ("0-d", lambda: np.float64(1.5), "has 0 dimensions", "np.atleast_1d(a)"),
    ("strings", lambda: np.array(["1.5", "2"]), "(str)", "a.astype(np.float32)"),
    ("dates", lambda: np.array(["2026-01-01", "2026-06-01"], dtype="M8[D]"), "(datetime64)",
     "a.astype(np.int64).astype(np.float32)"),
    ("objects", lambda: np.array([1.5, 2.5], dtype=object), "(object)", "a.astype(np.float32)"),
    ("structured", structured, "a structured array", "a['name'].astype(np.float32)"),
    ("float64 past float32's range", lambda: np.array([1.0, -1e39, 3.0]), "does not fit float32",
     "np.clip(a, -3.4e38, 3.4e38).astype(np.float32)"),
    ("empty", lambda: np.zeros(0), "empty arrays are not accepted", None),
]


def test_refusals():
    for name, make, what, fix in REFUSED:
        a = make()
        doc = upload(a, expect=400)
        check(doc["code"] == "invalid_npy" and doc["field"] is None, f"{name}: {doc}")
        detail = doc["detail"]
        check(what in detail, f"{name}: the detail does not say '{what}': {detail}")
        if fix:
            check(fix in detail, f"{name}: the detail does not name the fix {fix}: {detail}")
            run = fix.replace("'name'", repr(a.dtype.names[0]) if a.dtype.names else "'name'")
            fixed = eval(run, {"np": np, "a": a})  # the fix as a user would type it
            doc2 = upload(fixed)
            check(doc2["shape"] == list(fixed.shape), f"{name}: after {run}: {doc2}")
        print(f"ok   {name}: 400 \"{detail}\"" + (f"; {fix} -> 201" if fix else ""))

    # A file cut, or mangled by curl -d (which drops line breaks): the detail says how to send it.
    good = npy_bytes(np.random.rand(40, 40))
    for name, body in (("curl -d (line breaks dropped)", good.replace(b"\n", b"").replace(b"\r", b"")),
                       ("curl -d @a.npy as curl sends it (NUL bytes dropped too)",
                        good.replace(b"\n", b"").replace(b"\r", b"").replace(b"\x00", b"")),
                       ("cut short", good[:-100]), ("only the preamble", good[:8])):
        doc = upload(None, expect=400, body=body)
        check(doc["code"] == "invalid_npy" and "curl --data-binary @a.npy" in doc["detail"], f"{name}: {doc}")
        print(f"ok   {name}: 400 \"{doc['detail']}\"")
    z = io.BytesIO()
    np.savez(z, x=np.ones(3))
    doc = upload(None, expect=400, body=z.getvalue())
    check("a .npz archive (zip)" in doc["detail"] and "np.load('f.npz')['name']" in doc["detail"], f".npz: {doc}")
    print(f"ok   np.savez: 400 \"{doc['detail']}\"")
    doc = upload(None, expect=400, body=b"1.5,2.5\n")
    check("not a .npy file" in doc["detail"] and "np.save('a.npy', a)" in doc["detail"], f"text: {doc}")


def test_raw():
    a = np.random.rand(5, 7).astype(np.float32)
    raw = "application/octet-stream"
    doc = upload(None, content_type=raw, query="?shape=5,7", body=a.tobytes())
    check(doc["converted_from"] is None and doc["shape"] == [5, 7], f"raw: {doc}")
    kind, got = download(doc["id"], raw)
    check(kind == "raw", "raw download")
    same(got, a, "raw float32 through ?shape= and Accept: application/octet-stream")
    # Without ?shape=: the shape is missing (not "wrong magic").
    doc = upload(None, expect=400, content_type=raw, body=a.tobytes())
    check(doc["code"] == "invalid_raw" and doc["field"] == "shape" and doc["detail"].startswith("missing shape"),
          f"raw without ?shape=: {doc}")
    print(f"ok   raw without ?shape=: 400 \"{doc['detail']}\"")
    # float64 sent raw: 8 bytes per element, and the fix.
    doc = upload(None, expect=400, content_type=raw, query="?shape=5,7", body=a.astype(np.float64).tobytes())
    check(doc["code"] == "invalid_raw" and "float64?" in doc["detail"] and
          "a.astype(np.float32).tofile('a.f32')" in doc["detail"], f"raw float64: {doc}")
    # A .npy sent as application/octet-stream is still a .npy; with ?shape= it is told to drop it.
    doc = upload(a, content_type=raw)
    check(doc["shape"] == [5, 7], f".npy as octet-stream: {doc}")
    doc = upload(a, expect=400, content_type=raw, query="?shape=5,7")
    check(doc["code"] == "invalid_raw" and "send it without ?shape=" in doc["detail"], f".npy with ?shape=: {doc}")
    print("ok   raw float32 in and out; float64 raw, .npy with and without ?shape= as octet-stream")


def test_kept():
    """The dtypes a problem's inputs take: kept as sent (Fortran order made C order),
    and downloaded the same bit for bit, as .npy and raw."""
    rng = np.random.default_rng(5)
    arrays = [("float16", rng.standard_normal((6, 5)).astype(np.float16)),
              ("int32", rng.integers(-2**31, 2**31 - 1, 17, dtype=np.int32)),
              ("uint32", rng.integers(0, 2**32 - 1, (3, 4), dtype=np.uint32)),
              ("int8", rng.integers(-128, 127, 7, dtype=np.int8)),  # 7 bytes: not a whole word
              ("int8 Fortran order", np.asfortranarray(rng.integers(-128, 127, (3, 5), dtype=np.int8)))]
    for name, a in arrays:
        doc = upload(a)
        want = np.ascontiguousarray(a)
        check(doc["dtype"] == a.dtype.name and doc["bytes"] == a.nbytes and doc["shape"] == list(a.shape),
              f"{name}: record {doc}")
        conv = doc["converted_from"]
        check(conv == ({"dtype": a.dtype.name, "fortran_order": True, "max_rounding_error": 0.0}
                       if np.isfortran(a) else None), f"{name}: converted_from {conv}")
        status, hdr, data = request("GET", f"/buffers/{doc['id']}")
        got = np.load(io.BytesIO(data))
        check(status == 200 and hdr["gpulab-dtype"] == a.dtype.name and got.dtype == a.dtype and
              got.tobytes() == want.tobytes(), f"{name}: .npy back {got.dtype} {got!r}")
        status, hdr, data = request("GET", f"/buffers/{doc['id']}", headers={"Accept": "application/octet-stream"})
        check(status == 200 and data == want.tobytes() and f'filename="buffer-{doc["id"]}.bin"' in
              hdr["content-disposition"], f"{name}: raw back {data!r}")
        print(f"ok   {name}: {a.dtype} {a.shape} -> buffer {doc['id']}, kept, back bit for bit")
    bits = rng.integers(0, 2**16 - 1, (2, 3), dtype=np.uint16)  # bfloat16's bits
    doc = upload(None, content_type="application/octet-stream", query="?shape=2,3&dtype=bfloat16",
                 body=bits.tobytes())
    check(doc["dtype"] == "bfloat16" and doc["bytes"] == 12, f"bfloat16: {doc}")
    status, hdr, data = request("GET", f"/buffers/{doc['id']}")
    check(status == 200 and hdr["content-type"] == "application/octet-stream" and data == bits.tobytes(),
          f"bfloat16 back: {status} {hdr}")
    status, hdr, data = request("GET", f"/buffers/{doc['id']}", headers={"Accept": "application/x-npy"})
    check(status == 406 and json.loads(data)["code"] == "not_acceptable", f"bfloat16 as .npy: {status}")
    print("ok   bfloat16 raw in and out (?dtype=bfloat16), 406 as .npy")


def test_accept():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    buf = upload(a)["id"]
    cases = [
        (None, "npy"), ("*/*", "npy"), ("application/*", "npy"), ("application/x-npy", "npy"),
        ("application/octet-stream", "raw"), ("application/x-npy;q=0.5, application/octet-stream", "raw"),
        ("application/octet-stream;q=0.5, */*", "npy"), ("application/x-npy;q=0, */*", "raw"),
        ("APPLICATION/OCTET-STREAM", "raw"), ("application/octet-stream; q=1.0", "raw"),
        ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "npy"),
    ]
    for accept, want in cases:
        kind, got = download(buf, accept)
        check(kind == want, f"Accept {accept!r}: {kind}, expected {want}")
        same(got, a, f"Accept {accept!r}")
    for accept in ("application/json", "text/csv, application/json;q=0.5", "application/x-npy;q=0",
                   "*/*;q=0"):
        status, hdr, data = request("GET", f"/buffers/{buf}", headers={"Accept": accept})
        doc = json.loads(data)
        check(status == 406 and hdr["content-type"] == "application/problem+json" and
              doc["code"] == "not_acceptable" and "application/octet-stream" in doc["detail"],
              f"Accept {accept!r}: {status} {doc}")
    print(f"ok   Accept: {len(cases)} headers answered as RFC 9110 weighs them, 4 answered 406")


def start():
    global PORT
    if not GPULABD:
        fail("GPULABD is not set (the path of the built gpulabd; ctest sets it)")
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([GPULABD, "--backend", "cpu", "--host", "127.0.0.1", "--port", "0", "--db", ":memory:",
                             "--access-log", "off"], stdout=subprocess.DEVNULL, stderr=log)
    for _ in range(600):
        log.seek(0)
        m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", log.read())
        if m:
            PORT = int(m.group(1))
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    log.seek(0)
    fail(f"gpulabd did not start: {log.read().decode(errors='replace')}")


def main():
    proc = start()
    try:
        ids = test_round_trips()
        test_job_on_converted(ids)
        test_refusals()
        test_raw()
        test_kept()
        test_accept()
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    print(f"numpy_http: {checks} checks passed, numpy {np.__version__}")


if __name__ == "__main__":
    main()
