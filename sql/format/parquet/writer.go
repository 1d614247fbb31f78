package parquet

import (
	"errors"
	"fmt"
	"io"
	"math/big"
	"time"
	"unsafe"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"

	"github.com/weirstream/weir/sql/types"
)

// leafWriter turns a non-null value of a column's type into a Parquet
// value (levels are set by the caller).
type leafWriter func(v types.Value) (pq.Value, error)

func (b *schemaBuilder) leaf(t types.Type) (pq.Node, leafWriter, error) {
	switch t.Kind {
	case types.Boolean:
		return pq.Leaf(pq.BooleanType), func(v types.Value) (pq.Value, error) { return pq.BooleanValue(v.I != 0), nil }, nil
	case types.TinyInt, types.SmallInt:
		bits := 8
		if t.Kind == types.SmallInt {
			bits = 16
		}
		return pq.Int(bits), int32Leaf, nil
	case types.Int:
		return pq.Leaf(pq.Int32Type), int32Leaf, nil
	case types.BigInt:
		return pq.Leaf(pq.Int64Type), int64Leaf, nil
	case types.Float:
		return pq.Leaf(pq.FloatType), func(v types.Value) (pq.Value, error) { return pq.FloatValue(float32(v.Float())), nil }, nil
	case types.Double:
		return pq.Leaf(pq.DoubleType), func(v types.Value) (pq.Value, error) { return pq.DoubleValue(v.Float()), nil }, nil
	case types.Decimal:
		switch {
		case t.Precision <= 9:
			return pq.Decimal(t.Scale, t.Precision, pq.Int32Type), int32Leaf, nil
		case t.Precision <= 18:
			return pq.Decimal(t.Scale, t.Precision, pq.Int64Type), int64Leaf, nil
		}
		n := decimalBytes(t.Precision)
		return pq.Decimal(t.Scale, t.Precision, pq.FixedLenByteArrayType(n)), func(v types.Value) (pq.Value, error) {
			return pq.FixedLenByteArrayValue(decimalToBytes(v, n)), nil
		}, nil
	case types.Char, types.Varchar:
		return b.dictionary(pq.String()), bytesLeaf, nil
	case types.Binary, types.Varbinary:
		return b.dictionary(pq.Leaf(pq.ByteArrayType)), bytesLeaf, nil
	case types.Date:
		return pq.Date(), int32Leaf, nil
	case types.Time:
		// Flink's TIME_MILLIS; not adjusted to UTC, so that readers see a
		// TIME, not a TIME WITH TIME ZONE
		return pq.TimeAdjusted(pq.Millisecond, false), func(v types.Value) (pq.Value, error) {
			return pq.Int32Value(int32(v.I / 1000)), nil
		}, nil
	case types.Timestamp, types.TimestampLTZ:
		utc := t.Kind == types.TimestampLTZ
		if !b.opts.Int64Timestamp {
			loc := time.Local
			if b.opts.UTC || utc {
				loc = time.UTC
			}
			return pq.Leaf(pq.Int96Type), func(v types.Value) (pq.Value, error) { return pq.Int96Value(toInt96(v.I, loc)), nil }, nil
		}
		switch b.opts.TimeUnit {
		case "millis":
			return pq.TimestampAdjusted(pq.Millisecond, utc), func(v types.Value) (pq.Value, error) {
				return pq.Int64Value(floorDiv(v.I, 1000)), nil
			}, nil
		case "nanos":
			return pq.TimestampAdjusted(pq.Nanosecond, utc), func(v types.Value) (pq.Value, error) {
				return pq.Int64Value(v.I * 1000), nil
			}, nil
		}
		return pq.TimestampAdjusted(pq.Microsecond, utc), int64Leaf, nil
	}
	return nil, nil, fmt.Errorf("type %s has no Parquet mapping in weir", t)
}

// dictionary encodes a string or bytes column with a dictionary
// ('parquet.enable.dictionary').
func (b *schemaBuilder) dictionary(n pq.Node) pq.Node {
	if !b.opts.Dictionary {
		return n
	}
	return pq.Encoded(n, &pq.RLEDictionary)
}

