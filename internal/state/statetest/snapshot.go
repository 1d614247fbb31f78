package statetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/state"
)

// snapStores is one of every kind of store, as an operator would create
// them in Open: a restore creates the same stores (by name) in a new
// backend and puts the snapshot back into them.
type snapStores struct {
	val   state.ValueStore[string, void, string]
	ttl   state.ValueStore[string, void, int64]
	win   state.ValueStore[string, window, int]
	red   state.ReducingStore[string, void, int]
	agg   state.AggregatingStore[string, void, int, avgAcc, float64]
	list  state.ListStore[string, void, string]
	tlist state.ListStore[string, void, rec]
	mp    state.MapStore[string, void, string, []int]
	tmap  state.MapStore[string, int64, int32, rec]
	set   state.MapStore[string, void, string, struct{}]
	et    state.TimerQueue[string, void]
	pt    state.TimerQueue[string, window]
}

// rec is a value with unexported fields, a slice and a pointer: what user
// state looks like.
type rec struct {
	Name string
	n    int
	tags []string
	p    *float64
}

func (r rec) String() string {
	p := "nil"
	if r.p != nil {
		p = fmt.Sprint(*r.p)
	}
	return fmt.Sprintf("{%s %d %v %s}", r.Name, r.n, r.tags, p)
}

func newSnapStores(be state.Backend) *snapStores {
	var created int
	return &snapStores{
		val:   must(state.NewValueStore[string, void, string](be, "val", state.Options{})),
		ttl:   must(state.NewValueStore[string, void, int64](be, "ttl", state.Options{TTL: ttl})),
		win:   must(state.NewValueStore[string, window, int](be, "win", state.Options{})),
		red:   must(state.NewReducingStore[string, void, int](be, "red", func(a, b int) int { return a + b }, state.Options{})),
		agg:   must(state.NewAggregatingStore[string, void, int, avgAcc, float64](be, "agg", avgAgg{&created}, state.Options{TTL: time.Hour})),
		list:  must(state.NewListStore[string, void, string](be, "list", state.Options{})),
		tlist: must(state.NewListStore[string, void, rec](be, "tlist", state.Options{TTL: ttl})),
		mp:    must(state.NewMapStore[string, void, string, []int](be, "map", state.Options{})),
		tmap:  must(state.NewMapStore[string, int64, int32, rec](be, "tmap", state.Options{TTL: ttl, TTLUpdateOnRead: true})),
		set:   must(state.NewMapStore[string, void, string, struct{}](be, "set", state.Options{})),
		et:    must(state.NewTimerQueue[string, void](be, "_timer_state/event")),
		pt:    must(state.NewTimerQueue[string, window](be, "_timer_state/proc")),
	}
}

// fill writes random state for keys over a few clock steps, so that TTL
// entries have various expiry times.
func (s *snapStores) fill(e *env, ks []key, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	for step := range 4000 {
		e.clk.Set(int64(step / 10))
		k := ks[r.IntN(len(ks))]
		i := r.IntN(1000)
		switch r.IntN(12) {
		case 0:
			s.val.Put(k.h, k.k, v0, fmt.Sprint("v", i))
		case 1:
			s.ttl.Put(k.h, k.k, v0, int64(i)-500)
		case 2:
			s.win.Put(k.h, k.k, window{int64(i % 3), int64(i%3) + 10}, i)
		case 3:
			s.red.Add(k.h, k.k, v0, i)
		case 4:
			s.agg.Add(k.h, k.k, v0, i)
		case 5:
			s.list.Add(k.h, k.k, v0, fmt.Sprint("e", i))
		case 6:
			f := float64(i) / 4
			x := rec{Name: k.k, n: i, tags: []string{"a", fmt.Sprint(i)}}
			if i%2 == 0 {
				x.p = &f
			}
			s.tlist.Add(k.h, k.k, v0, x)
		case 7:
			s.mp.Put(k.h, k.k, v0, fmt.Sprint("m", i%20), []int{i, -i})
		case 8:
			s.tmap.Put(k.h, k.k, int64(i%2), int32(i%10-5), rec{Name: "x", n: i})
		case 9:
			s.set.Put(k.h, k.k, v0, fmt.Sprint(i%7), struct{}{})
		case 10:
			s.et.Register(k.h, k.k, v0, int64(i%50)) // many ties
		case 11:
			if i%3 == 0 {
				s.pt.Delete(k.h, k.k, window{0, 10}, int64(i%40))
			} else {
				s.pt.Register(k.h, k.k, window{int64(i % 2), 10}, int64(i%40))
			}
		}
	}
}

