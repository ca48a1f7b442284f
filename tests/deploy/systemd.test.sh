#!/usr/bin/env bash
# docker/gpulabd.service through `systemd-analyze verify`, which needs no running
# systemd (it loads the unit and its dependencies as the manager would, in a test
# mode): under --root, a folder laid out as the unit's installation steps leave a
# machine (the built gpulabd at /usr/local/bin/gpulabd, the unit in
# /etc/systemd/system, this machine's own units beside it), so it works the same in
# a container or a chroot. Any message is a failure (an unknown key is only a
# warning to systemd, with exit 0), and the same check must catch a misspelt key and
# a relative ExecStart in a spoilt copy.
#   tests/deploy/systemd.test.sh build/gpulabd docker/gpulabd.service
set -uo pipefail
gpulabd=$1 unit=$2
passed=0 failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; [ -n "${2:-}" ] && sed 's/^/  /' <<<"$2"; failed=$((failed + 1)); }

if ! command -v systemd-analyze >/dev/null; then
  echo "FAIL: systemd-analyze is not installed (apt-get install systemd; scripts/gpulab test installs it)"
  exit 1
fi
units=/usr/lib/systemd/system
[ -d "$units" ] || units=/lib/systemd/system
root=$(mktemp -d "${TMPDIR:-/tmp}/gpulab-systemd.XXXXXX")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/local/bin" "$root/etc/systemd/system" "$root/etc/gpulab" "$root/usr/lib/systemd"
cp -a "$units" "$root/usr/lib/systemd/system"
install -m 0755 "$gpulabd" "$root/usr/local/bin/gpulabd"
: >"$root/etc/gpulab/tokens"

# verify NAME.service FILE: installs FILE as NAME.service and verifies it; prints
# systemd's messages, and returns its exit status.
verify() {
  install -m 0644 "$2" "$root/etc/systemd/system/$1"
  SYSTEMD_LOG_COLOR=0 systemd-analyze verify --man=no --root="$root" "$1" 2>&1
}

out=$(verify gpulabd.service "$unit")
rc=$?
if [ $rc -eq 0 ] && [ -z "$out" ]; then
  ok "systemd-analyze verify: docker/gpulabd.service loads with no message ($(systemd-analyze --version | head -1))"
else
  bad "systemd-analyze verify docker/gpulabd.service: exit $rc" "$out"
fi

spoilt=$root/spoilt.service
sed 's/^NoNewPrivileges=yes$/NoNewPrivilege=yes/' "$unit" >"$spoilt"
out=$(verify spoilt.service "$spoilt")
if grep -q "NoNewPrivilege" <<<"$out"; then ok "it reports a misspelt key (NoNewPrivilege=)"; else bad "a misspelt key went unreported" "$out"; fi
sed 's|^ExecStart=/usr/local/bin/gpulabd|ExecStart=gpulabd-missing|' "$unit" >"$spoilt"
out=$(verify spoilt.service "$spoilt")
rc=$?
if [ $rc -ne 0 ] && [ -n "$out" ]; then ok "it refuses an ExecStart that is no executable"; else bad "an ExecStart that is no executable passed (exit $rc)" "$out"; fi

# What the unit must keep: the state directory it writes the database to, the
# credential it reads the tokens from, and a restart after a lost device (exit 3).
grep -q '^StateDirectory=gpulab$' "$unit" && grep -q -- '--db /var/lib/gpulab/' "$unit" &&
  ok "the database lies in its StateDirectory" || bad "StateDirectory=gpulab and --db /var/lib/gpulab/ disagree"
grep -q '^LoadCredential=tokens:' "$unit" && grep -q -- '--tokens %d/tokens' "$unit" &&
  ok "--tokens reads the credential LoadCredential hands over" || bad "LoadCredential= and --tokens disagree"
grep -q '^Restart=on-failure$' "$unit" && ok "Restart=on-failure (gpulabd exits 3 after a lost device)" ||
  bad "no Restart=on-failure"

echo "systemd: $passed passed, $failed failed"
[ $failed -eq 0 ]
