package expr

import "github.com/weirstream/weir/sql/types"

// What the planner's split of distinct aggregates (Flink's
// table.optimizer.distinct-agg.split.enabled, sql/planner/distinct_split.go)
// reads of a compiled call: which function it is, and AVG's sum type and
// result, so that AVG split into a partial sum and count gives the value
// the call's own accumulator gives.

// SplitName is the function of a call that the split of distinct
// aggregates can compute in two aggregations (a partial one per bucket
// and a final one over the partials): COUNT, COUNT(*), SUM, SUM0, AVG,
// MIN or MAX; "" for any other (user-defined, FIRST_VALUE, LISTAGG...).
func (a *AggCall) SplitName() string {
	switch a.Kind {
	case AggCount:
		return "COUNT"
	case AggCountStar:
		return "COUNT(*)"
	case aggSum:
		return "SUM"
	case aggSum0:
		return "SUM0"
	case aggAvg:
		return "AVG"
	case AggMin:
		return "MIN"
	case AggMax:
		return "MAX"
	}
	return ""
}

// SumType is the type SUM, SUM0 and AVG accumulate their sum in (BIGINT
// for integers, DOUBLE, or DECIMAL(38, s)).
func (a *AggCall) SumType() types.Type { return a.sumT }

// AvgResult is AVG's result for a sum (of SumType) of n values: NULL when
// n is 0, else the average as the call's own accumulator computes it
// (truncated for integers, HALF_UP at the result's scale for decimals).
func (a *AggCall) AvgResult(sum types.Value, n int64) types.Value {
	return sumResult(a, sum, n)
}
