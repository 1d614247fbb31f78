package filesystem_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/testing/crashtest"
	"github.com/weirstream/weir/internal/testing/s3test"
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
	out, ck := filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	kills, got := parquetSinkSurvivesSIGKILL(t, dir, out, ck, func() int64 { return crashtest.CommittedCheckpoint(ck) })
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

// parquetSinkSurvivesSIGKILL runs crashSQL writing to out with its
// checkpoints in ck, SIGKILLed at random moments paced by progress (the
// latest committed checkpoint), then to the end; it checks that every row
// is in out exactly once, and returns the number of kills and the rows.
func parquetSinkSurvivesSIGKILL(t *testing.T, dir, out, ck string, progress func() int64) (int, []string) {
	t.Helper()
	bin := filepath.Join(dir, "weir")
	if err := crashtest.GoBuild(bin, "github.com/weirstream/weir/cmd/weir"); err != nil {
		t.Fatal(err)
	}
	const n = 12000
	file := filepath.Join(dir, "job.sql")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(crashSQL, n-1, out)), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"sql", "-f", file, "--parallelism", "2", "--checkpoint-dir", ck, "--checkpoint-interval", "100ms"}
	rng := rand.New(rand.NewPCG(crashtest.Seed(t), 40))
	pacer := &crashtest.Pacer{Progress: progress}
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
	return kills, got
}

// The same on object storage: weir sql writes partitioned Parquet to an
// S3 store (a server in this test process, which the kills do not reach)
// with its checkpoints in the same bucket, SIGKILLed and restarted: every
// row once, every partition's _SUCCESS, no hidden object and no
// multipart upload left open (those of uncompleted checkpoints were
// aborted by the recoveries), and the AWS CLI lists what weir wrote.
func TestParquetSinkOnS3SurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs weir")
	}
	srv := s3test.Start(t, "lake")
	obj := objects(t)
	const out, ck = "s3://lake/tables/out", "s3://lake/checkpoints/out"
	progress := func() int64 {
		var id int64
		objs, _ := obj.Walk(ck + "/_committed") // not there yet: nothing committed
		for _, o := range objs {
			if n, err := strconv.ParseInt(path.Base(o.Name), 10, 64); err == nil {
				id = max(id, n)
			}
		}
		return id
	}
	kills, got := parquetSinkSurvivesSIGKILL(t, t.TempDir(), out, ck, progress)
	objs, err := obj.Walk(out)
	if err != nil {
		t.Fatal(err)
	}
	partitions := map[string]bool{}
	for _, o := range objs {
		rel := strings.TrimPrefix(o.Name, out+"/")
		if strings.HasPrefix(path.Base(rel), ".") {
			t.Errorf("hidden object left: %s", rel)
		}
		if path.Base(rel) == "_SUCCESS" {
			partitions[path.Dir(rel)] = true
		}
	}
	if len(partitions) != 6 {
		t.Errorf("%d partitions with a _SUCCESS, want 6: %v", len(partitions), partitions)
	}
	if us, err := obj.Uploads(out); err != nil || len(us) > 0 {
		t.Errorf("%d multipart uploads left open (%v)", len(us), err)
	}
	if aws := s3test.AWSCLI(t); aws != "" {
		ls, err := osexec.Command(aws, "--endpoint-url", srv.URL, "s3", "ls", "--recursive", out+"/").CombinedOutput()
		if err != nil {
			t.Fatalf("aws s3 ls: %v\n%s", err, ls)
		}
		if n := strings.Count(string(ls), "/_SUCCESS\n"); n != 6 {
			t.Errorf("aws s3 ls lists %d success files, want 6:\n%s", n, ls)
		}
	}
	t.Logf("%d kills; %d rows exactly once in %d partitions, %d objects", kills, len(got), len(partitions), len(objs))
}
