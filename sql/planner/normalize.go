package planner

import (
	"fmt"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// normalizeRel turns an upsert source (+I/+U/-D by primary key, without
// -U) into a full changelog, as Flink's ChangelogNormalize: per key it
// keeps the last row, so an upsert becomes -U old, +U new and a delete
// carries the deleted row.
func normalizeRel(r *rel, td *tableDef) (*rel, error) {
	if len(td.pk) == 0 {
		return nil, parser.Errorf(td.ddl.Pos, "table '%s' is an upsert source and needs a PRIMARY KEY", td.ddl.Name)
	}
	var names []string
	keyCols := make([]int, len(td.pk))
	for i, pk := range td.pk {
		keyCols[i] = td.physical[pk]
		names = append(names, td.cols[keyCols[i]].Name)
	}
	op := fmt.Sprintf("ChangelogNormalize(key=[%s])", strings.Join(names, ", "))
	out := &rel{op: op, sc: r.sc, mode: types.All, inputs: []*rel{r}, updater: op, bounded: r.bounded}
	out.build = func(b *builder) (*weir.Stream[types.Row], error) {
		in, err := b.stream(r)
		if err != nil {
			return nil, err
		}
		ks := weir.KeyBy(in, func(row types.Row) string {
			var buf [4]types.Value
			k := buf[:0]
			for _, c := range keyCols {
				k = append(k, row.Values[c])
			}
			return types.Key(k)
		})
		return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[string, types.Row, types.Row] {
			return &normalizeFn{opts: b.stateOpts()}
		}, b.uid("normalize")), nil
	}
	return out, nil
}

type normalizeFn struct {
	last *weir.ValueState[string, types.Row]
	opts []weir.StateOption // 'table.exec.state.ttl'
}

func (f *normalizeFn) Open(rc *weir.RuntimeContext[string]) error {
	f.last = weir.NewValueState[types.Row](rc, "last", f.opts...)
	return nil
}

func (f *normalizeFn) ProcessElement(ctx *weir.KeyedContext[string, types.Row], in types.Row) error {
	prev, ok := f.last.Value()
	switch in.Kind {
	case types.UpdateBefore:
		return nil // upsert streams carry no -U; ignore one if present
	case types.Delete:
		if ok {
			ctx.Emit(types.Row{Kind: types.Delete, Values: prev.Values})
			f.last.Clear()
		}
		return nil
	}
	if ok {
		if types.EqualValues(prev.Values, in.Values) {
			return nil
		}
		ctx.Emit(types.Row{Kind: types.UpdateBefore, Values: prev.Values})
		ctx.Emit(types.Row{Kind: types.UpdateAfter, Values: in.Values})
	} else {
		ctx.Emit(types.Row{Kind: types.Insert, Values: in.Values})
	}
	f.last.Update(types.Row{Values: in.Values})
	return nil
}
