package datagen_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/connector"
	_ "github.com/weirstream/weir/sql/connector/builtin"
	"github.com/weirstream/weir/sql/types"
)

func f(name string, t types.Type) types.Field { return types.Field{Name: name, Type: t} }

var schema = types.Schema{
	f("id", types.BigIntType), f("score", types.IntType), f("name", types.StringType), f("price", types.DecimalType(6, 2)),
	f("tags", types.ArrayOf(types.IntType)), f("ts", types.Timestamp3), f("r", types.RowOf(f("a", types.BooleanType))),
}

var opts = map[string]string{
	"connector": "datagen", "rows-per-second": "1000000",
	"fields.id.kind": "sequence", "fields.id.start": "10", "fields.id.end": "509",
	"fields.score.min": "-5", "fields.score.max": "5", "fields.name.length": "8",
	"fields.price.min": "1.50", "fields.price.max": "2.00", "fields.tags.length": "2",
	"fields.ts.max-past": "1 min", "fields.r.null-rate": "0.5",
}

func run(t *testing.T, par int, o map[string]string) []types.Row {
	t.Helper()
	src, err := connector.CreateSource(&connector.Table{Name: "gen", Schema: schema, Options: o, Settings: connector.Settings{Parallelism: par}})
	if err != nil {
		t.Fatal(err)
	}
	if !src.Bounded {
		t.Fatal("a table with a sequence is bounded")
	}
	job := weir.NewJob("datagen", weir.Parallelism(par))
	c := weir.Collect(weir.FromSource(job, "gen", src.Source, weir.NoWatermarks[types.Row]()))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows := c.Items()
	slices.SortFunc(rows, func(a, b types.Row) int { return int(a.Values[0].I - b.Values[0].I) })
	return rows
}

func TestDatagen(t *testing.T) {
	rows := run(t, 1, opts)
	if len(rows) != 500 {
		t.Fatalf("%d rows, want 500", len(rows))
	}
	nulls := 0
	for i, r := range rows {
		v := r.Values
		if v[0].I != int64(10+i) || v[1].I < -5 || v[1].I > 5 || len(v[2].S) != 8 || strings.Trim(v[2].S, "0123456789abcdef") != "" ||
			v[3].I < 150 || v[3].I > 200 || len(v[4].List()) != 2 || v[5].I%1000 != 0 {
			t.Fatalf("row %d: %+v", i, r)
		}
		if v[6].Null {
			nulls++
		}
	}
	if nulls < 150 || nulls > 350 {
		t.Fatalf("%d NULL rows of 500 with null-rate 0.5", nulls)
	}
	// The same rows at another parallelism (timestamps aside: they count
	// back from the source's creation).
	rows3 := run(t, 3, opts)
	for i := range rows {
		rows[i].Values[5], rows3[i].Values[5] = types.Value{}, types.Value{}
		if !rows[i].Equal(rows3[i]) {
			t.Fatalf("row %d differs at parallelism 3: %+v vs %+v", i, rows[i], rows3[i])
		}
	}
	// number-of-rows caps the sequence.
	o := map[string]string{"number-of-rows": "7"}
	for k, v := range opts {
		o[k] = v
	}
	if n := len(run(t, 2, o)); n != 7 {
		t.Fatalf("number-of-rows 7: %d rows", n)
	}
}

