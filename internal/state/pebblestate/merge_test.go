package pebblestate

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/weirstream/weir/internal/state"
)

// TestListMergerOrder: whatever order Pebble hands the operands in (the
// first, then newer and older ones mixed, as its iterators and
// compactions do), the merger's value is state.MergeList of the operands
// oldest first.
func TestListMergerOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	operand := func(i int) []byte {
		b := binary.BigEndian.AppendUint64(nil, 42) // the header: the key's hash
		return append(b, bytes.Repeat([]byte{byte(i)}, 1+rng.IntN(5))...)
	}
	for n := 1; n < 40; n++ {
		ops := make([][]byte, n) // oldest first
		for i := range ops {
			ops[i] = operand(i)
		}
		first := rng.IntN(n)
		vm, err := listMerger.Merge(nil, bytes.Clone(ops[first]))
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := first-1, first+1
		for lo >= 0 || hi < n {
			if hi < n && (lo < 0 || rng.IntN(2) == 0) {
				buf := bytes.Clone(ops[hi])
				if err := vm.MergeNewer(buf); err != nil {
					t.Fatal(err)
				}
				clear(buf) // Pebble reuses its buffers
				hi++
			} else {
				buf := bytes.Clone(ops[lo])
				if err := vm.MergeOlder(buf); err != nil {
					t.Fatal(err)
				}
				clear(buf)
				lo--
			}
		}
		got, _, err := vm.Finish(true)
		if err != nil {
			t.Fatal(err)
		}
		if want := state.MergeList(ops...); !bytes.Equal(got, want) {
			t.Fatalf("%d operands, first %d: merged %x, want %x", n, first, got, want)
		}
	}
}

// BenchmarkListMergerOlder merges a list of 1,000 operands handed newest
// first (MergeOlder, as a Get of a key with that many merges reads them):
// linear in the operands' bytes (it was quadratic: each older operand
// went in front of a slice).
func BenchmarkListMergerOlder(b *testing.B) {
	op := append(binary.BigEndian.AppendUint64(nil, 42), make([]byte, 40)...)
	for b.Loop() {
		vm, _ := listMerger.Merge(nil, op)
		for range 999 {
			vm.MergeOlder(op)
		}
		vm.Finish(true)
	}
}
