package broker

import (
	"bytes"
	stdgzip "compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	wlog "github.com/weirstream/weir/connector/log"
)

// kbTestCastagnoli is the test's own CRC-32C table.
var kbTestCastagnoli = crc32.MakeTable(crc32.Castagnoli)

// kbTestBaseTS is a plausible timestamp (ms).
const kbTestBaseTS = int64(1_700_000_000_000)

// kbTestRecords returns records with the cases the codec must keep apart:
// null and empty keys, values and header values, a timestamp before the
// first one, repeated header keys, an empty header key, and a value large
// enough to span several snappy (32 KiB) and lz4 (64 KiB) blocks.
func kbTestRecords() []wlog.Record {
	large := make([]byte, 150<<10)
	for i := range large {
		large[i] = byte(i*7 + i/1000)
	}
	return []wlog.Record{
		{Timestamp: kbTestBaseTS, Key: []byte("k1"), Value: []byte("v1"), Headers: []wlog.Header{
			{Key: "h", Value: []byte("x")}, {Key: "null", Value: nil}, {Key: "empty", Value: []byte{}},
		}},
		{Timestamp: kbTestBaseTS + 5, Key: nil, Value: nil},
		{Timestamp: kbTestBaseTS - 10, Key: []byte{}, Value: []byte{}},
		{Timestamp: kbTestBaseTS + 1<<40, Key: bytes.Repeat([]byte("K"), 300), Value: large, Headers: []wlog.Header{{Key: "", Value: []byte{}}}},
		{Timestamp: kbTestBaseTS + 7, Key: []byte("k5"), Value: []byte("v5"), Headers: []wlog.Header{
			{Key: "h", Value: []byte("y")}, {Key: "null", Value: nil}, {Key: "other", Value: []byte("z")},
		}},
	}
}

// kbTestDiff describes the first difference between the records got and
// want (nil and empty byte slices differ; offsets are compared only if
// offsets is set), or returns "".
func kbTestDiff(got, want []wlog.Record, offsets bool) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := &got[i], &want[i]
		if offsets && g.Offset != w.Offset {
			return fmt.Sprintf("record %d: offset %d, want %d", i, g.Offset, w.Offset)
		}
		if g.Timestamp != w.Timestamp {
			return fmt.Sprintf("record %d: timestamp %d, want %d", i, g.Timestamp, w.Timestamp)
		}
		if d := kbTestBytesDiff(g.Key, w.Key); d != "" {
			return fmt.Sprintf("record %d: key %s", i, d)
		}
		if d := kbTestBytesDiff(g.Value, w.Value); d != "" {
			return fmt.Sprintf("record %d: value %s", i, d)
		}
		if len(g.Headers) != len(w.Headers) {
			return fmt.Sprintf("record %d: %d headers, want %d", i, len(g.Headers), len(w.Headers))
		}
		for j := range w.Headers {
			if g.Headers[j].Key != w.Headers[j].Key {
				return fmt.Sprintf("record %d: header %d key %q, want %q", i, j, g.Headers[j].Key, w.Headers[j].Key)
			}
			if d := kbTestBytesDiff(g.Headers[j].Value, w.Headers[j].Value); d != "" {
				return fmt.Sprintf("record %d: header %d value %s", i, j, d)
			}
		}
	}
	return ""
}

// kbTestBytesDiff describes how got differs from want, telling nil from
// empty, or returns "".
func kbTestBytesDiff(got, want []byte) string {
	switch {
	case (got == nil) != (want == nil):
		return fmt.Sprintf("nil=%v, want nil=%v", got == nil, want == nil)
	case !bytes.Equal(got, want):
		return fmt.Sprintf("%.20q (%d bytes), want %.20q (%d bytes)", got, len(got), want, len(want))
	}
	return ""
}

// kbTestKmsgRecords encodes recs with kmsg, as a producer does: offset
// deltas 0, 1, ..., timestamp deltas from firstTS.
func kbTestKmsgRecords(recs []wlog.Record, firstTS int64) []byte {
	var raw []byte
	for i, r := range recs {
		kr := kmsg.Record{TimestampDelta64: r.Timestamp - firstTS, OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1) // what follows a one-byte length 0
		raw = kr.AppendTo(raw)
	}
	return raw
}

// kbTestReseal recomputes the CRC of the batch at the start of b.
func kbTestReseal(b []byte) []byte {
	n := 12 + int(int32(binary.BigEndian.Uint32(b[8:])))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:n], kbTestCastagnoli))
	return b
}

