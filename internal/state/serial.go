package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// KVStore is an ordered key-value store of bytes: what a Serial backend keeps
// its stores in (Pebble, see package pebblestate). It is used by one
// goroutine. The Serial backend owns it and closes it.
type KVStore interface {
	// Get appends the value of key to dst; ok is false when key is absent.
	Get(dst, key []byte) (val []byte, ok bool, err error)
	Set(key, value []byte) error
	Delete(key []byte) error
	// DeleteRange deletes the keys in [start, end).
	DeleteRange(start, end []byte) error
	// Merge merges operand into key's value as MergeList does (list
	// stores append elements without reading the list).
	Merge(key, operand []byte) error
	// Scan calls fn on the entries with keys in [start, end), in key
	// order, as they were when Scan started: writes during the scan, by
	// fn too, are allowed and not seen. key and value are valid during
	// the call only. Scan stops when fn returns false.
	Scan(start, end []byte, fn func(key, value []byte) bool) error
	Close() error
}

// ListHeader is the size of the header of a list store's values and merge
// operands (the key's hash), which MergeList keeps once.
const ListHeader = 8

// MergeList is the merge operation of list values: the oldest operand
// whole, then each newer one without its header. Operands are given oldest
// first. A KV implements Merge with it.
func MergeList(operands ...[]byte) []byte {
	n := 0
	for _, o := range operands {
		n += len(o)
	}
	out := make([]byte, 0, n)
	for i, o := range operands {
		if i == 0 {
			out = append(out, o...)
		} else {
			out = appendListOperand(out, o)
		}
	}
	return out
}

// appendListOperand appends a newer list operand to a list value, as
// MergeList merges it: without its header.
func appendListOperand(list, operand []byte) []byte {
	if len(operand) >= ListHeader {
		operand = operand[ListHeader:]
	}
	return append(list, operand...)
}

// Serial is a serializing backend: its stores keep entries as bytes in an
// ordered KVStore, so that state can be larger than memory. Keys are
//
//	key group (2 bytes, big-endian) | state id (2 bytes) | key | namespace [| map key]
//
// encoded by the key codecs (fixed-width big-endian integers, strings as
// length and bytes), so that a key group of a store is one contiguous key
// range and a key's map is one too. Values carry the key's hash (8 bytes)
// and expiry time (8 bytes) before the encoded value. State ids are
// allocated by name and recorded in the KV (under key group 0xFFFF), so
// that a KV reopened from files (an incremental checkpoint) maps names to
// the same ids.
//
// KV errors (I/O) panic with an error naming the state: the task running
// the operator fails, and the job restarts from its latest checkpoint.
type Serial struct {
	name   string
	cfg    Config
	kv     KVStore
	stores []Store
	names  map[string]Store
	nextID uint16
}

// metaKG is the key-group prefix of the backend's metadata; key groups are
// below it.
const metaKG = 0xFFFF

