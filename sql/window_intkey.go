package sql

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/types"
)

// intKey is the key of a window aggregation grouped by one integer
// expression (Nexmark's GROUP BY auction, bidder): the key is the value
// itself, not its encoding (types.Key allocates two strings per record),
// and it hashes as an integer. Null keeps NULL apart from 0.
type intKey struct {
	V    int64
	Null bool
}

// intKeyWindowAgg is windowAggRel's TUMBLE/HOP/SESSION aggregation keyed
// by intKey. The output row is the same: the accumulator holds the key
// values it was created with.
func intKeyWindowAgg(b *builder, s *weir.Stream[types.Row], w *windowSpec, key evalFn, layout *aggLayout, keyEvals []evalFn) *weir.Stream[types.Row] {
	ks := weir.KeyBy(s, func(row types.Row) intKey {
		v := key(row.Values)
		return intKey{V: v.I, Null: v.Null}
	})
	agg := rowAgg{layout: layout, keys: keyEvals}
	base := len(keyEvals) + len(layout.calls)
	res := weir.Aggregate(weir.Window(ks, w.windows(), b.uid("window")), agg, b.uid("window-agg"))
	return weir.Map(res, func(wr weir.WindowResult[intKey, types.Row]) types.Row {
		vs := wr.Value.Values
		start, end := wr.Start.UnixMicro(), wr.End.UnixMicro()
		vs[base], vs[base+1], vs[base+2] = types.IntValue(start), types.IntValue(end), types.IntValue(end-1000)
		return types.Row{Values: vs}
	}, b.uid("window-result"))
}
