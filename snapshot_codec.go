package weir

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// The binary snapshot codec: a faster encoding than gob for the state
// entries of the window operators and for the state files, used when the
// entry type is plain data (booleans, integers, floats, strings, and
// slices, arrays and structs of them, every struct field exported). Other
// types (maps, pointers, interfaces, a GobEncoder or BinaryMarshaler, an
// unexported field) stay with gob.
//
// Both formats begin with a byte that no gob stream begins with (gob's
// first byte is a message length: below 0x80, or 0xF8 and up), followed by
// a version; decode still reads gob, so snapshots written before this
// codec restore as they did.
//
// A key group's entries: magicGroup, version, the entry type's description
// (uvarint length, bytes), then the entries until the end. An entry is its
// fields in order: integers as (zigzag) varints, floats as 8 bytes, bools
// as a byte, strings and slices as a uvarint length and the elements,
// arrays as their elements. The description (kinds and field names,
// recursively) is checked on restore; if the job's type differs, the
// entries are decoded into a type built from the description and handed
// to gob, so a changed state type restores exactly as gob would restore it
// (fields matched by name, missing ones zero).
const (
	magicGroup   = 0xC7
	magicOpState = 0xC8
	codecVersion = 1
)

// cnode is the encoding plan of a type.
type cnode struct {
	kind   reflect.Kind
	typ    reflect.Type
	size   uintptr
	off    uintptr // of a struct field
	elem   *cnode  // slice and array element
	n      int     // array length
	fields []*cnode
}

type entryCodec struct {
	plan   *cnode
	flat   []flatField // the plan as a list of 8-byte integer fields, if it is one
	desc   string
	header []byte // magicGroup, version, description
}

var codecs sync.Map // reflect.Type -> *entryCodec (nil: gob)

// codecFor returns the binary codec of E, or nil if E needs gob.
func codecFor[E any]() *entryCodec {
	t := reflect.TypeFor[E]()
	if c, ok := codecs.Load(t); ok {
		return c.(*entryCodec)
	}
	var c *entryCodec
	var sb strings.Builder
	if n, ok := buildPlan(t, &sb, map[reflect.Type]bool{}); ok {
		c = &entryCodec{plan: n, desc: sb.String(), flat: flatten(n, 0, nil)}
		c.header = append([]byte{magicGroup, codecVersion}, binary.AppendUvarint(nil, uint64(len(c.desc)))...)
		c.header = append(c.header, c.desc...)
	}
	codecs.Store(t, c)
	return c
}

