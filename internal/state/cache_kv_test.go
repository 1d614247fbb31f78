package state_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/statetest"
)

// The serial stores' conformance suite over a write-back cache in front
// of the KV: a roomy one (every entry stays cached) and a tiny one (most
// operations evict, writing dirty entries to the KV).
func TestCachedKVConformance(t *testing.T) {
	for _, size := range []int64{600} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			statetest.Run(t, func(t *testing.T, cfg state.Config) state.Backend {
				s, err := state.NewSerial("cached", cfg, state.NewCachedKV(&memKV{}, size))
				if err != nil {
					t.Fatal(err)
				}
				return s
			})
		})
	}
}

// TestCachedKVMatchesKV: random operations on a cache in front of a KV
// read as the same operations on a KV alone, at every Get and Scan, and
// the KV holds the same entries after Flush.
func TestCachedKVMatchesKV(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		ref, under := &memKV{}, &memKV{}
		size := []int64{0, 300, 2000, 1 << 20}[seed%4]
		c := state.NewCachedKV(under, size)
		key := func() []byte {
			return []byte{byte(rng.IntN(3)), byte(rng.IntN(12))}
		}
		val := func() []byte {
			// list values: a header (8 bytes) and elements
			v := binary.BigEndian.AppendUint64(nil, 42)
			for range rng.IntN(4) {
				v = append(v, byte(rng.Uint32()))
			}
			return v
		}
		type kvs = [][2][]byte
		scan := func(kv state.KVStore, start, end []byte, limit int) kvs {
			var out kvs
			if err := kv.Scan(start, end, func(k, v []byte) bool {
				out = append(out, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
				return len(out) < limit
			}); err != nil {
				t.Fatal(err)
			}
			return out
		}
		n := 3000
		if seed < 4 {
			n = 100000 // periods of the admission (16,384 Gets)
		}
		for i := range n {
			switch op := rng.IntN(10); op {
			case 0, 1:
				k := key()
				want, wok, _ := ref.Get([]byte("x"), k)
				got, gok, err := c.Get([]byte("x"), k)
				if err != nil || gok != wok || wok && !bytes.Equal(got, want) {
					t.Fatalf("seed %d op %d: Get(%x) = %x %v %v, want %x %v", seed, i, k, got, gok, err, want, wok)
				}
			case 2, 3:
				k, v := key(), val()
				ref.Set(k, v)
				if err := c.Set(k, v); err != nil {
					t.Fatal(err)
				}
				v[len(v)-1]++ // the caller reuses its buffer
			case 4:
				k := key()
				ref.Delete(k)
				if err := c.Delete(k); err != nil {
					t.Fatal(err)
				}
			case 5, 6:
				k, v := key(), val()
				ref.Merge(k, v)
				if err := c.Merge(k, v); err != nil {
					t.Fatal(err)
				}
			case 7:
				start, end := key(), key()
				if bytes.Compare(start, end) > 0 {
					start, end = end, start
				}
				ref.DeleteRange(start, end)
				if err := c.DeleteRange(start, end); err != nil {
					t.Fatal(err)
				}
			case 8:
				start, end := key(), key()
				if bytes.Compare(start, end) > 0 {
					start, end = end, start
				}
				if rng.IntN(4) == 0 {
					end = nil
				}
				limit := 1 + rng.IntN(20)
				want, got := scan(ref, start, end, limit), scan(c, start, end, limit)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("seed %d op %d: Scan(%x, %x) = %x, want %x", seed, i, start, end, got, want)
				}
			case 9:
				if rng.IntN(20) == 0 {
					if err := c.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if size > 0 && c.Bytes() > size+200 {
				t.Fatalf("seed %d op %d: %d bytes cached, more than the size %d and one entry", seed, i, c.Bytes(), size)
			}
		}
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
		if got, want := scan(under, []byte{}, nil, 1<<30), scan(ref, []byte{}, nil, 1<<30); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("seed %d: after Flush the KV holds %x, want %x", seed, got, want)
		}
		if cs := c.Counters(); size == 1<<20 && cs.Hits == 0 {
			t.Fatalf("seed %d: no Get answered from the cache: %+v", seed, cs)
		}
		if cs := c.Counters(); seed == 1 && cs.Bypassed == 0 {
			// 300 bytes hold two entries of 36 keys: few hits
			t.Fatalf("seed %d: a cache of two entries for 36 keys never bypassed: %+v", seed, cs)
		}
	}
}
