#!/usr/bin/env bash
# CUPTI's range profiler against gpulab's metrics on the GPU machine (issue 32): runs
# bench/lab/cupti_probe from BUILD_DIR with kernel replay (the verdict), then with user
# replay and the L2 flushed before each pass (to compare, above all DRAM bytes), prints
# both and keeps a copy in bench/out/cupti_probe-<time>.log. Exits with the kernel-replay
# run's status: 0 every check passed, 1 a check or a call failed, 77 no GPU or no
# counters for this user.
#   bash bench/lab/cupti_probe.sh BUILD_DIR > out.txt
# (build it with: cmake --build BUILD_DIR --target cupti_probe)
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: bash bench/lab/cupti_probe.sh BUILD_DIR" >&2; exit 2; }
b=$(cd "$1" && pwd) || exit 2
cd "$(dirname "$0")/../.."
[ -x "$b/cupti_probe" ] || { echo "no $b/cupti_probe (cmake --build $1 --target cupti_probe)"; exit 2; }
# libcupti and the libnvperf_host it loads live in the toolkit, which the loader may not know.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p bench/out
log=bench/out/cupti_probe-$(date -u +%Y%m%dT%H%M%SZ).log
{
  echo "# cupti_probe, $(date -u +%FT%TZ), $(hostname), user $(id -un) (uid $(id -u)), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 || true
  if [ -r /proc/driver/nvidia/params ]; then
    echo "driver: $(grep -i profiling /proc/driver/nvidia/params | tr '\n' ' ')(RmProfilingAdminOnly: 1 = counters for admins only)"
  fi
  echo
  echo "## kernel replay"
  timeout 300 "$b/cupti_probe"
  rc=$?
  echo
  echo "## user replay, the L2 flushed before each pass (for comparison)"
  timeout 300 "$b/cupti_probe" --replay user
  echo "(user replay: exit $?)"
  exit $rc
} 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
echo "cupti_probe.sh: log in $log; kernel replay exit $rc" >&2
exit "$rc"
