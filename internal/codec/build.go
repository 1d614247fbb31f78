package codec

import (
	"encoding"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// Flavor selects the bytes a Codec writes; see the package comment.
type Flavor uint8

// The flavours.
const (
	Key Flavor = iota
	Value
	Compact
)

func (f Flavor) String() string {
	switch f {
	case Key:
		return "key"
	case Value:
		return "value"
	case Compact:
		return "compact"
	}
	return "flavor(" + strconv.Itoa(int(f)) + ")"
}

// Codec encodes values of one Go type to bytes and back. Every encoding is
// prefix-free (self-delimiting): encodings can be concatenated and read
// back one after the other.
type Codec struct {
	// Type is the Go type the codec encodes.
	Type reflect.Type
	// Sig describes the encoding's layout: a restore compares it with the
	// one stored to refuse (Key, Value) or convert (Compact) state written
	// for another type. Key and Value signatures name kinds only; Compact
	// ones name struct fields too.
	Sig string
	// Fixed is the size of every encoding, or -1 when it varies.
	Fixed int

	enc func(dst []byte, p unsafe.Pointer) []byte
	dec func(src []byte, p unsafe.Pointer) ([]byte, error)
	// flat lists the fields of a Compact codec made of 8-byte integers
	// only, which encode and decode in one loop.
	flat []flatField
}

// Append appends the encoding of the value at p, of c's type.
func (c *Codec) Append(dst []byte, p unsafe.Pointer) []byte { return c.enc(dst, p) }

// Read decodes a value from the start of src into p, of c's type, and
// returns the rest of src.
func (c *Codec) Read(src []byte, p unsafe.Pointer) ([]byte, error) { return c.dec(src, p) }

var cache [3]sync.Map // by flavour: reflect.Type -> *Codec or error

// For returns the codec of t in flavour f, built on first use.
func For(t reflect.Type, f Flavor) (*Codec, error) {
	if v, ok := cache[f].Load(t); ok {
		if err, bad := v.(error); bad {
			return nil, err
		}
		return v.(*Codec), nil
	}
	c, err := Build(t, f)
	if err != nil {
		cache[f].Store(t, err)
		return nil, err
	}
	cache[f].Store(t, c)
	return c, nil
}

// Build builds the codec of t in flavour f. Its error says why t cannot be
// encoded in f (for Compact: why it needs gob).
func Build(t reflect.Type, f Flavor) (*Codec, error) {
	b := &builder{f: f, inProgress: map[reflect.Type]bool{}}
	return b.build(t)
}

type builder struct {
	f          Flavor
	inProgress map[reflect.Type]bool
}

var (
	binMarshaler   = reflect.TypeFor[encoding.BinaryMarshaler]()
	binUnmarshaler = reflect.TypeFor[encoding.BinaryUnmarshaler]()
	binAppender    = reflect.TypeFor[encoding.BinaryAppender]()
	// A type with its own encoding for gob is left to gob by Compact.
	gobOwn = []reflect.Type{reflect.TypeFor[gob.GobEncoder](), binMarshaler, reflect.TypeFor[encoding.TextMarshaler]()}
)

func (b *builder) build(t reflect.Type) (*Codec, error) {
	switch b.f {
	case Value:
		if t.Implements(binMarshaler) && reflect.PointerTo(t).Implements(binUnmarshaler) && t.Kind() != reflect.Pointer {
			return marshalerCodec(t), nil
		}
	case Compact:
		for _, m := range gobOwn {
			if t.Implements(m) || reflect.PointerTo(t).Implements(m) {
				return nil, fmt.Errorf("type %s has its own encoding (%s)", t, m)
			}
		}
	}
	if b.inProgress[t] {
		return nil, fmt.Errorf("type %s is recursive (implement encoding.BinaryMarshaler to store it)", t)
	}
	switch k := t.Kind(); k {
	case reflect.Bool, reflect.Uint8:
		return byteCodec(t, b.f, false), nil
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		if b.f == Compact {
			return varintCodec(t, true), nil
		}
		if k == reflect.Int8 {
			return byteCodec(t, b.f, true), nil
		}
		return fixedIntCodec(t), nil
	case reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint, reflect.Uintptr:
		if b.f == Compact {
			if k == reflect.Uintptr {
				break
			}
			return varintCodec(t, false), nil
		}
		return fixedIntCodec(t), nil
	case reflect.Float32, reflect.Float64:
		return floatCodec(t, b.f), nil
	case reflect.Complex64, reflect.Complex128:
		if b.f == Value {
			return complexCodec(t), nil
		}
	case reflect.String:
		return stringCodec(t, b.f), nil
	case reflect.Array:
		return b.array(t)
	case reflect.Struct:
		return b.structure(t)
	case reflect.Slice:
		if b.f != Key {
			return b.slice(t)
		}
	case reflect.Map:
		if b.f == Value {
			return b.mapping(t)
		}
	case reflect.Pointer:
		if b.f == Value {
			return b.pointer(t)
		}
	}
	switch b.f {
	case Key:
		return nil, fmt.Errorf("type %s cannot be encoded canonically (use strings, numbers, arrays or structs of them)", t)
	case Compact:
		return nil, fmt.Errorf("type %s is not plain data", t)
	}
	return nil, fmt.Errorf("type %s cannot be stored (interfaces, channels and functions cannot; implement encoding.BinaryMarshaler)", t)
}

// kindSig names a basic kind in a Key or Value signature: int, uint and
// uintptr encode as 8-byte integers and share a name with int64 and
// uint64. Compact names a kind by its letter and size ("i64", "u8", "b").
func kindSig(t reflect.Type, f Flavor) string {
	if f == Compact {
		bits := strconv.Itoa(int(8 * t.Size()))
		switch t.Kind() {
		case reflect.Bool:
			return "b"
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return "i" + bits
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return "u" + bits
		case reflect.Float32, reflect.Float64:
			return "f" + bits
		}
		return "s"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "i64"
	case reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return "u64"
	case reflect.String:
		return "str"
	}
	return t.Kind().String()
}

// byteCodec is a one-byte value: a bool (0 or 1), a uint8, or an int8 with
// its sign bit flipped (Key and Value: it sorts as a number).
func byteCodec(t reflect.Type, f Flavor, signed bool) *Codec {
	isBool := t.Kind() == reflect.Bool
	flip := uint8(0)
	if signed {
		flip = 0x80
	}
	return &Codec{Type: t, Fixed: 1, Sig: kindSig(t, f),
		enc: func(dst []byte, p unsafe.Pointer) []byte { return append(dst, *(*uint8)(p)^flip) },
		dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
			if len(src) < 1 || isBool && src[0] > 1 {
				return nil, ErrCorrupt
			}
			*(*uint8)(p) = src[0] ^ flip
			return src[1:], nil
		}}
}

