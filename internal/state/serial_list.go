package state

import (
	"encoding/binary"
	"fmt"
	"iter"
	"math"
)

// serialList is the serial backend's list store. A list is one KV value:
// the key's hash, then per element its expiry time and its encoding. Add
// merges (MergeList) an operand of the same form, so appending does not
// read the list.
type serialList[K, N comparable, E any] struct {
	sbase
	k  typed[K]
	n  typed[N]
	e  typed[E]
	ef lazy[entryFormat[K, N, E]]
}

func newSerialList[K, N comparable, E any](be *Serial, name string, o Options) (*serialList[K, N, E], error) {
	bs, err := newSBase(be, name, KindList, o)
	if err != nil {
		return nil, err
	}
	k, n, err := keyNSCodecs[K, N]()
	if err != nil {
		return nil, err
	}
	e, err := valueCodecOf[E]()
	if err != nil {
		return nil, fmt.Errorf("element: %w", err)
	}
	s := &serialList[K, N, E]{sbase: bs, k: k, n: n, e: e}
	if _, err := s.allocate(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *serialList[K, N, E]) key(hash uint64, key K, ns N) []byte {
	b := s.prefix(s.kbuf[:0], s.kg(hash))
	b = s.k.append(b, &key)
	b = s.n.append(b, &ns)
	s.kbuf = b
	return b
}

// elements decodes the elements of a list value and their expiry times.
func (s *serialList[K, N, E]) elements(val []byte) ([]E, []int64, error) {
	if len(val) < ListHeader {
		return nil, nil, errShort
	}
	src := val[ListHeader:]
	var es []E
	var exps []int64
	for len(src) > 0 {
		if len(src) < 8 {
			return nil, nil, errShort
		}
		exps = append(exps, int64(binary.BigEndian.Uint64(src)))
		var e E
		var err error
		if src, err = s.e.read(src[8:], &e); err != nil {
			return nil, nil, err
		}
		es = append(es, e)
	}
	return es, exps, nil
}

// encode appends a list value (or merge operand) of es, each expiring at
// exp, to dst.
func (s *serialList[K, N, E]) encode(dst []byte, hash uint64, es []E, exp int64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, hash)
	for i := range es {
		dst = binary.BigEndian.AppendUint64(dst, uint64(exp))
		dst = s.e.append(dst, &es[i])
	}
	return dst
}

// Get implements ListStore. The slice is decoded afresh on every call.
func (s *serialList[K, N, E]) Get(hash uint64, key K, ns N) []E {
	k := s.key(hash, key, ns)
	val, ok := s.get(k)
	if !ok {
		if s.onRead {
			s.sweep(s.now(), s.clean)
		}
		return nil
	}
	es, exps, err := s.elements(val)
	if err != nil {
		s.fail(fmt.Errorf("decode list: %w", err))
	}
	if s.ttl == 0 {
		return es
	}
	now := s.now()
	n, j := len(es), 0
	for i := range es {
		if now < exps[i] {
			es[j], exps[j] = es[i], exps[i]
			j++
		}
	}
	clear(es[j:])
	es, exps = es[:j], exps[:j]
	switch {
	case j == 0:
		s.del(k)
		es = nil
	case s.onRead:
		s.set(k, s.encode(s.vbuf[:0], hash, es, now+s.ttl))
	case j < n:
		s.set(k, s.encodeExps(s.vbuf[:0], hash, es, exps))
	}
	if s.onRead { // a read that refreshes is a write
		s.sweep(now, s.clean)
	}
	return es
}

// encodeExps appends a list value of es with their own expiry times.
func (s *serialList[K, N, E]) encodeExps(dst []byte, hash uint64, es []E, exps []int64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, hash)
	for i := range es {
		dst = binary.BigEndian.AppendUint64(dst, uint64(exps[i]))
		dst = s.e.append(dst, &es[i])
	}
	return dst
}

func (s *serialList[K, N, E]) merge(k, operand []byte) {
	if err := s.kv.Merge(k, operand); err != nil {
		s.fail(err)
	}
}

// Add implements ListStore.
func (s *serialList[K, N, E]) Add(hash uint64, key K, ns N, e E) {
	k := s.key(hash, key, ns)
	now := s.nowIfTTL()
	s.vbuf = binary.BigEndian.AppendUint64(s.vbuf[:0], hash)
	s.vbuf = binary.BigEndian.AppendUint64(s.vbuf, uint64(s.expiry(now)))
	s.vbuf = s.e.append(s.vbuf, &e)
	s.merge(k, s.vbuf)
	s.sweep(now, s.clean)
}

