package avro

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"sync"

	"github.com/hamba/avro/v2"

	"github.com/weirstream/weir/internal/datetime"
	"github.com/weirstream/weir/sql/types"
)

// decFn decodes one value of a writer's schema into v.
type decFn func(r *reader, v *types.Value) error

// skipFn skips one value of a writer's schema.
type skipFn func(r *reader) error

// recordDec decodes a writer's record into the values of a row type: the
// writer's fields in the writer's order, each into its column or skipped,
// the columns the writer lacks set to their defaults. This is Avro's
// schema resolution, compiled once per writer schema.
type recordDec struct {
	fields   []fieldDec
	defaults []fieldDefault
	n        int
}

type fieldDec struct {
	name string
	col  int // -1: skipped
	dec  decFn
	skip skipFn
}

type fieldDefault struct {
	col int
	v   types.Value
}

func (d *recordDec) decodeInto(r *reader, vals []types.Value) error {
	for _, f := range d.defaults {
		vals[f.col] = f.v
	}
	for i := range d.fields {
		f := &d.fields[i]
		var err error
		if f.col < 0 {
			err = f.skip(r)
		} else {
			err = f.dec(r, &vals[f.col])
		}
		if err != nil {
			return inField(f.name, err)
		}
	}
	return nil
}

// readerFields maps the reader schema's fields (when one is given) by name,
// for their defaults and aliases.
func readerFields(rs avro.Schema) []*avro.Field {
	rs = deref(rs)
	if u, ok := rs.(*avro.UnionSchema); ok {
		for _, t := range u.Types() {
			if t.Type() == avro.Record {
				rs = deref(t)
				break
			}
		}
	}
	if rec, ok := rs.(*avro.RecordSchema); ok {
		return rec.Fields()
	}
	return nil
}

func deref(s avro.Schema) avro.Schema {
	if ref, ok := s.(*avro.RefSchema); ok {
		return ref.Schema()
	}
	return s
}

// compileRecord compiles the decoding of writer record w into columns;
// rs is the reader's Avro schema for defaults and aliases (nil: the
// columns' derived schema, whose nullable columns default to null).
func compileRecord(w *avro.RecordSchema, rs avro.Schema, cols []types.Field) (*recordDec, error) {
	rfs := readerFields(rs)
	readerField := func(col string) *avro.Field {
		for _, f := range rfs {
			if f.Name() == col {
				return f
			}
		}
		return nil
	}
	d := &recordDec{n: len(cols)}
	seen := make([]bool, len(cols))
	for _, wf := range w.Fields() {
		col := columnOf(cols, wf.Name(), rfs)
		fd := fieldDec{name: wf.Name(), col: col}
		if col >= 0 && !seen[col] {
			seen[col] = true
			var rt avro.Schema
			if f := readerField(cols[col].Name); f != nil {
				rt = f.Type()
			}
			dec, err := compileDec(wf.Type(), rt, cols[col].Type)
			if err != nil {
				return nil, fmt.Errorf("field '%s': %w", wf.Name(), err)
			}
			fd.dec = dec
		} else {
			fd.col = -1
			skip, err := compileSkip(wf.Type())
			if err != nil {
				return nil, fmt.Errorf("field '%s': %w", wf.Name(), err)
			}
			fd.skip = skip
		}
		d.fields = append(d.fields, fd)
	}
	for i, c := range cols {
		if seen[i] {
			continue
		}
		if f := readerField(c.Name); f != nil && f.HasDefault() {
			v, err := defaultValue(f.Default(), c.Type)
			if err != nil {
				return nil, fmt.Errorf("column '%s': default: %w", c.Name, err)
			}
			d.defaults = append(d.defaults, fieldDefault{col: i, v: v})
			continue
		}
		if c.Type.NotNull {
			return nil, fmt.Errorf("column '%s' is NOT NULL, and the writer's schema has no field of that name (nor the reader's a default)", c.Name)
		}
		d.defaults = append(d.defaults, fieldDefault{col: i, v: types.NullValue})
	}
	return d, nil
}

