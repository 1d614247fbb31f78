// Package parquetcheck checks weir's Parquet files against DuckDB, an
// implementation nobody here wrote. It is a module of its own, so that the
// main module never depends on DuckDB's cgo bindings.
package parquetcheck
