package state

import (
	"fmt"

	"github.com/weirstream/weir/internal/keygroup"
)

// Heap is the default backend: typed Go values in hash tables, one table
// per key group and store, no serialization. An access is a probe of one
// table; reading or writing a value, reducing or aggregating into it does
// not allocate.
type Heap struct {
	cfg    Config
	stores []Store
	names  map[string]Store
}

// NewHeap returns an empty heap backend.
func NewHeap(cfg Config) (*Heap, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Heap{cfg: cfg, names: map[string]Store{}}, nil
}

// Name implements Backend.
func (h *Heap) Name() string { return "heap" }

// MaxParallelism implements Backend.
func (h *Heap) MaxParallelism() int { return h.cfg.MaxParallelism }

// KeyGroups implements Backend.
func (h *Heap) KeyGroups() KeyGroupRange { return h.cfg.KeyGroups }

// Stores implements Backend.
func (h *Heap) Stores() []Store { return append([]Store(nil), h.stores...) }

// Close implements Backend. The heap has nothing to release but its
// references, which it drops.
func (h *Heap) Close() error {
	h.stores, h.names = nil, nil
	return nil
}

// register checks that name is free and records s under it.
func (h *Heap) register(s Store) error {
	if s.Name() == "" {
		return fmt.Errorf("empty name")
	}
	if h.names == nil {
		return fmt.Errorf("backend closed")
	}
	if _, dup := h.names[s.Name()]; dup {
		return ErrDuplicateName
	}
	h.names[s.Name()] = s
	h.stores = append(h.stores, s)
	return nil
}

// base is what every heap store has.
type base struct {
	name   string
	kind   Kind
	ttl    int64 // ms; 0: no TTL
	onRead bool  // reads refresh the TTL
	now    func() int64
}

func (b *base) Name() string { return b.name }
func (b *base) Kind() Kind   { return b.kind }

// expiry is the expiry time of a value written at now.
func (b *base) expiry(now int64) int64 {
	if b.ttl == 0 {
		return NoExpiry
	}
	return now + b.ttl
}

func newBase(h *Heap, name string, kind Kind, o Options) (base, error) {
	if err := o.validate(h.cfg.Now); err != nil {
		return base{}, err
	}
	return base{name: name, kind: kind, ttl: o.ttlMillis(), onRead: o.TTLUpdateOnRead, now: h.cfg.Now}, nil
}

// nsKey is a table key: namespace first, so that the empty VoidNamespace
// adds no padding.
type nsKey[N, K comparable] struct {
	ns  N
	key K
}

// nsHasher hashes namespaces into table hashes. Plain keyed state (the
// VoidNamespace) uses the key's hash as it is.
type nsHasher[N comparable] struct {
	fn func(N) uint64 // nil for VoidNamespace
}

func newNSHasher[N comparable]() (nsHasher[N], error) {
	var zero N
	if _, ok := any(zero).(VoidNamespace); ok {
		return nsHasher[N]{}, nil
	}
	fn, err := keygroup.Hasher[N]()
	if err != nil {
		return nsHasher[N]{}, fmt.Errorf("namespace: %w", err)
	}
	return nsHasher[N]{fn}, nil
}

// mix combines a key's hash with its namespace into the table hash. XOR
// with a function of the namespace alone is invertible, which is how
// Entries recovers the key's hash.
func (n nsHasher[N]) mix(keyHash uint64, ns N) uint64 {
	if n.fn == nil {
		return keyHash
	}
	return keyHash ^ keygroup.Mix64(n.fn(ns))
}

func heapOf(b Backend) (*Heap, error) {
	if h, ok := b.(*Heap); ok {
		return h, nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnsupportedBackend, b.Name())
}

// NewValueStore creates a value store in b.
func NewValueStore[K, N comparable, V any](b Backend, name string, o Options) (_ ValueStore[K, N, V], err error) {
	defer named(name, &err)
	if sb, ok := b.(serialBackend); ok {
		s, err := newSerialValue[K, N, V](sb.serial(), name, KindValue, o)
		if err != nil {
			return nil, err
		}
		sb.serial().register(s)
		return s, nil
	}
	h, err := heapOf(b)
	if err != nil {
		return nil, err
	}
	s, err := newHeapValue[K, N, V](h, name, KindValue, o)
	if err != nil {
		return nil, err
	}
	if err := h.register(s); err != nil {
		return nil, err
	}
	return s, nil
}

// NewReducingStore creates a reducing store in b; reduce must be
// associative and must not access state.
func NewReducingStore[K, N comparable, V any](b Backend, name string, reduce func(a, b V) V, o Options) (_ ReducingStore[K, N, V], err error) {
	defer named(name, &err)
	if sb, ok := b.(serialBackend); ok {
		if reduce == nil {
			return nil, fmt.Errorf("nil reduce function")
		}
		v, err := newSerialValue[K, N, V](sb.serial(), name, KindReducing, o)
		if err != nil {
			return nil, err
		}
		s := &serialReducing[K, N, V]{serialValue: v, reduce: reduce}
		sb.serial().register(s)
		return s, nil
	}
	h, err := heapOf(b)
	if err != nil {
		return nil, err
	}
	if reduce == nil {
		return nil, fmt.Errorf("nil reduce function")
	}
	v, err := newHeapValue[K, N, V](h, name, KindReducing, o)
	if err != nil {
		return nil, err
	}
	s := &heapReducing[K, N, V]{heapValue: v, reduce: reduce}
	if err := h.register(s); err != nil {
		return nil, err
	}
	return s, nil
}

