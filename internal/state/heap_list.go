package state

import (
	"iter"
	"math"
)

// listVal is one list: its elements and, with TTL, each element's expiry.
type listVal[E any] struct {
	vals []E
	exps []int64 // nil without TTL
}

// prune removes the elements expired at now, in place, and returns how
// many remain.
func (l *listVal[E]) prune(now int64) int {
	j := 0
	for i, e := range l.exps {
		if now < e {
			l.vals[j], l.exps[j] = l.vals[i], e
			j++
		}
	}
	if j < len(l.vals) {
		clear(l.vals[j:]) // drop references for the collector
		l.vals, l.exps = l.vals[:j], l.exps[:j]
	}
	return j
}

// heapList is the heap's list store.
type heapList[K, N comparable, E any] struct {
	base
	nsh nsHasher[N]
	g   groups[nsKey[N, K], listVal[E]]
	ef  lazy[entryFormat[K, N, E]]
}

// Get implements ListStore.
func (s *heapList[K, N, E]) Get(hash uint64, key K, ns N) []E {
	t := s.g.of(hash)
	i := t.Find(s.nsh.mix(hash, ns), nsKey[N, K]{ns, key})
	if s.ttl == 0 {
		if i < 0 {
			return nil
		}
		return t.At(i).vals
	}
	now := s.now()
	var out []E
	if i >= 0 {
		p := t.At(i)
		if p.prune(now) == 0 {
			t.DeleteAt(i)
		} else {
			if s.onRead {
				for j := range p.exps {
					p.exps[j] = now + s.ttl
				}
			}
			out = p.vals
		}
	}
	if s.onRead { // a read that refreshes is a write
		s.sweep(now)
	}
	return out
}

// Add implements ListStore.
func (s *heapList[K, N, E]) Add(hash uint64, key K, ns N, e E) {
	t := s.g.of(hash)
	p, _ := upsert(t, s.nsh.mix(hash, ns), nsKey[N, K]{ns, key})

	p.vals = append(p.vals, e)
	if s.ttl != 0 {
		now := s.now()
		p.exps = append(p.exps, now+s.ttl)
		s.sweep(now)
	}
}

// AddAll implements ListStore.
func (s *heapList[K, N, E]) AddAll(hash uint64, key K, ns N, es []E) {
	if len(es) == 0 {
		return
	}
	t := s.g.of(hash)
	p, _ := upsert(t, s.nsh.mix(hash, ns), nsKey[N, K]{ns, key})

	p.vals = append(p.vals, es...)
	if s.ttl != 0 {
		now := s.now()
		for range es {
			p.exps = append(p.exps, now+s.ttl)
		}
		s.sweep(now)
	}
}

// Update implements ListStore.
func (s *heapList[K, N, E]) Update(hash uint64, key K, ns N, es []E) {
	if len(es) == 0 {
		s.Delete(hash, key, ns)
		return
	}
	t := s.g.of(hash)
	p, _ := upsert(t, s.nsh.mix(hash, ns), nsKey[N, K]{ns, key})

	old := p.vals
	p.vals = append(p.vals[:0], es...) // memmove: es may alias the list
	if len(old) > len(es) {
		clear(old[len(es):])
	}
	if s.ttl != 0 {
		now := s.now()
		p.exps = p.exps[:0]
		for range es {
			p.exps = append(p.exps, now+s.ttl)
		}
		s.sweep(now)
	}
}

// Delete implements ListStore.
func (s *heapList[K, N, E]) Delete(hash uint64, key K, ns N) {
	s.g.of(hash).Delete(s.nsh.mix(hash, ns), nsKey[N, K]{ns, key})
	if s.ttl != 0 {
		s.sweep(s.now())
	}
}

func (s *heapList[K, N, E]) sweep(now int64) {
	s.g.sweep(cleanupSize, func(l *listVal[E]) bool { return l.prune(now) == 0 })
}

// Entries implements ListStore.
func (s *heapList[K, N, E]) Entries(kg int) iter.Seq[Entry[K, N, E]] {
	return func(yield func(Entry[K, N, E]) bool) {
		t := s.g.group(kg)
		if t == nil {
			return
		}
		now := int64(math.MinInt64)
		if s.ttl != 0 {
			now = s.now()
		}
		t.Walk(func(h uint64, k nsKey[N, K], l *listVal[E]) bool {
			kh := s.nsh.mix(h, k.ns)
			for j, e := range l.vals {
				exp := int64(NoExpiry)
				if l.exps != nil {
					exp = l.exps[j]
				}
				if now >= exp {
					continue
				}
				if !yield(Entry[K, N, E]{Hash: kh, Key: k.key, NS: k.ns, Value: e, Expires: exp}) {
					return false
				}
			}
			return true
		})
	}
}

func (s *heapList[K, N, E]) len() int { return s.g.len() }
