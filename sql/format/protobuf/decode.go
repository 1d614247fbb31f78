package protobuf

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

// maxDepth is how deep messages may nest in a record: protobuf's own
// recursion limit.
const maxDepth = 100

// Decoder decodes protobuf messages into rows. It is safe for concurrent
// use.
type Decoder struct {
	msg *msgDec
	opt Options
}

// NewDecoder compiles a decoder of messages md into rows of schema: each
// column reads the field of its name.
func NewDecoder(schema types.Schema, md protoreflect.MessageDescriptor, opt Options) (*Decoder, error) {
	c := &decCompiler{opt: opt}
	m, err := c.message(md, schema)
	if err != nil {
		return nil, err
	}
	return &Decoder{msg: m, opt: opt}, nil
}

// Decode implements format.Decoder: it appends one +I row. A nil record
// (a Kafka tombstone) gives no row; an empty one is a message with no
// field set.
func (d *Decoder) Decode(data []byte, dst []types.Row) ([]types.Row, error) {
	if data == nil {
		return dst, nil
	}
	vals := make([]types.Value, d.msg.ncols)
	if err := d.msg.decodeInto(data, vals, 0); err != nil {
		err = fmt.Errorf("protobuf: message %s: %w", d.msg.name, err)
		if d.opt.IgnoreParseErrors {
			return dst, &format.SkipError{Err: err}
		}
		return dst, err
	}
	return append(dst, types.Row{Kind: types.Insert, Values: vals}), nil
}

// SkipsParseErrors implements format.ParseErrorSkipper.
func (d *Decoder) SkipsParseErrors() bool { return d.opt.IgnoreParseErrors }

// valueDec decodes one value of its field's wire type from the start of b
// into *v and returns the bytes it took; n < 0 is a protowire error code.
type valueDec func(b []byte, v *types.Value, depth int) (n int, err error)

// errSkipValue: a value the field does not take (a closed enum's unknown
// number), dropped as protobuf-java keeps it among the unknown fields.
var errSkipValue = errors.New("skip")

type fieldDec struct {
	col    int
	name   protoreflect.Name
	num    protowire.Number
	wire   protowire.Type
	dec    valueDec
	packed valueDec // a packed run of a repeated scalar's elements, or nil
	oneof  []int    // the other columns of the field's oneof
}

type msgDec struct {
	name  protoreflect.FullName
	ncols int
	small []*fieldDec // by field number, below smallFields
	big   map[protowire.Number]*fieldDec
	init  []types.Value // each record's values before its fields are read
	// after reading: the columns with presence still NULL get their
	// default (read-default-values, NOT NULL columns); required fields
	// must be set; maps keep the last value of a key.
	fill     []fillCol
	required []int
	maps     []int
	cols     []types.Field
	// children are the columns of messages that need finishing;
	// needsFinish says whether this message or one of them does.
	children    []childDec
	needsFinish bool
}

type fillCol struct {
	col int
	def func() types.Value
}

const smallFields = 512

type decCompiler struct {
	opt Options
	// lastSub is the decoder of the message the last scalar compiled
	// reads (nil for another type).
	lastSub *msgDec
}

// Shapes of a column holding messages.
const (
	shapeRow = iota
	shapeList
	shapeMapValue
)

type childDec struct {
	col   int
	sub   *msgDec
	shape uint8
}

