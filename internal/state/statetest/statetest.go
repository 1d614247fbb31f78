// Package statetest is the conformance suite of state backends: every
// backend runs it (see Run), so that operators behave the same whichever
// backend holds their state.
package statetest

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// NewBackend creates an empty backend with cfg. The suite calls it for
// every test, with its own clock in cfg.Now, and closes the backend at the
// end of the test.
type NewBackend func(t *testing.T, cfg state.Config) state.Backend

// Run runs the suite against the backends made by newBackend.
func Run(t *testing.T, newBackend NewBackend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"Backend", testBackend},
		{"Names", testNames},
		{"Value", testValue},
		{"ValueNamespaces", testValueNamespaces},
		{"ValueHashCollisions", testValueCollisions},
		{"ValueModel", testValueModel},
		{"Reducing", testReducing},
		{"Aggregating", testAggregating},
		{"List", testList},
		{"Map", testMap},
		{"MapIterationRemove", testMapIterationRemove},
		{"MapModel", testMapModel},
		{"UnsupportedTypes", testUnsupportedTypes},
		{"TTLOptions", testTTLOptions},
		{"TTLValue", testTTLValue},
		{"TTLValueUpdateOnRead", testTTLValueUpdateOnRead},
		{"TTLReducing", testTTLReducing},
		{"TTLAggregating", testTTLAggregating},
		{"TTLList", testTTLList},
		{"TTLMap", testTTLMap},
		{"TTLMapUpdateOnRead", testTTLMapUpdateOnRead},
		{"Timers", testTimers},
		{"TimersNamespaces", testTimersNamespaces},
		{"TimersModel", testTimersModel},
		{"TimersDense", testTimersDense},
		{"SnapshotRoundTrip", testSnapshotRoundTrip},
		{"SnapshotRescale", testSnapshotRescale},
		{"SnapshotErrors", testSnapshotErrors},
	}
	for _, tc := range tests {
		for _, kgs := range []struct {
			max int
			r   state.KeyGroupRange
		}{
			{128, state.KeyGroupRange{Start: 32, End: 96}}, // a subtask's share, power of two
			{100, state.KeyGroupRange{Start: 0, End: 100}}, // not a power of two
		} {
			t.Run(fmt.Sprintf("%s/max%d", tc.name, kgs.max), func(t *testing.T) {
				clk := &Clock{}
				e := &env{t: t, newBackend: newBackend, clk: clk, cfg: state.Config{MaxParallelism: kgs.max, KeyGroups: kgs.r, Now: clk.Now}}
				e.be = newBackend(t, e.cfg)
				t.Cleanup(func() {
					if err := e.be.Close(); err != nil {
						t.Errorf("Close: %v", err)
					}
				})
				e.hash, _ = keygroup.Hasher[string]()
				tc.fn(t, e)
			})
		}
	}
}

// Clock is a fake processing-time clock in unix ms.
type Clock struct{ ms int64 }

// Now returns the clock's time.
func (c *Clock) Now() int64 { return c.ms }

// Set sets the clock's time.
func (c *Clock) Set(ms int64) { c.ms = ms }

type env struct {
	t          *testing.T
	newBackend NewBackend
	clk        *Clock
	cfg        state.Config
	be         state.Backend
	hash       func(string) uint64
}

// key is a key of the backend's key-group range with its hash.
type key struct {
	h uint64
	k string
}

// keys returns n distinct keys whose key groups are in the range.
func (e *env) keys(n int) []key {
	var out []key
	for i := 0; len(out) < n; i++ {
		k := fmt.Sprintf("key-%d", i)
		h := e.hash(k)
		if e.cfg.KeyGroups.Contains(keygroup.Of(h, e.cfg.MaxParallelism)) {
			out = append(out, key{h, k})
		}
	}
	return out
}

func (e *env) kg(h uint64) int { return keygroup.Of(h, e.cfg.MaxParallelism) }

// must returns v; a store the suite needs but cannot create is a failure
// of the backend under test, and there is no going on without it.
func must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprintf("statetest: creating a store: %v", err))
	}
	return v
}

type void = state.VoidNamespace

var v0 void

func testBackend(t *testing.T, e *env) {
	if e.be.Name() == "" {
		t.Error("empty backend name")
	}
	if e.be.MaxParallelism() != e.cfg.MaxParallelism || e.be.KeyGroups() != e.cfg.KeyGroups {
		t.Errorf("backend reports max %d range %v, configured %d %v", e.be.MaxParallelism(), e.be.KeyGroups(), e.cfg.MaxParallelism, e.cfg.KeyGroups)
	}
	if len(e.be.Stores()) != 0 {
		t.Errorf("new backend has stores %v", e.be.Stores())
	}
	// A key outside the range is a routing bug: it must not be stored
	// silently.
	s := must(state.NewValueStore[string, void, int](e.be, "v", state.Options{}))
	var outside uint64
	for h := uint64(0); ; h++ {
		if !e.cfg.KeyGroups.Contains(e.kg(h)) {
			outside = h
			break
		}
		if h > 1<<16 {
			return // the range is everything
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Put of a key outside the key-group range did not panic")
		}
	}()
	s.Put(outside, "x", v0, 1)
}

