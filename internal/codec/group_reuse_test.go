package codec

import (
	"bytes"
	"strings"
	"testing"
)

type reuseEntry struct {
	K int64
	S string
}

// encodeGroups runs one snapshot of g: entries (key group, entry) added in
// order, and a copy of what Finish returned.
func encodeGroups(t *testing.T, g *GroupWriter[reuseEntry], es map[int][]reuseEntry) map[int][]byte {
	t.Helper()
	g.Start(4)
	for kg, list := range es {
		for i := range list {
			g.Add(kg, &list[i])
		}
	}
	out, err := g.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// With Reuse, the next snapshot writes into the buffers the last one
// returned (the deferred snapshots' key groups are not allocated and
// faulted in again at every checkpoint); the bytes are those a fresh
// writer produces, a key group emptied gives its buffer up, and one
// longer than its buffer grows it. Without Reuse, every snapshot's
// buffers are new: a reader may keep them.
func TestGroupWriterReuse(t *testing.T) {
	first := map[int][]reuseEntry{0: {{1, "a"}, {2, "bb"}}, 1: {{3, "ccc"}}, 3: {{4, "dddd"}}}
	second := map[int][]reuseEntry{0: {{5, "e"}}, 1: {{6, "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"}}, 2: {{7, "g"}}}

	for _, reuse := range []bool{false, true} {
		g := &GroupWriter[reuseEntry]{Reuse: reuse}
		a := encodeGroups(t, g, first)
		a0 := &a[0][0]
		aCopy := map[int][]byte{}
		for kg, b := range a {
			aCopy[kg] = bytes.Clone(b)
		}
		b := encodeGroups(t, g, second)
		var fresh GroupWriter[reuseEntry]
		want := encodeGroups(t, &fresh, second)
		if len(b) != len(want) {
			t.Fatalf("reuse %v: %d key groups, want %d", reuse, len(b), len(want))
		}
		for kg, data := range want {
			if !bytes.Equal(b[kg], data) {
				t.Fatalf("reuse %v: key group %d: %x, want %x", reuse, kg, b[kg], data)
			}
		}
		if shared := &b[0][0] == a0; shared != reuse {
			t.Fatalf("reuse %v: second snapshot wrote into the first's buffer: %v", reuse, shared)
		}
		if !reuse {
			for kg, data := range aCopy {
				if !bytes.Equal(a[kg], data) {
					t.Fatalf("without reuse, the second snapshot changed the first's key group %d", kg)
				}
			}
			continue
		}
		if g.spare[3] != nil {
			t.Fatal("key group 3, empty in the second snapshot, kept its buffer")
		}
	}
}

// A key group larger than groupSlack grows ahead of its entries (doubling)
// and still holds every entry, in order.
func TestGroupWriterLargeGroup(t *testing.T) {
	var g GroupWriter[reuseEntry]
	g.Reuse = true
	var want []reuseEntry
	for i := range 5000 {
		want = append(want, reuseEntry{int64(i), strings.Repeat("s", i%97)})
	}
	for round := 0; round < 2; round++ {
		out := encodeGroups(t, &g, map[int][]reuseEntry{1: want})
		if len(out[1]) < 4*groupSlack {
			t.Fatalf("key group of %d bytes: not large enough to test the growth", len(out[1]))
		}
		var got []reuseEntry
		if err := EachEntry([][]byte{out[1]}, func(e reuseEntry) { got = append(got, e) }); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %d entries, want %d", round, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("round %d: entry %d is %v, want %v", round, i, got[i], want[i])
			}
		}
	}
}
