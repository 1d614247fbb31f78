package protobuf

import (
	"fmt"
	"math"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/weirstream/weir/sql/types"
)

// Encoder encodes rows as protobuf messages. It is safe for concurrent
// use.
type Encoder struct {
	msg *msgEnc
}

// NewEncoder compiles an encoder of rows of schema into messages md: each
// column writes the field of its name.
func NewEncoder(schema types.Schema, md protoreflect.MessageDescriptor, opt Options) (*Encoder, error) {
	c := &encCompiler{opt: opt}
	m, err := c.message(md, schema)
	if err != nil {
		return nil, err
	}
	return &Encoder{msg: m}, nil
}

// Encode implements format.Encoder.
func (e *Encoder) Encode(dst []byte, row *types.Row) ([]byte, bool, error) {
	if len(row.Values) != e.msg.ncols {
		return dst, false, fmt.Errorf("protobuf: a row of %d values for %d columns", len(row.Values), e.msg.ncols)
	}
	out, err := e.msg.encode(dst, row.Values)
	if err != nil {
		return dst, false, fmt.Errorf("protobuf: message %s: %w", e.msg.name, err)
	}
	return out, false, nil
}

// valueEnc appends field's tag and value v (not NULL) to dst.
type valueEnc func(dst []byte, v types.Value) ([]byte, error)

type fieldEnc struct {
	col  int
	name protoreflect.Name
	enc  valueEnc
	// later are the columns of the same oneof after this one: a value in
	// one of them wins, as Flink's writer sets the fields in column order.
	later []int
}

type msgEnc struct {
	name   protoreflect.FullName
	ncols  int
	fields []fieldEnc // in field number order, as protobuf writers write
}

type encCompiler struct {
	opt Options
}

func (c *encCompiler) message(md protoreflect.MessageDescriptor, cols []types.Field) (*msgEnc, error) {
	m := &msgEnc{name: md.FullName(), ncols: len(cols)}
	nums := make([]protowire.Number, len(cols))
	oneofs := map[protoreflect.FullName][]int{}
	for i, col := range cols {
		f, err := field(md, col)
		if err != nil {
			return nil, err
		}
		if err := checkField(f, col.Type); err != nil {
			return nil, fmt.Errorf("column '%s' %w", col.Name, err)
		}
		var enc valueEnc
		switch {
		case f.IsMap():
			enc, err = c.mapField(f, col.Type)
		case f.IsList():
			enc, err = c.list(f, *col.Type.Elem)
		default:
			// A field without presence (proto3's implicit ones) is not
			// written when it holds its default, as protobuf writers do.
			enc, err = c.scalar(f, col.Type, !f.HasPresence())
			if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
				oneofs[o.FullName()] = append(oneofs[o.FullName()], i)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("column '%s': %w", col.Name, err)
		}
		nums[i] = f.Number()
		m.fields = append(m.fields, fieldEnc{col: i, name: f.Name(), enc: enc})
	}
	for _, cs := range oneofs {
		for k, ci := range cs {
			m.fields[ci].later = cs[k+1:]
		}
	}
	sort.SliceStable(m.fields, func(i, j int) bool { return nums[m.fields[i].col] < nums[m.fields[j].col] })
	return m, nil
}

func (m *msgEnc) encode(dst []byte, vals []types.Value) ([]byte, error) {
	var err error
fields:
	for i := range m.fields {
		f := &m.fields[i]
		v := vals[f.col]
		if v.Null {
			continue // protobuf has no NULL: the field is left out
		}
		for _, c := range f.later {
			if !vals[c].Null {
				continue fields
			}
		}
		if dst, err = f.enc(dst, v); err != nil {
			return dst, fmt.Errorf("column '%s': %w", f.name, err)
		}
	}
	return dst, nil
}

// appendDelimited appends tag, then body's length and body as body
// appends it: the length is reserved as one byte and the body moved when
// it needs more.
func appendDelimited(dst []byte, num protowire.Number, body func([]byte) ([]byte, error)) ([]byte, error) {
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	at := len(dst)
	dst = append(dst, 0)
	dst, err := body(dst)
	if err != nil {
		return dst, err
	}
	n := len(dst) - at - 1
	if n < 0x80 {
		dst[at] = byte(n)
		return dst, nil
	}
	sz := protowire.SizeVarint(uint64(n))
	for range sz - 1 {
		dst = append(dst, 0)
	}
	copy(dst[at+sz:], dst[at+1:at+1+n])
	protowire.AppendVarint(dst[:at], uint64(n))
	return dst, nil
}