var (
	gobEncoderType    = reflect.TypeFor[gob.GobEncoder]()
	binMarshalerType  = reflect.TypeFor[encoding.BinaryMarshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// buildPlan builds t's plan and writes its description to sb; ok is false
// when t needs gob.
func buildPlan(t reflect.Type, sb *strings.Builder, seen map[reflect.Type]bool) (*cnode, bool) {
	for _, m := range []reflect.Type{gobEncoderType, binMarshalerType, textMarshalerType} {
		if t.Implements(m) || reflect.PointerTo(t).Implements(m) {
			return nil, false
		}
	}
	if seen[t] {
		return nil, false // recursive
	}
	n := &cnode{kind: t.Kind(), typ: t, size: t.Size()}
	// int and uint as the fixed-size kind of their size.
	switch {
	case t.Kind() == reflect.Int && t.Size() == 8:
		n.kind = reflect.Int64
	case t.Kind() == reflect.Int:
		n.kind = reflect.Int32
	case t.Kind() == reflect.Uint && t.Size() == 8:
		n.kind = reflect.Uint64
	case t.Kind() == reflect.Uint:
		n.kind = reflect.Uint32
	}
	switch t.Kind() {
	case reflect.Bool:
		sb.WriteString("b")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		sb.WriteString("i" + strconv.Itoa(int(8*t.Size())))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		sb.WriteString("u" + strconv.Itoa(int(8*t.Size())))
	case reflect.Float32, reflect.Float64:
		sb.WriteString("f" + strconv.Itoa(int(8*t.Size())))
	case reflect.String:
		sb.WriteString("s")
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Array {
			if t.Len() == 0 {
				return nil, false
			}
			n.n = t.Len()
			sb.WriteString("[" + strconv.Itoa(t.Len()) + "]")
		} else {
			sb.WriteString("[]")
		}
		seen[t] = true
		e, ok := buildPlan(t.Elem(), sb, seen)
		delete(seen, t)
		if !ok {
			return nil, false
		}
		n.elem = e
	case reflect.Struct:
		if t.NumField() == 0 {
			return nil, false
		}
		seen[t] = true
		sb.WriteString("{")
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Name == "_" {
				return nil, false
			}
			if i > 0 {
				sb.WriteString(",")
			}
			sb.WriteString(f.Name + ":")
			fn, ok := buildPlan(f.Type, sb, seen)
			if !ok {
				return nil, false
			}
			fn.off = f.Offset
			n.fields = append(n.fields, fn)
		}
		sb.WriteString("}")
		delete(seen, t)
	default:
		return nil, false
	}
	return n, true
}

// flatField is an int64 or uint64 at an offset: entries made of these
// only (aligned windows with integer keys and accumulators) are encoded by
// a loop over their fields, the same bytes as appendValue's.
type flatField struct {
	off    uintptr
	signed bool
}

func flatten(n *cnode, off uintptr, fs []flatField) []flatField {
	switch n.kind {
	case reflect.Int64, reflect.Uint64:
		return append(fs, flatField{off + n.off, n.kind == reflect.Int64})
	case reflect.Struct:
		for _, f := range n.fields {
			if fs = flatten(f, off+n.off, fs); fs == nil {
				return nil
			}
		}
		return fs
	}
	return nil
}

func (c *entryCodec) append(b []byte, p unsafe.Pointer) []byte {
	if c.flat == nil {
		return appendValue(b, p, c.plan)
	}
	need := len(c.flat) * binary.MaxVarintLen64
	if cap(b)-len(b) < need {
		b = slices.Grow(b, need)
	}
	n := len(b)
	w := b[n : n+need]
	i := 0
	for _, f := range c.flat {
		v := *(*uint64)(unsafe.Add(p, f.off))
		if f.signed {
			v = uint64(int64(v)<<1) ^ uint64(int64(v)>>63) // zigzag, as binary.AppendVarint
		}
		for v >= 0x80 {
			w[i] = byte(v) | 0x80
			v >>= 7
			i++
		}
		w[i] = byte(v)
		i++
	}
	return b[:n+i]
}

func appendValue(b []byte, p unsafe.Pointer, n *cnode) []byte {
	switch n.kind {
	case reflect.Bool:
		if *(*bool)(p) {
			return append(b, 1)
		}
		return append(b, 0)
	case reflect.Int64:
		return binary.AppendVarint(b, *(*int64)(p))
	case reflect.Int32:
		return binary.AppendVarint(b, int64(*(*int32)(p)))
	case reflect.Int16:
		return binary.AppendVarint(b, int64(*(*int16)(p)))
	case reflect.Int8:
		return binary.AppendVarint(b, int64(*(*int8)(p)))
	case reflect.Uint64:
		return binary.AppendUvarint(b, *(*uint64)(p))
	case reflect.Uint32:
		return binary.AppendUvarint(b, uint64(*(*uint32)(p)))
	case reflect.Uint16:
		return binary.AppendUvarint(b, uint64(*(*uint16)(p)))
	case reflect.Uint8:
		return append(b, *(*uint8)(p))
	case reflect.Float64:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(*(*float64)(p)))
	case reflect.Float32:
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(*(*float32)(p)))
	case reflect.String:
		s := *(*string)(p)
		b = binary.AppendUvarint(b, uint64(len(s)))
		return append(b, s...)
	case reflect.Slice:
		l := *(*int)(unsafe.Add(p, unsafe.Sizeof(uintptr(0))))
		b = binary.AppendUvarint(b, uint64(l))
		if l == 0 {
			return b
		}
		data := *(*unsafe.Pointer)(p)
		if n.elem.kind == reflect.Uint8 {
			return append(b, unsafe.Slice((*byte)(data), l)...)
		}
		for i := range l {
			b = appendValue(b, unsafe.Add(data, uintptr(i)*n.elem.size), n.elem)
		}
		return b
	case reflect.Array:
		for i := range n.n {
			b = appendValue(b, unsafe.Add(p, uintptr(i)*n.elem.size), n.elem)
		}
		return b
	case reflect.Struct:
		for _, f := range n.fields {
			b = appendValue(b, unsafe.Add(p, f.off), f)
		}
		return b
	}
	panic("weir: snapshot codec: unexpected kind " + n.kind.String())
}