// kbTestBatch builds with kmsg a produce batch of recs, whose records
// compress turns into the batch's records (nil: uncompressed), with the
// given attributes.
func kbTestBatch(recs []wlog.Record, attrs int16, compress func([]byte) []byte) []byte {
	firstTS, maxTS := recs[0].Timestamp, recs[0].Timestamp
	for _, r := range recs {
		maxTS = max(maxTS, r.Timestamp)
	}
	raw := kbTestKmsgRecords(recs, firstTS)
	if compress != nil {
		raw = compress(raw)
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       firstTS,
		MaxTimestamp:         maxTS,
		ProducerID:           7,
		ProducerEpoch:        3,
		FirstSequence:        11,
		NumRecords:           int32(len(recs)),
		Records:              raw,
		Length:               int32(49 + len(raw)),
	}
	return kbTestReseal(rb.AppendTo(nil))
}

// kbTestCodec is a way to compress a batch's records.
type kbTestCodec struct {
	name     string
	codec    int16
	compress func([]byte) []byte
}

// kbTestCodecs are the codecs, compressing with the same libraries as
// producers (the stdlib's gzip, snappy both raw and xerial-framed, lz4
// with Kafka's 64 KiB blocks, zstd both with and without the content size
// in the frame).
var kbTestCodecs = []kbTestCodec{
	{"none", 0, nil},
	{"gzip", 1, func(b []byte) []byte {
		var buf bytes.Buffer
		w := stdgzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}},
	{"snappy", 2, func(b []byte) []byte { return snappy.Encode(nil, b) }},
	{"snappy-xerial", 2, kbTestXerial},
	{"lz4", 3, func(b []byte) []byte {
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb)); err != nil {
			panic(err)
		}
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}},
	{"zstd", 4, func(b []byte) []byte {
		enc, _ := zstd.NewWriter(nil)
		defer enc.Close()
		return enc.EncodeAll(b, nil)
	}},
	{"zstd-stream", 4, func(b []byte) []byte {
		var buf bytes.Buffer
		enc, _ := zstd.NewWriter(&buf, zstd.WithWindowSize(64<<10))
		enc.Write(b)
		enc.Close()
		return buf.Bytes()
	}},
}

