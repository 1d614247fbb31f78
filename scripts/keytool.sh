#!/usr/bin/env bash
# Java's keytool and openssl for the Kafka connector's key store tests
# (sql/connector/kafka/keystore_test.go: JKS and PKCS12 stores made by the
# tools Kafka users make them with, read by weir).
#
#   bash scripts/keytool.sh install   install Debian's JRE (keytool) and
#                                     openssl where not found (apt-get;
#                                     needs root or sudo)
#   bash scripts/keytool.sh path      print keytool's path
set -euo pipefail
. "$(dirname "$0")/apt.sh"

path() {
  command -v keytool 2>/dev/null
}

install() {
  if ! command -v openssl >/dev/null 2>&1; then
    apt_install keytool "openssl" "install it" openssl || return 1
  fi
  if p=$(path); then
    echo "keytool.sh: keytool found at $p"
    return 0
  fi
  apt_install keytool "keytool" "install a JRE" openjdk-17-jre-headless || return 1
  p=$(path) || { echo "keytool.sh: apt-get installed a JRE, but no keytool found" >&2; return 1; }
  echo "keytool.sh: keytool installed at $p"
}

case "${1:-}" in
  install) install ;;
  path) path ;;
  *) echo "usage: keytool.sh install|path" >&2; exit 2 ;;
esac