// columnOf finds the column a writer's field is read into: by name, then
// by the reader schema's aliases, then ignoring case (SQL's identifiers).
func columnOf(cols []types.Field, name string, rfs []*avro.Field) int {
	for i, c := range cols {
		if c.Name == name {
			return i
		}
	}
	for _, f := range rfs {
		for _, a := range f.Aliases() {
			if a == name {
				for i, c := range cols {
					if c.Name == f.Name() {
						return i
					}
				}
			}
		}
	}
	return types.Schema(cols).Index(name)
}

var errNullNotNull = errors.New("null for a NOT NULL column")

// compileDec compiles reading a value of writer schema w into a value of
// logical type t (the reader's side): Avro's resolution rules (promotions
// int to long, float, double; long to float, double; float to double;
// string and bytes either way; unions branch by branch) and Flink's type
// mapping.
func compileDec(w, rs avro.Schema, t types.Type) (decFn, error) {
	w = deref(w)
	switch s := w.(type) {
	case *avro.UnionSchema:
		return compileUnionDec(s, rs, t)
	case *avro.NullSchema:
		if t.NotNull {
			return func(r *reader, v *types.Value) error { return &DecodeError{Offset: r.i, Err: errNullNotNull} }, nil
		}
		return func(r *reader, v *types.Value) error { *v = types.NullValue; return nil }, nil
	case *avro.RecordSchema:
		if t.Kind != types.Structured {
			return nil, mismatch(w, t)
		}
		rd, err := compileRecord(s, unwrapNullable(rs), t.Fields)
		if err != nil {
			return nil, err
		}
		n := len(t.Fields)
		return func(r *reader, v *types.Value) error {
			vals := newValues(n)
			if err := rd.decodeInto(r, vals); err != nil {
				return err
			}
			*v = types.Value{X: vals}
			return nil
		}, nil
	case *avro.ArraySchema:
		if t.Kind != types.Array && t.Kind != types.Multiset {
			return nil, mismatch(w, t)
		}
		var ers avro.Schema
		if a, ok := unwrapNullable(rs).(*avro.ArraySchema); ok {
			ers = a.Items()
		}
		item, err := compileDec(s.Items(), ers, *t.Elem)
		if err != nil {
			return nil, fmt.Errorf("array items: %w", err)
		}
		return func(r *reader, v *types.Value) error {
			var out []types.Value
			for {
				n, err := r.blockCount()
				if err != nil {
					return err
				}
				if n == 0 {
					break
				}
				if out == nil {
					// A corrupt count must not allocate much: most items
					// take a byte at least.
					out = make([]types.Value, 0, min(n, int64(len(r.b)-r.i)+1))
				}
				for ; n > 0; n-- {
					out = append(out, types.Value{})
					if err := item(r, &out[len(out)-1]); err != nil {
						return inField("["+strconv.Itoa(len(out)-1)+"]", err)
					}
				}
			}
			if out == nil {
				out = []types.Value{}
			}
			*v = types.Value{X: out}
			return nil
		}, nil
	case *avro.MapSchema:
		return compileMapDec(s, rs, t)
	case *avro.EnumSchema:
		if !t.IsString() {
			return nil, mismatch(w, t)
		}
		syms := s.Symbols()
		return func(r *reader, v *types.Value) error {
			i, err := r.int()
			if err != nil {
				return err
			}
			if i < 0 || int(i) >= len(syms) {
				return r.errorf("enum index %d out of range (%d symbols)", i, len(syms))
			}
			*v = types.Value{S: syms[i]}
			return nil
		}, nil
	case *avro.FixedSchema:
		size := s.Size()
		if dl, ok := s.Logical().(*avro.DecimalLogicalSchema); ok && t.Kind == types.Decimal {
			scale := dl.Scale()
			return func(r *reader, v *types.Value) error {
				b, err := r.fixed(size)
				if err != nil {
					return err
				}
				return decimalValue(r, b, scale, t, v)
			}, nil
		}
		if t.Kind != types.Binary && t.Kind != types.Varbinary {
			return nil, mismatch(w, t)
		}
		return func(r *reader, v *types.Value) error {
			b, err := r.fixed(size)
			if err != nil {
				return err
			}
			*v = types.Value{S: string(b)}
			return nil
		}, nil
	case *avro.PrimitiveSchema:
		return compilePrimitiveDec(s, t)
	}
	return nil, mismatch(w, t)
}

