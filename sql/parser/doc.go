// Package parser is the SQL layer's lexer and recursive-descent parser for
// Flink's SQL dialect (Calcite's grammar as Flink uses it): DDL with nested
// ROW types, computed columns, watermarks and WITH options; views; INSERT
// INTO; queries with joins, window table functions, OVER windows and set
// operations; SHOW, DESCRIBE, EXPLAIN, SET and statement sets.
//
// Errors are *Error values that name the line and column of the offending
// token and what was expected there. ${VAR} substitution (Substitute) runs
// before parsing, as in Flink's SQL client.
package parser
