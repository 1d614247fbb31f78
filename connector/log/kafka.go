package wlog

// Batches in Kafka's form: a batch with flagKafka holds, after its header
// (and producer section, if any), one Kafka RecordBatch (message format
// v2, "magic 2"), uncompressed, whose base offset is the batch's. Its
// records are the batch's records. Writer.AppendKafka appends one;
// Reader.ReadKafka hands it back as bytes, so that a server of the Kafka
// protocol (weir broker) answers a fetch by copying bytes, without
// decoding and encoding records. Every other reader decodes its records
// as those of any batch.
//
// A Kafka RecordBatch, big-endian:
//
//	0  int64 baseOffset
//	8  int32 length                bytes after this field
//	12 int32 partitionLeaderEpoch
//	16 int8  magic                 2
//	17 uint32 crc                  CRC-32C of bytes [21, 12+length)
//	21 int16 attributes            bits 0-2 codec, 3 timestamp type, 4 transactional, 5 control
//	23 int32 lastOffsetDelta
//	27 int64 firstTimestamp
//	35 int64 maxTimestamp
//	43 int64 producerId
//	51 int16 producerEpoch
//	53 int32 baseSequence
//	57 int32 numRecords
//	61 records
//
// A record, its integers zigzag varints: length of the rest, int8
// attributes, timestampDelta, offsetDelta, key (length, -1 for null, and
// bytes), value (the same), header count, then per header the key (length
// and bytes) and the value (length, -1 for null, and bytes).
//
// The log's CRC of such a batch is computed from the Kafka batch's own
// CRC (they are the same CRC-32C), without a second pass over the
// records: see crc32cCombine. So a reader that checks the log's CRC also
// checks the Kafka CRC, and one that checks the batch's header against
// the Kafka CRC (checkBatchKafka, what ReadKafka does) leaves the records
// to be checked against the Kafka CRC by whoever reads them: a Kafka
// client does.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
)

const (
	// flagKafka: the records are a Kafka RecordBatch (see above).
	flagKafka = 0x02

	kafkaHeaderSize = 61
	kafkaMagic      = 2
	kafkaCRCOffset  = 17
	kafkaAttrOffset = 21
	// kafkaAttrAllowed are the attribute bits a batch of the log may
	// have: transactional (which readers ignore). Compression, the
	// LogAppendTime type and control batches are refused.
	kafkaAttrAllowed = 0x10
)

// kafkaBody returns the Kafka RecordBatch of the batch b (checked framing,
// flagKafka set), after its producer section prod.
func kafkaBody(b []byte, h batchHeader, prod []byte) []byte {
	return b[batchHeaderSize+len(prod) : h.size()]
}

// AppendKafka appends kb, one Kafka RecordBatch (message format v2,
// uncompressed, not a control batch, CreateTime), as one batch, and
// returns the offset of its first record. Its records get the offsets
// from the writer's next one on: kb's offset deltas must be 0, 1, 2, …
// (as producers write them), and AppendKafka sets kb's base offset (kb
// is changed). Timestamps are kept as they are (a zero timestamp is not
// replaced by the writer's clock, as Append does). kb's CRC must match
// and its records parse; headers are limited to MaxHeaders a record. With
// a producer id (not "") the batch carries the producer section, as
// AppendAs. Readers see the records as any others.
func (w *Writer) AppendKafka(kb []byte, producer string, seq ProducerSeq) (int64, error) {
	return w.appendKafka(kb, producer, seq, true, nil)
}

// AppendKafkaChecked is AppendKafka for a caller that has just checked
// kb's CRC itself (a Kafka broker checks each produced batch's as it
// parses the request): the CRC is not computed a second time. The rest
// is checked as AppendKafka checks it. The log's own CRC of the batch is
// derived from kb's, so a batch whose CRC did not match its bytes would
// read back as damaged (ErrCorrupt), never as other records.
func (w *Writer) AppendKafkaChecked(kb []byte, producer string, seq ProducerSeq) (int64, error) {
	return w.appendKafka(kb, producer, seq, false, nil)
}

// AppendKafkaTo is AppendKafkaChecked whose fsync is left to g: under
// SyncEveryBatch the batch is written and its segment's fdatasync
// started in g, and the batch is durable once g.Wait returns nil (see
// SyncGroup). Under other policies it is AppendKafkaChecked.
func (w *Writer) AppendKafkaTo(g *SyncGroup, kb []byte, producer string, seq ProducerSeq) (int64, error) {
	return w.appendKafka(kb, producer, seq, false, g)
}

