package state

import (
	"encoding/binary"
	"fmt"
	"iter"
	"slices"
)

// Snapshots of keyed state are taken and restored per key group, in a
// format that does not depend on the backend: a snapshot of heap state can
// be restored into a Pebble backend and the other way round, and key groups
// can be restored into a backend of another key-group range (rescaling).
//
// A key group's snapshot (SnapshotKeyGroup) is a version byte, then per
// store that has entries in the group: its name, kind and layout (a
// description of how its keys and values are encoded, checked on restore),
// the number of entries and the entries. An entry is the key's hash (8
// bytes), the expiry time (8 bytes), the encoded key, namespace and value
// (a list store has one entry per element, in order; a map store one per
// map entry, key then value). A timer is the key's hash, its time, its
// registration sequence number, the key and the namespace.

const snapshotVersion = 1

// IsKeyGroupSnapshot reports whether data looks like a key group's
// snapshot (SnapshotKeyGroup's version byte) rather than an operator's own
// format: a window aggregation restores either (internal/engine,
// window_state.go) and tells a checkpoint of the other kind by it.
func IsKeyGroupSnapshot(data []byte) bool { return len(data) > 0 && data[0] == snapshotVersion }

// snapshotter is implemented by every store: the untyped access to its
// entries that snapshots need.
type snapshotter interface {
	Store
	// layout describes how the store's entries are encoded; it fails when
	// a type of the store cannot be encoded.
	layout() (string, error)
	// appendGroup appends the encoded live entries of key group kg to dst
	// and returns how many it appended.
	appendGroup(dst []byte, kg int) ([]byte, int, error)
	// restore puts back the entries of sections, each a run of entries
	// encoded by appendGroup of a store with the same layout.
	restore(sections [][]byte) error
}

// SnapshotKeyGroup encodes the live entries of key group kg of every store
// and timer queue of b, with their expiry times and the timers'
// registration order. It returns nil when the key group holds nothing.
func SnapshotKeyGroup(b Backend, kg int) ([]byte, error) {
	var out, buf []byte
	for _, s := range b.Stores() {
		sn, ok := s.(snapshotter)
		if !ok {
			return nil, fmt.Errorf("state %q: %T cannot be snapshotted", s.Name(), s)
		}
		var n int
		var err error
		buf, n, err = sn.appendGroup(buf[:0], kg)
		if err != nil {
			return nil, fmt.Errorf("state %q: snapshot: %w", s.Name(), err)
		}
		if n == 0 {
			continue
		}
		lay, err := sn.layout()
		if err != nil {
			return nil, fmt.Errorf("state %q: snapshot: %w", s.Name(), err)
		}
		if out == nil {
			out = append(out, snapshotVersion)
		}
		out = appendString(out, s.Name())
		out = append(out, byte(s.Kind()))
		out = appendString(out, lay)
		out = binary.AppendUvarint(out, uint64(n))
		out = binary.AppendUvarint(out, uint64(len(buf)))
		out = append(out, buf...)
	}
	return out, nil
}

