package planner

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/types"
)

// Statement is a planned statement that runs in a job: an INSERT INTO or
// a SELECT whose rows print as a changelog.
type Statement struct {
	root *rel
	// sink builds the statement's sink on the job.
	sink func(b *builder, s *weir.Stream[types.Row]) error
	text string
	// query is set for a SELECT (its rows print, or go to Subscribe).
	query bool
	// feed, when set, is the rel whose stream the sink (or the INSERT's
	// cast ahead of it) reads and is done with when its call returns, so
	// that feed's operator may lend it rows (lend.go).
	feed *rel
	// noUB, when set, is the rel whose stream goes to a sink that drops
	// -U rows (connector.Sink.DropsUpdateBefore): the updating operator
	// that makes it need not make them (ub.go).
	noUB *rel
}

// IsQuery reports whether the statement is a SELECT, whose rows print as
// a changelog unless Subscribe takes them.
func (st *Statement) IsQuery() bool { return st.query }

// Explain prints the statement's plan: one operator per line, inputs
// indented below, each with its changelog mode.
func (st *Statement) Explain() string {
	var b strings.Builder
	explain(&b, st.root, "", reuseIDs(st.root))
	return b.String()
}

func explain(b *strings.Builder, r *rel, indent string, reuse *explainReuse) {
	if id, ok := reuse.ids[r.canonical()]; ok {
		// a reused sub-plan is printed once, as Flink prints it
		if reuse.printed[id] {
			fmt.Fprintf(b, "%sReused(reference_id=[%d])\n", indent, id)
			return
		}
		reuse.printed[id] = true
		fmt.Fprintf(b, "%s%s(reuse_id=[%d]), changelogMode=[%s]\n", indent, r.op, id, modeKinds(r.mode))
	} else {
		fmt.Fprintf(b, "%s%s, changelogMode=[%s]\n", indent, r.op, modeKinds(r.mode))
	}
	next := "   " + strings.ReplaceAll(indent, "+- ", "   ")
	if indent == "" {
		next = "+- "
	} else {
		next = strings.Repeat(" ", len(indent)) + "+- "
	}
	for _, in := range r.inputs {
		explain(b, in, next, reuse)
	}
}

func modeKinds(m types.ChangelogMode) string {
	switch m {
	case types.InsertOnly:
		return "I"
	case types.Upsert:
		return "I,UA,D"
	}
	return "I,UB,UA,D"
}

// Subscribe sets fn as the statement's sink: it gets the result's rows
// (changelog kinds included), from several goroutines at parallelism > 1.
func (st *Statement) Subscribe(fn func(rows []types.Row) error) {
	st.feed, st.noUB = nil, nil
	st.sink = func(b *builder, s *weir.Stream[types.Row]) error {
		weir.To(s, weir.SinkFunc[types.Row](func(_ context.Context, rows []types.Row) error { return fn(rows) }), b.uid("collect"))
		return nil
	}
}

// SubscribeLent is Subscribe for a function that is done with the rows
// when it returns, as a weir.SinkWriter's Write: the rows, and their
// Values, are only valid during the call (the plan may reuse their memory
// for the next rows), so fn copies what it keeps. It spares the plan an
// allocation per result row.
func (st *Statement) SubscribeLent(fn func(rows []types.Row) error) {
	st.Subscribe(fn)
	st.feed = st.root
}

// DropUpdateBefore says that the subscriber (Subscribe, SubscribeLent)
// does nothing with -U rows, as Flink's blackhole sink and upsert sinks:
// the plan then need not make them (Flink's changelog mode inference),
// and an update may reach fn as its +U alone. Call it after Subscribe.
func (st *Statement) DropUpdateBefore() { st.noUB = st.root }

// Schema is the statement's result columns.
func (st *Statement) Schema() types.Schema { return st.root.sc.Schema() }

// Updating reports whether the statement's result updates (is not
// insert-only).
func (st *Statement) Updating() bool { return st.root.mode != types.InsertOnly }

// printStatement prints a SELECT's rows as a changelog, Flink's print
// format: "+I[1, a]".
func (s *Session) printStatement(r *rel, text string) *Statement {
	w := s.cfg.stdout
	var mu sync.Mutex
	sc := r.sc
	st := &Statement{root: r, text: text, query: true}
	st.sink = func(b *builder, in *weir.Stream[types.Row]) error {
		weir.To(in, weir.SinkFunc[types.Row](func(_ context.Context, rows []types.Row) error {
			var sb strings.Builder
			for _, row := range rows {
				sb.WriteString(FormatRow(row, sc.Schema()))
				sb.WriteByte('\n')
			}
			mu.Lock()
			defer mu.Unlock()
			_, err := io.WriteString(w, sb.String())
			return err
		}), b.uid("print"))
		return nil
	}
	return st
}

// FormatRow prints a row as Flink's print connector does: "+I[1, a]".
func FormatRow(row types.Row, sc types.Schema) string {
	var b strings.Builder
	b.WriteString(row.Kind.String())
	b.WriteByte('[')
	for i, v := range row.Values {
		if i > 0 {
			b.WriteString(", ")
		}
		if i < len(sc) {
			b.WriteString(expr.FormatValue(v, sc[i].Type))
		}
	}
	b.WriteByte(']')
	return b.String()
}
