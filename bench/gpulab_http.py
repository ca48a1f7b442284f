"""What the bench scripts ask of gpulabd over HTTP, in one place (standard library only):
    server = Server("http://127.0.0.1:8080")
    server.post("/transpose", {"m": 4096, "n": 4096})   # the finished job, waited for
    server.get("/device")"""
import json
import urllib.error
import urllib.request


class Server:
    def __init__(self, url):
        self.url = url.rstrip("/")

    def call(self, method, path, body=None, timeout=600):
        """The JSON answer to one request; an error status raises urllib.error.HTTPError."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.load(r)

    def get(self, path):
        return self.call("GET", path, timeout=60)

    def post(self, path, body):
        """A job, waited for to its end (up to 600 s)."""
        return self.call("POST", path + "?wait=600", body, timeout=700)

    def post_or_error(self, path, body):
        """post, or an error status as {"state": "http 400", "error": its first 200 characters}."""
        try:
            return self.post(path, body)
        except urllib.error.HTTPError as e:
            return {"state": f"http {e.code}", "error": e.read().decode(errors="replace")[:200]}
