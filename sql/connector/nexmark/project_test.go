package nexmark_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/types"
)

// A projected read gives, per row, exactly the columns and ROW fields it
// names, equal to those of the full read of the same split, with Col -1
// values left to fill.
func TestProjectedRowsAreFullRowsFields(t *testing.T) {
	tab := &connector.Table{Name: "nexmark", Schema: ddl, Settings: connector.Settings{Parallelism: 1}, Options: map[string]string{
		"connector": "nexmark", "events.num": "3000"}}
	src, err := connector.CreateSource(tab)
	if err != nil {
		t.Fatal(err)
	}
	paths := []connector.Path{{Col: 3, Field: 2}, {Col: 0, Field: -1}, {Col: -1, Field: -1}, {Col: 1, Field: 1},
		{Col: 2, Field: 5}, {Col: 3, Field: -1}, {Col: 2, Field: 7}}
	filled := 0
	proj, err := src.Project(paths, func(vs []types.Value) { vs[2] = types.IntValue(vs[1].I + 100); filled++ })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	splits, err := src.Source.Splits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	full, err := src.Source.Open(ctx, splits[0])
	if err != nil {
		t.Fatal(err)
	}
	part, err := proj.Open(ctx, splits[0])
	if err != nil {
		t.Fatal(err)
	}
	fb, pb := make([]types.Row, 256), make([]types.Row, 256)
	total := 0
	for {
		n, ferr := full.Read(ctx, fb)
		m, perr := part.Read(ctx, pb)
		if n != m {
			t.Fatalf("full read %d rows, projected %d", n, m)
		}
		for i := 0; i < n; i++ {
			f, p := fb[i].Values, pb[i].Values
			if len(p) != len(paths) {
				t.Fatalf("row %d has %d values, want %d", total+i, len(p), len(paths))
			}
			for j, path := range paths {
				var want types.Value
				switch {
				case path.Col == -1:
					want = types.IntValue(f[0].I + 100)
				case path.Field < 0:
					want = f[path.Col]
				case f[path.Col].Null:
					want = types.NullValue
				default:
					want = f[path.Col].List()[path.Field]
				}
				if !p[j].Equal(want) {
					t.Fatalf("row %d value %d (%+v): %+v, want %+v", total+i, j, path, p[j], want)
				}
			}
		}
		total += n
		if errors.Is(ferr, io.EOF) || errors.Is(perr, io.EOF) {
			if !errors.Is(ferr, io.EOF) || !errors.Is(perr, io.EOF) {
				t.Fatalf("ends differ: %v, %v", ferr, perr)
			}
			break
		}
		if ferr != nil || perr != nil {
			t.Fatal(ferr, perr)
		}
	}
	if total != 3000 || filled != 3000 {
		t.Fatalf("%d rows, %d filled; want 3000", total, filled)
	}
	if _, err := src.Project([]connector.Path{{Col: 0, Field: 1}}, nil); err == nil {
		t.Fatal("a field of the INT column event_type was projected")
	}
}
