package weir_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// BenchmarkStateProcessWindows is BenchmarkStateWindows's input through a
// ProcessWindow that counts each window's events, over a 1 s tumbling
// window and 50 ms sessions, on the heap (the general window operator)
// and on PebbleState (process functions with each window's events a list
// in Pebble, window_state_process.go): b.N events, 100 a millisecond over
// 10 K keys; parallelism 1. ns/op is per event.
//
//	go test -run XXX -bench StateProcessWindows -benchtime 1000000x .
func BenchmarkStateProcessWindows(b *testing.B) {
	for _, w := range []weir.Windows{weir.Tumbling(time.Second), weir.Session(50 * time.Millisecond)} {
		for _, backend := range []string{"heap", "pebble"} {
			b.Run(fmt.Sprintf("%v/%s", w, backend), func(b *testing.B) {
				opts := []weir.JobOption{weir.Parallelism(1)}
				if backend == "pebble" {
					opts = append(opts, weir.PebbleState(b.TempDir(), 64<<20))
				}
				job := weir.NewJob("bench", opts...)
				gen := weir.GeneratorSource(weir.GeneratorConfig{Count: int64(b.N), Seed: 1}, func(i int64, _ *rand.Rand) ev {
					return ev{Key: keyNames[i*7919%int64(len(keyNames))], TS: i / 100}
				})
				src := weir.FromSource(job, "gen", gen, weir.MonotonousTimestamps(func(e ev) time.Time { return time.UnixMilli(e.TS) }))
				counts := weir.ProcessWindow(weir.Window(weir.KeyBy(src, func(e ev) string { return e.Key }), w),
					func(_ string, _ weir.WindowInfo, evs []ev, emit func(int64)) error {
						emit(int64(len(evs)))
						return nil
					})
				var n int64
				weir.To(counts, weir.SinkFunc[int64](func(_ context.Context, rs []int64) error {
					for _, r := range rs {
						n += r
					}
					return nil
				}))
				b.ResetTimer()
				if err := job.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
				if n != int64(b.N) {
					b.Fatalf("counted %d events of %d", n, b.N)
				}
			})
		}
	}
}