// scalar compiles the encoder of a singular field (or a map's key or
// value) from a column of type t; skipZero leaves out a default value.
func (c *encCompiler) scalar(f protoreflect.FieldDescriptor, t types.Type, skipZero bool) (valueEnc, error) {
	num := f.Number()
	switch f.Kind() {
	case protoreflect.MessageKind:
		if t.Kind == types.Timestamp || t.Kind == types.TimestampLTZ {
			return func(dst []byte, v types.Value) ([]byte, error) {
				return appendDelimited(dst, num, func(b []byte) ([]byte, error) { return appendTimestamp(b, v.I), nil })
			}, nil
		}
		sub, err := c.message(f.Message(), t.Fields)
		if err != nil {
			return nil, err
		}
		return func(dst []byte, v types.Value) ([]byte, error) {
			return appendDelimited(dst, num, func(b []byte) ([]byte, error) {
				l, _ := v.X.([]types.Value)
				if len(l) != sub.ncols {
					if v.Null {
						return b, nil // an element's NULL: the default message
					}
					return b, fmt.Errorf("a ROW of %d values for %d fields", len(l), sub.ncols)
				}
				return sub.encode(b, l)
			})
		}, nil
	case protoreflect.StringKind, protoreflect.BytesKind:
		return func(dst []byte, v types.Value) ([]byte, error) {
			if skipZero && v.S == "" {
				return dst, nil
			}
			dst = protowire.AppendTag(dst, num, protowire.BytesType)
			return protowire.AppendString(dst, v.S), nil
		}, nil
	case protoreflect.EnumKind:
		return c.enum(f, t, skipZero)
	}
	wire := wireType(f)
	put := putScalar(f.Kind())
	return func(dst []byte, v types.Value) ([]byte, error) {
		if skipZero && v.I == 0 {
			return dst, nil // 0, false, +0.0 (a -0.0 has its sign bit: written)
		}
		dst = protowire.AppendTag(dst, num, wire)
		return put(dst, v.I), nil
	}, nil
}

// putScalar returns the appender of a numeric or bool kind's value (held
// in a Value's I) without its tag.
func putScalar(k protoreflect.Kind) func([]byte, int64) []byte {
	switch k {
	case protoreflect.Sint32Kind:
		return func(b []byte, x int64) []byte {
			return protowire.AppendVarint(b, protowire.EncodeZigZag(int64(int32(x))))
		}
	case protoreflect.Sint64Kind:
		return func(b []byte, x int64) []byte { return protowire.AppendVarint(b, protowire.EncodeZigZag(x)) }
	case protoreflect.Uint32Kind:
		return func(b []byte, x int64) []byte { return protowire.AppendVarint(b, uint64(uint32(x))) }
	case protoreflect.Int32Kind:
		// int32 is sign-extended to 64 bits on the wire.
		return func(b []byte, x int64) []byte { return protowire.AppendVarint(b, uint64(int64(int32(x)))) }
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return func(b []byte, x int64) []byte { return protowire.AppendFixed32(b, uint32(x)) }
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return func(b []byte, x int64) []byte { return protowire.AppendFixed64(b, uint64(x)) }
	case protoreflect.FloatKind:
		return func(b []byte, x int64) []byte {
			return protowire.AppendFixed32(b, math.Float32bits(float32(math.Float64frombits(uint64(x)))))
		}
	case protoreflect.BoolKind:
		return func(b []byte, x int64) []byte { return protowire.AppendVarint(b, uint64(boolInt(x != 0))) }
	}
	// int64, uint64, enum numbers
	return func(b []byte, x int64) []byte { return protowire.AppendVarint(b, uint64(x)) }
}

func appendTimestamp(b []byte, micros int64) []byte {
	sec := micros / 1e6
	us := micros % 1e6
	if us < 0 {
		sec--
		us += 1e6
	}
	if sec != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(sec))
	}
	if us != 0 {
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(us*1000))
	}
	return b
}

func (c *encCompiler) enum(f protoreflect.FieldDescriptor, t types.Type, skipZero bool) (valueEnc, error) {
	num := f.Number()
	if t.Kind != types.Varchar && t.Kind != types.Char {
		return func(dst []byte, v types.Value) ([]byte, error) {
			if skipZero && v.I == 0 {
				return dst, nil
			}
			dst = protowire.AppendTag(dst, num, protowire.VarintType)
			return protowire.AppendVarint(dst, uint64(int64(int32(v.I)))), nil
		}, nil
	}
	vals := f.Enum().Values()
	numbers := make(map[string]int32, vals.Len())
	for i := 0; i < vals.Len(); i++ {
		numbers[string(vals.Get(i).Name())] = int32(vals.Get(i).Number())
	}
	enumName := f.Enum().FullName()
	return func(dst []byte, v types.Value) ([]byte, error) {
		n, ok := numbers[v.S]
		if !ok {
			return dst, fmt.Errorf("'%s' is not a value of enum %s", v.S, enumName)
		}
		if skipZero && n == 0 {
			return dst, nil
		}
		dst = protowire.AppendTag(dst, num, protowire.VarintType)
		return protowire.AppendVarint(dst, uint64(int64(n))), nil
	}, nil
}