// kbTestXerial frames b the way snappy-java does: the header, then blocks
// of at most 32 KiB, each an int32 length and raw snappy.
func kbTestXerial(b []byte) []byte {
	out := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	for len(b) > 0 {
		n := min(len(b), 32<<10)
		block := snappy.Encode(nil, b[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
		b = b[n:]
	}
	return out
}

// Every codec's batch built with kmsg decodes to the records it was built
// from, with the batch's fields, nil and empty apart.
func TestKBatchDecodeProduceCodecs(t *testing.T) {
	want := kbTestRecords()
	for _, c := range kbTestCodecs {
		t.Run(c.name, func(t *testing.T) {
			b := kbTestBatch(want, c.codec|0x10, c.compress) // transactional
			batches, recs, err := decodeProduce(b, nil, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if len(batches) != 1 {
				t.Fatalf("%d batches, want 1", len(batches))
			}
			pb := batches[0]
			if pb.FirstTimestamp != kbTestBaseTS || pb.ProducerID != 7 || pb.ProducerEpoch != 3 ||
				pb.BaseSequence != 11 || pb.NumRecords != int32(len(want)) || !pb.Transactional || pb.Control {
				t.Fatalf("batch %+v", pb)
			}
			if d := kbTestDiff(recs, want, false); d != "" {
				t.Fatal(d)
			}
			if d := kbTestDiff(pb.Records, want, false); d != "" {
				t.Fatalf("batch records: %s", d)
			}
			for i := range recs {
				if recs[i].Offset != 0 {
					t.Fatalf("record %d: offset %d, want 0", i, recs[i].Offset)
				}
			}
			// Appending to a key must not overwrite what follows it.
			_ = append(recs[0].Key, "XXXX"...)
			if string(recs[0].Value) != "v1" {
				t.Fatalf("appending to a key changed the value to %q", recs[0].Value)
			}
		})
	}
}

// The compressors of franz-go's client produce what decodeProduce
// decompresses, and decodeProduce's decompression agrees with franz-go's
// decompressor on every test blob.
func TestKBatchDecodeProduceFranzCodecs(t *testing.T) {
	want := kbTestRecords()
	raw := kbTestKmsgRecords(want, kbTestBaseTS)
	for _, codec := range []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		comp, err := kgo.DefaultCompressor(codec)
		if err != nil {
			t.Fatal(err)
		}
		out, used := comp.Compress(new(bytes.Buffer), raw)
		if used <= 0 {
			t.Fatalf("franz-go compressed with codec %d", used)
		}
		out = slices.Clone(out)
		b := kbTestBatch(want, int16(used), func([]byte) []byte { return out })
		_, recs, err := decodeProduce(b, nil, 1<<20)
		if err != nil {
			t.Fatalf("codec %d: %v", used, err)
		}
		if d := kbTestDiff(recs, want, false); d != "" {
			t.Fatalf("codec %d: %s", used, d)
		}
	}
	dec := kgo.DefaultDecompressor()
	for _, c := range kbTestCodecs[1:] {
		blob := c.compress(raw)
		theirs, err := dec.Decompress(blob, kgo.CompressionCodecType(c.codec))
		if err != nil {
			t.Fatalf("%s: franz-go: %v", c.name, err)
		}
		ours, err := kbatchDecompress(int(c.codec), blob, 1<<20)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(ours, theirs) || !bytes.Equal(ours, raw) {
			t.Fatalf("%s: decompressed %d bytes, franz-go %d, compressed were %d", c.name, len(ours), len(theirs), len(raw))
		}
	}
}

// Several batches in one input: each gets its records, which alias dst,
// and dst's capacity and earlier records are kept.
func TestKBatchDecodeProduceMany(t *testing.T) {
	all := kbTestRecords()
	var b []byte
	for i, c := range kbTestCodecs {
		b = append(b, kbTestBatch(all[i%len(all):], c.codec, c.compress)...)
	}
	dst := make([]wlog.Record, 2, 100)
	dst[0].Offset, dst[1].Offset = 41, 42
	batches, recs, err := decodeProduce(b, dst, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(batches) != len(kbTestCodecs) {
		t.Fatalf("%d batches, want %d", len(batches), len(kbTestCodecs))
	}
	if &recs[0] != &dst[0] || recs[0].Offset != 41 || recs[1].Offset != 42 {
		t.Fatal("dst's array or its records were not kept")
	}
	at := 2
	for i, pb := range batches {
		want := all[i%len(all):]
		if d := kbTestDiff(pb.Records, want, false); d != "" {
			t.Fatalf("batch %d: %s", i, d)
		}
		if &pb.Records[0] != &recs[at] || cap(pb.Records) != len(pb.Records) {
			t.Fatalf("batch %d's records do not alias dst[%d:]", i, at)
		}
		at += len(want)
	}
	if at != len(recs) {
		t.Fatalf("%d records, the batches have %d", len(recs), at)
	}
	// On error dst comes back with its length.
	_, recs, err = decodeProduce(append(slices.Clone(b), 0), dst[:2], 1<<20)
	if err == nil || len(recs) != 2 || &recs[0] != &dst[0] {
		t.Fatalf("after an error: %d records, err %v", len(recs), err)
	}
}

// A flipped bit anywhere from the CRC to the end of a batch is a CRC
// mismatch, and the error says which batch.
func TestKBatchDecodeProduceBadCRC(t *testing.T) {
	recs := kbTestRecords()[:3]
	first := kbTestBatch(recs, 0, nil)
	for _, c := range []kbTestCodec{kbTestCodecs[0], kbTestCodecs[1]} {
		good := append(slices.Clone(first), kbTestBatch(recs, c.codec, c.compress)...)
		for at := len(first) + 17; at < len(good); at++ {
			b := slices.Clone(good)
			b[at] ^= 0x04
			_, _, err := decodeProduce(b, nil, 1<<20)
			if !errors.Is(err, errCorruptMessage) || !strings.Contains(err.Error(), "CRC") {
				t.Fatalf("%s: bit flipped at byte %d: %v", c.name, at, err)
			}
			if want := fmt.Sprintf("batch 1 at byte %d", len(first)); !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not say %q", err, want)
			}
		}
	}
}

// Every strict prefix of two batches, except the first batch alone, is
// refused as corrupt.
func TestKBatchDecodeProduceTruncated(t *testing.T) {
	recs := kbTestRecords()[:3]
	b1 := kbTestBatch(recs, 0, nil)
	b := append(slices.Clone(b1), kbTestBatch(recs, 4, kbTestCodecs[5].compress)...)
	for n := range len(b) {
		batches, _, err := decodeProduce(b[:n:n], nil, 1<<20)
		if n == len(b1) {
			if err != nil || len(batches) != 1 {
				t.Fatalf("the first batch alone: %d batches, %v", len(batches), err)
			}
			continue
		}
		if !errors.Is(err, errCorruptMessage) {
			t.Fatalf("%d of %d bytes: %v", n, len(b), err)
		}
	}
}

// Message sets of magic 0 and 1, and any magic but 2, are refused as
// unsupported.
func TestKBatchDecodeProduceMagic(t *testing.T) {
	m := kmsg.MessageV1{Magic: 1, Timestamp: kbTestBaseTS, Key: []byte("k"), Value: []byte("v")}
	m.MessageSize = int32(len(m.AppendTo(nil)) - 12)
	m.CRC = int32(crc32.ChecksumIEEE(m.AppendTo(nil)[16:]))
	v1 := m.AppendTo(nil)
	v0 := kmsg.MessageV0{Magic: 0, Key: []byte("k"), Value: []byte("v")}
	v0.MessageSize = int32(len(v0.AppendTo(nil)) - 12)
	cases := map[string][]byte{"v1": v1, "v0": v0.AppendTo(nil)}
	for _, magic := range []byte{3, 0xff} {
		b := kbTestBatch(kbTestRecords()[:1], 0, nil)
		b[16] = magic
		cases[fmt.Sprintf("magic %d", int8(magic))] = b
	}
	// A good batch then a v1 message: the error is about batch 1.
	cases["second"] = append(kbTestBatch(kbTestRecords()[:1], 0, nil), v1...)
	for name, b := range cases {
		_, _, err := decodeProduce(b, nil, 1<<20)
		if !errors.Is(err, errUnsupportedMagic) {
			t.Fatalf("%s: %v", name, err)
		}
		if name == "second" && !strings.Contains(err.Error(), "batch 1 at byte") {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// Codecs 5 to 7 are refused as unsupported.
func TestKBatchDecodeProduceUnknownCodec(t *testing.T) {
	for codec := int16(5); codec <= 7; codec++ {
		b := kbTestBatch(kbTestRecords()[:2], codec, func(b []byte) []byte { return b })
		_, _, err := decodeProduce(b, nil, 1<<20)
		if !errors.Is(err, errUnsupportedCompression) || !strings.Contains(err.Error(), fmt.Sprint("codec ", codec)) {
			t.Fatalf("codec %d: %v", codec, err)
		}
	}
}

// A batch whose records decompress to more than the limit is refused
// without decompressing all of it; at exactly the limit it is accepted.
// The limit is on the total of the batches of one input.
func TestKBatchDecodeProduceBomb(t *testing.T) {
	const limit = 1 << 20
	bomb := []wlog.Record{{Timestamp: kbTestBaseTS, Value: make([]byte, 16<<20)}}
	for _, c := range kbTestCodecs[1:] {
		t.Run(c.name, func(t *testing.T) {
			b := kbTestBatch(bomb, c.codec, c.compress)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, _, err := decodeProduce(b, nil, limit)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, errCorruptMessage) || !strings.Contains(err.Error(), "limit") {
				t.Fatalf("%d compressed bytes: %v", len(b), err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
				t.Fatalf("refusing a %d-byte bomb allocated %d bytes", len(b), alloc)
			}

			small := kbTestRecords()[:3]
			size := len(kbTestKmsgRecords(small, kbTestBaseTS))
			one := kbTestBatch(small, c.codec, c.compress)
			if _, _, err := decodeProduce(one, nil, size); err != nil {
				t.Fatalf("at the limit: %v", err)
			}
			if _, _, err := decodeProduce(one, nil, size-1); !errors.Is(err, errCorruptMessage) {
				t.Fatalf("one byte over the limit: %v", err)
			}
			two := append(slices.Clone(one), one...)
			if _, _, err := decodeProduce(two, nil, 2*size); err != nil {
				t.Fatalf("two batches at the limit: %v", err)
			}
			if _, _, err := decodeProduce(two, nil, 2*size-1); !errors.Is(err, errCorruptMessage) || !strings.Contains(err.Error(), "batch 1 at byte") {
				t.Fatalf("two batches, one byte over the limit: %v", err)
			}
		})
	}
}

// Batches whose header, count or records are wrong (but whose CRC is
// right) are refused as corrupt, saying where.
func TestKBatchDecodeProduceBadRecords(t *testing.T) {
	recs := kbTestRecords()[:3]
	good := kbTestBatch(recs, 0, nil)
	patch := func(f func(b []byte) []byte) []byte { return kbTestReseal(f(slices.Clone(good))) }
	setCount := func(n int32) []byte {
		return patch(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[23:], uint32(n-1))
			binary.BigEndian.PutUint32(b[57:], uint32(n))
			return b
		})
	}
	// rawBatch builds a batch of one record whose encoding is raw.
	rawBatch := func(raw ...byte) []byte {
		rb := kmsg.RecordBatch{Magic: 2, NumRecords: 1, ProducerID: -1, Records: raw, Length: int32(49 + len(raw))}
		return kbTestReseal(rb.AppendTo(nil))
	}
	cases := []struct {
		name, want string
		b          []byte
	}{
		{"more records counted", "record 3", setCount(4)},
		{"fewer records counted", "bytes after the 2 records", setCount(2)},
		{"no records counted", "record count 0", setCount(0)},
		{"negative count", "record count -1", setCount(-1)},
		{"huge count", "more than", setCount(1 << 30)},
		{"lastOffsetDelta", "lastOffsetDelta 5", patch(func(b []byte) []byte { b[26] = 5; return b })},
		{"short length", "length 48", patch(func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 48); return b })},
		{"negative length", "length -1", func() []byte { b := slices.Clone(good); binary.BigEndian.PutUint32(b[8:], 0xffffffff); return b }()},
		// length 9: attributes 0, ts 0, offset 0, key -1, value 2 "vv", 0 headers, then a stray byte.
		{"record longer than its fields", "1 bytes left over", rawBatch(18, 0, 0, 0, 1, 4, 'v', 'v', 0, 0)},
		{"record shorter than its fields", "header", rawBatch(14, 0, 0, 0, 1, 4, 'v', 'v', 2, 2, 'h')},
		{"record length past the end", "length 40", rawBatch(80, 0, 0, 0, 1, 1, 0)},
		{"negative record length", "length -1", rawBatch(1, 0, 0, 0, 1, 1, 0)},
		{"key length -2", "malformed before the headers", rawBatch(12, 0, 0, 0, 3, 1, 0)},
		{"negative header count", "header count -1", rawBatch(12, 0, 0, 0, 1, 1, 1)},
		{"header count over the bytes", "header count 3", rawBatch(16, 0, 0, 0, 1, 1, 6, 0, 1, 0, 1)},
		{"negative header key length", "malformed header 0", rawBatch(16, 0, 0, 0, 1, 1, 2, 1, 1, 0, 1)},
		{"varint too long", "record 0", rawBatch(22, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01)},
		{"offset delta over int32", "record 0", rawBatch(18, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x20, 1, 1, 0)},
		{"empty batch", "record count 0", kbTestReseal((&kmsg.RecordBatch{Magic: 2, Length: 49, LastOffsetDelta: -1}).AppendTo(nil))},
		{"no input", "no record batch", nil},
	}
	for _, c := range cases {
		_, recs, err := decodeProduce(c.b, nil, 1<<20)
		if !errors.Is(err, errCorruptMessage) || !strings.Contains(err.Error(), c.want) || (c.b != nil && !strings.Contains(err.Error(), "batch 0 at byte 0")) {
			t.Errorf("%s: %v (want an error saying %q)", c.name, err, c.want)
		}
		if len(recs) != 0 {
			t.Errorf("%s: %d records returned with the error", c.name, len(recs))
		}
	}
	// The raw builder makes good batches when the bytes are right.
	_, got, err := decodeProduce(rawBatch(22, 0, 0, 0, 1, 4, 'v', 'v', 2, 2, 'h', 1), nil, 1<<20)
	want := []wlog.Record{{Value: []byte("vv"), Headers: []wlog.Header{{Key: "h", Value: nil}}}}
	if err != nil || kbTestDiff(got, want, true) != "" {
		t.Fatalf("raw batch: %v %s", err, kbTestDiff(got, want, true))
	}
}

// kbTestFetchRecords are records with gaps in their offsets, as a
// compacted topic has, and the same edge cases as kbTestRecords.
func kbTestFetchRecords() []wlog.Record {
	recs := kbTestRecords()
	for i, off := range []int64{1000, 1001, 1005, 1_000_000, 1_000_001} {
		recs[i].Offset = off
	}
	return recs
}

// kbTestKmsgFetchBatch is the reference encoding, by kmsg, of what
// appendFetchBatch must write for recs.
func kbTestKmsgFetchBatch(recs []wlog.Record) []byte {
	var raw []byte
	maxTS := recs[0].Timestamp
	for _, r := range recs {
		kr := kmsg.Record{TimestampDelta64: r.Timestamp - recs[0].Timestamp, OffsetDelta: int32(r.Offset - recs[0].Offset), Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1)
		raw = kr.AppendTo(raw)
		maxTS = max(maxTS, r.Timestamp)
	}
	rb := kmsg.RecordBatch{
		FirstOffset:     recs[0].Offset,
		Length:          int32(49 + len(raw)),
		Magic:           2,
		LastOffsetDelta: int32(recs[len(recs)-1].Offset - recs[0].Offset),
		FirstTimestamp:  recs[0].Timestamp,
		MaxTimestamp:    maxTS,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(len(recs)),
		Records:         raw,
	}
	return kbTestReseal(rb.AppendTo(nil))
}

// kbTestParseFetch parses one batch with kmsg, checks its CRC and returns
// its fields and records (with offsets and timestamps) as a Kafka
// consumer computes them.
func kbTestParseFetch(t *testing.T, b []byte) (kmsg.RecordBatch, []wlog.Record) {
	t.Helper()
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatalf("kmsg: %v", err)
	}
	if int(rb.Length)+12 != len(b) {
		t.Fatalf("length %d for %d bytes", rb.Length, len(b))
	}
	if crc := int32(crc32.Checksum(b[21:], kbTestCastagnoli)); crc != rb.CRC {
		t.Fatalf("CRC %#x, the bytes have %#x", uint32(rb.CRC), uint32(crc))
	}
	var recs []wlog.Record
	rest := rb.Records
	for len(rest) > 0 {
		l, n := binary.Varint(rest)
		if n <= 0 || l < 0 || int(l) > len(rest)-n {
			t.Fatalf("record %d: length %d", len(recs), l)
		}
		var kr kmsg.Record
		if err := kr.ReadFrom(rest[:n+int(l)]); err != nil {
			t.Fatalf("record %d: %v", len(recs), err)
		}
		r := wlog.Record{Offset: rb.FirstOffset + int64(kr.OffsetDelta), Timestamp: rb.FirstTimestamp + kr.TimestampDelta64, Key: kr.Key, Value: kr.Value}
		for _, h := range kr.Headers {
			r.Headers = append(r.Headers, wlog.Header{Key: h.Key, Value: h.Value})
		}
		recs = append(recs, r)
		rest = rest[n+int(l):]
	}
	if len(recs) != int(rb.NumRecords) {
		t.Fatalf("%d records, the batch counts %d", len(recs), rb.NumRecords)
	}
	return rb, recs
}

