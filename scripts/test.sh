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
# start a program as a process (crash, CDC and group-mode tests) build it
# with -race as well (crashtest.GoBuild), so that nothing at all is compiled
# without the race detector: their plain builds of cmd/weir and the five job
# programs compiled the module and its dependencies a second time, 453 s
# user + 108 s sys from an empty cache (2026-12-02), about 4.7 minutes of
# the 2-core machine. Files built only without the race detector
# (race_off_test.go, internal/testing/crashtest/norace.go: one constant) are not
# vetted.
#
# Time on 2 cores from an empty build cache (Go 1.26, 53 packages): before
# the -race job builds 23 min 28 s idle (CI: 1,350-1,410 s with the apt
# installs); after, on the idle machine with PostgreSQL and Chromium
# already installed (2026-12-02), 1,204 s wall, 1,706 s user + 477 s sys:
# at the 20-minute budget, with no margin. go vet -race (the cold compile)
# took about 7.5 minutes of it; the slowest packages were connector/kafka
# 174 s (512 s before, its plain job builds included), internal/testing/crashtest
# 169 s, the root package 156 s, internal/state/pebblestate 155 s and sql
# 143 s. With a warm build cache: 825 s. On 2026-12-03 (GOCACHE emptied,
# Chromium installed by the script): 1,004 s wall, 1,418 s user + 238 s
# sys; the slowest packages sql 167 s, internal/testing/crashtest 148 s,
# connector/kafka 136 s, pebblestate 132 s, the root package 117 s (the
# host's speed moves by a third within an hour: read these as a range).
# On 2026-12-08 (another machine, build cache warm for most packages, load
# 2-4): 1,347 s wall, 2,063 s user + 277 s sys, over the budget; the root
# package 219-253 s (its TestExampleBuildsOutsideTheModule alone 86 s),
# crashtest 154 s, connector/kafka 135 s, sql 127 s, memcap's heap check
# 39 s. Two window rescale tests then shrank under -race (about 60 s).
# The next long poles are the
# statetest conformance suite's TimersDense (about 55 s of pebblestate
# under -race) and the root package's TestAlignedWindowCopyOnWrite,
# TestFixedTimersMatchHeap and TestMetamorphic. The build cache ends at
# 1.7 GB.
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
# broker's interoperability tests drive Debian's kcat (librdkafka): the
# same, for kcat.
bash scripts/kcat.sh install
export WEIR_REQUIRE_KCAT=1
# sql/format/avro's interoperability tests have Apache Avro's own Python
# library (Debian's python3-avro) write what weir reads and read what it
# writes: the same, for python3-avro.
bash scripts/avro.sh install
export WEIR_REQUIRE_PYAVRO=1
# internal/s3fs's tests read the checkpoints weir wrote to an S3 store
# (gofakes3 on loopback) with the AWS CLI: the same, for aws.
bash scripts/awscli.sh install
export WEIR_REQUIRE_AWSCLI=1
# sql/format/protobuf's tests check weir's run-time .proto compilation and
# its encoding against Google's protoc (Debian's protobuf-compiler): the
# same, for protoc.
bash scripts/protoc.sh install
export WEIR_REQUIRE_PROTOC=1
# sql/connector/kafka's key store tests read JKS and PKCS12 stores made by
# Java's keytool and openssl: the same, for both.
bash scripts/keytool.sh install
export WEIR_REQUIRE_KEYTOOL=1
go test -race -count=1 ./...
# connector/kafka's source, sink, changelog and in-process group tests once
# more, against weir broker instead of kfake (about 25 s; the main pass
# runs the process-killing group and crash tests against it too, as
# *OnWeirBroker). WEIR_KAFKA=weir with no -run runs the whole package so.
WEIR_KAFKA=weir go test -race -count=1 \
  -run 'TestSource|TestSink|TestChangelog|TestExactlyOnce|TestGroupInProcess|TestGroupJoinInProcess|TestGroupFences|TestGroupKeyedStateMoves' \
  ./connector/kafka
# internal/testing/parquetcheck, a module of its own (the main module
# never depends on DuckDB), checks weir's Parquet files against DuckDB's
# reader and writer through its Go bindings (cgo, a prebuilt static
# library from the module proxy). WEIR_SKIP_DUCKDB=1 skips it, saying so.
# Its cost (2026-12-07, a loaded 2-core machine): the bindings and their
# dependencies built with -race from an empty cache, 26 s user + 7 s sys
# (117 s wall); the first run with the main module's race builds cached,
# 104 s wall (weir packages that import a module DuckDB wants newer, such as
# golang.org/x/exp, are built again); the tests themselves, about 5 s.
if [ "${WEIR_SKIP_DUCKDB:-}" = 1 ]; then
  echo "test.sh: WEIR_SKIP_DUCKDB=1: internal/testing/parquetcheck (Parquet against DuckDB) NOT run" >&2
else
  (cd internal/testing/parquetcheck && go test -race -count=1 ./...)
fi
