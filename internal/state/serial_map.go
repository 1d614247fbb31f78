package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"iter"
)

// serialMap is the serial backend's map store: one KV entry per map entry,
// keyed by (key group, id, key, namespace, map key), so that a map is one
// key range. Value: hash, expiry, encoded map value.
type serialMap[K, N, MK comparable, MV any] struct {
	sbase
	k  typed[K]
	n  typed[N]
	mk typed[MK]
	mv typed[MV]
	ef lazy[entryFormat[K, N, KV[MK, MV]]]
}

func newSerialMap[K, N, MK comparable, MV any](be *Serial, name string, o Options) (*serialMap[K, N, MK, MV], error) {
	bs, err := newSBase(be, name, KindMap, o)
	if err != nil {
		return nil, err
	}
	k, n, err := keyNSCodecs[K, N]()
	if err != nil {
		return nil, err
	}
	mk, err := keyCodecOf[MK]()
	if err != nil {
		return nil, fmt.Errorf("map key: %w", err)
	}
	mv, err := valueCodecOf[MV]()
	if err != nil {
		return nil, fmt.Errorf("map value: %w", err)
	}
	s := &serialMap[K, N, MK, MV]{sbase: bs, k: k, n: n, mk: mk, mv: mv}
	if _, err := s.allocate(); err != nil {
		return nil, err
	}
	return s, nil
}

// mapKey builds the prefix of (key, ns)'s map in dst.
func (s *serialMap[K, N, MK, MV]) mapKey(dst []byte, hash uint64, key K, ns N) []byte {
	b := s.prefix(dst, s.kg(hash))
	b = s.k.append(b, &key)
	return s.n.append(b, &ns)
}

// entryKey builds the key of map entry mk in kbuf.
func (s *serialMap[K, N, MK, MV]) entryKey(hash uint64, key K, ns N, mk MK) []byte {
	s.kbuf = s.mk.append(s.mapKey(s.kbuf[:0], hash, key, ns), &mk)
	return s.kbuf
}

func (s *serialMap[K, N, MK, MV]) sweepNow(now int64) {
	if s.ttl != 0 {
		s.sweep(now, cleanValue)
	}
}

// Get implements MapStore.
func (s *serialMap[K, N, MK, MV]) Get(hash uint64, key K, ns N, mk MK) (mv MV, ok bool) {
	now := s.nowIfTTL()
	k := s.entryKey(hash, key, ns, mk)
	val, found := s.get(k)
	if found {
		if len(val) < 16 {
			s.corrupt("map entry")
		}
		if now >= int64(binary.BigEndian.Uint64(val[8:])) {
			s.del(k)
		} else {
			if _, err := s.mv.read(val[16:], &mv); err != nil {
				s.fail(fmt.Errorf("decode map value: %w", err))
			}
			ok = true
			if s.onRead {
				binary.BigEndian.PutUint64(val[8:], uint64(now+s.ttl))
				s.set(k, val)
			}
		}
	}
	if s.onRead { // a read that refreshes is a write
		s.sweepNow(now)
	}
	return mv, ok
}

// Contains implements MapStore.
func (s *serialMap[K, N, MK, MV]) Contains(hash uint64, key K, ns N, mk MK) bool {
	_, ok := s.Get(hash, key, ns, mk)
	return ok
}

// Put implements MapStore.
func (s *serialMap[K, N, MK, MV]) Put(hash uint64, key K, ns N, mk MK, mv MV) {
	now := s.nowIfTTL()
	k := s.entryKey(hash, key, ns, mk)
	s.vbuf = s.mv.append(header(s.vbuf[:0], hash, s.expiry(now)), &mv)
	s.set(k, s.vbuf)
	s.sweepNow(now)
}

// Remove implements MapStore.
func (s *serialMap[K, N, MK, MV]) Remove(hash uint64, key K, ns N, mk MK) {
	s.del(s.entryKey(hash, key, ns, mk))
	s.sweepNow(s.nowIfTTL())
}