var errCorrupt = errors.New("weir: corrupt snapshot entry")

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	v, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[k:]
	return v
}

func (d *decoder) varint() int64 {
	v, k := binary.Varint(d.b)
	if k <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[k:]
	return v
}

func (d *decoder) bytes(l uint64) []byte {
	if uint64(len(d.b)) < l {
		d.fail()
		return nil
	}
	v := d.b[:l]
	d.b = d.b[l:]
	return v
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errCorrupt
	}
	d.b = nil
}

func (d *decoder) value(p unsafe.Pointer, n *cnode) {
	if d.err != nil {
		return
	}
	switch n.kind {
	case reflect.Bool:
		if b := d.bytes(1); b != nil {
			*(*bool)(p) = b[0] != 0
		}
	case reflect.Int64:
		*(*int64)(p) = d.varint()
	case reflect.Int32:
		*(*int32)(p) = int32(d.varint())
	case reflect.Int16:
		*(*int16)(p) = int16(d.varint())
	case reflect.Int8:
		*(*int8)(p) = int8(d.varint())
	case reflect.Uint64:
		*(*uint64)(p) = d.uvarint()
	case reflect.Uint32:
		*(*uint32)(p) = uint32(d.uvarint())
	case reflect.Uint16:
		*(*uint16)(p) = uint16(d.uvarint())
	case reflect.Uint8:
		if b := d.bytes(1); b != nil {
			*(*uint8)(p) = b[0]
		}
	case reflect.Float64:
		if b := d.bytes(8); b != nil {
			*(*float64)(p) = math.Float64frombits(binary.LittleEndian.Uint64(b))
		}
	case reflect.Float32:
		if b := d.bytes(4); b != nil {
			*(*float32)(p) = math.Float32frombits(binary.LittleEndian.Uint32(b))
		}
	case reflect.String:
		if l := d.uvarint(); l > 0 {
			*(*string)(p) = string(d.bytes(l))
		}
	case reflect.Slice:
		l := d.uvarint()
		if l == 0 || d.err != nil {
			return
		}
		if l > uint64(len(d.b)) { // every element takes a byte at least
			d.fail()
			return
		}
		s := reflect.MakeSlice(n.typ, int(l), int(l))
		reflect.NewAt(n.typ, p).Elem().Set(s)
		data := s.UnsafePointer()
		if n.elem.kind == reflect.Uint8 {
			copy(unsafe.Slice((*byte)(data), l), d.bytes(l))
			return
		}
		for i := range int(l) {
			d.value(unsafe.Add(data, uintptr(i)*n.elem.size), n.elem)
		}
	case reflect.Array:
		for i := range n.n {
			d.value(unsafe.Add(p, uintptr(i)*n.elem.size), n.elem)
		}
	case reflect.Struct:
		for _, f := range n.fields {
			d.value(unsafe.Add(p, f.off), f)
		}
	}
}

// groupWriter encodes a snapshot's entries by key group with the binary
// codec, straight into each group's buffer. Buffers are handed to the
// snapshot; the next snapshot presizes them from their sizes this time.
type groupWriter[E any] struct {
	c    *entryCodec
	bufs [][]byte
	hint []int
}

func (g *groupWriter[E]) start(c *entryCodec, maxP int) {
	g.c = c
	if len(g.bufs) != maxP {
		g.bufs = make([][]byte, maxP)
		g.hint = make([]int, maxP)
	}
}

func (g *groupWriter[E]) add(kg int, e *E) {
	b := g.bufs[kg]
	if b == nil {
		b = make([]byte, 0, max(g.hint[kg]+g.hint[kg]/8, len(g.c.header)+256))
		b = append(b, g.c.header...)
	}
	g.bufs[kg] = g.c.append(b, unsafe.Pointer(e))
}

