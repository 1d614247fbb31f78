package state_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/statetest"
)

// memKV is a sorted in-memory KVStore: the serial backend's stores tested
// without Pebble.
type memKV struct {
	keys [][]byte
	vals [][]byte
}

func (m *memKV) find(k []byte) (int, bool) {
	return slices.BinarySearchFunc(m.keys, k, bytes.Compare)
}

func (m *memKV) Get(dst, k []byte) ([]byte, bool, error) {
	i, ok := m.find(k)
	if !ok {
		return nil, false, nil
	}
	return append(dst, m.vals[i]...), true, nil
}

func (m *memKV) Set(k, v []byte) error {
	i, ok := m.find(k)
	if ok {
		m.vals[i] = bytes.Clone(v)
		return nil
	}
	m.keys = slices.Insert(m.keys, i, bytes.Clone(k))
	m.vals = slices.Insert(m.vals, i, bytes.Clone(v))
	return nil
}

func (m *memKV) Delete(k []byte) error {
	if i, ok := m.find(k); ok {
		m.keys = slices.Delete(m.keys, i, i+1)
		m.vals = slices.Delete(m.vals, i, i+1)
	}
	return nil
}

func (m *memKV) DeleteRange(start, end []byte) error {
	i, _ := m.find(start)
	j, _ := m.find(end)
	m.keys = slices.Delete(m.keys, i, j)
	m.vals = slices.Delete(m.vals, i, j)
	return nil
}

func (m *memKV) Merge(k, v []byte) error {
	if i, ok := m.find(k); ok {
		m.vals[i] = state.MergeList(m.vals[i], v)
		return nil
	}
	return m.Set(k, v)
}

func (m *memKV) Scan(start, end []byte, fn func(k, v []byte) bool) error {
	i, _ := m.find(start)
	j := len(m.keys)
	if end != nil {
		j, _ = m.find(end)
	}
	keys, vals := slices.Clone(m.keys[i:j]), slices.Clone(m.vals[i:j])
	for x := range keys {
		if !fn(keys[x], vals[x]) {
			break
		}
	}
	return nil
}

func (m *memKV) Close() error { return nil }

func TestSerialConformance(t *testing.T) {
	statetest.Run(t, func(t *testing.T, cfg state.Config) state.Backend {
		s, err := state.NewSerial("memkv", cfg, &memKV{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// Expired entries of keys that are never accessed again are removed by the
// incremental cleanup that writes drive: the KV does not keep them.
func TestSerialTTLCleanup(t *testing.T) {
	var now int64
	kv := &memKV{}
	cfg := state.Config{MaxParallelism: 128, KeyGroups: state.KeyGroupRange{Start: 0, End: 128}, Now: func() int64 { return now }}
	be, err := state.NewSerial("memkv", cfg, kv)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := state.NewValueStore[int64, state.VoidNamespace, string](be, "v", state.Options{TTL: 100 * time.Millisecond})
	m, _ := state.NewMapStore[int64, state.VoidNamespace, int, int](be, "m", state.Options{TTL: 100 * time.Millisecond})
	l, _ := state.NewListStore[int64, state.VoidNamespace, int](be, "l", state.Options{TTL: 100 * time.Millisecond})
	hash, _ := keygroup.Hasher[int64]()
	var void state.VoidNamespace
	write := func(from, to int64) {
		for k := from; k < to; k++ {
			v.Put(hash(k), k, void, "x")
			m.Put(hash(k), k, void, 1, 1)
			m.Put(hash(k), k, void, 2, 2)
			l.Add(hash(k), k, void, 1)
		}
	}
	write(0, 2000)
	if n := len(kv.keys); n < 4*2000 {
		t.Fatalf("%d KV entries after writing 2000 keys", n)
	}
	now = 1000 // all expired
	write(10000, 12000)
	t.Logf("%d KV entries after 2000 more keys", len(kv.keys))
	// 2000 live keys have 4 entries each; few expired ones may be left.
	if n := len(kv.keys); n > 4*2000+400 {
		t.Fatalf("%d KV entries: the expired ones were not cleaned up", n)
	}
}
