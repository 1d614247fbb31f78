package planner

import (
	"fmt"
	"unsafe"

	"github.com/weirstream/weir/sql/types"
)

// A group aggregation keeps one accumulator per group for as long as the
// group lives: millions of them for a GROUP BY over a large key space, so
// their size is the operator's memory. As a []types.Value, an accumulator
// of a BIGINT key, COUNT(*) and SUM costs 5 × 48 bytes plus the 24 of the
// slice header in the state table's slot; almost all of it is the room
// of strings and composites (Value.S, Value.X) that integer accumulators
// never use. packedAcc keeps such an accumulator as the integers alone.
//
// A packedAcc is one pointer, to either
//   - words: n+1 uint64s, when every value is scalar and holds no string
//     (X nil, S empty): word 0 is a header (bits 0-55 the values' NULL
//     flags, bits 56-62 n, bit 63 clear), then each value's I; or
//   - a boxedAcc, whose first word has bit 63 set, holding the values as
//     they are (strings, big decimals, DISTINCT multisets, more than
//     maxPacked values).
//
// Both start with a uint64 that says which. The layout is this file's
// alone: in checkpoints and in a serializing backend a packedAcc is the
// bytes of types.Row{Values: acc}.MarshalBinary, the format group
// aggregations have always written, so state restores across the change
// either way.
type packedAcc struct{ p unsafe.Pointer }

// maxPacked is the most values of a words accumulator (56 NULL flags in
// the header).
const maxPacked = 56

const (
	boxedBit  = 1 << 63
	countSh   = 56
	nullsMask = 1<<countSh - 1
)

// boxedAcc is an accumulator that words cannot hold.
type boxedAcc struct {
	mark uint64 // boxedBit
	vals []types.Value
}

func (a packedAcc) header() uint64 { return *(*uint64)(a.p) }

// boxed returns the boxed values, or nil for a words accumulator.
func (a packedAcc) boxed() *boxedAcc {
	if a.header()&boxedBit == 0 {
		return nil
	}
	return (*boxedAcc)(a.p)
}

// words returns a words accumulator's n+1 words.
func (a packedAcc) words() []uint64 {
	n := int(a.header() >> countSh)
	return unsafe.Slice((*uint64)(a.p), n+1)
}

// packable reports whether vs fit words.
func packable(vs []types.Value) bool {
	if len(vs) > maxPacked {
		return false
	}
	for i := range vs {
		if vs[i].X != nil || vs[i].S != "" {
			return false
		}
	}
	return true
}

// packInto writes vs into w (len(vs)+1 words).
func packInto(w []uint64, vs []types.Value) {
	var nulls uint64
	for i := range vs {
		if vs[i].Null {
			nulls |= 1 << i
			w[i+1] = 0
		} else {
			w[i+1] = uint64(vs[i].I)
		}
	}
	w[0] = uint64(len(vs))<<countSh | nulls
}

// pack makes the accumulator of vs. A boxed one takes vs when owned, else
// a copy of the slice (not of what its values point to).
func pack(vs []types.Value, owned bool) packedAcc {
	if packable(vs) {
		w := make([]uint64, len(vs)+1)
		packInto(w, vs)
		return packedAcc{unsafe.Pointer(&w[0])}
	}
	if !owned {
		vs = append([]types.Value(nil), vs...)
	}
	return packedAcc{unsafe.Pointer(&boxedAcc{mark: boxedBit, vals: vs})}
}

// unpack returns the values of a: a words accumulator's in scratch (grown
// if need be, and returned for reuse), a boxed one's own (which the
// caller may change in place).
func (a packedAcc) unpack(scratch []types.Value) (vs, scratchOut []types.Value) {
	if b := a.boxed(); b != nil {
		return b.vals, scratch
	}
	w := a.words()
	n := len(w) - 1
	if cap(scratch) < n {
		scratch = make([]types.Value, n)
	}
	vs = scratch[:n]
	nulls := w[0] & nullsMask
	for i := range vs {
		vs[i] = types.Value{I: int64(w[i+1]), Null: nulls&(1<<i) != 0}
	}
	return vs, scratch
}

// store returns a holding vs, the values after a change: a words
// accumulator is written in place when vs still fit it, a boxed one takes
// vs (which unpack returned); otherwise a new accumulator is made. The
// zero packedAcc (a new group) makes a new one. owned: vs is the caller's
// to give away (not unpack's scratch).
func (a packedAcc) store(vs []types.Value, owned bool) packedAcc {
	if a.p == nil {
		return pack(vs, owned)
	}
	if b := a.boxed(); b != nil {
		if len(vs) > 0 && len(b.vals) > 0 && &vs[0] == &b.vals[0] && len(vs) == len(b.vals) {
			return a // changed in place
		}
		b.vals = append(b.vals[:0], vs...)
		return a
	}
	if w := a.words(); len(w) == len(vs)+1 && packable(vs) {
		packInto(w, vs)
		return a
	}
	return pack(vs, owned)
}

// HeapBytes is the heap the accumulator takes (internal/state's
// HeapSizer, for the operator's state metrics): the words, or the box and
// its values' array, as the allocator rounds them (not what strings and
// composites point to).
func (a packedAcc) HeapBytes() int {
	if a.p == nil {
		return 0
	}
	if b := a.boxed(); b != nil {
		return allocRound(int(unsafe.Sizeof(boxedAcc{}))) + allocRound(cap(b.vals)*int(unsafe.Sizeof(types.Value{})))
	}
	return allocRound(8 * len(a.words()))
}

// allocRound is n rounded up about as Go's small size classes do.
func allocRound(n int) int {
	switch {
	case n <= 32:
		return (n + 7) &^ 7
	case n <= 256:
		return (n + 15) &^ 15
	case n <= 512:
		return (n + 31) &^ 31
	case n <= 1024:
		return (n + 63) &^ 63
	}
	return (n + 127) &^ 127
}

// MarshalBinary writes the accumulator as types.Row{Values: acc} writes
// itself (see packedAcc).
func (a packedAcc) MarshalBinary() ([]byte, error) {
	if a.p == nil {
		return types.Row{}.MarshalBinary()
	}
	if b := a.boxed(); b != nil {
		return types.Row{Values: b.vals}.MarshalBinary()
	}
	var buf [8]types.Value
	vs, _ := a.unpack(buf[:0])
	return types.Row{Values: vs}.MarshalBinary()
}

// UnmarshalBinary reads what MarshalBinary (or a types.Row's) wrote.
func (a *packedAcc) UnmarshalBinary(data []byte) error {
	var r types.Row
	if err := r.UnmarshalBinary(data); err != nil {
		return fmt.Errorf("group aggregation accumulator: %w", err)
	}
	*a = pack(r.Values, true)
	return nil
}

// String shows the values (tests, debugging).
func (a packedAcc) String() string {
	if a.p == nil {
		return "packedAcc(nil)"
	}
	vs, _ := a.unpack(nil)
	return fmt.Sprintf("packedAcc(%d words=%v %v)", len(vs), a.boxed() == nil, vs)
}