// appendFetchBatch writes what kmsg writes, byte for byte, and kmsg parses
// it back to the records, offsets with gaps included.
func TestKBatchAppendFetchBatch(t *testing.T) {
	recs := kbTestFetchRecords()
	prefix := []byte("earlier batches")
	out := appendFetchBatch(slices.Clone(prefix), recs)
	if !bytes.HasPrefix(out, prefix) {
		t.Fatal("the bytes already in dst changed")
	}
	b := out[len(prefix):]
	if ref := kbTestKmsgFetchBatch(recs); !bytes.Equal(b, ref) {
		i := 0
		for i < min(len(b), len(ref)) && b[i] == ref[i] {
			i++
		}
		t.Fatalf("%d bytes differ from kmsg's %d at byte %d", len(b), len(ref), i)
	}
	rb, got := kbTestParseFetch(t, b)
	if rb.FirstOffset != 1000 || rb.LastOffsetDelta != 1_000_001-1000 || rb.FirstTimestamp != kbTestBaseTS ||
		rb.MaxTimestamp != kbTestBaseTS+1<<40 || rb.ProducerID != -1 || rb.ProducerEpoch != -1 ||
		rb.FirstSequence != -1 || rb.PartitionLeaderEpoch != 0 || rb.Attributes != 0 || rb.Magic != 2 {
		t.Fatalf("batch header %+v", rb)
	}
	if d := kbTestDiff(got, recs, true); d != "" {
		t.Fatal(d)
	}
	// decodeProduce reads it back too (it ignores offsets).
	_, back, err := decodeProduce(b, nil, 0)
	if err == nil {
		t.Fatal("decodeProduce took a batch whose lastOffsetDelta does not match its count")
	}
	contiguous := slices.Clone(recs)
	for i := range contiguous {
		contiguous[i].Offset = int64(i)
	}
	if _, back, err = decodeProduce(appendFetchBatch(nil, contiguous), nil, 0); err != nil {
		t.Fatal(err)
	}
	if d := kbTestDiff(back, recs, false); d != "" {
		t.Fatal(d)
	}
	// One record, and none.
	if _, got := kbTestParseFetch(t, appendFetchBatch(nil, recs[3:4])); kbTestDiff(got, recs[3:4], true) != "" {
		t.Fatal(kbTestDiff(got, recs[3:4], true))
	}
	if out := appendFetchBatch(prefix, nil); !bytes.Equal(out, prefix) {
		t.Fatalf("no records appended %q", out[len(prefix):])
	}
}

