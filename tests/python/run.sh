#!/usr/bin/env bash
# Installs clients/python into a fresh virtual environment (python3-venv; Debian's numpy
# and wheel through --system-site-packages; no network: --no-build-isolation uses the
# venv's own setuptools and the system's wheel) and runs tests/python/test_client.py
# with it against a real gpulabd.
#   GPULABD=build/gpulabd tests/python/run.sh VENV_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=${1:?a folder for the virtual environment}
rm -rf "$venv"
if ! /usr/bin/python3 -m venv --system-site-packages "$venv"; then
  echo "FAIL: python3 -m venv failed (apt-get install python3-venv; scripts/gpulab test installs it)"
  exit 1
fi
# A copy is installed: a build in the source tree would leave build/ and *.egg-info there.
cp -r "$root/clients/python" "$venv/src"
"$venv/bin/pip" install --quiet --no-build-isolation --no-index --no-deps "$venv/src"
[ -n "${GPULABD:-}" ] && GPULABD=$(realpath "$GPULABD") && export GPULABD
cd "$venv" # not the source tree: the installed package is the one imported
exec "$venv/bin/python" "$root/tests/python/test_client.py"