func testNames(t *testing.T, e *env) {
	must(state.NewValueStore[string, void, int](e.be, "a", state.Options{}))
	must(state.NewListStore[string, void, int](e.be, "b", state.Options{}))
	must(state.NewMapStore[string, void, string, int](e.be, "c", state.Options{}))
	must(state.NewReducingStore[string, void, int](e.be, "d", func(a, b int) int { return a + b }, state.Options{}))
	must(state.NewAggregatingStore[string, void, int, int, int](e.be, "e", sumAgg{}, state.Options{}))
	must(state.NewTimerQueue[string, void](e.be, "f"))
	var got []string
	for _, s := range e.be.Stores() {
		got = append(got, s.Name()+":"+s.Kind().String())
	}
	want := []string{"a:value", "b:list", "c:map", "d:reducing", "e:aggregating", "f:timers"}
	if !slices.Equal(got, want) {
		t.Errorf("Stores() = %v, want %v", got, want)
	}
	for _, name := range []string{"a", "f"} {
		if _, err := state.NewValueStore[string, void, int](e.be, name, state.Options{}); !errors.Is(err, state.ErrDuplicateName) {
			t.Errorf("second store %q: err %v, want ErrDuplicateName", name, err)
		}
		if _, err := state.NewTimerQueue[string, void](e.be, name); !errors.Is(err, state.ErrDuplicateName) {
			t.Errorf("timer queue %q: err %v, want ErrDuplicateName", name, err)
		}
	}
	if _, err := state.NewValueStore[string, void, int](e.be, "", state.Options{}); err == nil {
		t.Error("empty name accepted")
	}
	if len(e.be.Stores()) != 6 {
		t.Errorf("failed creations registered stores: %d", len(e.be.Stores()))
	}
}

func testValue(t *testing.T, e *env) {
	s := must(state.NewValueStore[string, void, int](e.be, "v", state.Options{}))
	other := must(state.NewValueStore[string, void, int](e.be, "w", state.Options{}))
	ks := e.keys(2)
	a, b := ks[0], ks[1]
	if v, ok := s.Get(a.h, a.k, v0); ok {
		t.Fatalf("Get of an empty store = %v", v)
	}
	s.Put(a.h, a.k, v0, 1)
	s.Put(b.h, b.k, v0, 2)
	other.Put(a.h, a.k, v0, 3)
	if v, ok := s.Get(a.h, a.k, v0); !ok || v != 1 {
		t.Fatalf("Get(a) = %v, %v; want 1", v, ok)
	}
	s.Put(a.h, a.k, v0, 10)
	if v, _ := s.Get(a.h, a.k, v0); v != 10 {
		t.Fatalf("Get after overwrite = %v", v)
	}
	if v, _ := other.Get(a.h, a.k, v0); v != 3 {
		t.Fatalf("other store's value = %v, want 3: stores are not isolated", v)
	}
	s.Delete(a.h, a.k, v0)
	s.Delete(a.h, a.k, v0) // deleting nothing is fine
	if _, ok := s.Get(a.h, a.k, v0); ok {
		t.Fatal("Get after Delete found a value")
	}
	if v, _ := s.Get(b.h, b.k, v0); v != 2 {
		t.Fatalf("Delete(a) changed b: %v", v)
	}
	checkEntries(t, e, s.Entries, map[string]int{b.k: 2})
}

// window is a namespace like a window operator's.
type window struct{ Start, End int64 }

func testValueNamespaces(t *testing.T, e *env) {
	s := must(state.NewValueStore[string, window, string](e.be, "v", state.Options{}))
	ks := e.keys(3)
	for i, k := range ks {
		for w := int64(0); w < 3; w++ {
			s.Put(k.h, k.k, window{w, w + 10}, fmt.Sprint(i, w))
		}
	}
	s.Delete(ks[1].h, ks[1].k, window{1, 11})
	for i, k := range ks {
		for w := int64(0); w < 3; w++ {
			v, ok := s.Get(k.h, k.k, window{w, w + 10})
			if i == 1 && w == 1 {
				if ok {
					t.Errorf("deleted namespace still has %q", v)
				}
				continue
			}
			if !ok || v != fmt.Sprint(i, w) {
				t.Errorf("key %d window %d = %q, %v", i, w, v, ok)
			}
		}
	}
	n := 0
	for kg := e.cfg.KeyGroups.Start; kg < e.cfg.KeyGroups.End; kg++ {
		for en := range s.Entries(kg) {
			n++
			if e.hash(en.Key) != en.Hash || e.kg(en.Hash) != kg {
				t.Errorf("entry %+v in key group %d: wrong hash", en, kg)
			}
			if want := fmt.Sprint(slices.IndexFunc(ks, func(k key) bool { return k.k == en.Key }), en.NS.Start); en.Value != want {
				t.Errorf("entry %+v, want value %q", en, want)
			}
		}
	}
	if n != 8 {
		t.Errorf("Entries listed %d entries, want 8", n)
	}
	// int64 namespaces too.
	si := must(state.NewValueStore[string, int64, int](e.be, "i", state.Options{}))
	si.Put(ks[0].h, ks[0].k, 7, 70)
	if _, ok := si.Get(ks[0].h, ks[0].k, 8); ok {
		t.Error("namespace 8 sees namespace 7's value")
	}
	if v, _ := si.Get(ks[0].h, ks[0].k, 7); v != 70 {
		t.Errorf("namespace 7 = %d", v)
	}
}