// Offsets that span more than an int32 do not fit one batch.
func TestKBatchAppendFetchBatchSpan(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "do not fit") {
			t.Fatalf("recovered %v", r)
		}
	}()
	appendFetchBatch(nil, []wlog.Record{{Offset: 0}, {Offset: 1 << 31}})
}

// With dst large enough, appendFetchBatch does not allocate.
func TestKBatchAppendFetchBatchAllocs(t *testing.T) {
	recs := kbTestBenchRecords(100, 1<<10)
	dst := appendFetchBatch(nil, recs)
	if allocs := testing.AllocsPerRun(100, func() { dst = appendFetchBatch(dst[:0], recs) }); allocs != 0 {
		t.Fatalf("%v allocations per batch", allocs)
	}
	if _, got := kbTestParseFetch(t, dst); kbTestDiff(got, recs, true) != "" {
		t.Fatal(kbTestDiff(got, recs, true))
	}
}

// kbTestCluster starts a one-broker fake Kafka with topic "t" (one
// partition).
func kbTestCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// kbTestKgoRecords are recs as franz-go records for partition 0 of "t".
func kbTestKgoRecords(recs []wlog.Record) []*kgo.Record {
	var out []*kgo.Record
	for _, r := range recs {
		kr := &kgo.Record{Topic: "t", Key: r.Key, Value: r.Value, Timestamp: time.UnixMilli(r.Timestamp)}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		out = append(out, kr)
	}
	return out
}

