package engine

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// testWindowOp is what the tests drive of an aligned or sliced operator.
type testWindowOp interface {
	push(*batch[keyed[int64, int64]]) error
	barrier(*barrierMsg, *taskSnapshot) error
	restore(wm int64, groups [][]byte) error
	advance(int64) error
	emit(int64) error
}

// newSliceTestOp is a counting window operator over int64 keys: sliced
// (window_slice.go) or aligned, with deferred snapshots or synchronous
// ones.
func newSliceTestOp(w Windows, sliced, async bool) (testWindowOp, *resultSink[WindowResult[int64, int64]], *metrics.Operator) {
	sink := &resultSink[WindowResult[int64, int64]]{}
	m := &metrics.Operator{}
	a := &alignedWindowOp[int64, int64, int64, int64]{
		winOut: winOut[int64, int64, WindowResult[int64, int64]]{out: sink, ob: newBatch[WindowResult[int64, int64]](16), batchSize: 16, sentWM: watermark.Min, m: m},
		w:      w, agg: Count[int64](), count: true, ident: true, wm: watermark.Min, nextFire: watermark.Max,
		info: opInfo{uid: "w", name: "w", maxP: 128}, async: async,
	}
	if sliced {
		return newSlicedWindowOp(nil, a), sink, m
	}
	return a, sink, m
}

func snapshotGroups(s *taskSnapshot) [][]byte {
	var gs [][]byte
	for _, st := range s.States {
		for _, g := range st.Groups {
			gs = append(gs, g)
		}
	}
	return gs
}

// The sliced operator gives the aligned operator's results and drops the
// same late records, with random input (disorder, late records, several
// windows firing in one batch), hops of several sizes and offsets, and
// deferred snapshots at random batches (some encoded on another goroutine
// while the task goes on, some only when checked, some never: aborted).
// Each deferred snapshot, which keeps the encodings of slices not written
// since the last one, holds the entries of a synchronous snapshot of the
// sliced operator at the same barrier. A sliced operator restored from a
// snapshot (its own, or the aligned operator's: windows, not slices) and
// given the rest of the input gives the results the reference gave after
// that barrier.
func TestSlicedWindowMatchesAligned(t *testing.T) {
	defer func(m int) { deltaCopyMin = m }(deltaCopyMin)
	for _, w := range []Windows{
		Hopping(10*time.Second, 2*time.Second),
		Hopping(3*time.Second, time.Second),
		Hopping(4*time.Second, time.Second).WithOffset(300 * time.Millisecond),
	} {
		if !sliced(w, true) {
			t.Fatalf("%v is not sliced", w)
		}
		for seed := int64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("%v/%d", w, seed), func(t *testing.T) {
				deltaCopyMin = []int{1 << 30, 4}[seed%2] // deltas only; deltas replaced by copies
				testSlicedWindow(t, w, seed)
			})
		}
	}
}