// fixedIntCodec is a Key or Value integer of 2, 4 or 8 bytes, big-endian,
// signed ones with the sign bit flipped so that they sort as numbers. int,
// uint and uintptr are 8 bytes whatever the platform, so that the encoding
// does not depend on it.
func fixedIntCodec(t reflect.Type) *Codec {
	k := t.Kind()
	signed := k >= reflect.Int && k <= reflect.Int64
	size := int(t.Size())
	n := size
	if k == reflect.Int || k == reflect.Uint || k == reflect.Uintptr {
		n = 8
	}
	var flip uint64
	if signed {
		flip = 1 << (8*n - 1)
	}
	c := &Codec{Type: t, Fixed: n, Sig: kindSig(t, Key)}
	// One closure per width: this runs per record in serializing backends.
	switch {
	case n == 2:
		c.enc = func(dst []byte, p unsafe.Pointer) []byte {
			return binary.BigEndian.AppendUint16(dst, *(*uint16)(p)^uint16(flip))
		}
		c.dec = func(src []byte, p unsafe.Pointer) ([]byte, error) {
			if len(src) < 2 {
				return nil, ErrCorrupt
			}
			*(*uint16)(p) = binary.BigEndian.Uint16(src) ^ uint16(flip)
			return src[2:], nil
		}
	case n == 4:
		c.enc = func(dst []byte, p unsafe.Pointer) []byte {
			return binary.BigEndian.AppendUint32(dst, *(*uint32)(p)^uint32(flip))
		}
		c.dec = func(src []byte, p unsafe.Pointer) ([]byte, error) {
			if len(src) < 4 {
				return nil, ErrCorrupt
			}
			*(*uint32)(p) = binary.BigEndian.Uint32(src) ^ uint32(flip)
			return src[4:], nil
		}
	case size == 8:
		c.enc = func(dst []byte, p unsafe.Pointer) []byte {
			return binary.BigEndian.AppendUint64(dst, *(*uint64)(p)^flip)
		}
		c.dec = func(src []byte, p unsafe.Pointer) ([]byte, error) {
			if len(src) < 8 {
				return nil, ErrCorrupt
			}
			*(*uint64)(p) = binary.BigEndian.Uint64(src) ^ flip
			return src[8:], nil
		}
	default: // int or uint of 4 bytes, encoded as 8
		c.enc = func(dst []byte, p unsafe.Pointer) []byte {
			return binary.BigEndian.AppendUint64(dst, loadInt(p, size, signed)^flip)
		}
		c.dec = func(src []byte, p unsafe.Pointer) ([]byte, error) {
			if len(src) < 8 {
				return nil, ErrCorrupt
			}
			storeInt(p, size, binary.BigEndian.Uint64(src)^flip)
			return src[8:], nil
		}
	}
	return c
}

