package nexmark

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/weirstream/weir"
)

// Updating queries (q4, q9, q17) produce a changelog, as their Flink SQL
// does: Insert and UpdateAfter rows add a row to the result, UpdateBefore
// and Delete rows take one back. Their Build sends ChangeRows to the
// Output; UpsertView applies them and keeps the final result.

// Keyed is a row with a unique key: at most one row of the result has it.
type Keyed interface {
	// AppendKey appends an encoding of the row's unique key (any bytes
	// that are equal for equal keys and differ otherwise).
	AppendKey(dst []byte) []byte
}

// ChangeRow is a row of an updating query's changelog.
type ChangeRow interface {
	Row
	Keyed
	// Kind says whether the row is added to the result (Insert,
	// UpdateAfter) or retracted from it (UpdateBefore, Delete).
	Kind() weir.ChangeKind
}

// EmitChanges sends the changelog s to out: each change reaches the
// RowWriter as a ChangeRow.
func EmitChanges[R any, PR interface {
	*R
	Row
	Keyed
}](s *weir.Stream[weir.Change[R]], out Output, opts ...weir.OperatorOption) {
	weir.To(s, changeSink[R, PR]{out}, opts...)
}

// changeRow is a change as a ChangeRow. It is one pointer, so putting it
// in an interface does not allocate.
type changeRow[R any, PR interface {
	*R
	Row
	Keyed
}] struct{ c *weir.Change[R] }

func (r changeRow[R, PR]) AppendJSON(dst []byte) []byte { return PR(&r.c.Value).AppendJSON(dst) }
func (r changeRow[R, PR]) Ready() int64                 { return PR(&r.c.Value).Ready() }
func (r changeRow[R, PR]) AppendKey(dst []byte) []byte  { return PR(&r.c.Value).AppendKey(dst) }
func (r changeRow[R, PR]) Kind() weir.ChangeKind        { return r.c.Kind }

type changeSink[R any, PR interface {
	*R
	Row
	Keyed
}] struct{ out Output }

func (s changeSink[R, PR]) OpenWriter(_ context.Context, subtask, _ int) (weir.SinkWriter[weir.Change[R]], error) {
	w, err := s.out(subtask)
	if err != nil {
		return nil, err
	}
	return newChangeWriter[R, PR](w), nil
}

type changeWriter[R any, PR interface {
	*R
	Row
	Keyed
}] struct {
	w  RowWriter
	bs BatchStarter // w, if it is one
}

func newChangeWriter[R any, PR interface {
	*R
	Row
	Keyed
}](w RowWriter) changeWriter[R, PR] {
	bs, _ := w.(BatchStarter)
	return changeWriter[R, PR]{w, bs}
}

func (w changeWriter[R, PR]) Write(_ context.Context, rows []weir.Change[R]) error {
	if w.bs != nil {
		w.bs.StartBatch()
	}
	for i := range rows {
		if err := w.w.Write(changeRow[R, PR]{&rows[i]}); err != nil {
			return err
		}
	}
	return nil
}

func (w changeWriter[R, PR]) Close(context.Context) error { return w.w.Close() }

// Adds reports whether r adds to the result: true for a row of an
// append-only query and for an Insert or UpdateAfter of a changelog.
func Adds(r Row) bool {
	if c, ok := r.(ChangeRow); ok {
		k := c.Kind()
		return k == weir.Insert || k == weir.UpdateAfter
	}
	return true
}

// UpsertView materializes the changelog of an updating query: its Output
// applies Insert and UpdateAfter rows as upserts by the row's unique key
// and UpdateBefore and Delete rows as retractions of an equal row, and
// WriteTo writes what is left, the final result (Flink's upsert sink;
// like its SinkUpsertMaterializer, a key keeps the rows added and not yet
// retracted, so an UpdateAfter that reaches the view before the
// UpdateBefore of the row it replaces is still applied right). The
// changes of one key must reach the view in the order they were emitted:
// true of weir's sinks, which are chained to the operator that keys the
// changelog. Rows that are not ChangeRows are inserts.
type UpsertView struct {
	mu struct {
		sync.Mutex
		rows      map[string][][]byte // key -> rows present, oldest first
		changes   int64
		unmatched int64 // retractions of a row that was not there
		example   []byte
	}
}

