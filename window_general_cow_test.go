package weir

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/codec"
)

// genSnapEntries decodes a general window snapshot's key groups, one
// string per key, sorted (a restored table lists its keys in another
// order).
func genSnapEntries(t *testing.T, groups map[int][]byte) []string {
	t.Helper()
	var out []string
	for _, kg := range slices.Sorted(maps.Keys(groups)) {
		err := codec.EachEntry([][]byte{groups[kg]}, func(e genEntry[int64, int64, int64]) {
			out = append(out, fmt.Sprintf("%d %d %+v", e.Hash, e.Key, e.Wins))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(out)
	return out
}

// The general window operator's deferred snapshot is copy-on-write
// (window_general_cow.go): the barrier only lists the keys, the
// coordinator copies them while the task goes on, and the task copies a
// key before it changes it. With random input (disorder, late events,
// sessions that merge, tumbling and sliding windows firing, purging and
// processing-time triggers on an injected clock), barriers at random
// batches, and each snapshot encoded on another goroutine that stops
// halfway through its walk while the task processes more batches (so
// that both sides copy keys), or runs alongside the task, or never runs
// (an aborted checkpoint): every snapshot must hold the bytes a
// synchronous snapshot writes at the same barrier, restore to that state,
// and the operator's results must be those of one that takes no
// snapshots. Under -race, a change of a key the coordinator reads is
// reported too.
func TestGenWindowCopyOnWrite(t *testing.T) {
	defer func() { cowWalkHook = nil }()
	type config struct {
		w        Windows
		trig     WindowTrigger
		lateness int64
	}
	configs := []config{
		{Session(300 * time.Millisecond), EventTimeTrigger(), 0},
		{Session(300 * time.Millisecond), EventTimeTrigger().WithEarlyFirings(40 * time.Millisecond), 200},
		{Tumbling(500 * time.Millisecond), EventTimeTrigger(), 300},
		{Tumbling(500 * time.Millisecond), CountTrigger(3).Purging(), 0},
		{Hopping(600*time.Millisecond, 200*time.Millisecond), EventTimeTrigger(), 0},
		{Hopping(600*time.Millisecond, 200*time.Millisecond), ProcessingTimeTrigger(), 0},
	}
	for _, cf := range configs {
		for seed := uint64(1); seed <= 3; seed++ {
			name := fmt.Sprintf("%v/%v/lateness%d/%d", cf.w, cf.trig, cf.lateness, seed)
			t.Run(name, func(t *testing.T) {
				testGenWindowCopyOnWrite(t, seed, cf.w, cf.trig, cf.lateness)
			})
		}
	}
}

func testGenWindowCopyOnWrite(t *testing.T, seed uint64, w Windows, trig WindowTrigger, lateness int64) {
	rng := rand.New(rand.NewPCG(seed, 11))
	clock := int64(1000)
	ref, refOut := newTestSumOp(w, trig, lateness, true, true, &clock)
	syncOp, _ := newTestSumOp(w, trig, lateness, true, true, &clock)
	op, out := newTestSumOp(w, trig, lateness, true, true, &clock)
	op.async = true
	ops := []*sumOp{ref, syncOp, op}

	var maxTS int64
	step := func() {
		clock += rng.Int64N(30)
		b := newBatch[keyed[int64, int64]](32)
		for j := rng.IntN(32); j > 0; j-- {
			ts := maxTS + rng.Int64N(40) - 25
			if rng.IntN(12) == 0 {
				ts -= 400 // late, maybe within the lateness
			}
			maxTS = max(maxTS, ts)
			k := rng.Int64N(150)
			b.add(keyed[int64, int64]{hash: uint64(k) * 0x9E3779B97F4A7C15, key: k, val: rng.Int64N(100)}, ts, 0)
		}
		wm := maxTS - 30 - rng.Int64N(60)
		for _, o := range ops {
			if err := o.onProcessingTime(clock); err != nil {
				t.Fatal(err)
			}
			c := newBatch[keyed[int64, int64]](len(b.data))
			for i := range b.data {
				c.add(b.data[i], b.ts[i], max(wm, o.wm))
			}
			c.watermark = max(wm, o.wm)
			if err := o.push(c); err != nil {
				t.Fatal(err)
			}
		}
	}
	// check compares the resolved snapshot got with the synchronous one,
	// want, and restores it.
	checked := 0
	check := func(want, got *taskSnapshot) {
		t.Helper()
		if len(want.States) != 1 || len(got.States) != 1 {
			t.Fatalf("states: %d deferred, %d synchronous", len(got.States), len(want.States))
		}
		g, wt := got.States[0], want.States[0]
		if g.Watermark != wt.Watermark || len(g.Groups) != len(wt.Groups) {
			t.Fatalf("state file: watermark %d, %d key groups; want %d, %d", g.Watermark, len(g.Groups), wt.Watermark, len(wt.Groups))
		}
		for kg, data := range wt.Groups {
			if !bytes.Equal(g.Groups[kg], data) {
				t.Fatalf("key group %d differs from the synchronous snapshot's:\n%v\nwant\n%v", kg,
					genSnapEntries(t, map[int][]byte{kg: g.Groups[kg]}), genSnapEntries(t, map[int][]byte{kg: data}))
			}
		}
		// Restored, the operator holds that state.
		var groups [][]byte
		for _, kg := range slices.Sorted(maps.Keys(g.Groups)) {
			groups = append(groups, g.Groups[kg])
		}
		r, _ := newTestSumOp(w, trig, lateness, true, true, &clock)
		if err := r.restore(g.Watermark, groups); err != nil {
			t.Fatal(err)
		}
		again := &taskSnapshot{}
		if err := r.barrier(&barrierMsg{ID: 1}, again); err != nil {
			t.Fatal(err)
		}
		if a, w := genSnapEntries(t, again.States[0].Groups), genSnapEntries(t, wt.Groups); !slices.Equal(a, w) {
			t.Fatalf("restored:\n%s\nwant\n%s", strings.Join(a, "\n"), strings.Join(w, "\n"))
		}
		checked++
	}

	var want, got *taskSnapshot
	var done chan error
	const steps = 300
	for i := 0; i < steps; i++ {
		step()
		if done != nil {
			if rng.IntN(3) > 0 {
				continue
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			done = nil
			check(want, got)
		}
		if rng.IntN(6) > 0 {
			continue
		}
		want, got = &taskSnapshot{}, &taskSnapshot{}
		if err := syncOp.barrier(&barrierMsg{ID: int64(i)}, want); err != nil {
			t.Fatal(err)
		}
		if err := op.barrier(&barrierMsg{ID: int64(i)}, got); err != nil {
			t.Fatal(err)
		}
		if len(got.States) != 0 || len(got.Deferred) != 1 {
			t.Fatalf("%d states, %d deferred; want 0 and 1", len(got.States), len(got.Deferred))
		}
		nkeys := len(op.cow.keys)
		switch mode := rng.IntN(4); {
		case mode == 0:
			continue // aborted: never encoded
		case mode == 1 || nkeys == 0:
			// The coordinator runs alongside the task.
			cowWalkHook = nil
			done = make(chan error, 1)
			go func(s *taskSnapshot) { done <- s.Resolve() }(got)
		default:
			// The coordinator stops at a random key while the task runs
			// more batches, then finishes.
			at := rng.IntN(nkeys)
			paused, resume := make(chan struct{}), make(chan struct{})
			cowWalkHook = func(k int) {
				if k == at {
					close(paused)
					<-resume
				}
			}
			res := make(chan error, 1)
			go func(s *taskSnapshot) { res <- s.Resolve() }(got)
			<-paused
			for n := 1 + rng.IntN(4); n > 0 && i < steps; n-- {
				step()
				i++
			}
			close(resume)
			if err := <-res; err != nil {
				t.Fatal(err)
			}
			cowWalkHook = nil
			check(want, got)
		}
	}
	if done != nil {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		check(want, got)
	}
	for _, o := range []*sumOp{ref, op} {
		if err := o.advance(1 << 40); err != nil {
			t.Fatal(err)
		}
		if err := o.endBatch(1<<40, false); err != nil {
			t.Fatal(err)
		}
	}
	if checked < 5 || len(refOut.lines) < 50 {
		t.Fatalf("%d snapshots checked, %d lines of output: the test exercises too little", checked, len(refOut.lines))
	}
	if !slices.Equal(out.lines, refOut.lines) {
		t.Fatalf("results differ from the operator without snapshots:\n%s\nwant\n%s", strings.Join(out.lines, "\n"), strings.Join(refOut.lines, "\n"))
	}
}
