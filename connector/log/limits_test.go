package wlog

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Too many partitions fail at once, saying the limit, and create nothing.
func TestCreateTopicLimits(t *testing.T) {
	dir := t.TempDir()
	for _, cfg := range []TopicConfig{
		{Partitions: 100_000_000},
		{Partitions: MaxPartitions + 1},
		{Partitions: 0},
		{Partitions: 1, SegmentBytes: 3_000_000_000},
		{Partitions: 1, SegmentBytes: 10},
	} {
		_, err := CreateTopic(dir, "big", cfg)
		if err == nil {
			t.Fatalf("%+v accepted", cfg)
		}
		if cfg.Partitions != 1 && !strings.Contains(err.Error(), "10000") {
			t.Errorf("%+v: %v does not say the limit", cfg, err)
		}
		if cfg.SegmentBytes != 0 && (strings.Contains(err.Error(), "too small") || !strings.Contains(err.Error(), "2147483648")) {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}

// A cancelled creation stops and leaves no .create-* directory.
func TestCreateTopicCancelled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := CreateTopicContext(ctx, dir, "t", TopicConfig{Partitions: 100}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}

func TestTopicNames(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("a", MaxTopicName)
	for _, name := range []string{"a", "A.b_c-d", "0", long} {
		if _, err := CreateTopic(dir, name, TopicConfig{Partitions: 1}); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	// The longest name can be deleted too (its .delete- directory is the
	// longest name weir makes).
	if err := DeleteTopic(dir, long); err != nil {
		t.Fatalf("delete %d characters: %v", len(long), err)
	}
	for _, name := range []string{"", ".", "..", ".hidden", "-flag", "a/b", "a b", "é", long + "a", strings.Repeat("b", 249)} {
		if _, err := CreateTopic(dir, name, TopicConfig{Partitions: 1}); err == nil {
			t.Errorf("%q accepted", name)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left behind %s", filepath.Join(dir, e.Name()))
		}
	}
}

// headerBatch encodes a batch of n records with h empty headers each
// directly (building []Header values would itself take the memory the
// test measures).
func headerBatch(n, h int) []byte {
	b := make([]byte, batchHeaderSize)
	for i := range n {
		b = binary.AppendUvarint(b, uint64(i))
		b = binary.AppendVarint(b, 1)
		b = binary.AppendVarint(b, -1) // key
		b = binary.AppendVarint(b, -1) // value
		b = binary.AppendUvarint(b, uint64(h))
		for range h {
			b = append(b, 0, 1) // key length 0, value nil (varint -1)
		}
	}
	sealBatch(b, 0, n, 0, int64(n-1), 1)
	return b
}

// A CRC-valid batch of many headers is decoded as it is read: one Read
// costs about the records it returns, not 40 times the batch.
func TestReadOfHeaderBatchMemoryBounded(t *testing.T) {
	const n, h = 1000, 10_000 // 20 MB of headers in the log
	tp := newTopic(t, TopicConfig{})
	b := headerBatch(n, h)
	if _, err := checkBatch(b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logPath(tp.partDir(0), 0), b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := tp.OpenReader(0, Earliest())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	recs, err := r.Read(context.Background(), 7)
	runtime.ReadMemStats(&after)
	if err != nil || len(recs) == 0 || len(recs[0].Headers) != h {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	// The read buffer of the batch (20 MB), the returned records' headers
	// (as the slice grows: twice), some slack. Decoding the whole batch
	// would take 400 MB.
	limit := uint64(len(b)) + 2*uint64(len(recs))*h*40 + 8<<20
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > limit {
		t.Fatalf("one Read of %d records allocated %d bytes (batch of %d bytes, limit %d)", len(recs), alloc, len(b), limit)
	}
	total := len(recs)
	for {
		recs, err := r.Read(context.Background(), 7)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			if rec.Offset != int64(total) || len(rec.Headers) != h {
				t.Fatalf("record %d: offset %d, %d headers", total, rec.Offset, len(rec.Headers))
			}
			total++
		}
	}
	if total != n {
		t.Fatalf("read %d records of %d", total, n)
	}
}

// More than MaxHeaders headers: Append refuses, and a batch holding such a
// record is corrupt.
func TestMaxHeaders(t *testing.T) {
	tp := newTopic(t, TopicConfig{})
	w := openWriter(t, tp)
	if _, err := w.Append([]Record{{Value: []byte("v"), Headers: make([]Header, MaxHeaders+1)}}); err == nil {
		t.Fatal("Append of a record with too many headers succeeded")
	}
	if _, err := w.Append([]Record{{Value: []byte("v"), Headers: make([]Header, MaxHeaders)}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := decodeBatch(nil, headerBatch(1, MaxHeaders+1)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("decode: %v", err)
	}
}

// Found by FuzzSegment: a short segment whose first batch claims 200 MB
// made readers and the writer allocate the claimed size (at every look at
// it) before finding the file shorter. A torn tail costs what it holds.
func TestGarbledLengthDoesNotAllocate(t *testing.T) {
	tp := newTopic(t, TopicConfig{})
	b := appendBatch(nil, []Record{rec(0, 1), rec(1, 1)})
	binary.BigEndian.PutUint32(b, 200<<20)
	if err := os.WriteFile(logPath(tp.partDir(0), 0), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if got := readAll(t, tp, Earliest()); len(got) != 0 {
		t.Fatalf("read %d records", len(got))
	}
	w := openWriter(t, tp)
	if w.NextOffset() != 0 {
		t.Fatalf("next offset %d", w.NextOffset())
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Fatalf("allocated %d bytes for a %d-byte segment", alloc, len(b))
	}
}