// Len implements MapStore.
func (s *serialMap[K, N, MK, MV]) Len(hash uint64, key K, ns N) int {
	now := s.nowIfTTL()
	start := s.mapKey(nil, hash, key, ns)
	n := 0
	var expired [][]byte
	s.scan(start, prefixEnd(start), func(k, val []byte) bool {
		if len(val) >= 16 && now >= int64(binary.BigEndian.Uint64(val[8:])) {
			expired = append(expired, bytes.Clone(k))
			return true
		}
		n++
		return true
	})
	for _, k := range expired {
		s.del(k)
	}
	if s.onRead {
		s.sweepNow(now)
	}
	return n
}

// All implements MapStore. It iterates over the map as it was when the
// iteration started: changes made meanwhile are not seen.
func (s *serialMap[K, N, MK, MV]) All(hash uint64, key K, ns N) iter.Seq2[MK, MV] {
	return func(yield func(MK, MV) bool) {
		now := s.nowIfTTL()
		start := s.mapKey(nil, hash, key, ns)
		var err error
		var buf []byte
		s.scan(start, prefixEnd(start), func(k, val []byte) bool {
			if len(val) < 16 {
				err = fmt.Errorf("corrupt map entry")
				return false
			}
			if now >= int64(binary.BigEndian.Uint64(val[8:])) {
				s.del(k)
				return true
			}
			var mk MK
			var mv MV
			if _, err = s.mk.read(k[len(start):], &mk); err != nil {
				return false
			}
			if _, err = s.mv.read(val[16:], &mv); err != nil {
				return false
			}
			if s.onRead {
				buf = append(buf[:0], val...)
				binary.BigEndian.PutUint64(buf[8:], uint64(now+s.ttl))
				s.set(k, buf)
			}
			return yield(mk, mv)
		})
		if err != nil {
			s.fail(fmt.Errorf("decode: %w", err))
		}
	}
}

// Delete implements MapStore.
func (s *serialMap[K, N, MK, MV]) Delete(hash uint64, key K, ns N) {
	start := s.mapKey(nil, hash, key, ns)
	if err := s.kv.DeleteRange(start, prefixEnd(start)); err != nil {
		s.fail(err)
	}
	s.sweepNow(s.nowIfTTL())
}

// Entries implements MapStore.
func (s *serialMap[K, N, MK, MV]) Entries(kg int) iter.Seq[Entry[K, N, KV[MK, MV]]] {
	return func(yield func(Entry[K, N, KV[MK, MV]]) bool) {
		scanEntries(&s.sbase, kg, s.k, s.n, "map entry", func(e *Entry[K, N, KV[MK, MV]], rest, val []byte) (err error) {
			if _, err = s.mk.read(rest, &e.Value.Key); err != nil {
				return err
			}
			_, err = s.mv.read(val, &e.Value.Value)
			return err
		}, yield)
	}
}

func (s *serialMap[K, N, MK, MV]) format() (*entryFormat[K, N, KV[MK, MV]], error) {
	return s.ef.get(newMapEntryFormat[K, N, MK, MV])
}

func (s *serialMap[K, N, MK, MV]) layout() (string, error) { return layoutOf("map:", s.format) }

func (s *serialMap[K, N, MK, MV]) appendGroup(dst []byte, kg int) ([]byte, int, error) {
	return appendGroupOf(dst, s.format, s.Entries(kg))
}

func (s *serialMap[K, N, MK, MV]) restore(sections [][]byte) error {
	return restoreEntries(s.format, sections, s.check, func(e *Entry[K, N, KV[MK, MV]]) {
		exp := e.Expires
		if s.ttl == 0 {
			exp = NoExpiry
		}
		k := s.entryKey(e.Hash, e.Key, e.NS, e.Value.Key)
		s.vbuf = s.mv.append(header(s.vbuf[:0], e.Hash, exp), &e.Value.Value)
		s.set(k, s.vbuf)
	})
}