// NewSerial returns a backend over kv named name ("pebble").
func NewSerial(name string, cfg Config, kv KVStore) (*Serial, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.MaxParallelism > metaKG {
		return nil, fmt.Errorf("state: max parallelism %d: a serializing backend holds at most %d key groups", cfg.MaxParallelism, metaKG)
	}
	s := &Serial{name: name, cfg: cfg, kv: kv, names: map[string]Store{}, nextID: 1}
	start := []byte{metaKG >> 8, metaKG & 0xff, 'n'}
	err := kv.Scan(start, []byte{metaKG >> 8, metaKG & 0xff, 'o'}, func(_, v []byte) bool {
		if len(v) == 3 {
			s.nextID = max(s.nextID, binary.BigEndian.Uint16(v)+1)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Name implements Backend.
func (s *Serial) Name() string { return s.name }

// MaxParallelism implements Backend.
func (s *Serial) MaxParallelism() int { return s.cfg.MaxParallelism }

// KeyGroups implements Backend.
func (s *Serial) KeyGroups() KeyGroupRange { return s.cfg.KeyGroups }

// Stores implements Backend.
func (s *Serial) Stores() []Store { return append([]Store(nil), s.stores...) }

// KV is the store the backend keeps its entries in.
func (s *Serial) KV() KVStore { return s.kv }

// Close implements Backend: it closes the KV.
func (s *Serial) Close() error {
	if s.names == nil {
		return nil
	}
	s.stores, s.names = nil, nil
	return s.kv.Close()
}

func (s *Serial) serial() *Serial { return s }

// serialBackend is implemented by *Serial and by backends that embed it.
type serialBackend interface{ serial() *Serial }

// checkName checks that name is free.
func (s *Serial) checkName(name string) error {
	if name == "" {
		return fmt.Errorf("empty name")
	}
	if s.names == nil {
		return fmt.Errorf("backend closed")
	}
	if _, dup := s.names[name]; dup {
		return ErrDuplicateName
	}
	return nil
}

// allocate returns the state id of name, recorded in the KV, and whether
// the KV had it already (it may hold entries).
func (s *Serial) allocate(name string, kind Kind) (uint16, bool, error) {
	mk := append([]byte{metaKG >> 8, metaKG & 0xff, 'n'}, name...)
	v, ok, err := s.kv.Get(nil, mk)
	if err != nil {
		return 0, false, err
	}
	if ok {
		if len(v) != 3 {
			return 0, false, fmt.Errorf("corrupt state id record")
		}
		if Kind(v[2]) != kind {
			return 0, false, fmt.Errorf("the backend holds %s state of this name, not %s", Kind(v[2]), kind)
		}
		return binary.BigEndian.Uint16(v), true, nil
	}
	if s.nextID == metaKG {
		return 0, false, fmt.Errorf("too many states")
	}
	id := s.nextID
	if err := s.kv.Set(mk, []byte{byte(id >> 8), byte(id), byte(kind)}); err != nil {
		return 0, false, err
	}
	s.nextID++
	return id, false, nil
}

func (s *Serial) register(st Store) {
	s.names[st.Name()] = st
	s.stores = append(s.stores, st)
}

// sbase is what every serial store has.
type sbase struct {
	be     *Serial
	kv     KVStore
	name   string
	kind   Kind
	id     uint16
	ttl    int64
	onRead bool
	now    func() int64
	maxp   uint64
	r      KeyGroupRange
	kbuf   []byte // scratch: the key at hand
	vbuf   []byte // scratch: the value at hand

	// Incremental TTL cleanup: every cleanupEvery writes, the next
	// cleanupScan entries from the cursor are examined.
	writes   int
	cleanKG  int
	cleanKey []byte
}

const (
	cleanupEvery = 32
	cleanupScan  = 64
)

func (b *sbase) Name() string { return b.name }
func (b *sbase) Kind() Kind   { return b.kind }

func newSBase(be *Serial, name string, kind Kind, o Options) (sbase, error) {
	if err := be.checkName(name); err != nil {
		return sbase{}, err
	}
	if err := o.validate(be.cfg.Now); err != nil {
		return sbase{}, err
	}
	return sbase{be: be, kv: be.kv, name: name, kind: kind, ttl: o.ttlMillis(), onRead: o.TTLUpdateOnRead, now: be.cfg.Now,
		maxp: uint64(be.cfg.MaxParallelism), r: be.cfg.KeyGroups, cleanKG: be.cfg.KeyGroups.Start}, nil
}

// allocate gives the store its id, once every other check passed.
func (b *sbase) allocate() (existed bool, err error) {
	b.id, existed, err = b.be.allocate(b.name, b.kind)
	return existed, err
}

// fail panics with a KV error: see Serial.
func (b *sbase) fail(err error) {
	panic(fmt.Errorf("state %q: %w", b.name, err))
}

// kg returns the key group of a key's hash; outside the range it panics,
// as the heap does.
func (b *sbase) kg(hash uint64) int {
	kg := int(hash % b.maxp)
	if !b.r.Contains(kg) {
		outOfRange(hash, kg, b.r.Start, b.r.End)
	}
	return kg
}

// prefix appends the prefix of key group kg of the store.
func (b *sbase) prefix(dst []byte, kg int) []byte {
	return append(dst, byte(kg>>8), byte(kg), byte(b.id>>8), byte(b.id))
}

// groupRange is the key range of key group kg of the store.
func (b *sbase) groupRange(kg int) (start, end []byte) {
	start = b.prefix(nil, kg)
	return start, prefixEnd(start)
}

// prefixEnd is the first key after every key that starts with p.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil // p is all 0xff: no end (never here: key groups are < 0xffff)
}

func (b *sbase) get(key []byte) ([]byte, bool) {
	v, ok, err := b.kv.Get(b.vbuf[:0], key)
	if err != nil {
		b.fail(err)
	}
	if ok {
		b.vbuf = v
	}
	return v, ok
}

func (b *sbase) set(key, val []byte) {
	if err := b.kv.Set(key, val); err != nil {
		b.fail(err)
	}
}

func (b *sbase) del(key []byte) {
	if err := b.kv.Delete(key); err != nil {
		b.fail(err)
	}
}

// nowIfTTL is the current time with TTL, and before all times without.
func (b *sbase) nowIfTTL() int64 {
	if b.ttl == 0 {
		return math.MinInt64
	}
	return b.now()
}

// scanEntries yields the live entries of key group kg of a store whose KV
// entries are keyed (key group, id, key, namespace, ...) and hold (hash,
// expiry, ...). decode reads the rest of the key after the namespace and
// the value after hash and expiry into e. A decoding error, or a value too
// short (a corrupt what), ends the scan and fails the backend.
func scanEntries[K, N, V any](b *sbase, kg int, k typed[K], n typed[N], what string, decode func(e *Entry[K, N, V], rest, val []byte) error, yield func(Entry[K, N, V]) bool) {
	if !b.r.Contains(kg) {
		return
	}
	now := b.nowIfTTL()
	start, end := b.groupRange(kg)
	var err error
	b.scan(start, end, func(key, val []byte) bool {
		var e Entry[K, N, V]
		if len(val) < 16 {
			err = errors.New("corrupt " + what)
			return false
		}
		e.Hash = binary.BigEndian.Uint64(val)
		e.Expires = int64(binary.BigEndian.Uint64(val[8:]))
		if now >= e.Expires {
			return true
		}
		rest := key[4:]
		if rest, err = k.read(rest, &e.Key); err != nil {
			return false
		}
		if rest, err = n.read(rest, &e.NS); err != nil {
			return false
		}
		if err = decode(&e, rest, val[16:]); err != nil {
			return false
		}
		return yield(e)
	})
	if err != nil {
		b.fail(fmt.Errorf("decode: %w", err))
	}
}

func (b *sbase) scan(start, end []byte, fn func(k, v []byte) bool) {
	if err := b.kv.Scan(start, end, fn); err != nil {
		b.fail(err)
	}
}

func (b *sbase) expiry(now int64) int64 {
	if b.ttl == 0 {
		return NoExpiry
	}
	return now + b.ttl
}

// header appends a value's header: the key's hash and the expiry time.
func header(dst []byte, hash uint64, exp int64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, hash)
	return binary.BigEndian.AppendUint64(dst, uint64(exp))
}

func (b *sbase) corrupt(what string) {
	b.fail(fmt.Errorf("corrupt %s", what))
}

// sweep is a step of incremental TTL cleanup, every cleanupEvery writes:
// it examines the next cleanupScan entries of the store, in key order from
// a cursor that cycles through its key groups, and deletes (or rewrites,
// with what clean returns) the expired ones. Expiry on access stays the
// rule; this bounds the state of keys that are never accessed again.
func (b *sbase) sweep(now int64, clean func(key, val []byte, now int64) (drop bool, keep []byte)) {
	if b.ttl == 0 {
		return
	}
	if b.writes++; b.writes < cleanupEvery {
		return
	}
	b.writes = 0
	type change struct {
		key, val []byte
	}
	var changes []change
	left := cleanupScan
	for range b.r.Len() {
		start, end := b.groupRange(b.cleanKG)
		if b.cleanKey != nil {
			start = b.cleanKey
		}
		var last []byte
		b.scan(start, end, func(k, v []byte) bool {
			left--
			if drop, keep := clean(k, v, now); drop {
				changes = append(changes, change{bytes.Clone(k), nil})
			} else if keep != nil {
				changes = append(changes, change{bytes.Clone(k), bytes.Clone(keep)})
			}
			if left == 0 {
				last = bytes.Clone(k)
				return false
			}
			return true
		})
		if last != nil {
			b.cleanKey = append(last, 0) // the first key after it
			break
		}
		b.cleanKey = nil
		if b.cleanKG++; b.cleanKG >= b.r.End {
			b.cleanKG = b.r.Start
		}
		left -= cleanupScan / 8 // a key group costs an iterator: at most 8 a step
		if left <= 0 {
			break
		}
	}
	for _, c := range changes {
		if c.val == nil {
			b.del(c.key)
		} else {
			b.set(c.key, c.val)
		}
	}
}
