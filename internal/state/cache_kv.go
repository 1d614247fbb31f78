package state

import (
	"bytes"
	"encoding/binary"
)

// CachedKV is a write-back cache in memory of a KVStore's entries, in
// front of the store: Kafka Streams' record cache in front of RocksDB.
// A read of an entry the cache holds (present or absent) and every write
// stay in memory; the store sees a dirty entry's last value when the
// entry is evicted (least recently used first, once the cache holds more
// than its size in bytes), before a Scan of a range that holds it, and at
// Flush (before the store is checkpointed, and at Close). A list operand
// merged into an entry the cache holds is merged in memory (MergeList);
// one merged into an entry it does not hold goes to the store as a merge,
// unread. DeleteRange drops the cached entries of its range and deletes
// the range in the store.
//
// So a hot key's state costs a map lookup instead of an LSM's point lookup
// and write; the store's contents lag the cache's until Flush. Like the
// store, a CachedKV is used by one goroutine.
//
// A cache too small for the keys in use would only add its own work to
// the store's (every miss an insertion, every insertion an eviction): when
// fewer than a quarter of the Gets of a period of admitPeriod found their
// key cached while the cache evicted, keys it does not hold go straight to
// the store, but for one in admitSample, until a period's hit rate is back
// up (the admission of TinyLFU and Caffeine, in its simplest form).
type CachedKV struct {
	kv       KVStore
	max      int64
	bytes    int64
	m        map[string]*centry
	buckets  map[uint64]*cbucket // the entries by their keys' first 4 bytes
	lru      centry              // sentinel: lru.next is the most recently used entry
	inRange  []*centry
	keyBuf   []byte // write's key
	counters CacheCounters
	// admission: Gets, their hits and the evictions in this period, and
	// whether keys not cached are cached (see above)
	gets, hits, evicted int
	bypass              bool
	bypassTurn          int
}

const (
	admitPeriod = 1 << 14
	admitSample = 8
)

// lookup finds key's entry, counting a Get's for admission; admit reports
// whether a key the cache lacks is to be cached.
func (c *CachedKV) lookup(key []byte, get bool) (e *centry, admit bool) {
	e = c.m[string(key)]
	if get {
		c.gets++
		if e != nil {
			c.hits++
		}
		if c.gets >= admitPeriod {
			c.bypass = c.hits*4 < c.gets && c.evicted > 0
			c.gets, c.hits, c.evicted = 0, 0, 0
		}
	}
	if e != nil || !c.bypass {
		return e, true
	}
	c.bypassTurn++
	if c.bypassTurn >= admitSample {
		c.bypassTurn = 0
		return nil, true
	}
	return nil, false
}

// CacheCounters count what a CachedKV did.
type CacheCounters struct {
	// Hits and Misses are Gets answered from the cache and from the store.
	Hits, Misses uint64
	// Evictions are entries evicted; Writes are dirty entries written to
	// the store (evicted, before a Scan, or at Flush); Bypassed are
	// operations on keys not cached that went to the store uncached (see
	// CachedKV's admission).
	Evictions, Writes, Bypassed uint64
}

type centry struct {
	key     string
	val     []byte
	present bool // false: the key has no value (deleted, or never written)
	dirty   bool // the store does not have this value yet
	prev    *centry
	next    *centry
	b       *cbucket
	bi      int // index in b.entries
}

// A cbucket holds the cached entries whose keys begin with the same 4
// bytes: the serial stores' keys begin with their key group and state id,
// and their ranges (a key's map, a store's timers, a key group) lie within
// one such prefix or span whole ones, so a range operation looks at the
// entries of its buckets, not at the whole cache, and no ordered index has
// to be kept up on every miss and eviction (a B-tree's comparisons took a
// quarter of the CPU of a cache under misses).
type cbucket struct {
	prefix  uint64
	entries []*centry
}

// centryOverhead is an estimate of an entry's memory beside its key's and
// value's bytes: the entry (88 bytes), the map's slot and the bucket's.
const centryOverhead = 136

