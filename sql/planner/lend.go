package planner

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/types"
)

// Lent rows. A Calc makes a new row for every record it emits; when the
// only consumer of its output is a sink that is done with the rows when
// its Write returns (blackhole, print, a lent subscription: see
// connector.Sink.Lends and Statement.SubscribeLent), the Calc instead
// writes its rows' values into a ring that it reuses: the rows are lent to
// the sink, as weir lends a batch to the operators of its chain. This is
// what the hand-written queries get from emitting structs by value: no
// allocation, and so no garbage collection, per record.
//
// Why the ring is safe: the sink is chained to the Calc (a forward edge at
// the Calc's parallelism: the lending sinks set no parallelism of their
// own), so weir pushes the Calc's output batch to the sink's Write, on the
// Calc's goroutine, whenever the batch holds BatchSize rows and at the end
// of every input batch. A row's slot is written again only 2*BatchSize rows
// later, after the batch that held it has been written.

// rowRing hands out the values of rows of one width, reusing them after
// ring rows.
type rowRing struct {
	buf   []types.Value
	pos   int
	width int
}

func newRowRing(width, rows int) *rowRing {
	return &rowRing{buf: make([]types.Value, width*rows), width: width}
}

// next returns the values of the next row; the caller sets all of them.
func (r *rowRing) next() []types.Value {
	if r.pos+r.width > len(r.buf) {
		r.pos = 0
	}
	vs := r.buf[r.pos : r.pos+r.width : r.pos+r.width]
	r.pos += r.width
	return vs
}

// lendRows returns a flag that Job sets, once every statement is built,
// when r's rows may be lent: r feeds a lending sink and nothing else reads
// it. The operator reads it when it runs (after Job).
func (b *builder) lendRows(r *rel) *bool {
	if b.lend == nil {
		b.lend = map[*rel]*bool{}
	}
	f := new(bool)
	b.lend[r] = f
	return f
}

// ringRows is the size of a lending operator's ring, in rows.
func ringRows(job *weir.Job) int { return 2 * job.BatchSize() }

// settleLending sets the lend flags: a rel lends when it feeds a lending
// sink (feeds) and its stream has that one consumer (every consumer gets
// it through builder.stream, which counts).
func (b *builder) settleLending(feeds map[*rel]bool) {
	for grew := true; grew; {
		grew = false
		for to, from := range b.through {
			if feeds[to] && b.reads[to] == 1 && !feeds[from] {
				feeds[from], grew = true, true
			}
		}
	}
	for r, f := range b.lend {
		*f = feeds[r] && b.reads[r] == 1
	}
}

// passThrough records that to's stream is from's, row for row, chained to
// it (a Calc that filters or passes its input on).
func (b *builder) passThrough(to, from *rel) {
	if b.through == nil {
		b.through = map[*rel]*rel{}
	}
	b.through[to.canonical()] = from.canonical()
}

// borrow records that r's stream feeds an operator chained to it that
// keeps nothing of a row once it returns: r may lend its rows.
func (b *builder) borrow(r *rel) {
	if b.borrowed == nil {
		b.borrowed = map[*rel]bool{}
	}
	b.borrowed[r.canonical()] = true
}

// Rows in slabs. A Calc whose rows cross a shuffle cannot lend them (the
// consumer reads them on another goroutine, later), and makes a new row
// for each. When every consumer of its stream copies what it keeps of a
// row (a group aggregation keeps accumulators, a Top-N copies the row it
// ranks), the Calc makes its rows out of a slab of slabRows rows
// instead: one allocation for many, and a slab that no state holds on to
// is garbage once its rows have been processed.

// slabRows is the number of rows a Calc makes out of one slab.
const slabRows = 64

// copies records that an operator reading r's stream copies what it keeps
// of a row.
func (b *builder) copies(r *rel) {
	if b.copying == nil {
		b.copying = map[*rel]int{}
	}
	b.copying[r.canonical()]++
}

// slabRowsOf returns a flag that Job sets when r's rows may be made in
// slabs: every consumer of its stream copies them.
func (b *builder) slabRowsOf(r *rel) *bool {
	if b.slab == nil {
		b.slab = map[*rel]*bool{}
	}
	f := new(bool)
	b.slab[r.canonical()] = f
	return f
}

// settleSlabs sets the slab flags, once every statement is built.
func (b *builder) settleSlabs() {
	for r, f := range b.slab {
		*f = !b.noSlabs && b.reads[r] > 0 && b.copying[r] == b.reads[r]
	}
	// rows recycled (recycle.go): the one consumer of a Calc's slab rows
	// hands them back
	for r, p := range b.pools {
		f := b.slab[r]
		p.on = !b.noRecycle && f != nil && *f && b.reads[r] == 1 && b.recycling[r] == 1
	}
}

// rowMaker makes an operator's output rows of one width: from a ring when
// they are lent (lendRows), out of slabs when every consumer copies them
// (slabRowsOf), else one by one. The flags are set once every statement
// is built; each subtask copies the maker into its function, so the ring
// and the slab are its own.
type rowMaker struct {
	width, ringRows int
	lend, slab      *bool // nil: never
	ring            *rowRing
	free            []types.Value // the slab's rows not made yet
	// pool: rows the consumer hands back (recycle.go), taken a chunk at
	// a time into recycled; nil: none
	pool     *rowPool
	recycled [][]types.Value
}

// rowMaker returns the maker of r's rows, which may be lent.
func (b *builder) rowMaker(r *rel, width int) rowMaker {
	return rowMaker{width: width, ringRows: ringRows(b.job), lend: b.lendRows(r)}
}

// next returns the values of a new row; the caller sets all of them.
func (m *rowMaker) next() []types.Value {
	switch {
	case m.lend != nil && *m.lend:
		if m.ring == nil {
			m.ring = newRowRing(m.width, m.ringRows)
		}
		return m.ring.next()
	case m.slab != nil && *m.slab:
		if n := len(m.recycled); n > 0 {
			vs := m.recycled[n-1]
			m.recycled = m.recycled[:n-1]
			return vs
		}
		if len(m.free) < m.width {
			// a slab's worth of rows made: rows handed back, if any,
			// before a new slab
			if m.pool != nil && m.pool.on {
				if m.recycled != nil {
					m.pool.emptied(m.recycled)
				}
				if m.recycled = m.pool.take(); len(m.recycled) > 0 {
					return m.next()
				}
			}
			m.free = make([]types.Value, m.width*slabRows)
		}
		vs := m.free[:m.width:m.width]
		m.free = m.free[m.width:]
		return vs
	}
	return make([]types.Value, m.width)
}
