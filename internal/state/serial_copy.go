package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
)

// Incremental checkpoints of a Serial backend save its KV's files (a
// Pebble checkpoint) rather than a snapshot per key group. What a restore
// from them needs is here: the stores' layouts, to check that the job's
// state still has the same types (a per-key-group restore checks them
// too); which key groups hold entries, for the watermark of a rescaled
// restore; copying the entries of some key groups from another KV (a
// rescaled restore, as Flink's RocksDB backend does); and a view of the
// stores over a copy of the KV, to write a per-key-group snapshot of it
// later, off the goroutine that uses the backend (a savepoint).

// StoreLayout describes one store of a backend: what a restore from the
// backend's files checks against the stores of the new backend.
type StoreLayout struct {
	Name   string
	Kind   Kind
	Layout string
}

// Layouts describes the stores of b, in creation order.
func Layouts(b Backend) ([]StoreLayout, error) {
	var out []StoreLayout
	for _, s := range b.Stores() {
		sn, ok := s.(snapshotter)
		if !ok {
			return nil, fmt.Errorf("state %q: %T cannot be snapshotted", s.Name(), s)
		}
		lay, err := sn.layout()
		if err != nil {
			return nil, fmt.Errorf("state %q: %w", s.Name(), err)
		}
		out = append(out, StoreLayout{Name: s.Name(), Kind: s.Kind(), Layout: lay})
	}
	return out, nil
}

