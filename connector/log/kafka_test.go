package wlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

// kafkaBatch encodes recs as a Kafka RecordBatch (v2, uncompressed), as
// a producer does: base offset 0, offset deltas 0, 1, …, timestamps as
// deltas from the first record's, and an idempotent producer's fields.
func kafkaBatch(recs []Record) []byte {
	first := recs[0].Timestamp
	maxTS := first
	var body []byte
	for i, r := range recs {
		maxTS = max(maxTS, r.Timestamp)
		var rb []byte
		rb = append(rb, 0)
		rb = binary.AppendVarint(rb, r.Timestamp-first)
		rb = binary.AppendVarint(rb, int64(i))
		rb = appendBytes(rb, r.Key)
		rb = appendBytes(rb, r.Value)
		rb = binary.AppendVarint(rb, int64(len(r.Headers)))
		for _, h := range r.Headers {
			rb = binary.AppendVarint(rb, int64(len(h.Key)))
			rb = append(rb, h.Key...)
			rb = appendBytes(rb, h.Value)
		}
		body = binary.AppendVarint(body, int64(len(rb)))
		body = append(body, rb...)
	}
	b := make([]byte, kafkaHeaderSize, kafkaHeaderSize+len(body))
	binary.BigEndian.PutUint32(b[8:], uint32(kafkaHeaderSize-12+len(body)))
	b[16] = kafkaMagic
	binary.BigEndian.PutUint32(b[23:], uint32(len(recs)-1))
	binary.BigEndian.PutUint64(b[27:], uint64(first))
	binary.BigEndian.PutUint64(b[35:], uint64(maxTS))
	binary.BigEndian.PutUint64(b[43:], 7)  // producer id
	binary.BigEndian.PutUint16(b[51:], 1)  // epoch
	binary.BigEndian.PutUint32(b[53:], 42) // base sequence
	binary.BigEndian.PutUint32(b[57:], uint32(len(recs)))
	b = append(b, body...)
	binary.BigEndian.PutUint32(b[kafkaCRCOffset:], crc32.Checksum(b[kafkaAttrOffset:], crcTable))
	return b
}

func TestCRC32CCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		a := make([]byte, rng.IntN(300))
		b := make([]byte, rng.IntN(5000))
		for i := range a {
			a[i] = byte(rng.Uint32())
		}
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		want := crc32.Checksum(append(slices.Clone(a), b...), crcTable)
		if got := crc32cCombine(crc32.Checksum(a, crcTable), crc32.Checksum(b, crcTable), int64(len(b))); got != want {
			t.Fatalf("combine of %d and %d bytes: %#x, want %#x", len(a), len(b), got, want)
		}
	}
}

// kafkaRecs makes n records from i on, some with headers, nil keys and
// values and empty ones.
func kafkaRecs(i, n int) []Record {
	recs := make([]Record, n)
	for j := range recs {
		k := i + j
		recs[j] = Record{Timestamp: int64(5000 + k*3 - (k%4)*5), Key: fmt.Appendf(nil, "k%d", k%7), Value: fmt.Appendf(nil, "value %d", k)}
		switch k % 5 {
		case 1:
			recs[j].Key = nil
		case 2:
			recs[j].Value = []byte{}
			recs[j].Headers = []Header{{Key: "h", Value: []byte("x")}, {Key: "", Value: nil}}
		case 3:
			recs[j].Value = nil
			recs[j].Headers = []Header{{Key: "trace", Value: []byte{}}}
		}
	}
	return recs
}

func sameRecords(t *testing.T, got, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Offset != w.Offset || g.Timestamp != w.Timestamp || !bytes.Equal(g.Key, w.Key) || (g.Key == nil) != (w.Key == nil) ||
			!bytes.Equal(g.Value, w.Value) || (g.Value == nil) != (w.Value == nil) || len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d: got %+v, want %+v", i, g, w)
		}
		for j := range g.Headers {
			gh, wh := g.Headers[j], w.Headers[j]
			if gh.Key != wh.Key || !bytes.Equal(gh.Value, wh.Value) || (gh.Value == nil) != (wh.Value == nil) {
				t.Fatalf("record %d header %d: got %+v, want %+v", i, j, gh, wh)
			}
		}
	}
}

