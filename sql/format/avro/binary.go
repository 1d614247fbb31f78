package avro

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// reader reads Avro's binary encoding from one record's bytes.
type reader struct {
	b []byte
	i int
	// str is the record copied once into a string when it is small, so
	// that its string fields are substrings of one allocation rather
	// than one allocation each (a row then keeps the record alive, which
	// for small records costs less than the allocations it saves).
	str string
	// window: b holds many records (an object-container file's block), so
	// str is a window of at most strCopyMax bytes of b from strBase, copied
	// when a string falls outside the current one: the records of a block
	// share a copy per strCopyMax bytes, and a row keeps at most such a
	// window alive per string (not the block).
	window  bool
	strBase int
}

// strCopyMax is the largest record whose string fields share one copy.
const strCopyMax = 2048

// errTruncated is the cause of a DecodeError for a record that ends in
// the middle of a value.
var errTruncated = errors.New("truncated record")

func (r *reader) errorf(f string, args ...any) error {
	return &DecodeError{Offset: r.i, Err: fmt.Errorf(f, args...)}
}

func (r *reader) truncated() error { return &DecodeError{Offset: r.i, Err: errTruncated} }

// long reads a zig-zag varint (Avro's int and long).
func (r *reader) long() (int64, error) {
	var u uint64
	var s uint
	for j := r.i; j < len(r.b); j++ {
		c := r.b[j]
		if s == 63 && c > 1 {
			r.i = j
			return 0, r.errorf("varint overflows a long")
		}
		u |= uint64(c&0x7f) << s
		if c < 0x80 {
			r.i = j + 1
			return int64(u>>1) ^ -int64(u&1), nil
		}
		s += 7
	}
	r.i = len(r.b)
	return 0, r.truncated()
}

// int reads a long that must fit Avro's int.
func (r *reader) int() (int64, error) {
	start := r.i
	v, err := r.long()
	if err == nil && (v < math.MinInt32 || v > math.MaxInt32) {
		r.i = start
		return 0, r.errorf("int %d out of range", v)
	}
	return v, err
}

func (r *reader) bool() (bool, error) {
	if r.i >= len(r.b) {
		return false, r.truncated()
	}
	c := r.b[r.i]
	if c > 1 {
		return false, r.errorf("boolean byte 0x%02x", c)
	}
	r.i++
	return c == 1, nil
}

func (r *reader) float() (float32, error) {
	if len(r.b)-r.i < 4 {
		r.i = len(r.b)
		return 0, r.truncated()
	}
	v := math.Float32frombits(binary.LittleEndian.Uint32(r.b[r.i:]))
	r.i += 4
	return v, nil
}

func (r *reader) double() (float64, error) {
	if len(r.b)-r.i < 8 {
		r.i = len(r.b)
		return 0, r.truncated()
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b[r.i:]))
	r.i += 8
	return v, nil
}

// bytes reads a length-prefixed byte string; the slice aliases the record.
func (r *reader) bytes() ([]byte, error) {
	start := r.i
	n, err := r.long()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		r.i = start
		return nil, r.errorf("negative length %d", n)
	}
	if int64(len(r.b)-r.i) < n {
		r.i = len(r.b)
		return nil, r.truncated()
	}
	b := r.b[r.i : r.i+int(n)]
	r.i += int(n)
	return b, nil
}

// string reads a length-prefixed string as a Go string.
func (r *reader) string() (string, error) {
	start := r.i
	n, err := r.long()
	if err != nil {
		return "", err
	}
	if n < 0 {
		r.i = start
		return "", r.errorf("negative length %d", n)
	}
	if int64(len(r.b)-r.i) < n {
		r.i = len(r.b)
		return "", r.truncated()
	}
	from, to := r.i, r.i+int(n)
	r.i = to
	if n == 0 {
		return "", nil
	}
	if r.window {
		if n > strCopyMax {
			return string(r.b[from:to]), nil
		}
		if r.str == "" || from < r.strBase || to > r.strBase+len(r.str) {
			r.str, r.strBase = string(r.b[from:min(len(r.b), from+strCopyMax)]), from
		}
		return r.str[from-r.strBase : to-r.strBase], nil
	}
	if len(r.b) <= strCopyMax {
		if r.str == "" {
			r.str = string(r.b)
		}
		return r.str[from:to], nil
	}
	return string(r.b[from:to]), nil
}

func (r *reader) fixed(n int) ([]byte, error) {
	if len(r.b)-r.i < n {
		r.i = len(r.b)
		return nil, r.truncated()
	}
	b := r.b[r.i : r.i+n]
	r.i += n
	return b, nil
}

// skip advances over n bytes.
func (r *reader) skip(n int64) error {
	if n < 0 || int64(len(r.b)-r.i) < n {
		r.i = len(r.b)
		return r.truncated()
	}
	r.i += int(n)
	return nil
}

// blockCount reads the count of an array's or a map's block; a negative
// count is followed by the block's size in bytes, which is read and
// dropped.
func (r *reader) blockCount() (int64, error) {
	n, err := r.long()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		if n == math.MinInt64 {
			return 0, r.errorf("block count out of range")
		}
		n = -n
		if _, err := r.long(); err != nil {
			return 0, err
		}
	}
	if n > int64(len(r.b)-r.i) && n > 0 {
		// Every item takes a byte at least, but for null items: bound
		// what a corrupt count may make us allocate.
		if n > 1<<20 {
			return 0, r.errorf("block count %d exceeds the record", n)
		}
	}
	return n, nil
}

// Writing.

func appendLong(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

func appendBytes(b []byte, s string) []byte {
	b = appendLong(b, int64(len(s)))
	return append(b, s...)
}

func appendFloat(b []byte, f float32) []byte {
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
}

func appendDouble(b []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
}

// DecodeError is a record that does not decode: what is wrong, at which
// byte of the Avro body, in which field.
type DecodeError struct {
	Path   string // "bid.price", "tags[2]", "" for the record
	Offset int    // byte offset in the Avro body
	Err    error
}

func (e *DecodeError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("avro: %v at byte %d", e.Err, e.Offset)
	}
	return fmt.Sprintf("avro: field '%s': %v at byte %d", e.Path, e.Err, e.Offset)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// inField prefixes the path of a DecodeError with a field name.
func inField(name string, err error) error {
	var de *DecodeError
	if errors.As(err, &de) {
		sep := "."
		if de.Path == "" || de.Path[0] == '[' {
			sep = ""
		}
		if de.Path == "" {
			de.Path = name
		} else {
			de.Path = name + sep + de.Path
		}
		return de
	}
	return &DecodeError{Path: name, Err: err}
}
