package file

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// numbersJob writes 0..count-1 through an ExactlyOnce sink into out.
func numbersJob(count int64, rate float64, p int, ck, out string, opts ...weir.JobOption) *weir.Job {
	job := weir.NewJob("numbers", append([]weir.JobOption{weir.Parallelism(p), weir.Checkpointing(20*time.Millisecond, ck)}, opts...)...)
	src := weir.FromSource(job, "gen", weir.GeneratorSource(weir.GeneratorConfig{Count: count, Seed: 1, Rate: rate},
		func(i int64, _ *rand.Rand) int64 { return i }), weir.NoWatermarks[int64](), weir.UID("gen"))
	weir.To(weir.Map(src, func(i int64) int64 { return i }, weir.UID("map")), ExactlyOnce[int64](out), weir.UID("out"))
	return job
}

// lines returns the lines of the committed part files of dir.
func lines(t *testing.T, dir string) []string {
	t.Helper()
	s := committed(t, dir)
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// stopWithSavepoint runs numbersJob at parallelism 2 into out until it
// committed some output, and stops it with a savepoint, which it returns.
// It writes 2,000 records a second, so that the savepoint is taken long
// before the n records of the restored job (25 s for 50,000), however
// busy the machine (at 20,000 a second a loaded machine took the
// savepoint after all of them, leaving the restored job nothing to write).
func stopWithSavepoint(t *testing.T, n int64, out string) string {
	t.Helper()
	job := numbersJob(-1, 2_000, 2, t.TempDir(), out)
	done := make(chan error, 1)
	go func() { done <- job.Run(context.Background()) }()
	waitFor(t, "committed output", func() bool {
		es, _ := os.ReadDir(out) // not there until the sink opens
		n := 0
		for _, e := range es {
			if strings.HasPrefix(e.Name(), partPrefix) {
				n++
			}
		}
		return n >= 2
	})
	sp, err := job.Savepoint(context.Background(), filepath.Join(t.TempDir(), "sp"), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("stop with savepoint: %v", err)
	}
	return sp
}

// TestRestoreSavepointIntoNewDirectory is a blue/green deployment: a job
// at parallelism 2 writing to blue is stopped with a savepoint, and the
// new version restores it at parallelism 4 writing to green. The
// savepoint's output is committed in blue, where it was written (not
// looked for in green), the rest goes to green, and together they hold
// every record once.
func TestRestoreSavepointIntoNewDirectory(t *testing.T) {
	const n = 50_000
	blue, green := filepath.Join(t.TempDir(), "blue"), filepath.Join(t.TempDir(), "green")
	sp := stopWithSavepoint(t, n, blue)
	before := lines(t, blue)
	if len(before) == 0 || len(before) >= n {
		t.Fatalf("blue holds %d records before the switch, want some of %d", len(before), n)
	}
	job := numbersJob(n, 0, 4, t.TempDir(), green, weir.RestoreFrom(sp),
		weir.Restarts(weir.RestartPolicy{MaxFailures: 0}))
	if err := job.Run(context.Background()); err != nil {
		t.Fatalf("restore into a new directory: %v", err)
	}
	if after := lines(t, blue); !slices.Equal(after, before) {
		t.Fatalf("blue changed after the switch: %d records, had %d", len(after), len(before))
	}
	wantNoHidden(t, blue)
	wantNoHidden(t, green)
	all := append(lines(t, green), before...)
	if len(lines(t, green)) == 0 {
		t.Fatal("green got no output")
	}
	seen := make([]bool, n)
	for _, l := range all {
		var i int
		for _, c := range l {
			i = i*10 + int(c-'0')
		}
		if i < 0 || i >= n || seen[i] {
			t.Fatalf("record %q out of range or twice", l)
		}
		seen[i] = true
	}
	if len(all) != n {
		t.Fatalf("blue and green hold %d records, want %d", len(all), n)
	}
}

// TestLostOutputFailsAtOnce: a restore whose committed output has been
// deleted (the savepoint's part files are gone) cannot be fixed by a
// restart: the job fails at once with an error naming the files, without
// going through the restart policy.
func TestLostOutputFailsAtOnce(t *testing.T) {
	blue := filepath.Join(t.TempDir(), "blue")
	sp := stopWithSavepoint(t, 50_000, blue)
	visible, _ := dirFiles(t, blue)
	last := visible[len(visible)-1] // of the savepoint: the newest checkpoint id
	if err := os.Remove(filepath.Join(blue, last)); err != nil {
		t.Fatal(err)
	}
	job := numbersJob(50_000, 0, 4, t.TempDir(), filepath.Join(t.TempDir(), "green"), weir.RestoreFrom(sp),
		weir.Restarts(weir.RestartPolicy{MaxFailures: 100, Interval: time.Hour, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond}))
	err := job.Run(context.Background())
	if err == nil || !weir.IsPermanent(err) || !strings.Contains(err.Error(), last) || !strings.Contains(err.Error(), "lost") {
		t.Fatalf("Run: %v; want a permanent error naming %s as lost", err, last)
	}
	if n := job.Metrics().Checkpoints.Restarts; n != 0 {
		t.Fatalf("%d restarts for an error no restart can fix", n)
	}
}

// A restore whose savepoint's output directory is gone (moved away) fails
// at once with the error that says so, not after the restart policy's
// attempts (issue 35). (Pending files gone from a directory that is there
// fail at once too: TestExactlyOnceErrors.)
func TestRestoreWithLostOutputFailsAtOnce(t *testing.T) {
	blue := filepath.Join(t.TempDir(), "blue")
	sp := stopWithSavepoint(t, 50_000, blue)
	if err := os.Rename(blue, blue+".moved"); err != nil {
		t.Fatal(err)
	}
	job := numbersJob(50_000, 0, 2, t.TempDir(), filepath.Join(t.TempDir(), "green"), weir.RestoreFrom(sp),
		weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxFailures: 3, Interval: time.Hour}))
	err := job.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "the output of this checkpoint is lost") || strings.Contains(err.Error(), "giving up") {
		t.Fatalf("restore with the output gone: %v; want the lost-output error at once", err)
	}
	if !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("restore with the output directory gone: %v; want it to say the directory does not exist", err)
	}
}
