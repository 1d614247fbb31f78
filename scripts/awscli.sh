#!/usr/bin/env bash
# The AWS CLI for weir's object-storage tests (internal/s3fs: the CLI, which
# nobody here wrote, lists and reads the checkpoints weir wrote to an S3
# store on loopback).
#
#   bash scripts/awscli.sh install   install Debian's awscli if no aws is found
#                                    (apt-get; needs root or sudo)
#   bash scripts/awscli.sh path      print aws's path
set -euo pipefail
. "$(dirname "$0")/apt.sh"

path() {
  if command -v aws >/dev/null 2>&1 && aws --version >/dev/null 2>&1; then
    command -v aws
    return 0
  fi
  return 1
}

install() {
  if p=$(path); then
    echo "awscli.sh: aws found at $p"
    return 0
  fi
  apt_install awscli "aws" "install the AWS CLI" awscli || return 1
  p=$(path) || { echo "awscli.sh: apt-get installed awscli, but no working aws found" >&2; return 1; }
  echo "awscli.sh: aws installed at $p"
}

case "${1:-}" in
  install) install ;;
  path) path ;;
  *) echo "usage: awscli.sh install|path" >&2; exit 2 ;;
esac