func unwrapNullable(s avro.Schema) avro.Schema {
	s = deref(s)
	if u, ok := s.(*avro.UnionSchema); ok && u.Nullable() && len(u.Types()) == 2 {
		_, i := u.Indices()
		return deref(u.Types()[i])
	}
	return s
}

func mismatch(w avro.Schema, t types.Type) error {
	return fmt.Errorf("the writer's Avro type %s does not read into %s", typeName(w), t)
}

func typeName(s avro.Schema) string {
	s = deref(s)
	if n, ok := s.(avro.NamedSchema); ok {
		return string(s.Type()) + " " + n.FullName()
	}
	if p, ok := s.(*avro.PrimitiveSchema); ok && p.Logical() != nil {
		return string(s.Type()) + " (" + string(p.Logical().Type()) + ")"
	}
	return string(s.Type())
}

func compileUnionDec(u *avro.UnionSchema, rs avro.Schema, t types.Type) (decFn, error) {
	branches := make([]decFn, len(u.Types()))
	var firstErr error
	ok := false
	for i, b := range u.Types() {
		d, err := compileDec(b, rs, t)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			bt := typeName(b)
			branch := i
			d = func(r *reader, v *types.Value) error {
				return r.errorf("union branch %d (%s) does not read into %s", branch, bt, t)
			}
		} else if b.Type() != avro.Null {
			ok = true
		}
		branches[i] = d
	}
	if !ok && firstErr != nil {
		return nil, firstErr
	}
	// The common ["null", T] union: no slice indexing on its hot path.
	if len(branches) == 2 && u.Types()[0].Type() == avro.Null {
		null, other := branches[0], branches[1]
		return func(r *reader, v *types.Value) error {
			if r.i < len(r.b) {
				switch r.b[r.i] {
				case 0:
					r.i++
					return null(r, v)
				case 2:
					r.i++
					return other(r, v)
				}
			}
			return unionIndexError(r, 2)
		}, nil
	}
	return func(r *reader, v *types.Value) error {
		start := r.i
		i, err := r.long()
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(branches)) {
			r.i = start
			return r.errorf("union index %d out of range (%d branches)", i, len(branches))
		}
		return branches[i](r, v)
	}, nil
}

func unionIndexError(r *reader, n int) error {
	start := r.i
	i, err := r.long()
	if err != nil {
		return err
	}
	r.i = start
	return r.errorf("union index %d out of range (%d branches)", i, n)
}

func compileMapDec(s *avro.MapSchema, rs avro.Schema, t types.Type) (decFn, error) {
	var vt types.Type
	multiset := false
	switch t.Kind {
	case types.Map:
		if !t.Key.IsString() {
			return nil, fmt.Errorf("an Avro map reads into a MAP with string keys, not %s", t)
		}
		vt = *t.Elem
	case types.Multiset:
		if !t.Elem.IsString() {
			return nil, fmt.Errorf("an Avro map reads into a MULTISET of strings, not %s", t)
		}
		multiset = true
		vt = types.BigIntType
	default:
		return nil, mismatch(s, t)
	}
	var vrs avro.Schema
	if m, ok := unwrapNullable(rs).(*avro.MapSchema); ok {
		vrs = m.Values()
	}
	val, err := compileDec(s.Values(), vrs, vt)
	if err != nil {
		return nil, fmt.Errorf("map values: %w", err)
	}
	return func(r *reader, v *types.Value) error {
		out := []types.Value{}
		for {
			n, err := r.blockCount()
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
			for ; n > 0; n-- {
				k, err := r.string()
				if err != nil {
					return err
				}
				var x types.Value
				if err := val(r, &x); err != nil {
					return inField("["+strconv.Quote(k)+"]", err)
				}
				if !multiset {
					out = append(out, types.Value{S: k}, x)
					continue
				}
				if x.Null || x.I < 0 || x.I > 1<<20 {
					return r.errorf("multiset count of %q is not a count", k)
				}
				for c := int64(0); c < x.I; c++ {
					out = append(out, types.Value{S: k})
				}
			}
		}
		*v = types.Value{X: out}
		return nil
	}, nil
}

