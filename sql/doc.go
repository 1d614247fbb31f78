// Package sql runs Flink SQL on weir: statements are parsed (package
// sql/parser), resolved against a catalog of tables and views, planned into
// a tree of relational operators that knows which results are insert-only
// and which update (changelog modes, as Flink's planner), and compiled to
// weir's operators through the public API (FromSource, Map, Filter, KeyBy,
// Window/Aggregate, keyed Process functions with weir state), so that
// checkpoints, savepoints, rescaling and Pebble state hold for SQL jobs.
//
// Expressions compile once, at planning, into closures over a row's value
// slice (types.Row): the hot path does no parsing, name lookup or
// reflection.
//
// Run executes a script (DDL, views and a statement set of INSERTs) as one
// job; Session plans statements one at a time for embedding and the shell.
package sql