// What franz-go's producer sends, with every codec, idempotent and
// transactional, decodes to the records produced.
func TestKBatchFranzProducer(t *testing.T) {
	want := kbTestRecords()
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	for name, codec := range codecs {
		for _, txn := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/txn=%v", name, txn), func(t *testing.T) {
				c := kbTestCluster(t)
				var mu sync.Mutex
				var sent [][]byte
				c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
					req := kreq.(*kmsg.ProduceRequest)
					mu.Lock()
					defer mu.Unlock()
					for _, tp := range req.Topics {
						for _, p := range tp.Partitions {
							sent = append(sent, slices.Clone(p.Records))
						}
					}
					return nil, nil, false
				})
				opts := []kgo.Opt{
					kgo.SeedBrokers(c.ListenAddrs()...),
					kgo.ProducerBatchCompression(codec),
					kgo.RecordPartitioner(kgo.ManualPartitioner()),
				}
				if txn {
					opts = append(opts, kgo.TransactionalID("kbatch"))
				}
				cl, err := kgo.NewClient(opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer cl.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if txn {
					if err := cl.BeginTransaction(); err != nil {
						t.Fatal(err)
					}
				}
				// Two produce calls: two batches at least.
				if err := cl.ProduceSync(ctx, kbTestKgoRecords(want[:3])...).FirstErr(); err != nil {
					t.Fatal(err)
				}
				if err := cl.ProduceSync(ctx, kbTestKgoRecords(want[3:])...).FirstErr(); err != nil {
					t.Fatal(err)
				}
				if txn {
					if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
						t.Fatal(err)
					}
				}
				mu.Lock()
				defer mu.Unlock()
				var got []wlog.Record
				var seq int32
				for i, b := range sent {
					batches, recs, err := decodeProduce(b, got, 1<<20)
					if err != nil {
						t.Fatalf("request %d: %v", i, err)
					}
					for _, pb := range batches {
						if pb.ProducerID < 0 || pb.BaseSequence != seq || pb.Transactional != txn || pb.Control {
							t.Fatalf("request %d: batch %+v, want sequence %d", i, pb, seq)
						}
						seq += pb.NumRecords
					}
					got = recs
				}
				if d := kbTestDiff(got, want, false); d != "" {
					t.Fatalf("%d requests: %s", len(sent), d)
				}
			})
		}
	}
}

