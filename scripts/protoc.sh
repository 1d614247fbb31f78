#!/usr/bin/env bash
# protoc for weir's protobuf format tests (sql/format/protobuf: Debian's
# protobuf-compiler, Google's protoc, compiles the test .proto files to a
# descriptor set that weir's run-time compilation must equal, and encodes
# and decodes the messages weir reads and writes).
#
#   bash scripts/protoc.sh install   install Debian's protobuf-compiler if
#                                    protoc is not found (apt-get; needs root
#                                    or sudo)
#   bash scripts/protoc.sh path      print protoc's path
#
# WEIR_PROTOC overrides where protoc is looked for.
set -euo pipefail
. "$(dirname "$0")/apt.sh"

path() {
  if [ -n "${WEIR_PROTOC:-}" ]; then
    [ -x "$WEIR_PROTOC" ] && { echo "$WEIR_PROTOC"; return 0; }
    echo "protoc.sh: WEIR_PROTOC=$WEIR_PROTOC is not an executable" >&2
    return 1
  fi
  if command -v protoc >/dev/null 2>&1; then
    command -v protoc
    return 0
  fi
  return 1
}

# wkt: protoc finds the well-known types (google/protobuf/timestamp.proto,
# Debian's libprotobuf-dev), which the test .proto files import.
wkt() {
  local d rc
  d=$(mktemp -d)
  printf 'syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\n' > "$d/wkt.proto"
  rc=0
  "$1" -I"$d" --descriptor_set_out=/dev/null "$d/wkt.proto" >/dev/null 2>&1 || rc=1
  rm -rf "$d"
  return $rc
}

install() {
  if p=$(path) && wkt "$p"; then
    echo "protoc.sh: protoc found at $p"
    return 0
  fi
  # libprotobuf-dev (only recommended by protobuf-compiler) holds the
  # well-known types' .proto files in /usr/include/google/protobuf.
  apt_install protoc "protoc" "install it and set WEIR_PROTOC" protobuf-compiler libprotobuf-dev || return 1
  p=$(path) || { echo "protoc.sh: apt-get installed protobuf-compiler, but no protoc found" >&2; return 1; }
  wkt "$p" || { echo "protoc.sh: $p does not find google/protobuf/timestamp.proto" >&2; return 1; }
  echo "protoc.sh: protoc installed at $p"
}

case "${1:-}" in
  install) install ;;
  path) path ;;
  *) echo "usage: protoc.sh install|path" >&2; exit 2 ;;
esac
