package wlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/weirstream/weir/internal/codec"
	"hash/crc32"
)

// Record is one entry of a partition.
type Record struct {
	// Offset is assigned by Writer.Append; it is ignored on input.
	Offset int64
	// Timestamp in milliseconds since the Unix epoch. Zero on input means
	// "now" (the writer's clock).
	Timestamp int64
	Key       []byte
	// Value nil is a tombstone in a compacted topic (distinct from an empty
	// value).
	Value   []byte
	Headers []Header
}

// Header is a record header.
type Header struct {
	Key   string
	Value []byte
}

// Batch framing, big-endian. A batch is written with one write(2) and is
// the unit of the CRC: a reader or the recovering writer accepts a batch
// only if it is complete and its CRC matches, so a torn tail is never
// served.
//
//	0  uint32 length        bytes after this field
//	4  uint32 crc           CRC-32C of bytes [8, 4+length)
//	8  uint8  magic         batchMagic
//	9  uint8  flags         flagProducer, flagKafka (kafka.go), both or 0
//	10 uint16 reserved      0
//	12 uint32 count         number of records
//	16 int64  baseOffset    offset of the first record
//	24 int64  lastOffset    offset of the last record
//	32 int64  maxTimestamp  largest record timestamp
//	40 records, or, with flagProducer, the producer section and then the records
//
// With flagKafka (kafka.go) the records are a Kafka RecordBatch, whose
// base offset is the batch's: older versions (which do not know the
// flag) refuse to decode such a batch, as they do a batch with flags they
// do not know.
//
// The producer section identifies the batch as one committed by the
// exactly-once Sink: uint8 length L of the producer id, the id (L bytes),
// then uint64 epoch, int64 checkpoint id and uint32 index, the batch's
// sequence number (see Sink). Batches without the flag are laid out as
// before the flag existed, so segments written by earlier versions read
// unchanged; a version that predates the flag cannot decode batches that
// carry it (its writers still keep them: the length and CRC framing is
// the same).
//
// A record: uvarint offset delta from baseOffset, varint timestamp (ms),
// varint key length (-1 for nil) and key, varint value length (-1 for nil)
// and value, uvarint header count, then per header uvarint key length, key,
// varint value length (-1 for nil), value.
const (
	batchHeaderSize = 40
	batchMagic      = 1
	// flagProducer: a producer section follows the header.
	flagProducer = 0x01
	knownFlags   = flagProducer | flagKafka
	// prodFixed is the size of a producer section without the id.
	prodFixed = 1 + 8 + 8 + 4
	// maxBatchBytes bounds the length field, so a garbled length does not
	// make a reader allocate gigabytes.
	maxBatchBytes = 256 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

var (
	// errShort: the buffer ends before the batch does (maybe still being
	// written).
	errShort = errors.New("wlog: short batch")
	// ErrCorrupt is wrapped by errors about batches whose length, CRC or
	// contents are invalid.
	ErrCorrupt = errors.New("wlog: corrupt batch")
)

// batchHeader is the fixed part of a batch.
type batchHeader struct {
	length       uint32
	flags        uint8
	count        uint32
	baseOffset   int64
	lastOffset   int64
	maxTimestamp int64
}

func (h batchHeader) size() int64 { return 4 + int64(h.length) }

// appendBatch encodes recs, whose Offset and Timestamp are already set and
// whose offsets increase, as one batch appended to dst.
func appendBatch(dst []byte, recs []Record) []byte {
	return appendBatchProducer(dst, recs, nil)
}

// appendBatchProducer is appendBatch with a producer section (raw, as
// producerSection returns it) when prod is not nil.
func appendBatchProducer(dst []byte, recs []Record, prod []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, batchHeaderSize)...)
	dst = append(dst, prod...)
	base := recs[0].Offset
	maxTS := recs[0].Timestamp
	for i := range recs {
		r := &recs[i]
		if r.Timestamp > maxTS {
			maxTS = r.Timestamp
		}
		dst = appendRecord(dst, uint64(r.Offset-base), r)
	}
	var flags uint8
	if prod != nil {
		flags = flagProducer
	}
	sealBatch(dst[start:], flags, len(recs), base, recs[len(recs)-1].Offset, maxTS)
	return dst
}

// appendRecord appends the encoding of r, at offset delta from its batch's
// base offset.
func appendRecord(dst []byte, delta uint64, r *Record) []byte {
	dst = binary.AppendUvarint(dst, delta)
	dst = binary.AppendVarint(dst, r.Timestamp)
	dst = appendBytes(dst, r.Key)
	dst = appendBytes(dst, r.Value)
	dst = binary.AppendUvarint(dst, uint64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = binary.AppendUvarint(dst, uint64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendBytes(dst, h.Value)
	}
	return dst
}

// sealBatch fills in the header of the batch b (header, optional producer
// section, records) and its CRC.
func sealBatch(b []byte, flags uint8, count int, base, last, maxTS int64) {
	binary.BigEndian.PutUint32(b[0:], uint32(len(b)-4))
	b[8] = batchMagic
	b[9] = flags
	b[10], b[11] = 0, 0
	binary.BigEndian.PutUint32(b[12:], uint32(count))
	binary.BigEndian.PutUint64(b[16:], uint64(base))
	binary.BigEndian.PutUint64(b[24:], uint64(last))
	binary.BigEndian.PutUint64(b[32:], uint64(maxTS))
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum(b[8:], crcTable))
}

