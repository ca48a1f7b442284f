# shellcheck shell=bash disable=SC2154 # b, dir, max and conns are the caller's
# Sourced by bench/lab/prune_ab.sh and bench/lab/store_threads.sh: gpulabd on a store of
# tiny transposes. The caller sets b (the build folder), dir (a scratch folder), max
# (the size bound in bytes) and conns; BACKEND (cpu) and EXTRA (more gpulabd flags) come
# from the environment.
tiny='{"m":64,"n":64,"variant":"naive","warmup":0,"batches":1,"reps":1,"isolation":"shared"}'

# start DB MAX_DB_BYTES: gpulabd ($b) on DB in the background; sets pid and port
start() {
  port=$((18900 + RANDOM % 800))
  # shellcheck disable=SC2086 # EXTRA is a list of flags
  "$b/gpulabd" --backend "${BACKEND:-cpu}" --port $port --no-ceilings --access-log off \
    --max-queued 100000 --db "$1" --max-db-bytes "$2" ${EXTRA:-} >/dev/null 2>>"$dir/gpulabd.log" &
  pid=$!
  for _ in $(seq 300); do curl -sf "localhost:$port/health" >/dev/null && return; sleep 0.05; done
  echo "gpulabd did not start" >&2
  tail "$dir/gpulabd.log" >&2
  exit 1
}
stop() { kill -TERM "$pid"; wait "$pid" 2>/dev/null; }
used_mb() { curl -s "localhost:$port/health" | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["store"]["used_bytes"]) >> 20)'; }

# The seed, $dir/seed.db: filled with tiny jobs, no bound, until its pages in use reach
# the bound. Each measured run starts on a fresh copy of it.
seed() {
  start "$dir/seed.db" 0
  while [ "$(used_mb)" -lt $((max >> 20)) ]; do
    "$b/loadgen" "http://127.0.0.1:$port/transpose" "$tiny" "$conns" 2 >/dev/null
  done
  echo "seed: $(used_mb) MB in use" >&2
  stop
}

# run_on_seed MAX_DB_BYTES: gpulabd on a fresh copy of the seed, warmed up for WARMUP s.
run_on_seed() {
  rm -f "$dir"/run.db*
  cp "$dir/seed.db" "$dir/run.db"
  start "$dir/run.db" "$1"
  "$b/loadgen" "http://127.0.0.1:$port/transpose" "$tiny" "$conns" "${WARMUP:-4}" >/dev/null
}