// Keys with the same hash are distinct keys: the hash selects, equality
// decides.
func testValueCollisions(t *testing.T, e *env) {
	s := must(state.NewValueStore[string, void, int](e.be, "v", state.Options{}))
	h := e.keys(1)[0].h
	for i := range 50 {
		s.Put(h, fmt.Sprint("c", i), v0, i)
	}
	for i := 0; i < 50; i += 2 {
		s.Delete(h, fmt.Sprint("c", i), v0)
	}
	for i := range 50 {
		v, ok := s.Get(h, fmt.Sprint("c", i), v0)
		if ok != (i%2 == 1) || (ok && v != i) {
			t.Fatalf("colliding key c%d = %v, %v", i, v, ok)
		}
	}
}

func testValueModel(t *testing.T, e *env) {
	s := must(state.NewValueStore[string, void, int](e.be, "v", state.Options{}))
	ks := e.keys(600)
	model := map[string]int{}
	r := rand.New(rand.NewPCG(1, 2))
	for step := range 30000 {
		k := ks[r.IntN(len(ks))]
		switch r.IntN(4) {
		case 0, 1:
			s.Put(k.h, k.k, v0, step)
			model[k.k] = step
		case 2:
			s.Delete(k.h, k.k, v0)
			delete(model, k.k)
		case 3:
			v, ok := s.Get(k.h, k.k, v0)
			if mv, mok := model[k.k]; ok != mok || v != mv {
				t.Fatalf("step %d: Get(%s) = %v, %v; model %v, %v", step, k.k, v, ok, mv, mok)
			}
		}
	}
	checkEntries(t, e, s.Entries, model)
}

// checkEntries checks that a store's entries, over every key group, are
// exactly want, each listed under its own key group with its key's hash.
func checkEntries[N, V comparable](t *testing.T, e *env, entries func(int) iter.Seq[state.Entry[string, N, V]], want map[string]V) {
	t.Helper()
	got := map[string]V{}
	for kg := e.cfg.KeyGroups.Start - 1; kg <= e.cfg.KeyGroups.End; kg++ {
		for en := range entries(kg) {
			if !e.cfg.KeyGroups.Contains(kg) {
				t.Fatalf("Entries(%d) outside the range listed %+v", kg, en)
			}
			if en.Hash != e.hash(en.Key) || e.kg(en.Hash) != kg {
				t.Fatalf("entry %+v listed under key group %d", en, kg)
			}
			if _, dup := got[en.Key]; dup {
				t.Fatalf("key %s listed twice", en.Key)
			}
			got[en.Key] = en.Value
		}
	}
	if len(got) != len(want) {
		t.Fatalf("Entries: %d entries, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("Entries: %s = %v, want %v", k, got[k], v)
		}
	}
}

func testReducing(t *testing.T, e *env) {
	s := must(state.NewReducingStore[string, void, int](e.be, "r", func(a, b int) int { return a*10 + b }, state.Options{}))
	ks := e.keys(2)
	a, b := ks[0], ks[1]
	if _, ok := s.Get(a.h, a.k, v0); ok {
		t.Fatal("empty reducing store has a value")
	}
	for _, v := range []int{1, 2, 3} {
		s.Add(a.h, a.k, v0, v)
	}
	s.Add(b.h, b.k, v0, 9)
	if v, ok := s.Get(a.h, a.k, v0); !ok || v != 123 {
		t.Fatalf("reduced %v, %v; want 123 (first value as is, then in order)", v, ok)
	}
	checkEntries(t, e, s.Entries, map[string]int{a.k: 123, b.k: 9})
	s.Delete(a.h, a.k, v0)
	s.Add(a.h, a.k, v0, 4)
	if v, _ := s.Get(a.h, a.k, v0); v != 4 {
		t.Fatalf("after Delete and Add(4): %v", v)
	}
}

// sumAgg sums ints; its accumulator counts too, so Result differs from it.
type sumAgg struct{}

func (sumAgg) Create() int             { return 1000 }
func (sumAgg) Add(acc int, in int) int { return acc + in }
func (sumAgg) Result(acc int) int      { return acc - 1000 }

type avgAcc struct{ sum, n int }

type avgAgg struct{ created *int }

func (a avgAgg) Create() avgAcc {
	*a.created++
	return avgAcc{}
}
func (avgAgg) Add(acc avgAcc, in int) avgAcc { return avgAcc{acc.sum + in, acc.n + 1} }
func (avgAgg) Result(acc avgAcc) float64     { return float64(acc.sum) / float64(acc.n) }