// rebase moves the checked batch b to base offset base (its records hold
// deltas, so only the header changes) and recomputes its CRC.
func rebase(b []byte, base int64) {
	old := int64(binary.BigEndian.Uint64(b[16:]))
	last := int64(binary.BigEndian.Uint64(b[24:]))
	binary.BigEndian.PutUint64(b[16:], uint64(base))
	binary.BigEndian.PutUint64(b[24:], uint64(base+last-old))
	if b[9]&flagKafka != 0 {
		// The Kafka batch's base offset too (which its own CRC does not
		// cover).
		if prod, _, _, err := producerSection(b); err == nil && len(b) >= batchHeaderSize+len(prod)+kafkaHeaderSize {
			binary.BigEndian.PutUint64(b[batchHeaderSize+len(prod):], uint64(base))
		}
	}
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum(b[8:], crcTable))
}

// prodSeq is the sequence number of a batch of the exactly-once Sink:
// ordered by epoch, then checkpoint id, then index.
type prodSeq struct {
	epoch uint64
	ckpt  int64
	idx   uint32
}

func (a prodSeq) less(b prodSeq) bool {
	if a.epoch != b.epoch {
		return a.epoch < b.epoch
	}
	if a.ckpt != b.ckpt {
		return a.ckpt < b.ckpt
	}
	return a.idx < b.idx
}

func (a prodSeq) String() string { return fmt.Sprintf("%d/%d/%d", a.epoch, a.ckpt, a.idx) }

// appendProducerSection appends a producer section.
func appendProducerSection(dst []byte, producer string, seq prodSeq) []byte {
	dst = append(dst, uint8(len(producer)))
	dst = append(dst, producer...)
	dst = binary.BigEndian.AppendUint64(dst, seq.epoch)
	dst = binary.BigEndian.AppendUint64(dst, uint64(seq.ckpt))
	return binary.BigEndian.AppendUint32(dst, seq.idx)
}

