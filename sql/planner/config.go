package planner

// Config switches the planner's rules. Its zero value plans as weir does
// in production; tests turn a rule off to compare a plan with the one
// without it.
type Config struct {
	// DisablePushdown plans every scan without projection (expr/leaf.go).
	DisablePushdown bool
	// DisableWindowMaxJoin plans q5's window-maximum join as a plain
	// window join (join_windowmax.go).
	DisableWindowMaxJoin bool
	// DisableMaxPrune leaves out q7's window-maximum prune before a
	// regular join (join_maxprune.go).
	DisableMaxPrune bool
	// DisableMaxPruneBelowCalc puts that prune after the left Calc even
	// where it could go below it.
	DisableMaxPruneBelowCalc bool
	// DisableJoinPrune keeps every column of a join's inputs
	// (join_prune.go).
	DisableJoinPrune bool
	// DisableSlabRows makes every Calc row on its own, where every
	// consumer copies them (lend.go's slabs).
	DisableSlabRows bool
	// DisableRowRecycling leaves a Calc's slab rows to the collector
	// where its consumer could hand them back (recycle.go).
	DisableRowRecycling bool
	// DisableTopOneState keeps a ROW_NUMBER Top-1's state in the Top-N's
	// form, a list of one ListValue, as weir did before rank_dedup.go
	// (what a savepoint taken then holds), and runs it on the Top-N's
	// paths.
	DisableTopOneState bool
	// DisableSlicedWindows keeps one accumulator per window for every HOP
	// aggregation on Pebble (window_state.go), as weir did before
	// window_state_sliced.go (what a checkpoint taken then holds).
	DisableSlicedWindows bool
}
