package weir

import (
	"github.com/weirstream/weir/internal/engine"
)

// AppendOnlyAccumulator is an optional interface of an AggregateFunction
// whose accumulators hold slices that are only ever appended to: Add,
// Merge and Result never change an element below a slice's length (they
// append, or build a new slice), and nothing else changes them either
// (results are only read downstream). Then a window operator's checkpoint
// copies the accumulators as they are (slice headers, not elements) at the
// barrier and encodes them off the task: what the barrier saw is the
// prefix each header covers, and appends after it write past that prefix.
// Without the interface, an accumulator holding a slice is encoded at the
// barrier, which stops the task for as long as the encoding takes. Slices
// may hold slices, with the same promise for the inner ones; maps and
// pointers still encode at the barrier.
type AppendOnlyAccumulator = engine.AppendOnlyAccumulator
