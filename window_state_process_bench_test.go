package weir_test

import (
	"fmt"
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
				n, _ := benchWindowCounts(b, backend, func(ks *weir.KeyedStream[string, ev]) *weir.Stream[int64] {
					return weir.ProcessWindow(weir.Window(ks, w),
						func(_ string, _ weir.WindowInfo, evs []ev, emit func(int64)) error {
							emit(int64(len(evs)))
							return nil
						})
				}, func(c int64) int64 { return c })
				if n != int64(b.N) {
					b.Fatalf("counted %d events of %d", n, b.N)
				}
			})
		}
	}
}
