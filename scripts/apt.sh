# apt.sh, sourced by the scripts that install what the tests use
# (postgres.sh, chromium.sh, kcat.sh, avro.sh, protoc.sh, awscli.sh).
#
#   apt_install NAME WHAT ELSEWHERE PKG...
#
# installs the Debian packages PKG... with apt-get, as root or through
# sudo, saying so as "NAME.sh: ..."; on a system without apt-get it fails
# saying that WHAT is missing and what to do there (ELSEWHERE: "install it
# and set WEIR_KCAT").
apt_install() {
  local name=$1 what=$2 elsewhere=$3
  shift 3
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "$name.sh: $what is missing and this is not a Debian-like system: $elsewhere" >&2
    return 1
  fi
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "$name.sh: installing $what needs root (or sudo)" >&2; return 1; }
    sudo="sudo"
  fi
  echo "$name.sh: installing $* with apt-get"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