func (c *decCompiler) message(md protoreflect.MessageDescriptor, cols []types.Field) (*msgDec, error) {
	m := &msgDec{name: md.FullName(), ncols: len(cols), init: make([]types.Value, len(cols)), cols: cols}
	oneofCols := map[protoreflect.FullName][]int{}
	fds := make([]*fieldDec, len(cols))
	for i, col := range cols {
		f, err := field(md, col)
		if err != nil {
			return nil, err
		}
		if err := checkField(f, col.Type); err != nil {
			return nil, fmt.Errorf("column '%s' %w", col.Name, err)
		}
		fd := &fieldDec{col: i, name: f.Name(), num: f.Number(), wire: wireType(f)}
		c.lastSub = nil
		var sub *msgDec // the messages the column holds
		shape := uint8(shapeRow)
		switch {
		case f.IsMap():
			shape = shapeMapValue
			fd.dec, err = c.mapEntry(f, col.Type)
			sub = c.lastSub
			m.init[i] = types.Value{X: []types.Value{}}
			m.maps = append(m.maps, i)
		case f.IsList():
			shape = shapeList
			var elem valueDec
			elem, err = c.scalar(f, *col.Type.Elem)
			sub = c.lastSub
			fd.dec = listDec(elem)
			if f.Kind() != protoreflect.StringKind && f.Kind() != protoreflect.BytesKind && fd.wire != protowire.BytesType {
				fd.packed = packedDec(elem)
			}
			m.init[i] = types.Value{X: []types.Value{}}
		default:
			fd.dec, err = c.scalar(f, col.Type)
			if err != nil {
				break
			}
			sub = c.lastSub
			if f.HasPresence() {
				m.init[i] = types.NullValue
				if f.Cardinality() == protoreflect.Required {
					m.required = append(m.required, i)
				}
				if c.opt.ReadDefaultValues || col.Type.NotNull {
					def, err := c.defaultOf(f, col.Type)
					if err != nil {
						return nil, fmt.Errorf("column '%s': %w", col.Name, err)
					}
					m.fill = append(m.fill, fillCol{col: i, def: def})
				}
			} else {
				def, err := c.defaultOf(f, col.Type)
				if err != nil {
					return nil, fmt.Errorf("column '%s': %w", col.Name, err)
				}
				m.init[i] = def()
			}
			if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
				oneofCols[o.FullName()] = append(oneofCols[o.FullName()], i)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("column '%s': %w", col.Name, err)
		}
		if sub != nil && sub.needsFinish {
			m.children = append(m.children, childDec{col: i, sub: sub, shape: shape})
		}
		c.lastSub = nil
		fds[i] = fd
		if f.Number() < smallFields {
			if m.small == nil {
				m.small = make([]*fieldDec, smallFields)
			}
			m.small[f.Number()] = fd
		} else {
			if m.big == nil {
				m.big = map[protowire.Number]*fieldDec{}
			}
			m.big[f.Number()] = fd
		}
	}
	// A field of a oneof clears the others, as setting it does in protobuf.
	for _, cs := range oneofCols {
		if len(cs) < 2 {
			continue
		}
		for _, ci := range cs {
			for _, cj := range cs {
				if ci != cj {
					fds[ci].oneof = append(fds[ci].oneof, cj)
				}
			}
		}
	}
	m.needsFinish = len(m.children)+len(m.required)+len(m.fill)+len(m.maps) > 0
	if len(m.small) > 0 {
		// Trim the table to the highest number in use.
		hi := 0
		for n, f := range m.small {
			if f != nil {
				hi = n
			}
		}
		m.small = m.small[:hi+1]
	}
	return m, nil
}

func wireType(f protoreflect.FieldDescriptor) protowire.Type {
	switch f.Kind() {
	case protoreflect.BoolKind, protoreflect.EnumKind, protoreflect.Int32Kind, protoreflect.Sint32Kind,
		protoreflect.Uint32Kind, protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Uint64Kind:
		return protowire.VarintType
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.GroupKind:
		return protowire.StartGroupType
	}
	return protowire.BytesType
}

// decodeInto decodes a record's message b into vals (len = the columns).
func (m *msgDec) decodeInto(b []byte, vals []types.Value, depth int) error {
	copy(vals, m.init)
	if err := m.merge(b, vals, depth); err != nil {
		return err
	}
	if m.needsFinish {
		return m.finish(vals)
	}
	return nil
}

// defaultRow is the row of a message's default instance (what Java's
// getter returns for an unset message field): its required fields are not
// required there.
func (m *msgDec) defaultRow() types.Value {
	vals := make([]types.Value, m.ncols)
	copy(vals, m.init)
	m.fillDefaults(vals)
	return types.Value{X: vals}
}

// decodeNew decodes a nested message b into a new ROW value, to be
// finished with the record.
func (m *msgDec) decodeNew(b []byte, depth int) (types.Value, error) {
	vals := make([]types.Value, m.ncols)
	copy(vals, m.init)
	if err := m.merge(b, vals, depth); err != nil {
		return types.Value{}, err
	}
	return types.Value{X: vals}, nil
}

