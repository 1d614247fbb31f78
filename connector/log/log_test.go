package wlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/testing/weirtest"
)

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newTopic(t testing.TB, cfg TopicConfig) *Topic {
	t.Helper()
	if cfg.Partitions == 0 {
		cfg.Partitions = 1
	}
	tp, err := CreateTopic(t.TempDir(), "t", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func openWriter(t testing.TB, tp *Topic, opts ...WriterOption) *Writer {
	t.Helper()
	w, err := tp.OpenWriter(0, append([]WriterOption{WithLogger(quietLogger())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func readAll(t testing.TB, tp *Topic, start StartAt) []Record {
	t.Helper()
	return readPartition(t, tp, 0, start)
}

// readPartition reads partition p of tp from start to its end.
func readPartition(t testing.TB, tp *Topic, p int, start StartAt) []Record {
	t.Helper()
	r, err := tp.OpenReader(p, start)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var all []Record
	for {
		recs, err := r.Read(context.Background(), 7)
		if err == io.EOF {
			return all
		}
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, recs...)
	}
}

func offsets(recs []Record) []int64 {
	var o []int64
	for _, r := range recs {
		o = append(o, r.Offset)
	}
	return o
}

// rec makes record i: key k<i%keys>, value v<i>, timestamp 1000+i.
func rec(i, keys int) Record {
	return Record{Timestamp: int64(1000 + i), Key: fmt.Appendf(nil, "k%d", i%keys), Value: fmt.Appendf(nil, "v%d", i)}
}

func appendN(t testing.TB, w *Writer, from, n, batch int) {
	t.Helper()
	for i := from; i < from+n; i += batch {
		var recs []Record
		for j := i; j < min(i+batch, from+n); j++ {
			recs = append(recs, rec(j, 10))
		}
		if _, err := w.Append(recs); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	tp := newTopic(t, TopicConfig{})
	w := openWriter(t, tp)
	in := []Record{
		{Timestamp: 5, Key: []byte("a"), Value: []byte("1"), Headers: []Header{{Key: "h", Value: []byte("x")}, {Key: "nil"}}},
		{Timestamp: 3, Key: nil, Value: []byte{}},
		{Timestamp: 9, Key: []byte{}, Value: nil},
	}
	first, err := w.Append(in[:1])
	if err != nil || first != 0 {
		t.Fatal(first, err)
	}
	first, err = w.Append(in[1:])
	if err != nil || first != 1 {
		t.Fatal(first, err)
	}
	if _, err := w.Append([]Record{{Value: []byte("now")}}); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, tp, Earliest())
	want := append(in, Record{Offset: 3, Value: []byte("now")})
	want[3].Timestamp = got[3].Timestamp
	if time.Since(time.UnixMilli(got[3].Timestamp)) > time.Minute {
		t.Errorf("zero timestamp not stamped with now: %d", got[3].Timestamp)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	// Reopen: the offsets continue.
	w.Close()
	w = openWriter(t, tp)
	if w.NextOffset() != 4 {
		t.Fatalf("next offset after reopen %d, want 4", w.NextOffset())
	}
}

func TestStartPositions(t *testing.T) {
	tp := newTopic(t, TopicConfig{SegmentBytes: 16 << 10})
	w := openWriter(t, tp)
	// Timestamps go 1000+i except a late record at offset 500 (ts 1100),
	// so that a time search must not stop at the first larger timestamp.
	for i := 0; i < 2000; i += 4 {
		var recs []Record
		for j := i; j < i+4; j++ {
			r := rec(j, 10)
			r.Value = []byte(strings.Repeat("x", 40))
			if j == 500 {
				r.Timestamp = 1100
			}
			recs = append(recs, r)
		}
		if _, err := w.Append(recs); err != nil {
			t.Fatal(err)
		}
	}
	if bases, _ := listSegments(tp.partDir(0)); len(bases) < 3 {
		t.Fatalf("want several segments, have %d", len(bases))
	}
	first := func(s StartAt) int64 {
		got := readAll(t, tp, s)
		if len(got) == 0 {
			return -1
		}
		for i := 1; i < len(got); i++ {
			if got[i].Offset != got[i-1].Offset+1 {
				t.Fatalf("%s: gap %d -> %d", s, got[i-1].Offset, got[i].Offset)
			}
		}
		if got[len(got)-1].Offset != 1999 {
			t.Fatalf("%s: last %d", s, got[len(got)-1].Offset)
		}
		return got[0].Offset
	}
	for _, tc := range []struct {
		s    StartAt
		want int64
	}{
		{Earliest(), 0},
		{Latest(), -1},
		{AtOffset(0), 0},
		{AtOffset(1), 1},
		{AtOffset(777), 777},
		{AtOffset(1999), 1999},
		{AtOffset(2000), -1},
		{AtOffset(-5), 0},
		{AtTimestamp(0), 0},
		{AtTimestamp(1003), 3},
		{AtTimestamp(1100), 100},
		{AtTimestamp(1101), 101},
		{AtTimestamp(1600), 600},
		{AtTimestamp(2999), 1999},
		{AtTimestamp(3000), -1},
	} {
		if got := first(tc.s); got != tc.want {
			t.Errorf("%s: first offset %d, want %d", tc.s, got, tc.want)
		}
	}
	// A reader at Latest sees what is appended after it opened.
	r, err := tp.OpenReader(0, Latest())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	appendN(t, w, 2000, 3, 3)
	recs, err := r.Read(context.Background(), 10)
	if err != nil || !reflect.DeepEqual(offsets(recs), []int64{2000, 2001, 2002}) {
		t.Fatalf("latest reader: %v %v", offsets(recs), err)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	weirtest.WaitFor(t, what, 30*time.Second, cond)
}

func TestFollowAcrossRolls(t *testing.T) {
	tp := newTopic(t, TopicConfig{SegmentBytes: 4 << 10})
	w := openWriter(t, tp, WithSync(SyncNever()))
	r, err := tp.OpenReader(0, Earliest(), Follow(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan Record, 10000)
	errc := make(chan error, 1)
	go func() {
		for {
			recs, err := r.Read(ctx, 100)
			if err != nil {
				errc <- err
				return
			}
			for _, rc := range recs {
				got <- rc
			}
		}
	}()
	const n = 3000
	go func() { appendN(t, w, 0, n, 3) }() // concurrent with the reader
	for i := 0; i < n; i++ {
		select {
		case rc := <-got:
			if rc.Offset != int64(i) || string(rc.Value) != fmt.Sprint("v", i) {
				t.Fatalf("record %d: %d %q", i, rc.Offset, rc.Value)
			}
		case err := <-errc:
			t.Fatal(err)
		case <-time.After(10 * time.Second):
			t.Fatalf("timed out at record %d", i)
		}
	}
	if bases, _ := listSegments(tp.partDir(0)); len(bases) < 5 {
		t.Fatalf("want rolls, have %d segments", len(bases))
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel: %v", err)
	}
}

func TestSegmentRoll(t *testing.T) {
	tp := newTopic(t, TopicConfig{SegmentBytes: 500})
	w := openWriter(t, tp)
	appendN(t, w, 0, 200, 5)
	bases, _ := listSegments(tp.partDir(0))
	if len(bases) < 5 {
		t.Fatalf("segments %v", bases)
	}
	for i, b := range bases {
		st, err := os.Stat(logPath(tp.partDir(0), b))
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 500 {
			t.Errorf("segment %d is %d bytes", b, st.Size())
		}
		if i > 0 && b <= bases[i-1] {
			t.Errorf("bases not increasing: %v", bases)
		}
	}
	if got := readAll(t, tp, Earliest()); len(got) != 200 || got[199].Offset != 199 {
		t.Fatalf("read %d records", len(got))
	}
	w.Close()
	w = openWriter(t, tp)
	appendN(t, w, 200, 10, 5)
	if got := readAll(t, tp, AtOffset(195)); !reflect.DeepEqual(offsets(got), []int64{195, 196, 197, 198, 199, 200, 201, 202, 203, 204, 205, 206, 207, 208, 209}) {
		t.Fatalf("after reopen: %v", offsets(got))
	}
	infos, err := tp.Describe()
	if err != nil || infos[0].Next != 210 || infos[0].Earliest != 0 || infos[0].Segments != len(bases)+1 && infos[0].Segments != len(bases) {
		t.Fatalf("describe: %+v %v", infos, err)
	}
}

func TestSecondWriterRefused(t *testing.T) {
	tp := newTopic(t, TopicConfig{Partitions: 2})
	w := openWriter(t, tp)
	_, err := tp.OpenWriter(0)
	var le *LockedError
	if !errors.As(err, &le) || le.Partition != 0 || !errors.Is(err, ErrLocked) {
		t.Fatalf("second writer: %v", err)
	}
	if !strings.Contains(err.Error(), `partition 0 of topic "t"`) {
		t.Errorf("error does not name the partition: %v", err)
	}
	w1, err := tp.OpenWriter(1) // another partition is free
	if err != nil {
		t.Fatal(err)
	}
	w1.Close()
	if err := DeleteTopic(filepath.Dir(tp.Dir), "t"); !errors.Is(err, ErrLocked) {
		t.Fatalf("delete with a writer: %v", err)
	}
	w.Close()
	w2, err := tp.OpenWriter(0)
	if err != nil {
		t.Fatalf("after close: %v", err)
	}
	w2.Close()
}

func TestTopics(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b", "a"} {
		if _, err := CreateTopic(dir, n, TopicConfig{Partitions: 3, Compact: n == "a", Retention: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := CreateTopic(dir, "a", TopicConfig{Partitions: 1}); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("create twice: %v", err)
	}
	if _, err := CreateTopic(dir, "../x", TopicConfig{Partitions: 1}); err == nil {
		t.Fatal("bad name accepted")
	}
	names, err := ListTopics(dir)
	if err != nil || !reflect.DeepEqual(names, []string{"a", "b"}) {
		t.Fatal(names, err)
	}
	tp, err := OpenTopic(dir, "a")
	if err != nil || !tp.Config.Compact || tp.Config.Partitions != 3 || tp.Config.Retention != time.Hour {
		t.Fatalf("%+v %v", tp, err)
	}
	if err := DeleteTopic(dir, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenTopic(dir, "a"); !errors.Is(err, ErrNoTopic) {
		t.Fatal(err)
	}
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
