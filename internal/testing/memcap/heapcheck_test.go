package memcap_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/testing/crashtest"
)

// The test command's bounded-memory check (TestBoundedMemory under the race
// detector; the comment there says why the kernel's limit cannot judge a
// race build). It runs `weir sql` (the race build) on a join whose state on
// the heap is several times what the process holds on Pebble, with Go's
// collector tracing (GODEBUG=gctrace=1), and compares the live heap each
// collection marked — the memory the process's Go code holds, which the
// race detector does not change — with a budget: on the heap backend it must
// exceed the budget at least once, on Pebble it must stay under it
// throughout and the result must be exact. It does not measure the race
// runtime's own memory nor Pebble's memory outside Go's heap (its block
// cache and memtables, bounded by its budget: TestPebbleMemoryPerProcess;
// a race build of Pebble puts them on the Go heap in half of the processes,
// where they count, and in C memory in the others), and there is no kernel
// limit: the release build's run (TestBoundedMemory without -race) is the
// check of those. What makes up the Pebble run's 100-odd MiB of live heap
// (rows in flight are wide here) was not broken down.
//
// The job is the join of TestBoundedMemory with wideCols BIGINT columns more
// per row: the heap backend keeps each row as a Go value of 48 bytes per
// column (sql/types.Value), Pebble as a few bytes per column on disk, so a
// few tens of thousands of rows make a heap state of hundreds of MiB while
// Pebble, which the race build runs 15 to 50 times slower than a release
// build (the race detector's instrumentation of Pebble itself, and Pebble's
// race-only checks: it records a stack trace per table iterator), processes
// them in about 30 s of CPU. Measured (2026-12-07, 2 cores, load 15-20):
// on the heap 268 to 287 MiB live at most (3-4 s of CPU), on Pebble 109
// and 135 MiB (31 and 35 s of CPU; 103 and 122 MiB at 50,000 rows a side),
// against the budget of 192 MiB; with Pebble's run switched to the heap
// backend the check fails (286 MiB). The window job is not run here: its
// timers make Pebble under -race several times slower again (50,000 keys
// took 23 to 80 s of CPU).
//
// The scale: wideKeys rows per side under wideBudgetMiB, or
// WEIR_MEMCAP_KEYS and WEIR_MEMCAP_LIMIT_MIB as for the kernel's check.
const (
	wideCols      = 40
	wideKeys      = 60_000
	wideBudgetMiB = 192
)

// wideJoinAt is the join with wideCols columns c0..c39 = seq + i on both
// sides; good counts the pairs whose columns all came through the join
// (their sum is known from the two sides' seq), so that every column is
// used after the join and kept in its state.
func wideJoinAt(n, budget int64) job {
	var cols, sum []string
	for i := range wideCols {
		cols = append(cols, fmt.Sprintf("c%d AS seq + %d", i, i))
		sum = append(sum, fmt.Sprintf("a.c%d + b.c%d", i, i))
	}
	script := fmt.Sprintf(`
CREATE TABLE a (seq BIGINT, %[2]s) WITH ('connector' = 'datagen', 'rows-per-second' = '1000000000',
  'fields.seq.kind' = 'sequence', 'fields.seq.start' = '0', 'fields.seq.end' = '%[3]d');
CREATE TABLE b (seq BIGINT, k AS (seq * 7919) %% %[1]d, %[2]s) WITH ('connector' = 'datagen', 'rows-per-second' = '1000000000',
  'fields.seq.kind' = 'sequence', 'fields.seq.start' = '0', 'fields.seq.end' = '%[3]d');
SELECT COUNT(*) AS pairs, SUM(a.seq) AS sa, SUM(b.seq) AS sb,
  SUM(CASE WHEN (b.seq * 7919) %% %[1]d = a.seq AND %[4]s = %[5]d * (a.seq + b.seq) + %[6]d THEN 1 ELSE 0 END) AS good
FROM a JOIN b ON a.seq = b.k;
`, n, strings.Join(cols, ", "), n-1, strings.Join(sum, " + "), wideCols, wideCols*(wideCols-1))
	return job{"wide-join", n, budget, script, [4]int64{n, n * (n - 1) / 2, n * (n - 1) / 2, n}}
}