// franz-go's consumer, CRC check on, reads what appendFetchBatch writes,
// offsets with gaps included.
func TestKBatchFranzConsumer(t *testing.T) {
	want := kbTestFetchRecords()
	// Two batches in one response, the second starting after a gap.
	batches := appendFetchBatch(nil, want[:3])
	batches = appendFetchBatch(batches, want[3:])
	last := want[len(want)-1].Offset
	c := kbTestCluster(t)
	c.ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.FetchRequest)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewFetchResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = last+1, last+1, 0
				if rp.FetchOffset <= last {
					sp.RecordBatches = batches
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		if len(resp.Topics) == 0 || resp.Topics[0].Partitions[0].RecordBatches == nil {
			return nil, nil, false // nothing new: kfake answers, after its long poll
		}
		return resp, nil, true
	})
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.ListenAddrs()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset().At(want[0].Offset)}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []wlog.Record
	for len(got) < len(want) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%d records of %d: %v", len(got), len(want), err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("%s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			wr := wlog.Record{Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(), Key: r.Key, Value: r.Value}
			for _, h := range r.Headers {
				wr.Headers = append(wr.Headers, wlog.Header{Key: h.Key, Value: h.Value})
			}
			got = append(got, wr)
		})
	}
	if d := kbTestDiff(got, want, true); d != "" {
		t.Fatal(d)
	}
}

