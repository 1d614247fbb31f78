package codec

import (
	"reflect"
	"unsafe"
)

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