func testAggregating(t *testing.T, e *env) {
	created := 0
	s := must(state.NewAggregatingStore[string, void, int, avgAcc, float64](e.be, "a", avgAgg{&created}, state.Options{}))
	ks := e.keys(2)
	a, b := ks[0], ks[1]
	if _, ok := s.Get(a.h, a.k, v0); ok {
		t.Fatal("empty aggregating store has a result")
	}
	for _, v := range []int{1, 2, 6} {
		s.Add(a.h, a.k, v0, v)
	}
	s.Add(b.h, b.k, v0, 5)
	if v, ok := s.Get(a.h, a.k, v0); !ok || v != 3 {
		t.Fatalf("avg = %v, %v; want 3", v, ok)
	}
	if created != 2 {
		t.Fatalf("Create called %d times, want once per key", created)
	}
	checkEntries(t, e, s.Entries, map[string]avgAcc{a.k: {9, 3}, b.k: {5, 1}})
	s.Delete(a.h, a.k, v0)
	if _, ok := s.Get(a.h, a.k, v0); ok {
		t.Fatal("result after Delete")
	}
	s.Add(a.h, a.k, v0, 10)
	if v, _ := s.Get(a.h, a.k, v0); v != 10 || created != 3 {
		t.Fatalf("after Delete and Add(10): %v, created %d", v, created)
	}
}

func testList(t *testing.T, e *env) {
	s := must(state.NewListStore[string, void, string](e.be, "l", state.Options{}))
	ks := e.keys(2)
	a, b := ks[0], ks[1]
	if got := s.Get(a.h, a.k, v0); got != nil {
		t.Fatalf("empty list = %v, want nil", got)
	}
	s.Add(a.h, a.k, v0, "x")
	s.AddAll(a.h, a.k, v0, []string{"y", "z"})
	s.AddAll(b.h, b.k, v0, nil)
	if got := s.Get(b.h, b.k, v0); got != nil {
		t.Fatalf("AddAll(nil) made a list: %v", got)
	}
	s.Add(b.h, b.k, v0, "q")
	if got := s.Get(a.h, a.k, v0); !slices.Equal(got, []string{"x", "y", "z"}) {
		t.Fatalf("list = %v", got)
	}
	in := []string{"u", "v"}
	s.Update(a.h, a.k, v0, in)
	in[0] = "changed" // the store keeps a copy
	if got := s.Get(a.h, a.k, v0); !slices.Equal(got, []string{"u", "v"}) {
		t.Fatalf("after Update: %v", got)
	}
	// Updating with the store's own slice works.
	s.Update(a.h, a.k, v0, s.Get(a.h, a.k, v0)[1:])
	if got := s.Get(a.h, a.k, v0); !slices.Equal(got, []string{"v"}) {
		t.Fatalf("after Update with an alias: %v", got)
	}
	s.Add(a.h, a.k, v0, "w")
	var got []string
	for kg := e.cfg.KeyGroups.Start; kg < e.cfg.KeyGroups.End; kg++ {
		for en := range s.Entries(kg) {
			if en.Hash != e.hash(en.Key) || e.kg(en.Hash) != kg || en.Expires != state.NoExpiry {
				t.Fatalf("entry %+v under key group %d", en, kg)
			}
			got = append(got, en.Key+"="+en.Value)
		}
	}
	slices.Sort(got)
	if want := []string{a.k + "=v", a.k + "=w", b.k + "=q"}; !slices.Equal(got, want) {
		t.Fatalf("Entries = %v, want %v", got, want)
	}
	s.Update(a.h, a.k, v0, nil)
	if got := s.Get(a.h, a.k, v0); got != nil {
		t.Fatalf("Update(nil) left %v", got)
	}
	s.Delete(b.h, b.k, v0)
	if got := s.Get(b.h, b.k, v0); got != nil {
		t.Fatalf("Delete left %v", got)
	}
}

func testMap(t *testing.T, e *env) {
	s := must(state.NewMapStore[string, void, string, int](e.be, "m", state.Options{}))
	ks := e.keys(2)
	a, b := ks[0], ks[1]
	if _, ok := s.Get(a.h, a.k, v0, "x"); ok || s.Len(a.h, a.k, v0) != 0 || s.Contains(a.h, a.k, v0, "x") {
		t.Fatal("empty map has entries")
	}
	for i, mk := range []string{"x", "y", "z"} {
		s.Put(a.h, a.k, v0, mk, i)
	}
	s.Put(a.h, a.k, v0, "y", 10)
	s.Put(b.h, b.k, v0, "x", 99)
	if v, ok := s.Get(a.h, a.k, v0, "y"); !ok || v != 10 {
		t.Fatalf("Get(y) = %v, %v", v, ok)
	}
	if !s.Contains(a.h, a.k, v0, "z") || s.Contains(a.h, a.k, v0, "w") {
		t.Fatal("Contains wrong")
	}
	if n := s.Len(a.h, a.k, v0); n != 3 {
		t.Fatalf("Len = %d", n)
	}
	got := map[string]int{}
	for mk, mv := range s.All(a.h, a.k, v0) {
		got[mk] = mv
	}
	if want := map[string]int{"x": 0, "y": 10, "z": 2}; !mapsEqual(got, want) {
		t.Fatalf("All = %v, want %v", got, want)
	}
	for range s.All(a.h, a.k, v0) {
		break // stopping early is fine
	}
	s.Remove(a.h, a.k, v0, "x")
	s.Remove(a.h, a.k, v0, "nope")
	if s.Contains(a.h, a.k, v0, "x") || s.Len(a.h, a.k, v0) != 2 {
		t.Fatal("Remove did not remove")
	}
	n := 0
	for kg := e.cfg.KeyGroups.Start; kg < e.cfg.KeyGroups.End; kg++ {
		for en := range s.Entries(kg) {
			n++
			if en.Hash != e.hash(en.Key) || e.kg(en.Hash) != kg || en.Expires != state.NoExpiry {
				t.Fatalf("entry %+v under key group %d", en, kg)
			}
			if v, _ := s.Get(en.Hash, en.Key, v0, en.Value.Key); v != en.Value.Value {
				t.Fatalf("entry %+v disagrees with Get", en)
			}
		}
	}
	if n != 3 {
		t.Fatalf("Entries listed %d, want 3", n)
	}
	s.Remove(b.h, b.k, v0, "x") // the last entry: the map goes
	if s.Len(b.h, b.k, v0) != 0 {
		t.Fatal("map not empty after removing its only entry")
	}
	s.Delete(a.h, a.k, v0)
	if s.Len(a.h, a.k, v0) != 0 {
		t.Fatal("Delete left entries")
	}
	for range s.All(a.h, a.k, v0) {
		t.Fatal("All of a deleted map yields")
	}
}

