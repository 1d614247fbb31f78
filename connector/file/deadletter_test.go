package file

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir"
)

// badInput writes 20 lines of which 4 are malformed and returns the path,
// the good ids and the bad lines with their 1-based line numbers.
func badInput(t *testing.T) (string, []int, map[int]string) {
	t.Helper()
	bad := []string{`{"id": 1,`, `garbage`, `{"id": "not a number"}`, `[1, 2`}
	var b strings.Builder
	var good []int
	badAt := map[int]string{}
	for i := range 20 {
		if i%5 == 2 {
			b.WriteString(bad[i/5] + "\n")
			badAt[i+1] = bad[i/5]
			continue
		}
		b.WriteString(eventLine(i))
		good = append(good, i)
	}
	return writeFile(t, t.TempDir(), "x.jsonl", b.String()), good, badAt
}

func ids(evs []event) []int {
	var out []int
	for _, e := range evs {
		out = append(out, e.ID)
	}
	return out
}

func TestOnBadRecordSkip(t *testing.T) {
	path, good, badAt := badInput(t)
	job := weir.NewJob("skip")
	out := weir.Collect(weir.FromSource(job, "in", JSONLines[event]([]string{path}), weir.NoWatermarks[event](), weir.OnBadRecord(weir.Skip)))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := ids(out.Items()); !slices.Equal(got, good) {
		t.Fatalf("got %v, want %v", got, good)
	}
	if n := skippedMetric(job); n != int64(len(badAt)) {
		t.Fatalf("skipped metric %d, want %d", n, len(badAt))
	}
}

func TestOnBadRecordFailIsTheDefault(t *testing.T) {
	path, _, _ := badInput(t)
	for _, opts := range [][]weir.SourceOption{nil, {weir.OnBadRecord(weir.Fail)}} {
		job := weir.NewJob("fail")
		weir.Collect(weir.FromSource(job, "in", JSONLines[event]([]string{path}), weir.NoWatermarks[event](), opts...))
		err := job.Run(context.Background())
		var re *RecordError
		if !errors.As(err, &re) || re.Line != 3 {
			t.Fatalf("%v: err = %v, want a *RecordError at line 3", opts, err)
		}
	}
}

func TestOnBadRecordDeadLetter(t *testing.T) {
	path, good, badAt := badInput(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	job := weir.NewJob("dlq")
	var letters []weir.BadRecord
	sink := weir.SinkFunc[weir.BadRecord](func(_ context.Context, items []weir.BadRecord) error {
		letters = append(letters, items...)
		return nil
	})
	out := weir.Collect(weir.FromSource(job, "events", JSONLines[event]([]string{path}), weir.NoWatermarks[event](), weir.OnBadRecord(weir.DeadLetter(sink))))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := ids(out.Items()); !slices.Equal(got, good) {
		t.Fatalf("got %v, want %v", got, good)
	}
	if len(letters) != len(badAt) {
		t.Fatalf("%d dead letters, want %d", len(letters), len(badAt))
	}
	for _, l := range letters {
		var line int
		for n, raw := range badAt {
			if string(l.Raw) == raw {
				line = n
			}
		}
		if line == 0 {
			t.Fatalf("dead letter with unknown raw bytes %q", l.Raw)
		}
		off := 0
		for range line - 1 {
			off += strings.IndexByte(string(data[off:]), '\n') + 1
		}
		wantPos := filepath.Clean(path) + ":" + strconv.Itoa(line) + " (byte offset " + strconv.Itoa(off) + ")"
		if l.Position != wantPos || l.Source != "events" || l.Split != filepath.Clean(path) || l.Err == "" || l.Time.IsZero() {
			t.Errorf("dead letter %+v: want position %q, source events, split %s, an error and a time", l, wantPos, filepath.Clean(path))
		}
	}
	n := job.Metrics().Sum(func(o *weir.OperatorMetrics) int64 { return o.DeadLetters })
	if n != int64(len(badAt)) {
		t.Fatalf("dead-letter metric %d, want %d", n, len(badAt))
	}
}

func TestBadRecordsNeedAReporter(t *testing.T) {
	job := weir.NewJob("noreport")
	weir.Collect(weir.FromSource(job, "in", weir.SliceSource([]int{1}), weir.NoWatermarks[int](), weir.OnBadRecord(weir.Skip)))
	err := job.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "BadRecordReporter") {
		t.Fatalf("err = %v, want one naming weir.BadRecordReporter", err)
	}
}
