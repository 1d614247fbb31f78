package print_test

import (
	"bytes"
	"context"
	"math/big"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/connector"
	_ "github.com/weirstream/weir/sql/connector/builtin"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

func f(name string, t types.Type) types.Field { return types.Field{Name: name, Type: t} }

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }

func TestPrint(t *testing.T) {
	schema := types.Schema{f("id", types.IntType), f("name", types.StringType)}
	for _, c := range []struct {
		opts map[string]string
		par  int
		want []string
	}{
		{nil, 1, []string{"+I[1, a]", "-U[1, a]", "+U[1, null]", "-D[2, b]"}},
		{map[string]string{"print-identifier": "out"}, 1, []string{"out> +I[1, a]", "out> -U[1, a]", "out> +U[1, null]", "out> -D[2, b]"}},
		{map[string]string{"print-identifier": "out", "sink.parallelism": "2"}, 1, nil},
	} {
		var out syncBuf
		opts := map[string]string{"connector": "print"}
		for k, v := range c.opts {
			opts[k] = v
		}
		sink, err := connector.CreateSink(&connector.Table{Name: "p", Schema: schema, Options: opts, Settings: connector.Settings{Stdout: &out}})
		if err != nil {
			t.Fatal(err)
		}
		if sink.Accepts != types.All {
			t.Fatal(sink.Accepts)
		}
		rows := []types.Row{
			{Kind: types.Insert, Values: []types.Value{{I: 1}, {S: "a"}}},
			{Kind: types.UpdateBefore, Values: []types.Value{{I: 1}, {S: "a"}}},
			{Kind: types.UpdateAfter, Values: []types.Value{{I: 1}, types.NullValue}},
			{Kind: types.Delete, Values: []types.Value{{I: 2}, {S: "b"}}},
		}
		job := weir.NewJob("print")
		weir.To(weir.FromSource(job, "rows", weir.SliceSource(rows), weir.NoWatermarks[types.Row]()), sink.Sink, sink.Options...)
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := strings.Split(strings.TrimSuffix(out.b.String(), "\n"), "\n")
		if c.want == nil {
			// Two subtasks: each line carries the identifier and its subtask.
			for _, l := range got {
				if !strings.HasPrefix(l, "out:1> ") && !strings.HasPrefix(l, "out:2> ") {
					t.Fatalf("line %q", l)
				}
			}
			if len(got) != 4 {
				t.Fatalf("lines %q", got)
			}
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Fatalf("printed %q, want %q", got, c.want)
		}
	}
	if _, err := connector.CreateSink(&connector.Table{Name: "p", Options: map[string]string{"connector": "print", "print-identfier": "x"}}); err == nil ||
		!strings.Contains(err.Error(), "unsupported options found for 'print': 'print-identfier' (supported options: connector, print-identifier, sink.parallelism, standard-error)") {
		t.Fatal(err)
	}
	bh, err := connector.CreateSink(&connector.Table{Name: "b", Options: map[string]string{"connector": "blackhole"}})
	if err != nil || bh.Accepts != types.All {
		t.Fatal(bh, err)
	}
}

func TestPrinterTypes(t *testing.T) {
	s := types.Schema{
		f("ts", types.Timestamp3), f("ltz", types.TimestampLTZ3), f("d", types.DoubleType), f("dec", types.DecimalType(5, 2)),
		f("big", types.DecimalType(20, 1)), f("arr", types.ArrayOf(types.IntType)), f("m", types.MapOf(types.StringType, types.BigIntType)),
		f("r", types.RowOf(f("a", types.IntType), f("b", types.StringType))), f("day", types.DateType), f("b", types.BytesType), f("ok", types.BooleanType),
	}
	row := types.Row{Kind: types.Insert, Values: []types.Value{
		{I: 1586937900000_000}, {I: 1586937901500_000}, types.FloatValue(1e10), {I: -5}, {X: big.NewInt(123)},
		types.ListValue([]types.Value{{I: 1}, types.NullValue}), types.ListValue([]types.Value{{S: "k"}, {I: 7}}),
		types.ListValue([]types.Value{{I: 2}, {S: "x"}}), {I: 0}, {S: "\x01\xff"}, {I: 1},
	}}
	got := string(format.NewPrinter(s).Append(nil, &row))
	want := "+I[2020-04-15T08:05, 2020-04-15T08:05:01.500Z, 1.0E10, -0.05, 12.3, [1, null], {k=7}, +I[2, x], 1970-01-01, [1, -1], true]"
	if got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}
