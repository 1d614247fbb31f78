package hashtable

import "reflect"

// Chunked is a Table whose slots live in fixed-size chunks, so that a
// snapshot can share the table and the table's owner copies only the chunks
// it writes while the snapshot reads them (copy-on-write by chunk).
//
// Share gives a View of the table as it is: the chunks themselves, not a
// copy. Until Unshare, a write to a chunk the View holds (an insert, or a
// write through a pointer Upsert returned) first replaces it with a copy
// from the pool, once per chunk; growing gives the table new chunks anyway.
// The View's chunks are never written, so another goroutine may read the
// View while the owner goes on with the table (it must not read the table
// itself), and the cost of a snapshot is the chunks written while it is
// read, not the size of the state. Unshare (once the View's reader is done)
// returns the chunks only the View held to the pool.
//
// Same hashing, probing, load factor and growth as Table, so the same
// sequence of inserts puts each entry in the same slot of a table of the
// same capacity, and All visits them in the same order.
type Chunked[K comparable, V any] struct {
	chunks []*chunk[K, V]
	shift  uint   // log2 of the slots of a chunk
	cmask  uint64 // slots of a chunk - 1
	mask   uint64 // slots - 1
	used   int
	plain  bool
	pool   *ChunkPool[K, V]
	// epoch is the number of the last Share; a chunk is shared while
	// sharing and its epoch is older.
	epoch   uint64
	sharing bool
	// retired are the chunks replaced since Share, which only the View
	// still holds.
	retired []*chunk[K, V]
}

type chunk[K comparable, V any] struct {
	ctrl  []uint8
	slots []slot[K, V]
	epoch uint64 // the table's epoch when it was made or copied
}

// ChunkPool keeps the empty full-size chunks of a set of tables (a window
// operator's), so that growing one table, a snapshot's copies and the
// tables freed by firing reuse each other's memory instead of faulting in
// fresh pages and leaving the old ones to the garbage collector. It is not
// safe for concurrent use: every table of a pool belongs to one goroutine.
type ChunkPool[K comparable, V any] struct {
	size  int // slots of a full chunk, a power of two
	plain bool
	free  []*chunk[K, V]
}

// NewChunkPool returns a pool of chunks of size slots (rounded up to a
// power of two, at least 16).
func NewChunkPool[K comparable, V any](size int) *ChunkPool[K, V] {
	s := 16
	for s < size {
		s <<= 1
	}
	return &ChunkPool[K, V]{size: s, plain: PointerFree(reflect.TypeFor[slot[K, V]]())}
}

// get returns an empty chunk of n slots (n at most the pool's size).
func (p *ChunkPool[K, V]) get(n int) *chunk[K, V] {
	if n == p.size {
		if k := len(p.free); k > 0 {
			c := p.free[k-1]
			p.free[k-1] = nil
			p.free = p.free[:k-1]
			return c
		}
	}
	return &chunk[K, V]{ctrl: make([]uint8, n), slots: make([]slot[K, V], n)}
}

// put empties c and keeps it if it is full-size.
func (p *ChunkPool[K, V]) put(c *chunk[K, V]) {
	if len(c.ctrl) != p.size {
		return
	}
	if !p.plain {
		clear(c.slots) // drop the references
	}
	clear(c.ctrl)
	p.free = append(p.free, c)
}

// Free is the number of chunks the pool holds.
func (p *ChunkPool[K, V]) Free() int { return len(p.free) }

// NewChunked returns an empty table with room for about n entries whose
// chunks come from pool.
func NewChunked[K comparable, V any](n int, pool *ChunkPool[K, V]) *Chunked[K, V] {
	t := &Chunked[K, V]{pool: pool, plain: pool.plain}
	c := 16
	for c < 2*n {
		c <<= 1
	}
	t.alloc(c)
	return t
}

func (t *Chunked[K, V]) alloc(c int) {
	size := min(c, t.pool.size)
	t.shift = 0
	for 1<<t.shift < size {
		t.shift++
	}
	t.cmask = uint64(size - 1)
	t.mask = uint64(c - 1)
	t.used = 0
	t.chunks = make([]*chunk[K, V], c/size)
	for i := range t.chunks {
		ch := t.pool.get(size)
		ch.epoch = t.epoch
		t.chunks[i] = ch
	}
}

// Len is the number of entries.
func (t *Chunked[K, V]) Len() int { return t.used }

func (t *Chunked[K, V]) index(hash uint64) uint64 {
	return (hash * 0x9e3779b97f4a7c15 >> 32) & t.mask
}

// own replaces the shared chunk ci by a copy the View does not hold.
func (t *Chunked[K, V]) own(ci uint64) *chunk[K, V] {
	old := t.chunks[ci]
	c := t.pool.get(len(old.ctrl))
	copy(c.ctrl, old.ctrl)
	copy(c.slots, old.slots)
	c.epoch = t.epoch
	t.chunks[ci] = c
	t.retired = append(t.retired, old)
	return c
}

