package state

import (
	"encoding/binary"
	"fmt"
	"iter"
)

// serialValue is the serial backend's value store, and the base of its
// reducing and aggregating stores. Value: hash, expiry, encoded value.
type serialValue[K, N comparable, V any] struct {
	sbase
	k  typed[K]
	n  typed[N]
	v  typed[V]
	ef lazy[entryFormat[K, N, V]]
}

func newSerialValue[K, N comparable, V any](be *Serial, name string, kind Kind, o Options) (*serialValue[K, N, V], error) {
	bs, err := newSBase(be, name, kind, o)
	if err != nil {
		return nil, err
	}
	k, n, err := keyNSCodecs[K, N]()
	if err != nil {
		return nil, err
	}
	v, err := valueCodecOf[V]()
	if err != nil {
		return nil, fmt.Errorf("value: %w", err)
	}
	s := &serialValue[K, N, V]{sbase: bs, k: k, n: n, v: v}
	if _, err := s.allocate(); err != nil {
		return nil, err
	}
	return s, nil
}

// key builds the KV key of (key, ns) in kbuf.
func (s *serialValue[K, N, V]) key(hash uint64, key K, ns N) []byte {
	b := s.prefix(s.kbuf[:0], s.kg(hash))
	b = s.k.append(b, &key)
	b = s.n.append(b, &ns)
	s.kbuf = b
	return b
}

// lookup returns the live value of k: expired values are deleted, and a
// read refreshes with TTLUpdateOnRead.
func (s *serialValue[K, N, V]) lookup(k []byte, read bool) (val []byte, ok bool) {
	val, ok = s.get(k)
	if ok && len(val) < 16 {
		s.corrupt("value")
	}
	if s.ttl == 0 || !ok {
		return val, ok
	}
	now := s.now()
	exp := int64(binary.BigEndian.Uint64(val[8:]))
	if now >= exp {
		s.del(k)
		return nil, false
	}
	if read && s.onRead {
		binary.BigEndian.PutUint64(val[8:], uint64(now+s.ttl))
		s.set(k, val)
	}
	return val, true
}

func (s *serialValue[K, N, V]) decode(val []byte) V {
	var v V
	if _, err := s.v.read(val[16:], &v); err != nil {
		s.fail(fmt.Errorf("decode value: %w", err))
	}
	return v
}

// Get implements ValueStore.
func (s *serialValue[K, N, V]) Get(hash uint64, key K, ns N) (V, bool) {
	val, ok := s.lookup(s.key(hash, key, ns), true)
	var v V
	if ok {
		v = s.decode(val)
	}
	if s.onRead { // a read that refreshes is a write
		s.sweepNow()
	}
	return v, ok
}

// put writes v for the key in kbuf.
func (s *serialValue[K, N, V]) put(hash uint64, k []byte, v *V, now int64) {
	s.vbuf = s.v.append(header(s.vbuf[:0], hash, s.expiry(now)), v)
	s.set(k, s.vbuf)
}

func (s *serialValue[K, N, V]) nowIfTTL() int64 {
	if s.ttl == 0 {
		return 0
	}
	return s.now()
}

// Put implements ValueStore.
func (s *serialValue[K, N, V]) Put(hash uint64, key K, ns N, v V) {
	now := s.nowIfTTL()
	s.put(hash, s.key(hash, key, ns), &v, now)
	s.sweep(now, cleanValue)
}

// Delete implements ValueStore.
func (s *serialValue[K, N, V]) Delete(hash uint64, key K, ns N) {
	s.del(s.key(hash, key, ns))
	s.sweepNow()
}

func (s *serialValue[K, N, V]) sweepNow() {
	if s.ttl != 0 {
		s.sweep(s.now(), cleanValue)
	}
}

// cleanValue reports whether a value (hash, expiry, ...) expired.
func cleanValue(_, val []byte, now int64) (bool, []byte) {
	return len(val) >= 16 && now >= int64(binary.BigEndian.Uint64(val[8:])), nil
}

// Entries implements ValueStore.
func (s *serialValue[K, N, V]) Entries(kg int) iter.Seq[Entry[K, N, V]] {
	return func(yield func(Entry[K, N, V]) bool) {
		scanEntries(&s.sbase, kg, s.k, s.n, "value", func(e *Entry[K, N, V], _, val []byte) error {
			_, err := s.v.read(val, &e.Value)
			return err
		}, yield)
	}
}

func (s *serialValue[K, N, V]) format() (*entryFormat[K, N, V], error) {
	return s.ef.get(newEntryFormat[K, N, V])
}

func (s *serialValue[K, N, V]) layout() (string, error) { return layoutOf("", s.format) }

func (s *serialValue[K, N, V]) appendGroup(dst []byte, kg int) ([]byte, int, error) {
	return appendGroupOf(dst, s.format, s.Entries(kg))
}

func (s *serialValue[K, N, V]) restore(sections [][]byte) error {
	return restoreEntries(s.format, sections, s.check, func(e *Entry[K, N, V]) {
		exp := e.Expires
		if s.ttl == 0 {
			exp = NoExpiry
		}
		k := s.key(e.Hash, e.Key, e.NS)
		s.vbuf = s.v.append(header(s.vbuf[:0], e.Hash, exp), &e.Value)
		s.set(k, s.vbuf)
	})
}

// serialReducing is the serial backend's reducing store.
type serialReducing[K, N comparable, V any] struct {
	*serialValue[K, N, V]
	reduce func(a, b V) V
}

// Add implements ReducingStore.
func (s *serialReducing[K, N, V]) Add(hash uint64, key K, ns N, v V) {
	k := s.key(hash, key, ns)
	now := s.nowIfTTL()
	if val, ok := s.lookup(k, false); ok {
		v = s.reduce(s.decode(val), v)
	}
	s.put(hash, k, &v, now)
	s.sweep(now, cleanValue)
}

// serialAggregating is the serial backend's aggregating store: it keeps
// accumulators.
type serialAggregating[K, N comparable, IN, ACC, OUT any] struct {
	*serialValue[K, N, ACC]
	agg Aggregator[IN, ACC, OUT]
}

// Get implements AggregatingStore.
func (s *serialAggregating[K, N, IN, ACC, OUT]) Get(hash uint64, key K, ns N) (OUT, bool) {
	acc, ok := s.serialValue.Get(hash, key, ns)
	if !ok {
		var zero OUT
		return zero, false
	}
	return s.agg.Result(acc), true
}

// Add implements AggregatingStore.
func (s *serialAggregating[K, N, IN, ACC, OUT]) Add(hash uint64, key K, ns N, in IN) {
	k := s.key(hash, key, ns)
	now := s.nowIfTTL()
	var acc ACC
	if val, ok := s.lookup(k, false); ok {
		acc = s.decode(val)
	} else {
		acc = s.agg.Create()
	}
	acc = s.agg.Add(acc, in)
	s.put(hash, k, &acc, now)
	s.sweep(now, cleanValue)
}
