package weir_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// CoGroup's lists are cut from slabs shared by many calls
// (cogroup_lists.go): a function that keeps its lists and appends to them
// must still find, after every other call, exactly its own key's events
// and what it appended. A list whose capacity reached into the next list
// would have its appended marker overwritten by the next key's events.
func TestCoGroupListsKept(t *testing.T) {
	l, r := joinInputs(7, 3000, 500, 3)
	type kept struct {
		key    string
		ls, rs []jev
	}
	var mu sync.Mutex
	var all []kept
	model := map[string][2][]int{}
	for side, evs := range [][]jev{l, r} {
		for _, e := range evs {
			k := fmt.Sprintf("k%d w%d", e.K, e.T-e.T%1000)
			m := model[k]
			m[side] = append(m[side], e.V)
			model[k] = m
		}
	}
	runJoin(t, 2, l, r, func(ls, rs *weir.KeyedStream[int, jev]) *weir.Stream[string] {
		return weir.CoGroup(ls, rs, weir.Tumbling(time.Second), func(k int, win weir.WindowInfo, a, b []jev, emit func(string)) error {
			a = append(a, jev{V: -1})
			b = append(b, jev{V: -2})
			mu.Lock()
			all = append(all, kept{fmt.Sprintf("k%d w%d", k, win.Start.UnixMilli()), a, b})
			mu.Unlock()
			return nil
		})
	}, func(s string) string { return s })
	if len(all) != len(model) {
		t.Fatalf("%d calls, want %d", len(all), len(model))
	}
	vals := func(es []jev) []int {
		var v []int
		for _, e := range es {
			v = append(v, e.V)
		}
		return v
	}
	check := func(key, side string, es []jev, want []int, marker int) {
		t.Helper()
		got := vals(es)
		if len(got) == 0 || got[len(got)-1] != marker {
			t.Fatalf("%s: kept %s list %v lost the marker %d appended to it", key, side, got, marker)
		}
		got = got[:len(got)-1]
		slices.Sort(got)
		want = slices.Sorted(slices.Values(want))
		if !slices.Equal(got, want) {
			t.Fatalf("%s: kept %s list %v, want %v", key, side, got, want)
		}
	}
	for _, c := range all {
		m := model[c.key]
		check(c.key, "left", c.ls, m[0], -1)
		check(c.key, "right", c.rs, m[1], -2)
	}
}