// CheckLayouts checks that every store saved (by Layouts, with the files
// b was restored from) exists in b under its name with the same kind and
// layout: the checks RestoreKeyGroups makes of a per-key-group snapshot.
func CheckLayouts(b Backend, saved []StoreLayout) error {
	have := map[string]StoreLayout{}
	cur, err := Layouts(b)
	if err != nil {
		return err
	}
	for _, l := range cur {
		have[l.Name] = l
	}
	var unknown []string
	for _, l := range saved {
		h, ok := have[l.Name]
		switch {
		case !ok:
			unknown = append(unknown, l.Name)
		case h.Kind != l.Kind:
			return fmt.Errorf("state %q: the snapshot holds %s state, the operator has %s state of that name", l.Name, l.Kind, h.Kind)
		case h.Layout != l.Layout:
			return fmt.Errorf("state %q: the snapshot's entries are encoded as %s, the state's types as %s: the types changed", l.Name, l.Layout, h.Layout)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("state: the snapshot holds state %q that no state of the operator claims (create state of the same name in Open)", unknown)
	}
	return nil
}

// NonEmptyKeyGroups lists the key groups of r that hold entries in kv (a
// Serial backend's), expired ones included.
func NonEmptyKeyGroups(kv KVStore, r KeyGroupRange) ([]int, error) {
	var out []int
	for kg := r.Start; kg < r.End; kg++ {
		found := false
		err := kv.Scan([]byte{byte(kg >> 8), byte(kg)}, []byte{byte((kg + 1) >> 8), byte(kg + 1)}, func(_, _ []byte) bool {
			found = true
			return false
		})
		if err != nil {
			return nil, err
		}
		if found {
			out = append(out, kg)
		}
	}
	return out, nil
}

// CopyKeyGroups copies into dst, the KV of a Serial backend not created
// yet (its stores are created afterwards, and find their entries), the
// entries of the key groups of r that src, the KV of another Serial
// backend, holds: a restore at another parallelism from the files of
// backends of other key-group ranges. State ids are matched by name: each
// state of src gets the id dst has for its name, or a new one, so that
// several sources merge. It returns the number of entries copied.
//
// Timers keep their times and their sequence numbers within their source;
// timers of the same time from different sources fire in key order.
func CopyKeyGroups(dst, src KVStore, r KeyGroupRange) (int, error) {
	dstIDs, next, err := stateIDs(dst)
	if err != nil {
		return 0, err
	}
	srcIDs, _, err := stateIDs(src)
	if err != nil {
		return 0, err
	}
	idMap := map[uint16]uint16{}
	names := slices.Sorted(maps.Keys(srcIDs))
	for _, name := range names {
		sid := srcIDs[name]
		did, ok := dstIDs[name]
		if ok && did.kind != sid.kind {
			return 0, fmt.Errorf("state %q: %s state in one backend, %s in another", name, sid.kind, did.kind)
		}
		if !ok {
			if next == metaKG {
				return 0, fmt.Errorf("too many states")
			}
			did = stateID{id: next, kind: sid.kind}
			next++
			dstIDs[name] = did
			mk := append([]byte{metaKG >> 8, metaKG & 0xff, 'n'}, name...)
			if err := dst.Set(mk, []byte{byte(did.id >> 8), byte(did.id), byte(did.kind)}); err != nil {
				return 0, err
			}
		}
		idMap[sid.id] = did.id
	}
	n := 0
	var kbuf []byte
	for kg := r.Start; kg < r.End; kg++ {
		var werr error
		err := src.Scan([]byte{byte(kg >> 8), byte(kg)}, []byte{byte((kg + 1) >> 8), byte(kg + 1)}, func(k, v []byte) bool {
			if len(k) < 4 {
				werr = fmt.Errorf("corrupt key %x", k)
				return false
			}
			id, ok := idMap[binary.BigEndian.Uint16(k[2:])]
			if !ok {
				werr = fmt.Errorf("key %x: of no state", k)
				return false
			}
			kbuf = append(append(kbuf[:0], k[:2]...), byte(id>>8), byte(id))
			kbuf = append(kbuf, k[4:]...)
			if werr = dst.Set(kbuf, bytes.Clone(v)); werr != nil {
				return false
			}
			n++
			return true
		})
		if err == nil {
			err = werr
		}
		if err != nil {
			return n, fmt.Errorf("state: copying key group %d: %w", kg, err)
		}
	}
	return n, nil
}

type stateID struct {
	id   uint16
	kind Kind
}

// stateIDs reads the state ids a Serial backend recorded in kv, by name,
// and the next free id.
func stateIDs(kv KVStore) (map[string]stateID, uint16, error) {
	ids := map[string]stateID{}
	next := uint16(1)
	prefix := []byte{metaKG >> 8, metaKG & 0xff, 'n'}
	var derr error
	err := kv.Scan(prefix, []byte{metaKG >> 8, metaKG & 0xff, 'o'}, func(k, v []byte) bool {
		if len(v) != 3 {
			derr = fmt.Errorf("corrupt state id record %x", k)
			return false
		}
		id := stateID{id: binary.BigEndian.Uint16(v), kind: Kind(v[2])}
		ids[string(k[len(prefix):])] = id
		next = max(next, id.id+1)
		return true
	})
	if err == nil {
		err = derr
	}
	return ids, next, err
}

// View is a read-only backend with the stores of a Serial backend over
// another KV holding a copy of its entries (a Pebble checkpoint of its
// database): SnapshotKeyGroup of a View writes the per-key-group snapshot
// of that copy. Make it (NewView) on the goroutine that uses the backend,
// at the moment of the copy; use it anywhere afterwards, with Bind.
type View struct {
	name   string
	maxP   int
	r      KeyGroupRange
	stores []viewStore
	bound  []Store
}

// viewStore is a serial store that can be copied onto another KV.
type viewStore interface {
	snapshotter
	onKV(kv KVStore, now func() int64) snapshotter
}

// NewView returns a View of the stores of b, a Serial backend (or one
// that embeds it), that judges TTL expiry at time now (unix ms).
func NewView(b Backend) (*View, error) {
	sb, ok := b.(serialBackend)
	if !ok {
		return nil, fmt.Errorf("state: %s backend: no view of its stores", b.Name())
	}
	s := sb.serial()
	v := &View{name: s.name, maxP: s.cfg.MaxParallelism, r: s.cfg.KeyGroups}
	for _, st := range s.stores {
		vs, ok := st.(viewStore)
		if !ok {
			return nil, fmt.Errorf("state %q: %T has no view", st.Name(), st)
		}
		v.stores = append(v.stores, vs.onKV(nil, nil).(viewStore))
	}
	return v, nil
}

// Bind makes the view read kv, with expiry judged at time now (unix ms).
// Bind before SnapshotKeyGroup, and not concurrently with it.
func (v *View) Bind(kv KVStore, now int64) {
	v.bound = v.bound[:0]
	clock := func() int64 { return now }
	for _, s := range v.stores {
		v.bound = append(v.bound, s.onKV(kv, clock))
	}
}

// Name implements Backend.
func (v *View) Name() string { return v.name + "-view" }

// MaxParallelism implements Backend.
func (v *View) MaxParallelism() int { return v.maxP }

// KeyGroups implements Backend.
func (v *View) KeyGroups() KeyGroupRange { return v.r }

// Stores implements Backend: the stores bound to the KV of the last Bind.
func (v *View) Stores() []Store { return slices.Clone(v.bound) }

// Close implements Backend; the KV is the caller's to close.
func (v *View) Close() error { return nil }

// onKV copies the base of a store onto kv: fresh scratch buffers and TTL
// cleanup cursor, expiry judged by now.
func (b sbase) onKV(kv KVStore, now func() int64) sbase {
	b.kv, b.now = kv, now
	b.kbuf, b.vbuf, b.cleanKey, b.writes = nil, nil, nil, 0
	return b
}

func (s *serialValue[K, N, V]) onKV(kv KVStore, now func() int64) snapshotter {
	c := *s
	c.sbase = s.sbase.onKV(kv, now)
	return &c
}

func (s *serialReducing[K, N, V]) onKV(kv KVStore, now func() int64) snapshotter {
	c := *s
	c.serialValue = s.serialValue.onKV(kv, now).(*serialValue[K, N, V])
	return &c
}

func (s *serialAggregating[K, N, IN, ACC, OUT]) onKV(kv KVStore, now func() int64) snapshotter {
	c := *s
	c.serialValue = s.serialValue.onKV(kv, now).(*serialValue[K, N, ACC])
	return &c
}

func (s *serialList[K, N, E]) onKV(kv KVStore, now func() int64) snapshotter {
	c := *s
	c.sbase = s.sbase.onKV(kv, now)
	return &c
}

func (s *serialMap[K, N, MK, MV]) onKV(kv KVStore, now func() int64) snapshotter {
	c := *s
	c.sbase = s.sbase.onKV(kv, now)
	return &c
}

// onKV of a timer queue drops the cached queue heads: a view reads timers
// from its KV only (KeyGroup).
func (q *serialTimers[K, N]) onKV(kv KVStore, now func() int64) snapshotter {
	c := *q
	c.sbase = q.sbase.onKV(kv, now)
	c.heads, c.ibuf, c.min = nil, nil, -1
	return &c
}
