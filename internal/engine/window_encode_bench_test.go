package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// encPerson and encAuction have the shape of Nexmark's Person and Auction
// (strings padded to about 200 and 500 bytes), for a CoGroup state like q8's.
type encPerson struct {
	ID                                       int64
	Name, EmailAddress, CreditCard, City, St string
	DateTime                                 int64
	Extra                                    string
}

type encAuction struct {
	ID                                             int64
	ItemName, Description                          string
	InitialBid, Reserve, DateTime, Expires, Seller int64
	Category                                       int64
	Extra                                          string
}

type encEvent = tagged[encPerson, encAuction]

type encOp = genWindowOp[int64, encEvent, []encEvent, []encEvent, string]

// newEncOp is q8's co-group operator over keys keys, events per key
// events (one person, the rest auctions), all in one tumbling window.
func newEncOp(b *testing.B, keys, events int) *encOp {
	op := &encOp{
		winOut: winOut[int64, encEvent, string]{out: &collectSink[string]{}, ob: newBatch[string](8), batchSize: 8, sentWM: watermark.Min, m: &metrics.Operator{}},
		w:      Tumbling(10 * time.Second), agg: readOnlyCollect[encEvent]{}, trig: EventTimeTrigger(),
		render: func(func(string), int64, *gwin[[]encEvent, []encEvent], ChangeKind, []encEvent) error { return nil },
		now:    func() int64 { return 0 }, info: opInfo{uid: "q8", name: "q8", maxP: 128}, async: true,
	}
	op.init()
	pad := strings.Repeat("x", 150)
	in := newBatch[keyed[int64, encEvent]](1024)
	flush := func() {
		if err := op.push(in); err != nil {
			b.Fatal(err)
		}
		in.reset()
	}
	for e := 0; e < events; e++ {
		for k := int64(0); k < int64(keys); k++ {
			ev := encEvent{IsRight: e > 0}
			if e == 0 {
				ev.Left = encPerson{ID: k, Name: "name", EmailAddress: "someone@example.com", CreditCard: "1234 5678 9012 3456", City: "Boise", St: "ID", DateTime: 1000, Extra: pad}
			} else {
				ev.Right = encAuction{ID: k*10 + int64(e), ItemName: "item", Description: "a description", Seller: k, DateTime: 1000, Extra: pad + pad + pad}
			}
			in.add(keyed[int64, encEvent]{hash: uint64(k) * 0x9E3779B97F4A7C15, key: k, val: ev}, 1000+k%5000, 0)
			if len(in.data) == cap(in.data) {
				flush()
			}
		}
	}
	flush()
	return op
}

// BenchmarkGenWindowEncode is the deferred encoding of the general window
// operator's state at a checkpoint (q8's, on the checkpoint coordinator's
// goroutine): 20 K keys of 5 events each (about 2.2 KB a key). "reuse":
// encoded again at every checkpoint while the window stays open, into the
// last checkpoint's buffers; "fresh": into new buffers each time, as at
// the first checkpoint, or whenever the state outgrew the last one.
func BenchmarkGenWindowEncode(b *testing.B) {
	const keys, events = 20_000, 5
	for _, fresh := range []bool{false, true} {
		name := "reuse"
		if fresh {
			name = "fresh"
		}
		b.Run(name, func(b *testing.B) {
			op := newEncOp(b, keys, events)
			b.ReportAllocs()
			b.ResetTimer()
			var bytes int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if fresh {
					op.snap = codec.GroupWriter[genEntry[int64, []encEvent, []encEvent]]{}
				}
				s := &taskSnapshot{}
				if err := op.barrier(&barrierMsg{ID: int64(i + 1)}, s); err != nil {
					b.Fatal(err)
				}
				op.copyRest()
				b.StartTimer()
				if err := s.Resolve(); err != nil {
					b.Fatal(err)
				}
				bytes = 0
				for _, g := range s.States[0].Groups {
					bytes += int64(len(g))
				}
			}
			b.SetBytes(bytes)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys*events), "ns/event")
		})
	}
}

// splitAlloc is CoGroup's split of a window's events before slabs: two
// lists allocated per key.
func splitAlloc[L, R any](evs []tagged[L, R]) ([]L, []R) {
	nr := 0
	for i := range evs {
		if evs[i].IsRight {
			nr++
		}
	}
	var ls []L
	var rs []R
	if nl := len(evs) - nr; nl > 0 {
		ls = make([]L, 0, nl)
	}
	if nr > 0 {
		rs = make([]R, 0, nr)
	}
	for i := range evs {
		if evs[i].IsRight {
			rs = append(rs, evs[i].Right)
		} else {
			ls = append(ls, evs[i].Left)
		}
	}
	return ls, rs
}

// BenchmarkCoGroupLists is CoGroup's work per key when a window fires
// (Nexmark q8's shape: one person and a few auctions a key): the two lists
// of each side's events, allocated per key ("alloc", before) or cut from
// slabs ("slab").
func BenchmarkCoGroupLists(b *testing.B) {
	evs := make([]encEvent, 4)
	evs[0].Left = encPerson{ID: 1, Name: "name", Extra: "x"}
	for i := 1; i < len(evs); i++ {
		evs[i] = encEvent{IsRight: true, Right: encAuction{ID: int64(i), Seller: 1, Extra: "y"}}
	}
	var sink int
	b.Run("alloc", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			ls, rs := splitAlloc(evs)
			sink += len(ls) + len(rs)
		}
	})
	b.Run("slab", func(b *testing.B) {
		var p coSlabPool[encPerson, encAuction]
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			ls, rs := p.split(evs)
			sink += len(ls) + len(rs)
		}
	})
	_ = sink
}