// finish completes a message read to its end, and the messages in it:
// required fields must be there (checked once a message has all its
// occurrences merged, as protobuf's parsers do), then the fields left
// unset get their defaults and maps keep the last value of a key.
func (m *msgDec) finish(vals []types.Value) error {
	for _, ch := range m.children {
		v := vals[ch.col]
		if v.Null {
			continue
		}
		l, _ := v.X.([]types.Value)
		switch ch.shape {
		case shapeRow:
			if err := ch.sub.finish(l); err != nil {
				return fmt.Errorf("field %s: %w", m.cols[ch.col].Name, err)
			}
		default:
			step, first := 1, 0
			if ch.shape == shapeMapValue {
				step, first = 2, 1
			}
			for i := first; i < len(l); i += step {
				r, _ := l[i].X.([]types.Value)
				if l[i].Null {
					continue
				}
				if err := ch.sub.finish(r); err != nil {
					return fmt.Errorf("field %s: %w", m.cols[ch.col].Name, err)
				}
			}
		}
	}
	for _, c := range m.required {
		if vals[c].Null {
			return fmt.Errorf("required field %s is missing", m.cols[c].Name)
		}
	}
	m.fillDefaults(vals)
	return nil
}

func (m *msgDec) fillDefaults(vals []types.Value) {
	for _, f := range m.fill {
		if vals[f.col].Null {
			vals[f.col] = f.def()
		}
	}
	for _, c := range m.maps {
		if l, _ := vals[c].X.([]types.Value); len(l) > 2 {
			vals[c].X = lastPerKey(l)
		}
	}
}

// merge reads the fields of message b into vals: a field that comes again
// replaces a scalar, appends to a repeated field and merges a message, as
// protobuf parsers do.
func (m *msgDec) merge(b []byte, vals []types.Value, depth int) error {
	off := 0
	for off < len(b) {
		num, typ, n := consumeTag(b[off:])
		if n < 0 {
			return wireError(off, protowire.ParseError(n))
		}
		at := off
		off += n
		var f *fieldDec
		if int(num) < len(m.small) {
			f = m.small[num]
		} else if m.big != nil {
			f = m.big[num]
		}
		if f == nil {
			n = protowire.ConsumeFieldValue(num, typ, b[off:])
			if n < 0 {
				return fmt.Errorf("field %d at byte %d: %w", num, at, wireError(-1, protowire.ParseError(n)))
			}
			off += n
			continue
		}
		var err error
		switch {
		case typ == f.wire:
			n, err = f.dec(b[off:], &vals[f.col], depth)
		case typ == protowire.BytesType && f.packed != nil:
			n, err = f.packed(b[off:], &vals[f.col], depth)
		default:
			return fmt.Errorf("field %s (%d) at byte %d: wire type %s, but the field's type is read as %s", f.name, num, at, wireName(typ), wireName(f.wire))
		}
		if err == nil && n < 0 {
			err = wireError(-1, protowire.ParseError(n))
		}
		if err != nil {
			if err == errSkipValue {
				off += n
				continue
			}
			return fmt.Errorf("field %s (%d) at byte %d: %w", f.name, num, at, err)
		}
		off += n
		for _, c := range f.oneof {
			vals[c] = types.NullValue
		}
	}
	return nil
}

func wireError(at int, err error) error {
	// protowire's errors read "proto: ..." (with a varying space).
	what := strings.TrimLeft(strings.TrimPrefix(err.Error(), "proto:"), " \u00a0")
	if strings.Contains(what, "unexpected EOF") {
		what = "truncated message (unexpected EOF)"
	}
	if at < 0 {
		return errors.New(what)
	}
	return fmt.Errorf("at byte %d: %s", at, what)
}

func wireName(t protowire.Type) string {
	switch t {
	case protowire.VarintType:
		return "varint (0)"
	case protowire.Fixed32Type:
		return "fixed32 (5)"
	case protowire.Fixed64Type:
		return "fixed64 (1)"
	case protowire.BytesType:
		return "length-delimited (2)"
	case protowire.StartGroupType:
		return "start group (3)"
	case protowire.EndGroupType:
		return "end group (4)"
	}
	return fmt.Sprintf("%d", t)
}

func listDec(elem valueDec) valueDec {
	return func(b []byte, v *types.Value, depth int) (int, error) {
		var e types.Value
		n, err := elem(b, &e, depth)
		if n < 0 || err != nil {
			return n, err
		}
		l, _ := v.X.([]types.Value)
		v.X = append(l, e)
		return n, nil
	}
}

