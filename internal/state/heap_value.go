package state

import (
	"iter"
)

// ttlVal is a value with its expiry time (NoExpiry without TTL).
type ttlVal[V any] struct {
	v   V
	exp int64
}

// heapValue is the heap's value store, and the base of its reducing and
// aggregating stores. A store with TTL keeps each value with its expiry
// time (g); one without keeps the values alone (plain), 8 bytes less a
// slot: for the millions of small values of a large key space (a SQL
// group aggregation's accumulators are one pointer each) that is a fifth
// of the table. Exactly one of the two is used, by s.ttl.
type heapValue[K, N comparable, V any] struct {
	base
	nsh   nsHasher[N]
	g     groups[nsKey[N, K], ttlVal[V]]
	plain groups[nsKey[N, K], V]
	ef    lazy[entryFormat[K, N, V]]
}

func newHeapValue[K, N comparable, V any](h *Heap, name string, kind Kind, o Options) (*heapValue[K, N, V], error) {
	bs, err := newBase(h, name, kind, o)
	if err != nil {
		return nil, err
	}
	nsh, err := newNSHasher[N]()
	if err != nil {
		return nil, err
	}
	s := &heapValue[K, N, V]{base: bs, nsh: nsh}
	if s.ttl == 0 {
		s.plain = newGroups[nsKey[N, K], V](h.cfg.KeyGroups, h.cfg.MaxParallelism)
	} else {
		s.g = newGroups[nsKey[N, K], ttlVal[V]](h.cfg.KeyGroups, h.cfg.MaxParallelism)
	}
	return s, nil
}

// check is the key-group range check of a restore.
func (s *heapValue[K, N, V]) check(hash uint64) error {
	if s.ttl == 0 {
		return s.plain.check(hash)
	}
	return s.g.check(hash)
}

// Get implements ValueStore.
func (s *heapValue[K, N, V]) Get(hash uint64, key K, ns N) (V, bool) {
	if s.ttl == 0 {
		if p := s.plain.of(hash).Get(s.nsh.mix(hash, ns), nsKey[N, K]{ns, key}); p != nil {
			return *p, true
		}
		var zero V
		return zero, false
	}
	t := s.g.of(hash)
	return s.getTTL(t, t.Find(s.nsh.mix(hash, ns), nsKey[N, K]{ns, key}))
}

// getTTL is Get's path for stores with TTL: expired values are deleted
// rather than returned, reads may refresh, and every access advances the
// incremental cleanup.
func (s *heapValue[K, N, V]) getTTL(t *table[nsKey[N, K], ttlVal[V]], i int) (v V, ok bool) {
	now := s.now()
	if i >= 0 {
		p := t.At(i)
		if now >= p.exp {
			t.DeleteAt(i)
		} else {
			if s.onRead {
				p.exp = now + s.ttl
			}
			v, ok = p.v, true
		}
	}
	if s.onRead { // a read that refreshes is a write
		s.sweep(now)
	}
	return v, ok
}

// Put implements ValueStore.
func (s *heapValue[K, N, V]) Put(hash uint64, key K, ns N, v V) {
	if s.ttl == 0 {
		p, _ := upsert(s.plain.of(hash), s.nsh.mix(hash, ns), nsKey[N, K]{ns, key})
		*p = v
		return
	}
	t := s.g.of(hash)
	p, _ := upsert(t, s.nsh.mix(hash, ns), nsKey[N, K]{ns, key})
	p.v = v
	now := s.now()
	p.exp = now + s.ttl
	s.sweep(now)
}

// Delete implements ValueStore.
func (s *heapValue[K, N, V]) Delete(hash uint64, key K, ns N) {
	if s.ttl == 0 {
		s.plain.of(hash).Delete(s.nsh.mix(hash, ns), nsKey[N, K]{ns, key})
		return
	}
	s.g.of(hash).Delete(s.nsh.mix(hash, ns), nsKey[N, K]{ns, key})
	s.sweep(s.now())
}

