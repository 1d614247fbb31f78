#!/usr/bin/env bash
# Chromium for weir's browser tests (internal/web: the dashboard in a real
# headless browser, driven with chromedp).
#
#   bash scripts/chromium.sh install   install Debian's chromium if no browser is found
#                                      (apt-get; needs root or sudo)
#   bash scripts/chromium.sh path      print the browser's path
#
# WEIR_CHROMIUM overrides where the browser is looked for.
set -euo pipefail
. "$(dirname "$0")/apt.sh"

path() {
  if [ -n "${WEIR_CHROMIUM:-}" ]; then
    [ -x "$WEIR_CHROMIUM" ] && { echo "$WEIR_CHROMIUM"; return 0; }
    echo "chromium.sh: WEIR_CHROMIUM=$WEIR_CHROMIUM is not an executable" >&2
    return 1
  fi
  local c
  for c in chromium chromium-browser google-chrome-stable google-chrome headless-shell; do
    if command -v "$c" >/dev/null 2>&1; then
      command -v "$c"
      return 0
    fi
  done
  return 1
}

install() {
  if p=$(path); then
    echo "chromium.sh: browser found at $p"
    return 0
  fi
  apt_install chromium "Chromium" "install it and set WEIR_CHROMIUM" chromium fonts-dejavu-core || return 1
  p=$(path) || { echo "chromium.sh: apt-get installed chromium, but no browser found" >&2; return 1; }
  echo "chromium.sh: Chromium installed at $p"
}

case "${1:-}" in
  install) install ;;
  path) path ;;
  *) echo "usage: chromium.sh install|path" >&2; exit 2 ;;
esac