// kafkaLog appends batches of both kinds (and with and without a producer
// section) and returns the records and, per Kafka batch, its first offset
// and bytes as appended.
func kafkaLog(t *testing.T, w *Writer) ([]Record, map[int64][]byte) {
	t.Helper()
	var all []Record
	kbs := map[int64][]byte{}
	for i, n := 0, 0; i < 24; i++ {
		recs := kafkaRecs(n, 1+i%5)
		var first int64
		var err error
		switch i % 4 {
		case 0:
			first, err = w.Append(slices.Clone(recs))
		case 1:
			kb := kafkaBatch(recs)
			first, err = w.AppendKafka(kb, "", ProducerSeq{})
			kbs[first] = kb
		case 2:
			first, err = w.AppendAs(slices.Clone(recs), "p", ProducerSeq{Epoch: 1, Checkpoint: int64(i), Index: 1})
		case 3:
			kb := kafkaBatch(recs)
			first, err = w.AppendKafka(kb, "kafka/7", ProducerSeq{Epoch: 1, Checkpoint: int64(i), Index: 2})
			kbs[first] = kb
		}
		if err != nil {
			t.Fatal(err)
		}
		for j := range recs {
			recs[j].Offset = first + int64(j)
		}
		all = append(all, recs...)
		n += len(recs)
	}
	return all, kbs
}

func TestAppendKafkaReadsAsRecords(t *testing.T) {
	tp := newTopic(t, TopicConfig{SegmentBytes: 1 << 10})
	w := openWriter(t, tp)
	all, kbs := kafkaLog(t, w)
	for first, kb := range kbs {
		if got := int64(binary.BigEndian.Uint64(kb)); got != first {
			t.Fatalf("Kafka batch at %d has base offset %d", first, got)
		}
	}
	sameRecords(t, readAll(t, tp, Earliest()), all)
	for _, at := range []int{1, 7, 30, len(all) - 1} {
		sameRecords(t, readAll(t, tp, AtOffset(int64(at))), all[at:])
	}
	// A writer opened again (recovery scans the active segment) goes on.
	w.Close()
	w = openWriter(t, tp)
	if next := w.NextOffset(); next != int64(len(all)) {
		t.Fatalf("next offset %d after reopening, want %d", next, len(all))
	}
	var prods []string
	if err := tp.ScanProducers(0, func(p []byte, seq ProducerSeq, first, last int64) {
		prods = append(prods, fmt.Sprintf("%s %d %d-%d", p, seq.Checkpoint, first, last))
	}); err != nil {
		t.Fatal(err)
	}
	// Batches 2, 3, 6, 7, … carry producers p and kafka/7 in turn.
	if len(prods) != 12 || !strings.HasPrefix(prods[0], "p 2 ") || !strings.HasPrefix(prods[1], "kafka/7 3 ") {
		t.Fatalf("producers %v", prods)
	}
}

