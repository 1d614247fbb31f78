package engine

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/internal/hashtable"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/metrics"
)

// routed is one record as a target received it.
type routed[K comparable] struct {
	target, pos int
	hash        uint64
	key         K
	val, ts, wm int64
}

// runHashWriter pushes the same input batches through a hash writer with
// the int64 fast path on or off and returns what each target received.
func runHashWriter[K comparable](t *testing.T, word64 bool, key func(int64) K, in [][]int64, parallelism int) []routed[K] {
	t.Helper()
	hash, err := keygroup.Hasher[K]()
	if err != nil {
		t.Fatal(err)
	}
	st := &subtask{plan: &plan{job: &Job{cfg: config{batchSize: 7, maxParallelism: 128}}}}
	done := make(chan struct{})
	defer close(done)
	targets := make([]target, parallelism)
	for i := range targets {
		targets[i] = target{gate: exec.NewGate(1, 10_000, done)}
	}
	pool := newBatchPool[keyed[K, int64]](7)
	w := newHashWriter(st, targets, pool, &metrics.Operator{}, key, hash)
	if w.word64 != keygroup.IsWord64[K]() {
		t.Fatalf("word64 = %v for %T", w.word64, *new(K))
	}
	w.word64 = word64
	wm := int64(0)
	for _, vals := range in {
		b := newBatch[int64](len(vals))
		for _, v := range vals {
			b.add(v, v/3, wm)
			wm += v & 3
		}
		b.watermark = wm
		if err := w.push(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.finish(); err != nil {
		t.Fatal(err)
	}
	var out []routed[K]
	for ti, tg := range targets {
		pos := 0
		for {
			m, ok := tg.gate.TryNext()
			if !ok || m.Kind == exec.End {
				break
			}
			b := m.Batch.(*batch[keyed[K, int64]])
			for i, r := range b.data {
				if want := hash(r.key); r.hash != want {
					t.Fatalf("target %d: key %v carries hash %x, its hash is %x", ti, r.key, r.hash, want)
				}
				out = append(out, routed[K]{ti, pos, r.hash, r.key, r.val, b.ts[i], b.wm[i]})
				pos++
			}
		}
	}
	return out
}

// The int64-key fast path of the hash writer (keygroup.Word64 inline)
// sends every record to the same target, in the same order, with the same
// hash, as the generic path through the key type's hash function: random
// keys, including the extremes, at several parallelisms and key types.
func TestHashWriterWord64MatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var in [][]int64
	extremes := []int64{0, -1, 1, math.MinInt64, math.MaxInt64}
	for i := 0; i < 40; i++ {
		vals := make([]int64, rng.IntN(30))
		for j := range vals {
			switch rng.IntN(3) {
			case 0:
				vals[j] = extremes[rng.IntN(len(extremes))]
			case 1:
				vals[j] = rng.Int64N(1000) - 500
			default:
				vals[j] = int64(rng.Uint64())
			}
		}
		in = append(in, vals)
	}
	for _, p := range []int{1, 2, 3, 7} {
		f64 := runHashWriter(t, true, func(v int64) int64 { return v }, in, p)
		g64 := runHashWriter(t, false, func(v int64) int64 { return v }, in, p)
		if len(f64) != len(g64) {
			t.Fatalf("int64 p=%d: %d records on the fast path, %d on the generic", p, len(f64), len(g64))
		}
		for i := range f64 {
			if f64[i] != g64[i] {
				t.Fatalf("int64 p=%d: record %d: fast path %+v, generic %+v", p, i, f64[i], g64[i])
			}
		}
		fu := runHashWriter(t, true, func(v int64) uint { return uint(v) * 31 }, in, p)
		gu := runHashWriter(t, false, func(v int64) uint { return uint(v) * 31 }, in, p)
		if len(fu) != len(gu) {
			t.Fatalf("uint p=%d: %d records on the fast path, %d on the generic", p, len(fu), len(gu))
		}
		for i := range fu {
			if fu[i] != gu[i] {
				t.Fatalf("uint p=%d: record %d: fast path %+v, generic %+v", p, i, fu[i], gu[i])
			}
		}
	}
}

func TestIsWord64(t *testing.T) {
	type id int64
	if !keygroup.IsWord64[int64]() || !keygroup.IsWord64[uint64]() || !keygroup.IsWord64[int]() || !keygroup.IsWord64[id]() {
		t.Error("8-byte integers must take the Word64 path")
	}
	if keygroup.IsWord64[int32]() || keygroup.IsWord64[string]() || keygroup.IsWord64[struct{ A int64 }]() || keygroup.IsWord64[float64]() {
		t.Error("only 8-byte integers take the Word64 path")
	}
	h, _ := keygroup.Hasher[id]()
	for _, x := range []int64{0, 1, -1, math.MinInt64, 42} {
		if h(id(x)) != keygroup.Word64(uint64(x)) {
			t.Errorf("Hasher[id](%d) != Word64", x)
		}
	}
}

func TestPointerFree(t *testing.T) {
	type plain struct {
		A int64
		B [3]float64
		C struct{ D bool }
	}
	type withPtr struct {
		A int64
		S string
	}
	for _, c := range []struct {
		v    any
		want bool
	}{
		{int64(0), true}, {plain{}, true}, {keyed[int64, plain]{}, true}, {[0]*int{}, true},
		{"", false}, {withPtr{}, false}, {[]int{}, false}, {(*int)(nil), false}, {[2]withPtr{}, false},
		{keyed[string, int64]{}, false}, {map[int]int{}, false},
	} {
		if got := hashtable.PointerFree(reflectTypeOf(c.v)); got != c.want {
			t.Errorf("pointerFree(%T) = %v, want %v", c.v, got, c.want)
		}
	}
}

func reflectTypeOf(v any) reflect.Type { return reflect.TypeOf(v) }