func packedDec(elem valueDec) valueDec {
	return func(b []byte, v *types.Value, depth int) (int, error) {
		run, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return n, nil
		}
		l, _ := v.X.([]types.Value)
		for len(run) > 0 {
			var e types.Value
			k, err := elem(run, &e, depth)
			if k < 0 {
				return k, nil
			}
			run = run[k:]
			if err == errSkipValue {
				continue
			}
			if err != nil {
				return 0, err
			}
			l = append(l, e)
		}
		v.X = l
		return n, nil
	}
}

// scalar compiles the decoder of one value of field f (an element, for a
// repeated field) into a column of type t.
func (c *decCompiler) scalar(f protoreflect.FieldDescriptor, t types.Type) (valueDec, error) {
	switch f.Kind() {
	case protoreflect.BoolKind:
		return func(b []byte, v *types.Value, _ int) (int, error) {
			x, n := protowire.ConsumeVarint(b)
			*v = types.Value{I: int64(boolInt(x != 0))}
			return n, nil
		}, nil
	case protoreflect.Int32Kind, protoreflect.Uint32Kind:
		// uint32 is read into INT as protobuf-java reads it into an int:
		// values from 2^31 up come out negative.
		return func(b []byte, v *types.Value, _ int) (int, error) {
			x, n := protowire.ConsumeVarint(b)
			*v = types.Value{I: int64(int32(x))}
			return n, nil
		}, nil
	case protoreflect.Int64Kind, protoreflect.Uint64Kind:
		return func(b []byte, v *types.Value, _ int) (int, error) {
			x, n := protowire.ConsumeVarint(b)
			*v = types.Value{I: int64(x)}
			return n, nil
		}, nil
	case protoreflect.Sint32Kind:
		return func(b []byte, v *types.Value, _ int) (int, error) {
			x, n := protowire.ConsumeVarint(b)
			*v = types.Value{I: int64(int32(protowire.DecodeZigZag(x & math.MaxUint32)))}
			return n, nil
		}, nil
	case protoreflect.Sint64Kind:
		return func(b []byte, v *types.Value, _ int) (int, error) {
			x, n := protowire.ConsumeVarint(b)
			*v = types.Value{I: protowire.DecodeZigZag(x)}
			return n, nil
		}, nil
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return func(b []byte, v *types.Value, _ int) (int, error) {
			x, n := protowire.ConsumeFixed32(b)
			*v = types.Value{I: int64(int32(x))}
			return n, nil
		}, nil
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return func(b []byte, v *types.Value, _ int) (int, error) {
			x, n := protowire.ConsumeFixed64(b)
			*v = types.Value{I: int64(x)}
			return n, nil
		}, nil
	case protoreflect.FloatKind:
		return func(b []byte, v *types.Value, _ int) (int, error) {
			x, n := protowire.ConsumeFixed32(b)
			*v = types.FloatValue(float64(math.Float32frombits(x)))
			return n, nil
		}, nil
	case protoreflect.DoubleKind:
		return func(b []byte, v *types.Value, _ int) (int, error) {
			x, n := protowire.ConsumeFixed64(b)
			*v = types.Value{I: int64(x)}
			return n, nil
		}, nil
	case protoreflect.StringKind:
		// proto3 strings must be UTF-8 (protobuf-java refuses the
		// message); proto2 ones are read as Java reads them into a
		// String, an invalid sequence as U+FFFD.
		strict := f.Syntax() == protoreflect.Proto3
		return func(b []byte, v *types.Value, _ int) (int, error) {
			s, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return n, nil
			}
			if !utf8.Valid(s) {
				if strict {
					return n, errors.New("string field is not valid UTF-8")
				}
				*v = types.Value{S: strings.ToValidUTF8(string(s), "\uFFFD")}
				return n, nil
			}
			*v = types.Value{S: string(s)}
			return n, nil
		}, nil
	case protoreflect.BytesKind:
		return func(b []byte, v *types.Value, _ int) (int, error) {
			s, n := protowire.ConsumeBytes(b)
			if n >= 0 {
				*v = types.Value{S: string(s)}
			}
			return n, nil
		}, nil
	case protoreflect.EnumKind:
		return c.enum(f, t)
	case protoreflect.MessageKind:
		if t.Kind == types.Timestamp || t.Kind == types.TimestampLTZ {
			return timestampDec(t.Precision), nil
		}
		sub, err := c.message(f.Message(), t.Fields)
		if err != nil {
			return nil, err
		}
		c.lastSub = sub
		return func(b []byte, v *types.Value, depth int) (int, error) {
			body, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return n, nil
			}
			if depth >= maxDepth {
				return n, fmt.Errorf("messages nest deeper than %d", maxDepth)
			}
			if l, ok := v.X.([]types.Value); ok && !v.Null {
				// The message again: merge it into the first.
				return n, sub.merge(body, l, depth+1)
			}
			r, err := sub.decodeNew(body, depth+1)
			if err != nil {
				return n, err
			}
			*v = r
			return n, nil
		}, nil
	}
	return nil, fmt.Errorf("protobuf field %s: %s fields are not supported", f.Name(), f.Kind())
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// timestampDec reads a google.protobuf.Timestamp into microseconds,
// truncated to precision p.
func timestampDec(p int) valueDec {
	unit := int64(1)
	for i := p; i < 6; i++ {
		unit *= 10
	}
	return func(b []byte, v *types.Value, depth int) (int, error) {
		n, err := timestampMicros(b, v)
		if n >= 0 && err == nil && unit > 1 {
			v.I -= ((v.I % unit) + unit) % unit // toward the past, as the SQL types truncate
		}
		return n, err
	}
}