// RestoreKeyGroups puts back into b the key groups encoded by
// SnapshotKeyGroup, possibly by a backend of another kind or key-group
// range; every key group must be in b's range. Each store of the snapshot
// must exist in b under its name, with the same kind and layout: state in
// the snapshot that no store claims is an error naming it. Stores of b
// that the snapshot does not mention stay empty. Timers are registered
// again in their registration order, so that timers of the same time fire
// in the order they did.
func RestoreKeyGroups(b Backend, groups [][]byte) error {
	byName := map[string]snapshotter{}
	for _, s := range b.Stores() {
		if sn, ok := s.(snapshotter); ok {
			byName[s.Name()] = sn
		}
	}
	sections := map[string][][]byte{}
	var unknown []string
	for _, g := range groups {
		if len(g) == 0 {
			continue
		}
		if g[0] != snapshotVersion {
			return fmt.Errorf("state: snapshot version %d, want %d", g[0], snapshotVersion)
		}
		src := g[1:]
		for len(src) > 0 {
			var name, lay string
			var kind byte
			var err error
			if name, src, err = readString(src); err == nil && len(src) > 0 {
				kind, src = src[0], src[1:]
				lay, src, err = readString(src)
			} else if err == nil {
				err = errShort
			}
			if err != nil {
				return fmt.Errorf("state: corrupt snapshot: %w", err)
			}
			_, k := binary.Uvarint(src) // count: informative
			if k <= 0 {
				return fmt.Errorf("state: corrupt snapshot of %q", name)
			}
			data, rest, err := readBytes(src[k:])
			if err != nil {
				return fmt.Errorf("state: corrupt snapshot of %q: %w", name, err)
			}
			src = rest
			s := byName[name]
			if s == nil {
				if !slices.Contains(unknown, name) {
					unknown = append(unknown, name)
				}
				continue
			}
			if Kind(kind) != s.Kind() {
				return fmt.Errorf("state %q: the snapshot holds %s state, the operator has %s state of that name", name, Kind(kind), s.Kind())
			}
			have, err := s.layout()
			if err != nil {
				return fmt.Errorf("state %q: restore: %w", name, err)
			}
			if have != lay {
				return fmt.Errorf("state %q: the snapshot's entries are encoded as %s, the state's types as %s: the types changed", name, lay, have)
			}
			sections[name] = append(sections[name], data)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("state: the snapshot holds state %q that no state of the operator claims (create state of the same name in Open)", unknown)
	}
	for _, s := range b.Stores() {
		if secs := sections[s.Name()]; len(secs) > 0 {
			if err := s.(snapshotter).restore(secs); err != nil {
				return fmt.Errorf("state %q: restore: %w", s.Name(), err)
			}
		}
	}
	return nil
}

func appendString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

func readString(src []byte) (string, []byte, error) {
	b, rest, err := readBytes(src)
	return string(b), rest, err
}

// entryFormat encodes a store's entries for snapshots: hash, expiry, key,
// namespace, value.
type entryFormat[K, N, V any] struct {
	k   typed[K]
	n   typed[N]
	v   func(dst []byte, v *V) []byte
	vr  func(src []byte, v *V) ([]byte, error)
	sig string
}

func newEntryFormat[K, N, V any]() (*entryFormat[K, N, V], error) {
	k, n, err := keyNSCodecs[K, N]()
	if err != nil {
		return nil, err
	}
	v, err := valueCodecOf[V]()
	if err != nil {
		return nil, fmt.Errorf("value: %w", err)
	}
	return &entryFormat[K, N, V]{k: k, n: n, v: v.append, vr: v.read, sig: k.sig() + "/" + n.sig() + "/" + v.sig()}, nil
}

func newMapEntryFormat[K, N, MK, MV any]() (*entryFormat[K, N, KV[MK, MV]], error) {
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
	return &entryFormat[K, N, KV[MK, MV]]{k: k, n: n,
		v: func(dst []byte, e *KV[MK, MV]) []byte { return mv.append(mk.append(dst, &e.Key), &e.Value) },
		vr: func(src []byte, e *KV[MK, MV]) ([]byte, error) {
			src, err := mk.read(src, &e.Key)
			if err != nil {
				return nil, err
			}
			return mv.read(src, &e.Value)
		},
		sig: k.sig() + "/" + n.sig() + "/" + mk.sig() + "=" + mv.sig()}, nil
}

func keyNSCodecs[K, N any]() (typed[K], typed[N], error) {
	k, err := keyCodecOf[K]()
	if err != nil {
		return k, typed[N]{}, fmt.Errorf("key: %w", err)
	}
	n, err := keyCodecOf[N]()
	if err != nil {
		return k, n, fmt.Errorf("namespace: %w", err)
	}
	return k, n, nil
}

// appendAll appends the entries of seq to dst.
func (f *entryFormat[K, N, V]) appendAll(dst []byte, seq iter.Seq[Entry[K, N, V]]) ([]byte, int) {
	n := 0
	for e := range seq {
		dst = binary.BigEndian.AppendUint64(dst, e.Hash)
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.Expires))
		dst = f.k.append(dst, &e.Key)
		dst = f.n.append(dst, &e.NS)
		dst = f.v(dst, &e.Value)
		n++
	}
	return dst, n
}

// readAll decodes the entries of data and calls fn on each.
func (f *entryFormat[K, N, V]) readAll(data []byte, fn func(e *Entry[K, N, V]) error) error {
	for len(data) > 0 {
		var e Entry[K, N, V]
		if len(data) < 16 {
			return errShort
		}
		e.Hash = binary.BigEndian.Uint64(data)
		e.Expires = int64(binary.BigEndian.Uint64(data[8:]))
		var err error
		if data, err = f.k.read(data[16:], &e.Key); err != nil {
			return err
		}
		if data, err = f.n.read(data, &e.NS); err != nil {
			return err
		}
		if data, err = f.vr(data, &e.Value); err != nil {
			return err
		}
		if err := fn(&e); err != nil {
			return err
		}
	}
	return nil
}

// lazy builds a store's snapshot format on first use: heap stores of types
// that cannot be encoded work as long as no snapshot is taken.
type lazy[F any] struct {
	f     *F
	err   error
	built bool
}

func (l *lazy[F]) get(build func() (*F, error)) (*F, error) {
	if !l.built {
		l.f, l.err = build()
		l.built = true
	}
	return l.f, l.err
}