// NewUpsertView returns an empty view.
func NewUpsertView() *UpsertView {
	v := &UpsertView{}
	v.mu.rows = map[string][][]byte{}
	return v
}

// Output is the Output to give to the query.
func (v *UpsertView) Output() Output {
	return func(int) (RowWriter, error) { return &upsertWriter{v: v}, nil }
}

type upsertWriter struct {
	v        *UpsertView
	key, row []byte
}

func (w *upsertWriter) Write(r Row) error {
	kr, ok := r.(ChangeRow)
	w.row = r.AppendJSON(w.row[:0])
	if ok {
		w.key = kr.AppendKey(w.key[:0])
	} else {
		w.key = append(w.key[:0], w.row...)
	}
	w.v.apply(w.key, w.row, Adds(r))
	return nil
}

func (w *upsertWriter) Close() error { return nil }

func (v *UpsertView) apply(key, row []byte, add bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.mu.changes++
	rows := v.mu.rows[string(key)]
	if add {
		v.mu.rows[string(key)] = append(rows, bytes.Clone(row))
		return
	}
	// The most recent equal row: an UpdateBefore retracts the row its
	// key had before the UpdateAfter that follows it.
	for i := len(rows) - 1; i >= 0; i-- {
		if bytes.Equal(rows[i], row) {
			rows = slices.Delete(rows, i, i+1)
			if len(rows) == 0 {
				delete(v.mu.rows, string(key))
			} else {
				v.mu.rows[string(key)] = rows
			}
			return
		}
	}
	v.mu.unmatched++
	if v.mu.example == nil {
		v.mu.example = bytes.Clone(row)
	}
}

// Changes is the number of changelog rows applied so far.
func (v *UpsertView) Changes() int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.mu.changes
}

// Rows returns the rows of the view as JSON objects, ordered by key (not
// meaningful, but stable). It fails if a retraction found no equal row or
// if a key has more than one row: the changelog was not that of a view
// with that unique key.
func (v *UpsertView) Rows() ([][]byte, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.mu.unmatched > 0 {
		return nil, fmt.Errorf("nexmark: %d retractions of rows not in the view, e.g. %s", v.mu.unmatched, v.mu.example)
	}
	keys := make([]string, 0, len(v.mu.rows))
	for k, rows := range v.mu.rows {
		if len(rows) > 1 {
			return nil, fmt.Errorf("nexmark: %d rows with one key: %s and %s", len(rows), rows[0], rows[1])
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = v.mu.rows[k][0]
	}
	return out, nil
}

// WriteTo writes the rows of the view to w, one JSON object per line, and
// returns the number of rows (not bytes) written.
func (v *UpsertView) WriteTo(w io.Writer) (int64, error) {
	rows, err := v.Rows()
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	for _, r := range rows {
		bw.Write(r)
		bw.WriteByte('\n')
	}
	return int64(len(rows)), bw.Flush()
}

// insertOnly makes an aggregate of an append-only stream usable with
// weir.AggregateChanges, whose input is a changelog: Flink plans MAX, MIN
// and the like without retraction when their input is insert-only, as the
// join results and bids that the queries aggregate are. A retraction
// would be a bug in the query's plan: it panics.
type insertOnly[T, ACC, OUT any] struct {
	weir.AggregateFunction[T, ACC, OUT]
	query string
}

func (a insertOnly[T, ACC, OUT]) Retract(ACC, T) ACC {
	panic(a.query + ": retraction reached an aggregate of an insert-only input")
}

// keyWriter helpers: a key of int64s, fixed width.
func appendKeyInt(dst []byte, v int64) []byte {
	return append(dst, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}