func int32Leaf(v types.Value) (pq.Value, error) { return pq.Int32Value(int32(v.I)), nil }
func int64Leaf(v types.Value) (pq.Value, error) { return pq.Int64Value(v.I), nil }

// bytesLeaf passes the string's bytes without a copy: the writer copies
// them into its column buffer, and strings are immutable.
func bytesLeaf(v types.Value) (pq.Value, error) {
	return pq.ByteArrayValue(unsafe.Slice(unsafe.StringData(v.S), len(v.S))), nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// decimalToBytes is the n-byte big-endian two's complement of the unscaled
// value of a DECIMAL.
func decimalToBytes(v types.Value, n int) []byte {
	out := make([]byte, n)
	if b := v.BigInt(); b != nil {
		if b.Sign() >= 0 {
			b.FillBytes(out)
			return out
		}
		// two's complement: 2^(8n) + b
		m := new(big.Int).Lsh(big.NewInt(1), uint(8*n))
		m.Add(m, b)
		m.FillBytes(out)
		return out
	}
	x := v.I
	for i := n - 1; i >= 0; i-- {
		out[i] = byte(x)
		x >>= 8
	}
	return out
}

const julianEpoch = 2440588 // the Julian day of 1970-01-01

// toInt96 is the INT96 timestamp (nanoseconds of the day, Julian day) of
// micros since the epoch, read as a wall clock of loc.
func toInt96(micros int64, loc *time.Location) deprecated.Int96 {
	if loc != time.UTC {
		wall := time.UnixMicro(micros).UTC()
		t := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), wall.Nanosecond(), loc)
		micros = t.UnixMicro()
	}
	day := floorDiv(micros, 86_400_000_000)
	nanos := (micros - day*86_400_000_000) * 1000
	return deprecated.Int96{uint32(nanos), uint32(nanos >> 32), uint32(day + julianEpoch)}
}

// Writer writes rows of a table as one Parquet file. It implements
// connector/file's BulkWriter[types.Row].
type Writer struct {
	w      *pq.Writer
	cols   []*wnode
	names  []string
	leaves [][]pq.Value // per leaf column, the values of the current row
	rows   []pq.Row     // buffered rows
	buf    []pq.Value   // backing of rows
	flat   bool
	index  []int // the row value of each column
	block  int64 // bytes buffered in the current row group (an estimate)
	limit  int64
	err    error
}

// batch is the number of rows buffered before they go to parquet-go's
// writer in one call.
const batch = 256

// NewWriter returns a writer of the columns cols of a table's rows
// (indexes into the row; the other values, partition columns, are not
// written) to w.
func NewWriter(w io.Writer, schema types.Schema, cols []int, opts *Options) (*Writer, error) {
	if opts == nil {
		opts = DefaultOptions()
	}
	sub := make(types.Schema, len(cols))
	for i, c := range cols {
		sub[i] = schema[c]
	}
	s, ws, err := buildSchema("weir", sub, opts)
	if err != nil {
		return nil, err
	}
	cfg, err := pq.NewWriterConfig(s, pq.Compression(opts.codec), pq.PageBufferSize(int(opts.PageSize)),
		pq.CreatedBy("weir", "", ""), pq.MaxRowsPerRowGroup(1<<62))
	if err != nil {
		return nil, err
	}
	pw := &Writer{w: pq.NewWriter(w, cfg), cols: ws, limit: opts.BlockSize, flat: true}
	for i, c := range cols {
		pw.names = append(pw.names, schema[c].Name)
		if ws[i].kind != leafNode {
			pw.flat = false
		}
	}
	n := 0
	if len(ws) > 0 {
		n = ws[len(ws)-1].hi
	}
	pw.leaves = make([][]pq.Value, n)
	pw.index = cols
	return pw, nil
}

var errNotNull = errors.New("NULL in a NOT NULL column")