// NewAggregatingStore creates an aggregating store in b; agg must not access
// state.
func NewAggregatingStore[K, N comparable, IN, ACC, OUT any](b Backend, name string, agg Aggregator[IN, ACC, OUT], o Options) (_ AggregatingStore[K, N, IN, ACC, OUT], err error) {
	defer named(name, &err)
	if sb, ok := b.(serialBackend); ok {
		if agg == nil {
			return nil, fmt.Errorf("nil aggregate function")
		}
		v, err := newSerialValue[K, N, ACC](sb.serial(), name, KindAggregating, o)
		if err != nil {
			return nil, err
		}
		s := &serialAggregating[K, N, IN, ACC, OUT]{serialValue: v, agg: agg}
		sb.serial().register(s)
		return s, nil
	}
	h, err := heapOf(b)
	if err != nil {
		return nil, err
	}
	if agg == nil {
		return nil, fmt.Errorf("nil aggregate function")
	}
	v, err := newHeapValue[K, N, ACC](h, name, KindAggregating, o)
	if err != nil {
		return nil, err
	}
	s := &heapAggregating[K, N, IN, ACC, OUT]{heapValue: v, agg: agg}
	if err := h.register(s); err != nil {
		return nil, err
	}
	return s, nil
}

// NewListStore creates a list store in b.
func NewListStore[K, N comparable, E any](b Backend, name string, o Options) (_ ListStore[K, N, E], err error) {
	defer named(name, &err)
	if sb, ok := b.(serialBackend); ok {
		s, err := newSerialList[K, N, E](sb.serial(), name, o)
		if err != nil {
			return nil, err
		}
		sb.serial().register(s)
		return s, nil
	}
	h, err := heapOf(b)
	if err != nil {
		return nil, err
	}
	bs, err := newBase(h, name, KindList, o)
	if err != nil {
		return nil, err
	}
	nsh, err := newNSHasher[N]()
	if err != nil {
		return nil, err
	}
	s := &heapList[K, N, E]{base: bs, nsh: nsh, g: newGroups[nsKey[N, K], listVal[E]](h.cfg.KeyGroups, h.cfg.MaxParallelism)}
	if err := h.register(s); err != nil {
		return nil, err
	}
	return s, nil
}

// NewMapStore creates a map store in b. Map keys must have a stable hash
// (strings, numbers, arrays and structs of them), like stream keys: the
// iteration order of a map then depends only on its history, and a
// serializing backend can store them.
func NewMapStore[K, N, MK comparable, MV any](b Backend, name string, o Options) (_ MapStore[K, N, MK, MV], err error) {
	defer named(name, &err)
	if sb, ok := b.(serialBackend); ok {
		s, err := newSerialMap[K, N, MK, MV](sb.serial(), name, o)
		if err != nil {
			return nil, err
		}
		sb.serial().register(s)
		return s, nil
	}
	h, err := heapOf(b)
	if err != nil {
		return nil, err
	}
	bs, err := newBase(h, name, KindMap, o)
	if err != nil {
		return nil, err
	}
	nsh, err := newNSHasher[N]()
	if err != nil {
		return nil, err
	}
	mkh, err := keygroup.Hasher[MK]()
	if err != nil {
		return nil, fmt.Errorf("map key: %w", err)
	}
	s := &heapMap[K, N, MK, MV]{base: bs, nsh: nsh, mkh: mkh, g: newGroups[nsKey[N, K], *table[MK, ttlVal[MV]]](h.cfg.KeyGroups, h.cfg.MaxParallelism)}
	if err := h.register(s); err != nil {
		return nil, err
	}
	return s, nil
}

// NewTimerQueue creates a timer queue in b.
func NewTimerQueue[K, N comparable](b Backend, name string) (_ TimerQueue[K, N], err error) {
	defer named(name, &err)
	if sb, ok := b.(serialBackend); ok {
		s, err := newSerialTimers[K, N](sb.serial(), name)
		if err != nil {
			return nil, err
		}
		sb.serial().register(s)
		return s, nil
	}
	h, err := heapOf(b)
	if err != nil {
		return nil, err
	}
	nsh, err := newNSHasher[N]()
	if err != nil {
		return nil, err
	}
	s := &heapTimers[K, N]{name: name, nsh: nsh, g: newGroups[timerKey[N, K], int32](h.cfg.KeyGroups, h.cfg.MaxParallelism)}
	if err := h.register(s); err != nil {
		return nil, err
	}
	return s, nil
}
