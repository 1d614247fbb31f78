package avro

import (
	"errors"
	"fmt"
	"math"
	"math/big"

	"github.com/hamba/avro/v2"

	"github.com/weirstream/weir/sql/types"
)

// encFn appends the encoding of v.
type encFn func(b []byte, v *types.Value) ([]byte, error)

// recordEnc writes a row's values as an Avro record of a writer schema:
// the schema's fields in order, each from its column, or its default
// (null) when the table has no such column.
type recordEnc struct {
	fields []fieldEnc
}

type fieldEnc struct {
	name  string
	col   int    // -1: the fixed bytes of the default
	def   []byte // the encoding of the default (col -1)
	enc   encFn
	notNl bool
}

// ErrNull is the cause of an EncodeError for a NULL in a field the Avro
// schema does not let be null.
var ErrNull = errors.New("NULL for a non-nullable Avro field")

// EncodeError is a row that does not fit the Avro schema.
type EncodeError struct {
	Path string
	Err  error
}

func (e *EncodeError) Error() string {
	if e.Path == "" {
		return "avro: " + e.Err.Error()
	}
	return "avro: field '" + e.Path + "': " + e.Err.Error()
}

func (e *EncodeError) Unwrap() error { return e.Err }

func encField(name string, err error) error {
	var ee *EncodeError
	if errors.As(err, &ee) {
		if ee.Path == "" {
			ee.Path = name
		} else if ee.Path[0] == '[' {
			ee.Path = name + ee.Path
		} else {
			ee.Path = name + "." + ee.Path
		}
		return ee
	}
	return &EncodeError{Path: name, Err: err}
}

func (e *recordEnc) appendValues(b []byte, vals []types.Value) ([]byte, error) {
	var err error
	for i := range e.fields {
		f := &e.fields[i]
		if f.col < 0 {
			b = append(b, f.def...)
			continue
		}
		if b, err = f.enc(b, &vals[f.col]); err != nil {
			return b, encField(f.name, err)
		}
	}
	return b, nil
}

func compileRecordEnc(s *avro.RecordSchema, cols []types.Field) (*recordEnc, error) {
	e := &recordEnc{}
	used := make([]bool, len(cols))
	for _, f := range s.Fields() {
		col := columnOf(cols, f.Name(), nil)
		fe := fieldEnc{name: f.Name(), col: col}
		if col < 0 {
			def, err := encodeNullDefault(f)
			if err != nil {
				return nil, err
			}
			fe.def = def
		} else {
			used[col] = true
			enc, err := compileEnc(f.Type(), cols[col].Type)
			if err != nil {
				return nil, fmt.Errorf("field '%s': %w", f.Name(), err)
			}
			fe.enc = enc
		}
		e.fields = append(e.fields, fe)
	}
	for i, u := range used {
		if !u {
			return nil, fmt.Errorf("column '%s' has no field in the Avro schema", cols[i].Name)
		}
	}
	return e, nil
}

// encodeNullDefault encodes the default of a field the table has no column
// for: only a null default in a union is written (Avro's writers write
// every field; a reader resolves defaults, not a writer).
func encodeNullDefault(f *avro.Field) ([]byte, error) {
	if f.HasDefault() && f.Default() == nil {
		switch t := deref(f.Type()).(type) {
		case *avro.NullSchema:
			return nil, nil
		case *avro.UnionSchema:
			for i, b := range t.Types() {
				if b.Type() == avro.Null {
					return appendLong(nil, int64(i)), nil
				}
			}
		}
	}
	return nil, fmt.Errorf("field '%s' of the Avro schema has no column and no null default", f.Name())
}

