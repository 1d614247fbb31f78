package planner

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/types"
)

// ROW_NUMBER() ... <= 1 over an insert-only input: Flink's deduplication
// (ordered by a time attribute: Nexmark q18) and its Top-1 (q9's best bid
// of an auction). A partition keeps one row, so its state is that row
// itself, marked by oneRow in the state row's Kind: one object per
// partition, the row's copy. The Top-N form (topNFn.ProcessElement), a
// list of the partition's rows each in a ListValue, added a slice and the
// box of the ListValue: three allocations per partition, and three
// objects for the collector to mark, where the hand-written q18 keeps a
// struct. A savepoint taken before holds that form (Kind Insert, one
// ListValue); it is read as it is and written back in this one.

// oneRow marks the state row of a partition kept in the one-row form: its
// values are the partition's row. The Top-N form's state rows have Kind
// Insert.
const oneRow = types.UpdateAfter

// topOne is ProcessElement of a ROW_NUMBER Top-1 over an insert-only
// input. A row that takes first place replaces the partition's row,
// written over it (the state's row is the partition's only reference to
// it; the -D or -U is a copy made before). On the heap, the row written
// over is the state's (topNFn.inPlace): the partition's entry is looked
// up once, by Value, not again by an Update (a second probe of the
// table: 7% of the samples of q18's plan in a profile); weir's SQL sets
// no state TTL that an Update would restart.
func (f *topNFn) topOne(ctx *weir.KeyedContext[string, types.Row], in types.Row) error {
	st, ok := f.rows.Value()
	var was []types.Value
	// written: the state holds was in the one-row form already, and it
	// is the state's own
	written := false
	switch {
	case !ok || len(st.Values) == 0:
	case st.Kind == oneRow:
		was = st.Values
		written = f.inPlace
	default: // the Top-N form, restored from a savepoint
		was = st.Values[0].List()
		st = types.Row{Kind: oneRow, Values: was}
	}
	if was == nil {
		x := append([]types.Value(nil), in.Values...)
		ctx.Emit(types.Row{Kind: types.Insert, Values: f.project(x, 1)})
		f.rows.Update(types.Row{Kind: oneRow, Values: x})
		return nil
	}
	c := f.compare(was, in.Values)
	if c < 0 || (c == 0 && !f.spec.keepLast) || (c == 0 && types.EqualValues(was, in.Values)) {
		// (rows that differ in the order differ: only a tie can be the
		// same row again)
		// the partition's row stays first, or comes again: no change
		if !written {
			f.rows.Update(st)
		}
		return nil
	}
	before, after := types.Delete, types.Insert
	if f.spec.dedup {
		before, after = types.UpdateBefore, types.UpdateAfter
	}
	if f.ub == nil || *f.ub {
		ctx.Emit(types.Row{Kind: before, Values: f.project(was, 1)})
	}
	if len(was) == len(in.Values) {
		copy(was, in.Values)
	} else { // (a restored row of another width)
		was = append([]types.Value(nil), in.Values...)
		written = false
	}
	ctx.Emit(types.Row{Kind: after, Values: f.project(was, 1)})
	if !written {
		f.rows.Update(types.Row{Kind: oneRow, Values: was})
	}
	return nil
}
