// Package print holds the SQL connectors 'print' and 'blackhole', as
// Flink's: sinks for trying queries out.
//
// 'print' writes every row, of any changelog, as a line in Flink's form:
// the row kind and the fields, "+I[1, foo]" (see format.Printer),
// prefixed with 'print-identifier' and, when the sink runs at a
// parallelism above 1, the subtask's number from 1 — "id:2> +I[1, foo]",
// "2> +I[1, foo]", "id> +I[1, foo]". Lines go to the job's Stdout setting
// (os.Stdout by default) or, with 'standard-error' = 'true', to os.Stderr;
// each batch is written at once, so lines of parallel subtasks never
// interleave. 'sink.parallelism' sets the sink's parallelism.
//
// 'blackhole' accepts any changelog and discards it.
package print

import (
	"context"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

func init() {
	connector.Register(Print{})
	connector.Register(Blackhole{})
}

// Print is the 'print' connector.
type Print struct{}

// Identifier implements connector.Factory.
func (Print) Identifier() string { return "print" }

// CreateSink implements connector.SinkFactory.
func (Print) CreateSink(t *connector.Table) (*connector.Sink, error) {
	o := connector.NewOptions(t)
	id := o.String("print-identifier", "")
	stderr := o.Bool("standard-error", false)
	par := o.Int("sink.parallelism", 0)
	if par < 0 {
		o.Invalid("sink.parallelism", "must be positive")
	}
	if err := o.Err(); err != nil {
		return nil, err
	}
	w := t.Settings.Stdout
	if w == nil {
		w = os.Stdout
	}
	if stderr {
		w = os.Stderr
	}
	s := &printSink{w: w, id: id, p: format.NewPrinter(t.Schema)}
	var opts []weir.OperatorOption
	if par > 0 {
		opts = append(opts, weir.Parallelism(int(par)))
	}
	// Write formats the rows before it returns: they may be lent, unless
	// the sink runs at a parallelism of its own (not chained)
	return &connector.Sink{Sink: s, Accepts: types.All, Options: opts, Lends: par == 0}, nil
}

type printSink struct {
	mu sync.Mutex // serializes the subtasks' writes
	w  io.Writer
	id string
	p  *format.Printer
}

func (s *printSink) OpenWriter(_ context.Context, subtask, parallelism int) (weir.SinkWriter[types.Row], error) {
	prefix := s.id
	if parallelism > 1 {
		if prefix != "" {
			prefix += ":"
		}
		prefix += strconv.Itoa(subtask + 1)
	}
	if prefix != "" {
		prefix += "> "
	}
	return &printWriter{s: s, prefix: prefix}, nil
}

type printWriter struct {
	s      *printSink
	prefix string
	buf    []byte
}

func (w *printWriter) Write(_ context.Context, rows []types.Row) error {
	w.buf = w.buf[:0]
	for i := range rows {
		w.buf = append(w.buf, w.prefix...)
		w.buf = w.s.p.Append(w.buf, &rows[i])
		w.buf = append(w.buf, '\n')
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	_, err := w.s.w.Write(w.buf)
	return err
}

func (w *printWriter) Close(context.Context) error { return nil }

// Blackhole is the 'blackhole' connector.
type Blackhole struct{}

// Identifier implements connector.Factory.
func (Blackhole) Identifier() string { return "blackhole" }

// CreateSink implements connector.SinkFactory.
func (Blackhole) CreateSink(t *connector.Table) (*connector.Sink, error) {
	o := connector.NewOptions(t)
	if err := o.Err(); err != nil {
		return nil, err
	}
	return &connector.Sink{Sink: weir.SinkFunc[types.Row](func(context.Context, []types.Row) error { return nil }), Accepts: types.All,
		Lends: true, DropsUpdateBefore: true}, nil
}