// loadInt reads an integer of size bytes at p, sign- or zero-extended.
func loadInt(p unsafe.Pointer, size int, signed bool) uint64 {
	switch {
	case size == 1 && signed:
		return uint64(int64(*(*int8)(p)))
	case size == 1:
		return uint64(*(*uint8)(p))
	case size == 2 && signed:
		return uint64(int64(*(*int16)(p)))
	case size == 2:
		return uint64(*(*uint16)(p))
	case size == 4 && signed:
		return uint64(int64(*(*int32)(p)))
	case size == 4:
		return uint64(*(*uint32)(p))
	}
	return *(*uint64)(p)
}

// storeInt stores the low size bytes of u at p.
func storeInt(p unsafe.Pointer, size int, u uint64) {
	switch size {
	case 1:
		*(*uint8)(p) = uint8(u)
	case 2:
		*(*uint16)(p) = uint16(u)
	case 4:
		*(*uint32)(p) = uint32(u)
	default:
		*(*uint64)(p) = u
	}
}

// varintCodec is a Compact integer: a zigzag varint if signed, else a
// uvarint.
func varintCodec(t reflect.Type, signed bool) *Codec {
	size := int(t.Size())
	c := &Codec{Type: t, Fixed: -1, Sig: kindSig(t, Compact),
		enc: func(dst []byte, p unsafe.Pointer) []byte {
			if signed {
				return binary.AppendVarint(dst, int64(loadInt(p, size, true)))
			}
			return binary.AppendUvarint(dst, loadInt(p, size, false))
		},
		dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
			var u uint64
			var k int
			if signed {
				var v int64
				v, k = binary.Varint(src)
				u = uint64(v)
			} else {
				u, k = binary.Uvarint(src)
			}
			if k <= 0 {
				return nil, ErrCorrupt
			}
			storeInt(p, size, u)
			return src[k:], nil
		}}
	if size == 8 {
		c.flat = []flatField{{0, signed}}
	}
	return c
}

