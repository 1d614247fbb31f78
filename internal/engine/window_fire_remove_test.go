package engine

import (
	"testing"
	"time"

	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// keysAtPush records, at each push of results, how many keys the window
// operator still holds.
type keysAtPush struct {
	op    *sumOp
	rows  int
	seen  []int // keys held at each push with results
	final int   // keys held at the last push
}

func (s *keysAtPush) push(b *batch[string]) error {
	if len(b.data) > 0 {
		s.seen = append(s.seen, s.op.keys.Len())
		s.rows += len(b.data)
	}
	s.final = s.op.keys.Len()
	return nil
}
func (s *keysAtPush) finish() error                            { return nil }
func (s *keysAtPush) barrier(*barrierMsg, *taskSnapshot) error { return nil }

// Firing a tumbling window of many keys sends its full batches of results
// downstream before it removes any of the fired keys: the removal (a hash
// table delete per key) runs once the whole window has fired, so no result
// waits for the removal of the keys fired before it. The keys are all gone
// once the watermark's batch ends.
func TestFixedFiringRemovesAfterResults(t *testing.T) {
	const keys, size = 100, 8
	var now int64
	op, _ := newTestSumOp(Tumbling(10*time.Second), EventTimeTrigger(), 0, false, true, &now)
	sink := &keysAtPush{op: op}
	op.winOut = winOut[int64, int64, string]{out: sink, ob: newBatch[string](size), batchSize: size, sentWM: watermark.Min, m: &metrics.Operator{}}
	in := newBatch[keyed[int64, int64]](keys)
	for k := int64(0); k < keys; k++ {
		in.add(keyed[int64, int64]{hash: uint64(k) * 0x9E3779B97F4A7C15, key: k, val: k}, 1000+k, 0)
	}
	if err := op.push(in); err != nil {
		t.Fatal(err)
	}
	in.reset()
	sink.seen = nil
	in.watermark = 10_000 // past the window [0, 10 s)
	if err := op.push(in); err != nil {
		t.Fatal(err)
	}
	if sink.rows != keys {
		t.Fatalf("%d results, want %d", sink.rows, keys)
	}
	if len(sink.seen) < keys/size {
		t.Fatalf("results in %d pushes, want at least %d full batches", len(sink.seen), keys/size)
	}
	for i, n := range sink.seen[:keys/size] {
		if n != keys {
			t.Fatalf("push %d of the window's full batches: the operator held %d keys, want all %d (keys removed before the window finished firing)", i, n, keys)
		}
	}
	if sink.final != 0 || op.keys.Len() != 0 {
		t.Fatalf("after the firing the operator holds %d keys, want 0", op.keys.Len())
	}
}

// lastRowSink records when it last received results.
type lastRowSink struct {
	rows int
	last time.Time
}

func (s *lastRowSink) push(b *batch[int64]) error {
	if len(b.data) > 0 {
		s.rows += len(b.data)
		s.last = time.Now()
	}
	return nil
}
func (s *lastRowSink) finish() error                            { return nil }
func (s *lastRowSink) barrier(*barrierMsg, *taskSnapshot) error { return nil }

// BenchmarkGenWindowFireResults fires a tumbling window of 200 K keys in the
// general window operator, as BenchmarkGenWindowFire, and reports per key
// the time until the last full batch of results went downstream
// (ns/key-to-results: what the window's rows wait for, but the last partial
// batch) beside the whole firing (ns/key).
func BenchmarkGenWindowFireResults(b *testing.B) {
	const keys = 200_000
	sink := &lastRowSink{}
	var toResults, total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		op := newFireBenchOp(sink)
		pushScattered(b, op.push, keys)
		b.StartTimer()
		start := time.Now()
		if err := op.advance(10_000); err != nil {
			b.Fatal(err)
		}
		end := time.Now()
		toResults += sink.last.Sub(start)
		total += end.Sub(start)
	}
	b.ReportMetric(float64(toResults.Nanoseconds())/float64(b.N*keys), "ns/key-to-results")
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*keys), "ns/key")
}