// sweep advances the incremental cleanup.
func (s *heapValue[K, N, V]) sweep(now int64) {
	s.g.sweep(cleanupSize, func(v *ttlVal[V]) bool { return now >= v.exp })
}

// Entries implements ValueStore.
func (s *heapValue[K, N, V]) Entries(kg int) iter.Seq[Entry[K, N, V]] {
	return func(yield func(Entry[K, N, V]) bool) {
		if s.ttl == 0 {
			if t := s.plain.group(kg); t != nil {
				t.Walk(func(h uint64, k nsKey[N, K], v *V) bool {
					return yield(Entry[K, N, V]{Hash: s.nsh.mix(h, k.ns), Key: k.key, NS: k.ns, Value: *v, Expires: NoExpiry})
				})
			}
			return
		}
		t := s.g.group(kg)
		if t == nil {
			return
		}
		now := s.now()
		t.Walk(func(h uint64, k nsKey[N, K], v *ttlVal[V]) bool {
			if now >= v.exp {
				return true
			}
			return yield(Entry[K, N, V]{Hash: s.nsh.mix(h, k.ns), Key: k.key, NS: k.ns, Value: v.v, Expires: v.exp})
		})
	}
}

// len is the number of entries, expired ones not yet removed included.
func (s *heapValue[K, N, V]) len() int { return s.g.len() + s.plain.len() }

// heapReducing is the heap's reducing store.
type heapReducing[K, N comparable, V any] struct {
	*heapValue[K, N, V]
	reduce func(a, b V) V
}

// Add implements ReducingStore.
func (s *heapReducing[K, N, V]) Add(hash uint64, key K, ns N, v V) {
	if s.ttl == 0 {
		p, fresh := upsert(s.plain.of(hash), s.nsh.mix(hash, ns), nsKey[N, K]{ns, key})
		if fresh {
			*p = v
		} else {
			*p = s.reduce(*p, v)
		}
		return
	}
	t := s.g.of(hash)
	p, fresh := upsert(t, s.nsh.mix(hash, ns), nsKey[N, K]{ns, key})
	var now int64
	if s.ttl != 0 {
		now = s.now()
		fresh = fresh || now >= p.exp
	}
	if fresh {
		p.v = v
	} else {
		p.v = s.reduce(p.v, v)
	}
	p.exp = s.expiry(now)
	if s.ttl != 0 {
		s.sweep(now)
	}
}

// heapAggregating is the heap's aggregating store: it keeps accumulators
// and applies Result on Get.
type heapAggregating[K, N comparable, IN, ACC, OUT any] struct {
	*heapValue[K, N, ACC]
	agg Aggregator[IN, ACC, OUT]
}

// Get implements AggregatingStore.
func (s *heapAggregating[K, N, IN, ACC, OUT]) Get(hash uint64, key K, ns N) (OUT, bool) {
	acc, ok := s.heapValue.Get(hash, key, ns)
	if !ok {
		var zero OUT
		return zero, false
	}
	return s.agg.Result(acc), true
}

// Add implements AggregatingStore.
func (s *heapAggregating[K, N, IN, ACC, OUT]) Add(hash uint64, key K, ns N, in IN) {
	if s.ttl == 0 {
		p, fresh := upsert(s.plain.of(hash), s.nsh.mix(hash, ns), nsKey[N, K]{ns, key})
		if fresh {
			*p = s.agg.Create()
		}
		*p = s.agg.Add(*p, in)
		return
	}
	t := s.g.of(hash)
	p, fresh := upsert(t, s.nsh.mix(hash, ns), nsKey[N, K]{ns, key})
	var now int64
	if s.ttl != 0 {
		now = s.now()
		fresh = fresh || now >= p.exp
	}
	if fresh {
		p.v = s.agg.Create()
	}
	p.v = s.agg.Add(p.v, in)
	p.exp = s.expiry(now)
	if s.ttl != 0 {
		s.sweep(now)
	}
}
