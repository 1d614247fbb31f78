package kafka

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir/internal/group"
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
	op := &runOp{keyedOp: keyedOp{uid: "op", n: 1}, owned: []int32{0}, groups: map[int]bool{}, last: map[int]uint64{}}
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
	states := []group.KeyedState{{UID: "op", Watermark: 7, Groups: groups}}
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		if err := c.persist(1, states); err != nil {
			b.Fatal(err)
		}
	}
}

// TestChangelogPersistWritesChanges: a commit writes the owned key groups
// whose snapshot changed since the last, a tombstone for one that became
// empty, and nothing for another process's key groups or when nothing
// changed; no watermark records (the watermark is the repartition
// offsets' metadata).
// persistRun is a changelog run of operator "op" whose changelog
// "app-op-changelog" has n partitions on a fresh kfake cluster, owning
// partition owned of them (max parallelism maxP); with the producing
// client and the cluster's addresses.
func persistRun(t *testing.T, n, maxP int, owned int32) (*changelogRun, *kgo.Client, []string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(n), "app-op-changelog"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	r := &groupRunner{cl: cl, job: group.Job{MaxParallelism: maxP}}
	op := &runOp{keyedOp: keyedOp{uid: "op", changelog: "app-op-changelog", n: n}, owned: []int32{owned},
		groups: map[int]bool{}, last: map[int]uint64{}}
	for _, kg := range OwnedKeyGroups(op.owned, n, maxP) {
		op.groups[kg] = true
	}
	return &changelogRun{lr: &localRun{r: r}, ops: []*runOp{op}}, cl, c.ListenAddrs()
}

func TestChangelogPersistWritesChanges(t *testing.T) {
	// Partition 1 of 2: key groups 4..7.
	run, cl, addrs := persistRun(t, 2, 8, 1)
	commit := func(wm int64, groups map[int][]byte) {
		t.Helper()
		if err := run.persist(1, []group.KeyedState{{UID: "op", Watermark: wm, Groups: groups}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := run.lr.failed(); err != nil {
			t.Fatal(err)
		}
	}
	commit(10, map[int][]byte{1: []byte("not ours"), 4: []byte("a"), 5: []byte("b")})
	commit(10, map[int][]byte{1: []byte("not ours either"), 4: []byte("a"), 5: []byte("b")}) // nothing changed
	commit(20, map[int][]byte{4: []byte("a2")})                                              // 4 changed, 5 emptied

	// What the changelog holds, in order.
	rd, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"app-op-changelog": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got []string
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(got) < 4 && ctx.Err() == nil {
		rd.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
			s := fmt.Sprintf("p%d %s=", rec.Partition, rec.Key)
			switch {
			case rec.Value == nil:
				s += "tombstone"
			case strings.HasPrefix(string(rec.Key), "wm/"):
				_, p, _ := unframe(rec.Value)
				s += fmt.Sprint(binary.BigEndian.Uint64(p))
			default:
				_, p, _ := unframe(rec.Value)
				s += string(p)
			}
			got = append(got, s)
		})
	}
	// (A watermark record would be among the first commit's.)
	slices.Sort(got[:2]) // one commit's records: key group order is a map's
	want := []string{"p1 4=a", "p1 5=b", "p1 4=a2", "p1 5=tombstone"}
	if !slices.Equal(got, want) {
		t.Fatalf("changelog records:\n got %q\nwant %q", got, want)
	}
}

// TestChangelogPersistCopiesGroups: persist is done with the key groups'
// bytes when it returns (it hashes them and copies them into its records):
// the window operators' deferred snapshots write the next checkpoint into
// the same buffers (codec.GroupWriter.Reuse), so a record produced from
// the buffer itself would be changed under the client before it is sent.
func TestChangelogPersistCopiesGroups(t *testing.T) {
	run, cl, addrs := persistRun(t, 1, 4, 0)
	buf := []byte("checkpoint 1")
	if err := run.persist(1, []group.KeyedState{{UID: "op", Groups: map[int][]byte{2: buf}}}); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXXXXXXXXX") // the next checkpoint's encoding, before the client sent the record
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"app-op-changelog": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got []string
	for len(got) < 1 && ctx.Err() == nil {
		rd.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
			_, p, err := unframe(rec.Value)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(rec.Key)+"="+string(p))
		})
	}
	if !slices.Equal(got, []string{"2=checkpoint 1"}) {
		t.Fatalf("changelog records %q, want the bytes persist was given", got)
	}
}

// TestChangelogReadsOldWatermarkRecords: a "wm/<partition>" record, which
// the first version wrote, is still read (a topic written by it
// restores); one naming another partition or not framed as a watermark is
// an error naming topic, partition and offset.
func TestChangelogReadsOldWatermarkRecords(t *testing.T) {
	op := &runOp{keyedOp: keyedOp{uid: "op", changelog: "app-op-changelog", n: 2}}
	groups := map[int][]byte{}
	wm := int64(math.MinInt64)
	rec := &kgo.Record{Topic: "app-op-changelog", Partition: 1, Offset: 7, Key: []byte("wm/1"),
		Value: frame(nil, clKindWatermark, binary.BigEndian.AppendUint64(nil, 42))}
	if err := applyChangelogRecord(rec, op, groups, &wm, 8); err != nil || wm != 42 || len(groups) != 0 {
		t.Fatalf("old watermark record: err %v, watermark %d, groups %v", err, wm, groups)
	}
	rec.Key = []byte("wm/0")
	if err := applyChangelogRecord(rec, op, groups, &wm, 8); err == nil || !strings.Contains(err.Error(), `"app-op-changelog" partition 1 offset 7`) {
		t.Fatalf("watermark record of another partition: %v", err)
	}
	rec.Key, rec.Value = []byte("wm/1"), frame(nil, clKindGroup, []byte("x"))
	if err := applyChangelogRecord(rec, op, groups, &wm, 8); err == nil {
		t.Fatal("a key group's frame under a watermark key: no error")
	}
}