func TestReadKafka(t *testing.T) {
	tp := newTopic(t, TopicConfig{SegmentBytes: 1 << 10})
	w := openWriter(t, tp)
	all, kbs := kafkaLog(t, w)
	// Read everything: Kafka batches as bytes (equal to those appended),
	// the others as records.
	read := func(start int64, room int, below int64) (got []Record, batches [][]byte) {
		t.Helper()
		r, err := tp.OpenReader(0, AtOffset(start))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for {
			res, err := r.ReadKafka(nil, room, true, below, 3)
			if err == io.EOF {
				return got, batches
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Full {
				t.Fatalf("Full with first set")
			}
			if res.Batches > 0 && res.Records != nil {
				t.Fatalf("batches and records in one read")
			}
			for b := res.Buf; len(b) > 0; {
				n := 12 + int(binary.BigEndian.Uint32(b[8:]))
				batches = append(batches, b[:n])
				first := int64(binary.BigEndian.Uint64(b))
				if !bytes.Equal(b[:n], kbs[first]) {
					t.Fatalf("Kafka batch at %d differs from the one appended", first)
				}
				it, err := kafkaIter(batchHeader{baseOffset: first, lastOffset: first + int64(binary.BigEndian.Uint32(b[23:])), count: binary.BigEndian.Uint32(b[57:])}, b[:n])
				if err != nil {
					t.Fatal(err)
				}
				for !it.done() {
					var rec Record
					if _, err := it.next(&rec, nil); err != nil {
						t.Fatal(err)
					}
					got = append(got, rec)
				}
				b = b[n:]
			}
			got = append(got, res.Records...)
		}
	}
	got, batches := read(0, 1<<20, 1<<40)
	sameRecords(t, got, all)
	if len(batches) != len(kbs) {
		t.Fatalf("%d Kafka batches read, %d appended", len(batches), len(kbs))
	}
	// From inside a Kafka batch: the whole batch, as Kafka answers.
	var inside int64 = -1
	for first, kb := range kbs {
		if binary.BigEndian.Uint32(kb[57:]) > 1 {
			inside = first + 1
			break
		}
	}
	got, _ = read(inside, 1<<20, 1<<40)
	if got[0].Offset != inside-1 {
		t.Fatalf("read from %d starts at %d, want the batch's start %d", inside, got[0].Offset, inside-1)
	}
	sameRecords(t, got, all[inside-1:])
	// Below a limit inside a Kafka batch: that batch comes as records.
	limit := inside
	got, _ = read(0, 1<<20, limit)
	sameRecords(t, got[:limit], all[:limit])
	// A room of 0 bytes: one batch per read (first), each a whole one.
	got, _ = read(0, 0, 1<<40)
	sameRecords(t, got, all)

	// Without first, a batch larger than room is not read: Full.
	r, err := tp.OpenReader(0, Earliest())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		res, err := r.ReadKafka(nil, 10, false, 1<<40, 100)
		if err != nil {
			t.Fatal(err)
		}
		if res.Full {
			if res.Batches != 0 || res.Records != nil || r.Next() != kafkaFirst(kbs) {
				t.Fatalf("Full at %d (%+v), want at the first Kafka batch %d", r.Next(), res, kafkaFirst(kbs))
			}
			break
		}
		if res.Batches != 0 {
			t.Fatalf("a Kafka batch read with a room of 10 bytes")
		}
	}
}

func kafkaFirst(kbs map[int64][]byte) int64 {
	return slices.Min(slices.Collect(func(yield func(int64) bool) {
		for k := range kbs {
			if !yield(k) {
				return
			}
		}
	}))
}

func TestAppendKafkaRefuses(t *testing.T) {
	tp := newTopic(t, TopicConfig{})
	w := openWriter(t, tp)
	good := kafkaBatch(kafkaRecs(0, 3))
	for name, change := range map[string]func(b []byte) []byte{
		"CRC":          func(b []byte) []byte { b[len(b)-1] ^= 1; return b },
		"compressed":   func(b []byte) []byte { b[22] |= 2; return b },
		"control":      func(b []byte) []byte { b[22] |= 0x20; return b },
		"magic":        func(b []byte) []byte { b[16] = 1; return b },
		"length":       func(b []byte) []byte { return b[:len(b)-1] },
		"record count": func(b []byte) []byte { binary.BigEndian.PutUint32(b[57:], 2); return b },
		"offset delta": func(b []byte) []byte {
			recs := kafkaRecs(0, 3)
			b = kafkaBatch(recs)
			// The second record's offset delta 1 becomes 2 (same size).
			at := kafkaHeaderSize
			l, n := binary.Varint(b[at:])
			at += n + int(l)
			_, n = binary.Varint(b[at:])
			at += n + 1
			_, n = binary.Varint(b[at:])
			b[at+n] = 4 // zigzag 2
			binary.BigEndian.PutUint32(b[kafkaCRCOffset:], crc32.Checksum(b[kafkaAttrOffset:], crcTable))
			return b
		},
	} {
		b := change(slices.Clone(good))
		if name != "compressed" && name != "control" && name != "CRC" && name != "offset delta" {
			binary.BigEndian.PutUint32(b[kafkaCRCOffset:], crc32.Checksum(b[kafkaAttrOffset:], crcTable))
		}
		if name == "compressed" || name == "control" {
			binary.BigEndian.PutUint32(b[kafkaCRCOffset:], crc32.Checksum(b[kafkaAttrOffset:], crcTable))
		}
		if _, err := w.AppendKafka(b, "", ProducerSeq{}); err == nil {
			t.Errorf("%s: appended", name)
		}
	}
	if w.NextOffset() != 0 {
		t.Fatalf("next offset %d after refusals", w.NextOffset())
	}
	if _, err := w.AppendKafka(good, "", ProducerSeq{}); err != nil {
		t.Fatal(err)
	}
}

