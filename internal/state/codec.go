package state

import (
	"github.com/weirstream/weir/internal/codec"
)

// Keys, namespaces and map keys are encoded by internal/codec's Key
// flavour (canonical, order-preserving: a sorted KV iterates numbers in
// order), values by its Value flavour; a codec is built once per type.

var errShort = codec.ErrCorrupt

// typed is a codec bound to its type.
type typed[T any] struct{ codec.Of[T] }

func keyCodecOf[T any]() (typed[T], error) {
	c, err := codec.OfType[T](codec.Key)
	return typed[T]{c}, err
}

func valueCodecOf[T any]() (typed[T], error) {
	c, err := codec.OfType[T](codec.Value)
	return typed[T]{c}, err
}

// sig is the codec's layout signature.
func (c typed[T]) sig() string { return c.C.Sig }

func (c typed[T]) append(dst []byte, v *T) []byte        { return c.Append(dst, v) }
func (c typed[T]) read(src []byte, v *T) ([]byte, error) { return c.Read(src, v) }
func readBytes(src []byte) (b, rest []byte, err error)   { return codec.ReadBytes(src) }
