package engine

import (
	"strconv"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// pairSide, pairWin and pairAgg are nexmark q8's aggregate in small: per key
// and window, whether an auction came and the name of the person.
type pairSide struct {
	ID      int64
	Name    string
	Auction bool
}

type pairWin struct {
	Person, Auction bool
	Name            string
	More            []string
}

type pairAgg struct{}

func (pairAgg) Create() pairWin { return pairWin{} }
func (pairAgg) Add(a pairWin, s pairSide) pairWin {
	if s.Auction {
		a.Auction = true
	} else {
		a.Person, a.Name = true, s.Name
	}
	return a
}
func (pairAgg) Merge(a, _ pairWin) pairWin { return a }
func (pairAgg) Result(a pairWin) pairWin   { return a }
func (pairAgg) IdentityResult()            {}

type pairRow struct {
	ID         int64
	Name       string
	Start, End int64
}

// countingSink counts the records pushed to it.
type countingSink[T any] struct{ n int }

func (s *countingSink[T]) push(b *batch[T]) error { s.n += len(b.data); return nil }
func (s *countingSink[T]) finish() error          { return nil }

// BenchmarkAlignedFireRows is the firing of one of q8's windows on a
// subtask: 600,000 keys with a string and a slice in their accumulators
// (a table larger than the caches), fired into a FlatMap that keeps the
// third of them with both sides as rows, as q8 does. ns/key is the walk,
// the result, the batches and the FlatMap per key; the filling is not
// timed.
func BenchmarkAlignedFireRows(b *testing.B) {
	const keys = 600_000
	names := make([]string, keys)
	for i := range names {
		names[i] = "name " + strconv.Itoa(i)
	}
	var fire time.Duration
	for range b.N {
		b.StopTimer()
		sink := &countingSink[pairRow]{}
		fm := &flatMapOp[WindowResult[int64, pairWin], pairRow]{out: sink, ob: newBatch[pairRow](1024), size: 1024, m: &metrics.Operator{},
			fn: func(r WindowResult[int64, pairWin], emit func(pairRow)) {
				if v := &r.Value; v.Person && v.Auction {
					emit(pairRow{r.Key, v.Name, r.Start.UnixMilli(), r.End.UnixMilli()})
				}
			}}
		fm.emit = fm.add
		op := &alignedWindowOp[int64, pairSide, pairWin, pairWin]{
			winOut: winOut[int64, pairSide, WindowResult[int64, pairWin]]{out: fm, ob: newBatch[WindowResult[int64, pairWin]](1024),
				batchSize: 1024, sentWM: watermark.Min, m: &metrics.Operator{}},
			w: Tumbling(10 * time.Second), agg: pairAgg{}, wm: watermark.Min, nextFire: watermark.Max, ident: identityResult[pairWin, pairWin](pairAgg{}),
			info: opInfo{uid: "w", name: "w", maxP: 128},
		}
		bk := op.bucket(0, 10000, 0)
		for i := range int64(keys) {
			key := int64(uint64(i) * 0x9e3779b97f4a7c15 >> 1)
			p, _ := op.upsert(bk, uint64(key)*0xff51afd7ed558ccd, key)
			if i%3 != 0 {
				*p = op.agg.Add(*p, pairSide{ID: key, Name: names[i]})
			}
			if i%3 != 1 {
				*p = op.agg.Add(*p, pairSide{ID: key, Auction: true})
			}
		}
		b.StartTimer()
		t0 := time.Now()
		if err := op.advance(9999); err != nil {
			b.Fatal(err)
		}
		fire += time.Since(t0)
		if err := op.endBatch(9999, false); err != nil {
			b.Fatal(err)
		}
		if sink.n != keys/3 {
			b.Fatalf("%d rows, want %d", sink.n, keys/3)
		}
	}
	b.ReportMetric(float64(fire.Nanoseconds())/float64(b.N)/keys, "ns/key")
	b.ReportMetric(float64(fire.Microseconds())/1000/float64(b.N), "fire-ms")
}
