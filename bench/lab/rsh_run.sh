#!/usr/bin/env bash
# One device call for issue 13's reduce / scan / histogram lab: the CPU self-test, the
# SASS of the lab's kernels (16-byte accesses, no local memory), then rsh_lab for each
# operation (checks, then timings beside CUB and the copy ceiling). Logs under $OUT
# (default /tmp/rsh-lab, 7 files); the resource lines, any failed check and the three
# GB/s tables last. Expects build/rsh_lab built on the development machine (the CMake
# target rsh_lab of a CUDA build tree: cmake --build build --target rsh_lab; RSH_LAB=path
# for another); run from anywhere, e.g. from the repo root:
#   bash bench/lab/rsh_run.sh
# Each part has its own process and time limit, so a fault or a hang in one leaves the
# others' results. Run 2 (the default) runs what it must settle: the variants below
# (every check of each; naive, shared and warp did not change since run 1, whose logs
# are in bench/lab/run1/); scan in two parts, the pipe form (new) apart from CUB and the
# register forms; about 50-70 s expected, 115 s at most (the limits). RSH_REDUCE,
# RSH_SCAN, RSH_SCANPIPE, RSH_HISTOGRAM override a list ("" runs every variant).
set -uo pipefail
variants_reduce=${RSH_REDUCE-best,cub}
variants_scan=${RSH_SCAN-cub,reg128,reg256,reg64}
variants_scanpipe=${RSH_SCANPIPE-best,cub,pipe1,pipe2,pipe3}
variants_histogram=${RSH_HISTOGRAM-best,cub}
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${RSH_LAB:-$root/build/rsh_lab}
out=${OUT:-/tmp/rsh-lab}
mkdir -p "$out"
smi() {
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,clocks_event_reasons.active \
    --format=csv,noheader 2>&1
}
smi > "$out/nvidia-smi.txt"

{
  "$bin" selftest
  echo "selftest exit $?"
  # per kernel of ours (CUB's left out): 16-byte loads / stores, 4-byte loads, cp.async
  # (LDGSTS), local memory, shared atomics, global reductions
  if command -v cuobjdump > /dev/null; then
    cuobjdump -sass "$bin" | awk '
      function flush() { if (f != "" && f !~ /cub|CUB|thrust/) printf "%-72s LDG.128 %2d STG.128 %2d LDG.32 %2d LDGSTS %2d LDL/STL %d ATOMS %2d RED/ATOMG %2d\n", f, l128, s128, l32, lgs, loc, ats, red }
      /Function :/ { flush(); f = $3; l128 = s128 = l32 = lgs = loc = ats = red = 0; next }
      /LDGSTS/ { lgs++; next }
      /LDG\.E\.128/ { l128++; next }
      /LDG\.E/ { l32++ }
      /STG\.E\.128/ { s128++ }
      /LDL|STL/ { loc++ }
      /ATOMS\./ { ats++ }
      /RED\.|ATOMG\./ { red++ }
      END { flush() }'
  else
    echo "cuobjdump: not found"
  fi
} > "$out/rsh_sass.txt" 2>&1

parts="reduce scan scanpipe histogram"
limit() { case $1 in reduce) echo 25 ;; *) echo 30 ;; esac; }
for part in $parts; do
  op=${part%pipe}
  eval "vs=\$variants_$part"
  t0=$SECONDS
  timeout "$(limit $part)" "$bin" "$op" ${vs:+"$vs"} > "$out/rsh_$part.log" 2>&1
  rc=$?
  echo "rsh_lab $op exit $rc after $((SECONDS - t0)) s (variants: ${vs:-all})" >> "$out/rsh_$part.log"
done
smi >> "$out/nvidia-smi.txt"

{
  echo "# rsh_lab on $(head -1 "$out/nvidia-smi.txt")"
  echo
  grep -h "^selftest" "$out/rsh_sass.txt"
  for part in $parts; do grep -hE "^(device|inputs|temp|cfg) " "$out/rsh_$part.log"; done | sort -u
  grep -v "^selftest" "$out/rsh_sass.txt"
  for part in $parts; do
    op=${part%pipe}
    echo
    echo "### $part"
    grep -E "^copy n=" "$out/rsh_$part.log" | head -4
    grep -E "FAIL|error|^rsh_lab |^$op: " "$out/rsh_$part.log" | head -24
    sed -n '/^## /,/^graph replay/p' "$out/rsh_$part.log"
  done
  echo
  tail -1 "$out/nvidia-smi.txt"
} > "$out/rsh_summary.md"
cat "$out/rsh_summary.md"
