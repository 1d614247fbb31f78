package expr

import (
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// CURRENT_WATERMARK(rowtime), Flink's: the watermark the operator that
// evaluates it has received before the row, as the rowtime attribute's
// type (TIMESTAMP(3) or TIMESTAMP_LTZ(3)), NULL before the first one. As
// in Flink it is for projections and filters (a Calc): a Calc whose
// expressions call it runs on weir.FlatMapWatermarkWith and puts each
// row's watermark in one more slot after the row's values, which the
// call reads. Anywhere else the call fails the job at its first row.

// A WatermarkRef is a CURRENT_WATERMARK call's slot: where the Calc that
// evaluates it puts the watermark (-1 until one does).
type WatermarkRef struct{ Slot int }

// Watermarks returns the CURRENT_WATERMARK calls of es.
func Watermarks(es ...*Expr) []*WatermarkRef {
	var out []*WatermarkRef
	for _, e := range es {
		if e != nil && e.Deps != nil {
			out = append(out, e.Deps.watermarks...)
		}
	}
	return out
}

// WatermarkValue is the value of a watermark in Unix milliseconds
// (math.MinInt64 before the first) as CURRENT_WATERMARK gives it.
func WatermarkValue(ms int64) types.Value {
	if ms == minWatermark {
		return types.NullValue
	}
	return types.IntValue(ms * 1000) // microseconds, as TIMESTAMP
}

const minWatermark = -1 << 63

func (c *Compiler) currentWatermark(e *parser.Call, xs []Expr) (Expr, error) {
	if err := wantArgs(e, xs, 1, 1); err != nil {
		return Expr{}, err
	}
	t := xs[0].Type
	if t.TimeAttr != types.RowtimeAttr {
		return Expr{}, ErrAt(e, "CURRENT_WATERMARK needs a rowtime attribute (a column with a WATERMARK), not %s", t)
	}
	t.TimeAttr, t.NotNull, t.Precision = types.NoTimeAttr, false, 3
	ref := &WatermarkRef{Slot: -1}
	if c.deps != nil {
		c.deps.watermarks = append(c.deps.watermarks, ref)
	}
	return Expr{Type: t, Col: -1, Eval: func(r []types.Value) types.Value {
		if ref.Slot < 0 || ref.Slot >= len(r) {
			panic(runtimeError("CURRENT_WATERMARK is only supported in a SELECT list or a WHERE clause"))
		}
		return r[ref.Slot]
	}}, nil
}