func (e *centry) size() int64 { return int64(len(e.key)+cap(e.val)) + centryOverhead }

// bucketOf is a key's bucket: its first 4 bytes (fewer for shorter keys),
// and their number, so that the buckets sort as their prefixes do.
func bucketOf(key []byte) uint64 {
	var p [4]byte
	n := copy(p[:], key)
	return uint64(binary.BigEndian.Uint32(p[:]))<<3 | uint64(n)
}

// NewCachedKV returns a cache of at most about maxBytes in front of kv,
// which it owns (Close closes it).
func NewCachedKV(kv KVStore, maxBytes int64) *CachedKV {
	c := &CachedKV{kv: kv, max: maxBytes, m: map[string]*centry{}, buckets: map[uint64]*cbucket{}}
	c.lru.next, c.lru.prev = &c.lru, &c.lru
	return c
}

// Counters returns what the cache did so far.
func (c *CachedKV) Counters() CacheCounters { return c.counters }

// Bytes is the estimated size of the entries cached.
func (c *CachedKV) Bytes() int64 { return c.bytes }

// Get implements KVStore.
func (c *CachedKV) Get(dst, key []byte) ([]byte, bool, error) {
	e, admit := c.lookup(key, true)
	if !admit {
		c.counters.Bypassed++
		return c.kv.Get(dst, key)
	}
	if e != nil {
		c.counters.Hits++
		c.touch(e)
		if !e.present {
			return dst, false, nil
		}
		return append(dst, e.val...), true, nil
	}
	c.counters.Misses++
	start := len(dst)
	dst, ok, err := c.kv.Get(dst, key)
	if err != nil {
		return dst, ok, err
	}
	if !ok {
		c.insert(key, nil, false, false)
		return dst, false, c.evict()
	}
	c.insert(key, dst[start:], true, false)
	return dst, true, c.evict()
}

// Set implements KVStore.
func (c *CachedKV) Set(key, value []byte) error {
	e, admit := c.lookup(key, false)
	if !admit {
		c.counters.Bypassed++
		return c.kv.Set(key, value)
	}
	c.put(e, key, value, true)
	return c.evict()
}

// Delete implements KVStore.
func (c *CachedKV) Delete(key []byte) error {
	e, admit := c.lookup(key, false)
	if !admit {
		c.counters.Bypassed++
		return c.kv.Delete(key)
	}
	c.put(e, key, nil, false)
	return c.evict()
}

// Merge implements KVStore: in memory if the cache holds key, else in the
// store.
func (c *CachedKV) Merge(key, operand []byte) error {
	e, _ := c.lookup(key, false)
	if e == nil {
		return c.kv.Merge(key, operand)
	}
	c.bytes -= int64(cap(e.val))
	if e.present {
		e.val = appendListOperand(e.val, operand)
	} else {
		e.val = append(e.val[:0], operand...)
	}
	c.bytes += int64(cap(e.val))
	e.present, e.dirty = true, true
	c.touch(e)
	return c.evict()
}

// DeleteRange implements KVStore.
func (c *CachedKV) DeleteRange(start, end []byte) error {
	for _, e := range c.collect(start, end) {
		c.remove(e)
	}
	return c.kv.DeleteRange(start, end)
}

// Scan implements KVStore: the dirty entries of the range are written to
// the store first, and the store is scanned.
func (c *CachedKV) Scan(start, end []byte, fn func(key, value []byte) bool) error {
	for _, e := range c.collect(start, end) {
		if err := c.write(e); err != nil {
			return err
		}
	}
	return c.kv.Scan(start, end, fn)
}

// Flush writes every dirty entry to the store; the cache keeps them,
// clean.
func (c *CachedKV) Flush() error {
	for e := c.lru.next; e != &c.lru; e = e.next {
		if err := c.write(e); err != nil {
			return err
		}
	}
	return nil
}

