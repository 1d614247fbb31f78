package weir_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// vrec is a change of the versioned table of the temporal join tests.
type vrec struct{ C weir.Change[jev] }

// versionsInput makes a changelog of rows keyed by K over keys [0, keys):
// inserts, updates as UpdateBefore/UpdateAfter pairs at one time or as
// bare upserts, and deletes, with times increasing by 0..step ms.
func versionsInput(seed uint64, n, keys int, step int64) []vrec {
	rng := newRand(seed)
	cur := map[int]jev{}
	var out []vrec
	t := int64(1_000_000)
	for i := range n {
		t += rng.Int64N(step + 1)
		k := rng.IntN(keys)
		v := jev{K: k, T: t, V: 500_000 + i}
		old, ok := cur[k]
		switch {
		case !ok:
			out = append(out, vrec{C: weir.Change[jev]{Kind: weir.Insert, Value: v}})
			cur[k] = v
		case rng.IntN(4) == 0:
			out = append(out, vrec{C: weir.Change[jev]{Kind: weir.Delete, Value: jev{K: k, T: t, V: old.V}}})
			delete(cur, k)
		case rng.IntN(3) == 0:
			out = append(out, vrec{C: weir.Change[jev]{Kind: weir.UpdateAfter, Value: v}})
			cur[k] = v
		default:
			out = append(out, vrec{C: weir.Change[jev]{Kind: weir.UpdateBefore, Value: jev{K: k, T: t, V: old.V}}},
				vrec{C: weir.Change[jev]{Kind: weir.UpdateAfter, Value: v}})
			cur[k] = v
		}
	}
	return out
}

// temporalModel joins each probe with the last change of its key at or
// before its time, in input order.
func temporalModel(probes []jev, versions []vrec) []string {
	var want []string
	for _, p := range probes {
		r := "-"
		for _, v := range versions { // in input order: the last one at or before p.T counts
			if v.C.Value.K == p.K && v.C.Value.T <= p.T {
				r = "-"
				if v.C.Adds() {
					r = fmt.Sprint(v.C.Value.V)
				}
			}
		}
		want = append(want, fmt.Sprintf("k%d p%d r%s @%d", p.K, p.V, r, p.T))
	}
	slices.Sort(want)
	return want
}

// shuffle reorders items by time plus a random jitter in [0, d]: an item
// then never arrives after one more than d later, so with a watermark
// lagging d none is late. Neighbours of the same time share their jitter
// and keep their order (an UpdateBefore/UpdateAfter pair).
func shuffle[T any](seed uint64, items []T, d int64, ts func(T) int64) []T {
	rng := newRand(seed)
	type jittered struct {
		v  T
		at int64
	}
	js := make([]jittered, len(items))
	var lastTS, lastJ int64 = -1, 0
	for i, v := range items {
		j := rng.Int64N(d + 1)
		if ts(v) == lastTS {
			j = lastJ
		}
		lastTS, lastJ = ts(v), j
		js[i] = jittered{v, ts(v) + j}
	}
	slices.SortStableFunc(js, func(a, b jittered) int { return cmp.Compare(a.at, b.at) })
	out := make([]T, len(js))
	for i := range js {
		out[i] = js[i].v
	}
	return out
}

func TestTemporalJoinMatchesModelWhateverTheArrivalOrder(t *testing.T) {
	probes, _ := joinInputs(21, 600, 7, 30)
	versions := versionsInput(22, 300, 7, 60)
	want := temporalModel(probes, versions)
	nulls := 0
	for _, w := range want {
		if strings.Contains(w, "-") {
			nulls++
		}
	}
	if nulls == 0 || nulls == len(want) {
		t.Fatalf("model has %d of %d probes without a row; want some of both", nulls, len(want))
	}
	span := probes[len(probes)-1].T - probes[0].T + versions[len(versions)-1].C.Value.T

	vtime := func(v vrec) int64 { return v.C.Value.T }
	jittered := func(seed uint64, d int64) ([]jev, []vrec) {
		return shuffle(seed, probes, d, func(e jev) int64 { return e.T }), shuffle(seed+1, versions, d, vtime)
	}
	reversed := func() ([]jev, []vrec) {
		ps := slices.Clone(probes)
		slices.Reverse(ps)
		vs := slices.Clone(versions)
		// descending by time, same-time changes in their order
		slices.SortStableFunc(vs, func(a, b vrec) int { return cmp.Compare(b.C.Value.T, a.C.Value.T) })
		return ps, vs
	}
	orders := []struct {
		name string
		d    int64
		in   func() ([]jev, []vrec)
	}{
		{"in order", 0, func() ([]jev, []vrec) { return probes, versions }},
		{"jitter 200ms", 200, func() ([]jev, []vrec) { return jittered(23, 200) }},
		{"jitter 2s", 2000, func() ([]jev, []vrec) { return jittered(24, 2000) }},
		{"reversed", span, reversed},
	}
	for _, o := range orders {
		ps, vs := o.in()
		for p := 1; p <= 4; p++ {
			job := weir.NewJob("temporal", weir.Parallelism(p), weir.BatchSize(7))
			pk := weir.KeyBy(weir.FromSource(job, "probes", weir.SliceSource(ps),
				weir.BoundedOutOfOrderness(time.Duration(o.d)*time.Millisecond, jevTime)), func(e jev) int { return e.K })
			vsrc := weir.FromSource(job, "versions", weir.SliceSource(vs),
				weir.BoundedOutOfOrderness(time.Duration(o.d)*time.Millisecond, func(v vrec) time.Time { return time.UnixMilli(v.C.Value.T) }))
			vk := weir.KeyBy(weir.Map(vsrc, func(v vrec) weir.Change[jev] { return v.C }), func(c weir.Change[jev]) int { return c.Value.K })
			out := weir.Collect(stamped(weir.TemporalJoin(pk, vk, func(k int, l jev, r weir.Opt[jev]) string {
				if r.OK && r.V.K != k {
					t.Errorf("key %d joined row of key %d", k, r.V.K)
				}
				return fmt.Sprintf("k%d p%d r%s", k, l.V, optJev(r))
			}), func(s string) string { return s }))
			if err := job.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := out.Items()
			slices.Sort(got)
			sameLines(t, fmt.Sprintf("%s p=%d", o.name, p), got, want)
			if n := job.Metrics().Sum(lateDropped); n != 0 {
				t.Fatalf("%s p=%d: %d late", o.name, p, n)
			}
		}
	}
}