func logicalOf(s *avro.PrimitiveSchema) avro.LogicalType {
	if l := s.Logical(); l != nil {
		return l.Type()
	}
	return ""
}

func intRange(t types.Type) (lo, hi int64) {
	switch t.Kind {
	case types.TinyInt:
		return math.MinInt8, math.MaxInt8
	case types.SmallInt:
		return math.MinInt16, math.MaxInt16
	case types.Int:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

func compilePrimitiveDec(s *avro.PrimitiveSchema, t types.Type) (decFn, error) {
	lt := logicalOf(s)
	switch s.Type() {
	case avro.Boolean:
		if t.Kind == types.Boolean {
			return func(r *reader, v *types.Value) error {
				b, err := r.bool()
				if b {
					*v = types.Value{I: 1}
				} else {
					*v = types.Value{}
				}
				return err
			}, nil
		}
	case avro.Int, avro.Long:
		if lt == "" {
			lt = connectTime(s)
		}
		return compileIntDec(s.Type(), lt, t)
	case avro.Float:
		if t.Kind == types.Float || t.Kind == types.Double {
			return func(r *reader, v *types.Value) error {
				f, err := r.float()
				*v = types.Value{I: int64(math.Float64bits(float64(f)))}
				return err
			}, nil
		}
	case avro.Double:
		if t.Kind == types.Double || t.Kind == types.Float {
			return func(r *reader, v *types.Value) error {
				f, err := r.double()
				*v = types.Value{I: int64(math.Float64bits(f))}
				return err
			}, nil
		}
	case avro.String:
		if name, _ := s.Prop("connect.name").(string); name == "io.debezium.time.ZonedTimestamp" &&
			(t.Kind == types.Timestamp || t.Kind == types.TimestampLTZ) {
			// Debezium's timestamp with time zone: an ISO-8601 text
			// ("2024-01-02T03:04:05.678Z"), read as the instant.
			return func(r *reader, v *types.Value) error {
				start := r.i
				b, err := r.bytes()
				if err != nil {
					return err
				}
				us, err := datetime.ParseTimestampTZ(b, datetime.RFC3339)
				if err != nil {
					r.i = start
					return r.errorf("%v", err)
				}
				*v = types.Value{I: us}
				return nil
			}, nil
		}
		if t.IsString() || t.Kind == types.Binary || t.Kind == types.Varbinary {
			return func(r *reader, v *types.Value) error {
				s, err := r.string()
				*v = types.Value{S: s}
				return err
			}, nil
		}
	case avro.Bytes:
		if dl, ok := s.Logical().(*avro.DecimalLogicalSchema); ok && t.Kind == types.Decimal {
			scale := dl.Scale()
			return func(r *reader, v *types.Value) error {
				b, err := r.bytes()
				if err != nil {
					return err
				}
				return decimalValue(r, b, scale, t, v)
			}, nil
		}
		if t.IsString() || t.Kind == types.Binary || t.Kind == types.Varbinary {
			return func(r *reader, v *types.Value) error {
				s, err := r.string()
				*v = types.Value{S: s}
				return err
			}, nil
		}
	}
	return nil, mismatch(s, t)
}

// Debezium's semantic types of times (Kafka Connect's "connect.name"),
// which its Avro converter writes as plain ints and longs in its default
// time.precision.mode: read as the logical types they stand for, so a
// PostgreSQL timestamp(6) is microseconds rather than Flink's reading of
// a plain long as milliseconds.
const (
	nanosTimestamp avro.LogicalType = "weir-nanos-timestamp"
	nanosTime      avro.LogicalType = "weir-nanos-time"
)

func connectTime(s *avro.PrimitiveSchema) avro.LogicalType {
	name, _ := s.Prop("connect.name").(string)
	switch name {
	case "io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp":
		return avro.TimestampMillis
	case "io.debezium.time.MicroTimestamp":
		return avro.TimestampMicros
	case "io.debezium.time.NanoTimestamp":
		return nanosTimestamp
	case "io.debezium.time.Date", "org.apache.kafka.connect.data.Date":
		return avro.Date
	case "io.debezium.time.Time", "org.apache.kafka.connect.data.Time":
		return avro.TimeMillis
	case "io.debezium.time.MicroTime":
		return avro.TimeMicros
	case "io.debezium.time.NanoTime":
		return nanosTime
	}
	return ""
}

func compileIntDec(at avro.Type, lt avro.LogicalType, t types.Type) (decFn, error) {
	read := (*reader).long
	if at == avro.Int {
		read = (*reader).int
	}
	scale := int64(0) // multiply by: 0 means as is
	switch t.Kind {
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt:
		if at == avro.Long && t.Kind != types.BigInt {
			break // Avro does not narrow long to int
		}
		lo, hi := intRange(t)
		if at == avro.Int && t.Kind >= types.Int {
			return func(r *reader, v *types.Value) error {
				i, err := read(r)
				*v = types.Value{I: i}
				return err
			}, nil
		}
		if t.Kind == types.BigInt {
			return func(r *reader, v *types.Value) error {
				i, err := read(r)
				*v = types.Value{I: i}
				return err
			}, nil
		}
		return func(r *reader, v *types.Value) error {
			start := r.i
			i, err := read(r)
			if err != nil {
				return err
			}
			if i < lo || i > hi {
				r.i = start
				return r.errorf("%d out of range of %s", i, t)
			}
			*v = types.Value{I: i}
			return nil
		}, nil
	case types.Float, types.Double:
		return func(r *reader, v *types.Value) error {
			i, err := read(r)
			f := float64(i)
			if t.Kind == types.Float {
				f = float64(float32(i))
			}
			*v = types.Value{I: int64(math.Float64bits(f))}
			return err
		}, nil
	case types.Date:
		if at == avro.Int && (lt == "" || lt == avro.Date) {
			scale = 1
		}
	case types.Time:
		switch {
		case at == avro.Int && (lt == "" || lt == avro.TimeMillis):
			scale = 1000
		case at == avro.Long && lt == avro.TimeMicros:
			scale = 1
		case at == avro.Long && lt == nanosTime:
			scale = -1000
		}
	case types.Timestamp, types.TimestampLTZ:
		if at == avro.Long {
			switch lt {
			case "", avro.TimestampMillis, avro.LocalTimestampMillis:
				scale = 1000
			case avro.TimestampMicros, avro.LocalTimestampMicros:
				scale = 1
			case nanosTimestamp:
				scale = -1000
			}
		}
	}
	if scale == 0 {
		name := string(at)
		if lt != "" {
			name += " (" + string(lt) + ")"
		}
		return nil, fmt.Errorf("the writer's Avro type %s does not read into %s", name, t)
	}
	if scale == 1 {
		return func(r *reader, v *types.Value) error {
			i, err := read(r)
			*v = types.Value{I: i}
			return err
		}, nil
	}
	if scale < 0 { // nanoseconds: divided down to microseconds
		div := -scale
		return func(r *reader, v *types.Value) error {
			i, err := read(r)
			*v = types.Value{I: floorDiv(i, div)}
			return err
		}, nil
	}
	return func(r *reader, v *types.Value) error {
		i, err := read(r)
		if i > math.MaxInt64/scale || i < math.MinInt64/scale {
			return r.errorf("time %d out of range", i)
		}
		*v = types.Value{I: i * scale}
		return err
	}, nil
}

var bigTen = big.NewInt(10)

// decimalValue reads an unscaled two's-complement big-endian integer of
// the writer's scale into a DECIMAL of t's precision and scale.
func decimalValue(r *reader, b []byte, scale int, t types.Type, v *types.Value) error {
	var u int64
	fits := len(b) <= 8
	if fits {
		for _, c := range b {
			u = u<<8 | int64(c)
		}
		if len(b) > 0 && len(b) < 8 && b[0]&0x80 != 0 {
			u -= 1 << (8 * len(b)) // sign-extend
		}
	}
	if fits && scale == t.Scale && t.Precision <= 18 {
		if !fitsDigits(u, t.Precision) {
			return r.errorf("decimal %s has more than %d digits", big.NewInt(u).String(), t.Precision)
		}
		*v = types.Value{I: u}
		return nil
	}
	// The general case: a big integer, rescaled.
	var x big.Int
	if fits {
		x.SetInt64(u)
	} else {
		x.SetBytes(b)
		if b[0]&0x80 != 0 {
			var m big.Int
			m.Lsh(big.NewInt(1), uint(8*len(b)))
			x.Sub(&x, &m)
		}
	}
	if scale != t.Scale {
		var p big.Int
		if t.Scale > scale {
			p.Exp(bigTen, big.NewInt(int64(t.Scale-scale)), nil)
			x.Mul(&x, &p)
		} else {
			// Round half up, away from zero, as Flink's BigDecimal does.
			p.Exp(bigTen, big.NewInt(int64(scale-t.Scale)), nil)
			var q, rem big.Int
			q.QuoRem(&x, &p, &rem)
			rem.Abs(&rem)
			rem.Mul(&rem, big.NewInt(2))
			if rem.Cmp(&p) >= 0 {
				if x.Sign() < 0 {
					q.Sub(&q, big.NewInt(1))
				} else {
					q.Add(&q, big.NewInt(1))
				}
			}
			x.Set(&q)
		}
	}
	var lim big.Int
	lim.Exp(bigTen, big.NewInt(int64(t.Precision)), nil)
	var ax big.Int
	if ax.Abs(&x).Cmp(&lim) >= 0 {
		return r.errorf("decimal %s does not fit %s", x.String(), t)
	}
	if x.IsInt64() {
		*v = types.Value{I: x.Int64()}
		return nil
	}
	*v = types.Value{X: new(big.Int).Set(&x)}
	return nil
}

var pow10 = func() [19]int64 {
	var p [19]int64
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

func fitsDigits(u int64, precision int) bool {
	if precision >= 19 {
		return true
	}
	lim := pow10[precision]
	return u < lim && u > -lim
}

// compileSkip compiles skipping a value of writer schema w (a field the
// reader does not have).
func compileSkip(w avro.Schema) (skipFn, error) {
	w = deref(w)
	switch s := w.(type) {
	case *avro.NullSchema:
		return func(*reader) error { return nil }, nil
	case *avro.PrimitiveSchema:
		switch s.Type() {
		case avro.Boolean:
			return func(r *reader) error { return r.skip(1) }, nil
		case avro.Int, avro.Long:
			return func(r *reader) error { _, err := r.long(); return err }, nil
		case avro.Float:
			return func(r *reader) error { return r.skip(4) }, nil
		case avro.Double:
			return func(r *reader) error { return r.skip(8) }, nil
		case avro.String, avro.Bytes:
			return func(r *reader) error { _, err := r.bytes(); return err }, nil
		}
	case *avro.EnumSchema:
		return func(r *reader) error { _, err := r.long(); return err }, nil
	case *avro.FixedSchema:
		n := int64(s.Size())
		return func(r *reader) error { return r.skip(n) }, nil
	case *avro.RecordSchema:
		skips := make([]skipFn, len(s.Fields()))
		for i, f := range s.Fields() {
			sk, err := compileSkipLazy(f.Type())
			if err != nil {
				return nil, err
			}
			skips[i] = sk
		}
		return func(r *reader) error {
			for _, sk := range skips {
				if err := sk(r); err != nil {
					return err
				}
			}
			return nil
		}, nil
	case *avro.UnionSchema:
		skips := make([]skipFn, len(s.Types()))
		for i, b := range s.Types() {
			sk, err := compileSkipLazy(b)
			if err != nil {
				return nil, err
			}
			skips[i] = sk
		}
		return func(r *reader) error {
			i, err := r.long()
			if err != nil {
				return err
			}
			if i < 0 || i >= int64(len(skips)) {
				return r.errorf("union index %d out of range (%d branches)", i, len(skips))
			}
			return skips[i](r)
		}, nil
	case *avro.ArraySchema, *avro.MapSchema:
		var item skipFn
		var err error
		isMap := false
		if a, ok := s.(*avro.ArraySchema); ok {
			item, err = compileSkipLazy(a.Items())
		} else {
			isMap = true
			item, err = compileSkipLazy(s.(*avro.MapSchema).Values())
		}
		if err != nil {
			return nil, err
		}
		return func(r *reader) error {
			for {
				n, err := r.long()
				if err != nil {
					return err
				}
				if n == 0 {
					return nil
				}
				if n < 0 {
					size, err := r.long()
					if err != nil {
						return err
					}
					if err := r.skip(size); err != nil {
						return err
					}
					continue
				}
				for ; n > 0; n-- {
					if isMap {
						if _, err := r.bytes(); err != nil {
							return err
						}
					}
					if err := item(r); err != nil {
						return err
					}
				}
			}
		}, nil
	}
	return nil, fmt.Errorf("cannot skip Avro type %s", typeName(w))
}

// compileSkipLazy compiles the skipping of a named type on first use, so
// that recursive records (a linked list) compile.
func compileSkipLazy(w avro.Schema) (skipFn, error) {
	if _, ok := w.(*avro.RefSchema); !ok {
		return compileSkip(w)
	}
	var once sync.Once
	var fn skipFn
	var ferr error
	return func(r *reader) error {
		once.Do(func() { fn, ferr = compileSkip(w) })
		if ferr != nil {
			return ferr
		}
		return fn(r)
	}, nil
}

// defaultValue converts a field's default, as hamba parsed it from the
// schema's JSON, into a value of t.
func defaultValue(def any, t types.Type) (types.Value, error) {
	if def == nil {
		if t.NotNull {
			return types.Value{}, errNullNotNull
		}
		return types.NullValue, nil
	}
	switch d := def.(type) {
	case bool:
		if t.Kind == types.Boolean {
			return types.BoolValue(d), nil
		}
	case string:
		if t.IsString() || t.Kind == types.Binary || t.Kind == types.Varbinary {
			return types.StringValue(d), nil
		}
	case int, int32, int64, float32, float64:
		var f float64
		var i int64
		switch n := d.(type) {
		case int:
			i, f = int64(n), float64(n)
		case int32:
			i, f = int64(n), float64(n)
		case int64:
			i, f = n, float64(n)
		case float32:
			i, f = int64(n), float64(n)
		case float64:
			i, f = int64(n), n
		}
		switch t.Kind {
		case types.TinyInt, types.SmallInt, types.Int, types.BigInt, types.Date:
			return types.IntValue(i), nil
		case types.Float, types.Double:
			return types.FloatValue(f), nil
		}
	}
	return types.Value{}, fmt.Errorf("default %v of type %T is not supported for %s", def, def, t)
}
