package weir_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/weirstream/weir"
)

type urow struct{ K, V int }

// upserts makes an upsert stream over keys [0, keys): new values, repeated
// values, and tombstones (Delete, or a bare UpdateBefore) for keys that may
// or may not have a row.
func upserts(seed uint64, n, keys int) []weir.Change[urow] {
	rng := newRand(seed)
	cur := map[int]int{}
	out := make([]weir.Change[urow], 0, n)
	for range n {
		k := rng.IntN(keys)
		switch r := rng.IntN(10); {
		case r < 2:
			kind := weir.Delete
			if r == 1 {
				kind = weir.UpdateBefore
			}
			out = append(out, weir.Change[urow]{Kind: kind, Value: urow{k, -1}}) // only the key counts
			delete(cur, k)
		case r < 4 && cur[k] != 0:
			out = append(out, weir.Change[urow]{Kind: weir.UpdateAfter, Value: urow{k, cur[k]}}) // unchanged
		default:
			v := 1 + rng.IntN(5)
			kind := weir.Insert
			if rng.IntN(2) == 0 {
				kind = weir.UpdateAfter
			}
			out = append(out, weir.Change[urow]{Kind: kind, Value: urow{k, v}})
			cur[k] = v
		}
	}
	return out
}

// normalizeModel is ChangelogNormalize by the book, per key in input order.
func normalizeModel(in []weir.Change[urow]) (perKey map[int][]string, final map[int]int) {
	perKey, final = map[int][]string{}, map[int]int{}
	for _, c := range in {
		k := c.Value.K
		old, ok := final[k]
		switch {
		case !c.Adds() && ok:
			perKey[k] = append(perKey[k], fmt.Sprintf("-D%d", old))
			delete(final, k)
		case !c.Adds():
		case !ok:
			perKey[k] = append(perKey[k], fmt.Sprintf("+I%d", c.Value.V))
			final[k] = c.Value.V
		case old != c.Value.V:
			perKey[k] = append(perKey[k], fmt.Sprintf("-U%d", old), fmt.Sprintf("+U%d", c.Value.V))
			final[k] = c.Value.V
		}
	}
	return perKey, final
}

func TestNormalizeChangesMatchesModel(t *testing.T) {
	in := upserts(31, 3000, 23)
	wantKeys, wantFinal := normalizeModel(in)
	for p := 1; p <= 4; p++ {
		job := weir.NewJob("normalize", weir.Parallelism(p), weir.BatchSize(9))
		src := weir.FromSource(job, "in", weir.SliceSource(in), weir.NoWatermarks[weir.Change[urow]]())
		key := func(c weir.Change[urow]) int { return c.Value.K }
		out := weir.Collect(weir.NormalizeChanges(weir.KeyBy(src, key)))
		tbl := weir.ToTable(weir.KeyBy(src, key))
		rows := weir.Collect(tbl.Rows())
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		gotKeys := map[int][]string{}
		for _, c := range out.Items() {
			gotKeys[c.Value.K] = append(gotKeys[c.Value.K], fmt.Sprintf("%v%d", c.Kind, c.Value.V))
		}
		if fmt.Sprint(gotKeys) != fmt.Sprint(wantKeys) {
			t.Fatalf("p=%d: changelog per key\n got %v\nwant %v", p, gotKeys, wantKeys)
		}
		// Every retraction retracts the row there: the view is consistent
		// and ends as the model's table.
		got := view(t, out.Items())
		want := map[urow]int{}
		for k, v := range wantFinal {
			want[urow{k, v}] = 1
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("p=%d: final view\n got %v\nwant %v", p, got, want)
		}
		tv := view(t, rows.Items())
		tw := map[weir.KeyValue[int, urow]]int{}
		for k, v := range wantFinal {
			tw[weir.KeyValue[int, urow]{Key: k, Value: urow{k, v}}] = 1
		}
		if fmt.Sprint(tv) != fmt.Sprint(tw) {
			t.Fatalf("p=%d: table rows\n got %v\nwant %v", p, tv, tw)
		}
	}
}

// TestTableFeedsJoins uses a table's changelog on both kinds of join
// against tables: JoinChanges with another table, and the temporal join.
func TestTableFeedsJoins(t *testing.T) {
	in := upserts(32, 400, 5)
	job := weir.NewJob("table")
	src := weir.FromSource(job, "in", weir.SliceSource(in), weir.NoWatermarks[weir.Change[urow]]())
	tbl := weir.ToTable(weir.KeyBy(src, func(c weir.Change[urow]) int { return c.Value.K }))
	self := weir.Collect(weir.JoinChanges(tbl.Changes(), tbl.Changes(), func(k int, a, b urow) (string, bool) {
		return fmt.Sprintf("k%d %d %d", k, a.V, b.V), true
	}))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, final := normalizeModel(in)
	want := map[string]int{}
	for k, v := range final {
		want[fmt.Sprintf("k%d %d %d", k, v, v)] = 1
	}
	got := view(t, self.Items())
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("self-join of the table\n got %v\nwant %v", got, want)
	}
	if len(want) == 0 {
		t.Fatal("the model's table is empty")
	}
}
