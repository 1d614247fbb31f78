package nexmark

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/weirstream/weir"
)

// Row is a result row of a query.
type Row interface {
	// AppendJSON appends the row as a JSON object whose keys are the Flink
	// query's output columns in lower case, times in epoch ms.
	AppendJSON(dst []byte) []byte
	// Ready is the event time (epoch ms) from which the row could be
	// emitted: the date_time of the event it derives from, or, for a
	// window's result, the window's end plus WatermarkDelay — the event
	// time whose arrival moves the watermark past the window. The bench
	// measures latency from there.
	Ready() int64
}

// RowWriter receives the rows of one sink subtask.
type RowWriter interface {
	// Write is called once per row; the row is valid only during the call.
	Write(r Row) error
	Close() error
}

// BatchStarter is a RowWriter told when the rows of one batch begin: they
// reached the sink together, in one call of its writer (the bench's
// latency writer reads the clock once a batch, not once a row: a clock
// reading per row would be a noticeable share of a firing's cost).
type BatchStarter interface {
	StartBatch()
}

// Output opens the RowWriter of each sink subtask (it may be called from
// several goroutines).
type Output func(subtask int) (RowWriter, error)

// Emit sends s's rows to out: a weir sink of rows, without boxing them.
func Emit[R any, PR interface {
	*R
	Row
}](s *weir.Stream[R], out Output, opts ...weir.OperatorOption) {
	weir.To(s, rowSink[R, PR]{out}, opts...)
}

type rowSink[R any, PR interface {
	*R
	Row
}] struct{ out Output }

func (s rowSink[R, PR]) OpenWriter(_ context.Context, subtask, _ int) (weir.SinkWriter[R], error) {
	w, err := s.out(subtask)
	if err != nil {
		return nil, err
	}
	return newRowWriter[R, PR](w), nil
}

type rowWriter[R any, PR interface {
	*R
	Row
}] struct {
	w  RowWriter
	bs BatchStarter // w, if it is one
}

func newRowWriter[R any, PR interface {
	*R
	Row
}](w RowWriter) rowWriter[R, PR] {
	bs, _ := w.(BatchStarter)
	return rowWriter[R, PR]{w, bs}
}

func (w rowWriter[R, PR]) Write(_ context.Context, rows []R) error {
	if w.bs != nil {
		w.bs.StartBatch()
	}
	for i := range rows {
		if err := w.w.Write(PR(&rows[i])); err != nil {
			return err
		}
	}
	return nil
}

func (w rowWriter[R, PR]) Close(context.Context) error { return w.w.Close() }

// Query is one Nexmark query as a weir job fragment.
type Query struct {
	// Name is q0, q1, ...
	Name string
	// Columns are the output columns, as in the JSON rows.
	Columns []string
	// Windowed queries emit results when the watermark passes a window's
	// end (their rows' Ready includes WatermarkDelay).
	Windowed bool
	// Extent, for a windowed query, is its windows' size (or session
	// gap): with WatermarkDelay, the event time a window opened at a
	// run's start needs before the watermark can pass it. The bench's
	// latency run lasts that much longer, so that windows close by the
	// watermark during the run and not only at its end.
	Extent time.Duration
	// Key, for an updating query (q4, q9, q17), are the columns of its
	// result's unique key: Build sends a changelog of ChangeRows to the
	// Output, and the result is its upsert view (UpsertView). Empty for an
	// append-only query.
	Key []string
	// Build adds the query to the job of events and sends its rows to out.
	Build func(events *weir.Stream[Event], out Output)
}

// Updating reports whether the query's output is a changelog.
func (q *Query) Updating() bool { return len(q.Key) > 0 }

var queries = map[string]*Query{}

func register(q *Query) { queries[q.Name] = q }

// Lookup returns the query of that name (q0, q1, ...).
func Lookup(name string) (*Query, error) {
	if q, ok := queries[name]; ok {
		return q, nil
	}
	return nil, fmt.Errorf("nexmark: no query %q (have %v)", name, QueryNames())
}

// QueryNames lists the queries implemented, in numeric order.
func QueryNames() []string {
	names := make([]string, 0, len(queries))
	for n := range queries {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		a, _ := strconv.Atoi(names[i][1:])
		b, _ := strconv.Atoi(names[j][1:])
		return a < b
	})
	return names
}

// JSON helpers of the rows.

func appendDecimal3(dst []byte, key string, milli int64) []byte {
	dst = append(dst, key...)
	if milli < 0 {
		dst = append(dst, '-')
		milli = -milli
	}
	dst = strconv.AppendInt(dst, milli/1000, 10)
	f := milli % 1000
	return append(dst, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

// floorDiv and floorMod divide rounding down, for epoch times before 1970.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

func ms(d interface{ Milliseconds() int64 }) int64 { return d.Milliseconds() }