// dump lists every entry of every store (timers without their sequence
// numbers) as sorted lines, and the timers' firing order.
func (s *snapStores) dump(e *env) string {
	var lines []string
	r := e.cfg.KeyGroups
	for kg := r.Start; kg < r.End; kg++ {
		add := func(store string, hash uint64, key string, ns any, v any, exp int64) {
			if e.kg(hash) != kg || e.hash(key) != hash {
				e.t.Fatalf("%s: entry of %s listed under key group %d", store, key, kg)
			}
			lines = append(lines, fmt.Sprintf("%s %s %v = %v exp %d", store, key, ns, v, exp))
		}
		for en := range s.val.Entries(kg) {
			add("val", en.Hash, en.Key, en.NS, en.Value, en.Expires)
		}
		for en := range s.ttl.Entries(kg) {
			add("ttl", en.Hash, en.Key, en.NS, en.Value, en.Expires)
		}
		for en := range s.win.Entries(kg) {
			add("win", en.Hash, en.Key, en.NS, en.Value, en.Expires)
		}
		for en := range s.red.Entries(kg) {
			add("red", en.Hash, en.Key, en.NS, en.Value, en.Expires)
		}
		for en := range s.agg.Entries(kg) {
			add("agg", en.Hash, en.Key, en.NS, en.Value, en.Expires)
		}
		// List elements keep their order: one line per list.
		lists := map[string][]string{}
		for en := range s.list.Entries(kg) {
			lists["list "+en.Key] = append(lists["list "+en.Key], en.Value)
		}
		for en := range s.tlist.Entries(kg) {
			lists["tlist "+en.Key] = append(lists["tlist "+en.Key], fmt.Sprintf("%v@%d", en.Value, en.Expires))
		}
		for k, l := range lists {
			lines = append(lines, k+" "+strings.Join(l, ","))
		}
		for en := range s.mp.Entries(kg) {
			add("map", en.Hash, en.Key, en.NS, en.Value, en.Expires)
		}
		for en := range s.tmap.Entries(kg) {
			add("tmap", en.Hash, en.Key, en.NS, en.Value, en.Expires)
		}
		for en := range s.set.Entries(kg) {
			add("set", en.Hash, en.Key, en.NS, en.Value, en.Expires)
		}
		for tm := range s.et.KeyGroup(kg) {
			add("et", tm.Hash, tm.Key, tm.NS, tm.TS, 0)
		}
		for tm := range s.pt.KeyGroup(kg) {
			add("pt", tm.Hash, tm.Key, tm.NS, tm.TS, 0)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// fireOrder pops every timer of q: the order timers fire in.
func fireOrder[N comparable](q state.TimerQueue[string, N]) []string {
	var out []string
	for {
		tm, ok := q.Pop()
		if !ok {
			return out
		}
		out = append(out, fmt.Sprintf("%s/%v@%d", tm.Key, tm.NS, tm.TS))
	}
}

// snapshot snapshots every key group of be's range.
func snapshotAll(t *testing.T, be state.Backend) map[int][]byte {
	t.Helper()
	out := map[int][]byte{}
	r := be.KeyGroups()
	for kg := r.Start; kg < r.End; kg++ {
		data, err := state.SnapshotKeyGroup(be, kg)
		if err != nil {
			t.Fatalf("SnapshotKeyGroup(%d): %v", kg, err)
		}
		if data != nil {
			out[kg] = data
		}
	}
	return out
}

// groupsIn returns the snapshots of the key groups in r.
func groupsIn(snap map[int][]byte, r state.KeyGroupRange) [][]byte {
	var out [][]byte
	for kg, data := range snap {
		if r.Contains(kg) {
			out = append(out, data)
		}
	}
	return out
}

// A snapshot restored into a new backend gives back every entry with its
// expiry time, and timers that fire in the same order.
func testSnapshotRoundTrip(t *testing.T, e *env) {
	s := newSnapStores(e.be)
	ks := e.keys(200)
	s.fill(e, ks, 1)
	e.clk.Set(250) // TTL entries written before 150 expired
	snap := snapshotAll(t, e.be)
	if len(snap) == 0 {
		t.Fatal("empty snapshot")
	}
	if data, err := state.SnapshotKeyGroup(e.be, e.cfg.KeyGroups.End); err != nil || data != nil {
		t.Fatalf("snapshot of a key group outside the range: %d bytes, %v", len(data), err)
	}
	want := s.dump(e)

	be := e.newOther(e.cfg)
	r := newSnapStores(be)
	if err := state.RestoreKeyGroups(be, groupsIn(snap, e.cfg.KeyGroups)); err != nil {
		t.Fatal(err)
	}
	if got := r.dump(e); got != want {
		t.Fatalf("restored state differs:\n%s", diffLines(want, got))
	}
	// A snapshot of the restored state is the same (entries may come in
	// another order within a key group, so compare dumps of a third copy).
	be3 := e.newOther(e.cfg)
	r3 := newSnapStores(be3)
	if err := state.RestoreKeyGroups(be3, groupsIn(snapshotAll(t, be), e.cfg.KeyGroups)); err != nil {
		t.Fatal(err)
	}
	if got := r3.dump(e); got != want {
		t.Fatalf("state restored twice differs:\n%s", diffLines(want, got))
	}
	// Expiry carries over: as the clock moves, the same entries expire in
	// both.
	e.clk.Set(330)
	if a, b := s.dump(e), r.dump(e); a != b {
		t.Fatalf("after the clock moved, restored state differs:\n%s", diffLines(a, b))
	}
	// Timers fire in the same order, ties included.
	if a, b := fireOrder(s.et), fireOrder(r.et); !slices.Equal(a, b) {
		t.Fatalf("event timers fire in another order after restore:\n%v\n%v", a, b)
	}
	if a, b := fireOrder(s.pt), fireOrder(r.pt); !slices.Equal(a, b) {
		t.Fatalf("namespaced timers fire in another order after restore:\n%v\n%v", a, b)
	}
	// The restored stores work as stores: writes and new timers.
	k := ks[0]
	r.red.Add(k.h, k.k, v0, 1)
	if !r.et.Register(k.h, k.k, v0, 7) || r.et.Len() != 1 {
		t.Fatal("registering a timer after a restore")
	}
}

// Key groups restored into backends of other ranges (rescaling to two
// subtasks and back to one) keep every entry.
func testSnapshotRescale(t *testing.T, e *env) {
	s := newSnapStores(e.be)
	s.fill(e, e.keys(300), 2)
	snap := snapshotAll(t, e.be)
	want := s.dump(e)
	wantET := fireOrder(s.et)

	r := e.cfg.KeyGroups
	mid := r.Start + r.Len()/3
	var parts []*snapStores
	var merged []map[int][]byte
	for _, sub := range []state.KeyGroupRange{{Start: r.Start, End: mid}, {Start: mid, End: r.End}} {
		cfg := e.cfg
		cfg.KeyGroups = sub
		be := e.newOther(cfg)
		ps := newSnapStores(be)
		if err := state.RestoreKeyGroups(be, groupsIn(snap, sub)); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, ps)
		merged = append(merged, snapshotAll(t, be))
	}
	// Each part holds exactly its key groups.
	for i, ps := range parts {
		sub := []state.KeyGroupRange{{Start: r.Start, End: mid}, {Start: mid, End: r.End}}[i]
		pe := *e
		pe.cfg.KeyGroups = sub
		for _, line := range strings.Split(ps.dump(&pe), "\n") {
			if line != "" && !strings.Contains(want, line) {
				t.Fatalf("part %d has an entry the original does not: %s", i, line)
			}
		}
	}
	// Back to one backend from the two parts' snapshots.
	be := e.newOther(e.cfg)
	one := newSnapStores(be)
	var all [][]byte
	for _, m := range merged {
		all = append(all, groupsIn(m, r)...)
	}
	if err := state.RestoreKeyGroups(be, all); err != nil {
		t.Fatal(err)
	}
	if got := one.dump(e); got != want {
		t.Fatalf("state split in two and merged differs:\n%s", diffLines(want, got))
	}
	// Timers of the same time came from two backends: their relative
	// order within each key group's share is kept, so the multiset and
	// the time order are.
	gotET := fireOrder(one.et)
	if len(gotET) != len(wantET) {
		t.Fatalf("%d timers after rescaling, want %d", len(gotET), len(wantET))
	}
	a, b := slices.Clone(wantET), slices.Clone(gotET)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		t.Fatal("timers differ after rescaling")
	}
}

// Restoring into a backend whose stores do not match the snapshot fails
// with an error naming the state.
func testSnapshotErrors(t *testing.T, e *env) {
	k := e.keys(1)[0]
	must(state.NewValueStore[string, void, int](e.be, "counts", state.Options{})).Put(k.h, k.k, v0, 1)
	must(state.NewListStore[string, void, int](e.be, "buffer", state.Options{})).Add(k.h, k.k, v0, 1)
	snap := snapshotAll(t, e.be)
	groups := groupsIn(snap, e.cfg.KeyGroups)

	check := func(what string, be state.Backend, groups [][]byte, want ...string) {
		t.Helper()
		err := state.RestoreKeyGroups(be, groups)
		if err == nil {
			t.Fatalf("%s: restore succeeded", what)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("%s: error %q does not mention %q", what, err, w)
			}
		}
	}
	be := e.newOther(e.cfg)
	must(state.NewValueStore[string, void, int](be, "counts", state.Options{}))
	check("a state the operator does not have", be, groups, `"buffer"`, "Open")

	be = e.newOther(e.cfg)
	must(state.NewValueStore[string, void, int](be, "counts", state.Options{}))
	must(state.NewMapStore[string, void, string, int](be, "buffer", state.Options{}))
	check("another kind", be, groups, `"buffer"`, "list", "map")

	be = e.newOther(e.cfg)
	must(state.NewValueStore[string, void, string](be, "counts", state.Options{}))
	must(state.NewListStore[string, void, int](be, "buffer", state.Options{}))
	check("another value type", be, groups, `"counts"`)

	cfg := e.cfg
	kg := e.kg(k.h)
	if kg == cfg.KeyGroups.Start {
		cfg.KeyGroups.Start++
	} else {
		cfg.KeyGroups.End = kg
	}
	be = e.newOther(cfg)
	must(state.NewValueStore[string, void, int](be, "counts", state.Options{}))
	must(state.NewListStore[string, void, int](be, "buffer", state.Options{}))
	check("a key group outside the range", be, [][]byte{snap[kg]}, fmt.Sprint("key group ", kg))

	be = e.newOther(e.cfg)
	must(state.NewValueStore[string, void, int](be, "counts", state.Options{}))
	must(state.NewListStore[string, void, int](be, "buffer", state.Options{}))
	check("a corrupt snapshot", be, [][]byte{snap[kg][:len(snap[kg])-3]})

	// Stores the snapshot does not mention stay empty, and that is fine.
	be = e.newOther(e.cfg)
	c := must(state.NewValueStore[string, void, int](be, "counts", state.Options{}))
	must(state.NewListStore[string, void, int](be, "buffer", state.Options{}))
	extra := must(state.NewValueStore[string, void, int](be, "new", state.Options{}))
	if err := state.RestoreKeyGroups(be, groups); err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Get(k.h, k.k, v0); v != 1 {
		t.Fatalf("restored count %d", v)
	}
	if _, ok := extra.Get(k.h, k.k, v0); ok {
		t.Fatal("a store not in the snapshot has a value")
	}
}