// floatCodec: Key and Value floats are big-endian and ordered (negative
// numbers with all bits inverted, positive ones with the sign bit set),
// with -0 as +0 (equal keys); Compact ones are their little-endian bits.
func floatCodec(t reflect.Type, f Flavor) *Codec {
	n := int(t.Size())
	c := &Codec{Type: t, Fixed: n, Sig: kindSig(t, f)}
	switch {
	case f == Compact && n == 4:
		c.enc = func(dst []byte, p unsafe.Pointer) []byte { return binary.LittleEndian.AppendUint32(dst, *(*uint32)(p)) }
		c.dec = func(src []byte, p unsafe.Pointer) ([]byte, error) {
			if len(src) < 4 {
				return nil, ErrCorrupt
			}
			*(*uint32)(p) = binary.LittleEndian.Uint32(src)
			return src[4:], nil
		}
	case f == Compact:
		c.enc = func(dst []byte, p unsafe.Pointer) []byte { return binary.LittleEndian.AppendUint64(dst, *(*uint64)(p)) }
		c.dec = func(src []byte, p unsafe.Pointer) ([]byte, error) {
			if len(src) < 8 {
				return nil, ErrCorrupt
			}
			*(*uint64)(p) = binary.LittleEndian.Uint64(src)
			return src[8:], nil
		}
	case n == 4:
		c.enc = func(dst []byte, p unsafe.Pointer) []byte {
			v := *(*float32)(p)
			if v == 0 {
				v = 0 // +0 and -0 are equal keys
			}
			return binary.BigEndian.AppendUint32(dst, orderFloat(math.Float32bits(v)))
		}
		c.dec = func(src []byte, p unsafe.Pointer) ([]byte, error) {
			if len(src) < 4 {
				return nil, ErrCorrupt
			}
			*(*float32)(p) = math.Float32frombits(unorderFloat(binary.BigEndian.Uint32(src)))
			return src[4:], nil
		}
	default:
		c.enc = func(dst []byte, p unsafe.Pointer) []byte {
			v := *(*float64)(p)
			if v == 0 {
				v = 0
			}
			return binary.BigEndian.AppendUint64(dst, orderFloat(math.Float64bits(v)))
		}
		c.dec = func(src []byte, p unsafe.Pointer) ([]byte, error) {
			if len(src) < 8 {
				return nil, ErrCorrupt
			}
			*(*float64)(p) = math.Float64frombits(unorderFloat(binary.BigEndian.Uint64(src)))
			return src[8:], nil
		}
	}
	return c
}

// orderFloat maps the bits of an IEEE 754 float to an unsigned integer of
// the same order as the float: negative numbers have all bits inverted,
// positive ones the sign bit set. unorderFloat is its inverse.
func orderFloat[U uint32 | uint64](b U) U {
	sign := U(1) << (8*unsafe.Sizeof(b) - 1)
	if b&sign != 0 {
		return ^b
	}
	return b | sign
}

func unorderFloat[U uint32 | uint64](b U) U {
	sign := U(1) << (8*unsafe.Sizeof(b) - 1)
	if b&sign != 0 {
		return b &^ sign
	}
	return ^b
}

// complexCodec is a Value complex number: its two halves as floats.
func complexCodec(t reflect.Type) *Codec {
	half := reflect.TypeFor[float32]()
	if t.Kind() == reflect.Complex128 {
		half = reflect.TypeFor[float64]()
	}
	f := floatCodec(half, Value)
	off := half.Size()
	return &Codec{Type: t, Fixed: 2 * f.Fixed, Sig: kindSig(t, Value),
		enc: func(dst []byte, p unsafe.Pointer) []byte { return f.enc(f.enc(dst, p), unsafe.Add(p, off)) },
		dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
			src, err := f.dec(src, p)
			if err != nil {
				return nil, err
			}
			return f.dec(src, unsafe.Add(p, off))
		}}
}

// stringCodec: a Key string is its length (4 bytes, big-endian) and its
// bytes; a Value or Compact one its uvarint length and its bytes.
func stringCodec(t reflect.Type, f Flavor) *Codec {
	if f == Key {
		return &Codec{Type: t, Fixed: -1, Sig: kindSig(t, f),
			enc: func(dst []byte, p unsafe.Pointer) []byte {
				s := *(*string)(p)
				return append(binary.BigEndian.AppendUint32(dst, uint32(len(s))), s...)
			},
			dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
				if len(src) < 4 {
					return nil, ErrCorrupt
				}
				n := binary.BigEndian.Uint32(src)
				if uint64(len(src)-4) < uint64(n) {
					return nil, ErrCorrupt
				}
				*(*string)(p) = string(src[4 : 4+n])
				return src[4+n:], nil
			}}
	}
	return &Codec{Type: t, Fixed: -1, Sig: kindSig(t, f),
		enc: func(dst []byte, p unsafe.Pointer) []byte {
			s := *(*string)(p)
			return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
		},
		dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
			b, rest, err := ReadBytes(src)
			if err != nil {
				return nil, err
			}
			*(*string)(p) = string(b)
			return rest, nil
		}}
}

