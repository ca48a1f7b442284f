#!/bin/sh
# A throwaway PostgreSQL cluster for the tests: pg_cluster.sh start|stop|restart|uri DIR.
# start: initdb in DIR/data and a server listening on a Unix socket in DIR only (no TCP
# port to collide with), superuser gpulab, trust authentication. It runs as an
# unprivileged user (PostgreSQL refuses root, and CI runs as root): gpulab-pg, made
# here if missing (else nobody). The binaries are the newest /usr/lib/postgresql/*/bin,
# not PATH's. A missing PostgreSQL is an error (exit 1), never a skip.
# uri: prints the libpq URI of the cluster's database "postgres".
set -eu
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop|restart|uri DIR" >&2; exit 2; }

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$bin" ] || [ ! -x "$bin/pg_ctl" ]; then
  echo "FAIL: PostgreSQL is not installed (apt-get install postgresql; scripts/gpulab test installs it)" >&2
  exit 1
fi
port=5432

# The cluster's owner when run as root: gpulab-pg, made here if missing (else nobody),
# decided once per call. The fixtures start their clusters at the same time and a
# concurrent useradd fails on /etc/passwd's lock, so the making is serialised by flock.
owner=
if [ "$(id -u)" -eq 0 ]; then
  if ! id gpulab-pg >/dev/null 2>&1; then
    flock /tmp/gpulab-pg-useradd.lock sh -c 'id gpulab-pg >/dev/null 2>&1 ||
      useradd --system --no-create-home --shell /usr/sbin/nologin gpulab-pg' || true
  fi
  if id gpulab-pg >/dev/null 2>&1; then owner=gpulab-pg; else owner=nobody; fi
fi

# Runs "$@" as the cluster's owner (root cannot run PostgreSQL).
as_owner() {
  if [ -z "$owner" ]; then "$@"; else runuser -u "$owner" -- "$@"; fi
}

uri() { echo "postgresql://gpulab@/postgres?host=$(cd "$dir" && pwd)&port=$port"; }

case $cmd in
start)
  [ -f "$dir/data/postmaster.pid" ] && as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ $(( ${#dir} + 18 )) -gt 107 ]; then # sun_path: DIR/.s.PGSQL.5432 must fit
    echo "FAIL: $dir is too long a path for the server's Unix socket (107 bytes): use a shorter build folder" >&2
    exit 1
  fi
  if [ "$(id -u)" -eq 0 ]; then
    chown "$owner" "$dir"
    # The owner must reach DIR through its parents: where it cannot (a build folder
    # under /root), they are opened for search (o+x) only.
    if ! as_owner test -w "$dir"; then
      p=$dir
      while [ "$p" != / ]; do p=$(dirname "$p"); chmod o+x "$p" 2>/dev/null || true; done
    fi
  fi
  as_owner "$bin/initdb" -D "$dir/data" -U gpulab --auth=trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 1; }
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses='' -k $dir -p $port -c max_connections=200" start >/dev/null ||
    { cat "$dir/server.log" >&2; exit 1; }
  uri
  ;;
stop)
  [ -d "$dir/data" ] || exit 0
  as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  ;;
restart) # as a server that goes away and comes back: stop, then start on the same data
  as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses='' -k $dir -p $port -c max_connections=200" start >/dev/null
  ;;
pgstop)  # stop only, data kept (restart's first half, for a test that looks in between)
  as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
  ;;
pgstart) # start again after pgstop
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses='' -k $dir -p $port -c max_connections=200" start >/dev/null
  ;;
uri) uri ;;
*) echo "usage: $0 start|stop|restart|pgstop|pgstart|uri DIR" >&2; exit 2 ;;
esac
