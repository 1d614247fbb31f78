// Package sql runs Flink SQL on weir: Run executes a script (DDL, views
// and a statement set of INSERTs) as one job; Session plans statements one
// at a time for embedding and the shell.
//
// The package is the facade: its names are aliases of and wrappers over
// the layers below, which are
//   - sql/parser: the Flink-dialect lexer and parser;
//   - sql/expr: expressions, functions, casts, decimals and aggregates,
//     compiled once to closures over a row's values;
//   - sql/planner: the catalog, the planner's rules (one per file) and the
//     operators they build on a weir job;
//   - sql/connector and sql/format: table connectors and formats.
package sql
