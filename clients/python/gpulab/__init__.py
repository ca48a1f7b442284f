"""gpulab's Python client: jobs, users' kernels and buffers over gpulabd's HTTP API.

Standard library only; numpy where arrays go in or out (upload, download). A job is
waited for by following its Server-Sent Events (polling when they end early); a refused
request raises Problem with the RFC 9457 problem's members.

    import gpulab
    c = gpulab.Client("http://127.0.0.1:8080")
    b = c.upload(a)                                   # a float32 numpy array
    job = c.run("transpose", a={"buffer": b}, variant="naive", keep_output=True)
    print(job.table())                                # the lecture's table
    out = c.download(job)                             # the job's kept output
"""

import http.client
import io
import json
import os
import time
import urllib.parse

__all__ = ["Client", "Job", "Problem"]

FINAL = ("done", "failed", "canceled")


class Problem(Exception):
    """A request gpulabd refused: status, code, field (or None), detail."""

    def __init__(self, status, doc):
        self.status = status
        self.doc = doc if isinstance(doc, dict) else {}
        self.code = self.doc.get("code")
        self.field = self.doc.get("field")
        self.detail = self.doc.get("detail") or str(doc)[:200]
        where = f" ({self.field})" if self.field else ""
        super().__init__(f"{status} {self.code or ''}{where}: {self.detail}")


def _quantile(xs, q):
    """The q-quantile, linear between order statistics (as the dashboard's whiskers)."""
    xs = sorted(xs)
    if not xs:
        return None
    at = q * (len(xs) - 1)
    lo = int(at)
    return xs[lo] if lo + 1 >= len(xs) else xs[lo] + (at - lo) * (xs[lo + 1] - xs[lo])


class Job:
    """A job as gpulabd answered it: its document (doc) and what people read of it."""

    def __init__(self, doc):
        self.doc = doc
        self.id = doc.get("id")
        self.type = doc.get("type")
        self.state = doc.get("state")
        self.result = doc.get("result") or {}
        self.runs = self.result.get("runs") or []
        self.error = doc.get("error")

    @property
    def passed(self):
        """Done, and every run that ran passed its check."""
        if self.state != "done":
            return False
        return all(r["check"]["passed"] for r in self.runs if r.get("available") and r.get("check"))

    def rows(self):
        """A dict per run that ran (a pandas.DataFrame takes the list as it is)."""
        out = []
        for r in self.runs:
            if not r.get("available"):
                continue
            t = r.get("timing") or {}
            samples = t.get("samples_ms") or []
            check = r.get("check") or {}
            out.append({
                "variant": r.get("variant") if "streams" not in r else f"streams={r['streams']}",
                "median_ms": t.get("median_ms"),
                "q1_ms": _quantile(samples, 0.25),
                "q3_ms": _quantile(samples, 0.75),
                "figure": r.get("figure"),
                "unit": r.get("unit"),
                "percent_of_ceiling": r.get("percent_of_ceiling"),
                "speedup": r.get("speedup"),
                "speedup_range": r.get("speedup_range"),
                "passed": check.get("passed"),
                "failure": check.get("failure"),
            })
        return out

    def table(self):
        """The lecture's table as text: the median with its quartiles, the figure, % of
        the ceiling, the speedup over the first run with its range, the check."""
        head = f"job {self.id} {self.type}: {self.state}"
        if self.error:
            head += f"\nerror {self.error.get('code')}: {self.error.get('message')}"
        lines = [head, f"{'variant':16} {'median ms [q1-q3]':28} {'figure':16} {'% ceil':7} {'speedup [range]':20} check"]
        for r in self.runs:
            label = r.get("variant") if "streams" not in r else f"streams={r['streams']}"
            if not r.get("available"):
                lines.append(f"{label:16} not run: {r.get('reason', '')}")
        for row in self.rows():
            med = (f"{row['median_ms']:.4f} [{row['q1_ms']:.4f}-{row['q3_ms']:.4f}]"
                   if row["median_ms"] is not None else "-")
            fig = f"{row['figure']:.1f} {row['unit']}" if row["figure"] is not None else "-"
            pct = f"{row['percent_of_ceiling']:.1f}%" if row["percent_of_ceiling"] is not None else "-"
            rng = row["speedup_range"] or [0, 0]
            spd = f"{row['speedup']:.2f}x [{rng[0]:.2f}-{rng[1]:.2f}]" if row["speedup"] is not None else "-"
            chk = "passed" if row["passed"] else f"FAILED{': ' + row['failure'] if row['failure'] else ''}"
            lines.append(f"{row['variant']:16} {med:28} {fig:16} {pct:7} {spd:20} {chk}")
        return "\n".join(lines)

    def __repr__(self):
        return f"<gpulab.Job {self.id} {self.type} {self.state}>"


