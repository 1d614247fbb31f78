package state

import (
	"iter"
	"math"
)

// heapMap is the heap's map store: per key and namespace, a table of map
// entries, each with its own expiry.
type heapMap[K, N, MK comparable, MV any] struct {
	base
	nsh nsHasher[N]
	mkh func(MK) uint64
	g   groups[nsKey[N, K], *table[MK, ttlVal[MV]]]
	ef  lazy[entryFormat[K, N, KV[MK, MV]]]
}

type mapTable[MK comparable, MV any] = table[MK, ttlVal[MV]]

// lookup returns the map of a key, or nil, and where it is.
func (s *heapMap[K, N, MK, MV]) lookup(hash uint64, key K, ns N) (*mapTable[MK, MV], *table[nsKey[N, K], *mapTable[MK, MV]], int) {
	t := s.g.of(hash)
	i := t.Find(s.nsh.mix(hash, ns), nsKey[N, K]{ns, key})
	if i < 0 {
		return nil, t, -1
	}
	return *t.At(i), t, i
}

// dropIfEmpty deletes the key's entry if it still holds m and m is empty.
func (s *heapMap[K, N, MK, MV]) dropIfEmpty(hash uint64, key K, ns N, m *mapTable[MK, MV]) {
	if m.Len() != 0 {
		return
	}
	if cur, t, i := s.lookup(hash, key, ns); cur == m {
		t.DeleteAt(i)
	}
}

func (s *heapMap[K, N, MK, MV]) nowIfTTL() int64 {
	if s.ttl == 0 {
		return math.MinInt64
	}
	return s.now()
}

// Get implements MapStore.
func (s *heapMap[K, N, MK, MV]) Get(hash uint64, key K, ns N, mk MK) (mv MV, ok bool) {
	now := s.nowIfTTL()
	if m, _, _ := s.lookup(hash, key, ns); m != nil {
		h := s.mkh(mk)
		if j := m.Find(h, mk); j >= 0 {
			p := m.At(j)
			if now >= p.exp {
				m.DeleteAt(j)
				s.dropIfEmpty(hash, key, ns, m)
			} else {
				if s.onRead {
					p.exp = now + s.ttl
				}
				mv, ok = p.v, true
			}
		}
	}
	if s.onRead { // a read that refreshes is a write
		s.sweep(now)
	}
	return mv, ok
}

// Contains implements MapStore.
func (s *heapMap[K, N, MK, MV]) Contains(hash uint64, key K, ns N, mk MK) bool {
	_, ok := s.Get(hash, key, ns, mk)
	return ok
}

// Put implements MapStore.
func (s *heapMap[K, N, MK, MV]) Put(hash uint64, key K, ns N, mk MK, mv MV) {
	now := s.nowIfTTL()
	t := s.g.of(hash)
	p, fresh := upsert(t, s.nsh.mix(hash, ns), nsKey[N, K]{ns, key})
	if fresh {
		*p = &mapTable[MK, MV]{}
	}
	m := *p
	// Overwrite a present entry in place: upsert may grow the table first,
	// which would rehash it under an All that is walking it (All allows a
	// Put of a present entry).
	h := s.mkh(mk)
	pm := m.Get(h, mk)
	if pm == nil {
		pm, _ = upsert(m, h, mk)
	}
	*pm = ttlVal[MV]{mv, s.expiry(now)}
	s.sweep(now)
}

// Remove implements MapStore.
func (s *heapMap[K, N, MK, MV]) Remove(hash uint64, key K, ns N, mk MK) {
	if m, _, _ := s.lookup(hash, key, ns); m != nil && m.Delete(s.mkh(mk), mk) {
		s.dropIfEmpty(hash, key, ns, m)
	}
	s.sweep(s.nowIfTTL())
}

// Len implements MapStore.
func (s *heapMap[K, N, MK, MV]) Len(hash uint64, key K, ns N) int {
	now := s.nowIfTTL()
	m, _, _ := s.lookup(hash, key, ns)
	n := 0
	if m != nil {
		if s.ttl != 0 {
			pruneMap(m, now)
			s.dropIfEmpty(hash, key, ns, m)
		}
		n = m.Len()
	}
	if s.onRead { // a read that refreshes is a write
		s.sweep(now)
	}
	return n
}

// All implements MapStore.
func (s *heapMap[K, N, MK, MV]) All(hash uint64, key K, ns N) iter.Seq2[MK, MV] {
	return func(yield func(MK, MV) bool) {
		now := s.nowIfTTL()
		m, _, _ := s.lookup(hash, key, ns)
		if m == nil {
			return
		}
		m.Walk(func(h uint64, mk MK, p *ttlVal[MV]) bool {
			if now >= p.exp {
				m.Delete(h, mk)
				return true
			}
			if s.onRead {
				p.exp = now + s.ttl
			}
			return yield(mk, p.v) // may remove mk: p is not used after
		})
		s.dropIfEmpty(hash, key, ns, m)
	}
}

// Delete implements MapStore.
func (s *heapMap[K, N, MK, MV]) Delete(hash uint64, key K, ns N) {
	s.g.of(hash).Delete(s.nsh.mix(hash, ns), nsKey[N, K]{ns, key})
	s.sweep(s.nowIfTTL())
}

// pruneMap removes the entries of m expired at now.
func pruneMap[MK comparable, MV any](m *mapTable[MK, MV], now int64) {
	m.Walk(func(h uint64, mk MK, p *ttlVal[MV]) bool {
		if now >= p.exp {
			m.Delete(h, mk)
		}
		return true
	})
}

func (s *heapMap[K, N, MK, MV]) sweep(now int64) {
	if s.ttl == 0 {
		return
	}
	s.g.sweep(cleanupSize, func(m **mapTable[MK, MV]) bool {
		pruneMap(*m, now)
		return (*m).Len() == 0
	})
}

// Entries implements MapStore.
func (s *heapMap[K, N, MK, MV]) Entries(kg int) iter.Seq[Entry[K, N, KV[MK, MV]]] {
	return func(yield func(Entry[K, N, KV[MK, MV]]) bool) {
		t := s.g.group(kg)
		if t == nil {
			return
		}
		now := s.nowIfTTL()
		t.Walk(func(h uint64, k nsKey[N, K], m **mapTable[MK, MV]) bool {
			kh := s.nsh.mix(h, k.ns)
			return (*m).Walk(func(_ uint64, mk MK, p *ttlVal[MV]) bool {
				if now >= p.exp {
					return true
				}
				return yield(Entry[K, N, KV[MK, MV]]{Hash: kh, Key: k.key, NS: k.ns, Value: KV[MK, MV]{mk, p.v}, Expires: p.exp})
			})
		})
	}
}

func (s *heapMap[K, N, MK, MV]) len() int { return s.g.len() }