// timerFormat encodes timers: hash, time, sequence number, key, namespace.
type timerFormat[K, N any] struct {
	k   typed[K]
	n   typed[N]
	sig string
}

func newTimerFormat[K, N any]() (*timerFormat[K, N], error) {
	k, n, err := keyNSCodecs[K, N]()
	if err != nil {
		return nil, err
	}
	return &timerFormat[K, N]{k: k, n: n, sig: "timer:" + k.sig() + "/" + n.sig()}, nil
}

func (f *timerFormat[K, N]) appendAll(dst []byte, seq iter.Seq[Timer[K, N]]) ([]byte, int) {
	n := 0
	for t := range seq {
		dst = binary.BigEndian.AppendUint64(dst, t.Hash)
		dst = binary.BigEndian.AppendUint64(dst, uint64(t.TS))
		dst = binary.BigEndian.AppendUint64(dst, t.Seq)
		dst = f.k.append(dst, &t.Key)
		dst = f.n.append(dst, &t.NS)
		n++
	}
	return dst, n
}

// readSorted decodes the timers of every section, in registration order.
func (f *timerFormat[K, N]) readSorted(sections [][]byte) ([]Timer[K, N], error) {
	var ts []Timer[K, N]
	for _, data := range sections {
		for len(data) > 0 {
			if len(data) < 24 {
				return nil, errShort
			}
			t := Timer[K, N]{Hash: binary.BigEndian.Uint64(data), TS: int64(binary.BigEndian.Uint64(data[8:])), Seq: binary.BigEndian.Uint64(data[16:])}
			var err error
			if data, err = f.k.read(data[24:], &t.Key); err != nil {
				return nil, err
			}
			if data, err = f.n.read(data, &t.NS); err != nil {
				return nil, err
			}
			ts = append(ts, t)
		}
	}
	// Sections of several old subtasks (after a rescale) interleave by
	// sequence number: timers of the same time from different subtasks
	// had no order to keep.
	slices.SortStableFunc(ts, func(a, b Timer[K, N]) int {
		if a.Seq != b.Seq {
			if a.Seq < b.Seq {
				return -1
			}
			return 1
		}
		return 0
	})
	return ts, nil
}

// errOutside is the error of a restored entry of a key group the backend
// does not hold.
func errOutside(hash uint64, maxp int, r KeyGroupRange) error {
	return fmt.Errorf("entry of key group %d restored into a backend of key groups %v", int(hash%uint64(maxp)), r)
}

// signature is a format's layout signature.
func (f *entryFormat[K, N, V]) signature() string { return f.sig }
func (f *timerFormat[K, N]) signature() string    { return f.sig }

// layoutOf is a store's layout: the signature of its snapshot format after
// prefix.
func layoutOf[F interface{ signature() string }](prefix string, format func() (F, error)) (string, error) {
	f, err := format()
	if err != nil {
		return "", err
	}
	return prefix + f.signature(), nil
}

// appendGroupOf is a store's appendGroup: the items of a key group, seq,
// appended to dst in the store's snapshot format.
func appendGroupOf[T any, F interface {
	appendAll(dst []byte, seq iter.Seq[T]) ([]byte, int)
}](dst []byte, format func() (F, error), seq iter.Seq[T]) ([]byte, int, error) {
	f, err := format()
	if err != nil {
		return dst, 0, err
	}
	dst, n := f.appendAll(dst, seq)
	return dst, n, nil
}

