#!/usr/bin/env bash
# Apache Avro's own Python library for weir's Avro interoperability tests
# (sql/format/avro and format/avro: Debian's python3-avro writes records
# and object-container files that weir reads, and reads what weir writes).
#
#   bash scripts/avro.sh install   install Debian's python3-avro if `import
#                                  avro` fails, and python3-snappy and
#                                  python3-zstandard for the codecs (apt-get;
#                                  needs root or sudo)
#   bash scripts/avro.sh path      print the python3 that imports avro
#
# WEIR_PYAVRO overrides which python is used.
set -euo pipefail
. "$(dirname "$0")/apt.sh"

path() {
  if [ -n "${WEIR_PYAVRO:-}" ]; then
    if [ -x "$WEIR_PYAVRO" ] || command -v "$WEIR_PYAVRO" >/dev/null 2>&1; then
      "$WEIR_PYAVRO" -c 'import avro' >/dev/null 2>&1 && { command -v "$WEIR_PYAVRO"; return 0; }
      echo "avro.sh: WEIR_PYAVRO=$WEIR_PYAVRO does not import avro" >&2
      return 1
    fi
    echo "avro.sh: WEIR_PYAVRO=$WEIR_PYAVRO is not an executable" >&2
    return 1
  fi
  # The python3 first on PATH may not be Debian's (pyenv, a venv), which is
  # the one python3-avro installs into: try both.
  local c
  for c in python3 /usr/bin/python3; do
    if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import avro' >/dev/null 2>&1; then
      command -v "$c"
      return 0
    fi
  done
  return 1
}

# codecs: the object-container codecs beyond null and deflate that the
# tests check against Python (snappy, zstandard), Debian's python3-snappy
# and python3-zstandard.
codecs() {
  "$1" -c 'import snappy, zstandard' >/dev/null 2>&1
}

install() {
  if p=$(path); then
    echo "avro.sh: python3-avro found ($p)"
  else
    apt_install avro "python3-avro" "install Apache Avro's Python library and set WEIR_PYAVRO" python3-avro || return 1
    p=$(path) || { echo "avro.sh: apt-get installed python3-avro, but python3 does not import avro" >&2; return 1; }
    echo "avro.sh: python3-avro installed ($p)"
  fi
  if ! codecs "$p"; then
    apt_install avro "python3-snappy and python3-zstandard" "install them for $p" python3-snappy python3-zstandard || return 1
    codecs "$p" || { echo "avro.sh: $p does not import snappy and zstandard" >&2; return 1; }
    echo "avro.sh: python3-snappy and python3-zstandard installed"
  fi
}

case "${1:-}" in
  install) install ;;
  path) path ;;
  *) echo "usage: avro.sh install|path" >&2; exit 2 ;;
esac