// kbTestResealAll recomputes the CRC of every batch of b whose framing
// is whole, so that fuzzing gets past the CRC.
func kbTestResealAll(b []byte) []byte {
	for pos := 0; len(b)-pos >= 21; {
		n := int64(int32(binary.BigEndian.Uint32(b[pos+8:])))
		if n < 9 || int64(len(b)-pos) < 12+n {
			break
		}
		kbTestReseal(b[pos:])
		pos += int(12 + n)
	}
	return b
}

// decodeProduce never panics; what it accepts satisfies its invariants,
// and appendFetchBatch writes it back as a batch that kmsg parses to the
// same records.
func FuzzDecodeProduce(f *testing.F) {
	recs := kbTestRecords()
	for i := range recs {
		recs[i].Value = recs[i].Value[:min(len(recs[i].Value), 100)]
	}
	for _, c := range kbTestCodecs {
		f.Add(kbTestBatch(recs, c.codec, c.compress), false)
		f.Add(kbTestBatch(recs[1:3], c.codec, c.compress), true)
	}
	two := append(kbTestBatch(recs[:1], 0, nil), kbTestBatch(recs[2:], 0, nil)...)
	f.Add(two, false)
	bad := slices.Clone(two)
	bad[30] ^= 1
	f.Add(bad, true)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, b []byte, reseal bool) {
		if reseal {
			b = kbTestResealAll(b)
		}
		batches, got, err := decodeProduce(b, nil, 1<<20)
		if err != nil {
			if batches != nil || len(got) != 0 {
				t.Fatalf("error %v with %d batches, %d records", err, len(batches), len(got))
			}
			if !errors.Is(err, errCorruptMessage) && !errors.Is(err, errUnsupportedMagic) && !errors.Is(err, errUnsupportedCompression) {
				t.Fatalf("error wraps none of the three: %v", err)
			}
			return
		}
		n := 0
		for i, pb := range batches {
			if len(pb.Records) != int(pb.NumRecords) || pb.NumRecords <= 0 {
				t.Fatalf("batch %d: %d records, counts %d", i, len(pb.Records), pb.NumRecords)
			}
			if &pb.Records[0] != &got[n] {
				t.Fatalf("batch %d's records do not alias dst", i)
			}
			n += len(pb.Records)
		}
		if n != len(got) {
			t.Fatalf("%d records, the batches have %d", len(got), n)
		}
		for i := range got {
			got[i].Offset = int64(i) * 3
		}
		_, back := kbTestParseFetch(t, appendFetchBatch(nil, got))
		if d := kbTestDiff(back, got, true); d != "" {
			t.Fatal(d)
		}
	})
}

// kbTestBenchRecords returns n records with size-byte values, a 16-byte
// key and a header, at consecutive offsets.
func kbTestBenchRecords(n, size int) []wlog.Record {
	recs := make([]wlog.Record, n)
	for i := range recs {
		v := make([]byte, size)
		for j := range v {
			v[j] = "abcdefghijklmnopqrstuvwxyz0123456789 "[(i*31+j*j)%37]
		}
		recs[i] = wlog.Record{
			Offset:    int64(500 + i),
			Timestamp: kbTestBaseTS + int64(i),
			Key:       fmt.Appendf(nil, "key-%012d", i),
			Value:     v,
			Headers:   []wlog.Header{{Key: "trace", Value: []byte("0123456789abcdef")}},
		}
	}
	return recs
}

// BenchmarkAppendFetchBatch encodes a batch of 100 records of 1 KiB values.
func BenchmarkAppendFetchBatch(b *testing.B) {
	recs := kbTestBenchRecords(100, 1<<10)
	dst := appendFetchBatch(nil, recs)
	b.SetBytes(int64(len(dst)))
	b.ReportAllocs()
	for b.Loop() {
		dst = appendFetchBatch(dst[:0], recs)
	}
}

// BenchmarkDecodeProduce decodes a produce batch of 100 records of 1 KiB
// values, per codec, into a reused dst.
func BenchmarkDecodeProduce(b *testing.B) {
	recs := kbTestBenchRecords(100, 1<<10)
	raw := len(kbTestKmsgRecords(recs, recs[0].Timestamp))
	for _, c := range kbTestCodecs {
		b.Run(c.name, func(b *testing.B) {
			batch := kbTestBatch(recs, c.codec, c.compress)
			dst := make([]wlog.Record, 0, len(recs))
			b.SetBytes(int64(raw))
			b.ReportAllocs()
			for b.Loop() {
				_, out, err := decodeProduce(batch, dst[:0], 1<<20)
				if err != nil {
					b.Fatal(err)
				}
				dst = out
			}
		})
	}
}