// Write implements file.BulkWriter.
func (w *Writer) Write(r types.Row) error {
	if w.err != nil {
		return w.err
	}
	start := len(w.buf)
	if w.flat {
		for i, c := range w.cols {
			v := r.Values[w.index[i]]
			if v.Null {
				if !c.optional {
					return fmt.Errorf("column '%s': %w", c.name, errNotNull)
				}
				w.buf = append(w.buf, pq.Value{}.Level(0, 0, i))
				continue
			}
			pv, err := c.leaf(v)
			if err != nil {
				return fmt.Errorf("column '%s': %w", c.name, err)
			}
			d := 0
			if c.optional {
				d = 1
			}
			w.block += int64(8 + len(v.S))
			w.buf = append(w.buf, pv.Level(0, d, i))
		}
	} else {
		for i := range w.leaves {
			w.leaves[i] = w.leaves[i][:0]
		}
		for i, c := range w.cols {
			if err := w.emit(c, r.Values[w.index[i]], 0, 0); err != nil {
				return fmt.Errorf("column '%s': %w", c.name, err)
			}
		}
		for _, l := range w.leaves {
			w.buf = append(w.buf, l...)
		}
	}
	w.rows = append(w.rows, w.buf[start:len(w.buf):len(w.buf)])
	if len(w.rows) >= batch {
		return w.flush()
	}
	return nil
}

// emit appends the values of v, a value of n, to the leaf columns below n:
// r is the repetition level of the first one, d the definition level of
// n's parent.
func (w *Writer) emit(n *wnode, v types.Value, r, d int) error {
	if v.Null {
		if !n.optional {
			return errNotNull
		}
		w.nulls(n, r, d)
		return nil
	}
	if n.optional {
		d++
	}
	switch n.kind {
	case leafNode:
		pv, err := n.leaf(v)
		if err != nil {
			return err
		}
		w.block += int64(8 + len(v.S))
		w.leaves[n.lo] = append(w.leaves[n.lo], pv.Level(r, d, n.lo))
	case rowNode:
		fs := v.List()
		if len(fs) != len(n.fields) {
			return fmt.Errorf("a ROW of %d fields, not %d", len(fs), len(n.fields))
		}
		for i, f := range n.fields {
			if err := w.emit(f, fs[i], r, d); err != nil {
				return fmt.Errorf("field '%s': %w", f.name, err)
			}
		}
	case listNode, mapNode:
		es := v.List()
		if len(es) == 0 {
			w.nulls(n, r, d)
			return nil
		}
		step := 1
		if n.kind == mapNode {
			step = 2
		}
		for i := 0; i+step <= len(es); i += step {
			rr := r
			if i > 0 {
				rr = n.rep
			}
			if n.kind == mapNode {
				if err := w.emit(n.key, es[i], rr, d+1); err != nil {
					return fmt.Errorf("map key: %w", err)
				}
				if err := w.emit(n.elem, es[i+1], rr, d+1); err != nil {
					return fmt.Errorf("map value: %w", err)
				}
			} else if err := w.emit(n.elem, es[i], rr, d+1); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
	}
	return nil
}

// nulls appends a null (or an empty list) at levels r, d to every leaf
// column below n.
func (w *Writer) nulls(n *wnode, r, d int) {
	for c := n.lo; c < n.hi; c++ {
		w.leaves[c] = append(w.leaves[c], pq.Value{}.Level(r, d, c))
	}
}

func (w *Writer) flush() error {
	if len(w.rows) > 0 {
		if _, err := w.w.WriteRows(w.rows); err != nil {
			w.err = err
			return err
		}
		clear(w.buf) // drop the references to the rows' strings
		w.rows, w.buf = w.rows[:0], w.buf[:0]
	}
	if w.block >= w.limit {
		w.block = 0
		if err := w.w.Flush(); err != nil {
			w.err = err
			return err
		}
	}
	return nil
}

// Finish implements file.BulkWriter: it writes the buffered rows and the
// footer.
func (w *Writer) Finish() error {
	if err := w.flush(); err != nil {
		return err
	}
	if err := w.w.Close(); err != nil {
		w.err = err
		return err
	}
	w.err = errors.New("parquet: write after Finish")
	return nil
}
