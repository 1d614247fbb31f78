package adclicks

import "math"

// Baseline is the hand-written single-loop implementation of the workload
// (the "limit" harness of docs/workload.md): one goroutine, an
// open-addressing table per open window, watermark = max event time -
// delay, a window fires when the watermark reaches its end, events of
// fired windows are dropped.
type Baseline struct {
	size, delay int64
	maxTs, wm   int64
	lateEnd     int64
	open        []baseWindow
	free        []*oaTable
	last        int
	D           Digest
}

type baseWindow struct {
	start int64
	t     *oaTable
}

// NewBaseline returns the baseline operator.
func NewBaseline(size, delay int64) *Baseline {
	return &Baseline{size: size, delay: delay, maxTs: math.MinInt64, wm: math.MinInt64, lateEnd: math.MinInt64}
}

// Process handles one event: drop if late, count, advance the watermark.
func (e *Baseline) Process(ad, ts int64) {
	if ts < e.lateEnd {
		e.D.Dropped++
	} else {
		e.count(ad, ts)
	}
	if ts > e.maxTs {
		e.maxTs = ts
		e.advance(ts - e.delay)
	}
}

// Finish fires every open window.
func (e *Baseline) Finish() Digest {
	e.advance(math.MaxInt64)
	return e.D
}

func (e *Baseline) count(ad, ts int64) {
	if e.last < len(e.open) && uint64(ts-e.open[e.last].start) < uint64(e.size) {
		e.open[e.last].t.inc(ad)
		return
	}
	ws := WindowStart(ts, e.size)
	i := 0
	for i < len(e.open) && e.open[i].start < ws {
		i++
	}
	if i == len(e.open) || e.open[i].start != ws {
		var t *oaTable
		if n := len(e.free); n > 0 {
			t = e.free[n-1]
			e.free = e.free[:n-1]
		} else {
			t = newOA()
		}
		e.open = append(e.open, baseWindow{})
		copy(e.open[i+1:], e.open[i:])
		e.open[i] = baseWindow{start: ws, t: t}
	}
	e.last = i
	e.open[i].t.inc(ad)
}

func (e *Baseline) advance(wm int64) {
	if wm <= e.wm {
		return
	}
	e.wm = wm
	if wm == math.MaxInt64 {
		e.lateEnd = wm
	} else if e.lateEnd == math.MinInt64 || wm-e.lateEnd >= e.size {
		e.lateEnd = WindowStart(wm, e.size)
	}
	n := 0
	for n < len(e.open) && e.open[n].start+e.size <= wm {
		w := e.open[n]
		w.t.drain(w.start, &e.D)
		e.free = append(e.free, w.t)
		n++
	}
	if n > 0 {
		e.open = append(e.open[:0], e.open[n:]...)
		e.last = 0
	}
}

const emptyKey = math.MinInt64

type oaSlot struct{ k, v int64 }

type oaTable struct {
	slots []oaSlot
	mask  uint64
	shift uint
	used  int
}

func newOA() *oaTable {
	t := &oaTable{}
	t.alloc(1 << 10)
	return t
}

func (t *oaTable) alloc(n int) {
	t.slots = make([]oaSlot, n)
	for i := range t.slots {
		t.slots[i].k = emptyKey
	}
	t.mask = uint64(n - 1)
	bits := uint(0)
	for x := n - 1; x > 0; x >>= 1 {
		bits++
	}
	t.shift = 64 - bits
	t.used = 0
}

func (t *oaTable) inc(k int64) {
	i := (uint64(k) * 0x9e3779b97f4a7c15) >> t.shift
	for {
		s := &t.slots[i]
		if s.k == k {
			s.v++
			return
		}
		if s.k == emptyKey {
			s.k, s.v = k, 1
			t.used++
			if t.used*2 > len(t.slots) {
				t.grow()
			}
			return
		}
		i = (i + 1) & t.mask
	}
}

func (t *oaTable) grow() {
	old := t.slots
	t.alloc(len(old) * 2)
	for _, s := range old {
		if s.k == emptyKey {
			continue
		}
		i := (uint64(s.k) * 0x9e3779b97f4a7c15) >> t.shift
		for t.slots[i].k != emptyKey {
			i = (i + 1) & t.mask
		}
		t.slots[i] = s
		t.used++
	}
}

func (t *oaTable) drain(start int64, d *Digest) {
	for i := range t.slots {
		s := &t.slots[i]
		if s.k != emptyKey {
			d.Add(s.k, start, s.v)
			s.k = emptyKey
		}
	}
	t.used = 0
}

// RunBaseline generates n events and runs the baseline over them.
func RunBaseline(n, delay int64) Digest {
	e := NewBaseline(WindowMs, delay)
	g := NewGen(n, JitterMs, Seed)
	var c Click
	for g.Next(&c) {
		e.Process(c.AdID, c.EventTimeMs)
	}
	return e.Finish()
}
