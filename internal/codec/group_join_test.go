package codec

import (
	"bytes"
	"testing"
)

// Join gives the bytes one writer gives for all the parts' entries, part
// after part, under one header, with or without Reuse (twice: the second
// join writes into the buffers the first returned); a part that is not in
// the group format is refused.
func TestGroupWriterJoin(t *testing.T) {
	parts := []map[int][]reuseEntry{
		{0: {{1, "a"}, {2, "bb"}}, 2: {{3, ""}}},
		{},
		{0: {{4, "dddd"}}, 3: {{5, "e"}, {6, "f"}}},
	}
	var whole GroupWriter[reuseEntry]
	whole.Start(4)
	for _, p := range parts {
		for kg := 0; kg < 4; kg++ {
			for i := range p[kg] {
				whole.Add(kg, &p[kg][i])
			}
		}
	}
	want, err := whole.Finish()
	if err != nil {
		t.Fatal(err)
	}
	for _, reuse := range []bool{false, true} {
		j := &GroupWriter[reuseEntry]{Reuse: reuse}
		for round := 0; round < 2; round++ {
			var enc []map[int][]byte
			for _, p := range parts {
				enc = append(enc, encodeGroups(t, &GroupWriter[reuseEntry]{}, p))
			}
			j.Start(4)
			got, err := j.Join(enc)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("reuse=%v: %d key groups, want %d", reuse, len(got), len(want))
			}
			for kg, w := range want {
				if !bytes.Equal(got[kg], w) {
					t.Fatalf("reuse=%v round %d: key group %d: %x, want %x", reuse, round, kg, got[kg], w)
				}
			}
		}
	}
	var j GroupWriter[reuseEntry]
	j.Start(4)
	if _, err := j.Join([]map[int][]byte{{0: []byte("not a group")}}); err == nil {
		t.Fatal("Join took a part with another header")
	}
}
