package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// The group format holds the snapshot entries of one key group of a window
// operator, for entry types that Compact encodes: MagicGroup, Version, the
// entry type's description (Compact's Sig: uvarint length, bytes), then
// the entries until the end. An entry is its fields in order: integers as
// (zigzag) varints, floats as their 8 or 4 little-endian bytes, booleans
// as a byte, strings and slices as a uvarint length and the elements,
// arrays as their elements. Other entry types are written as a gob stream
// of the group's []E, as every snapshot was before this format.
//
// Both binary formats begin with a byte that no gob stream begins with
// (gob's first byte is a message length: below 0x80, or 0xF8 and up).
const (
	MagicGroup     = 0xC7
	MagicStateFile = 0xC8
	// Version is the version of the group and state-file formats.
	Version = 1
)

// groupSlack is the room a large key group's buffer has before each entry
// is encoded into it: entries larger than it still grow it by append.
const groupSlack = 16 << 10

// GroupWriter encodes a snapshot's entries by key group: with the Compact
// codec of E straight into each group's buffer, or, when E is not plain
// data, by gob. Buffers are handed to the snapshot; the next snapshot
// presizes them from their sizes this time, or, with Reuse, writes into
// them again. The zero value is ready.
type GroupWriter[E any] struct {
	c      *Codec // nil: gob
	header []byte
	built  bool
	bufs   [][]byte
	hint   []int
	gob    map[int][]E
	// Reuse: Finish's buffers are written again by the next snapshot
	// (Start), instead of new ones being allocated. Set by an owner that
	// knows every reader of the bytes Finish returned is done with them
	// before it calls Start again.
	Reuse bool
	spare [][]byte // Reuse: last snapshot's buffers, emptied
}

// Start begins a snapshot of maxP key groups.
func (g *GroupWriter[E]) Start(maxP int) {
	if !g.built {
		g.built = true
		if c, err := For(reflect.TypeFor[E](), Compact); err == nil {
			g.c = c
			g.header = append([]byte{MagicGroup, Version}, binary.AppendUvarint(nil, uint64(len(c.Sig)))...)
			g.header = append(g.header, c.Sig...)
		}
	}
	if g.c == nil {
		g.gob = map[int][]E{}
		return
	}
	if len(g.bufs) != maxP {
		g.bufs = make([][]byte, maxP)
		g.hint = make([]int, maxP)
		g.spare = nil
	}
	if g.Reuse && g.spare == nil {
		g.spare = make([][]byte, maxP)
	}
}

// Keeps reports whether Add keeps the entries it is given (gob encodes
// them in Finish): the caller must then not reuse their slices.
func (g *GroupWriter[E]) Keeps() bool { return g.c == nil }

// Binary reports whether the entries are written in the group format.
func (g *GroupWriter[E]) Binary() bool { return g.c != nil }

// Add adds an entry of key group kg.
func (g *GroupWriter[E]) Add(kg int, e *E) {
	if g.c == nil {
		g.gob[kg] = append(g.gob[kg], *e)
		return
	}
	b := g.bufs[kg]
	if b == nil {
		if g.spare != nil && g.spare[kg] != nil {
			// The last snapshot's buffer: its pages are faulted in
			// already, and it is not garbage for the collector to find.
			b, g.spare[kg] = g.spare[kg], nil
		} else {
			b = make([]byte, 0, max(g.hint[kg]+g.hint[kg]/8, len(g.header)+256))
		}
		b = append(b, g.header...)
	}
	if len(b) >= groupSlack && cap(b)-len(b) < groupSlack {
		// Double ahead of the entry: append grows a large slice by about
		// 1.25×, so a large key group filled from a small buffer would
		// be copied several times over, and those copies can dominate a
		// deferred encoding; doubling copies it once at most. Small
		// buffers double by append anyway.
		b = slices.Grow(b, len(b))
	}
	g.bufs[kg] = g.c.enc(b, unsafe.Pointer(e))
}

// Finish returns the encoded key groups that have entries.
func (g *GroupWriter[E]) Finish() (map[int][]byte, error) {
	out := make(map[int][]byte)
	if g.c == nil {
		for kg, es := range g.gob {
			data, err := Marshal(es)
			if err != nil {
				return nil, err
			}
			out[kg] = data
		}
		g.gob = nil
		return out, nil
	}
	for kg, b := range g.bufs {
		g.hint[kg] = len(b)
		if g.spare != nil {
			// A key group left empty this time gives its buffer up: what
			// stays allocated is the size of the last snapshot.
			g.spare[kg] = nil
			if g.Reuse && b != nil {
				g.spare[kg] = b[:0]
			}
		}
		if b != nil {
			out[kg] = b
			g.bufs[kg] = nil
		}
	}
	return out, nil
}

// Join returns, per key group, the entries of parts one after another
// under one header: what Finish would have returned had this writer been
// given all their entries, part after part. Each part is what Finish
// returned for a binary GroupWriter of the same E (a window operator
// keeps the encoding of state that has not changed since the last
// checkpoint, and joins it with what it encodes anew). Call Start first.
func (g *GroupWriter[E]) Join(parts []map[int][]byte) (map[int][]byte, error) {
	if g.c == nil {
		return nil, fmt.Errorf("codec: Join of entries that are not in the group format")
	}
	h := len(g.header)
	for kg := range g.bufs {
		n := 0
		for _, p := range parts {
			if d := p[kg]; len(d) > 0 {
				if len(d) < h || !bytes.Equal(d[:h], g.header) {
					return nil, fmt.Errorf("codec: Join: key group %d of a part has another header", kg)
				}
				n += len(d) - h
			}
		}
		if n == 0 {
			continue
		}
		var b []byte
		if g.spare != nil && g.spare[kg] != nil {
			b, g.spare[kg] = g.spare[kg][:0], nil
		}
		b = slices.Grow(b, h+n)
		b = append(b, g.header...)
		for _, p := range parts {
			if d := p[kg]; len(d) > 0 {
				b = append(b, d[h:]...)
			}
		}
		g.bufs[kg] = b
	}
	return g.Finish()
}

