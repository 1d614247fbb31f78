#!/usr/bin/env bash
# The project's one test command (README, .ci/run). It sets up whatever the
# tests need that a fresh machine with only Go lacks, then runs every test
# with the race detector.
set -euo pipefail
cd "$(dirname "$0")/.."
go vet ./...
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