// producerSection returns the raw producer section of the checked batch b
// (nil if it has none), its producer id (aliasing b) and sequence.
func producerSection(b []byte) (raw, producer []byte, seq prodSeq, err error) {
	if b[9]&flagProducer == 0 {
		return nil, nil, seq, nil
	}
	body := b[batchHeaderSize:]
	if len(body) < 1 || len(body) < prodFixed+int(body[0]) {
		return nil, nil, seq, fmt.Errorf("%w: short producer section", ErrCorrupt)
	}
	l := int(body[0])
	producer = body[1 : 1+l]
	f := body[1+l:]
	seq = prodSeq{epoch: binary.BigEndian.Uint64(f), ckpt: int64(binary.BigEndian.Uint64(f[8:])), idx: binary.BigEndian.Uint32(f[16:])}
	return body[:prodFixed+l], producer, seq, nil
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// parseBatchHeader checks the fixed part of the batch at the start of b
// without checking the CRC. It returns errShort if b is too short to hold
// the header.
func parseBatchHeader(b []byte) (batchHeader, error) {
	if len(b) < batchHeaderSize {
		return batchHeader{}, errShort
	}
	h := batchHeader{
		length:       binary.BigEndian.Uint32(b[0:]),
		count:        binary.BigEndian.Uint32(b[12:]),
		baseOffset:   int64(binary.BigEndian.Uint64(b[16:])),
		lastOffset:   int64(binary.BigEndian.Uint64(b[24:])),
		maxTimestamp: int64(binary.BigEndian.Uint64(b[32:])),
		flags:        b[9],
	}
	switch {
	case h.length < batchHeaderSize-4 || h.length > maxBatchBytes:
		return h, fmt.Errorf("%w: length %d", ErrCorrupt, h.length)
	case b[8] != batchMagic:
		return h, fmt.Errorf("%w: magic %d", ErrCorrupt, b[8])
	case h.count == 0 || h.baseOffset < 0 || h.lastOffset < h.baseOffset:
		return h, fmt.Errorf("%w: offsets %d..%d, count %d", ErrCorrupt, h.baseOffset, h.lastOffset, h.count)
	}
	return h, nil
}

// checkBatch checks the batch at the start of b (header and CRC) and
// returns its header. It returns errShort if b ends before the batch.
func checkBatch(b []byte) (batchHeader, error) {
	h, err := parseBatchHeader(b)
	if err != nil {
		return h, err
	}
	if int64(len(b)) < h.size() {
		return h, errShort
	}
	if crc32.Checksum(b[8:h.size()], crcTable) != binary.BigEndian.Uint32(b[4:]) {
		return h, fmt.Errorf("%w: CRC mismatch", ErrCorrupt)
	}
	return h, nil
}

// MaxHeaders is the largest number of headers of one record. A decoded
// header takes 40 bytes of memory for as little as 2 bytes in the log: the
// cap keeps what one record costs to read bounded. Append refuses records
// with more, and a batch holding one is corrupt.
const MaxHeaders = 1 << 16

// checkHeaders refuses records with more than MaxHeaders headers.
func checkHeaders(recs []Record) error {
	for i := range recs {
		if len(recs[i].Headers) > MaxHeaders {
			return fmt.Errorf("wlog: record %d has %d headers, more than %d", i, len(recs[i].Headers), MaxHeaders)
		}
	}
	return nil
}

// recordIter decodes the records of a checked batch one at a time, so
// that a reader holds the decoded form of only the records it returns.
type recordIter struct {
	h    batchHeader
	d    decoder
	i    uint32 // records decoded so far
	prev int64  // offset of the last one
	// kafka: the records are those of a Kafka batch (flagKafka), whose
	// first timestamp is firstTS.
	kafka   bool
	firstTS int64
}

// newRecordIter checks the batch at the start of b (framing, CRC, flags,
// producer section) and returns an iterator over its records, which alias
// b.
func newRecordIter(b []byte) (recordIter, error) {
	h, err := checkBatch(b)
	if err != nil {
		return recordIter{h: h}, err
	}
	if h.flags&^knownFlags != 0 {
		return recordIter{h: h}, fmt.Errorf("%w: batch at offset %d has flags %#x this version does not know (written by a newer weir?)", ErrCorrupt, h.baseOffset, h.flags)
	}
	prod, _, _, err := producerSection(b[:h.size()])
	if err != nil {
		return recordIter{h: h}, fmt.Errorf("batch at offset %d: %w", h.baseOffset, err)
	}
	if h.flags&flagKafka != 0 {
		return kafkaIter(h, kafkaBody(b, h, prod))
	}
	return recordIter{h: h, d: newDecoder(b[batchHeaderSize+len(prod) : h.size()]), prev: -1}, nil
}

// done reports whether every record was decoded.
func (it *recordIter) done() bool { return it.i == it.h.count }

// next decodes the next record into r (which must not be done). Its
// headers are appended to hs, which is returned; r.Headers is a slice of
// it. After the last record it checks that the batch holds nothing more.
func (it *recordIter) next(r *Record, hs []Header) ([]Header, error) {
	d, h := &it.d, &it.h
	*r = Record{}
	if it.kafka {
		hs = it.nextKafka(r, hs)
		return it.finish(hs)
	}
	delta := d.Uvarint()
	r.Offset = h.baseOffset + int64(delta)
	if delta > uint64(h.lastOffset-h.baseOffset) || r.Offset <= it.prev {
		d.Fail()
	}
	it.prev = r.Offset
	r.Timestamp = d.Varint()
	r.Key = d.bytes()
	r.Value = d.bytes()
	if n := d.Uvarint(); n > 0 {
		// Each header takes at least 2 bytes: a count larger than what is
		// left is corrupt before anything is allocated for it.
		if n > uint64(d.Len())/2 || n > MaxHeaders {
			d.Fail()
			n = 0
		}
		start := len(hs)
		for range n {
			kl := d.Uvarint()
			k := d.Bytes(kl)
			hs = append(hs, Header{Key: string(k), Value: d.bytes()})
		}
		r.Headers = hs[start:len(hs):len(hs)]
	}
	return it.finish(hs)
}

// finish checks the record just decoded, and after the last one the
// batch's end.
func (it *recordIter) finish(hs []Header) ([]Header, error) {
	d, h := &it.d, &it.h
	if d.Err() != nil {
		return hs, fmt.Errorf("%w: malformed record %d of batch at offset %d", ErrCorrupt, it.i, h.baseOffset)
	}
	it.i++
	if it.done() && (d.Len() != 0 || it.prev != h.lastOffset) {
		return hs, fmt.Errorf("%w: batch at offset %d does not match its header", ErrCorrupt, h.baseOffset)
	}
	return hs, nil
}

// decodeBatch checks and decodes the batch at the start of b, appending
// its records to dst. The records' slices alias b; their headers share one
// new array. It returns the batch header.
func decodeBatch(dst []Record, b []byte) ([]Record, batchHeader, error) {
	it, err := newRecordIter(b)
	if err != nil {
		return dst, it.h, err
	}
	var hs []Header
	for !it.done() {
		var r Record
		if hs, err = it.next(&r, hs); err != nil {
			return dst, it.h, err
		}
		dst = append(dst, r)
	}
	return dst, it.h, nil
}

// decoder reads a record's varints and byte strings (internal/codec's
// Reader, whose error is sticky, so the caller checks once per record),
// adding the log's nullable byte strings.
type decoder struct{ codec.Reader }

func newDecoder(b []byte) decoder {
	var d decoder
	d.Reset(b)
	return d
}

func (d *decoder) bytes() []byte {
	n := d.Varint()
	if d.Err() != nil || n == -1 {
		return nil
	}
	if n < 0 {
		d.Fail()
		return nil
	}
	v := d.Bytes(uint64(n))
	if v == nil && d.Err() == nil {
		v = []byte{}
	}
	return v
}