func mapsEqual[K, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Removing the current entry, and overwriting any existing entry, while
// iterating visits every entry exactly once.
func testMapIterationRemove(t *testing.T, e *env) {
	s := must(state.NewMapStore[string, void, int, int](e.be, "m", state.Options{}))
	k := e.keys(1)[0]
	for i := range 1000 {
		s.Put(k.h, k.k, v0, i, i)
	}
	seen := map[int]int{}
	for mk, mv := range s.All(k.h, k.k, v0) {
		seen[mk]++
		if mv != mk {
			t.Fatalf("entry %d = %d", mk, mv)
		}
		if mk%3 == 0 {
			s.Remove(k.h, k.k, v0, mk)
		} else {
			s.Put(k.h, k.k, v0, mk, mk) // an existing key: no structural change
		}
	}
	if len(seen) != 1000 {
		t.Fatalf("visited %d entries, want 1000", len(seen))
	}
	for mk, n := range seen {
		if n != 1 {
			t.Fatalf("entry %d visited %d times", mk, n)
		}
	}
	if n := s.Len(k.h, k.k, v0); n != 666 {
		t.Fatalf("Len after removing a third = %d, want 666", n)
	}
	for mk := range s.All(k.h, k.k, v0) {
		s.Remove(k.h, k.k, v0, mk)
	}
	if n := s.Len(k.h, k.k, v0); n != 0 {
		t.Fatalf("Len after removing all while iterating = %d", n)
	}
}

func testMapModel(t *testing.T, e *env) {
	s := must(state.NewMapStore[string, int64, int, int](e.be, "m", state.Options{}))
	ks := e.keys(40)
	type nk struct {
		k  string
		ns int64
	}
	model := map[nk]map[int]int{}
	r := rand.New(rand.NewPCG(3, 4))
	for step := range 30000 {
		k := ks[r.IntN(len(ks))]
		ns := int64(r.IntN(3))
		mk := r.IntN(30)
		m := model[nk{k.k, ns}]
		switch r.IntN(6) {
		case 0, 1:
			s.Put(k.h, k.k, ns, mk, step)
			if m == nil {
				m = map[int]int{}
				model[nk{k.k, ns}] = m
			}
			m[mk] = step
		case 2:
			s.Remove(k.h, k.k, ns, mk)
			delete(m, mk)
		case 3:
			v, ok := s.Get(k.h, k.k, ns, mk)
			if mv, mok := m[mk]; ok != mok || v != mv {
				t.Fatalf("step %d: Get = %v, %v; model %v, %v", step, v, ok, mv, mok)
			}
		case 4:
			if r.IntN(10) == 0 {
				s.Delete(k.h, k.k, ns)
				delete(model, nk{k.k, ns})
				continue
			}
			if n := s.Len(k.h, k.k, ns); n != len(m) {
				t.Fatalf("step %d: Len = %d, model %d", step, n, len(m))
			}
		case 5:
			got := map[int]int{}
			for mk, mv := range s.All(k.h, k.k, ns) {
				got[mk] = mv
			}
			if len(got) != len(m) || (len(m) > 0 && !mapsEqual(got, m)) {
				t.Fatalf("step %d: All = %v, model %v", step, got, m)
			}
		}
	}
	total := 0
	for _, m := range model {
		total += len(m)
	}
	n := 0
	for kg := e.cfg.KeyGroups.Start; kg < e.cfg.KeyGroups.End; kg++ {
		for en := range s.Entries(kg) {
			n++
			if mv, ok := model[nk{en.Key, en.NS}][en.Value.Key]; !ok || mv != en.Value.Value || e.kg(en.Hash) != kg {
				t.Fatalf("entry %+v not in the model", en)
			}
		}
	}
	if n != total {
		t.Fatalf("Entries listed %d, model has %d", n, total)
	}
}

func testUnsupportedTypes(t *testing.T, e *env) {
	if _, err := state.NewValueStore[string, *int, int](e.be, "p", state.Options{}); err == nil {
		t.Error("pointer namespace accepted: it has no stable hash")
	}
	if _, err := state.NewMapStore[string, void, any, int](e.be, "i", state.Options{}); err == nil {
		t.Error("interface map key accepted: it has no stable hash")
	}
}

func testTTLOptions(t *testing.T, e *env) {
	if _, err := state.NewValueStore[string, void, int](e.be, "a", state.Options{TTL: -time.Second}); err == nil {
		t.Error("negative TTL accepted")
	}
	if _, err := state.NewValueStore[string, void, int](e.be, "b", state.Options{TTLUpdateOnRead: true}); err == nil {
		t.Error("update on read without TTL accepted")
	}
	cfg := e.cfg
	cfg.Now = nil
	be := e.newOther(cfg)
	if _, err := state.NewListStore[string, void, int](be, "c", state.Options{TTL: time.Second}); err == nil {
		t.Error("TTL without a clock accepted")
	}
	if _, err := state.NewListStore[string, void, int](be, "d", state.Options{}); err != nil {
		t.Errorf("no clock, no TTL: %v", err)
	}
}

// newOther makes a second backend with another configuration.
func (e *env) newOther(cfg state.Config) state.Backend {
	be := e.newBackend(e.t, cfg)
	e.t.Cleanup(func() { be.Close() })
	return be
}

const ttl = 100 * time.Millisecond

func testTTLValue(t *testing.T, e *env) {
	s := must(state.NewValueStore[string, void, int](e.be, "v", state.Options{TTL: ttl}))
	k := e.keys(1)[0]
	e.clk.Set(1000)
	s.Put(k.h, k.k, v0, 1)
	e.clk.Set(1099)
	if v, ok := s.Get(k.h, k.k, v0); !ok || v != 1 {
		t.Fatalf("before expiry: %v, %v", v, ok)
	}
	e.clk.Set(1100) // a read did not refresh: expired 100ms after the write
	if _, ok := s.Get(k.h, k.k, v0); ok {
		t.Fatal("expired value returned")
	}
	s.Put(k.h, k.k, v0, 2)
	e.clk.Set(1150)
	s.Put(k.h, k.k, v0, 3) // a write refreshes
	e.clk.Set(1249)
	for en := range s.Entries(e.kg(k.h)) {
		if en.Value != 3 || en.Expires != 1250 {
			t.Fatalf("entry %+v, want value 3 expiring at 1250", en)
		}
	}
	if v, ok := s.Get(k.h, k.k, v0); !ok || v != 3 {
		t.Fatalf("refreshed value: %v, %v", v, ok)
	}
	e.clk.Set(1250)
	for en := range s.Entries(e.kg(k.h)) {
		t.Fatalf("expired entry listed: %+v", en)
	}
	if _, ok := s.Get(k.h, k.k, v0); ok {
		t.Fatal("expired value returned")
	}
}

func testTTLValueUpdateOnRead(t *testing.T, e *env) {
	s := must(state.NewValueStore[string, void, int](e.be, "v", state.Options{TTL: ttl, TTLUpdateOnRead: true}))
	k := e.keys(1)[0]
	s.Put(k.h, k.k, v0, 1)
	for _, now := range []int64{50, 120, 219} { // each read refreshes
		e.clk.Set(now)
		if _, ok := s.Get(k.h, k.k, v0); !ok {
			t.Fatalf("value gone at %d although read at each step", now)
		}
	}
	e.clk.Set(319)
	if _, ok := s.Get(k.h, k.k, v0); ok {
		t.Fatal("value still there 100ms after the last read")
	}
}

func testTTLReducing(t *testing.T, e *env) {
	s := must(state.NewReducingStore[string, void, int](e.be, "r", func(a, b int) int { return a + b }, state.Options{TTL: ttl}))
	k := e.keys(1)[0]
	s.Add(k.h, k.k, v0, 1)
	e.clk.Set(50)
	s.Add(k.h, k.k, v0, 2)
	e.clk.Set(149)
	if v, ok := s.Get(k.h, k.k, v0); !ok || v != 3 {
		t.Fatalf("before expiry: %v, %v", v, ok)
	}
	e.clk.Set(150)
	if _, ok := s.Get(k.h, k.k, v0); ok {
		t.Fatal("expired value returned")
	}
	s.Add(k.h, k.k, v0, 5)
	e.clk.Set(300)
	s.Add(k.h, k.k, v0, 7) // the 5 expired at 250: starts afresh
	if v, _ := s.Get(k.h, k.k, v0); v != 7 {
		t.Fatalf("Add after expiry reduced into the expired value: %v", v)
	}
}

func testTTLAggregating(t *testing.T, e *env) {
	s := must(state.NewAggregatingStore[string, void, int, int, int](e.be, "a", sumAgg{}, state.Options{TTL: ttl}))
	k := e.keys(1)[0]
	s.Add(k.h, k.k, v0, 1)
	e.clk.Set(99)
	s.Add(k.h, k.k, v0, 2)
	e.clk.Set(198)
	if v, ok := s.Get(k.h, k.k, v0); !ok || v != 3 {
		t.Fatalf("before expiry: %v, %v", v, ok)
	}
	e.clk.Set(199)
	if _, ok := s.Get(k.h, k.k, v0); ok {
		t.Fatal("expired result returned")
	}
	e.clk.Set(500)
	s.Add(k.h, k.k, v0, 4)
	if v, _ := s.Get(k.h, k.k, v0); v != 4 {
		t.Fatalf("Add after expiry: %v, want a fresh accumulator", v)
	}
}

// List elements expire one by one.
func testTTLList(t *testing.T, e *env) {
	for _, onRead := range []bool{false, true} {
		s := must(state.NewListStore[string, void, string](e.be, fmt.Sprint("l", onRead), state.Options{TTL: ttl, TTLUpdateOnRead: onRead}))
		k := e.keys(1)[0]
		e.clk.Set(0)
		s.Add(k.h, k.k, v0, "a")
		e.clk.Set(50)
		s.AddAll(k.h, k.k, v0, []string{"b", "c"})
		e.clk.Set(99)
		if got := s.Get(k.h, k.k, v0); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Fatalf("onRead=%v: at 99: %v", onRead, got)
		}
		e.clk.Set(100)
		want := []string{"b", "c"}
		if onRead {
			want = []string{"a", "b", "c"} // read at 99 refreshed a
		}
		if got := s.Get(k.h, k.k, v0); !slices.Equal(got, want) {
			t.Fatalf("onRead=%v: at 100: %v, want %v", onRead, got, want)
		}
		var entries []string
		for en := range s.Entries(e.kg(k.h)) {
			entries = append(entries, en.Value)
			if en.Expires <= 100 {
				t.Fatalf("entry %+v listed at 100", en)
			}
		}
		if !slices.Equal(entries, want) {
			t.Fatalf("onRead=%v: Entries %v, want %v", onRead, entries, want)
		}
		e.clk.Set(300)
		if got := s.Get(k.h, k.k, v0); got != nil {
			t.Fatalf("onRead=%v: at 300: %v", onRead, got)
		}
		s.Update(k.h, k.k, v0, []string{"x", "y"})
		e.clk.Set(399)
		s.Add(k.h, k.k, v0, "z")
		e.clk.Set(400)
		if got := s.Get(k.h, k.k, v0); !slices.Equal(got, []string{"z"}) {
			t.Fatalf("onRead=%v: after Update at 300 and Add at 399, at 400: %v", onRead, got)
		}
		s.Delete(k.h, k.k, v0)
	}
}

