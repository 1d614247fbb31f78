package sql_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql"
	"github.com/weirstream/weir/sql/wasmudf/wasmtest"
)

// A WebAssembly function that traps fails the job with its name and
// argument; the checkpointed job restarts from its last checkpoint, traps
// again, and gives up after its restart policy's failures — and its
// exactly-once file sink holds each row before the trap at most once:
// nothing is emitted twice across the attempts.
func TestWasmTrapRecovery(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	mod := wasmtest.Module(t)
	policy := weir.RestartPolicy{InitialBackoff: 10 * time.Millisecond, MaxBackoff: 10 * time.Millisecond, MaxFailures: 2, Interval: time.Hour}
	s := sql.NewSession(sql.FunctionDir(filepath.Dir(mod)), sql.Checkpointing(50*time.Millisecond, filepath.Join(dir, "ck")),
		sql.JobOptions(weir.Restarts(policy)), sql.Define("OUT", out))
	job, err := s.Plan(`
CREATE FUNCTION trap_on_three AS 'udfs.wasm' LANGUAGE WASM;
CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '1000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '100000');
CREATE TABLE sink (id BIGINT) WITH ('connector' = 'filesystem', 'path' = '${OUT}', 'format' = 'csv');
INSERT INTO sink SELECT trap_on_three(id - 997) + 997 FROM src;`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = job.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "function trap_on_three(3) failed: the module trapped") {
		t.Fatalf("run: %v, want the trap of trap_on_three(3)", err)
	}
	// the committed part files (in-progress ones start with '.')
	var ids []int
	ents, err := os.ReadDir(out)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "_") || e.IsDir() {
			continue
		}
		f, err := os.Open(filepath.Join(out, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			n, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
			if err != nil {
				t.Fatalf("%s: %q", e.Name(), sc.Text())
			}
			ids = append(ids, n)
		}
		f.Close()
	}
	sort.Ints(ids)
	for i, id := range ids {
		if id != i+1 {
			t.Fatalf("committed rows are not 1..%d once each: row %d is %d (a duplicate or a gap)", len(ids), i, id)
		}
	}
	if len(ids) >= 1000 {
		t.Fatalf("%d rows committed: the row of the trap (1000) or later got out", len(ids))
	}
	m := job.Metrics()
	if m.Checkpoints.Restarts != int64(policy.MaxFailures) {
		t.Errorf("%d restarts, want the policy's %d", m.Checkpoints.Restarts, policy.MaxFailures)
	}
	t.Logf("%d rows committed before the trap; %d checkpoints completed; %d restarts", len(ids), m.Checkpoints.Completed, m.Checkpoints.Restarts)
}
