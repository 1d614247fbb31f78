package engine

import (
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// A session that grows by an event merges the event's window into it; the
// merged session reuses the memory of the window it absorbs, so growing
// open sessions allocates nothing (before, each event of an open session
// allocated a window: most of Nexmark q11's allocation, and so of its GC
// cycles). The counts show the merges still happen.
func TestSessionGrowDoesNotAllocate(t *testing.T) {
	sink := &collectSink[int64]{}
	op := sessionCountOp(10*time.Second, sink)
	const keys = 100
	in := newBatch[keyed[int64, int64]](keys)
	ts := int64(1000)
	pushAll := func() {
		in.reset()
		for k := int64(0); k < keys; k++ {
			in.add(keyed[int64, int64]{hash: uint64(k) * 0x9E3779B97F4A7C15, key: k, val: k}, ts, watermark.Min)
		}
		ts++
		if err := op.push(in); err != nil {
			t.Fatal(err)
		}
	}
	pushAll() // opens a session per key
	const runs = 50
	if a := testing.AllocsPerRun(runs, pushAll); a != 0 && !raceEnabled {
		t.Errorf("growing %d open sessions by one event each: %.0f allocations, want 0", keys, a)
	}
	// The final watermark fires one session per key holding every event.
	in.reset()
	in.watermark = watermark.Max
	if err := op.push(in); err != nil {
		t.Fatal(err)
	}
	if len(sink.got) != keys {
		t.Fatalf("%d results, want one session per key (%d)", len(sink.got), keys)
	}
	for _, n := range sink.got {
		if n != strconv.Itoa(runs+2) { // the first push, AllocsPerRun's warm-up run and its runs
			t.Fatalf("a session counted %s events, want %d", n, runs+2)
		}
	}
}

// A key's session state holds no pointer when its key, accumulator and
// result hold none (Nexmark q11: int64 bidders and counts), so the garbage
// collector marks the ~400 K open sessions of a q11 subtask without
// reading them. A key with more than its inline window keeps their list in
// the operator.
func TestSessionKeyStateHasNoPointers(t *testing.T) {
	typ := reflect.TypeFor[gkey[int64, int64, int64]]()
	if p := pointerPath(typ, typ.Name()); p != "" {
		t.Errorf("gkey[int64, int64, int64] holds a pointer at %s", p)
	}
}

// pointerPath is the path of the first pointer in a value of t, or "".
func pointerPath(t reflect.Type, path string) string {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Chan, reflect.Func,
		reflect.Interface, reflect.String, reflect.UnsafePointer:
		return path
	case reflect.Array:
		if t.Len() > 0 {
			return pointerPath(t.Elem(), path+"[0]")
		}
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if p := pointerPath(f.Type, path+"."+f.Name); p != "" {
				return p
			}
		}
	}
	return ""
}

// Keys with two sessions open at once (the next opened before the last
// fired) and back to one: every session's count is right, merges across
// the list and the inline window keep the events, and the operator's
// window lists are reused rather than one kept per key ever split.
func TestSessionWindowListsReused(t *testing.T) {
	sink := &collectSink[string]{}
	render := func(emit func(string), key int64, w *gwin[int64, int64], kind ChangeKind, v int64) error {
		emit(strconv.FormatInt(key, 10) + "@" + strconv.FormatInt(w.start, 10) + "-" + strconv.FormatInt(w.end, 10) + "=" + strconv.FormatInt(v, 10))
		return nil
	}
	op := sessionOp[string](10*time.Millisecond, sink, render)
	const keys = 50
	in := newBatch[keyed[int64, int64]](4 * keys)
	push := func(wm int64, tss ...int64) {
		t.Helper()
		in.reset()
		for k := int64(0); k < keys; k++ {
			for _, ts := range tss {
				in.add(keyed[int64, int64]{hash: uint64(k) * 0x9E3779B97F4A7C15, key: k, val: k}, ts, watermark.Min)
			}
		}
		in.watermark = wm
		if err := op.push(in); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	expect := func(start, end, n int64) {
		for k := int64(0); k < keys; k++ {
			want = append(want, strconv.FormatInt(k, 10)+"@"+strconv.FormatInt(start, 10)+"-"+strconv.FormatInt(end, 10)+"="+strconv.FormatInt(n, 10))
		}
	}
	maxLists := 0
	base := int64(0)
	for round := 0; round < 20; round++ {
		// Session A (base, base+5); B opens at base+22, beyond A's gap,
		// so the key has two windows; base+12 bridges them (a merge of
		// the key's list back into its inline window), base+30 grows it.
		push(watermark.Min, base, base+5)
		push(watermark.Min, base+22)
		maxLists = max(maxLists, len(op.lists))
		push(watermark.Min, base+12)
		push(watermark.Min, base+30)
		expect(base, base+40, 5)
		// Session C opens while A+B is open; the watermark then fires A+B
		// and leaves C, a window of its own, alone in the key's list.
		push(watermark.Min, base+60)
		maxLists = max(maxLists, len(op.lists))
		push(base+39, base+65)
		expect(base+60, base+75, 2)
		push(base + 74)
		base += 100
	}
	slices.Sort(want)
	got := slices.Clone(sink.got)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("%d results, want %d; first got %v, want %v", len(got), len(want), got[:min(3, len(got))], want[:3])
	}
	if op.keys.Len() != 0 {
		t.Errorf("%d keys left after every session fired", op.keys.Len())
	}
	if maxLists == 0 {
		t.Error("no key had two windows at once")
	}
	if maxLists > keys {
		t.Errorf("%d window lists for %d keys: lists are not reused", maxLists, keys)
	}
	if len(op.lists) != len(op.freeLists) {
		t.Errorf("%d window lists, %d free, with no key left", len(op.lists), len(op.freeLists))
	}
}

// sessionCountOp is a session window of gap counting int64 events of
// int64 keys, each result rendered as v into out.
func sessionCountOp(gap time.Duration, out consumer[int64]) *genWindowOp[int64, int64, int64, int64, int64] {
	return sessionOp(gap, out, func(emit func(int64), key int64, w *gwin[int64, int64], kind ChangeKind, v int64) error {
		emit(v)
		return nil
	})
}

// sessionOp is a session window of gap counting int64 events of int64
// keys, rendering results into out with render.
func sessionOp[R any](gap time.Duration, out consumer[R], render func(emit func(R), key int64, w *gwin[int64, int64], kind ChangeKind, v int64) error) *genWindowOp[int64, int64, int64, int64, R] {
	return countWindowOp(Session(gap), EventTimeTrigger(), func() int64 { return 0 }, out, render)
}

// countWindowOp is a window of w counting int64 events of int64 keys under
// trig, with processing time now, rendering results into out with render.
func countWindowOp[R any](w Windows, trig WindowTrigger, now func() int64, out consumer[R], render func(emit func(R), key int64, w *gwin[int64, int64], kind ChangeKind, v int64) error) *genWindowOp[int64, int64, int64, int64, R] {
	op := &genWindowOp[int64, int64, int64, int64, R]{
		winOut: winOut[int64, int64, R]{out: out, ob: newBatch[R](1024), batchSize: 1024, sentWM: watermark.Min, m: &metrics.Operator{}},
		w:      w, agg: Count[int64](), trig: trig, render: render,
		now: now, info: opInfo{uid: "s", name: "s", maxP: 128},
	}
	op.init()
	return op
}
