#!/usr/bin/env bash
# docker/gpulab-alerts.yml through promtool: `check rules` (syntax, PromQL, templates)
# and `test rules` with tests/deploy/alerts.test.yml (each alert fires on a failing
# gpulabd's series after its `for`, with its labels and annotations, and not on a
# healthy one). promtool comes with Debian's prometheus package.
#   tests/deploy/alerts.test.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
if ! command -v promtool >/dev/null; then
  echo "FAIL: promtool is not installed (apt-get install prometheus; scripts/gpulab test installs it)"
  exit 1
fi
passed=0 failed=0
for step in "check rules docker/gpulab-alerts.yml" "test rules tests/deploy/alerts.test.yml"; do
  # shellcheck disable=SC2086 # the words of step are promtool's arguments
  if out=$(promtool $step 2>&1); then
    echo "ok   promtool $step"
    sed 's/^/  /' <<<"$out"
    passed=$((passed + 1))
  else
    echo "FAIL promtool $step"
    sed 's/^/  /' <<<"$out"
    failed=$((failed + 1))
  fi
done
# Every alert has a case where it fires (the multi-line form, with its exp_alerts).
untested=0 alerts=0
for alert in $(sed -n 's/^ *- alert: *\([A-Za-z]*\)$/\1/p' docker/gpulab-alerts.yml); do
  alerts=$((alerts + 1))
  if ! grep -q "^ *alertname: $alert$" tests/deploy/alerts.test.yml; then
    echo "FAIL $alert: no case in tests/deploy/alerts.test.yml where it fires"
    untested=$((untested + 1))
  fi
done
if [ $untested -eq 0 ] && [ $alerts -gt 0 ]; then
  echo "ok   each of the $alerts alerts has a case where it fires"
  passed=$((passed + 1))
else
  failed=$((failed + 1))
fi
echo "alerts: $passed passed, $failed failed"
[ $failed -eq 0 ]