func testSlicedWindow(t *testing.T, w Windows, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	late := seed%3 == 0 // encode only when checked
	ref, refOut, refM := newSliceTestOp(w, false, false)
	alignedSync, _, _ := newSliceTestOp(w, false, false)
	sync, _, _ := newSliceTestOp(w, true, false)
	op, out, opM := newSliceTestOp(w, true, true)

	// restored operators: each from a snapshot, with the index of the
	// reference's results from which its results must match.
	type restored struct {
		op   testWindowOp
		out  *resultSink[WindowResult[int64, int64]]
		from int
		what string
	}
	var rest []restored
	ownRestores := 0
	// since: the input after the last barrier, and from the reference's
	// results then, for an operator restored from its snapshot later.
	var since []*batch[keyed[int64, int64]]
	from := 0
	restoreFrom := func(s *taskSnapshot, what string) {
		r, rout, _ := newSliceTestOp(w, true, rng.Intn(2) == 0)
		if err := r.restore(s.States[0].Watermark, snapshotGroups(s)); err != nil {
			t.Fatal(err)
		}
		for _, b := range since {
			c := &batch[keyed[int64, int64]]{header: b.header, data: slices.Clone(b.data)}
			if err := r.push(c); err != nil {
				t.Fatal(err)
			}
		}
		rest = append(rest, restored{r, rout, from, what})
	}

	var pending chan error
	var want, got *taskSnapshot
	check := func() {
		if late {
			pending <- got.Resolve()
		}
		if err := <-pending; err != nil {
			t.Fatal(err)
		}
		pending = nil
		sameWindowSnapshot(t, got, want)
	}
	ts := int64(0)
	for step := 0; step < 600; step++ {
		b := newBatch[keyed[int64, int64]](64)
		wm := ts - 2000
		for i := rng.Intn(64); i > 0; i-- {
			ts += int64(rng.Intn(40))
			if rng.Intn(200) == 0 {
				ts += int64(rng.Intn(15000)) // a gap: several windows fire at once
			}
			quiet := step/50%2 == 1 // no record behind the watermark: slices stay as encoded
			rt := ts - int64(rng.Intn(2500))
			if quiet {
				rt = ts - int64(rng.Intn(300))
			} else if rng.Intn(20) == 0 {
				rt -= int64(rng.Intn(12000)) // late for some of its windows, or all
			}
			k := int64(rng.Intn(300))
			b.data = append(b.data, keyed[int64, int64]{hash: uint64(k) * 0x9e3779b97f4a7c15, key: k, val: 1})
			b.ts = append(b.ts, rt)
			wm = max(wm, ts-2000)
			b.wm = append(b.wm, wm)
		}
		b.watermark = wm
		ops := []testWindowOp{ref, alignedSync, sync, op}
		for _, r := range rest {
			ops = append(ops, r.op)
		}
		for _, o := range ops {
			c := &batch[keyed[int64, int64]]{header: b.header, data: slices.Clone(b.data)}
			if err := o.push(c); err != nil {
				t.Fatal(err)
			}
		}
		since = append(since, b)
		switch {
		case pending != nil && rng.Intn(4) == 0:
			check()
			if rng.Intn(3) == 0 && ownRestores < 2 {
				restoreFrom(got, "its own snapshot")
				ownRestores++
			}
		case pending == nil && rng.Intn(6) == 0:
			id := int64(step)
			since, from = since[:0], len(refOut.got)
			want, got = &taskSnapshot{}, &taskSnapshot{}
			if err := sync.barrier(&barrierMsg{ID: id}, want); err != nil {
				t.Fatal(err)
			}
			if err := op.barrier(&barrierMsg{ID: id}, got); err != nil {
				t.Fatal(err)
			}
			if len(got.Deferred) != 1 {
				t.Fatalf("%d deferred state files, want 1", len(got.Deferred))
			}
			if rng.Intn(4) == 0 && len(rest)-ownRestores < 2 {
				as := &taskSnapshot{}
				if err := alignedSync.barrier(&barrierMsg{ID: id}, as); err != nil {
					t.Fatal(err)
				}
				restoreFrom(as, "the aligned operator's snapshot")
			}
			if rng.Intn(5) == 0 {
				continue // aborted: never encoded; the next barrier takes the tables back
			}
			pending = make(chan error, 1)
			if !late {
				go func(s *taskSnapshot, done chan<- error) { done <- s.Resolve() }(got, pending)
			}
		}
	}
	if pending != nil {
		check()
	}
	ops := []testWindowOp{ref, op}
	for _, r := range rest {
		ops = append(ops, r.op)
	}
	for _, o := range ops {
		if err := o.advance(watermark.Max); err != nil {
			t.Fatal(err)
		}
		if err := o.emit(watermark.Max); err != nil {
			t.Fatal(err)
		}
	}
	if len(refOut.got) == 0 || refM.LateDropped.Load() == 0 {
		t.Fatalf("%d results, %d dropped: the test does not reach the firing or the late path", len(refOut.got), refM.LateDropped.Load())
	}
	if g, w := sortedResults(out.got), sortedResults(refOut.got); !slices.Equal(g, w) {
		t.Fatalf("sliced results differ from the aligned operator's: %d against %d", len(g), len(w))
	}
	if g, w := opM.LateDropped.Load(), refM.LateDropped.Load(); g != w {
		t.Fatalf("sliced operator dropped %d, the aligned one %d", g, w)
	}
	for _, r := range rest {
		if g, w := sortedResults(r.out.got), sortedResults(refOut.got[r.from:]); !slices.Equal(g, w) {
			t.Fatalf("restored from %s: %d results against %d", r.what, len(g), len(w))
		}
	}
	reused := op.(*slicedWindowOp[int64, int64, int64, int64]).reused
	if reused == 0 || ownRestores == 0 || ownRestores == len(rest) {
		t.Fatalf("%d encodings reused, %d restores of %d from the sliced operator's snapshots: the test does not reach them all", reused, ownRestores, len(rest))
	}
	t.Logf("%d results, %d dropped, %d encodings reused, %d restores (%d from the aligned operator)", len(refOut.got), refM.LateDropped.Load(), reused, len(rest), len(rest)-ownRestores)
}

// A merge makes room for the slice it merges before it upserts: the
// slices' keys come in hash order, and into a merged table without room
// they piled up into one cluster that moved along with the walk (q5's
// first merge of a slice of 275 K auctions took 1.1 s, against 8 ms with
// room; the doubling midway then spreads the cluster out again, so the
// table after the merge does not show it). Here two slices of as many
// different keys each (as q5's hold different auctions) are merged into
// a table made for the first one: before each merge's upserts the table
// must hold its keys and the slice's, and have as many slots as the
// slice's table.
func TestSliceMergeMakesRoom(t *testing.T) {
	const n = 140_000
	op, _, _ := newSliceTestOp(Hopping(4*time.Second, 2*time.Second), true, false)
	s := op.(*slicedWindowOp[int64, int64, int64, int64])
	b := newBatch[keyed[int64, int64]](2 * n)
	for i := int64(0); i < 2*n; i++ {
		b.data = append(b.data, keyed[int64, int64]{hash: keygroup.Word64(uint64(i)), key: i})
		b.ts = append(b.ts, i/n*2000) // the first n keys in slice [0, 2 s), the others in [2 s, 4 s)
		b.wm = append(b.wm, watermark.Min)
	}
	b.watermark = watermark.Min
	if err := s.push(b); err != nil {
		t.Fatal(err)
	}
	merges := 0
	defer func() { mergeRoom = nil }()
	mergeRoom = func(dst interface {
		Len() int
		Cap() int
	}, n, c int) {
		merges++
		if dst.Cap() < c || 4*(dst.Len()+n) > 3*dst.Cap() {
			t.Errorf("merge %d: %d keys into a table of %d keys in %d slots (the slice's table: %d slots)", merges, n, dst.Len(), dst.Cap(), c)
		}
	}
	s.lastLen = n // the window before held one slice's keys
	s.next, s.nextTab = nil, nil
	s.seed(4000)
	if merges != 2 || s.next.tab.Len() != 2*n {
		t.Fatalf("%d merges, %d keys merged; want 2 and %d", merges, s.next.tab.Len(), 2*n)
	}
}
