package engine

import (
	"runtime"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/watermark"
)

// BenchmarkSessionStateGC is the garbage collector's cost of a session
// window's state: the time of a full collection (runtime.GC, on every
// core) with 400 K open sessions, a tenth of the keys with a second one
// (Nexmark q11's state at 3 M events/s, per subtask), against the same
// collection with the state gone. Reported as ms per GC and ns per key.
func BenchmarkSessionStateGC(b *testing.B) {
	op := sessionCountOp(10*time.Second, &discardSink[int64]{})
	const keys = 400_000
	in := newBatch[keyed[int64, int64]](1024)
	add := func(k, ts int64) {
		in.add(keyed[int64, int64]{hash: uint64(k) * 0x9E3779B97F4A7C15, key: k, val: k}, ts, watermark.Min)
		if len(in.data) == 1024 {
			if err := op.push(in); err != nil {
				b.Fatal(err)
			}
			in.reset()
		}
	}
	for k := int64(0); k < keys; k++ {
		add(k, 1000)
	}
	for k := int64(0); k < keys; k += 10 {
		add(k, 30_000) // beyond the gap: a second session
	}
	if err := op.push(in); err != nil {
		b.Fatal(err)
	}
	gc := func() time.Duration {
		start := time.Now()
		runtime.GC()
		return time.Since(start)
	}
	gc()
	var with, without time.Duration
	for b.Loop() {
		with += gc()
	}
	runtime.KeepAlive(op)
	n := b.N
	b.StopTimer()
	op = nil
	gc()
	for range n {
		without += gc()
	}
	per := float64(with-without) / float64(n)
	b.ReportMetric(float64(with)/float64(n)/1e6, "gc-ms")
	b.ReportMetric(per/keys, "ns/key")
}

// BenchmarkSessionPush is the cost per event of adding events to 400 K
// open sessions (Nexmark q11's state per subtask), keys in random order,
// with and without push's prefetch of the table slots ahead.
func BenchmarkSessionPush(b *testing.B) {
	for _, pf := range []bool{false, true} {
		name := "noprefetch"
		if pf {
			name = "prefetch"
		}
		b.Run(name, func(b *testing.B) {
			op := sessionCountOp(10*time.Second, &discardSink[int64]{})
			op.noPrefetch = !pf
			const keys = 400_000
			in := newBatch[keyed[int64, int64]](1024)
			r := uint64(1)
			fill := func(ts int64) {
				in.reset()
				for range 1024 {
					r = r*6364136223846793005 + 1442695040888963407
					k := int64(r>>33) % keys
					in.add(keyed[int64, int64]{hash: uint64(k) * 0x9E3779B97F4A7C15, key: k, val: k}, ts, watermark.Min)
				}
			}
			for ts := int64(0); op.keys.Len() < keys*9/10; ts++ {
				fill(1000 + ts%1000)
				if err := op.push(in); err != nil {
					b.Fatal(err)
				}
			}
			n := 0
			for b.Loop() {
				fill(1000 + int64(n%1000))
				n++
				if err := op.push(in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*1024), "ns/event")
		})
	}
}
