#!/usr/bin/env bash
# The project's one test command (README, .ci/run). It sets up whatever the
# tests need that a fresh machine with only Go lacks, then runs every test
# with the race detector.
set -euo pipefail
cd "$(dirname "$0")/.."
# A full disk shows up far from its cause ("no space left on device" in a
# build or a checkpoint test): say first how much room there is. The whole
# command needs about need_mib MiB (measured: 4.7 GiB from an empty build cache; the race build cache, test binaries, the
# tests' checkpoints and logs, PostgreSQL and Chromium).
need_mib=6144
for d in "${TMPDIR:-/tmp}" "$(go env GOCACHE)"; do
  mkdir -p "$d"
  free_mib=$(( $(df -Pk "$d" | awk 'NR==2 {print $4}') / 1024 ))
  echo "test.sh: ${free_mib} MiB free for $d"
  if [ "$free_mib" -lt "$need_mib" ]; then
    echo "test.sh: warning: less than ${need_mib} MiB free for $d; tests may fail with 'no space left on device'" >&2
  fi
done
# vet with -race: its builds of the dependencies are the very ones the race
# tests below need, so they are compiled once (measured from an empty cache:
# 'go test -race -run NONE ./...' took 536 s after 'go vet -race' against
# 1,206 s alone, and 'go vet -race' after it compiled nothing). The tests that
# build a job's binary (crash and CDC tests) still build it without -race,
# which a plain 'go vet' used to have compiled for them: what is saved is the
# plain build of the test-only dependencies (chromedp, cdproto). Files built
# only without the race detector (race_off_test.go: one constant) are not
# vetted.
go vet -race ./...
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change: $unformatted" >&2
  exit 1
fi
# connector/postgres tests start their own server: make sure PostgreSQL is
# installed, and make its absence a failure rather than a skip.
bash scripts/postgres.sh install
export WEIR_REQUIRE_POSTGRES=1
# internal/web's dashboard test drives headless Chromium (chromedp): the
# same, for the browser.
bash scripts/chromium.sh install
export WEIR_REQUIRE_CHROMIUM=1
go test -race -count=1 ./...