func timestampMicros(b []byte, v *types.Value) (int, error) {
	body, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return n, nil
	}
	var sec, nanos int64
	for len(body) > 0 {
		num, typ, k := consumeTag(body)
		if k < 0 {
			return k, nil
		}
		body = body[k:]
		if (num == 1 || num == 2) && typ == protowire.VarintType {
			x, k := protowire.ConsumeVarint(body)
			if k < 0 {
				return k, nil
			}
			body = body[k:]
			if num == 1 {
				sec = int64(x)
			} else {
				nanos = int64(int32(x))
			}
			continue
		}
		k = protowire.ConsumeFieldValue(num, typ, body)
		if k < 0 {
			return k, nil
		}
		body = body[k:]
	}
	*v = types.Value{I: sec*1e6 + nanos/1000}
	return n, nil
}

func (c *decCompiler) enum(f protoreflect.FieldDescriptor, t types.Type) (valueDec, error) {
	closed := f.Enum().IsClosed()
	vals := f.Enum().Values()
	known := make(map[int32]string, vals.Len())
	for i := 0; i < vals.Len(); i++ {
		ev := vals.Get(i)
		if _, dup := known[int32(ev.Number())]; !dup { // the first of aliases
			known[int32(ev.Number())] = string(ev.Name())
		}
	}
	if t.Kind == types.Varchar || t.Kind == types.Char {
		return func(b []byte, v *types.Value, _ int) (int, error) {
			x, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return n, nil
			}
			name, ok := known[int32(x)]
			if !ok {
				if closed {
					return n, errSkipValue
				}
				// protobuf-java's name of an open enum's unknown number.
				name = "UNRECOGNIZED"
			}
			*v = types.Value{S: name}
			return n, nil
		}, nil
	}
	return func(b []byte, v *types.Value, _ int) (int, error) {
		x, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return n, nil
		}
		if _, ok := known[int32(x)]; !ok && closed {
			return n, errSkipValue
		}
		*v = types.Value{I: int64(int32(x))}
		return n, nil
	}, nil
}

