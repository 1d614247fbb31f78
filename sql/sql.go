package sql

import (
	"context"
	"io"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	_ "github.com/weirstream/weir/sql/nexmarksql" // Nexmark's UDF classes (count_char)
	"github.com/weirstream/weir/sql/planner"
	"github.com/weirstream/weir/sql/types"
)

// Session is a SQL session: catalogs of tables, views and functions (the
// built-in default_catalog.default_database current at first, as in
// Flink) and the settings of SET. It is not safe for concurrent use.
type Session = planner.Session

// Statement is a planned statement that runs in a job: an INSERT INTO or
// a SELECT whose rows print as a changelog.
type Statement = planner.Statement

// Option configures a Session or Run.
type Option = planner.Option

// NewSession returns an empty session.
func NewSession(opts ...Option) *Session { return planner.NewSession(opts...) }

// Run executes a SQL script as Flink's `sql-client.sh -f` does: DDL is
// registered, every INSERT INTO (and SELECT, printed as a changelog) runs
// in one job, and Run returns when the job ends (bounded inputs done) or
// ctx is cancelled.
func Run(ctx context.Context, text string, opts ...Option) error {
	return planner.Run(ctx, text, opts...)
}

// Define sets the value of a ${name} variable of the statements.
func Define(name, value string) Option { return planner.Define(name, value) }

// JobOptions are passed to weir.NewJob for the jobs the session plans
// (state backend, restarts, metrics and control addresses...).
func JobOptions(opts ...weir.JobOption) Option { return planner.JobOptions(opts...) }

// Parallelism is the jobs' default parallelism (SET
// 'parallelism.default' overrides it).
func Parallelism(n int) Option { return planner.Parallelism(n) }

// Checkpointing makes the jobs checkpoint every interval into dir.
func Checkpointing(interval time.Duration, dir string) Option {
	return planner.Checkpointing(interval, dir)
}

// Stdout is where SELECT results, SHOW, DESCRIBE and EXPLAIN print, and
// where 'print' tables write (default os.Stdout).
func Stdout(w io.Writer) Option { return planner.Stdout(w) }

// LogDir is the embedded log's directory for 'weir-log' tables.
func LogDir(dir string) Option { return planner.LogDir(dir) }

// StateDir is where keyed state lives when SET 'state.backend.type' =
// 'rocksdb' (Flink's; 'forst' and 'pebble' too: weir's Pebble) names no
// 'state.backend.rocksdb.localdir' (default: a new temporary directory).
func StateDir(dir string) Option { return planner.StateDir(dir) }

// JobName names the planned job (default "sql").
func JobName(name string) Option { return planner.JobName(name) }

// FormatRow prints a row as Flink's print connector does: "+I[1, a]".
func FormatRow(row types.Row, sc types.Schema) string { return planner.FormatRow(row, sc) }

// FormatValue prints a value of type t as Flink's print connector and SQL
// client do (NULL as "NULL", strings bare, decimals with their scale).
func FormatValue(v types.Value, t types.Type) string { return expr.FormatValue(v, t) }

// ScalarFunctions lists the scalar functions the compiler knows, for docs
// and the shell's completion.
var ScalarFunctions = expr.ScalarFunctions

// Function is a user-defined function: a *ScalarFunction, a
// *TableFunction or an *AggregateFunction.
type Function = expr.Function

// ScalarFunction is a user-defined scalar function (Flink's
// ScalarFunction), written in Go.
type ScalarFunction = expr.ScalarFunction

// AggregateFunction is a user-defined aggregate function (Flink's
// AggregateFunction), written in Go, its accumulator kept in state.
type AggregateFunction = expr.AggregateFunction

// WithFunction registers f under name in the session, as Flink's
// createTemporarySystemFunction: SQL calls it by name (case-insensitive),
// and it is found before a built-in function of the same name.
func WithFunction(name string, f Function) Option { return planner.WithFunction(name, f) }

// RegisterClass binds a Java class name to a Go function, so that
// `CREATE FUNCTION f AS 'the.Class'` in a Flink SQL file finds it: a
// file whose Java UDF has a Go twin runs unchanged. Call it from an init
// function; it panics if the class is registered twice.
func RegisterClass(class string, f Function) { expr.RegisterClass(class, f) }

// FunctionDir is the directory the module paths of WebAssembly functions
// are resolved in (CREATE FUNCTION f AS 'udfs/f.wasm' LANGUAGE WASM): a
// path must name a file inside it. Default: the current directory.
func FunctionDir(dir string) Option { return planner.FunctionDir(dir) }

// TableFunction is a user-defined table function (Flink's TableFunction),
// written in Go: rows per call, for FROM t, LATERAL TABLE(f(t.x)).
type TableFunction = expr.TableFunction
