// Package parquetcheck checks weir's Parquet files against DuckDB, an
// implementation nobody here wrote: DuckDB writes a file of every type
// that weir's filesystem source must read as the generator says, and
// reads back what weir's exactly-once, partitioned SQL sink writes.
//
// It is a module of its own (go.mod here, with a replace of weir to the
// repository root), so that the main module never depends on DuckDB's cgo
// bindings (github.com/duckdb/duckdb-go/v2, which brings a prebuilt static
// library through the module proxy; CGO_ENABLED=1 and a C compiler are
// needed). `go test ./...` at the root does not descend into it;
// scripts/test.sh runs it. When the main module's requirements change,
// run `go mod tidy` here too (this module's go.sum lists what weir's
// packages need).
package parquetcheck
