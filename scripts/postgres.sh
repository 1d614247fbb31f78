#!/usr/bin/env bash
# PostgreSQL for weir's tests (connector/postgres).
#
#   bash scripts/postgres.sh install     install PostgreSQL if initdb/postgres are missing
#                                        (apt-get on Debian/Ubuntu; needs root or sudo)
#   bash scripts/postgres.sh bindir      print the directory of initdb and postgres
#   bash scripts/postgres.sh start DIR   start a throwaway server with its data, socket and log
#                                        in DIR (created; must not hold a server), print its DSN
#   bash scripts/postgres.sh stop DIR    stop it (DIR stays; rm -rf it yourself)
#
# The server listens on a Unix socket in DIR only (no TCP), trusts local
# connections (user weir, database postgres), and runs without fsync: it is
# for tests, its data is disposable. PostgreSQL refuses to run as root; as
# root the server runs as user postgres (or nobody), which then owns DIR.
# The Go tests do the same themselves (connector/postgres/internal/testing/pgtest).
# WEIR_PG_BINDIR overrides where the binaries are looked for.
set -euo pipefail
. "$(dirname "$0")/apt.sh"

bindir() {
  local d
  if [ -n "${WEIR_PG_BINDIR:-}" ]; then
    [ -x "$WEIR_PG_BINDIR/initdb" ] && [ -x "$WEIR_PG_BINDIR/postgres" ] && { echo "$WEIR_PG_BINDIR"; return 0; }
    echo "postgres.sh: WEIR_PG_BINDIR=$WEIR_PG_BINDIR has no initdb and postgres" >&2
    return 1
  fi
  # Debian and Ubuntu: /usr/lib/postgresql/<version>/bin, newest first.
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4,4 -rn); do
    [ -x "$d/initdb" ] && [ -x "$d/postgres" ] && { echo "$d"; return 0; }
  done
  if command -v initdb >/dev/null 2>&1; then
    d=$(dirname "$(readlink -f "$(command -v initdb)")")
    [ -x "$d/postgres" ] && { echo "$d"; return 0; }
  fi
  return 1
}

install() {
  if d=$(bindir); then
    echo "postgres.sh: PostgreSQL found in $d"
    return 0
  fi
  apt_install postgres "PostgreSQL" "install it (initdb and postgres) and set WEIR_PG_BINDIR" postgresql || return 1
  d=$(bindir) || { echo "postgres.sh: apt-get installed postgresql, but no initdb/postgres found" >&2; return 1; }
  echo "postgres.sh: PostgreSQL installed in $d"
}

# as runs a command as the server's user: this one, or postgres/nobody
# when this one is root.
as() {
  if [ "$(id -u)" != 0 ]; then
    "$@"
  elif command -v runuser >/dev/null 2>&1; then
    runuser -u "$pguser" -- "$@"
  else
    su -s /bin/sh "$pguser" -c "$(printf '%q ' "$@")"
  fi
}

start() {
  local dir=$1 bin
  bin=$(bindir) || { echo "postgres.sh: PostgreSQL not found; run: bash scripts/postgres.sh install" >&2; return 1; }
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ -e "$dir/data" ]; then
    echo "postgres.sh: $dir/data exists: stop that server and remove $dir first" >&2
    return 1
  fi
  if [ "$(id -u)" = 0 ]; then
    pguser=postgres
    id postgres >/dev/null 2>&1 || pguser=nobody
    chown "$pguser:" "$dir"
    chmod 700 "$dir"
  fi
  (cd "$dir" && LC_ALL=C as "$bin/initdb" -D "$dir/data" -U weir -A trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1) ||
    { cat "$dir/initdb.log" >&2; return 1; }
  # fsync and friends off: a test server's data is disposable.
  (cd "$dir" && LC_ALL=C as "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
    -o "-k $dir -c listen_addresses= -c port=5432 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c wal_level=logical -c max_replication_slots=40 -c max_wal_senders=40" start >/dev/null) ||
    { cat "$dir/postgres.log" >&2; return 1; }
  echo "host=$dir port=5432 user=weir dbname=postgres sslmode=disable"
}

stop() {
  local dir=$1 bin
  bin=$(bindir) || { echo "postgres.sh: PostgreSQL not found" >&2; return 1; }
  dir=$(cd "$dir" && pwd)
  if [ "$(id -u)" = 0 ]; then
    pguser=$(stat -c %U "$dir/data")
  fi
  (cd "$dir" && as "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null)
}

pguser=""
case "${1:-}" in
  install) install ;;
  bindir) bindir || { echo "postgres.sh: PostgreSQL not found; run: bash scripts/postgres.sh install" >&2; exit 1; } ;;
  start) [ $# = 2 ] || { echo "usage: $0 start DIR" >&2; exit 2; }; start "$2" ;;
  stop) [ $# = 2 ] || { echo "usage: $0 stop DIR" >&2; exit 2; }; stop "$2" ;;
  *) sed -n '2,10s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
