package planner

import (
	"sync"

	"github.com/weirstream/weir/sql/types"
)

// Rows recycled across a shuffle. A Calc whose rows cross a shuffle makes
// them out of slabs (lend.go); each row's memory is then written once, by
// the Calc, read once, by the consumer, and left to the collector. At a
// few hundred bytes a row (Nexmark q18's bids: 7 values, 336 bytes) that
// is most of what the plan allocates: the collector runs for it, and the
// Calc's writes go to memory the caches lost since the collector's last
// sweep, where the hand-written query's structs travel in batches that
// the exchange reuses. When the Calc's one consumer is done with a row
// once it returns from the row's ProcessElement (a Top-N: it copies what
// it keeps, and its output rows are its own), the consumer hands the row
// back: it gathers the rows it is done with into chunks of recycleChunk
// and puts each full chunk in the Calc's rowPool, where the Calc's
// subtasks take their rows before they make new ones. A chunk's rows
// were read by one consumer subtask on its goroutine, before it put the
// chunk in the pool under the pool's lock: a Calc that takes the chunk
// (under the lock) writes them after those reads.

// recycleChunk is the number of rows a consumer hands back at once.
const recycleChunk = 64

// maxPooledChunks bounds the rows a pool keeps: beyond them, chunks are
// left to the collector (the rows in flight between a Calc and its
// consumer are a few batches per edge).
const maxPooledChunks = 256

// rowPool holds rows of one width handed back by a Calc's consumer.
type rowPool struct {
	width int
	// on: the Calc's one consumer hands its rows back (settleSlabs)
	on bool
	mu struct {
		sync.Mutex
		full  [][][]types.Value // chunks of recycleChunk rows
		empty [][][]types.Value // chunks taken, for the consumer to fill
	}
}

// take returns a chunk of rows to write, or nil.
func (p *rowPool) take() [][]types.Value {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.mu.full)
	if n == 0 {
		return nil
	}
	c := p.mu.full[n-1]
	p.mu.full[n-1] = nil
	p.mu.full = p.mu.full[:n-1]
	return c
}

// giveBack puts a chunk of rows that its consumer is done with in the
// pool, and returns an empty chunk to fill next.
func (p *rowPool) giveBack(c [][]types.Value) [][]types.Value {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.mu.full) < maxPooledChunks {
		p.mu.full = append(p.mu.full, c)
	}
	if n := len(p.mu.empty); n > 0 {
		e := p.mu.empty[n-1]
		p.mu.empty[n-1] = nil
		p.mu.empty = p.mu.empty[:n-1]
		return e
	}
	return make([][]types.Value, 0, recycleChunk)
}

// emptied keeps a chunk whose rows the Calc has all taken.
func (p *rowPool) emptied(c [][]types.Value) {
	clear(c[:cap(c)])
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.mu.empty) < maxPooledChunks {
		p.mu.empty = append(p.mu.empty, c[:0])
	}
}

// rowPoolOf returns the pool of a Calc's rows, which may be recycled
// (Job decides, settleSlabs).
func (b *builder) rowPoolOf(r *rel, width int) *rowPool {
	if b.pools == nil {
		b.pools = map[*rel]*rowPool{}
	}
	p := &rowPool{width: width}
	b.pools[r.canonical()] = p
	return p
}

// recycles records that an operator reading r's stream hands its rows
// back once it is done with them, and returns r's pool (nil: r makes no
// rows to recycle).
func (b *builder) recycles(r *rel) *rowPool {
	if b.recycling == nil {
		b.recycling = map[*rel]int{}
	}
	b.recycling[r.canonical()]++
	return b.pools[r.canonical()]
}

// rowRecycler is the consumer's side: the rows it is done with, until
// they make a chunk.
type rowRecycler struct {
	pool *rowPool // nil: none
	done [][]types.Value
}

// release hands a row back, if the pool takes rows.
func (r *rowRecycler) release(vs []types.Value) {
	if r.pool == nil || !r.pool.on || len(vs) != r.pool.width || cap(vs) != len(vs) {
		return
	}
	if r.done == nil {
		r.done = make([][]types.Value, 0, recycleChunk)
	}
	r.done = append(r.done, vs)
	if len(r.done) == recycleChunk {
		r.done = r.pool.giveBack(r.done)
	}
}