// array is its elements in order.
func (b *builder) array(t reflect.Type) (*Codec, error) {
	n, size := t.Len(), t.Elem().Size()
	if n == 0 && b.f == Compact {
		return nil, fmt.Errorf("type %s is empty", t)
	}
	e, err := b.build(t.Elem())
	if err != nil {
		return nil, err
	}
	fixed := -1
	if e.Fixed >= 0 {
		fixed = n * e.Fixed
	}
	return &Codec{Type: t, Fixed: fixed, Sig: "[" + strconv.Itoa(n) + "]" + e.Sig,
		enc: func(dst []byte, p unsafe.Pointer) []byte {
			for i := range n {
				dst = e.enc(dst, unsafe.Add(p, uintptr(i)*size))
			}
			return dst
		},
		dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
			var err error
			for i := range n {
				if src, err = e.dec(src, unsafe.Add(p, uintptr(i)*size)); err != nil {
					return nil, err
				}
			}
			return src, nil
		}}, nil
}

// structure is its fields in order. Key and Value take every field but
// "_", exported or not; Compact takes exported fields only (gob must be
// able to convert them) and names them in its signature.
func (b *builder) structure(t reflect.Type) (*Codec, error) {
	if b.f == Compact && t.NumField() == 0 {
		return nil, fmt.Errorf("type %s is empty", t)
	}
	b.inProgress[t] = true
	defer delete(b.inProgress, t)
	type field struct {
		off uintptr
		c   *Codec
	}
	var fs []field
	var sig strings.Builder
	sig.WriteString("{")
	fixed := 0
	for i := range t.NumField() {
		f := t.Field(i)
		if b.f == Compact && (!f.IsExported() || f.Name == "_") {
			return nil, fmt.Errorf("type %s: field %s is not exported", t, f.Name)
		}
		if f.Name == "_" {
			continue
		}
		c, err := b.build(f.Type)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		if len(fs) > 0 {
			sig.WriteString(",")
		}
		if b.f == Compact {
			sig.WriteString(f.Name + ":")
		}
		sig.WriteString(c.Sig)
		fs = append(fs, field{f.Offset, c})
		if fixed >= 0 && c.Fixed >= 0 {
			fixed += c.Fixed
		} else {
			fixed = -1
		}
	}
	sig.WriteString("}")
	c := &Codec{Type: t, Fixed: fixed, Sig: sig.String(),
		enc: func(dst []byte, p unsafe.Pointer) []byte {
			for _, f := range fs {
				dst = f.c.enc(dst, unsafe.Add(p, f.off))
			}
			return dst
		},
		dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
			var err error
			for _, f := range fs {
				if src, err = f.c.dec(src, unsafe.Add(p, f.off)); err != nil {
					return nil, err
				}
			}
			return src, nil
		}}
	if b.f == Compact {
		c.flat = nil
		for _, f := range fs {
			if f.c.flat == nil {
				return c, nil
			}
		}
		for _, f := range fs {
			for _, ff := range f.c.flat {
				c.flat = append(c.flat, flatField{ff.off + f.off, ff.signed})
			}
		}
		c.enc, c.dec = c.flatEnc, c.flatDec
	}
	return c, nil
}

