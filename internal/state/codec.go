package state

import (
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"unsafe"
)

// codec encodes values of one Go type to bytes and back: the serialization
// of snapshots and of serializing backends. It is built once per type by
// reflection and works on unsafe pointers, so that encoding a number or a
// struct of numbers is a few stores, and fields need not be exported.
//
// Every encoding is prefix-free (self-delimiting): encodings can be
// concatenated and read back one after the other, and a key made of
// several encoded parts never is a prefix of another.
//
// Key codecs (for stream keys, namespaces and map keys, the types with a
// stable hash: booleans, numbers, strings, arrays and structs of them) are
// canonical, equal values encode to equal bytes, and use fixed-width
// big-endian integers (signed ones with the sign bit flipped) and
// order-preserving floats, so that a sorted store iterates numbers in
// order; a string is its length (4 bytes, big-endian) and its bytes.
//
// Value codecs take any type without interfaces, channels or functions:
// slices, maps and pointers too. A type implementing
// encoding.BinaryMarshaler (with BinaryUnmarshaler on its pointer), such as
// time.Time, is encoded by those methods.
type codec struct {
	t   reflect.Type
	enc func(dst []byte, p unsafe.Pointer) []byte
	dec func(src []byte, p unsafe.Pointer) ([]byte, error)
	// sig describes the encoding's layout, not the type's names: a restore
	// checks it to refuse state written with another layout.
	sig string
	// fixed is the size of every encoding, or -1 when it varies.
	fixed int
}

var errShort = errors.New("state: truncated encoding")

// newKeyCodec returns the canonical codec of a key type.
func newKeyCodec(t reflect.Type) (*codec, error) {
	return buildCodec(t, true, map[reflect.Type]bool{})
}

// newValueCodec returns the codec of a value type.
func newValueCodec(t reflect.Type) (*codec, error) {
	return buildCodec(t, false, map[reflect.Type]bool{})
}

var (
	binMarshaler   = reflect.TypeFor[encoding.BinaryMarshaler]()
	binUnmarshaler = reflect.TypeFor[encoding.BinaryUnmarshaler]()
)