// Close flushes the cache and closes the store.
func (c *CachedKV) Close() error {
	if err := c.Flush(); err != nil {
		c.kv.Close()
		return err
	}
	return c.kv.Close()
}

// collect returns the cached entries with keys in [start, end) (end nil:
// no end), valid until the next call.
func (c *CachedKV) collect(start, end []byte) []*centry {
	c.inRange = c.inRange[:0]
	if end != nil && bytes.Compare(start, end) >= 0 {
		return c.inRange
	}
	in := func(b *cbucket) {
		for _, e := range b.entries {
			if e.key >= string(start) && (end == nil || e.key < string(end)) {
				c.inRange = append(c.inRange, e)
			}
		}
	}
	if len(start) >= 4 && len(end) >= 4 && bytes.Equal(start[:4], end[:4]) {
		// within one bucket
		if b := c.buckets[bucketOf(start)]; b != nil {
			in(b)
		}
		return c.inRange
	}
	// the buckets whose keys may lie in the range: those whose prefix
	// sorts from start's bucket to end's
	lo, hi := bucketOf(start), uint64(1<<63)
	if end != nil {
		hi = bucketOf(end)
	}
	for p, b := range c.buckets {
		if p >= lo&^7 && p <= hi|7 {
			in(b)
		}
	}
	return c.inRange
}

// write writes e to the store if it is dirty.
func (c *CachedKV) write(e *centry) error {
	if !e.dirty {
		return nil
	}
	// (the store copies the key: one buffer for every write)
	c.keyBuf = append(c.keyBuf[:0], e.key...)
	var err error
	if e.present {
		err = c.kv.Set(c.keyBuf, e.val)
	} else {
		err = c.kv.Delete(c.keyBuf)
	}
	if err != nil {
		return err
	}
	e.dirty = false
	c.counters.Writes++
	return nil
}

// put sets key's value (present) or its absence, dirty, in e, key's
// entry, or a new one if e is nil.
func (c *CachedKV) put(e *centry, key, value []byte, present bool) {
	if e == nil {
		c.insert(key, value, present, true)
		return
	}
	c.bytes -= int64(cap(e.val))
	e.val = append(e.val[:0], value...)
	c.bytes += int64(cap(e.val))
	e.present, e.dirty = present, true
	c.touch(e)
}

func (c *CachedKV) insert(key, value []byte, present, dirty bool) {
	e := &centry{key: string(key), present: present, dirty: dirty}
	if present {
		e.val = bytes.Clone(value)
	}
	c.m[e.key] = e
	p := bucketOf(key)
	b := c.buckets[p]
	if b == nil {
		b = &cbucket{prefix: p}
		c.buckets[p] = b
	}
	e.b, e.bi = b, len(b.entries)
	b.entries = append(b.entries, e)
	c.pushFront(e)
	c.bytes += e.size()
}

func (c *CachedKV) remove(e *centry) {
	delete(c.m, e.key)
	b := e.b
	last := b.entries[len(b.entries)-1]
	b.entries[e.bi], last.bi = last, e.bi
	b.entries[len(b.entries)-1] = nil
	b.entries = b.entries[:len(b.entries)-1]
	if len(b.entries) == 0 {
		delete(c.buckets, b.prefix)
	}
	e.b = nil
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	c.bytes -= e.size()
}

// evict evicts the least recently used entries, written to the store if
// dirty, while the cache is over its size.
func (c *CachedKV) evict() error {
	for c.bytes > c.max && c.lru.prev != &c.lru {
		e := c.lru.prev
		if err := c.write(e); err != nil {
			return err
		}
		c.remove(e)
		c.counters.Evictions++
		c.evicted++
	}
	return nil
}

func (c *CachedKV) pushFront(e *centry) {
	e.prev, e.next = &c.lru, c.lru.next
	c.lru.next.prev = e
	c.lru.next = e
}

func (c *CachedKV) touch(e *centry) {
	if c.lru.next == e {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	c.pushFront(e)
}
