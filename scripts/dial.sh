#!/usr/bin/env bash
# The microbatch dial (docs/performance.md): measures `weir bench adclicks`
# and `weir bench nexmark --queries q5` in continuous mode and with
# --microbatch 10ms, 100ms, 1s, 5s, writes docs/dial.json and
# docs/dial.svg, and prints the Markdown table. A few minutes. Extra
# arguments go to the Go program (go run ./scripts/dial -h).
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./scripts/dial "$@"
