// Package planner plans Flink SQL statements and builds them as weir jobs.
// A Session holds its catalogs (Flink's catalogs of databases of tables,
// views and functions, with a current catalog and database that USE sets:
// catalog_manager.go) and the settings of SET;
// a statement is planned into a tree of relational operators (rel) that
// knows which results are insert-only and which update (changelog modes,
// as Flink's planner), and each rel builds its operator on a job through
// weir's public API (FromSource, Map, Filter, KeyBy, Window/Aggregate,
// keyed Process functions with weir state), so that checkpoints,
// savepoints, rescaling and Pebble state hold for SQL jobs. Where the job
// keeps keyed state in Pebble, some operators keep it in another shape
// than on the heap, so that a row reads and writes what it changes and no
// more: event-time window aggregations run on Process functions
// (window_state.go), and a group aggregation's DISTINCT sets are map state,
// an entry per value (groupagg_distinct.go).
//
// The rules live one per file (join_windowmax.go, join_maxprune.go,
// reuse.go, prune.go...), each beside the operator it plans; Config
// switches the ones tests compare with and without. Expressions are
// compiled by package sql/expr; package sql is the facade users import.
package planner