func (g *groupWriter[E]) finish() map[int][]byte {
	out := make(map[int][]byte)
	for kg, b := range g.bufs {
		g.hint[kg] = len(b)
		if b != nil {
			out[kg] = b
			g.bufs[kg] = nil
		}
	}
	return out
}

// eachBinaryEntry decodes a key group written by groupWriter.
func eachBinaryEntry[E any](data []byte, fn func(E)) error {
	if len(data) < 2 {
		return errCorrupt
	}
	if data[1] != codecVersion {
		return fmt.Errorf("weir: snapshot entries of format version %d: this weir reads version %d and gob (restore with a newer weir)", data[1], codecVersion)
	}
	d := &decoder{b: data[2:]}
	desc := string(d.bytes(d.uvarint()))
	if d.err != nil {
		return d.err
	}
	c := codecFor[E]()
	if c == nil || c.desc != desc {
		return eachConvertedEntry(d, desc, fn)
	}
	for len(d.b) > 0 {
		var e E
		d.value(unsafe.Pointer(&e), c.plan)
		if d.err != nil {
			return fmt.Errorf("weir: cannot restore state of type %T: %w", e, d.err)
		}
		fn(e)
	}
	return nil
}

// eachConvertedEntry restores entries written for another type than the
// job's (the state type changed since the snapshot): each is decoded into
// a type built from its description and converted by gob, which matches
// fields by name, as a gob snapshot would have been restored.
func eachConvertedEntry[E any](d *decoder, desc string, fn func(E)) error {
	p := &descParser{s: desc}
	t := p.typ()
	if p.err != nil || p.s != "" {
		return fmt.Errorf("weir: snapshot entries with an unreadable type description %q", desc)
	}
	var sb strings.Builder
	plan, ok := buildPlan(t, &sb, map[reflect.Type]bool{})
	if !ok || sb.String() != desc {
		return fmt.Errorf("weir: snapshot entries with an unreadable type description %q", desc)
	}
	for len(d.b) > 0 {
		v := reflect.New(t)
		d.value(v.UnsafePointer(), plan)
		if d.err != nil {
			return d.err
		}
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).EncodeValue(v.Elem()); err != nil {
			return err
		}
		var e E
		if err := gob.NewDecoder(&buf).Decode(&e); err != nil {
			return fmt.Errorf("weir: cannot restore state of type %T from entries of type %s: %w", e, desc, err)
		}
		fn(e)
	}
	return nil
}

type descParser struct {
	s   string
	err error
}

func (p *descParser) next(prefix string) bool {
	if strings.HasPrefix(p.s, prefix) {
		p.s = p.s[len(prefix):]
		return true
	}
	return false
}

var descBasic = map[string]reflect.Type{
	"b": reflect.TypeFor[bool](), "s": reflect.TypeFor[string](),
	"i8": reflect.TypeFor[int8](), "i16": reflect.TypeFor[int16](), "i32": reflect.TypeFor[int32](), "i64": reflect.TypeFor[int64](),
	"u8": reflect.TypeFor[uint8](), "u16": reflect.TypeFor[uint16](), "u32": reflect.TypeFor[uint32](), "u64": reflect.TypeFor[uint64](),
	"f32": reflect.TypeFor[float32](), "f64": reflect.TypeFor[float64](),
}

func (p *descParser) typ() reflect.Type {
	if p.err != nil {
		return nil
	}
	switch {
	case p.next("[]"):
		if e := p.typ(); e != nil {
			return reflect.SliceOf(e)
		}
	case p.next("["):
		i := strings.IndexByte(p.s, ']')
		n, err := strconv.Atoi(p.s[:max(i, 0)])
		if i < 0 || err != nil || n <= 0 {
			break
		}
		p.s = p.s[i+1:]
		if e := p.typ(); e != nil {
			return reflect.ArrayOf(n, e)
		}
	case p.next("{"):
		var fs []reflect.StructField
		for len(fs) == 0 || p.next(",") {
			i := strings.IndexByte(p.s, ':')
			if i <= 0 {
				p.err = errCorrupt
				return nil
			}
			name := p.s[:i]
			p.s = p.s[i+1:]
			ft := p.typ()
			if ft == nil {
				return nil
			}
			fs = append(fs, reflect.StructField{Name: name, Type: ft})
		}
		if !p.next("}") {
			break
		}
		var t reflect.Type
		func() {
			defer func() {
				if recover() != nil {
					t = nil
				}
			}()
			t = reflect.StructOf(fs)
		}()
		if t != nil {
			return t
		}
	default:
		i := 0
		for i < len(p.s) && (p.s[i] >= 'a' && p.s[i] <= 'z' || p.s[i] >= '0' && p.s[i] <= '9') {
			i++
		}
		if t, ok := descBasic[p.s[:i]]; ok {
			p.s = p.s[i:]
			return t
		}
	}
	p.err = errCorrupt
	return nil
}

