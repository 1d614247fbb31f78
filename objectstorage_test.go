package weir_test

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/testing/s3test"
)

// s3Checkpoints lists the complete checkpoints under an s3:// directory.
func s3Checkpoints(t *testing.T, dir string) []string {
	t.Helper()
	des, err := checkpoint.Default.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		if strings.HasPrefix(de.Name(), "chk-") && !strings.HasSuffix(de.Name(), ".inprogress") {
			out = append(out, de.Name())
		}
	}
	slices.Sort(out)
	return out
}

// A job whose checkpoint directory is in object storage (an S3 store on
// loopback): it fails, restores its latest checkpoint from the bucket and
// ends with the output of a run without failure; the checkpoints are in
// the bucket, retained as on a disk, written in place (no object is
// copied: S3 has no rename).
func TestCheckpointsInObjectStorage(t *testing.T) {
	srv := s3test.Start(t, "ck")
	r := newRand(7)
	evs := randomEvents(r, 8000, 100, 2000)
	want := func() []string {
		s := newMemSink()
		var f atomic.Bool
		if err := buildCounting(evs, 2, t.TempDir(), s, 0, &f).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s.output()
	}()
	dir := "s3://ck/jobs/counting"
	s := newMemSink()
	var failed atomic.Bool
	job := buildCounting(evs, 2, dir, s, evs[6000].TS, &failed)
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !failed.Load() || job.Metrics().Checkpoints.Restarts != 1 {
		t.Fatalf("failure injected %t, %d restarts; want one", failed.Load(), job.Metrics().Checkpoints.Restarts)
	}
	if r := job.RestoredFrom(); !strings.HasPrefix(r, "s3:/ck/jobs/counting/chk-") {
		t.Fatalf("restored from %q, want a checkpoint in the bucket", r)
	}
	if got := s.output(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("output after a failure differs from a failure-free run: %d vs %d records", len(got), len(want))
	}
	if cks := s3Checkpoints(t, dir); len(cks) == 0 || len(cks) > 3 {
		t.Fatalf("checkpoints in the bucket: %v, want 1..3 retained", cks)
	}
	if n := srv.Copies(); n != 0 {
		t.Fatalf("%d objects copied on the server: checkpoints are not written in place", n)
	}
}

// Keyed Pebble state with incremental checkpoints in object storage: the
// SST files are uploaded to the bucket's shared/ once, and a job restores
// from the bucket at another parallelism; nothing is copied on the
// server (SST files and checkpoints are written in place).
func TestIncrementalCheckpointsInObjectStorage(t *testing.T) {
	srv := s3test.Start(t, "ck")
	r := newRand(8)
	gen := func(n int, from int64) []ev {
		out := make([]ev, n)
		for i := range out {
			out[i] = ev{Key: fmt.Sprint("k", r.IntN(50)), TS: from + int64(i)}
		}
		return out
	}
	first, second := gen(3000, 0), gen(1000, 10000)
	dir := "s3://ck/jobs/incremental"
	job, _ := countJob(first, "events", weir.Parallelism(2), weir.Checkpointing(5*time.Millisecond, dir),
		weir.PebbleState(t.TempDir(), 4<<20), weir.IncrementalCheckpoints())
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	cks := s3Checkpoints(t, dir)
	if len(cks) == 0 {
		t.Fatal("no checkpoint in the bucket")
	}
	shared, err := checkpoint.Default.ReadDir(dir + "/" + checkpoint.SharedDirName)
	if err != nil || len(shared) == 0 {
		t.Fatalf("no shared (incremental) files in the bucket: %v", err)
	}
	before := map[string]int{}
	for _, e := range first {
		before[e.Key]++
	}
	job, out := countJob(second, "more", weir.Parallelism(3), weir.RestoreFrom(dir+"/"+cks[len(cks)-1]), weir.AllowNonRestoredState(),
		weir.PebbleState(t.TempDir(), 4<<20), weir.IncrementalCheckpoints(), weir.Checkpointing(5*time.Millisecond, "s3://ck/jobs/incremental-2"))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, out.Items(), before, second)
	if n := srv.Copies(); n != 0 {
		t.Fatalf("%d objects copied on the server: checkpoints are not written in place", n)
	}
}

// The servers' token is never written to object storage: with an s3://
// checkpoint directory they need a local token file, and say so.
func TestObjectStorageServersNeedALocalToken(t *testing.T) {
	s3test.Start(t, "ck")
	evs := []ev{{Key: "a", TS: 1}, {Key: "b", TS: 2}}
	job, _ := countJob(evs, "events", weir.Checkpointing(time.Hour, "s3://ck/tok"), weir.MetricsAddr("127.0.0.1:0"))
	if err := job.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "a checkpoint directory in object storage (s3://ck/tok) is not: set WebTokenFile") {
		t.Fatalf("metrics with an s3:// checkpoint dir and no token file: %v", err)
	}
	tokenFile := t.TempDir() + "/token"
	job, out := countJob(evs, "events", weir.Checkpointing(time.Hour, "s3://ck/tok"), weir.MetricsAddr("127.0.0.1:0"), weir.WebTokenFile(tokenFile))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(out.Items()) != 2 {
		t.Fatalf("output %v", out.Items())
	}
	if des, err := checkpoint.Default.ReadDir("s3://ck/tok"); err != nil || slices.ContainsFunc(des, func(de fs.DirEntry) bool { return strings.Contains(de.Name(), "token") }) {
		t.Fatalf("the bucket holds a token (or cannot be listed: %v)", err)
	}
}
