package codec

import (
	"encoding/binary"
	"errors"
)

// ErrCorrupt is the error of an encoding that is truncated or malformed.
var ErrCorrupt = errors.New("codec: truncated or corrupt encoding")

// ReadBytes reads a uvarint length and that many bytes from src; the
// length is checked against what src holds.
func ReadBytes(src []byte) (b, rest []byte, err error) {
	n, k := binary.Uvarint(src)
	if k <= 0 || uint64(len(src)-k) < n {
		return nil, nil, ErrCorrupt
	}
	return src[k : k+int(n)], src[k+int(n):], nil
}

// AppendBytes appends b with its uvarint length, as ReadBytes reads it.
func AppendBytes(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

// Reader reads the parts of an encoding one after the other. Its error is
// sticky: after the first failure every read returns zero, so a decoder
// reads on and checks Err once.
type Reader struct {
	b   []byte
	err error
}

// NewReader reads b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Reset makes r read b, with no error.
func (r *Reader) Reset(b []byte) { r.b, r.err = b, nil }

// Fail marks the encoding corrupt (a check of the caller's failed): every
// later read returns zero.
func (r *Reader) Fail() { r.fail() }

// Err is the first failure, or nil.
func (r *Reader) Err() error { return r.err }

// Len is the number of bytes left.
func (r *Reader) Len() int { return len(r.b) }

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	v, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[k:]
	return v
}

// Varint reads a signed (zigzag) varint.
func (r *Reader) Varint() int64 {
	v, k := binary.Varint(r.b)
	if k <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[k:]
	return v
}

// Bytes reads n bytes; they alias the input.
func (r *Reader) Bytes(n uint64) []byte {
	if uint64(len(r.b)) < n {
		r.fail()
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// Count reads a count of items that take min bytes each at least (min >=
// 1), and fails rather than return one the rest of the input cannot hold:
// a corrupt count cannot make a decoder allocate.
func (r *Reader) Count(min int) int {
	n := r.Uvarint()
	if r.err == nil && n > uint64(len(r.b)/min) {
		r.fail()
		return 0
	}
	return int(n)
}

func (r *Reader) fail() {
	if r.err == nil {
		r.err = ErrCorrupt
	}
	r.b = nil
}