func TestRestore(t *testing.T) {
	src, err := connector.CreateSource(&connector.Table{Name: "gen", Schema: schema[1:2], Options: map[string]string{"connector": "datagen", "number-of-rows": "20", "rows-per-second": "1000000"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sp, _ := src.Source.Splits(ctx)
	readAll := func(r weir.SplitReader[types.Row]) (out []int64) {
		buf := make([]types.Row, 3)
		for {
			n, err := r.Read(ctx, buf)
			for _, row := range buf[:n] {
				out = append(out, row.Values[0].I)
			}
			if err == io.EOF {
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	r, _ := src.Source.Open(ctx, sp[0])
	all := readAll(r)
	r, _ = src.Source.Open(ctx, sp[0])
	buf := make([]types.Row, 5)
	n, _ := r.Read(ctx, buf)
	pos, _ := r.(weir.CheckpointedReader[types.Row]).Position()
	r2, err := src.Source.(weir.RestorableSource[types.Row]).OpenAt(ctx, sp[0], pos)
	if err != nil {
		t.Fatal(err)
	}
	rest := readAll(r2)
	var got []int64
	for _, row := range buf[:n] {
		got = append(got, row.Values[0].I)
	}
	if got = append(got, rest...); !slices.Equal(got, all) || len(all) != 20 {
		t.Fatalf("restored %v, want %v", got, all)
	}
}

func TestOptionErrors(t *testing.T) {
	for _, c := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"fields.id.kind": "sequence", "fields.id.start": "1"}, "missing required option 'fields.id.end'"},
		{map[string]string{"fields.id.kind": "sequense"}, "option 'fields.id.kind' = 'sequense': must be one of 'random', 'sequence'"},
		{map[string]string{"fields.nosuch.kind": "random"}, "unsupported options found for 'datagen': 'fields.nosuch.kind'"},
		{map[string]string{"fields.name.min": "1"}, "unsupported options found for 'datagen': 'fields.name.min'"},
		{map[string]string{"fields.score.min": "9", "fields.score.max": "1"}, "min 9 and max 1"},
		{map[string]string{"rows-per-second": "0"}, "option 'rows-per-second' = '0': must be positive"},
		{map[string]string{"fields.ts.max-past": "1 fortnight"}, "unknown time unit 'fortnight'"},
		// lengths that would allocate tens of GB per row (issue 35: out of memory)
		{map[string]string{"fields.name.length": "2000000000"}, "option 'fields.name.length' = '2000000000': must be at most 16777216"},
		{map[string]string{"fields.tags.length": "2000000000"}, "option 'fields.tags.length' = '2000000000': must be at most 1048576"},
	} {
		c.opts["connector"] = "datagen"
		_, err := connector.CreateSource(&connector.Table{Name: "gen", Schema: schema, Options: c.opts})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.opts, err, c.want)
		}
	}
}

// A TIMESTAMP column is the time the pacing emits the row (the source's
// start plus k / rows-per-second), as Flink's datagen gives the current
// time, so event-time windows over it fire; with max-past, up to that much
// earlier (issue 38: every row had the start time, and a TUMBLE window
// over an unbounded datagen table never showed a row).
func TestTimestampsFollowThePace(t *testing.T) {
	sc := types.Schema{f("id", types.BigIntType), f("ts", types.Type{Kind: types.Timestamp, Precision: 6}), f("day", types.DateType), f("back", types.Type{Kind: types.Timestamp, Precision: 6})}
	before := time.Now().UnixMicro()
	src, err := connector.CreateSource(&connector.Table{Name: "gen", Schema: sc, Options: map[string]string{
		"connector": "datagen", "rows-per-second": "100000", "fields.id.kind": "sequence", "fields.id.start": "0", "fields.id.end": "999",
		"fields.back.max-past": "5 s",
	}, Settings: connector.Settings{Parallelism: 2}})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().UnixMicro()
	job := weir.NewJob("datagen", weir.Parallelism(2))
	c := weir.Collect(weir.FromSource(job, "gen", src.Source, weir.NoWatermarks[types.Row]()))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows := c.Items()
	slices.SortFunc(rows, func(a, b types.Row) int { return int(a.Values[0].I - b.Values[0].I) })
	if len(rows) != 1000 {
		t.Fatalf("%d rows", len(rows))
	}
	start := rows[0].Values[1].I
	if start < before || start > after {
		t.Fatalf("row 0 at %d, not the source's start (%d..%d)", start, before, after)
	}
	for k, r := range rows {
		ts, back := r.Values[1].I, r.Values[3].I
		if want := start + int64(k)*10; ts != want {
			t.Fatalf("row %d at %d, want the start + %d µs (%d)", k, ts, k*10, want)
		}
		if back > ts || back < ts-5_000_000 {
			t.Fatalf("row %d: max-past 5 s gave %d for the row's time %d", k, back, ts)
		}
		if r.Values[2].I != ts/86_400_000_000 {
			t.Fatalf("row %d: DATE %d for %d", k, r.Values[2].I, ts)
		}
	}
}
