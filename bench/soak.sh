#!/usr/bin/env bash
# Hours, not seconds: one gpulabd under rounds of wrk load with its store held at a size
# bound, printing a row per round: jobs/s, p50 and p99 (ms), gpulabd's RSS and the store's
# size (its file and its pages in use). A store that reaches its bound prunes from then
# on, so the rows after the first are the steady state a lab's users get.
#   bench/soak.sh [build] [rounds] [seconds]      (defaults: build 6 20)
# Environment: BACKEND (cpu), MAX_DB_BYTES (104857600: reached within the first round
# here), MIX (tiny: POST /transpose 64x64 only; mix: tests/load/mix.lua's tiny jobs,
# job reads and health checks; real: mix, and beside it one client going round the rest
# of a lab's traffic, a request at a time: an upload, a job on it keeping its output,
# the output downloaded (both then deleted), the job's events as a stream, a sweep, a user's kernel run (the
# CPU backend's test runner: gpulabd gets --cpu-runner-test) and every fifth time the
# runner killed, which gpulabd starts again; its requests and failures in the last
# column), CONNECTIONS (64), PAUSE (2 s between rounds), EXTRA (more gpulabd flags).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
rounds=${2:-6}
seconds=${3:-20}
gpulabd="$build/gpulabd"
[ -x "$gpulabd" ] || { echo "no $gpulabd (give the build folder first)" >&2; exit 2; }
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 2; }

work=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

: >"$work/gpulabd.log"
# shellcheck disable=SC2086 # EXTRA is a list of flags
"$gpulabd" --backend "${BACKEND:-cpu}" --host 127.0.0.1 --port 0 --access-log off \
  --max-queued 100000 --max-db-bytes "${MAX_DB_BYTES:-104857600}" --db "$work/soak.db" \
  $([ "${MIX:-tiny}" = real ] && [ "${BACKEND:-cpu}" = cpu ] && echo --cpu-runner-test) \
  ${EXTRA:-} >/dev/null 2>"$work/gpulabd.log" &
pid=$!
port=""
for _ in $(seq 300); do
  port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/gpulabd.log")
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/gpulabd.log" >&2; exit 1; }
  sleep 0.1
done
url="http://127.0.0.1:$port"

cat >"$work/tiny.lua" <<'EOF'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"m":64,"n":64,"variant":"naive","warmup":0,"batches":1,"reps":1,"isolation":"shared"}'
wrk.path = "/transpose"
EOF
script="$work/tiny.lua"
[ "${MIX:-tiny}" != tiny ] && script="$here/tests/load/mix.lua"

