package engine

import (
	"fmt"
	"testing"

	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/pebblestate"
)

// newPebbleStateBench is newStateBench over a Pebble backend in a
// temporary directory.
func newPebbleStateBench(tb testing.TB, nkeys int, budget int64) *stateBench {
	sb := newStateBench(tb, nkeys)
	be, err := pebblestate.Open(pebblestate.Options{Dir: tb.TempDir(), MemoryBudget: budget, RemoveOnClose: true},
		state.Config{MaxParallelism: 128, KeyGroups: state.KeyGroupRange{Start: 0, End: 128}, Now: func() int64 { return sb.clock }})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { be.Close() })
	sb.rc.backend = be
	return sb
}

// The hot paths of keyed state on both backends: per record, a ValueState
// read and update, a MapState put, an event-time timer registered (and the
// earliest popped, keeping 10,000).
func BenchmarkStateBackends(b *testing.B) {
	for _, be := range []string{"heap", "pebble"} {
		mk := func(b *testing.B, n int) *stateBench {
			if be == "pebble" {
				return newPebbleStateBench(b, n, 64<<20)
			}
			return newStateBench(b, n)
		}
		b.Run(be+"/ValueUpdate", func(b *testing.B) {
			sb := mk(b, 100000)
			s := NewValueState[int64](sb.rc, "count")
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				sb.key(i)
				n, _ := s.Value()
				s.Update(n + 1)
			}
		})
		b.Run(be+"/MapPut", func(b *testing.B) {
			sb := mk(b, 100000)
			s := NewMapState[int64, string](sb.rc, "m")
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				sb.key(i)
				s.Put(int64(i%16), "value")
			}
		})
		b.Run(be+"/ListAdd", func(b *testing.B) {
			sb := mk(b, 100000)
			s := NewListState[int64](sb.rc, "l")
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				sb.key(i)
				s.Add(int64(i))
			}
		})
		b.Run(be+"/TimerRegisterPop", func(b *testing.B) {
			sb := mk(b, 100000)
			q, err := state.NewTimerQueue[string, state.VoidNamespace](sb.rc.backend, "t")
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				sb.key(i)
				q.Register(sb.cur.hash, sb.cur.key, void, int64(i))
				if q.Len() > 10000 {
					q.Pop()
				}
			}
		})
	}
}

// BenchmarkSnapshot snapshots (and restores) 100,000 keys' ValueState and
// 4-entry MapState, every key group, as a checkpoint barrier and a restore
// do; it reports the snapshot's size.
func BenchmarkSnapshot(b *testing.B) {
	for _, be := range []string{"heap", "pebble"} {
		var sb *stateBench
		if be == "pebble" {
			sb = newPebbleStateBench(b, 100000, 64<<20)
		} else {
			sb = newStateBench(b, 100000)
		}
		v := NewValueState[int64](sb.rc, "count")
		m := NewMapState[int64, string](sb.rc, "m")
		for i := range 100000 {
			sb.key(i)
			v.Update(int64(i))
			for j := range 4 {
				m.Put(int64(j), fmt.Sprint("v", i))
			}
		}
		var size int
		var groups [][]byte
		b.Run(be+"/snapshot", func(b *testing.B) {
			for b.Loop() {
				size, groups = 0, groups[:0]
				for kg := range 128 {
					data, err := state.SnapshotKeyGroup(sb.rc.backend, kg)
					if err != nil {
						b.Fatal(err)
					}
					size += len(data)
					groups = append(groups, data)
				}
			}
			b.ReportMetric(float64(size), "bytes")
		})
		b.Run(be+"/restore", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				var rb *stateBench
				if be == "pebble" {
					rb = newPebbleStateBench(b, 1, 64<<20)
				} else {
					rb = newStateBench(b, 1)
				}
				NewValueState[int64](rb.rc, "count")
				NewMapState[int64, string](rb.rc, "m")
				b.StartTimer()
				if err := state.RestoreKeyGroups(rb.rc.backend, groups); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
