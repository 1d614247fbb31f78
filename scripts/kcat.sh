#!/usr/bin/env bash
# kcat for weir's broker tests (broker/kcat_test.go: Debian's kcat, a
# librdkafka client, producing to and consuming from the broker).
#
#   bash scripts/kcat.sh install   install Debian's kcat if it is not found
#                                  (apt-get; needs root or sudo)
#   bash scripts/kcat.sh path      print kcat's path
#
# WEIR_KCAT overrides where kcat is looked for.
set -euo pipefail
. "$(dirname "$0")/apt.sh"

path() {
  if [ -n "${WEIR_KCAT:-}" ]; then
    [ -x "$WEIR_KCAT" ] && { echo "$WEIR_KCAT"; return 0; }
    echo "kcat.sh: WEIR_KCAT=$WEIR_KCAT is not an executable" >&2
    return 1
  fi
  local c
  for c in kcat kafkacat; do
    if command -v "$c" >/dev/null 2>&1; then
      command -v "$c"
      return 0
    fi
  done
  return 1
}

install() {
  if p=$(path); then
    echo "kcat.sh: kcat found at $p"
    return 0
  fi
  apt_install kcat "kcat" "install it and set WEIR_KCAT" kcat || return 1
  p=$(path) || { echo "kcat.sh: apt-get installed kcat, but no kcat found" >&2; return 1; }
  echo "kcat.sh: kcat installed at $p"
}

case "${1:-}" in
  install) install ;;
  path) path ;;
  *) echo "usage: kcat.sh install|path" >&2; exit 2 ;;
esac