func buildCodec(t reflect.Type, key bool, inProgress map[reflect.Type]bool) (*codec, error) {
	if !key && t.Implements(binMarshaler) && reflect.PointerTo(t).Implements(binUnmarshaler) && t.Kind() != reflect.Pointer {
		return marshalerCodec(t), nil
	}
	if inProgress[t] {
		return nil, fmt.Errorf("type %s is recursive (implement encoding.BinaryMarshaler to store it)", t)
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int8, reflect.Uint8:
		signed := t.Kind() == reflect.Int8
		return &codec{t: t, fixed: 1, sig: kindSig(t),
			enc: func(dst []byte, p unsafe.Pointer) []byte {
				b := *(*uint8)(p)
				if signed {
					b ^= 0x80
				}
				return append(dst, b)
			},
			dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
				if len(src) < 1 {
					return nil, errShort
				}
				b := src[0]
				if signed {
					b ^= 0x80
				}
				if t.Kind() == reflect.Bool && b > 1 {
					return nil, fmt.Errorf("state: bad boolean %d", b)
				}
				*(*uint8)(p) = b
				return src[1:], nil
			}}, nil
	case reflect.Int16, reflect.Uint16:
		flip := uint16(0)
		if t.Kind() == reflect.Int16 {
			flip = 1 << 15
		}
		return &codec{t: t, fixed: 2, sig: kindSig(t),
			enc: func(dst []byte, p unsafe.Pointer) []byte {
				return binary.BigEndian.AppendUint16(dst, *(*uint16)(p)^flip)
			},
			dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
				if len(src) < 2 {
					return nil, errShort
				}
				*(*uint16)(p) = binary.BigEndian.Uint16(src) ^ flip
				return src[2:], nil
			}}, nil
	case reflect.Int32, reflect.Uint32:
		flip := uint32(0)
		if t.Kind() == reflect.Int32 {
			flip = 1 << 31
		}
		return &codec{t: t, fixed: 4, sig: kindSig(t),
			enc: func(dst []byte, p unsafe.Pointer) []byte {
				return binary.BigEndian.AppendUint32(dst, *(*uint32)(p)^flip)
			},
			dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
				if len(src) < 4 {
					return nil, errShort
				}
				*(*uint32)(p) = binary.BigEndian.Uint32(src) ^ flip
				return src[4:], nil
			}}, nil
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Uintptr:
		// int, uint and uintptr are 8 bytes whatever the platform, so that
		// the encoding does not depend on it.
		k := t.Kind()
		signed := k == reflect.Int || k == reflect.Int64
		size := t.Size()
		return &codec{t: t, fixed: 8, sig: kindSig(t),
			enc: func(dst []byte, p unsafe.Pointer) []byte {
				var u uint64
				switch {
				case size == 4 && signed:
					u = uint64(int64(*(*int32)(p)))
				case size == 4:
					u = uint64(*(*uint32)(p))
				default:
					u = *(*uint64)(p)
				}
				if signed {
					u ^= 1 << 63
				}
				return binary.BigEndian.AppendUint64(dst, u)
			},
			dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
				if len(src) < 8 {
					return nil, errShort
				}
				u := binary.BigEndian.Uint64(src)
				if signed {
					u ^= 1 << 63
				}
				switch {
				case size == 4 && signed:
					*(*int32)(p) = int32(int64(u))
				case size == 4:
					*(*uint32)(p) = uint32(u)
				default:
					*(*uint64)(p) = u
				}
				return src[8:], nil
			}}, nil
	case reflect.Float32:
		return &codec{t: t, fixed: 4, sig: kindSig(t),
			enc: func(dst []byte, p unsafe.Pointer) []byte {
				f := *(*float32)(p)
				if f == 0 {
					f = 0 // +0 and -0 are equal keys
				}
				return binary.BigEndian.AppendUint32(dst, orderFloat(math.Float32bits(f)))
			},
			dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
				if len(src) < 4 {
					return nil, errShort
				}
				*(*float32)(p) = math.Float32frombits(unorderFloat(binary.BigEndian.Uint32(src)))
				return src[4:], nil
			}}, nil
	case reflect.Float64:
		return &codec{t: t, fixed: 8, sig: kindSig(t),
			enc: func(dst []byte, p unsafe.Pointer) []byte {
				f := *(*float64)(p)
				if f == 0 {
					f = 0
				}
				return binary.BigEndian.AppendUint64(dst, orderFloat(math.Float64bits(f)))
			},
			dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
				if len(src) < 8 {
					return nil, errShort
				}
				*(*float64)(p) = math.Float64frombits(unorderFloat(binary.BigEndian.Uint64(src)))
				return src[8:], nil
			}}, nil
	case reflect.Complex64, reflect.Complex128:
		if key {
			break
		}
		half := reflect.TypeFor[float32]()
		if t.Kind() == reflect.Complex128 {
			half = reflect.TypeFor[float64]()
		}
		f, _ := buildCodec(half, false, inProgress)
		off := half.Size()
		return &codec{t: t, fixed: 2 * f.fixed, sig: kindSig(t),
			enc: func(dst []byte, p unsafe.Pointer) []byte {
				return f.enc(f.enc(dst, p), unsafe.Add(p, off))
			},
			dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
				src, err := f.dec(src, p)
				if err != nil {
					return nil, err
				}
				return f.dec(src, unsafe.Add(p, off))
			}}, nil
	case reflect.String:
		if key {
			return &codec{t: t, fixed: -1, sig: "str",
				enc: func(dst []byte, p unsafe.Pointer) []byte {
					s := *(*string)(p)
					return append(binary.BigEndian.AppendUint32(dst, uint32(len(s))), s...)
				},
				dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
					if len(src) < 4 {
						return nil, errShort
					}
					n := binary.BigEndian.Uint32(src)
					if uint64(len(src)-4) < uint64(n) {
						return nil, errShort
					}
					*(*string)(p) = string(src[4 : 4+n])
					return src[4+n:], nil
				}}, nil
		}
		return &codec{t: t, fixed: -1, sig: "str",
			enc: func(dst []byte, p unsafe.Pointer) []byte {
				s := *(*string)(p)
				return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
			},
			dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
				b, rest, err := readBytes(src)
				if err != nil {
					return nil, err
				}
				*(*string)(p) = string(b)
				return rest, nil
			}}, nil
	case reflect.Array:
		e, err := buildCodec(t.Elem(), key, inProgress)
		if err != nil {
			return nil, err
		}
		n, size := t.Len(), t.Elem().Size()
		fixed := -1
		if e.fixed >= 0 {
			fixed = n * e.fixed
		}
		return &codec{t: t, fixed: fixed, sig: fmt.Sprintf("[%d]%s", n, e.sig),
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
	case reflect.Struct:
		inProgress[t] = true
		defer delete(inProgress, t)
		type field struct {
			off uintptr
			c   *codec
		}
		var fs []field
		var sig strings.Builder
		sig.WriteString("{")
		fixed := 0
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Name == "_" {
				continue
			}
			c, err := buildCodec(f.Type, key, inProgress)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			if len(fs) > 0 {
				sig.WriteString(",")
			}
			sig.WriteString(c.sig)
			fs = append(fs, field{f.Offset, c})
			if fixed >= 0 && c.fixed >= 0 {
				fixed += c.fixed
			} else {
				fixed = -1
			}
		}
		sig.WriteString("}")
		return &codec{t: t, fixed: fixed, sig: sig.String(),
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
			}}, nil
	case reflect.Slice:
		if key {
			break
		}
		if t.Elem().Kind() == reflect.Uint8 && t.Elem().Name() == "uint8" {
			return &codec{t: t, fixed: -1, sig: "bytes",
				enc: func(dst []byte, p unsafe.Pointer) []byte {
					b := *(*[]byte)(p)
					return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
				},
				dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
					b, rest, err := readBytes(src)
					if err != nil {
						return nil, err
					}
					*(*[]byte)(p) = append([]byte(nil), b...)
					return rest, nil
				}}, nil
		}
		inProgress[t] = true
		defer delete(inProgress, t)
		e, err := buildCodec(t.Elem(), false, inProgress)
		if err != nil {
			return nil, err
		}
		size := t.Elem().Size()
		return &codec{t: t, fixed: -1, sig: "[]" + e.sig,
			enc: func(dst []byte, p unsafe.Pointer) []byte {
				v := reflect.NewAt(t, p).Elem()
				n := v.Len()
				dst = binary.AppendUvarint(dst, uint64(n))
				if n == 0 {
					return dst
				}
				base := v.UnsafePointer()
				for i := range n {
					dst = e.enc(dst, unsafe.Add(base, uintptr(i)*size))
				}
				return dst
			},
			dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
				n, k := binary.Uvarint(src)
				// Every element takes a byte at least, unless its encoding
				// is empty: a corrupt length cannot make a huge slice.
				if k <= 0 || (e.fixed != 0 && n > uint64(len(src))) || n > math.MaxInt32 {
					return nil, errShort
				}
				src = src[k:]
				v := reflect.NewAt(t, p).Elem()
				if n == 0 {
					v.SetZero()
					return src, nil
				}
				s := reflect.MakeSlice(t, int(n), int(n))
				base := s.UnsafePointer()
				var err error
				for i := range int(n) {
					if src, err = e.dec(src, unsafe.Add(base, uintptr(i)*size)); err != nil {
						return nil, err
					}
				}
				v.Set(s)
				return src, nil
			}}, nil
	case reflect.Map:
		if key {
			break
		}
		inProgress[t] = true
		defer delete(inProgress, t)
		kc, err := buildCodec(t.Key(), false, inProgress)
		if err != nil {
			return nil, err
		}
		vc, err := buildCodec(t.Elem(), false, inProgress)
		if err != nil {
			return nil, err
		}
		return &codec{t: t, fixed: -1, sig: "map[" + kc.sig + "]" + vc.sig,
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
					return nil, errShort
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
	case reflect.Pointer:
		if key {
			break
		}
		inProgress[t] = true
		defer delete(inProgress, t)
		e, err := buildCodec(t.Elem(), false, inProgress)
		if err != nil {
			return nil, err
		}
		return &codec{t: t, fixed: -1, sig: "*" + e.sig,
			enc: func(dst []byte, p unsafe.Pointer) []byte {
				q := *(*unsafe.Pointer)(p)
				if q == nil {
					return append(dst, 0)
				}
				return e.enc(append(dst, 1), q)
			},
			dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
				if len(src) < 1 {
					return nil, errShort
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
	if key {
		return nil, fmt.Errorf("type %s cannot be encoded canonically (use strings, numbers, arrays or structs of them)", t)
	}
	return nil, fmt.Errorf("type %s cannot be stored (interfaces, channels and functions cannot; implement encoding.BinaryMarshaler)", t)
}

// marshalerCodec encodes a BinaryMarshaler: the length of its bytes, then
// its bytes.
func marshalerCodec(t reflect.Type) *codec {
	return &codec{t: t, fixed: -1, sig: "bin",
		enc: func(dst []byte, p unsafe.Pointer) []byte {
			b, err := reflect.NewAt(t, p).Elem().Interface().(encoding.BinaryMarshaler).MarshalBinary()
			if err != nil {
				panic(fmt.Sprintf("state: MarshalBinary of %s: %v", t, err))
			}
			return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
		},
		dec: func(src []byte, p unsafe.Pointer) ([]byte, error) {
			b, rest, err := readBytes(src)
			if err != nil {
				return nil, err
			}
			u := reflect.NewAt(t, p).Interface().(encoding.BinaryUnmarshaler)
			if err := u.UnmarshalBinary(b); err != nil {
				return nil, fmt.Errorf("state: UnmarshalBinary of %s: %w", t, err)
			}
			return rest, nil
		}}
}

// kindSig names a basic kind in a signature: int, uint and uintptr encode
// as 8-byte integers and share a name with int64 and uint64.
func kindSig(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "i64"
	case reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return "u64"
	}
	return t.Kind().String()
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

// readBytes reads a uvarint length and that many bytes.
func readBytes(src []byte) (b, rest []byte, err error) {
	n, k := binary.Uvarint(src)
	if k <= 0 || uint64(len(src)-k) < n {
		return nil, nil, errShort
	}
	return src[k : k+int(n)], src[k+int(n):], nil
}

// typed is a codec bound to its type.
type typed[T any] struct{ c *codec }

func keyCodecOf[T any]() (typed[T], error) {
	c, err := newKeyCodec(reflect.TypeFor[T]())
	return typed[T]{c}, err
}

func valueCodecOf[T any]() (typed[T], error) {
	c, err := newValueCodec(reflect.TypeFor[T]())
	return typed[T]{c}, err
}

// append appends the encoding of v to dst.
func (c typed[T]) append(dst []byte, v *T) []byte { return c.c.enc(dst, unsafe.Pointer(v)) }

// read decodes a value from the start of src into v and returns the rest.
func (c typed[T]) read(src []byte, v *T) ([]byte, error) { return c.c.dec(src, unsafe.Pointer(v)) }