// AddAll implements ListStore.
func (s *serialList[K, N, E]) AddAll(hash uint64, key K, ns N, es []E) {
	if len(es) == 0 {
		return
	}
	k := s.key(hash, key, ns)
	now := s.nowIfTTL()
	s.vbuf = s.encode(s.vbuf[:0], hash, es, s.expiry(now))
	s.merge(k, s.vbuf)
	s.sweep(now, s.clean)
}

// Update implements ListStore.
func (s *serialList[K, N, E]) Update(hash uint64, key K, ns N, es []E) {
	if len(es) == 0 {
		s.Delete(hash, key, ns)
		return
	}
	k := s.key(hash, key, ns)
	now := s.nowIfTTL()
	s.vbuf = s.encode(s.vbuf[:0], hash, es, s.expiry(now))
	s.set(k, s.vbuf)
	s.sweep(now, s.clean)
}

// Delete implements ListStore.
func (s *serialList[K, N, E]) Delete(hash uint64, key K, ns N) {
	s.del(s.key(hash, key, ns))
	if s.ttl != 0 {
		s.sweep(s.now(), s.clean)
	}
}

func (s *serialList[K, N, E]) nowIfTTL() int64 {
	if s.ttl == 0 {
		return 0
	}
	return s.now()
}

// clean prunes the expired elements of a list value.
func (s *serialList[K, N, E]) clean(_, val []byte, now int64) (bool, []byte) {
	es, exps, err := s.elements(val)
	if err != nil {
		return false, nil
	}
	j := 0
	for i := range es {
		if now < exps[i] {
			es[j], exps[j] = es[i], exps[i]
			j++
		}
	}
	if j == 0 {
		return true, nil
	}
	if j == len(es) {
		return false, nil
	}
	return false, s.encodeExps(nil, binary.BigEndian.Uint64(val), es[:j], exps[:j])
}

// Entries implements ListStore.
func (s *serialList[K, N, E]) Entries(kg int) iter.Seq[Entry[K, N, E]] {
	return func(yield func(Entry[K, N, E]) bool) {
		if !s.r.Contains(kg) {
			return
		}
		now := int64(math.MinInt64)
		if s.ttl != 0 {
			now = s.now()
		}
		start, end := s.groupRange(kg)
		var err error
		s.scan(start, end, func(k, val []byte) bool {
			var key K
			var ns N
			rest := k[4:]
			if rest, err = s.k.read(rest, &key); err != nil {
				return false
			}
			if _, err = s.n.read(rest, &ns); err != nil {
				return false
			}
			var es []E
			var exps []int64
			if es, exps, err = s.elements(val); err != nil {
				return false
			}
			hash := binary.BigEndian.Uint64(val)
			for i, e := range es {
				if now >= exps[i] {
					continue
				}
				if !yield(Entry[K, N, E]{Hash: hash, Key: key, NS: ns, Value: e, Expires: exps[i]}) {
					return false
				}
			}
			return true
		})
		if err != nil {
			s.fail(fmt.Errorf("decode: %w", err))
		}
	}
}

func (s *serialList[K, N, E]) format() (*entryFormat[K, N, E], error) {
	return s.ef.get(newEntryFormat[K, N, E])
}

func (s *serialList[K, N, E]) layout() (string, error) { return layoutOf("list:", s.format) }

func (s *serialList[K, N, E]) appendGroup(dst []byte, kg int) ([]byte, int, error) {
	return appendGroupOf(dst, s.format, s.Entries(kg))
}

func (s *serialList[K, N, E]) restore(sections [][]byte) error {
	return restoreEntries(s.format, sections, s.check, func(e *Entry[K, N, E]) {
		exp := e.Expires
		if s.ttl == 0 {
			exp = NoExpiry
		}
		k := s.key(e.Hash, e.Key, e.NS)
		s.vbuf = binary.BigEndian.AppendUint64(s.vbuf[:0], e.Hash)
		s.vbuf = binary.BigEndian.AppendUint64(s.vbuf, uint64(exp))
		s.vbuf = s.e.append(s.vbuf, &e.Value)
		s.merge(k, s.vbuf)
	})
}
