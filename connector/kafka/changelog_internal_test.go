package kafka

import (
	"hash/maphash"
	"slices"
	"testing"

	"github.com/weirstream/weir/internal/hooks"
)

// TestOwnedKeyGroups: a process owns the key groups kg with
// kg*n/maxParallelism among its partitions; over all partitions every key
// group is owned exactly once.
func TestOwnedKeyGroups(t *testing.T) {
	for _, c := range []struct {
		owned   []int32
		n, maxP int
		want    []int
	}{
		{[]int32{0}, 1, 4, []int{0, 1, 2, 3}},
		{[]int32{1}, 4, 16, []int{4, 5, 6, 7}},
		{[]int32{0, 3}, 4, 10, []int{0, 1, 2, 8, 9}},
		{nil, 4, 10, nil},
	} {
		if got := OwnedKeyGroups(c.owned, c.n, c.maxP); !slices.Equal(got, c.want) {
			t.Errorf("OwnedKeyGroups(%v, %d, %d) = %v, want %v", c.owned, c.n, c.maxP, got, c.want)
		}
	}
	for _, n := range []int{1, 3, 7, 128} {
		seen := map[int]int{}
		for p := range int32(n) {
			for _, kg := range OwnedKeyGroups([]int32{p}, n, 128) {
				seen[kg]++
			}
		}
		for kg := range 128 {
			if seen[kg] != 1 {
				t.Fatalf("n=%d: key group %d owned %d times", n, kg, seen[kg])
			}
		}
	}
}

// TestChangelogFrame: a framed value reads back; any flipped byte of the
// payload fails the checksum.
func TestChangelogFrame(t *testing.T) {
	v := frame(nil, clKindGroup, []byte("snapshot"))
	kind, payload, err := unframe(v)
	if err != nil || kind != clKindGroup || string(payload) != "snapshot" {
		t.Fatalf("unframe: %q %q %v", kind, payload, err)
	}
	for i := clHeader; i < len(v); i++ {
		bad := slices.Clone(v)
		bad[i] ^= 1
		if _, _, err := unframe(bad); err == nil {
			t.Fatalf("byte %d flipped: no error", i)
		}
	}
}

// BenchmarkChangelogUnchanged is the cost a commit pays to find that no
// key group changed (hashing every owned snapshot): 128 key groups of 64
// KiB (8 MiB of state). Prints MB/s of state checked.
func BenchmarkChangelogUnchanged(b *testing.B) {
	groups := map[int][]byte{}
	op := &runOp{keyedOp: keyedOp{uid: "op", n: 1}, owned: []int32{0}, groups: map[int]bool{}, last: map[int]uint64{}, wm: map[int32]int64{0: 7}}
	var size int64
	for kg := range 128 {
		data := make([]byte, 64<<10)
		for i := range data {
			data[i] = byte(kg + i)
		}
		groups[kg] = data
		op.groups[kg] = true
		op.last[kg] = maphash.Bytes(hashSeed, data)
		size += int64(len(data))
	}
	c := &changelogRun{lr: &localRun{}, ops: []*runOp{op}}
	states := []hooks.KeyedState{{UID: "op", Watermark: 7, Groups: groups}}
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		if err := c.persist(1, states); err != nil {
			b.Fatal(err)
		}
	}
}
