package planner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"github.com/weirstream/weir/sql/connector"
	_ "github.com/weirstream/weir/sql/connector/builtin" // the filesystem sink
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/types"
)

// pacedJob is the job whose 'paced-values' sources ask for checkpoints.
var pacedJob atomic.Pointer[weir.Job]

// pacedValuesFactory is the 'values' source of the tests with a
// checkpoint every 'checkpoint-every' rows (weirtest.CheckpointEvery): a
// test that fails the job after k·n rows knows k checkpoints completed
// before, however slow the machine.
type pacedValuesFactory struct{}

func (pacedValuesFactory) Identifier() string { return "paced-values" }

func init() { connector.Register(pacedValuesFactory{}) }

func (pacedValuesFactory) CreateSource(t *connector.Table) (*connector.Source, error) {
	rows, err := valuesRows(t)
	if err != nil {
		return nil, err
	}
	var every int
	if _, err := fmt.Sscan(t.Options["checkpoint-every"], &every); err != nil || every <= 0 {
		return nil, fmt.Errorf("table '%s': 'checkpoint-every' = %q", t.Name, t.Options["checkpoint-every"])
	}
	src := weirtest.CheckpointEvery(pacedJob.Load, weir.SliceSource(rows).(weir.RestorableSource[types.Row]), every)
	return &connector.Source{Source: weir.Source[types.Row](src), Bounded: true, Changelog: types.InsertOnly}, nil
}

// TestStateWindowsRestore runs TUMBLE, HOP and SESSION aggregations on
// Pebble with a checkpoint every 100 rows, fails the job once in the
// middle of its input (a function that errors once three checkpoints have
// completed), and lets it restart from its last checkpoint: the windows'
// accumulators and timers come back from Pebble's checkpoint, and the
// exactly-once file sink holds the rows of an uninterrupted run on the
// heap. A window open across the checkpoint that lost its state would
// count fewer rows; one that lost its timer would never fire.
func TestStateWindowsRestore(t *testing.T) {
	const n, failAt = 1200, 730
	values.mu.Lock()
	values.data["window-state-restore"] = windowRows(11, n)
	values.mu.Unlock()
	script := `CREATE TABLE w (k INT, s STRING, v BIGINT, d DOUBLE, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
  WITH ('connector' = 'paced-values', 'data-id' = 'window-state-restore', 'checkpoint-every' = '100');
CREATE TABLE tumbles (k INT, ws TIMESTAMP(3), we TIMESTAMP(3), n BIGINT, top BIGINT, total DOUBLE) WITH ('connector' = 'filesystem', 'path' = '${OUT}/tumbles', 'format' = 'csv');
CREATE TABLE hops (s STRING, ws TIMESTAMP(3), wt TIMESTAMP(3), n BIGINT, low STRING) WITH ('connector' = 'filesystem', 'path' = '${OUT}/hops', 'format' = 'csv');
CREATE TABLE sessions (k INT, ws TIMESTAMP(3), we TIMESTAMP(3), n BIGINT, total BIGINT) WITH ('connector' = 'filesystem', 'path' = '${OUT}/sessions', 'format' = 'csv');
CREATE VIEW checked AS SELECT * FROM w WHERE pass(v);
INSERT INTO tumbles SELECT k, window_start, window_end, COUNT(*), MAX(v), SUM(d) FROM TABLE(TUMBLE(TABLE checked, DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY k, window_start, window_end;
INSERT INTO hops SELECT s, window_start, window_time, COUNT(*), MIN(s) FROM TABLE(HOP(TABLE checked, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND)) GROUP BY s, window_start, window_end;
INSERT INTO sessions SELECT k, window_start, window_end, COUNT(*), SUM(v) FROM TABLE(SESSION(TABLE checked, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY k, window_start, window_end;
`
	run := func(out string, fail bool, opts ...Option) *weir.Job {
		t.Helper()
		var failed atomic.Bool
		pass := &expr.ScalarFunction{
			Args: []types.Type{types.BigIntType}, Returns: types.BooleanType,
			Eval: func(a []types.Value) (types.Value, error) {
				if fail && a[0].I >= failAt && failed.CompareAndSwap(false, true) {
					if c := pacedJob.Load().Metrics().Checkpoints.Completed; c < 3 {
						return types.Value{}, fmt.Errorf("%d checkpoints before row %d, want 7", c, a[0].I)
					}
					return types.Value{}, errors.New("injected failure")
				}
				return types.BoolValue(true), nil
			},
		}
		s := NewSession(append([]Option{Parallelism(2), Define("OUT", out), WithFunction("pass", pass),
			Checkpointing(time.Hour, filepath.Join(out, "ck")),
			JobOptions(weirtest.FirstCheckpointAfter(time.Hour),
				weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxFailures: 1, Interval: time.Hour}))}, opts...)...)
		job, err := s.Plan(script)
		if err != nil {
			t.Fatal(err)
		}
		pacedJob.Store(job)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := job.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if fail && !failed.Load() {
			t.Fatal("the failure was not injected")
		}
		return job
	}
	heapOut, pebbleOut := t.TempDir(), t.TempDir()
	run(heapOut, false)
	job := run(pebbleOut, true, JobOptions(weir.PebbleState(t.TempDir(), 8<<20)))
	if heap := job.HeapStateOperators(); len(heap) != 0 {
		t.Fatalf("operators with heap state on Pebble: %v", heap)
	}
	if m := job.Metrics().Checkpoints; m.Restarts != 1 || m.Completed < 3 {
		t.Fatalf("%d restarts, %d checkpoints; want a restart after 3 or more", m.Restarts, m.Completed)
	}
	for _, table := range []string{"tumbles", "hops", "sessions"} {
		want, got := committedLines(t, filepath.Join(heapOut, table)), committedLines(t, filepath.Join(pebbleOut, table))
		if len(want) < 50 {
			t.Fatalf("%s: %d rows uninterrupted", table, len(want))
		}
		if !slices.Equal(want, got) {
			t.Errorf("%s: %d rows after the restore, %d uninterrupted on the heap:\n%s", table, len(got), len(want), diffLines(want, got))
		}
	}
}

// committedLines reads the lines of the committed files of a filesystem
// table (in-progress files start with '.' or '_'), sorted.
func committedLines(t *testing.T, dir string) []string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return lines
}
