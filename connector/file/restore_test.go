package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// TestReaderReopensAtItsPosition reads a file in pieces, reopening a new
// reader at the previous one's Position each time: the records, the line
// numbers of errors and the skip count are those of one reader.
func TestReaderReopensAtItsPosition(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("name,qty,note\n")
	for i := range 200 {
		switch {
		case i%37 == 5:
			b.WriteString("bad,notanumber,x\n")
		case i%11 == 3:
			fmt.Fprintf(&b, "q%d,%d,\"multi\nline\"\n", i, i)
		default:
			fmt.Fprintf(&b, "n%d,%d,plain\n", i, i)
		}
	}
	path := writeFile(t, dir, "items.csv", b.String())
	readAll := func(step int) ([]item, int64) {
		src := CSV([]string{path}, parseItem, Header(true), SkipBadRecords()).(weir.RestorableSource[item])
		splits, _ := src.Splits(context.Background())
		var out []item
		var pos []byte
		var skipped int64
		for {
			var r weir.SplitReader[item]
			var err error
			if pos == nil {
				r, err = src.Open(context.Background(), splits[0])
			} else {
				r, err = src.OpenAt(context.Background(), splits[0], pos)
			}
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]item, step)
			n, err := r.Read(context.Background(), buf)
			out = append(out, buf[:n]...)
			skipped = r.(weir.SkipCounter).Skipped()
			if pos, _ = r.(weir.CheckpointedReader[item]).Position(); errors.Is(err, io.EOF) {
				r.Close()
				return out, skipped
			}
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
		}
	}
	want, wantSkipped := readAll(1000)
	if len(want) < 190 || wantSkipped == 0 {
		t.Fatalf("one reader: %d records, %d skipped", len(want), wantSkipped)
	}
	for _, step := range []int{1, 3, 7} {
		got, skipped := readAll(step)
		if !slices.Equal(got, want) || skipped != wantSkipped {
			t.Fatalf("step %d: %d records (%d skipped), want %d (%d)", step, len(got), skipped, len(want), wantSkipped)
		}
	}
	// A bad record after a reopen is named by its true line.
	src := JSONLines[event]([]string{writeFile(t, dir, "e.jsonl", eventLine(1)+eventLine(2)+"oops\n")}).(weir.RestorableSource[event])
	splits, _ := src.Splits(context.Background())
	r, _ := src.Open(context.Background(), splits[0])
	r.Read(context.Background(), make([]event, 1))
	pos, _ := r.(weir.CheckpointedReader[event]).Position()
	r.Close()
	r, err := src.OpenAt(context.Background(), splits[0], pos)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Read(context.Background(), make([]event, 10))
	if err == nil {
		_, err = r.Read(context.Background(), make([]event, 10))
	}
	var re *RecordError
	if !errors.As(err, &re) || re.Line != 3 {
		t.Fatalf("err = %v, want a *RecordError at line 3", err)
	}
}

func TestOpenAtRefusesAShorterFile(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "e.jsonl", eventLine(1)+eventLine(2))
	src := JSONLines[event]([]string{path}).(weir.RestorableSource[event])
	splits, _ := src.Splits(context.Background())
	r, _ := src.Open(context.Background(), splits[0])
	r.Read(context.Background(), make([]event, 10))
	pos, _ := r.(weir.CheckpointedReader[event]).Position()
	r.Close()
	if err := os.WriteFile(path, []byte(eventLine(1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := src.OpenAt(context.Background(), splits[0], pos); err == nil || !strings.Contains(err.Error(), "truncated or replaced") {
		t.Fatalf("err = %v, want one saying the file shrank", err)
	}
	if _, err := src.OpenAt(context.Background(), splits[0], []byte{9}); err == nil {
		t.Fatal("a garbled position was accepted")
	}
}

// TestFileSourceInACheckpointedJob: JSON lines and CSV files read by a job
// that fails once after checkpoints completed and restores: the exactly-once
// file sink holds every record once.
func TestFileSourceInACheckpointedJob(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	var want []string
	for f := range 3 {
		var b strings.Builder
		for i := range 3000 {
			id := f*10000 + i
			b.WriteString(eventLine(id))
			want = append(want, fmt.Sprint(id))
		}
		paths = append(paths, writeFile(t, dir, fmt.Sprintf("in%d.jsonl", f), b.String()))
	}
	slices.Sort(want)
	out := t.TempDir()
	var failed atomic.Bool
	job := weir.NewJob("files", weir.Parallelism(2), weir.Checkpointing(5*time.Millisecond, t.TempDir()),
		weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxFailures: 5, Interval: time.Hour}))
	// A checkpoint after every 500 lines of a file: at least two complete
	// before the failure, however slow the machine.
	paced := weirtest.CheckpointEvery(func() *weir.Job { return job }, JSONLines[event](paths).(weir.RestorableSource[event]), 500)
	src := weir.FromSource(job, "in", weir.Source[event](paced), weir.NoWatermarks[event]())
	ids := weir.Map(src, func(e event) string {
		if !failed.Load() {
			if e.ID%10000 > 2000 && job.Metrics().Checkpoints.Completed >= 2 && failed.CompareAndSwap(false, true) {
				panic("injected failure")
			}
		}
		return fmt.Sprint(e.ID)
	})
	weir.To(ids, ExactlyOnce[string](out, Format(func(s string) ([]byte, error) { return []byte(s), nil })))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !failed.Load() {
		t.Fatal("the failure was not injected")
	}
	var got []string
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "part-") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(out, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Fields(string(data))...)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("%d records committed, want %d", len(got), len(want))
	}
}