// Upsert returns a pointer to the value of key, inserting the zero value if
// it is absent; inserted tells which. The caller may write through the
// pointer (the chunk is the table's own, not the View's) until the next
// Upsert.
func (t *Chunked[K, V]) Upsert(hash uint64, key K) (v *V, inserted bool) {
	i, tg := t.index(hash), tag(hash)
	for {
		ci := i >> t.shift
		c, j := t.chunks[ci], i&t.cmask
		b := c.ctrl[j]
		if b == 0 {
			if (t.used+1)*2 > int(t.mask+1) {
				t.grow()
				return t.Upsert(hash, key)
			}
			if t.sharing && c.epoch != t.epoch {
				c = t.own(ci)
			}
			c.ctrl[j] = tg
			s := &c.slots[j]
			var zero V
			s.hash, s.key, s.val = hash, key, zero
			t.used++
			return &s.val, true
		}
		if b == tg {
			if s := &c.slots[j]; s.hash == hash && s.key == key {
				if t.sharing && c.epoch != t.epoch {
					s = &t.own(ci).slots[j]
				}
				return &s.val, false
			}
		}
		i = (i + 1) & t.mask
	}
}

// Get returns the value of key, or nil; it is for reading only (the chunk
// may be the View's).
func (t *Chunked[K, V]) Get(hash uint64, key K) *V {
	if t.used == 0 {
		return nil
	}
	i, tg := t.index(hash), tag(hash)
	for {
		c, j := t.chunks[i>>t.shift], i&t.cmask
		b := c.ctrl[j]
		if b == 0 {
			return nil
		}
		if b == tg {
			if s := &c.slots[j]; s.hash == hash && s.key == key {
				return &s.val
			}
		}
		i = (i + 1) & t.mask
	}
}

// grow doubles the table into new chunks; the old ones go back to the pool
// unless the View holds them.
func (t *Chunked[K, V]) grow() {
	old := t.chunks
	t.alloc(int(t.mask+1) * 2)
	for _, oc := range old {
		for k, b := range oc.ctrl {
			if b == 0 {
				continue
			}
			s := &oc.slots[k]
			i := t.index(s.hash)
			for {
				c, j := t.chunks[i>>t.shift], i&t.cmask
				if c.ctrl[j] == 0 {
					c.slots[j], c.ctrl[j] = *s, b
					break
				}
				i = (i + 1) & t.mask
			}
			t.used++
		}
		t.drop(oc)
	}
}

// drop gives up a chunk the table no longer uses.
func (t *Chunked[K, V]) drop(c *chunk[K, V]) {
	if t.sharing && c.epoch != t.epoch {
		t.retired = append(t.retired, c) // the View's until Unshare
		return
	}
	t.pool.put(c)
}

// All calls fn for each entry until fn returns false; fn must not change
// the table or write through v.
func (t *Chunked[K, V]) All(fn func(hash uint64, key K, v *V) bool) {
	if t.used == 0 {
		return
	}
	eachEntry(t.chunks, fn)
}

func eachEntry[K comparable, V any](chunks []*chunk[K, V], fn func(hash uint64, key K, v *V) bool) {
	for _, c := range chunks {
		for j, b := range c.ctrl {
			if b != 0 {
				if s := &c.slots[j]; !fn(s.hash, s.key, &s.val) {
					return
				}
			}
		}
	}
}

// Reset empties the table and keeps its memory for reuse (the chunks a
// View holds are left to it, replaced by empty ones).
func (t *Chunked[K, V]) Reset() {
	if t.used == 0 {
		return
	}
	for i, c := range t.chunks {
		if t.sharing && c.epoch != t.epoch {
			n := t.pool.get(len(c.ctrl))
			n.epoch = t.epoch
			t.chunks[i] = n
			t.retired = append(t.retired, c)
			continue
		}
		if !t.plain {
			clear(c.slots)
		}
		clear(c.ctrl)
	}
	t.used = 0
}

// View is a table as it was at Share: read-only, and safe to read on
// another goroutine while the table's owner changes the table.
type View[K comparable, V any] struct {
	chunks []*chunk[K, V]
	used   int
}

// Len is the number of entries.
func (v *View[K, V]) Len() int { return v.used }

// All calls fn for each entry, in the order the table's All had at Share,
// until fn returns false; fn must not write through val.
func (v *View[K, V]) All(fn func(hash uint64, key K, val *V) bool) {
	if v.used == 0 {
		return
	}
	eachEntry(v.chunks, fn)
}

// Share starts a snapshot of the table: it sets v to a View of the table as
// it is now (reusing v's memory) and makes the table copy each chunk
// before it first writes it. A table still shared is unshared first: its
// earlier View must no longer be read.
func (t *Chunked[K, V]) Share(v *View[K, V]) {
	if t.sharing {
		t.Unshare()
	}
	t.epoch++
	t.sharing = true
	v.chunks = append(v.chunks[:0], t.chunks...)
	v.used = t.used
}

// Unshare ends the snapshot: the View is no longer read (its reader is
// done, or will never run), so the chunks only it held go to the pool.
func (t *Chunked[K, V]) Unshare() {
	if !t.sharing {
		return
	}
	t.sharing = false
	for i, c := range t.retired {
		t.pool.put(c)
		t.retired[i] = nil
	}
	t.retired = t.retired[:0]
}

// Release drops the View's references to its chunks (so that they are not
// kept alive by a View that is reused later).
func (v *View[K, V]) Release() {
	clear(v.chunks)
	v.chunks = v.chunks[:0]
	v.used = 0
}
