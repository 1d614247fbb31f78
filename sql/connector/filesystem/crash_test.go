package filesystem_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/testing/crashtest"
)

// crashSQL writes a paced sequence (4,000 rows a second) to a partitioned
// Parquet table with success files.
const crashSQL = `
CREATE TABLE gen (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '4000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%d');
CREATE TABLE out (id BIGINT, name STRING, day STRING, hour INT) PARTITIONED BY (day, hour) WITH (
  'connector' = 'filesystem', 'path' = '%s', 'format' = 'parquet',
  'sink.partition-commit.policy.kind' = 'success-file');
INSERT INTO out SELECT id, CONCAT('n', CAST(id AS STRING)), CONCAT('2026-12-0', CAST(id %% 3 + 1 AS STRING)), CAST(id %% 2 AS INT) FROM gen;
`

// weir sql writing partitioned Parquet is SIGKILLed at random moments
// and restarted from its checkpoint directory, then runs to the end:
// every row is in the table exactly once, only complete Parquet files are
// visible (every one reads), nothing hidden is left, and every partition
// has its _SUCCESS.
func TestParquetSinkSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs weir")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "weir")
	if err := crashtest.GoBuild(bin, "github.com/weirstream/weir/cmd/weir"); err != nil {
		t.Fatal(err)
	}
	const n = 12000
	out, ck, file := filepath.Join(dir, "out"), filepath.Join(dir, "ck"), filepath.Join(dir, "job.sql")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(crashSQL, n-1, out)), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"sql", "-f", file, "--parallelism", "2", "--checkpoint-dir", ck, "--checkpoint-interval", "100ms"}
	rng := rand.New(rand.NewPCG(crashtest.Seed(t), 40))
	pacer := &crashtest.Pacer{Progress: func() int64 { return crashtest.CommittedCheckpoint(ck) }}
	kills := 0
	for k := crashtest.Kills(5); kills < k; {
		window := pacer.Window(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		killed, _, stderr, err := crashtest.Attempt(osexec.Command(bin, args...), window)
		if !killed {
			if err == nil {
				break // done before the kill: the last attempt ran to the end
			}
			t.Fatalf("weir sql failed after %d kills: %v\n%s", kills, err, stderr)
		}
		kills++
		pacer.Killed()
	}
	if _, _, stderr, err := crashtest.Attempt(osexec.Command(bin, args...), 0); err != nil {
		t.Fatalf("the last run: %v\n%s", err, stderr)
	}
	if kills < 2 {
		t.Fatalf("only %d kills: the job ended too soon to test crashes", kills)
	}
	var want []string
	for id := range n {
		want = append(want, fmt.Sprintf("%d,n%d,2026-12-0%d,%d", id, id, id%3+1, id%2))
	}
	slices.Sort(want)
	got, err := readTable(t, map[string]string{"connector": "filesystem", "path": out, "format": "parquet"})
	if err != nil {
		t.Fatalf("reading the table (every visible file must be complete): %v", err)
	}
	if missing, extra := crashtest.Minus(want, got), crashtest.Minus(got, want); len(missing)+len(extra) > 0 {
		t.Fatalf("after %d kills: %d rows missing (%q...), %d extra (%q...)", kills, len(missing), missing[:min(3, len(missing))], len(extra), extra[:min(3, len(extra))])
	}
	partitions := 0
	filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Error(err)
			return nil
		}
		rel, _ := filepath.Rel(out, p)
		if strings.HasPrefix(d.Name(), ".") {
			t.Errorf("hidden file left: %s", rel)
		}
		if d.IsDir() && strings.Count(rel, string(filepath.Separator)) == 1 {
			partitions++
			if _, err := os.Stat(filepath.Join(p, "_SUCCESS")); err != nil {
				t.Errorf("partition %s has no _SUCCESS: %v", rel, err)
			}
		}
		return nil
	})
	if partitions != 6 {
		t.Errorf("%d partitions, want 6", partitions)
	}
	t.Logf("%d kills; %d rows exactly once in %d partitions", kills, len(got), partitions)
}
