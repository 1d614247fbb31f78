package codec

import (
	"bytes"
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