// Map entries expire one by one.
func testTTLMap(t *testing.T, e *env) {
	s := must(state.NewMapStore[string, void, string, int](e.be, "m", state.Options{TTL: ttl}))
	k := e.keys(1)[0]
	s.Put(k.h, k.k, v0, "x", 1)
	e.clk.Set(50)
	s.Put(k.h, k.k, v0, "y", 2)
	e.clk.Set(99)
	if !s.Contains(k.h, k.k, v0, "x") || s.Len(k.h, k.k, v0) != 2 {
		t.Fatal("entries gone before expiry")
	}
	e.clk.Set(100)
	if _, ok := s.Get(k.h, k.k, v0, "x"); ok {
		t.Fatal("expired entry returned")
	}
	if n := s.Len(k.h, k.k, v0); n != 1 {
		t.Fatalf("Len at 100 = %d, want 1", n)
	}
	for mk := range s.All(k.h, k.k, v0) {
		if mk != "y" {
			t.Fatalf("All yields %s at 100", mk)
		}
	}
	for en := range s.Entries(e.kg(k.h)) {
		if en.Value.Key != "y" || en.Expires != 150 {
			t.Fatalf("entry %+v at 100", en)
		}
	}
	s.Put(k.h, k.k, v0, "y", 3) // refresh
	e.clk.Set(199)
	if v, _ := s.Get(k.h, k.k, v0, "y"); v != 3 {
		t.Fatal("refreshed entry gone")
	}
	e.clk.Set(200)
	if s.Len(k.h, k.k, v0) != 0 || s.Contains(k.h, k.k, v0, "y") {
		t.Fatal("entries left after expiry")
	}
	for range s.All(k.h, k.k, v0) {
		t.Fatal("All yields after expiry")
	}
}