// compileEnc compiles writing a value of logical type t as Avro schema s.
func compileEnc(s avro.Schema, t types.Type) (encFn, error) {
	s = deref(s)
	switch s := s.(type) {
	case *avro.UnionSchema:
		nullIdx, idx := -1, -1
		var branch encFn
		var firstErr error
		for i, b := range s.Types() {
			if b.Type() == avro.Null {
				if nullIdx < 0 {
					nullIdx = i
				}
				continue
			}
			if branch != nil {
				continue
			}
			enc, err := compileEnc(b, t)
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			branch, idx = enc, i
		}
		if branch == nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("no branch of %s for %s", s, t)
			}
			return nil, firstErr
		}
		nullTag := appendLong(nil, int64(nullIdx))
		tag := appendLong(nil, int64(idx))
		return func(b []byte, v *types.Value) ([]byte, error) {
			if v.Null {
				if nullIdx < 0 {
					return b, ErrNull
				}
				return append(b, nullTag...), nil
			}
			return branch(append(b, tag...), v)
		}, nil
	case *avro.NullSchema:
		return func(b []byte, v *types.Value) ([]byte, error) {
			if !v.Null {
				return b, errors.New("a value for an Avro null")
			}
			return b, nil
		}, nil
	case *avro.RecordSchema:
		if t.Kind != types.Structured {
			return nil, encMismatch(s, t)
		}
		re, err := compileRecordEnc(s, t.Fields)
		if err != nil {
			return nil, err
		}
		return nonNull(func(b []byte, v *types.Value) ([]byte, error) {
			vals := v.List()
			if len(vals) != len(t.Fields) {
				return b, fmt.Errorf("a ROW of %d values for %d fields", len(vals), len(t.Fields))
			}
			return re.appendValues(b, vals)
		}), nil
	case *avro.ArraySchema:
		if t.Kind != types.Array && t.Kind != types.Multiset {
			return nil, encMismatch(s, t)
		}
		item, err := compileEnc(s.Items(), *t.Elem)
		if err != nil {
			return nil, err
		}
		return nonNull(func(b []byte, v *types.Value) ([]byte, error) {
			vals := v.List()
			var err error
			if len(vals) > 0 {
				b = appendLong(b, int64(len(vals)))
				for i := range vals {
					if b, err = item(b, &vals[i]); err != nil {
						return b, encField(fmt.Sprintf("[%d]", i), err)
					}
				}
			}
			return append(b, 0), nil
		}), nil
	case *avro.MapSchema:
		return compileMapEnc(s, t)
	case *avro.EnumSchema:
		if !t.IsString() {
			return nil, encMismatch(s, t)
		}
		idx := map[string]int64{}
		for i, sym := range s.Symbols() {
			idx[sym] = int64(i)
		}
		return nonNull(func(b []byte, v *types.Value) ([]byte, error) {
			i, ok := idx[v.S]
			if !ok {
				return b, fmt.Errorf("%q is not a symbol of enum %s", v.S, s.FullName())
			}
			return appendLong(b, i), nil
		}), nil
	case *avro.FixedSchema:
		size := s.Size()
		if dl, ok := s.Logical().(*avro.DecimalLogicalSchema); ok && t.Kind == types.Decimal {
			scale := dl.Scale()
			return nonNull(func(b []byte, v *types.Value) ([]byte, error) {
				return appendDecimal(b, v, t, scale, size)
			}), nil
		}
		if t.Kind != types.Binary && t.Kind != types.Varbinary {
			return nil, encMismatch(s, t)
		}
		return nonNull(func(b []byte, v *types.Value) ([]byte, error) {
			if len(v.S) != size {
				return b, fmt.Errorf("%d bytes for fixed %s of %d", len(v.S), s.FullName(), size)
			}
			return append(b, v.S...), nil
		}), nil
	case *avro.PrimitiveSchema:
		enc, err := compilePrimitiveEnc(s, t)
		if err != nil {
			return nil, err
		}
		return nonNull(enc), nil
	}
	return nil, encMismatch(s, t)
}

func nonNull(enc encFn) encFn {
	return func(b []byte, v *types.Value) ([]byte, error) {
		if v.Null {
			return b, ErrNull
		}
		return enc(b, v)
	}
}

func encMismatch(s avro.Schema, t types.Type) error {
	return fmt.Errorf("%s does not write as Avro type %s", t, typeName(s))
}