// restoreEntries is a store's restore: it reads the entries of sections in
// the store's format and puts each of them after check accepts its hash.
func restoreEntries[K, N, V any](format func() (*entryFormat[K, N, V], error), sections [][]byte, check func(hash uint64) error, put func(e *Entry[K, N, V])) error {
	f, err := format()
	if err != nil {
		return err
	}
	for _, data := range sections {
		err := f.readAll(data, func(e *Entry[K, N, V]) error {
			if err := check(e.Hash); err != nil {
				return err
			}
			put(e)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// restoreTimers is a timer queue's restore: it reads the timers of sections
// in the queue's format, checks all their hashes and only then registers
// them, in time order.
func restoreTimers[K, N any](format func() (*timerFormat[K, N], error), sections [][]byte, check func(hash uint64) error, register func(hash uint64, key K, ns N, ts int64) bool) error {
	f, err := format()
	if err != nil {
		return err
	}
	ts, err := f.readSorted(sections)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if err := check(t.Hash); err != nil {
			return err
		}
	}
	for _, t := range ts {
		register(t.Hash, t.Key, t.NS, t.TS)
	}
	return nil
}

// check is the error of a restored entry of hash in a serial store that
// does not hold its key group, or nil.
func (b *sbase) check(hash uint64) error {
	if !b.r.Contains(int(hash % b.maxp)) {
		return errOutside(hash, int(b.maxp), b.r)
	}
	return nil
}

// ---- heap stores ----

// check is the error of a restored entry of hash in a heap store that does
// not hold its key group, or nil.
func (g *groups[K, V]) check(hash uint64) error {
	if !g.contains(hash) {
		return errOutside(hash, int(g.maxp), g.rangeOf())
	}
	return nil
}

func (g *groups[K, V]) contains(keyHash uint64) bool {
	kg := int(keyHash % g.maxp)
	return kg >= g.first && kg < g.first+len(g.tabs)
}

func (g *groups[K, V]) rangeOf() KeyGroupRange {
	return KeyGroupRange{Start: g.first, End: g.first + len(g.tabs)}
}

func (s *heapValue[K, N, V]) format() (*entryFormat[K, N, V], error) {
	return s.ef.get(newEntryFormat[K, N, V])
}

func (s *heapValue[K, N, V]) layout() (string, error) { return layoutOf("", s.format) }

func (s *heapValue[K, N, V]) appendGroup(dst []byte, kg int) ([]byte, int, error) {
	return appendGroupOf(dst, s.format, s.Entries(kg))
}

func (s *heapValue[K, N, V]) restore(sections [][]byte) error {
	return restoreEntries(s.format, sections, s.check, func(e *Entry[K, N, V]) {
		if s.ttl == 0 {
			p, _ := upsert(s.plain.of(e.Hash), s.nsh.mix(e.Hash, e.NS), nsKey[N, K]{e.NS, e.Key})
			*p = e.Value
			return
		}
		t := s.g.of(e.Hash)
		p, _ := upsert(t, s.nsh.mix(e.Hash, e.NS), nsKey[N, K]{e.NS, e.Key})
		*p = ttlVal[V]{e.Value, e.Expires}
	})
}

func (s *heapList[K, N, E]) format() (*entryFormat[K, N, E], error) {
	return s.ef.get(newEntryFormat[K, N, E])
}

func (s *heapList[K, N, E]) layout() (string, error) { return layoutOf("list:", s.format) }

func (s *heapList[K, N, E]) appendGroup(dst []byte, kg int) ([]byte, int, error) {
	return appendGroupOf(dst, s.format, s.Entries(kg))
}

func (s *heapList[K, N, E]) restore(sections [][]byte) error {
	return restoreEntries(s.format, sections, s.g.check, func(e *Entry[K, N, E]) {
		t := s.g.of(e.Hash)
		p, _ := upsert(t, s.nsh.mix(e.Hash, e.NS), nsKey[N, K]{e.NS, e.Key})

		p.vals = append(p.vals, e.Value)
		if s.ttl != 0 {
			p.exps = append(p.exps, e.Expires)
		}
	})
}

func (s *heapMap[K, N, MK, MV]) format() (*entryFormat[K, N, KV[MK, MV]], error) {
	return s.ef.get(newMapEntryFormat[K, N, MK, MV])
}

func (s *heapMap[K, N, MK, MV]) layout() (string, error) { return layoutOf("map:", s.format) }

func (s *heapMap[K, N, MK, MV]) appendGroup(dst []byte, kg int) ([]byte, int, error) {
	return appendGroupOf(dst, s.format, s.Entries(kg))
}

func (s *heapMap[K, N, MK, MV]) restore(sections [][]byte) error {
	return restoreEntries(s.format, sections, s.g.check, func(e *Entry[K, N, KV[MK, MV]]) {
		t := s.g.of(e.Hash)
		p, fresh := upsert(t, s.nsh.mix(e.Hash, e.NS), nsKey[N, K]{e.NS, e.Key})
		if fresh {
			*p = &mapTable[MK, MV]{}
		}
		m := *p
		pm, _ := upsert(m, s.mkh(e.Value.Key), e.Value.Key)
		exp := e.Expires
		if s.ttl == 0 {
			exp = NoExpiry
		}
		*pm = ttlVal[MV]{e.Value.Value, exp}
	})
}

func (q *heapTimers[K, N]) format() (*timerFormat[K, N], error) {
	return q.tf.get(newTimerFormat[K, N])
}

func (q *heapTimers[K, N]) layout() (string, error) { return layoutOf("", q.format) }

func (q *heapTimers[K, N]) appendGroup(dst []byte, kg int) ([]byte, int, error) {
	return appendGroupOf(dst, q.format, q.KeyGroup(kg))
}

func (q *heapTimers[K, N]) restore(sections [][]byte) error {
	return restoreTimers(q.format, sections, q.g.check, q.Register)
}