// ---- state files ----

// encodeOpState writes a state file: magicOpState, version, UID, name,
// subtask, parallelism, watermark, then the key groups and the meta map
// (each: 0 for nil, else 1+count, then key and length-prefixed value, in
// key order). The group data is copied once, into a buffer of exact size.
func encodeOpState(st opState) []byte {
	size := 2 + 3*binary.MaxVarintLen64 + 2*binary.MaxVarintLen64 + len(st.UID) + len(st.Name)
	size += 2 * binary.MaxVarintLen64
	for _, v := range st.Groups {
		size += 2*binary.MaxVarintLen64 + len(v)
	}
	for k, v := range st.Meta {
		size += 2*binary.MaxVarintLen64 + len(k) + len(v)
	}
	b := make([]byte, 0, size)
	b = append(b, magicOpState, codecVersion)
	b = binary.AppendUvarint(b, uint64(len(st.UID)))
	b = append(b, st.UID...)
	b = binary.AppendUvarint(b, uint64(len(st.Name)))
	b = append(b, st.Name...)
	b = binary.AppendVarint(b, int64(st.Subtask))
	b = binary.AppendVarint(b, int64(st.Parallelism))
	b = binary.AppendVarint(b, st.Watermark)
	if st.Groups == nil {
		b = append(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(st.Groups))+1)
		kgs := make([]int, 0, len(st.Groups))
		for kg := range st.Groups {
			kgs = append(kgs, kg)
		}
		slices.Sort(kgs)
		for _, kg := range kgs {
			b = binary.AppendVarint(b, int64(kg))
			b = binary.AppendUvarint(b, uint64(len(st.Groups[kg])))
			b = append(b, st.Groups[kg]...)
		}
	}
	if st.Meta == nil {
		b = append(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(st.Meta))+1)
		keys := make([]string, 0, len(st.Meta))
		for k := range st.Meta {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b = binary.AppendUvarint(b, uint64(len(k)))
			b = append(b, k...)
			b = binary.AppendUvarint(b, uint64(len(st.Meta[k])))
			b = append(b, st.Meta[k]...)
		}
	}
	return b
}

// decodeOpState reads a state file written by encodeOpState. The groups
// and meta values alias data.
func decodeOpState(data []byte, st *opState) error {
	if len(data) < 2 {
		return errCorrupt
	}
	if data[1] != codecVersion {
		return fmt.Errorf("weir: state file of format version %d: this weir reads version %d and gob (restore with a newer weir)", data[1], codecVersion)
	}
	d := &decoder{b: data[2:]}
	*st = opState{}
	st.UID = string(d.bytes(d.uvarint()))
	st.Name = string(d.bytes(d.uvarint()))
	st.Subtask = int(d.varint())
	st.Parallelism = int(d.varint())
	st.Watermark = d.varint()
	if n := d.uvarint(); n > 0 && d.err == nil {
		if n-1 > uint64(len(d.b)) {
			return errCorrupt
		}
		st.Groups = make(map[int][]byte, n-1)
		for range n - 1 {
			kg := int(d.varint())
			v := d.bytes(d.uvarint())
			st.Groups[kg] = v[:len(v):len(v)]
		}
	}
	if n := d.uvarint(); n > 0 && d.err == nil {
		if n-1 > uint64(len(d.b)) {
			return errCorrupt
		}
		st.Meta = make(map[string][]byte, n-1)
		for range n - 1 {
			k := string(d.bytes(d.uvarint()))
			v := d.bytes(d.uvarint())
			st.Meta[k] = v[:len(v):len(v)]
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = errCorrupt
	}
	return d.err
}