// mapEntry compiles the decoder of one entry of map field f into a MAP
// column: it appends the key and the value to the column's list.
func (c *decCompiler) mapEntry(f protoreflect.FieldDescriptor, t types.Type) (valueDec, error) {
	kf, vf := f.MapKey(), f.MapValue()
	kdec, err := c.scalar(kf, *t.Key)
	if err != nil {
		return nil, err
	}
	vdec, err := c.scalar(vf, *t.Elem)
	if err != nil {
		return nil, err
	}
	vsub := c.lastSub
	defer func() { c.lastSub = vsub }()
	kdef, err := c.defaultOf(kf, *t.Key)
	if err != nil {
		return nil, err
	}
	vdef, err := c.defaultOf(vf, *t.Elem)
	if err != nil {
		return nil, err
	}
	if sub := vsub; sub != nil {
		// A missing message value is an empty message (whose required
		// fields are missing, as protobuf's parsers see it), finished with
		// the record.
		vdef = func() types.Value { v, _ := sub.decodeNew(nil, 0); return v }
	}
	kw, vw := wireType(kf), wireType(vf)
	return func(b []byte, v *types.Value, depth int) (int, error) {
		body, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return n, nil
		}
		var key, val types.Value
		var hasKey, hasVal bool
		for off := 0; off < len(body); {
			num, typ, k := consumeTag(body[off:])
			if k < 0 {
				return k, nil
			}
			off += k
			var err error
			switch {
			case num == 1 && typ == kw:
				k, err = kdec(body[off:], &key, depth)
				hasKey = hasKey || err == nil
			case num == 2 && typ == vw:
				k, err = vdec(body[off:], &val, depth)
				hasVal = hasVal || err == nil
			case num == 1 || num == 2:
				return n, fmt.Errorf("map entry field %d: wire type %s", num, wireName(typ))
			default:
				k = protowire.ConsumeFieldValue(num, typ, body[off:])
			}
			if k < 0 {
				return k, nil
			}
			if err != nil && err != errSkipValue {
				return n, err
			}
			off += k
		}
		if !hasKey {
			key = kdef()
		}
		if !hasVal {
			val = vdef()
		}
		l, _ := v.X.([]types.Value)
		v.X = append(l, key, val)
		return n, nil
	}, nil
}

// lastPerKey keeps one entry per key of a map's key-value list: the last
// value, at the key's first place (protobuf's rule for a key that comes
// twice).
func lastPerKey(l []types.Value) []types.Value {
	n := len(l) / 2
	if n <= 16 {
		out := l[:0:0]
		for i := 0; i < len(l); i += 2 {
			j := 0
			for ; j < len(out); j += 2 {
				if out[j].Equal(l[i]) {
					out[j+1] = l[i+1]
					break
				}
			}
			if j == len(out) {
				if out == nil {
					out = make([]types.Value, 0, len(l))
				}
				out = append(out, l[i], l[i+1])
			}
		}
		return out
	}
	at := make(map[string]int, n)
	out := make([]types.Value, 0, len(l))
	for i := 0; i < len(l); i += 2 {
		k := types.Key(l[i : i+1])
		if j, ok := at[k]; ok {
			out[j+1] = l[i+1]
			continue
		}
		at[k] = len(out)
		out = append(out, l[i], l[i+1])
	}
	return out
}

// defaultOf returns the value a column reads for field f when f is not
// in the record: its declared default (proto2), else zero; a message's
// default is a row of its fields' defaults.
func (c *decCompiler) defaultOf(f protoreflect.FieldDescriptor, t types.Type) (func() types.Value, error) {
	var v types.Value
	switch f.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if t.Kind == types.Timestamp || t.Kind == types.TimestampLTZ {
			return func() types.Value { return types.Value{} }, nil
		}
		sub, err := c.message(f.Message(), t.Fields)
		if err != nil {
			return nil, err
		}
		return sub.defaultRow, nil
	case protoreflect.EnumKind:
		ev := f.DefaultEnumValue()
		if ev == nil { // protocompile's descriptors leave it to the reader
			ev = f.Enum().Values().Get(0)
		}
		if t.Kind == types.Varchar || t.Kind == types.Char {
			v = types.Value{S: string(ev.Name())}
		} else {
			v = types.Value{I: int64(ev.Number())}
		}
	case protoreflect.BoolKind:
		v = types.BoolValue(f.Default().Bool())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		v = types.Value{I: f.Default().Int()}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		v = types.Value{I: int64(int32(uint32(f.Default().Uint())))}
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		v = types.Value{I: int64(f.Default().Uint())}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		v = types.FloatValue(f.Default().Float())
	case protoreflect.StringKind:
		v = types.Value{S: f.Default().String()}
	case protoreflect.BytesKind:
		v = types.Value{S: string(f.Default().Bytes())}
	}
	return func() types.Value { return v }, nil
}

// consumeTag is protowire.ConsumeTag refusing the field numbers above
// protobuf's largest (2^29-1), as protobuf's parsers do.
func consumeTag(b []byte) (protowire.Number, protowire.Type, int) {
	num, typ, n := protowire.ConsumeTag(b)
	if n >= 0 && num > protowire.MaxValidNumber {
		return 0, 0, -2 // protowire's code of an invalid field number
	}
	return num, typ, n
}