func compileMapEnc(s *avro.MapSchema, t types.Type) (encFn, error) {
	switch t.Kind {
	case types.Map:
		if !t.Key.IsString() {
			return nil, fmt.Errorf("an Avro map has string keys: %s does not write as one", t)
		}
		val, err := compileEnc(s.Values(), *t.Elem)
		if err != nil {
			return nil, err
		}
		return nonNull(func(b []byte, v *types.Value) ([]byte, error) {
			kv := v.List()
			var err error
			if len(kv) > 0 {
				b = appendLong(b, int64(len(kv)/2))
				for i := 0; i+1 < len(kv); i += 2 {
					if kv[i].Null {
						return b, errors.New("a NULL map key (Avro's keys are strings)")
					}
					b = appendBytes(b, kv[i].S)
					if b, err = val(b, &kv[i+1]); err != nil {
						return b, encField("["+kv[i].S+"]", err)
					}
				}
			}
			return append(b, 0), nil
		}), nil
	case types.Multiset:
		if !t.Elem.IsString() {
			return nil, fmt.Errorf("an Avro map has string keys: %s does not write as one", t)
		}
		val, err := compileEnc(s.Values(), types.Type{Kind: types.Int, NotNull: true})
		if err != nil {
			return nil, err
		}
		return nonNull(func(b []byte, v *types.Value) ([]byte, error) {
			var keys []string
			counts := map[string]int64{}
			for _, e := range v.List() {
				if e.Null {
					return b, errors.New("a NULL multiset element (Avro's keys are strings)")
				}
				if counts[e.S] == 0 {
					keys = append(keys, e.S)
				}
				counts[e.S]++
			}
			var err error
			if len(keys) > 0 {
				b = appendLong(b, int64(len(keys)))
				for _, k := range keys {
					b = appendBytes(b, k)
					c := types.IntValue(counts[k])
					if b, err = val(b, &c); err != nil {
						return b, err
					}
				}
			}
			return append(b, 0), nil
		}), nil
	}
	return nil, encMismatch(s, t)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) {
		q--
	}
	return q
}

func compilePrimitiveEnc(s *avro.PrimitiveSchema, t types.Type) (encFn, error) {
	lt := logicalOf(s)
	switch s.Type() {
	case avro.Boolean:
		if t.Kind == types.Boolean {
			return func(b []byte, v *types.Value) ([]byte, error) {
				if v.I != 0 {
					return append(b, 1), nil
				}
				return append(b, 0), nil
			}, nil
		}
	case avro.Int:
		switch {
		case t.Kind == types.TinyInt || t.Kind == types.SmallInt || t.Kind == types.Int,
			t.Kind == types.Date && (lt == "" || lt == avro.Date):
			return func(b []byte, v *types.Value) ([]byte, error) { return appendLong(b, v.I), nil }, nil
		case t.Kind == types.BigInt:
			return func(b []byte, v *types.Value) ([]byte, error) {
				if v.I < math.MinInt32 || v.I > math.MaxInt32 {
					return b, fmt.Errorf("%d does not fit an Avro int", v.I)
				}
				return appendLong(b, v.I), nil
			}, nil
		case t.Kind == types.Time && (lt == "" || lt == avro.TimeMillis):
			return func(b []byte, v *types.Value) ([]byte, error) { return appendLong(b, floorDiv(v.I, 1000)), nil }, nil
		}
	case avro.Long:
		switch {
		case t.IsInteger():
			return func(b []byte, v *types.Value) ([]byte, error) { return appendLong(b, v.I), nil }, nil
		case t.Kind == types.Time && lt == avro.TimeMicros:
			return func(b []byte, v *types.Value) ([]byte, error) { return appendLong(b, v.I), nil }, nil
		case t.Kind == types.Timestamp || t.Kind == types.TimestampLTZ:
			switch lt {
			case "", avro.TimestampMillis, avro.LocalTimestampMillis:
				return func(b []byte, v *types.Value) ([]byte, error) { return appendLong(b, floorDiv(v.I, 1000)), nil }, nil
			case avro.TimestampMicros, avro.LocalTimestampMicros:
				return func(b []byte, v *types.Value) ([]byte, error) { return appendLong(b, v.I), nil }, nil
			}
		}
	case avro.Float:
		switch {
		case t.Kind == types.Float || t.Kind == types.Double:
			return func(b []byte, v *types.Value) ([]byte, error) { return appendFloat(b, float32(v.Float())), nil }, nil
		case t.IsInteger():
			return func(b []byte, v *types.Value) ([]byte, error) { return appendFloat(b, float32(v.I)), nil }, nil
		}
	case avro.Double:
		switch {
		case t.Kind == types.Float || t.Kind == types.Double:
			return func(b []byte, v *types.Value) ([]byte, error) { return appendDouble(b, v.Float()), nil }, nil
		case t.IsInteger():
			return func(b []byte, v *types.Value) ([]byte, error) { return appendDouble(b, float64(v.I)), nil }, nil
		}
	case avro.String:
		if t.IsString() || t.Kind == types.Binary || t.Kind == types.Varbinary {
			return func(b []byte, v *types.Value) ([]byte, error) { return appendBytes(b, v.S), nil }, nil
		}
	case avro.Bytes:
		if dl, ok := s.Logical().(*avro.DecimalLogicalSchema); ok && t.Kind == types.Decimal {
			scale := dl.Scale()
			return func(b []byte, v *types.Value) ([]byte, error) { return appendDecimal(b, v, t, scale, -1) }, nil
		}
		if t.IsString() || t.Kind == types.Binary || t.Kind == types.Varbinary {
			return func(b []byte, v *types.Value) ([]byte, error) { return appendBytes(b, v.S), nil }, nil
		}
	}
	return nil, encMismatch(s, t)
}

