package hashtable

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/weirstream/weir/internal/prefetch"
)

// Home returns the addresses of the control byte and the slot where a
// lookup of hash starts, for a caller that prefetches them before it looks
// the key up (a window operator removing the keys of a fired window one
// after the other: each lookup is otherwise two cache misses in turn).
// They are plain addresses, valid only until the table next grows, and
// only to prefetch: 0, 0 for a table with no slots.
func (t *Table[K, V]) Home(hash uint64) (ctrl, slot uintptr) {
	if len(t.slots) == 0 {
		return 0, 0
	}
	i := t.index(hash)
	return uintptr(unsafe.Pointer(&t.ctrl[i])), uintptr(unsafe.Pointer(&t.slots[i]))
}

// Prefetch distances of AllPrefetch: it asks for the slots this many bytes
// ahead of the walk, a span at a time.
const (
	prefetchAhead = 8 << 10
	prefetchSpan  = 512
)

// prefetchLines is prefetch.Lines, a variable so that a test sees the
// ranges a walk asks for (once a span: the indirect call costs nothing
// next to the span's slots).
var prefetchLines = prefetch.Lines

// AllPrefetch is All for a walk over a table larger than the caches: before
// each span of prefetchSpan bytes of slots it asks for the slots
// prefetchAhead bytes further on. Full slots lie at random among empty
// ones, so a walk's reads skip ahead by irregular strides that the
// hardware's prefetcher does not follow: each full slot was a cache miss
// of its own (BenchmarkAllPrefetch).
//
// Like All, it changes nothing, and visits the entries a migrating
// doubling has not moved yet first.
func (t *Table[K, V]) AllPrefetch(fn func(hash uint64, key K, v *V) bool) {
	if t.old.ctrl != nil && !allPrefetch(t.old.ctrl, t.old.slots, fn) {
		return
	}
	allPrefetch(t.ctrl, t.slots, fn)
}

// allPrefetch is AllPrefetch over one pair of arrays, and reports whether
// it got to the end.
func allPrefetch[K comparable, V any](ctrl []uint8, slots []slot[K, V], fn func(hash uint64, key K, v *V) bool) bool {
	n := len(slots)
	if n == 0 {
		return true
	}
	size := unsafe.Sizeof(slots[0])
	end := uintptr(unsafe.Pointer(&slots[0])) + uintptr(n)*size
	span := max(8, prefetchSpan/int(size)) &^ 7 // whole words of control bytes
	for from := 0; from < n; from += span {
		if a := uintptr(unsafe.Pointer(&slots[from])) + prefetchAhead; a < end {
			prefetchLines(a, min(uintptr(span)*size, end-a))
		}
		if !visit(ctrl, slots, from, min(from+span, n), fn) {
			return false
		}
	}
	return true
}

// visit calls fn for each entry in slots [from, to) until fn returns
// false, and reports whether it got to the end. from and to are multiples
// of 8 (a table's slots are a power of two, at least 16). It reads the
// control bytes eight at a time: a full slot's has its top bit set (tag), so the
// set top bits of a word are the full slots, visited in order without a
// branch per slot (one byte at a time, the branch on each would go either
// way at random and be mispredicted often).
func visit[K comparable, V any](ctrl []uint8, slots []slot[K, V], from, to int, fn func(hash uint64, key K, v *V) bool) bool {
	for i := from; i < to; i += 8 {
		for m := binary.LittleEndian.Uint64(ctrl[i:]) & fullBits; m != 0; m &= m - 1 {
			s := &slots[i+bits.TrailingZeros64(m)>>3]
			if !fn(s.hash, s.key, &s.val) {
				return false
			}
		}
	}
	return true
}

// fullBits has the top bit of each of eight control bytes: set in a full
// slot's tag, clear in an empty slot's 0 and a gone one's.
const fullBits = 0x8080808080808080