// slice is its length (uvarint) and its elements. A Value []byte and a
// Compact slice of bytes are copied whole.
func (b *builder) slice(t reflect.Type) (*Codec, error) {
	ek := t.Elem().Kind()
	if b.f == Value && ek == reflect.Uint8 && t.Elem().Name() == "uint8" || b.f == Compact && ek == reflect.Uint8 {
		sig := "bytes"
		if b.f == Compact {
			sig = "[]u8"
		}
		return &Codec{Type: t, Fixed: -1, Sig: sig,
			enc: func(dst []byte, p unsafe.Pointer) []byte {
				return AppendBytes(dst, *(*[]byte)(p))
			},
			dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
				b, rest, err := ReadBytes(src)
				if err != nil {
					return nil, err
				}
				if len(b) == 0 {
					*(*[]byte)(p) = nil
				} else {
					*(*[]byte)(p) = slices.Clone(b)
				}
				return rest, nil
			}}, nil
	}
	b.inProgress[t] = true
	defer delete(b.inProgress, t)
	e, err := b.build(t.Elem())
	if err != nil {
		return nil, err
	}
	size := t.Elem().Size()
	return &Codec{Type: t, Fixed: -1, Sig: "[]" + e.Sig,
		enc: func(dst []byte, p unsafe.Pointer) []byte {
			n := sliceLen(p)
			dst = binary.AppendUvarint(dst, uint64(n))
			base := *(*unsafe.Pointer)(p)
			for i := range n {
				dst = e.enc(dst, unsafe.Add(base, uintptr(i)*size))
			}
			return dst
		},
		dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
			n, k := binary.Uvarint(src)
			// Every element takes a byte at least, unless its encoding is
			// empty: a corrupt length cannot make a huge slice.
			if k <= 0 || (e.Fixed != 0 && n > uint64(len(src)-k)) || n > math.MaxInt32 {
				return nil, ErrCorrupt
			}
			src = src[k:]
			v := reflect.NewAt(t, p).Elem()
			if n == 0 {
				v.SetZero()
				return src, nil
			}
			s := reflect.MakeSlice(t, int(n), int(n))
			if e.Fixed != 0 { // elements of size 0 have nothing to decode
				base := s.UnsafePointer()
				var err error
				for i := range int(n) {
					if src, err = e.dec(src, unsafe.Add(base, uintptr(i)*size)); err != nil {
						return nil, err
					}
				}
			}
			v.Set(s)
			return src, nil
		}}, nil
}

// mapping is a Value map: 0 if nil, else 1+its length (uvarint), then its
// entries, key and value, in the map's order.
func (b *builder) mapping(t reflect.Type) (*Codec, error) {
	b.inProgress[t] = true
	defer delete(b.inProgress, t)
	kc, err := b.build(t.Key())
	if err != nil {
		return nil, err
	}
	vc, err := b.build(t.Elem())
	if err != nil {
		return nil, err
	}
	return &Codec{Type: t, Fixed: -1, Sig: "map[" + kc.Sig + "]" + vc.Sig,
		enc: func(dst []byte, p unsafe.Pointer) []byte {
			m := reflect.NewAt(t, p).Elem()
			if m.IsNil() {
				return append(dst, 0)
			}
			dst = binary.AppendUvarint(dst, uint64(m.Len())+1)
			kp, vp := reflect.New(t.Key()), reflect.New(t.Elem())
			for it := m.MapRange(); it.Next(); {
				kp.Elem().Set(it.Key())
				vp.Elem().Set(it.Value())
				dst = kc.enc(dst, kp.UnsafePointer())
				dst = vc.enc(dst, vp.UnsafePointer())
			}
			return dst
		},
		dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
			n, k := binary.Uvarint(src)
			if k <= 0 || n > uint64(len(src))+1 {
				return nil, ErrCorrupt
			}
			src = src[k:]
			m := reflect.NewAt(t, p).Elem()
			if n == 0 {
				m.SetZero()
				return src, nil
			}
			n--
			mv := reflect.MakeMapWithSize(t, int(n))
			var err error
			for range n {
				kp, vp := reflect.New(t.Key()), reflect.New(t.Elem())
				if src, err = kc.dec(src, kp.UnsafePointer()); err != nil {
					return nil, err
				}
				if src, err = vc.dec(src, vp.UnsafePointer()); err != nil {
					return nil, err
				}
				mv.SetMapIndex(kp.Elem(), vp.Elem())
			}
			m.Set(mv)
			return src, nil
		}}, nil
}

// pointer is a Value pointer: 0 if nil, else 1 and what it points to.
func (b *builder) pointer(t reflect.Type) (*Codec, error) {
	b.inProgress[t] = true
	defer delete(b.inProgress, t)
	e, err := b.build(t.Elem())
	if err != nil {
		return nil, err
	}
	return &Codec{Type: t, Fixed: -1, Sig: "*" + e.Sig,
		enc: func(dst []byte, p unsafe.Pointer) []byte {
			q := *(*unsafe.Pointer)(p)
			if q == nil {
				return append(dst, 0)
			}
			return e.enc(append(dst, 1), q)
		},
		dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
			if len(src) < 1 || src[0] > 1 {
				return nil, ErrCorrupt
			}
			if src[0] == 0 {
				*(*unsafe.Pointer)(p) = nil
				return src[1:], nil
			}
			q := reflect.New(t.Elem())
			rest, err := e.dec(src[1:], q.UnsafePointer())
			if err != nil {
				return nil, err
			}
			*(*unsafe.Pointer)(p) = q.UnsafePointer()
			return rest, nil
		}}, nil
}