func (w *Writer) appendKafka(kb []byte, producer string, seq ProducerSeq, crc bool, g *SyncGroup) (int64, error) {
	var prod []byte
	if producer != "" {
		if len(producer) > MaxProducerName {
			return 0, fmt.Errorf("wlog: producer id of %d bytes: want 1 to %d", len(producer), MaxProducerName)
		}
		prod = appendProducerSection(nil, producer, prodSeq{epoch: seq.Epoch, ckpt: seq.Checkpoint, idx: seq.Index})
	}
	count, maxTS, err := checkKafka(kb, crc)
	if err != nil {
		return 0, fmt.Errorf("AppendKafka: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return 0, err
	}
	first := w.mu.next
	last := first + int64(count) - 1
	binary.BigEndian.PutUint64(kb, uint64(first))
	head := append(w.mu.buf[:0], make([]byte, batchHeaderSize)...)
	head = append(head, prod...)
	w.mu.buf = head
	flags := uint8(flagKafka)
	if prod != nil {
		flags |= flagProducer
	}
	sealKafkaBatch(head, kb, flags, count, first, last, maxTS)
	if err := w.writeLocked(head, kb, first, last, maxTS, g); err != nil {
		return 0, err
	}
	return first, nil
}

// sealKafkaBatch fills in the header head (the batch's header and
// producer section; the Kafka batch kb follows it) and its CRC, computed
// from kb's CRC.
func sealKafkaBatch(head, kb []byte, flags uint8, count int, base, last, maxTS int64) {
	binary.BigEndian.PutUint32(head[0:], uint32(len(head)+len(kb)-4))
	head[8] = batchMagic
	head[9] = flags
	head[10], head[11] = 0, 0
	binary.BigEndian.PutUint32(head[12:], uint32(count))
	binary.BigEndian.PutUint64(head[16:], uint64(base))
	binary.BigEndian.PutUint64(head[24:], uint64(last))
	binary.BigEndian.PutUint64(head[32:], uint64(maxTS))
	crc := crc32.Update(crc32.Checksum(head[8:], crcTable), crcTable, kb[:kafkaAttrOffset])
	crc = crc32cCombine(crc, binary.BigEndian.Uint32(kb[kafkaCRCOffset:]), int64(len(kb)-kafkaAttrOffset))
	binary.BigEndian.PutUint32(head[4:], crc)
}

// ErrKafkaBatch is wrapped by the errors of AppendKafka about a batch it
// refuses (not as it requires, or not valid): nothing was appended.
var ErrKafkaBatch = errors.New("wlog: invalid Kafka record batch")

// checkKafka checks the Kafka RecordBatch kb as AppendKafka requires it
// (and its CRC if crc), and returns its record count and largest
// timestamp.
func checkKafka(kb []byte, crc bool) (int, int64, error) {
	if len(kb) < kafkaHeaderSize {
		return 0, 0, fmt.Errorf("%w: %d bytes", ErrKafkaBatch, len(kb))
	}
	if kb[16] != kafkaMagic {
		return 0, 0, fmt.Errorf("%w: magic %d", ErrKafkaBatch, kb[16])
	}
	if l := int64(int32(binary.BigEndian.Uint32(kb[8:]))); l != int64(len(kb)-12) {
		return 0, 0, fmt.Errorf("%w: length %d for %d bytes", ErrKafkaBatch, l, len(kb))
	}
	if attrs := binary.BigEndian.Uint16(kb[kafkaAttrOffset:]); attrs&^kafkaAttrAllowed != 0 {
		return 0, 0, fmt.Errorf("%w: attributes %#04x (compressed, LogAppendTime or control)", ErrKafkaBatch, attrs)
	}
	if crc && crc32.Checksum(kb[kafkaAttrOffset:], crcTable) != binary.BigEndian.Uint32(kb[kafkaCRCOffset:]) {
		return 0, 0, fmt.Errorf("%w: CRC mismatch", ErrKafkaBatch)
	}
	n := int64(int32(binary.BigEndian.Uint32(kb[57:])))
	if n < 1 || n > int64(len(kb)-kafkaHeaderSize)/7 || int64(int32(binary.BigEndian.Uint32(kb[23:]))) != n-1 {
		return 0, 0, fmt.Errorf("%w: %d records, last offset delta %d", ErrKafkaBatch, n, int32(binary.BigEndian.Uint32(kb[23:])))
	}
	it := recordIter{h: batchHeader{count: uint32(n), baseOffset: 0, lastOffset: n - 1}, kafka: true,
		firstTS: int64(binary.BigEndian.Uint64(kb[27:])), d: newDecoder(kb[kafkaHeaderSize:]), prev: -1}
	maxTS := int64(math.MinInt64)
	var hs []Header
	for !it.done() {
		var r Record
		var err error
		if hs, err = it.next(&r, hs[:0]); err != nil {
			return 0, 0, fmt.Errorf("%w: %v", ErrKafkaBatch, err)
		}
		if r.Offset != int64(it.i-1) {
			return 0, 0, fmt.Errorf("%w: record %d has offset delta %d", ErrKafkaBatch, it.i-1, r.Offset)
		}
		maxTS = max(maxTS, r.Timestamp)
	}
	return int(n), maxTS, nil
}

// kafkaIter returns the iterator over the records of the Kafka batch kb of
// a batch with header h (whose framing and CRC are checked).
func kafkaIter(h batchHeader, kb []byte) (recordIter, error) {
	if len(kb) < kafkaHeaderSize || kb[16] != kafkaMagic ||
		binary.BigEndian.Uint16(kb[kafkaAttrOffset:])&^kafkaAttrAllowed != 0 ||
		int64(binary.BigEndian.Uint64(kb)) != h.baseOffset ||
		binary.BigEndian.Uint32(kb[57:]) != h.count {
		return recordIter{h: h}, fmt.Errorf("%w: batch at offset %d: its Kafka record batch does not match its header", ErrCorrupt, h.baseOffset)
	}
	return recordIter{h: h, kafka: true, firstTS: int64(binary.BigEndian.Uint64(kb[27:])),
		d: newDecoder(kb[kafkaHeaderSize:]), prev: -1}, nil
}

// nextKafka decodes the next record of a Kafka batch (recordIter.next).
func (it *recordIter) nextKafka(r *Record, hs []Header) []Header {
	d, h := &it.d, &it.h
	l := d.Varint()
	if l < 0 || l > int64(d.Len()) {
		d.Fail()
		return hs
	}
	end := d.Len() - int(l)
	d.Bytes(1) // attributes, unused
	r.Timestamp = it.firstTS + d.Varint()
	delta := d.Varint()
	r.Offset = h.baseOffset + delta
	if delta < 0 || delta > h.lastOffset-h.baseOffset || r.Offset <= it.prev {
		d.Fail()
	}
	it.prev = r.Offset
	r.Key = d.bytes()
	r.Value = d.bytes()
	if n := d.Varint(); n != 0 {
		if n < 0 || n > int64(d.Len())/2 || n > MaxHeaders {
			d.Fail()
			n = 0
		}
		start := len(hs)
		for range n {
			kl := d.Varint()
			if kl < 0 {
				d.Fail()
				break
			}
			k := d.Bytes(uint64(kl))
			hs = append(hs, Header{Key: string(k), Value: d.bytes()})
		}
		r.Headers = hs[start:len(hs):len(hs)]
	}
	if d.Err() == nil && d.Len() != end {
		d.Fail()
	}
	return hs
}

// checkBatchKafka is checkBatch for a batch with flagKafka, without a
// pass over its records: it checks the header, the producer section and
// the Kafka batch's header, and that the log's CRC is that of these bytes
// followed by records whose CRC is the one the Kafka batch declares. The
// records themselves are left to whoever checks the Kafka CRC. A batch
// without flagKafka is checked in full (checkBatch).
func checkBatchKafka(b []byte) (batchHeader, error) {
	h, err := parseBatchHeader(b)
	if err != nil {
		return h, err
	}
	if int64(len(b)) < h.size() {
		return h, errShort
	}
	if h.flags&flagKafka == 0 || h.flags&^knownFlags != 0 {
		return checkBatch(b)
	}
	b = b[:h.size()]
	prod, _, _, err := producerSection(b)
	if err != nil {
		return h, err
	}
	at := batchHeaderSize + len(prod)
	if len(b)-at < kafkaHeaderSize {
		return h, fmt.Errorf("%w: Kafka record batch of %d bytes", ErrCorrupt, len(b)-at)
	}
	crc := crc32.Checksum(b[8:at+kafkaAttrOffset], crcTable)
	crc = crc32cCombine(crc, binary.BigEndian.Uint32(b[at+kafkaCRCOffset:]), int64(len(b)-at-kafkaAttrOffset))
	if crc != binary.BigEndian.Uint32(b[4:]) {
		return h, fmt.Errorf("%w: CRC mismatch", ErrCorrupt)
	}
	return h, nil
}

// KafkaRead is one step of Reader.ReadKafka: either Kafka record batches
// appended to the caller's buffer, or records.
type KafkaRead struct {
	// Buf is the caller's buffer with the Kafka batches read appended.
	Buf []byte
	// Batches is the number of batches appended.
	Batches int
	// Records are records of batches that are not in Kafka's form (or
	// not wholly below the limit), as Read returns them; nil if Batches
	// is not 0.
	Records []Record
	// Full: nothing was read, as the next batch is in Kafka's form but
	// larger than room.
	Full bool
}

// ReadKafka reads on like Read (without waiting, as without Follow: at
// the end of the log it returns io.EOF), but the batches appended by
// AppendKafka that end below the offset below come as their Kafka
// RecordBatch bytes, appended to buf, as many in a row as fit in room
// bytes (if first, the first one even if it is larger). A batch comes
// whole even if the reader's next offset is inside it (as Kafka answers
// a fetch: the client skips the records before the offset it asked for).
// Records of other batches come as from Read (up to max), never in the
// same call as Kafka batches.
//
// The Kafka batches' records are not checked against the log's CRC: the
// header is, against the Kafka batch's own CRC (checkBatchKafka), which
// covers the records and which a Kafka client checks.
func (r *Reader) ReadKafka(buf []byte, room int, first bool, below int64, max int) (KafkaRead, error) {
	if r.closed {
		return KafkaRead{Buf: buf}, ErrClosed
	}
	k := &r.kafka
	k.on, k.buf, k.room, k.first, k.below, k.batches, k.full = true, buf, room, first, below, 0, false
	defer func() { k.on, k.buf = false, nil }()
	recs, err := r.readAvailable(max)
	res := KafkaRead{Buf: k.buf, Batches: k.batches, Records: recs, Full: k.full}
	if res.Batches > 0 {
		res.Records = nil // empty: records are never read with batches
	}
	if err == nil && res.Batches == 0 && len(recs) == 0 && !res.Full {
		err = io.EOF
	}
	return res, err
}

// kafkaStop reports whether a ReadKafka step is done without records.
func (r *Reader) kafkaStop() bool { return r.kafka.on && (r.kafka.batches > 0 || r.kafka.full) }

// Outcomes of takeKafka.
const (
	kafkaDecode = iota // decode the batch's records (it is checked in full)
	kafkaNext          // the batch was taken or skipped: go on to the next
	kafkaStop          // stop here: return what was read
)

// takeKafka looks, for ReadKafka, at the batch b at r.pos (checked by
// checkBatchKafka), which has records after those already read: one in
// Kafka's form, wholly below the limit, is appended to the buffer (if it
// fits) or skipped (if it holds only records before r.next). Any other is
// checked in full to be decoded. nrecs is the number of records this read
// has decoded so far: the two kinds do not mix in one read.
func (r *Reader) takeKafka(b []byte, nrecs int) (int, error) {
	k := &r.kafka
	h, err := parseBatchHeader(b)
	if err != nil {
		return kafkaStop, err
	}
	if h.flags&flagKafka == 0 || h.lastOffset >= k.below {
		if k.batches > 0 {
			return kafkaStop, nil
		}
		if h.flags&flagKafka != 0 {
			if _, err := checkBatch(b); err != nil {
				return kafkaStop, err
			}
		}
		return kafkaDecode, nil
	}
	if nrecs > 0 {
		return kafkaStop, nil
	}
	if h.lastOffset >= r.next {
		prod, _, _, err := producerSection(b)
		if err != nil {
			return kafkaStop, err
		}
		kb := kafkaBody(b, h, prod)
		if len(kb) > k.room && !(k.first && k.batches == 0) {
			k.full = k.batches == 0
			return kafkaStop, nil
		}
		k.buf = append(k.buf, kb...)
		k.room -= len(kb)
		k.batches++
	}
	r.pos += h.size()
	r.next = max(r.next, h.lastOffset+1)
	r.end = h.lastOffset + 1
	return kafkaNext, nil
}

// kafkaPeek is what readKafkaDirect reads of a batch before its records:
// the header, the largest producer section and the Kafka batch's header.
const kafkaPeek = batchHeaderSize + prodFixed + MaxProducerName + kafkaHeaderSize

// kafkaDirectMin is the least size of a batch that readKafkaDirect reads
// straight into the caller's buffer; smaller ones go through the reader's
// cache (one read for many).
const kafkaDirectMin = readChunk

// readKafkaDirect reads the batch at r.pos for ReadKafka straight into
// the caller's buffer, without a copy through the reader's cache, if it
// is a large batch in Kafka's form that ReadKafka takes (as takeKafka
// would), and returns takeKafka's outcomes: kafkaDecode, having changed
// nothing, for any other batch, or one that is not whole in the file or
// whose header does not check (the usual path then reads it, telling
// damage from a torn tail).
func (r *Reader) readKafkaDirect() (int, error) {
	k := &r.kafka
	if r.pos >= r.bufPos && r.pos+kafkaDirectMin <= r.bufPos+int64(len(r.buf)) {
		return kafkaDecode, nil // in the cache
	}
	var peek [kafkaPeek]byte
	n, err := r.f.ReadAt(peek[:], r.pos)
	if err != nil && err != io.EOF {
		return kafkaStop, err
	}
	h, err := parseBatchHeader(peek[:n])
	if err != nil || h.flags&flagKafka == 0 || h.flags&^knownFlags != 0 || h.size() < kafkaDirectMin ||
		h.lastOffset >= k.below || h.lastOffset < r.next {
		return kafkaDecode, nil
	}
	at := batchHeaderSize
	if h.flags&flagProducer != 0 {
		if n <= batchHeaderSize {
			return kafkaDecode, nil
		}
		at += prodFixed + int(peek[batchHeaderSize])
	}
	if n < at+kafkaHeaderSize {
		return kafkaDecode, nil
	}
	size := int(h.size()) - at
	if size > k.room && !(k.first && k.batches == 0) {
		k.full = k.batches == 0
		return kafkaStop, nil
	}
	crc := crc32.Checksum(peek[8:at+kafkaAttrOffset], crcTable)
	crc = crc32cCombine(crc, binary.BigEndian.Uint32(peek[at+kafkaCRCOffset:]), int64(size-kafkaAttrOffset))
	if crc != binary.BigEndian.Uint32(peek[4:]) {
		return kafkaDecode, nil
	}
	start := len(k.buf)
	k.buf = slices.Grow(k.buf, size)[:start+size]
	if m, err := r.f.ReadAt(k.buf[start:], r.pos+int64(at)); m < size {
		k.buf = k.buf[:start]
		if err != nil && err != io.EOF {
			return kafkaStop, err
		}
		return kafkaDecode, nil
	}
	if !bytes.Equal(k.buf[start:start+kafkaHeaderSize], peek[at:at+kafkaHeaderSize]) {
		k.buf = k.buf[:start] // changed between the reads: the usual path
		return kafkaDecode, nil
	}
	k.room -= size
	k.batches++
	r.pos += h.size()
	r.next = max(r.next, h.lastOffset+1)
	r.end = h.lastOffset + 1
	return kafkaNext, nil
}

// crc32cCombine returns the CRC-32C of the concatenation of two byte
// strings from their CRCs (crc1 of the first, crc2 of the second, len2
// bytes long), as zlib's crc32_combine does, in O(log len2).
func crc32cCombine(crc1, crc2 uint32, len2 int64) uint32 {
	return crcMultModP(crcX2nModP(len2, 3), crc1) ^ crc2
}

// crcPoly is CRC-32C's polynomial, reflected.
const crcPoly = 0x82f63b78

// crcMultModP multiplies a and b modulo the polynomial (reflected bits).
func crcMultModP(a, b uint32) uint32 {
	m := uint32(1) << 31
	var p uint32
	for {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				break
			}
		}
		m >>= 1
		if b&1 != 0 {
			b = b>>1 ^ crcPoly
		} else {
			b >>= 1
		}
	}
	return p
}

// crcX2n holds x^(2^k) modulo the polynomial, for k = 0 to 31.
var crcX2n = func() (t [32]uint32) {
	p := uint32(1) << 30 // x^1
	t[0] = p
	for k := 1; k < 32; k++ {
		p = crcMultModP(p, p)
		t[k] = p
	}
	return t
}()

// crcX2nModP returns x^(n * 2^k) modulo the polynomial.
func crcX2nModP(n int64, k uint) uint32 {
	p := uint32(1) << 31 // x^0
	for n != 0 {
		if n&1 != 0 {
			p = crcMultModP(crcX2n[k&31], p)
		}
		n >>= 1
		k++
	}
	return p
}