// EachEntry decodes key groups written by GroupWriter, or by gob before
// the group format, and calls fn for every entry.
func EachEntry[E any](groups [][]byte, fn func(E)) error {
	for _, data := range groups {
		if len(data) > 0 && data[0] == MagicGroup {
			if err := eachBinaryEntry(data, fn); err != nil {
				return err
			}
			continue
		}
		var es []E
		if err := Unmarshal(data, &es); err != nil {
			return err
		}
		for _, e := range es {
			fn(e)
		}
	}
	return nil
}

func eachBinaryEntry[E any](data []byte, fn func(E)) error {
	if len(data) < 2 {
		return ErrCorrupt
	}
	if data[1] != Version {
		return fmt.Errorf("codec: snapshot entries of format version %d: this weir reads version %d and gob (restore with a newer weir)", data[1], Version)
	}
	desc, src, err := ReadBytes(data[2:])
	if err != nil {
		return fmt.Errorf("codec: snapshot entries: type description: %w", err)
	}
	c, _ := For(reflect.TypeFor[E](), Compact)
	if c == nil || c.Sig != string(desc) {
		return eachConvertedEntry(src, string(desc), fn)
	}
	// One entry to decode into, reused: the decoder is a func value, so
	// a variable whose address it gets lives on the heap.
	e := new(E)
	var zero E
	for len(src) > 0 {
		*e = zero
		if src, err = c.dec(src, unsafe.Pointer(e)); err != nil {
			return fmt.Errorf("codec: cannot restore state of type %T at byte %d of its key group: %w", *e, len(data)-len(src), err)
		}
		fn(*e)
	}
	return nil
}

// eachConvertedEntry restores entries written for another type than the
// job's (the state type changed since the snapshot): each is decoded into
// a type built from its description and converted by gob, which matches
// fields by name, as a gob snapshot would have been restored.
func eachConvertedEntry[E any](src []byte, desc string, fn func(E)) error {
	t := parseDesc(desc, len(src))
	if t == nil {
		return fmt.Errorf("codec: snapshot entries with an unreadable type description %q", desc)
	}
	c, err := Build(t, Compact)
	if err != nil || c.Sig != desc {
		return fmt.Errorf("codec: snapshot entries with an unreadable type description %q", desc)
	}
	for len(src) > 0 {
		v := reflect.New(t)
		if src, err = c.dec(src, v.UnsafePointer()); err != nil {
			return fmt.Errorf("codec: snapshot entries of type %s: %w", desc, err)
		}
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).EncodeValue(v.Elem()); err != nil {
			return err
		}
		var e E
		if err := gob.NewDecoder(&buf).Decode(&e); err != nil {
			return fmt.Errorf("codec: cannot restore state of type %T from entries of type %s: %w", e, desc, err)
		}
		fn(e)
	}
	return nil
}

// parseDesc builds a type from a Compact signature, or returns nil. The
// entries that follow are n bytes: a type whose value (an array's length)
// could not fit in them is refused before it is allocated, and so is a
// description nested too deep.
func parseDesc(desc string, n int) (t reflect.Type) {
	defer func() {
		if recover() != nil { // reflect.StructOf or ArrayOf refusing
			t = nil
		}
	}()
	p := &descParser{s: desc, limit: n}
	t = p.typ(0)
	if t == nil || p.s != "" || t.Size() > uintptr(24*(n+1)) {
		// Every element of a Compact encoding takes a byte at least, and
		// no Go value of one byte is larger than a slice (24 bytes).
		return nil
	}
	return t
}

type descParser struct {
	s     string
	limit int
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

// maxDescDepth bounds the nesting of a description.
const maxDescDepth = 64

func (p *descParser) typ(depth int) reflect.Type {
	if depth > maxDescDepth {
		return nil
	}
	switch {
	case p.next("[]"):
		if e := p.typ(depth + 1); e != nil {
			return reflect.SliceOf(e)
		}
	case p.next("["):
		i := strings.IndexByte(p.s, ']')
		if i < 0 {
			return nil
		}
		n, err := strconv.Atoi(p.s[:i])
		if err != nil || n <= 0 || n > p.limit {
			return nil
		}
		p.s = p.s[i+1:]
		if e := p.typ(depth + 1); e != nil && e.Size() <= uintptr(24*(p.limit+1)/n) {
			return reflect.ArrayOf(n, e)
		}
	case p.next("{"):
		var fs []reflect.StructField
		for len(fs) == 0 || p.next(",") {
			i := strings.IndexByte(p.s, ':')
			if i <= 0 {
				return nil
			}
			name := p.s[:i]
			p.s = p.s[i+1:]
			ft := p.typ(depth + 1)
			if ft == nil {
				return nil
			}
			fs = append(fs, reflect.StructField{Name: name, Type: ft})
		}
		if p.next("}") {
			return reflect.StructOf(fs)
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
	return nil
}
