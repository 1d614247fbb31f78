package weir_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// BenchmarkStateWindows is a tumbling count and a session count per key
// over the same events on the heap (weir's window operators) and on
// PebbleState (process functions with the windows in Pebble,
// window_state.go): b.N events, 100 a millisecond over 10 K keys, so a key
// has 10 events in a 1 s tumbling window and one in each 50 ms session;
// parallelism 1. ns/op is per event.
//
//	go test -run XXX -bench StateWindows -benchtime 1000000x .
func BenchmarkStateWindows(b *testing.B) {
	for _, w := range []weir.Windows{weir.Tumbling(time.Second), weir.Session(50 * time.Millisecond)} {
		for _, backend := range []string{"heap", "pebble"} {
			b.Run(fmt.Sprintf("%v/%s", w, backend), func(b *testing.B) {
				n, _ := benchWindowCounts(b, backend, func(ks *weir.KeyedStream[string, ev]) *weir.Stream[weir.WindowResult[string, int64]] {
					return weir.Aggregate(weir.Window(ks, w), weir.Count[ev]())
				}, windowCount)
				if n != int64(b.N) {
					b.Fatalf("counted %d events of %d", n, b.N)
				}
			})
		}
	}
}

// benchWindowCounts runs the window benchmarks' job: b.N events, 100 a
// millisecond over the 10 K keyNames, keyed by key, through the window
// operator build makes, at parallelism 1 on the heap or on PebbleState
// (backend "pebble"). It returns the sum of count over the results and
// their number.
func benchWindowCounts[R any](b *testing.B, backend string, build func(*weir.KeyedStream[string, ev]) *weir.Stream[R], count func(R) int64) (n, results int64) {
	b.Helper()
	opts := []weir.JobOption{weir.Parallelism(1)}
	if backend == "pebble" {
		opts = append(opts, weir.PebbleState(b.TempDir(), 64<<20))
	}
	job := weir.NewJob("bench", opts...)
	gen := weir.GeneratorSource(weir.GeneratorConfig{Count: int64(b.N), Seed: 1}, func(i int64, _ *rand.Rand) ev {
		return ev{Key: keyNames[i*7919%int64(len(keyNames))], TS: i / 100}
	})
	src := weir.FromSource(job, "gen", gen, weir.MonotonousTimestamps(func(e ev) time.Time { return time.UnixMilli(e.TS) }))
	weir.To(build(weir.KeyBy(src, func(e ev) string { return e.Key })), weir.SinkFunc[R](func(_ context.Context, rs []R) error {
		for _, r := range rs {
			n += count(r)
		}
		results += int64(len(rs))
		return nil
	}))
	b.ResetTimer()
	if err := job.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	return n, results
}

// windowCount is a count's result.
func windowCount(r weir.WindowResult[string, int64]) int64 { return r.Value }

// keyNames are the benchmark's 10 K keys.
var keyNames = func() []string {
	ks := make([]string, 10_000)
	for i := range ks {
		ks[i] = fmt.Sprintf("key-%05d", i)
	}
	return ks
}()