func testTTLMapUpdateOnRead(t *testing.T, e *env) {
	s := must(state.NewMapStore[string, void, string, int](e.be, "m", state.Options{TTL: ttl, TTLUpdateOnRead: true}))
	k := e.keys(1)[0]
	s.Put(k.h, k.k, v0, "x", 1)
	s.Put(k.h, k.k, v0, "y", 2)
	e.clk.Set(90)
	s.Get(k.h, k.k, v0, "x")
	e.clk.Set(150)
	if !s.Contains(k.h, k.k, v0, "x") || s.Contains(k.h, k.k, v0, "y") {
		t.Fatal("want x (read at 90) alive and y expired at 150")
	}
	e.clk.Set(240) // Contains at 150 refreshed x
	for range s.All(k.h, k.k, v0) {
	}
	e.clk.Set(339) // All at 240 refreshed x
	if !s.Contains(k.h, k.k, v0, "x") {
		t.Fatal("All did not refresh")
	}
}

func testTimers(t *testing.T, e *env) {
	q := must(state.NewTimerQueue[string, void](e.be, "t"))
	ks := e.keys(3)
	a, b, c := ks[0], ks[1], ks[2]
	if _, ok := q.Peek(); ok {
		t.Fatal("empty queue has a timer")
	}
	reg := func(k key, ts int64, want bool) {
		t.Helper()
		if q.Register(k.h, k.k, v0, ts) != want {
			t.Fatalf("Register(%s, %d) != %v", k.k, ts, want)
		}
	}
	reg(a, 20, true)
	reg(b, 10, true)
	reg(c, 20, true)
	reg(a, 20, false) // deduplicated
	reg(a, 10, true)
	reg(b, 30, true)
	if q.Len() != 5 {
		t.Fatalf("Len = %d", q.Len())
	}
	if !q.Delete(b.h, b.k, v0, 30) || q.Delete(b.h, b.k, v0, 30) {
		t.Fatal("Delete must report whether the timer was there")
	}
	// Deleted and registered again: it now comes after c's timer at 20.
	q.Delete(a.h, a.k, v0, 20)
	reg(a, 20, true)
	// Key groups list their timers.
	n := 0
	for kg := e.cfg.KeyGroups.Start; kg < e.cfg.KeyGroups.End; kg++ {
		for tm := range q.KeyGroup(kg) {
			n++
			if e.kg(tm.Hash) != kg || e.hash(tm.Key) != tm.Hash {
				t.Fatalf("timer %+v under key group %d", tm, kg)
			}
		}
	}
	if n != 4 {
		t.Fatalf("KeyGroup listed %d timers, want 4", n)
	}
	var got []string
	var prev state.Timer[string, void]
	for {
		p, ok := q.Peek()
		tm, ok2 := q.Pop()
		if ok != ok2 || p != tm {
			t.Fatalf("Peek %+v, %v but Pop %+v, %v", p, ok, tm, ok2)
		}
		if !ok {
			break
		}
		got = append(got, fmt.Sprintf("%s@%d", tm.Key, tm.TS))
		if tm.TS == prev.TS && tm.Seq <= prev.Seq {
			t.Fatalf("Seq not increasing among ties: %+v after %+v", tm, prev)
		}
		prev = tm
	}
	want := []string{b.k + "@10", a.k + "@10", c.k + "@20", a.k + "@20"}
	if !slices.Equal(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	if q.Len() != 0 {
		t.Fatal("timers left")
	}
	reg(a, 20, true) // a fired timer can be registered again
}

func testTimersNamespaces(t *testing.T, e *env) {
	q := must(state.NewTimerQueue[string, window](e.be, "t"))
	k := e.keys(1)[0]
	if !q.Register(k.h, k.k, window{0, 10}, 9) || !q.Register(k.h, k.k, window{5, 15}, 9) {
		t.Fatal("timers of two namespaces at the same time are distinct")
	}
	if q.Register(k.h, k.k, window{0, 10}, 9) {
		t.Fatal("not deduplicated within a namespace")
	}
	q.Delete(k.h, k.k, window{0, 10}, 9)
	tm, _ := q.Pop()
	if tm.NS != (window{5, 15}) || q.Len() != 0 {
		t.Fatalf("popped %+v", tm)
	}
}

// Random registrations and deletions against a model: timers pop in
// (time, registration order) order and Delete removes exactly one.
func testTimersModel(t *testing.T, e *env) {
	q := must(state.NewTimerQueue[string, void](e.be, "t"))
	ks := e.keys(50)
	type mt struct {
		k   key
		ts  int64
		seq int
	}
	var model []mt
	find := func(k key, ts int64) int {
		return slices.IndexFunc(model, func(m mt) bool { return m.k == k && m.ts == ts })
	}
	r := rand.New(rand.NewPCG(5, 6))
	seq := 0
	for step := range 20000 {
		k := ks[r.IntN(len(ks))]
		ts := int64(r.IntN(200))
		switch r.IntN(5) {
		case 0, 1:
			i := find(k, ts)
			if q.Register(k.h, k.k, v0, ts) != (i < 0) {
				t.Fatalf("step %d: Register disagrees with the model", step)
			}
			if i < 0 {
				seq++
				model = append(model, mt{k, ts, seq})
			}
		case 2:
			i := find(k, ts)
			if q.Delete(k.h, k.k, v0, ts) != (i >= 0) {
				t.Fatalf("step %d: Delete disagrees with the model", step)
			}
			if i >= 0 {
				model = slices.Delete(model, i, i+1)
			}
		case 3:
			if len(model) == 0 {
				continue
			}
			first := slices.MinFunc(model, func(x, y mt) int { return cmp.Or(cmp.Compare(x.ts, y.ts), cmp.Compare(x.seq, y.seq)) })
			tm, ok := q.Pop()
			if !ok || tm.Key != first.k.k || tm.TS != first.ts {
				t.Fatalf("step %d: popped %+v, model's first %s@%d", step, tm, first.k.k, first.ts)
			}
			model = slices.Delete(model, find(first.k, first.ts), find(first.k, first.ts)+1)
		case 4:
			if q.Len() != len(model) {
				t.Fatalf("step %d: Len %d, model %d", step, q.Len(), len(model))
			}
		}
	}
	n := 0
	for kg := e.cfg.KeyGroups.Start; kg < e.cfg.KeyGroups.End; kg++ {
		for tm := range q.KeyGroup(kg) {
			n++
			if find(key{tm.Hash, tm.Key}, tm.TS) < 0 {
				t.Fatalf("timer %+v not in the model", tm)
			}
		}
	}
	if n != len(model) {
		t.Fatalf("KeyGroup listed %d timers, model %d", n, len(model))
	}
}