# MIX=real's other client, until the file $work/stop appears: "requests failures" into
# $work/side.txt at the end.
side() {
  local n=0 bad=0 kernel buffer job
  python3 - "$work/a.npy" <<'PY' # a 300 x 200 float32 .npy, as np.save writes it
import random, struct, sys
h = "{'descr': '<f4', 'fortran_order': False, 'shape': (300, 200), }"
h += " " * (-(10 + len(h) + 1) % 64) + "\n"
body = struct.pack("<60000f", *(random.random() for _ in range(60000)))
open(sys.argv[1], "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + body)
PY
  ok() { n=$((n + 1)); [ "$1" -ge 200 ] && [ "$1" -lt 300 ] || bad=$((bad + 1)); }
  post() { curl -s -m 30 -o "$work/side.json" -w '%{http_code}' "$@" || echo 000; }
  field() { python3 -c "import json,sys; print(json.load(open('$work/side.json')).get('$1', ''))" 2>/dev/null; }
  ok "$(post -H 'Content-Type: text/x-cuda' --data-binary \
    'extern "C" __global__ void transpose(const float* a, float* b, int m, int n) {}' \
    "$url/kernels?experiment=transpose&name=soak&entry=transpose")"
  kernel=$(field id)
  for ((i = 1; ; i++)); do
    [ -e "$work/stop" ] && break
    ok "$(post -H 'Content-Type: application/x-npy' --data-binary @"$work/a.npy" "$url/buffers")"
    buffer=$(field id)
    ok "$(post -d "{\"a\":{\"buffer\":${buffer:-0}},\"variant\":\"padded33\",\"keep_output\":true}" "$url/transpose")"
    job=$(field id)
    out=$(python3 -c "import json; print((json.load(open('$work/side.json')).get('output') or {}).get('buffer') or 0)" 2>/dev/null)
    ok "$(curl -s -m 30 -o /dev/null -w '%{http_code}' "$url/buffers/${out:-0}" || echo 000)"
    ok "$(curl -s -m 30 -o /dev/null -w '%{http_code}' -X DELETE "$url/buffers/${buffer:-0}" || echo 000)"
    ok "$(curl -s -m 30 -o /dev/null -w '%{http_code}' -X DELETE "$url/buffers/${out:-0}" || echo 000)"
    ok "$(curl -s -N -m 30 -o /dev/null -w '%{http_code}' "$url/jobs/${job:-0}/events" || echo 000)"
    ok "$(post -d '{"type":"transpose","params":{"n":64,"warmup":0,"batches":1,"reps":1},"axes":{"m":[32,64],"variant":["naive","padded33"]}}' "$url/sweeps")"
    ok "$(post -d "{\"m\":64,\"n\":64,\"variant\":[\"naive\",\"kernel:${kernel:-0}\"],\"warmup\":0,\"batches\":1,\"reps\":1}" "$url/transpose")"
    [ $((i % 5)) -eq 0 ] && pkill -P "$pid" gpulab-runne 2>/dev/null || true # comm: 15 chars
  done
  echo "$n $bad" >"$work/side.txt"
}

rss_mb() { awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status"; }
store_mb() { # the SQLite file and its WAL, and the pages in use (/health)
  curl -s -m 10 "$url/health" | python3 -c 'import json,sys
s=json.load(sys.stdin)["store"]
print("%.0f %.0f" % (s["bytes"] / 2**20, s["used_bytes"] / 2**20))'
}
ms() { # wrk's latency ("812.00us", "1.20ms", "2.01s") in ms
  awk -v t="$1" 'BEGIN { v = t + 0; if (t ~ /us$/) v /= 1000; else if (t ~ /[^m]s$/) v *= 1000; printf "%.2f", v }'
}

echo "gpulabd $("$gpulabd" --version | awk '{print $2}') at $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'),"\
  "backend ${BACKEND:-cpu}, --max-db-bytes ${MAX_DB_BYTES:-104857600}, mix ${MIX:-tiny}," \
  "${CONNECTIONS:-64} connections, $rounds rounds of $seconds s"
echo "| round | jobs/s | p50 ms | p99 ms | RSS MB | store file MB | store in use MB | errors |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for r in $(seq "$rounds"); do
  out="$work/round$r.txt"
  rm -f "$work/stop" "$work/side.txt"
  side_pid=""
  if [ "${MIX:-tiny}" = real ]; then
    side &
    side_pid=$!
  fi
  wrk --latency -t 2 -c "${CONNECTIONS:-64}" -d "${seconds}s" --timeout 10s -s "$script" "$url" >"$out" 2>&1 || true
  touch "$work/stop"
  [ -n "$side_pid" ] && wait "$side_pid"
  rate=$(awk '/^Requests\/sec/ {printf "%.0f", $2}' "$out")
  p50=$(awk '$1 == "50%" {print $2}' "$out")
  p99=$(awk '$1 == "99%" {print $2}' "$out")
  errors=$(awk '/Non-2xx|Socket errors/ {printf "%s ", $0}' "$out")
  if [ -s "$work/side.txt" ]; then
    read -r side_n side_bad <"$work/side.txt"
    errors="${errors}side: $side_n requests, $side_bad failed"
  fi
  kill -0 "$pid" 2>/dev/null || { echo "gpulabd died in round $r" >&2; tail -20 "$work/gpulabd.log" >&2; exit 1; }
  read -r file used < <(store_mb)
  echo "| $r | $rate | $(ms "$p50") | $(ms "$p99") | $(rss_mb) | $file | $used | ${errors:-0} |"
  sleep "${PAUSE:-2}"
done