// TestKafkaBatchDamage: a flipped byte in the records of a Kafka batch is
// damage to Read (which checks the log's CRC); ReadKafka hands the batch
// over (its Kafka CRC, which the client checks, no longer matches); a
// flipped byte in the header is damage to both.
func TestKafkaBatchDamage(t *testing.T) {
	for _, where := range []string{"records", "header", "kafka crc"} {
		t.Run(where, func(t *testing.T) {
			tp := newTopic(t, TopicConfig{})
			w := openWriter(t, tp)
			kb := kafkaBatch(kafkaRecs(0, 4))
			if _, err := w.AppendKafka(kb, "", ProducerSeq{}); err != nil {
				t.Fatal(err)
			}
			if _, err := w.AppendKafka(kafkaBatch(kafkaRecs(4, 4)), "", ProducerSeq{}); err != nil {
				t.Fatal(err)
			}
			w.Close()
			path := logPath(tp.partDir(0), 0)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			switch where {
			case "records":
				b[batchHeaderSize+kafkaHeaderSize+5] ^= 0x10
			case "header":
				b[20] ^= 1 // the base offset
			case "kafka crc":
				b[batchHeaderSize+kafkaCRCOffset] ^= 1
			}
			if err := overwrite(path, b); err != nil {
				t.Fatal(err)
			}
			if _, err := readAllErr(tp, Earliest()); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Read: %v, want corrupt", err)
			}
			r, err := tp.OpenReader(0, Earliest())
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			res, err := r.ReadKafka(nil, 1<<20, true, 1<<40, 10)
			if where == "records" {
				if err != nil || res.Batches != 2 {
					t.Fatalf("ReadKafka: %d batches, %v", res.Batches, err)
				}
				if crc32.Checksum(res.Buf[kafkaAttrOffset:len(kb)], crcTable) == binary.BigEndian.Uint32(res.Buf[kafkaCRCOffset:]) {
					t.Fatal("the damaged batch's Kafka CRC matches")
				}
				return
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("ReadKafka: %d batches, %v, want corrupt", res.Batches, err)
			}
		})
	}
}

