package planner

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
	"github.com/weirstream/weir/sql/wasmudf/wasmtest"
)

// The 'values' connector of the tests, as Flink's ITCases use one: a
// source of rows registered by the test under a 'data-id', and a sink that
// keeps what it receives per table. It is registered only in tests.

type valuesStore struct {
	mu    sync.Mutex
	data  map[string][]string // data-id -> lines "+I v1, v2, ..."
	sinks map[string][]types.Row
	// schemas of the sinks, for printing
	schemas map[string]types.Schema
}

var values = &valuesStore{data: map[string][]string{}, sinks: map[string][]types.Row{}, schemas: map[string]types.Schema{}}

type valuesFactory struct{}

func (valuesFactory) Identifier() string { return "values" }

func init() { connector.Register(valuesFactory{}) }

// parseRowLine reads "+I 1, 'a', NULL" into a row of schema's types.
func parseRowLine(line string, schema types.Schema) (types.Row, error) {
	kindText, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	kind, err := types.ParseRowKind(kindText)
	if err != nil {
		return types.Row{}, err
	}
	stmts, err := parser.Parse("VALUES (" + rest + ")")
	if err != nil {
		return types.Row{}, fmt.Errorf("row %q: %v", line, err)
	}
	exprs := stmts[0].(*parser.QueryStmt).Query.(*parser.Values).Rows[0]
	if len(exprs) != len(schema) {
		return types.Row{}, fmt.Errorf("row %q has %d values, the table %d columns", line, len(exprs), len(schema))
	}
	ec := &expr.Compiler{Scope: &expr.Scope{}}
	vs := make([]types.Value, len(exprs))
	for i, e := range exprs {
		ce, err := ec.Compile(e)
		if err != nil {
			return types.Row{}, err
		}
		if ce.Type.Kind == types.Structured && schema[i].Type.Kind == types.Structured {
			vs[i] = ce.Eval(nil)
			continue
		}
		c, err := expr.Cast(ce, schema[i].Type, e)
		if err != nil {
			return types.Row{}, err
		}
		vs[i] = c.Eval(nil)
	}
	return types.Row{Kind: kind, Values: vs}, nil
}

// valuesRows parses the rows of the test data t's 'data-id' names.
func valuesRows(t *connector.Table) ([]types.Row, error) {
	values.mu.Lock()
	lines, ok := values.data[t.Options["data-id"]]
	values.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("table '%s': no test data '%s'", t.Name, t.Options["data-id"])
	}
	var rows []types.Row
	for _, l := range lines {
		r, err := parseRowLine(l, t.Schema)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func (valuesFactory) CreateSource(t *connector.Table) (*connector.Source, error) {
	rows, err := valuesRows(t)
	if err != nil {
		return nil, err
	}
	mode := types.InsertOnly
	for _, r := range rows {
		if r.Kind != types.Insert {
			mode = types.All
		}
	}
	if t.Options["changelog-mode"] == "upsert" {
		mode = types.Upsert
	}
	return &connector.Source{Source: weir.SliceSource(rows), Bounded: true, Changelog: mode}, nil
}

func (valuesFactory) CreateSink(t *connector.Table) (*connector.Sink, error) {
	name := t.Name
	values.mu.Lock()
	values.schemas[name] = t.Schema
	values.mu.Unlock()
	accepts := types.All
	if t.Options["sink-insert-only"] == "true" {
		accepts = types.InsertOnly
	}
	return &connector.Sink{Accepts: accepts, Sink: weir.SinkFunc[types.Row](func(_ context.Context, rows []types.Row) error {
		values.mu.Lock()
		defer values.mu.Unlock()
		for _, r := range rows {
			values.sinks[name] = append(values.sinks[name], types.Row{Kind: r.Kind, Values: append([]types.Value(nil), r.Values...)})
		}
		return nil
	})}, nil
}

// materialize applies a changelog to a multiset of rows (printed lines).
func materialize(lines []string) ([]string, error) {
	count := map[string]int{}
	for _, l := range lines {
		kind, rest := l[:2], l[2:]
		switch kind {
		case "+I", "+U":
			count[rest]++
		case "-U", "-D":
			if count[rest] == 0 {
				return nil, fmt.Errorf("retraction of a row not in the result: %s", l)
			}
			count[rest]--
		}
	}
	var out []string
	for r, n := range count {
		for range n {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out, nil
}

// TestConformance runs testdata/conformance: per feature, input rows, the
// statements and the expected result (materialized, or the changelog as a
// sorted multiset), or the error with its line and column.
//
//	rows id=NAME            lines "+I v1, v2" (SQL literals) for a 'values' table
//	exec [parallelism=N] [changelog] [wasm]
//	                        runs the statements; prints each values sink's rows
//	                        and the printed SELECT results; with wasm, the
//	                        WebAssembly test functions' module (wasmtest) is
//	                        udfs.wasm in the function directory
func TestConformance(t *testing.T) {
	datadriven.Walk(t, "testdata/conformance", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "rows":
				storeRows(t, path, d)
				return ""
			case "exec":
				return runExec(t, d)
			}
			t.Fatalf("unknown command %s", d.Cmd)
			return ""
		})
	})
}

func runExec(t *testing.T, d *datadriven.TestData) string {
	par := 1
	if d.HasArg("parallelism") {
		d.ScanArgs(t, "parallelism", &par)
	}
	values.mu.Lock()
	values.sinks = map[string][]types.Row{}
	values.mu.Unlock()
	var out strings.Builder
	var printed syncBuffer
	opts := append([]Option{Parallelism(par), Stdout(&printed), Define("PAR", fmt.Sprint(par))}, execOptions...)
	if d.HasArg("wasm") {
		// the test module of WebAssembly functions, udfs.wasm, in the
		// function directory
		opts = append(opts, FunctionDir(filepath.Dir(wasmtest.Module(t))))
	}
	s := NewSession(opts...)
	job, err := s.Plan(d.Input)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	if job != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := job.Run(ctx); err != nil {
			return "run error: " + err.Error() + "\n"
		}
	}
	changelog := d.HasArg("changelog")
	emit := func(title string, lines []string) {
		if changelog {
			sort.Strings(lines)
			out.WriteString(title + " (changelog)\n")
			for _, l := range lines {
				out.WriteString(l + "\n")
			}
			return
		}
		res, err := materialize(lines)
		if err != nil {
			out.WriteString(title + ": " + err.Error() + "\n")
			return
		}
		out.WriteString(title + "\n")
		for _, l := range res {
			out.WriteString(l + "\n")
		}
	}
	values.mu.Lock()
	names := make([]string, 0, len(values.sinks))
	for n := range values.sinks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var lines []string
		for _, r := range values.sinks[n] {
			lines = append(lines, FormatRow(r, values.schemas[n]))
		}
		emit(n, lines)
	}
	values.mu.Unlock()
	text := printed.String()
	var rowLines []string
	for _, l := range strings.Split(text, "\n") {
		if len(l) > 2 && (l[0] == '+' || l[0] == '-') && l[2] == '[' {
			rowLines = append(rowLines, l)
		} else if l != "" {
			out.WriteString(l + "\n")
		}
	}
	if len(rowLines) > 0 {
		emit("select", rowLines)
	}
	return out.String()
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// storeRows keeps a "rows id=NAME" block's lines as the 'values' table
// data NAME (and FILE/NAME, for the file at path).
func storeRows(t *testing.T, path string, d *datadriven.TestData) {
	var id string
	d.ScanArgs(t, "id", &id)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	values.mu.Lock()
	values.data[filepath.Base(path)+"/"+id] = lines
	values.data[id] = lines
	values.mu.Unlock()
}