class Client:
    """gpulabd at url (default $GPULAB_URL, else http://127.0.0.1:8080), as token's
    client (default $GPULAB_TOKEN)."""

    def __init__(self, url=None, token=None, timeout=600):
        url = url or os.environ.get("GPULAB_URL") or "http://127.0.0.1:8080"
        self.url = url.rstrip("/")
        parts = urllib.parse.urlsplit(self.url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or (443 if self._https else 80)
        self.token = token if token is not None else os.environ.get("GPULAB_TOKEN")
        self.timeout = timeout

    # ---- HTTP ----

    def _connection(self, timeout=None):
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=timeout or self.timeout)

    def _headers(self, content_type=None):
        h = {}
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        if content_type:
            h["Content-Type"] = content_type
        return h

    def request(self, method, path, body=None, content_type=None, raw=False):
        """method path (under /v1); the answer's JSON (raw: its bytes). Raises Problem
        for an answer that is not 2xx."""
        conn = self._connection()
        try:
            if isinstance(body, (dict, list)):
                body, content_type = json.dumps(body).encode(), "application/json"
            conn.request(method, "/v1" + path, body=body, headers=self._headers(content_type))
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        if resp.status // 100 != 2:
            try:
                doc = json.loads(data)
            except ValueError:
                doc = data.decode("utf-8", "replace")
            raise Problem(resp.status, doc)
        if raw:
            return data
        return json.loads(data) if data else None

    # ---- jobs ----

    _JOB_FIELDS = ("variant", "seed", "warmup", "batches", "reps", "order", "cold", "profile",
                   "graph", "max_noise", "max_time", "min_samples", "priority", "isolation",
                   "device", "depends_on", "dependency")

    def run(self, experiment, wait=True, timeout=None, **params):
        """A job of experiment with params (variant as a name or a list), waited for
        unless wait is False. Job options (priority, isolation, keep_output, depends_on)
        go with the job, the rest are the experiment's params. experiment
        "problem:NAME" runs a job of a problem users define: its params by name
        (rows=4096), the fields every job takes beside them, variant "reference" and
        its kernels (kernel:<name>), and inputs={"x": ...} giving inputs by name as a
        buffer's id or a numpy array (uploaded first, its dtype kept)."""
        if experiment.startswith("problem:"):
            body = {k: params.pop(k) for k in self._JOB_FIELDS if k in params}
            if "inputs" in params:
                body["inputs"] = {name: {"buffer": v if isinstance(v, int) else self.upload(v, dtype=None)}
                                  for name, v in params.pop("inputs").items()}
            body["params"] = params
            path = f"/problems/{urllib.parse.quote(experiment[8:])}/jobs?wait=0"
            doc = self.request("POST", path, body)
            return self.wait(doc["id"], timeout) if wait else Job(doc)
        options = {k: params.pop(k) for k in ("priority", "isolation", "keep_output", "depends_on") if k in params}
        if options:
            doc = self.request("POST", "/jobs?wait=0", {"type": experiment, "params": params, **options})
        else:
            doc = self.request("POST", f"/{urllib.parse.quote(experiment)}?wait=0", params)
        return self.wait(doc["id"], timeout) if wait else Job(doc)

    def job(self, job):
        """The job (an id or a Job) as it is now."""
        return Job(self.request("GET", f"/jobs/{_id(job)}"))

    def jobs(self, state=None, limit=20):
        """The newest jobs' summaries."""
        q = {"limit": limit}
        if state:
            q["state"] = state
        return self.request("GET", "/jobs?" + urllib.parse.urlencode(q))["jobs"]

    def cancel(self, job):
        return Job(self.request("DELETE", f"/jobs/{_id(job)}"))

    def events(self, job):
        """The job's events as (name, data) until it ends (a generator)."""
        conn = self._connection()
        try:
            conn.request("GET", f"/v1/jobs/{_id(job)}/events", headers=self._headers())
            resp = conn.getresponse()
            if resp.status != 200:
                raise Problem(resp.status, resp.read().decode("utf-8", "replace"))
            name, data = None, []
            for line in resp:
                line = line.decode("utf-8").rstrip("\r\n")
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].lstrip())
                elif not line and data:
                    yield name or "message", json.loads("\n".join(data))
                    name, data = None, []
        finally:
            conn.close()

    def wait(self, job, timeout=None):
        """Waits for the job to end (its events, then polling) and returns it."""
        deadline = time.monotonic() + (timeout or self.timeout)
        try:
            for name, data in self.events(job):
                if name == "state" and data.get("state") in FINAL:
                    break
                if time.monotonic() > deadline:
                    break
        except (OSError, Problem, ValueError):
            pass  # the stream ended early: polling tells
        while True:
            j = self.job(job)
            if j.state in FINAL:
                return j
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {j.id} is still {j.state}")
            time.sleep(0.2)

    # ---- buffers ----

    def upload(self, array, dtype="float32"):
        """An array as a buffer, converted to dtype first (float32: what the built-ins
        read; None: kept as it is, float16, int32, uint32 or int8 for a problem's
        input); its id."""
        import numpy as np

        f = io.BytesIO()
        np.save(f, np.ascontiguousarray(array, dtype=dtype))
        return self.request("POST", "/buffers", f.getvalue(), "application/x-npy")["id"]

    def download(self, source):
        """A buffer (its id) or a job's kept output (a Job or its id with keep_output) as
        a numpy array."""
        import numpy as np

        if isinstance(source, Job) or (isinstance(source, dict) and "state" in source):
            job = source if isinstance(source, Job) else Job(source)
            buf = ((job.doc.get("output") or {}).get("buffer")) if job.doc.get("output") else None
            if buf is None:
                raise ValueError(f"job {job.id} kept no output (run it with keep_output=True)")
            source = buf
        data = self.request("GET", f"/buffers/{int(source)}", raw=True)
        return np.load(io.BytesIO(data))

    def delete_buffer(self, buffer_id):
        return self.request("DELETE", f"/buffers/{int(buffer_id)}")

    # ---- users' kernels ----

    def kernel(self, path_or_source, experiment, name=None, **fields):
        """Compiles a kernel (a file's path or the source itself) for experiment
        ("problem:NAME": a kernel of that problem, its grid a list of expressions); the
        document of the version it made: its "id" and "version" (the same name again
        makes the kernel's next version, its id kept), and its "variant",
        "kernel:<id>@<version>", which names that version in jobs ("kernel:<id>" names
        the newest). fields: entry, block, tile, grid, shared_bytes, scratch_bytes,
        cooperative, options, public. A compile error raises Problem (422, with line and compile)."""
        if os.path.exists(str(path_or_source)) and "\n" not in str(path_or_source):
            with open(path_or_source, encoding="utf-8") as f:
                source = f.read()
            name = name or os.path.splitext(os.path.basename(path_or_source))[0]
        else:
            source = path_or_source
        what = {"problem": experiment[8:]} if experiment.startswith("problem:") else {"experiment": experiment}
        body = {**what, "name": name or "kernel", "source": source, **fields}
        return self.request("POST", "/kernels", body)

    def kernels(self):
        return self.request("GET", "/kernels")["kernels"]

    def kernel_versions(self, kernel_id):
        """A kernel's versions, oldest first (no sources)."""
        return self.request("GET", f"/kernels/{int(kernel_id)}/versions")["versions"]

    def kernel_version(self, kernel_id, version):
        """One version's document, with its source."""
        return self.request("GET", f"/kernels/{int(kernel_id)}/versions/{int(version)}")

    def kernel_diff(self, kernel_id, from_version, to_version):
        """The unified diff of two versions' sources, as text ("" when the same)."""
        data = self.request("GET", f"/kernels/{int(kernel_id)}/diff?from={int(from_version)}"
                            f"&to={int(to_version)}", raw=True)
        return data.decode("utf-8", "replace")

    def delete_kernel(self, kernel_id, version=None):
        """Deletes one version (its last takes the kernel), or the kernel with them all."""
        if version is None:
            return self.request("DELETE", f"/kernels/{int(kernel_id)}")
        return self.request("DELETE", f"/kernels/{int(kernel_id)}/versions/{int(version)}")

    def kernel_ptx(self, kernel_id, version=None):
        """A version's PTX as NVRTC gave it (the newest version's without one)."""
        at = f"/versions/{int(version)}" if version is not None else ""
        return self.request("GET", f"/kernels/{int(kernel_id)}{at}/ptx", raw=True).decode("utf-8", "replace")

    def kernel_sass(self, kernel_id, version=None):
        """A version's SASS, by the toolkit's disassembler on the server (Problem 503
        sass_unavailable where it has none)."""
        at = f"/versions/{int(version)}" if version is not None else ""
        return self.request("GET", f"/kernels/{int(kernel_id)}{at}/sass", raw=True).decode("utf-8", "replace")

    # ---- problems users define ----

    def define_problem(self, definition):
        """Defines a problem (a dict, or a JSON file's path): its first version, or the
        next of yours of that name. The version's document: its "signature", "template"
        and the reference's "compile" report. A bad definition raises Problem (400 with
        the field; 422 when the reference does not compile)."""
        if isinstance(definition, str):
            with open(definition, encoding="utf-8") as f:
                definition = json.load(f)
        return self.request("POST", "/problems", definition)

    def problems(self):
        return self.request("GET", "/problems")["problems"]

    def problem(self, name, version=None):
        """A problem's newest version (or one version) in full."""
        at = f"/versions/{int(version)}" if version is not None else ""
        return self.request("GET", f"/problems/{urllib.parse.quote(name)}{at}")

    def delete_problem(self, name):
        return self.request("DELETE", f"/problems/{urllib.parse.quote(name)}")

    def leaderboard(self, experiment, size=None):
        q = f"?size={urllib.parse.quote(str(size))}" if size is not None else ""
        return self.request("GET", f"/leaderboard/{urllib.parse.quote(experiment)}{q}")


def _id(job):
    if isinstance(job, Job):
        return int(job.id)
    if isinstance(job, dict):
        return int(job["id"])
    return int(job)