// TestCompactKafkaBatches: compaction rewrites Kafka batches as records,
// keeping the latest per key.
func TestCompactKafkaBatches(t *testing.T) {
	tp := newTopic(t, TopicConfig{Compact: true, SegmentBytes: 1 << 10})
	w := openWriter(t, tp)
	all, _ := kafkaLog(t, w)
	if err := w.Roll(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Clean(w.wcfg.now()); err != nil {
		t.Fatal(err)
	}
	latest := map[string]int64{}
	for _, r := range all {
		if r.Key != nil {
			latest[string(r.Key)] = r.Offset
		}
	}
	var want []Record
	for _, r := range all {
		if r.Key == nil || latest[string(r.Key)] == r.Offset {
			want = append(want, r)
		}
	}
	sameRecords(t, readAll(t, tp, Earliest()), want)
}

// TestReadKafkaLarge: batches larger than the reader's cache are read
// straight into the caller's buffer (readKafkaDirect), mixed with small
// ones and with batches of records; a damaged header is damage, a damaged
// record is left to the Kafka CRC.
func TestReadKafkaLarge(t *testing.T) {
	tp := newTopic(t, TopicConfig{SegmentBytes: 1 << 20})
	w := openWriter(t, tp)
	var all []Record
	kbs := map[int64][]byte{}
	big := func(i, n int) []Record {
		recs := kafkaRecs(i, n)
		for j := range recs {
			recs[j].Value = bytes.Repeat([]byte{byte(i + j)}, 20<<10)
		}
		return recs
	}
	for i, n := 0, 0; i < 30; i++ {
		var recs []Record
		if i%3 == 2 {
			recs = kafkaRecs(n, 2)
		} else {
			recs = big(n, 4+i%3)
		}
		var first int64
		var err error
		switch {
		case i%5 == 4:
			first, err = w.Append(slices.Clone(recs))
		case i%2 == 0:
			kb := kafkaBatch(recs)
			first, err = w.AppendKafka(kb, "", ProducerSeq{})
			kbs[first] = kb
		default:
			kb := kafkaBatch(recs)
			first, err = w.AppendKafka(kb, "kafka/9", ProducerSeq{Epoch: 2, Checkpoint: int64(i)})
			kbs[first] = kb
		}
		if err != nil {
			t.Fatal(err)
		}
		for j := range recs {
			recs[j].Offset = first + int64(j)
		}
		all = append(all, recs...)
		n += len(recs)
	}
	sameRecords(t, readAll(t, tp, Earliest()), all)
	for _, room := range []int{0, 100 << 10, 1 << 20} {
		r, err := tp.OpenReader(0, Earliest())
		if err != nil {
			t.Fatal(err)
		}
		var got []Record
		for {
			res, err := r.ReadKafka(nil, room, true, 1<<40, 5)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Batches > 0 && len(res.Buf) > max(room, 200<<10) {
				t.Fatalf("room %d: %d bytes", room, len(res.Buf))
			}
			for b := res.Buf; len(b) > 0; {
				n := 12 + int(binary.BigEndian.Uint32(b[8:]))
				first := int64(binary.BigEndian.Uint64(b))
				if !bytes.Equal(b[:n], kbs[first]) {
					t.Fatalf("room %d: Kafka batch at %d differs from the one appended", room, first)
				}
				for j := range int(binary.BigEndian.Uint32(b[57:])) {
					got = append(got, all[first+int64(j)])
				}
				b = b[n:]
			}
			got = append(got, res.Records...)
		}
		r.Close()
		sameRecords(t, got, all)
	}
	w.Close()
	// Damage to the header of the first (large) batch: corrupt to both.
	path := logPath(tp.partDir(0), 0)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[20] ^= 1
	if err := overwrite(path, b); err != nil {
		t.Fatal(err)
	}
	r, err := tp.OpenReader(0, Earliest())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if res, err := r.ReadKafka(nil, 1<<20, true, 1<<40, 5); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadKafka of a damaged header: %d batches, %v", res.Batches, err)
	}
}

// TestAppendKafkaChecked: a batch whose CRC the caller checked appends as
// with AppendKafka; one whose CRC does not match (a caller that did not
// check) is appended but reads back as damage, never as records; a batch
// that is not as AppendKafka requires is refused all the same.
func TestAppendKafkaChecked(t *testing.T) {
	tp := newTopic(t, TopicConfig{})
	w := openWriter(t, tp)
	recs := kafkaRecs(0, 4)
	if _, err := w.AppendKafkaChecked(kafkaBatch(recs), "", ProducerSeq{}); err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		recs[i].Offset = int64(i)
	}
	sameRecords(t, readAll(t, tp, Earliest()), recs)

	bad := kafkaBatch(kafkaRecs(4, 4))
	binary.BigEndian.PutUint32(bad[kafkaCRCOffset:], binary.BigEndian.Uint32(bad[kafkaCRCOffset:])^1)
	if _, err := w.AppendKafka(slices.Clone(bad), "", ProducerSeq{}); err == nil {
		t.Fatal("AppendKafka appended a batch whose CRC does not match")
	}
	compressed := kafkaBatch(kafkaRecs(4, 4))
	compressed[kafkaAttrOffset+1] |= 2 // snappy
	if _, err := w.AppendKafkaChecked(compressed, "", ProducerSeq{}); !errors.Is(err, ErrKafkaBatch) {
		t.Fatalf("AppendKafkaChecked of a compressed batch: %v, want ErrKafkaBatch", err)
	}
	if _, err := w.AppendKafkaChecked(bad, "", ProducerSeq{}); err != nil {
		t.Fatal(err)
	}
	if _, err := readAllErr(tp, Earliest()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Read after a batch with a wrong CRC: %v, want ErrCorrupt", err)
	}
}
