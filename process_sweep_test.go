package weir_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// dueSum sums each key's values and emits the sum once the watermark
// passes the key's first event by 10 ms, keeping its own index of due keys
// (KeyRef) instead of a timer per key, as package cep does.
type dueSum struct {
	sum     *weir.ValueState[string, int]
	due     []dueKey
	entries []string // what Entries listed at each watermark
}

type dueKey struct {
	at  int64
	ref weir.KeyRef[string]
}

func (f *dueSum) Open(rc *weir.RuntimeContext[string]) error {
	f.sum = weir.NewValueState[int](rc, "sum")
	return nil
}

func (f *dueSum) ProcessElement(ctx *weir.KeyedContext[string, string], e tsv) error {
	s, ok := f.sum.Value()
	if !ok {
		f.due = append(f.due, dueKey{ctx.Timestamp().UnixMilli() + 10, ctx.KeyRef()})
	}
	f.sum.Update(s + e.V)
	return nil
}

func (f *dueSum) OnWatermark(ctx *weir.KeyedContext[string, string], wm time.Time) error {
	var keys []string
	for ref, s := range f.sum.Entries() {
		keys = append(keys, fmt.Sprintf("%s=%d", ref.Key(), s))
	}
	slices.Sort(keys)
	f.entries = append(f.entries, fmt.Sprint(keys))
	rest := f.due[:0]
	for _, d := range f.due {
		if d.at > wm.UnixMilli() {
			rest = append(rest, d)
			continue
		}
		ctx.SetKey(d.ref, time.UnixMilli(d.at))
		s, _ := f.sum.Value()
		ctx.Emit(fmt.Sprintf("%s=%d@%d", ctx.Key(), s, ctx.Timestamp().UnixMilli()))
		f.sum.Clear()
	}
	f.due = rest
	return nil
}

type tsv struct {
	K  string
	V  int
	TS int64
}

// TestWatermarkHandler: OnWatermark runs as the watermark advances, and
// at the end of input; SetKey returns to a key it noted with KeyRef (state
// and Key follow) and stamps what it emits; Entries lists the keys with
// state.
func TestWatermarkHandler(t *testing.T) {
	job := weir.NewJob("wm-handler")
	in := []tsv{{"a", 1, 100}, {"b", 2, 101}, {"a", 3, 105}, {"c", 4, 130}, {"b", 5, 131}}
	src := weir.FromSource(job, "in", weir.SliceSource(in), weir.MonotonousTimestamps(func(e tsv) time.Time { return time.UnixMilli(e.TS) }))
	f := &dueSum{}
	out := weir.Collect(weir.Process(weir.KeyBy(src, func(e tsv) string { return e.K }), weir.KeyedProcessFunction[string, tsv, string](f)))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := out.Items()
	slices.Sort(got)
	want := []string{"a=4@110", "b=2@111", "b=5@141", "c=4@140"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if len(f.entries) == 0 {
		t.Fatal("OnWatermark never ran")
	}
	if !slices.Contains(f.entries, "[a=4 b=2]") {
		t.Errorf("Entries at each watermark: %v", f.entries)
	}
}
