#!/usr/bin/env bash
# Users' kernels on the GPU machine, for bench/RESULTS.md: NVRTC compile time (first
# and cached) through POST /kernels, and the runner's numbers from test_gpu_runner
# (its start, the user padded33's median through the runner, and the time from a
# faulting kernel's failed job to the next passing one, for __trap(), an out-of-range
# store and an endless loop at a 1 s deadline).
# Also what a job with a user's kernel costs since issue 30 (fresh inputs generated
# before and checked after every timed launch, the module's variables put back, the
# inputs compared after each request): run_ms of a tiny and a 4096 x 4096 transpose
# with the built-in alone and with the user's padded33 beside it.
#   bench/ukernels.sh [build-dir]      (default build; needs gpulabd, gpulab-runner)
# BACKEND=cpu: a dry run on a machine without a GPU (the CPU test runner stands for
# the kernel; the compile times are real, the rest is not a GPU figure).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
PORT=18741
BACKEND=${BACKEND:-cuda}
extra=()
[ "$BACKEND" = cpu ] && extra=(--cpu-runner-test)
"$B/gpulabd" --backend "$BACKEND" "${extra[@]}" --port "$PORT" --db none --access-log off > /tmp/ukernels-gpulabd.log 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -sf "localhost:$PORT/health" > /dev/null && break; sleep 0.1; done
SRC=$(mktemp --suffix=.cu)
cat > "$SRC" <<'CU'
#define TILE 32
extern "C" __global__ void kernel(const float* a, float* b, int m, int n) {
  __shared__ float tile[TILE][TILE + 1];
  int tx = threadIdx.x, ty = threadIdx.y;
  size_t x = (size_t)blockIdx.x * TILE + tx, y = (size_t)blockIdx.y * TILE + ty;
  if (x < (size_t)n && y < (size_t)m) tile[ty][tx] = a[y * n + x];
  __syncthreads();
  size_t ox = (size_t)blockIdx.y * TILE + tx, oy = (size_t)blockIdx.x * TILE + ty;
  if (ox < (size_t)m && oy < (size_t)n) b[oy * m + ox] = tile[tx][ty];
}
CU
post() {
  curl -s -o /tmp/ukernels-answer.json -w '%{time_total}' --data-binary @"$SRC" \
    -H 'Content-Type: text/x-cuda' "localhost:$PORT/kernels?experiment=transpose&name=padded33_user&block=32,32&tile=32,32"
}
for i in 1 2 3; do
  # a new -D each round: a first compile (cache miss)
  t=$(curl -s -o /tmp/ukernels-answer.json -w '%{time_total}' --data-binary @"$SRC" -H 'Content-Type: text/x-cuda' \
      "localhost:$PORT/kernels?experiment=transpose&name=first$i&block=32,32&options=-DROUND=$i$RANDOM")
  python3 -c "import json,sys; d=json.load(open('/tmp/ukernels-answer.json')); c=d['compile']; print('first compile: nvrtc %.1f ms, POST %.1f ms, cached=%s, %d registers, %d B smem' % (c['compile_ms'], float(sys.argv[1])*1e3, c['cached'], c.get('registers',-1), c.get('shared_bytes',-1)))" "$t"
done
post > /dev/null
for i in 1 2 3; do
  t=$(post)
  python3 -c "import json,sys; d=json.load(open('/tmp/ukernels-answer.json')); print('cached compile: POST %.2f ms, cached=%s' % (float(sys.argv[1])*1e3, d['compile']['cached']))" "$t"
done
ID=$(python3 -c "import json; print(json.load(open('/tmp/ukernels-answer.json'))['id'])")
# The runner's added cost per job: the same transpose job with the built-in padded33
# alone, and with the user's padded33 beside it (each timed launch of the user's on
# fresh inputs, checked); run_ms is gpulabd's wall time of the job on the device,
# medians of 5; and the two medians' ratio (the 3% the design aims at).
job_ms() { # SIZE VARIANTS
  for _ in 1 2 3 4 5; do
    curl -s -d "{$1, \"variant\": [$2]}" "localhost:$PORT/transpose?wait=120" |
      python3 -c "import json,sys; d=json.load(sys.stdin); r=d['result']['runs']; print('%.2f' % d['run_ms'], *['%.4f' % x['timing']['median_ms'] for x in r], *[x['check'].get('failure', '') for x in r])"
  done | sort -n | sed -n 3p
}
echo "| size | padded33 alone: run_ms, median | with kernel:$ID: run_ms, median built-in, user |"
echo "| --- | --- | --- |"
for size in '"m": 64, "n": 64' '"m": 4096, "n": 4096'; do
  echo "| $size | $(job_ms "$size" '"padded33"') | $(job_ms "$size" "\"padded33\", \"kernel:$ID\"") |"
done
rm -f "$SRC"
[ "$BACKEND" = cpu ] || GPULAB_RUNNER="$B/gpulab-runner" "$B/tests/test_gpu_runner"