// diffLines shows the first lines where two dumps differ.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	n := 0
	for i := 0; i < max(len(w), len(g)) && n < 10; i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			fmt.Fprintf(&b, "line %d:\n  want %s\n  got  %s\n", i, a, c)
			n++
		}
	}
	fmt.Fprintf(&b, "(%d lines wanted, %d got)", len(w), len(g))
	return b.String()
}

// Thousands of timers in one key group, registered, deleted and popped at
// random against a model: backends that cache the head of a key group's
// queue must keep it right as it is trimmed and reloaded.
func testTimersDense(t *testing.T, e *env) {
	cfg := e.cfg
	cfg.MaxParallelism, cfg.KeyGroups = 1, state.KeyGroupRange{Start: 0, End: 1}
	be := e.newOther(cfg)
	q := must(state.NewTimerQueue[string, void](be, "t"))
	type mt struct {
		k   string
		ts  int64
		seq int
	}
	model := map[[2]any]mt{}
	r := rand.New(rand.NewPCG(8, 9))
	seq, now := 0, int64(0)
	for step := range 40000 {
		k := fmt.Sprint("k", r.IntN(3000))
		ts := now + int64(r.IntN(60)) // many timers of the same time
		id := [2]any{k, ts}
		switch op := r.IntN(10); {
		case op < 6:
			_, had := model[id]
			if q.Register(e.hash(k), k, v0, ts) == had {
				t.Fatalf("step %d: Register(%s, %d) disagrees with the model", step, k, ts)
			}
			if !had {
				seq++
				model[id] = mt{k, ts, seq}
			}
		case op < 8:
			// Delete one that exists, mostly.
			for mid := range model {
				if r.IntN(2) == 0 {
					id = mid
				}
				break
			}
			_, had := model[id]
			if q.Delete(e.hash(id[0].(string)), id[0].(string), v0, id[1].(int64)) != had {
				t.Fatalf("step %d: Delete disagrees with the model", step)
			}
			delete(model, id)
		default:
			n := r.IntN(5)
			for range n {
				var first *mt
				for _, m := range model {
					if first == nil || m.ts < first.ts || (m.ts == first.ts && m.seq < first.seq) {
						m := m
						first = &m
					}
				}
				tm, ok := q.Pop()
				if first == nil {
					if ok {
						t.Fatalf("step %d: popped %+v from an empty queue", step, tm)
					}
					break
				}
				if !ok || tm.Key != first.k || tm.TS != first.ts {
					t.Fatalf("step %d: popped %+v (%v), model's first %s@%d", step, tm, ok, first.k, first.ts)
				}
				delete(model, [2]any{first.k, first.ts})
				now = max(now, tm.TS)
			}
		}
		if q.Len() != len(model) {
			t.Fatalf("step %d: Len %d, model %d", step, q.Len(), len(model))
		}
	}
	if len(model) < 1000 {
		t.Fatalf("only %d timers at the end: too few to test a cache", len(model))
	}
	n := 0
	for range q.KeyGroup(0) {
		n++
	}
	if n != len(model) {
		t.Fatalf("KeyGroup lists %d timers, model %d", n, len(model))
	}
}