// marshalerCodec encodes a Value BinaryMarshaler: the length of its bytes,
// then its bytes. A type whose pointer is also an encoding.BinaryAppender with the same
// bytes (sql's Row) appends them in place: no allocation per value.
func marshalerCodec(t reflect.Type) *Codec {
	enc := func(dst []byte, p unsafe.Pointer) []byte {
		b, err := reflect.NewAt(t, p).Elem().Interface().(encoding.BinaryMarshaler).MarshalBinary()
		if err != nil {
			panic(fmt.Sprintf("codec: MarshalBinary of %s: %v", t, err))
		}
		return AppendBytes(dst, b)
	}
	if reflect.PointerTo(t).Implements(binAppender) {
		enc = func(dst []byte, p unsafe.Pointer) []byte {
			// the bytes, then their length moved in front of them
			start := len(dst)
			dst, err := reflect.NewAt(t, p).Interface().(encoding.BinaryAppender).AppendBinary(dst)
			if err != nil {
				panic(fmt.Sprintf("codec: AppendBinary of %s: %v", t, err))
			}
			n := len(dst) - start
			var lb [binary.MaxVarintLen64]byte
			k := binary.PutUvarint(lb[:], uint64(n))
			dst = append(dst, lb[:k]...)
			copy(dst[start+k:], dst[start:start+n])
			copy(dst[start:], lb[:k])
			return dst
		}
	}
	return &Codec{Type: t, Fixed: -1, Sig: "bin",
		enc: enc,
		dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
			b, rest, err := ReadBytes(src)
			if err != nil {
				return nil, err
			}
			u := reflect.NewAt(t, p).Interface().(encoding.BinaryUnmarshaler)
			if err := u.UnmarshalBinary(b); err != nil {
				return nil, fmt.Errorf("codec: UnmarshalBinary of %s: %w", t, err)
			}
			return rest, nil
		}}
}

// flatField is an 8-byte integer at an offset: Compact entries made of
// these only (aligned windows with integer keys and accumulators) encode
// and decode in a loop over their fields, the same bytes as the general
// path's.
type flatField struct {
	off    uintptr
	signed bool
}

func (c *Codec) flatEnc(dst []byte, p unsafe.Pointer) []byte {
	need := len(c.flat) * binary.MaxVarintLen64
	dst = slices.Grow(dst, need)
	n := len(dst)
	w := dst[n : n+need]
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
	return dst[:n+i]
}

func (c *Codec) flatDec(src []byte, p unsafe.Pointer) ([]byte, error) {
	for _, f := range c.flat {
		v, k := binary.Uvarint(src)
		if k <= 0 {
			return nil, ErrCorrupt
		}
		if f.signed {
			v = uint64(int64(v>>1) ^ -int64(v&1)) // zigzag, as binary.Varint
		}
		*(*uint64)(unsafe.Add(p, f.off)) = v
		src = src[k:]
	}
	return src, nil
}

// sliceLen is the length of the slice at p, of any element type: a slice
// is a pointer, a length and a capacity.
func sliceLen(p unsafe.Pointer) int { return *(*int)(unsafe.Add(p, unsafe.Sizeof(uintptr(0)))) }

// Flat reports whether c encodes and decodes in one loop over 8-byte
// integer fields (a Compact struct of int64 and uint64 only).
func (c *Codec) Flat() bool { return c.flat != nil }

// Of is a codec bound to its type.
type Of[T any] struct{ C *Codec }

// OfType returns the codec of T in flavour f (cached).
func OfType[T any](f Flavor) (Of[T], error) {
	c, err := For(reflect.TypeFor[T](), f)
	return Of[T]{c}, err
}

// Append appends the encoding of v to dst.
func (c Of[T]) Append(dst []byte, v *T) []byte { return c.C.enc(dst, unsafe.Pointer(v)) }

// Read decodes a value from the start of src into v and returns the rest.
func (c Of[T]) Read(src []byte, v *T) ([]byte, error) { return c.C.dec(src, unsafe.Pointer(v)) }