func heapCheck(t *testing.T) {
	n, budget := int64(wideKeys), int64(wideBudgetMiB)<<20
	if v := os.Getenv("WEIR_MEMCAP_KEYS"); v != "" {
		k, err := strconv.ParseInt(v, 10, 64)
		if err != nil || k <= 0 || k%7919 == 0 {
			t.Fatalf("WEIR_MEMCAP_KEYS=%q: want a number of keys prime to 7919", v)
		}
		n = k
	}
	if v := os.Getenv("WEIR_MEMCAP_LIMIT_MIB"); v != "" {
		m, err := strconv.ParseInt(v, 10, 64)
		if err != nil || m <= 0 {
			t.Fatalf("WEIR_MEMCAP_LIMIT_MIB=%q: want MiB", v)
		}
		budget = m << 20
	}
	j := wideJoinAt(n, budget)
	bin := crashtest.Build(t, "github.com/weirstream/weir/cmd/weir")
	heap := j.traced(t, bin, "SET 'state.backend.type' = 'hashmap';\n")
	t.Logf("%d rows a side on the heap: %v", n, heap)
	if heap.maxLive <= budget {
		t.Errorf("on the heap backend, %d rows a side: the live heap peaked at %d MiB, not over the budget of %d MiB: the budget does not bind at this scale", n, heap.maxLive>>20, budget>>20)
	}
	pebble := j.traced(t, bin, "SET 'state.backend.type' = 'rocksdb';\nSET 'state.backend.rocksdb.localdir' = '"+t.TempDir()+"';\n")
	t.Logf("%d rows a side on Pebble: %v", n, pebble)
	if pebble.maxLive > budget {
		t.Errorf("on Pebble, %d rows a side: the live heap reached %d MiB, over the budget of %d MiB", n, pebble.maxLive>>20, budget>>20)
	}
}

// traceRun is how a traced run ended.
type traceRun struct {
	maxLive int64 // the most live heap a collection marked, bytes
	gcs     int   // collections traced
	elapsed time.Duration
	cpu     time.Duration // user + system
}

func (r traceRun) String() string {
	return fmt.Sprintf("live heap at most %d MiB over %d collections, %v (%v of CPU)", r.maxLive>>20, r.gcs, r.elapsed.Round(time.Millisecond), r.cpu.Round(time.Millisecond))
}

// gcLine is a line of GODEBUG=gctrace=1: "... A->B->C MB, ..." where C is
// the heap the collection marked live.
var gcLine = regexp.MustCompile(`^gc \d+ .* (\d+)->(\d+)->(\d+) MB`)

// traced runs the job with settings first, with the collector tracing, and
// checks that it finished with the expected result. GOGC=25 (which also
// turns weir's heap floor off, whose ballast would count as live) makes
// collections frequent, so that the live heap is seen close to its peak:
// the heap backend's state grows until the input ends, and the last
// collection before that marked at least 1/1.25 of it.
func (j job) traced(t *testing.T, bin, settings string) traceRun {
	t.Helper()
	file := filepath.Join(t.TempDir(), j.name+".sql")
	if err := os.WriteFile(file, []byte(settings+miniBatch+j.script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "sql", "-f", file, "--parallelism", "2")
	godebug := "gctrace=1"
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "GOGC="), strings.HasPrefix(kv, "GOMEMLIMIT="):
		case strings.HasPrefix(kv, "GODEBUG="):
			godebug = strings.TrimPrefix(kv, "GODEBUG=") + ",gctrace=1"
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GOGC=25", "GODEBUG="+godebug)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := traceRun{elapsed: time.Since(start)}
	if cmd.ProcessState != nil {
		r.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", settings, err, tail(stderr.Bytes()))
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if m := gcLine.FindStringSubmatch(line); m != nil {
			live, _ := strconv.ParseInt(m[3], 10, 64)
			r.maxLive = max(r.maxLive, live<<20)
			r.gcs++
		}
	}
	if r.gcs == 0 {
		t.Fatalf("%s: no collection traced (GODEBUG=%s)\n%s", settings, godebug, tail(stderr.Bytes()))
	}
	got, err := lastRow(stdout.Bytes())
	if err != nil {
		t.Fatalf("%s: %v\n%s", settings, err, tail(stdout.Bytes()))
	}
	if got != j.want {
		t.Fatalf("%s: the result is %v, want %v", settings, got, j.want)
	}
	return r
}