// appendDecimal writes a DECIMAL value's unscaled integer at the Avro
// schema's scale as big-endian two's complement: the fewest bytes for
// bytes (size -1), sign-extended to size for fixed.
func appendDecimal(b []byte, v *types.Value, t types.Type, scale, size int) ([]byte, error) {
	var tmp [9]byte
	var raw []byte
	if bi := v.BigInt(); bi == nil && scale == t.Scale {
		u := v.I
		// Minimal two's complement: drop leading bytes that only extend
		// the sign.
		n := 8
		for i := 0; i < 8; i++ {
			tmp[i] = byte(u >> (56 - 8*i))
		}
		start := 0
		for start < 7 {
			if (tmp[start] == 0 && tmp[start+1]&0x80 == 0) || (tmp[start] == 0xff && tmp[start+1]&0x80 != 0) {
				start++
				continue
			}
			break
		}
		raw = tmp[start:n]
	} else {
		var x big.Int
		if bi != nil {
			x.Set(bi)
		} else {
			x.SetInt64(v.I)
		}
		if scale != t.Scale {
			var p big.Int
			if scale > t.Scale {
				p.Exp(bigTen, big.NewInt(int64(scale-t.Scale)), nil)
				x.Mul(&x, &p)
			} else {
				return b, fmt.Errorf("decimal of scale %d does not write at the Avro schema's scale %d", t.Scale, scale)
			}
		}
		raw = twosComplement(&x)
	}
	if size < 0 {
		b = appendLong(b, int64(len(raw)))
		return append(b, raw...), nil
	}
	if len(raw) > size {
		return b, fmt.Errorf("decimal does not fit fixed of %d bytes", size)
	}
	pad := byte(0)
	if len(raw) > 0 && raw[0]&0x80 != 0 {
		pad = 0xff
	}
	for i := len(raw); i < size; i++ {
		b = append(b, pad)
	}
	return append(b, raw...), nil
}

func twosComplement(x *big.Int) []byte {
	switch x.Sign() {
	case 0:
		return []byte{0}
	case 1:
		b := x.Bytes()
		if b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// Negative: 2^(8n) + x for the smallest n that keeps the sign bit.
	n := (x.BitLen() + 8) / 8
	var m big.Int
	m.Lsh(big.NewInt(1), uint(8*n))
	m.Add(&m, x)
	b := m.Bytes()
	for len(b) < n {
		b = append([]byte{0xff}, b...)
	}
	if b[0]&0x80 == 0 {
		b = append([]byte{0xff}, b...)
	}
	return b
}
