package weir

import (
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
	render := func(emit func(int64), key int64, w *gwin[int64, int64], kind ChangeKind, v int64) error {
		emit(v)
		return nil
	}
	op := &genWindowOp[int64, int64, int64, int64, int64]{
		winOut: winOut[int64, int64, int64]{out: sink, ob: newBatch[int64](1024), batchSize: 1024, sentWM: watermark.Min, m: &metrics.Operator{}},
		w:      Session(10 * time.Second), agg: Count[int64](), trig: EventTimeTrigger(), render: render,
		now: func() int64 { return 0 }, info: opInfo{uid: "s", name: "s", maxP: 128},
	}
	op.init()
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
