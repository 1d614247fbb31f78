package engine

import (
	"runtime"
	"testing"
	"time"
)

// coPerson and coRow are the person and row of Nexmark q8's plan as a
// CoGroup (as it was planned before it became one aligned aggregate), a CoGroup with
// hundreds of thousands of keys a window; nexmark.Q8Row is the row, which
// this package cannot import.
type (
	coPerson struct {
		ID   int64
		Name string
	}
	coRow struct {
		ID    int64
		Name  string
		Start int64
	}
	coEvent = tagged[coPerson, int64]
)

// coRowSink counts the rows pushed to it and when the last came, in wall
// time and in the CPU time of the thread that pushed it (the firing's).
type coRowSink struct {
	rows    int
	last    time.Time
	lastCPU time.Duration
}

func (s *coRowSink) push(b *batch[coRow]) error {
	if len(b.data) > 0 {
		s.rows += len(b.data)
		s.last, s.lastCPU = time.Now(), threadCPU()
	}
	return nil
}
func (s *coRowSink) finish() error                            { return nil }
func (s *coRowSink) barrier(*barrierMsg, *taskSnapshot) error { return nil }

// newCoGroupFireOp is the operator CoGroup builds for Nexmark q8: the
// general window operator over Tumbling(10 s) collecting tagged events,
// rendered by processWindow's and CoGroup's own code (processRender,
// coGroupFn) into q8's function (one row per distinct name of a key with
// persons and sellers).
func newCoGroupFireOp(out consumer[coRow]) *genWindowOp[int64, coEvent, []coEvent, []coEvent, coRow] {
	q8 := func(id int64, w WindowInfo, ps []coPerson, sellers []int64, emit func(coRow)) error {
		if len(sellers) == 0 {
			return nil
		}
		for i, p := range ps {
			dup := false
			for _, q := range ps[:i] {
				dup = dup || q.Name == p.Name
			}
			if !dup {
				emit(coRow{id, p.Name, w.Start.UnixMilli()})
			}
		}
		return nil
	}
	return newCollectBenchOp(out, processRender(coGroupFn(q8)))
}

// pushQ8Shaped pushes q8's shape of a window to push: keys keys, five in
// six with a person, five in six with three auctions (so two in three with
// both, a row each), in four rounds over the keys in an order unlike their
// hash order, as a window's events arrive: a key's events come at
// different times, so its list grows among the others' on the heap.
func pushQ8Shaped(tb testing.TB, push func(*batch[keyed[int64, coEvent]]) error, keys int64) {
	tb.Helper()
	names := []string{"Peter Shultz", "Kate Jones", "Sarah White", "Julie Walton", "Deiter Smith", "Luke Abrams"}
	in := newBatch[keyed[int64, coEvent]](1024)
	flush := func() {
		if err := push(in); err != nil {
			tb.Fatal(err)
		}
		in.reset()
	}
	n := int64(0)
	for round := 0; round < 4; round++ {
		for k := int64(0); k < keys; k++ {
			key := (k * 7919) % keys
			var ev coEvent
			switch {
			case round == 0 && key%6 != 0:
				ev = coEvent{Left: coPerson{key, names[key%6]}}
			case round > 0 && key%6 != 1:
				ev = coEvent{IsRight: true, Right: key}
			default:
				continue
			}
			in.add(keyed[int64, coEvent]{hash: uint64(key) * 0x9E3779B97F4A7C15, key: key, val: ev}, 1000+n%5000, 0)
			n++
			if len(in.data) == cap(in.data) {
				flush()
			}
		}
	}
	flush()
}

// BenchmarkCoGroupFire fires a window of Nexmark q8's shape (200 K keys,
// about four events each) in CoGroup's operator, with and without the
// prefetching of the next keys' state and events (prefetchFire), and
// reports per key the time until the last full batch of rows went
// downstream (ns/key-to-results), the whole firing (ns/key), and both in
// the firing thread's CPU time (cpu-ns/key-to-results, cpu-ns/key: what to
// compare on a shared machine, where wall times move with the load).
func BenchmarkCoGroupFire(b *testing.B) {
	const keys = 200_000
	for _, c := range []struct {
		name       string
		noPrefetch bool
	}{{"prefetch", false}, {"none", true}} {
		b.Run(c.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			sink := &coRowSink{}
			var toResults, total, cpu, cpuToResults time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				op := newCoGroupFireOp(sink)
				op.noPrefetch = c.noPrefetch
				pushQ8Shaped(b, op.push, keys)
				sink.rows = 0
				b.StartTimer()
				start, cpu0 := time.Now(), threadCPU()
				if err := op.advance(10_000); err != nil {
					b.Fatal(err)
				}
				end := time.Now()
				cpu += threadCPU() - cpu0
				cpuToResults += sink.lastCPU - cpu0
				if want := keys * 4 / 6; sink.rows < want-1024 {
					b.Fatalf("%d rows before the end of the firing, want about %d", sink.rows, want)
				}
				toResults += sink.last.Sub(start)
				total += end.Sub(start)
			}
			b.ReportMetric(float64(toResults.Nanoseconds())/float64(b.N*keys), "ns/key-to-results")
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*keys), "ns/key")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*keys), "cpu-ns/key")
			b.ReportMetric(float64(cpuToResults.Nanoseconds())/float64(b.N*keys), "cpu-ns/key-to-results")
		})
	}
}
