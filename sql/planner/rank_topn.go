package planner

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/types"
)

// RANK and DENSE_RANK Top-N: rows that tie in the ORDER BY share a rank
// (RANK then skips ranks, DENSE_RANK does not), so the top N ranks may
// hold more than N rows.

// ranks returns the rank of each row of a sorted partition.
func (f *topNFn) ranks(rows []types.Value) []int64 {
	out := make([]int64, len(rows))
	for i := range rows {
		switch {
		case i == 0:
			out[i] = 1
		case f.spec.kind == "ROW_NUMBER":
			out[i] = int64(i + 1)
		case f.compare(rows[i-1].List(), rows[i].List()) == 0:
			out[i] = out[i-1]
		case f.spec.kind == "RANK":
			out[i] = int64(i + 1)
		default: // DENSE_RANK
			out[i] = out[i-1] + 1
		}
	}
	return out
}

// visible returns how many rows of a sorted partition rank within the
// limit (ranks, when given, are those of rows).
func (f *topNFn) visible(rows []types.Value, ranks []int64) int {
	if f.spec.kind == "ROW_NUMBER" || f.spec.kind == "" {
		return min(len(rows), int(f.keep))
	}
	if ranks == nil {
		ranks = f.ranks(rows)
	}
	n := 0
	for n < len(rows) && ranks[n] <= f.keep {
		n++
	}
	return n
}

// emitRanks emits the difference between the old and the new top ranks:
// -D for a row that leaves them or changes rank, +I for one that enters
// or changes rank.
func (f *topNFn) emitRanks(ctx *weir.KeyedContext[string, types.Row], old, rows []types.Value) {
	or, nr := f.ranks(old), f.ranks(rows)
	ov, nv := f.visible(old, or), f.visible(rows, nr)
	for i := 0; i < max(ov, nv); i++ {
		var was, is []types.Value
		if i < ov {
			was = old[i].List()
		}
		if i < nv {
			is = rows[i].List()
		}
		if was != nil && is != nil && or[i] == nr[i] && types.EqualValues(was, is) {
			continue
		}
		if was != nil {
			ctx.Emit(types.Row{Kind: types.Delete, Values: f.project(was, or[i])})
		}
		if is != nil {
			ctx.Emit(types.Row{Kind: types.Insert, Values: f.project(is, nr[i])})
		}
	}
}
