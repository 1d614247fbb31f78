package planner

import (
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
)

// The OVER functions beyond the aggregates and the ranks: LAG is an
// aggregate of the OVER aggregation (sql/expr/agg_lag.go); LEAD,
// CUME_DIST, PERCENT_RANK and NTILE are refused as Flink's streaming
// planner refuses them (they need the rows after the current one, or the
// whole partition: Flink plans them in batch mode only).

// overFunctionErr checks a call of an OVER function that is not an
// aggregate; ok reports whether c is one the OVER aggregation computes.
func overFunctionErr(c *parser.Call) (ok bool, err error) {
	switch c.Name {
	case "LEAD", "CUME_DIST", "PERCENT_RANK", "NTILE":
		return false, expr.ErrAt(c, "%s Function is not supported in stream mode (Flink plans it in batch mode only)", c.Name)
	case "LAG":
		if c.Over != nil && c.Over.Frame != nil {
			return false, expr.ErrAt(c, "ROW/RANGE not allowed with RANK, DENSE_RANK, ROW_NUMBER, LAG or LEAD functions")
		}
		return true, nil
	}
	return false, nil
}