// nullElem returns what a NULL element of an array or a map's NULL key or
// value is written as: protobuf has no NULL there, so Flink writes the
// type's default, and 'write-null-string-literal' for a string.
func (c *encCompiler) nullElem(f protoreflect.FieldDescriptor, t types.Type) types.Value {
	switch f.Kind() {
	case protoreflect.StringKind:
		return types.Value{S: c.opt.WriteNullStringLiteral}
	case protoreflect.EnumKind:
		ev := f.Enum().Values().Get(0)
		if t.Kind == types.Varchar || t.Kind == types.Char {
			return types.Value{S: string(ev.Name())}
		}
		return types.Value{I: int64(ev.Number())}
	case protoreflect.MessageKind:
		return types.Value{Null: true} // the message encoder writes it empty
	}
	return types.Value{}
}

func (c *encCompiler) list(f protoreflect.FieldDescriptor, elem types.Type) (valueEnc, error) {
	null := c.nullElem(f, elem)
	if f.IsPacked() {
		num := f.Number()
		put := putScalar(f.Kind())
		var enumNum map[string]int32
		if f.Kind() == protoreflect.EnumKind && (elem.Kind == types.Varchar || elem.Kind == types.Char) {
			vals := f.Enum().Values()
			enumNum = make(map[string]int32, vals.Len())
			for i := 0; i < vals.Len(); i++ {
				enumNum[string(vals.Get(i).Name())] = int32(vals.Get(i).Number())
			}
			put = func(b []byte, x int64) []byte { return protowire.AppendVarint(b, uint64(x)) }
		}
		enumName := protoreflect.FullName("")
		if f.Enum() != nil {
			enumName = f.Enum().FullName()
		}
		return func(dst []byte, v types.Value) ([]byte, error) {
			l, _ := v.X.([]types.Value)
			if len(l) == 0 {
				return dst, nil
			}
			return appendDelimited(dst, num, func(b []byte) ([]byte, error) {
				for _, e := range l {
					if e.Null {
						e = null
					}
					x := e.I
					if enumNum != nil {
						n, ok := enumNum[e.S]
						if !ok {
							return b, fmt.Errorf("'%s' is not a value of enum %s", e.S, enumName)
						}
						x = int64(n)
					}
					b = put(b, x)
				}
				return b, nil
			})
		}, nil
	}
	enc, err := c.scalar(f, elem, false)
	if err != nil {
		return nil, err
	}
	return func(dst []byte, v types.Value) ([]byte, error) {
		l, _ := v.X.([]types.Value)
		var err error
		for _, e := range l {
			if e.Null {
				e = null
			}
			if dst, err = enc(dst, e); err != nil {
				return dst, err
			}
		}
		return dst, nil
	}, nil
}

func (c *encCompiler) mapField(f protoreflect.FieldDescriptor, t types.Type) (valueEnc, error) {
	kf, vf := f.MapKey(), f.MapValue()
	// A map entry's key and value are always written, as protobuf's
	// writers do.
	kenc, err := c.scalar(kf, *t.Key, false)
	if err != nil {
		return nil, err
	}
	venc, err := c.scalar(vf, *t.Elem, false)
	if err != nil {
		return nil, err
	}
	knull, vnull := c.nullElem(kf, *t.Key), c.nullElem(vf, *t.Elem)
	num := f.Number()
	return func(dst []byte, v types.Value) ([]byte, error) {
		l, _ := v.X.([]types.Value)
		var err error
		for i := 0; i+1 < len(l); i += 2 {
			k, val := l[i], l[i+1]
			if k.Null {
				k = knull
			}
			if val.Null {
				val = vnull
			}
			dst, err = appendDelimited(dst, num, func(b []byte) ([]byte, error) {
				b, err := kenc(b, k)
				if err != nil {
					return b, err
				}
				return venc(b, val)
			})
			if err != nil {
				return dst, err
			}
		}
		return dst, nil
	}, nil
}
