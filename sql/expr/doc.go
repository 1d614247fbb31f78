// Package expr compiles SQL expressions, once, at planning, into closures
// over a row's values (types.Row): columns are read by index, so the hot
// path does no parsing, name lookup or reflection. It holds the scalar
// functions, casts, DECIMAL arithmetic (int64 when it fits, big.Int
// otherwise), the typed forms of expressions (int64, three-valued truth),
// the aggregate calls and their accumulator layout (whose DISTINCT sets may
// live outside the accumulator, in a DistinctStore: agg_distinct_store.go),
// and the leaves through which expressions read a projecting scan's row.
//
// It knows nothing of plans: the planner (package sql/planner) hands it a
// Scope, the columns an expression may read, and a substitution for what
// the plan already computed (GROUP BY keys, aggregates, window properties).
package expr
