package broker

// The codec between Kafka record batches (message format v2, "magic 2") and
// wlog records: decodeProduce reads the batches of a Produce request,
// appendFetchBatch writes the batch of a Fetch response.
//
// A RecordBatch, big-endian:
//
//	0  int64 baseOffset
//	8  int32 length                bytes after this field
//	12 int32 partitionLeaderEpoch
//	16 int8  magic                 2 (a v0/v1 message set has its magic here too)
//	17 int32 crc                   CRC-32C of bytes [21, 12+length)
//	21 int16 attributes            bits 0-2 codec, 3 timestamp type, 4 transactional, 5 control
//	23 int32 lastOffsetDelta
//	27 int64 firstTimestamp
//	35 int64 maxTimestamp
//	43 int64 producerId
//	51 int16 producerEpoch
//	53 int32 baseSequence
//	57 int32 numRecords
//	61 records, compressed as a whole by the codec
//
// A record, all varints zigzag: varint length of the rest, int8 attributes,
// varint timestampDelta, varint offsetDelta, key (varint length, -1 for
// null, and bytes), value (the same), varint header count, then per header
// the key (varint length and bytes) and the value (varint length, -1 for
// null, and bytes).

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	wlog "github.com/weirstream/weir/connector/log"
)

// producedBatch is one Kafka RecordBatch of a Produce request, decoded.
type producedBatch struct {
	// FirstTimestamp is the batch's first timestamp (ms).
	FirstTimestamp int64
	// ProducerID, ProducerEpoch and BaseSequence identify the batch for
	// idempotence (-1 when the producer is not idempotent).
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	// NumRecords is the batch's record count, len(Records).
	NumRecords int32
	// Transactional and Control are the batch's attribute bits.
	Transactional bool
	Control       bool
	// Records are the batch's records: Offset left 0; Timestamp is
	// FirstTimestamp plus the record's delta (CreateTime semantics, whatever
	// the batch's timestamp type); a null key, value or header value is
	// nil, an empty one a non-nil empty slice. Key, Value and header values
	// alias the input of decodeProduce (uncompressed batches) or a buffer
	// that decodeProduce allocated (compressed ones).
	Records []wlog.Record
	// Raw is the batch's bytes as produced if it is uncompressed (nil if
	// not): the log keeps such a batch in Kafka's form (wlog's
	// AppendKafka), so that a fetch sends its bytes.
	Raw []byte
	// LogAppendTime is the batch's timestamp type bit.
	LogAppendTime bool
}

var (
	// errCorruptMessage is wrapped by the errors of decodeProduce about a
	// batch whose framing, CRC or records are invalid, or that decompresses
	// to more than the limit.
	errCorruptMessage = errors.New("corrupt message")
	// errUnsupportedMagic is wrapped by the errors of decodeProduce about a
	// batch whose magic (message format version) is not 2.
	errUnsupportedMagic = errors.New("unsupported message format (magic)")
	// errUnsupportedCompression is wrapped by the errors of decodeProduce
	// about a batch whose compression codec is not one of Kafka's four.
	errUnsupportedCompression = errors.New("unsupported compression codec")
)

// Offsets and sizes in a RecordBatch.
const (
	// kbatchLogOverhead is the size of baseOffset and length, which the
	// length does not count.
	kbatchLogOverhead = 12
	// kbatchMagicOffset is where the magic byte is, in every message format.
	kbatchMagicOffset = 16
	// kbatchCRCOffset is where the CRC is; it covers the bytes from
	// kbatchAttrOffset to the end of the batch.
	kbatchCRCOffset  = 17
	kbatchAttrOffset = 21
	// kbatchHeaderSize is the size of a batch without records.
	kbatchHeaderSize = 61
	// kbatchMinRecordSize is the size of the smallest record: one byte each
	// for length, attributes, timestamp delta, offset delta, key length,
	// value length and header count.
	kbatchMinRecordSize = 7
	// kbatchMinHeaderSize is the size of the smallest header: key length
	// and value length.
	kbatchMinHeaderSize = 2
	// kbatchCodecMask selects the codec of the attributes.
	kbatchCodecMask = 0x07
	// kbatchTransactionalBit and kbatchControlBit are attribute bits.
	kbatchTimestampTypeBit = 0x08
	kbatchTransactionalBit = 0x10
	kbatchControlBit       = 0x20
)

// kbatchCodecNames names the codecs by their attribute value.
var kbatchCodecNames = [...]string{"none", "gzip", "snappy", "lz4", "zstd"}

// kbatchCRCTable is the CRC-32C (Castagnoli) table of Kafka's batch CRC.
var kbatchCRCTable = crc32.MakeTable(crc32.Castagnoli)

// errKBatchLimit is returned by kbatchDecompress when the output would be
// larger than its limit.
var errKBatchLimit = errors.New("decompressed size exceeds the limit")

// decodeProduce parses the Records bytes of one partition of a Produce request: one or
// more concatenated RecordBatch (magic 2 only), each possibly compressed (attributes bits 0-2:
// 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd). It checks each batch's CRC-32C (Castagnoli, over
// the bytes from the attributes field to the end, as Kafka does), the batch length, that the
// records parse and that their count equals NumRecords. It appends records to dst (reusing
// its capacity) and the batches' Records slices alias dst. Errors: wrap errCorruptMessage
// for a bad CRC / length / record, errUnsupportedMagic for magic != 2, errUnsupportedCompression
// for an unknown codec; the error text says which batch (index and byte position) and why.
// Limit the decompressed size (maxDecompressed parameter) so a zip bomb gets an error, not OOM.
//
// More precisely: maxDecompressed bounds the total size of what the
// compressed batches of b decompress to (uncompressed batches do not count:
// they are in memory already), and a codec is stopped as soon as its output
// would exceed what is left of it. Besides the CRC and the framing, a batch
// must, as Kafka requires, hold at least one record and have a
// lastOffsetDelta of NumRecords-1; a record's offset delta is not checked
// (the log assigns offsets). A record may have at most wlog.MaxHeaders
// headers, as wlog refuses more. Empty input is an error: Kafka requires a
// batch per partition (and, from Produce v3, exactly one, which is left to
// the caller).
//
// On error it returns dst with its original length; the records appended
// so far are dropped.
func decodeProduce(b []byte, dst []wlog.Record, maxDecompressed int) ([]producedBatch, []wlog.Record, error) {
	dst0 := len(dst)
	if len(b) == 0 {
		return nil, dst, fmt.Errorf("%w: no record batch", errCorruptMessage)
	}
	budget := min(max(maxDecompressed, 0), math.MaxInt-1)
	var (
		batches []producedBatch
		hs      []wlog.Header // the headers of all records, in one array while it does not grow
		err     error
	)
	for pos, i := 0, 0; pos < len(b); i++ {
		var pb producedBatch
		var size int
		pb, size, dst, hs, err = kbatchDecodeOne(b[pos:], dst, hs, &budget)
		if err != nil {
			clear(dst[dst0:]) // drop the references into b
			return nil, dst[:dst0], fmt.Errorf("batch %d at byte %d: %w", i, pos, err)
		}
		batches = append(batches, pb)
		pos += size
	}
	// Only now, as dst no longer grows, do the batches get their records.
	at := dst0
	for i := range batches {
		n := int(batches[i].NumRecords)
		batches[i].Records = dst[at : at+n : at+n]
		at += n
	}
	return batches, dst, nil
}

// kbatchDecodeOne decodes the batch at the start of b, appending its
// records to dst and their headers to hs, and returns it (without its
// Records) and its size. Decompressing takes from *budget.
func kbatchDecodeOne(b []byte, dst []wlog.Record, hs []wlog.Header, budget *int) (producedBatch, int, []wlog.Record, []wlog.Header, error) {
	var pb producedBatch
	if len(b) < kbatchMagicOffset+1 {
		return pb, 0, dst, hs, fmt.Errorf("%w: truncated: %d bytes left, fewer than the %d up to the magic byte", errCorruptMessage, len(b), kbatchMagicOffset+1)
	}
	if magic := int8(b[kbatchMagicOffset]); magic != 2 {
		return pb, 0, dst, hs, fmt.Errorf("%w: magic %d, only 2 is supported", errUnsupportedMagic, magic)
	}
	length := int64(int32(binary.BigEndian.Uint32(b[8:])))
	if length < kbatchHeaderSize-kbatchLogOverhead {
		return pb, 0, dst, hs, fmt.Errorf("%w: length %d is less than the %d of a batch without records", errCorruptMessage, length, kbatchHeaderSize-kbatchLogOverhead)
	}
	if int64(len(b)) < kbatchLogOverhead+length {
		return pb, 0, dst, hs, fmt.Errorf("%w: truncated: length %d needs %d bytes, %d left", errCorruptMessage, length, kbatchLogOverhead+length, len(b))
	}
	size := int(kbatchLogOverhead + length)
	b = b[:size]
	if want, got := binary.BigEndian.Uint32(b[kbatchCRCOffset:]), crc32.Checksum(b[kbatchAttrOffset:], kbatchCRCTable); want != got {
		return pb, 0, dst, hs, fmt.Errorf("%w: CRC mismatch: the batch says %#08x, its bytes have %#08x", errCorruptMessage, want, got)
	}
	attrs := binary.BigEndian.Uint16(b[kbatchAttrOffset:])
	codec := int(attrs & kbatchCodecMask)
	if codec >= len(kbatchCodecNames) {
		return pb, 0, dst, hs, fmt.Errorf("%w: codec %d (attributes %#04x)", errUnsupportedCompression, codec, attrs)
	}
	lastOffsetDelta := int32(binary.BigEndian.Uint32(b[23:]))
	pb = producedBatch{
		FirstTimestamp: int64(binary.BigEndian.Uint64(b[27:])),
		ProducerID:     int64(binary.BigEndian.Uint64(b[43:])),
		ProducerEpoch:  int16(binary.BigEndian.Uint16(b[51:])),
		BaseSequence:   int32(binary.BigEndian.Uint32(b[53:])),
		NumRecords:     int32(binary.BigEndian.Uint32(b[57:])),
		Transactional:  attrs&kbatchTransactionalBit != 0,
		Control:        attrs&kbatchControlBit != 0,
		LogAppendTime:  attrs&kbatchTimestampTypeBit != 0,
	}
	if codec == 0 {
		pb.Raw = b
	}
	if pb.NumRecords <= 0 {
		return pb, 0, dst, hs, fmt.Errorf("%w: record count %d", errCorruptMessage, pb.NumRecords)
	}
	if lastOffsetDelta != pb.NumRecords-1 {
		return pb, 0, dst, hs, fmt.Errorf("%w: lastOffsetDelta %d does not match the record count %d", errCorruptMessage, lastOffsetDelta, pb.NumRecords)
	}
	body := b[kbatchHeaderSize:]
	if codec != 0 {
		out, err := kbatchDecompress(codec, body, *budget)
		if errors.Is(err, errKBatchLimit) {
			return pb, 0, dst, hs, fmt.Errorf("%w: %s: decompressed size exceeds the %d bytes left of the limit", errCorruptMessage, kbatchCodecNames[codec], *budget)
		}
		if err != nil {
			return pb, 0, dst, hs, fmt.Errorf("%w: %s: %d compressed bytes do not decompress: %v", errCorruptMessage, kbatchCodecNames[codec], len(body), err)
		}
		*budget -= len(out)
		body = out
	}
	if int64(pb.NumRecords) > int64(len(body)/kbatchMinRecordSize) {
		return pb, 0, dst, hs, fmt.Errorf("%w: record count %d is more than %d bytes of records can hold", errCorruptMessage, pb.NumRecords, len(body))
	}
	dst = slices.Grow(dst, int(pb.NumRecords))
	var err error
	dst, hs, err = kbatchParseRecords(body, int(pb.NumRecords), pb.FirstTimestamp, dst, hs)
	if err != nil {
		if codec != 0 {
			err = fmt.Errorf("%s-decompressed records: %w", kbatchCodecNames[codec], err)
		}
		return pb, 0, dst, hs, err
	}
	return pb, size, dst, hs, nil
}

// kbatchParseRecords parses the n records of body, a batch's (decompressed)
// records, appending them to dst and their headers to hs. Byte positions in
// errors are relative to body.
func kbatchParseRecords(body []byte, n int, firstTimestamp int64, dst []wlog.Record, hs []wlog.Header) ([]wlog.Record, []wlog.Header, error) {
	var prev []wlog.Header // the headers of the last record that had some, whose keys are reused
	pos := 0
	for i := range n {
		rd := kbatchReader{b: body[pos:]}
		length := rd.varint()
		if rd.bad || length < 0 || int64(length) > int64(len(rd.b)) {
			return dst, hs, fmt.Errorf("%w: record %d at byte %d of the records: length %d, %d bytes left", errCorruptMessage, i, pos, length, len(rd.b))
		}
		next := len(body) - len(rd.b) + int(length)
		rd.b = rd.b[:length]
		rd.int8() // attributes, unused
		tsDelta := rd.varlong()
		rd.varint() // offset delta: the log assigns offsets
		r := wlog.Record{Timestamp: firstTimestamp + tsDelta}
		r.Key = rd.nullable()
		r.Value = rd.nullable()
		nh := rd.varint()
		if rd.bad || nh < 0 {
			return dst, hs, fmt.Errorf("%w: record %d at byte %d of the records: malformed before the headers (or header count %d)", errCorruptMessage, i, pos, nh)
		}
		if nh > 0 {
			if int64(nh) > int64(len(rd.b)/kbatchMinHeaderSize) || nh > wlog.MaxHeaders {
				return dst, hs, fmt.Errorf("%w: record %d at byte %d of the records: header count %d (at most %d, and what %d bytes can hold)", errCorruptMessage, i, pos, nh, wlog.MaxHeaders, len(rd.b))
			}
			start := len(hs)
			for j := range int(nh) {
				k := rd.bytes(int(rd.varint())) // a negative length fails
				h := wlog.Header{Value: rd.nullable()}
				if rd.bad {
					return dst, hs, fmt.Errorf("%w: record %d at byte %d of the records: malformed header %d", errCorruptMessage, i, pos, j)
				}
				// Records of a batch mostly have the same header keys:
				// reuse the previous record's string instead of
				// allocating one.
				if j < len(prev) && prev[j].Key == string(k) {
					h.Key = prev[j].Key
				} else {
					h.Key = string(k)
				}
				hs = append(hs, h)
			}
			r.Headers = hs[start:len(hs):len(hs)]
			if prev == nil && i+1 < n {
				// The first record with headers: make room for as many
				// in each of the rest, as far as their bytes can hold
				// them, so hs grows once rather than doubling.
				room := (len(body) - next) / kbatchMinHeaderSize
				if k := len(r.Headers); n-i-1 < room/k {
					room = k * (n - i - 1)
				}
				hs = slices.Grow(hs, room)
			}
			prev = r.Headers
		}
		if len(rd.b) != 0 {
			return dst, hs, fmt.Errorf("%w: record %d at byte %d of the records: %d bytes left over of its length %d", errCorruptMessage, i, pos, len(rd.b), length)
		}
		dst = append(dst, r)
		pos = next
	}
	if pos != len(body) {
		return dst, hs, fmt.Errorf("%w: %d bytes after the %d records the batch counts", errCorruptMessage, len(body)-pos, n)
	}
	return dst, hs, nil
}

// kbatchReader reads the fields of a Kafka record. Its error is sticky:
// after a failure it reads zeros and nils, and bad is set.
type kbatchReader struct {
	b   []byte
	bad bool
}

// fail marks the reader bad.
func (r *kbatchReader) fail() {
	r.bad = true
	r.b = nil
}

// int8 reads one byte.
func (r *kbatchReader) int8() int8 {
	if len(r.b) < 1 {
		r.fail()
		return 0
	}
	v := int8(r.b[0])
	r.b = r.b[1:]
	return v
}

// varlong reads a zigzag varint.
func (r *kbatchReader) varlong() int64 {
	if len(r.b) > 0 && r.b[0] < 0x80 {
		u := r.b[0]
		r.b = r.b[1:]
		return int64(u>>1) ^ -int64(u&1)
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

// varint reads a zigzag varint that must fit an int32.
func (r *kbatchReader) varint() int32 {
	v := r.varlong()
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail()
		return 0
	}
	return int32(v)
}

// bytes reads n bytes, a non-nil slice (with its capacity cut to n, so
// appending to it copies).
func (r *kbatchReader) bytes(n int) []byte {
	if n < 0 || n > len(r.b) {
		r.fail()
		return nil
	}
	v := r.b[:n:n]
	if v == nil {
		v = []byte{}
	}
	r.b = r.b[n:]
	return v
}

// nullable reads a varint length and that many bytes; length -1 is nil.
func (r *kbatchReader) nullable() []byte {
	n := r.varint()
	if n == -1 || r.bad {
		return nil
	}
	return r.bytes(int(n))
}

// kbatchZstdWindow bounds the window of a zstd frame that does not
// declare its size, which kbatchDecompress streams: 8 MiB (window log 23),
// four times the window zstd's default level declares for input of
// unknown size (as the Java producer's is).
const kbatchZstdWindow = 8 << 20

// kbatchDecompress decompresses src, a batch's records compressed with
// codec (1 gzip, 2 snappy, 3 lz4, 4 zstd), into a new buffer. It returns
// errKBatchLimit if the output would exceed limit bytes, having allocated
// for the output no more than about twice the limit (or four times src, if
// less), and for the codec's state no more than a zstd window of up to
// kbatchZstdWindow or an lz4 block of up to 4 MiB (both pooled).
func kbatchDecompress(codec int, src []byte, limit int) ([]byte, error) {
	switch codec {
	case 1:
		d := kbatchGzipPool.Get().(*kbatchStreamDecoder[*gzip.Reader])
		defer kbatchGzipPool.Put(d)
		d.src.Reset(src)
		if err := d.dec.Reset(&d.src); err != nil {
			return nil, err
		}
		return kbatchReadBounded(d.dec, len(src), limit)
	case 2:
		if len(src) >= kbatchXerialHeaderSize && bytes.HasPrefix(src, kbatchXerialMagic) {
			return kbatchXerialDecode(src[kbatchXerialHeaderSize:], limit)
		}
		n, err := s2.DecodedLen(src)
		if err != nil {
			return nil, err
		}
		if n > limit {
			return nil, errKBatchLimit
		}
		return s2.Decode(make([]byte, n), src)
	case 3:
		d := kbatchLZ4Pool.Get().(*kbatchStreamDecoder[*lz4.Reader])
		defer kbatchLZ4Pool.Put(d)
		d.src.Reset(src)
		d.dec.Reset(&d.src)
		return kbatchReadBounded(d.dec, len(src), limit)
	case 4:
		var h zstd.Header
		if err := h.Decode(src); err != nil {
			return nil, err
		}
		d := kbatchZstdPool.Get().(*kbatchZstdDecoder)
		defer kbatchZstdPool.Put(d)
		if h.HasFCS {
			// The frame declares its size (as producers that compress a
			// batch in one go write it): decode in memory, into a buffer
			// allocated once at that size. The decoder's bound refuses a
			// later frame declaring more than the rest before allocating
			// for it, and stops a frame that does not declare its size
			// after the block that passes it. It is at least the 1 KiB
			// least window, which it also bounds, hence the check after.
			if h.FrameContentSize > uint64(limit) {
				return nil, errKBatchLimit
			}
			if err := d.dec.ResetWithOptions(nil, zstd.WithDecoderMaxMemory(uint64(max(limit, 1<<10)))); err != nil {
				return nil, err
			}
			out, err := d.dec.DecodeAll(src, nil)
			if errors.Is(err, zstd.ErrDecoderSizeExceeded) || (err == nil && len(out) > limit) {
				return nil, errKBatchLimit
			}
			return out, err
		}
		// The size is unknown (streaming producers, such as franz-go's
		// and the Java client, write it so): stream, which bounds the
		// output exactly; the decoder's buffer is its window, which the
		// bound limits to kbatchZstdWindow.
		d.src.Reset(src)
		if err := d.dec.ResetWithOptions(&d.src, zstd.WithDecoderMaxMemory(kbatchZstdWindow)); err != nil {
			return nil, err
		}
		defer d.dec.Reset(nil) // drop src
		return kbatchReadBounded(d.dec, len(src), limit)
	}
	return nil, fmt.Errorf("codec %d", codec)
}

// kbatchStreamDecoder is a pooled streaming decoder with the reader of its
// input, so that decompressing allocates neither.
type kbatchStreamDecoder[D io.Reader] struct {
	dec D
	src bytes.Reader
}

// kbatchZstdDecoder is a pooled zstd decoder with the reader of its
// input; a cleanup closes the decoder when the pool drops it.
type kbatchZstdDecoder struct {
	dec *zstd.Decoder
	src bytes.Reader
}

// The pools of decoders.
var (
	kbatchGzipPool = sync.Pool{New: func() any {
		return &kbatchStreamDecoder[*gzip.Reader]{dec: new(gzip.Reader)}
	}}
	kbatchLZ4Pool = sync.Pool{New: func() any {
		return &kbatchStreamDecoder[*lz4.Reader]{dec: lz4.NewReader(nil)}
	}}
	kbatchZstdPool = sync.Pool{New: func() any {
		dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			panic(fmt.Sprintf("broker: zstd decoder: %v", err)) // the options are constant
		}
		d := &kbatchZstdDecoder{dec: dec}
		runtime.AddCleanup(d, func(dec *zstd.Decoder) { dec.Close() }, dec)
		return d
	}}
)

// kbatchReadBounded reads r to its end into a new buffer and returns it,
// or errKBatchLimit as soon as it is over limit bytes. The buffer starts at
// four times srcLen and doubles, never past limit+1.
func kbatchReadBounded(r io.Reader, srcLen, limit int) ([]byte, error) {
	lr := io.LimitedReader{R: r, N: int64(limit) + 1}
	out := make([]byte, 0, min(limit+1, max(4*srcLen, 1<<10)))
	for {
		if len(out) == cap(out) {
			out = slices.Grow(out, min(cap(out), limit+1-len(out)))
		}
		n, err := lr.Read(out[len(out):cap(out)])
		out = out[:len(out)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(out) > limit {
		return nil, errKBatchLimit
	}
	return out, nil
}

// Kafka's snappy may be in the framing of the Java library snappy-java
// ("xerial"): the magic, a version and a compatible version (int32 each),
// then blocks of an int32 length and a raw snappy block.
var kbatchXerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// kbatchXerialHeaderSize is the size of the xerial header: the magic and
// the two versions.
const kbatchXerialHeaderSize = 8 + 4 + 4

// kbatchXerialDecode decodes the blocks of xerial-framed snappy (after its
// header) into one new buffer, or returns errKBatchLimit if they would
// decode to more than limit bytes.
func kbatchXerialDecode(src []byte, limit int) ([]byte, error) {
	// Sum the blocks' decoded lengths first, to bound the total and
	// allocate once.
	total := 0
	for rest := src; len(rest) > 0; {
		if len(rest) < 4 {
			return nil, fmt.Errorf("xerial snappy: %d bytes after the last block", len(rest))
		}
		n := int64(int32(binary.BigEndian.Uint32(rest)))
		if n < 0 || n > int64(len(rest)-4) {
			return nil, fmt.Errorf("xerial snappy: block length %d, %d bytes left", n, len(rest)-4)
		}
		l, err := s2.DecodedLen(rest[4 : 4+n])
		if err != nil {
			return nil, fmt.Errorf("xerial snappy block: %w", err)
		}
		if l > limit-total {
			return nil, errKBatchLimit
		}
		total += l
		rest = rest[4+n:]
	}
	out := make([]byte, total)
	at := 0
	for len(src) > 0 {
		n := int(binary.BigEndian.Uint32(src))
		block := src[4 : 4+n]
		l, _ := s2.DecodedLen(block) // checked above
		if _, err := s2.Decode(out[at:at+l], block); err != nil {
			return nil, fmt.Errorf("xerial snappy block: %w", err)
		}
		at += l
		src = src[4+n:]
	}
	return out, nil
}

// appendFetchBatch appends recs (in offset order; offsets may have gaps, as a compacted
// wlog topic has) as ONE uncompressed RecordBatch v2 to dst and returns dst: BaseOffset =
// recs[0].Offset, LastOffsetDelta = last offset - base, FirstTimestamp = recs[0].Timestamp,
// MaxTimestamp = the largest timestamp, ProducerID -1, ProducerEpoch -1, BaseSequence -1,
// PartitionLeaderEpoch 0, attributes 0 (CreateTime), correct CRC-32C and Length. Must not
// allocate per record (encode records straight into dst; reuse kmsg helpers only if they do
// not allocate, otherwise write the varint encoding yourself — Kafka record: length varint,
// attributes int8 0, timestampDelta varint, offsetDelta varint, key varint-length (-1 null)
// + bytes, value same, header count varint, each header key varint length + bytes, value
// varint length (-1 null) + bytes; all varints are zigzag).
//
// It grows dst once, to the batch's size, so with enough capacity it does
// not allocate at all. With no records it returns dst unchanged. The
// caller keeps a batch within Kafka's limits: it panics if the offsets
// span more than an int32 (lastOffsetDelta) or the batch would be 2 GiB
// or more (length).
func appendFetchBatch(dst []byte, recs []wlog.Record) []byte {
	if len(recs) == 0 {
		return dst
	}
	base, firstTS := recs[0].Offset, recs[0].Timestamp
	lastDelta := recs[len(recs)-1].Offset - base
	if lastDelta < 0 || lastDelta > math.MaxInt32 {
		panic(fmt.Sprintf("broker: appendFetchBatch: offsets %d..%d do not fit one batch", base, recs[len(recs)-1].Offset))
	}
	size := int64(kbatchHeaderSize)
	maxTS := firstTS
	for i := range recs {
		r := &recs[i]
		maxTS = max(maxTS, r.Timestamp)
		n := kbatchRecordBodySize(r, r.Offset-base, r.Timestamp-firstTS)
		size += int64(kbatchVarintLen(int64(n)) + n)
	}
	if size-kbatchLogOverhead > math.MaxInt32 {
		panic(fmt.Sprintf("broker: appendFetchBatch: a batch of %d records would be %d bytes", len(recs), size))
	}
	dst = slices.Grow(dst, int(size))
	start := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, uint64(base))
	dst = binary.BigEndian.AppendUint32(dst, uint32(size-kbatchLogOverhead))
	dst = binary.BigEndian.AppendUint32(dst, 0) // partition leader epoch
	dst = append(dst, 2)                        // magic
	dst = binary.BigEndian.AppendUint32(dst, 0) // CRC, set below
	dst = binary.BigEndian.AppendUint16(dst, 0) // attributes: uncompressed, CreateTime
	dst = binary.BigEndian.AppendUint32(dst, uint32(lastDelta))
	dst = binary.BigEndian.AppendUint64(dst, uint64(firstTS))
	dst = binary.BigEndian.AppendUint64(dst, uint64(maxTS))
	dst = binary.BigEndian.AppendUint64(dst, math.MaxUint64)    // producer id -1
	dst = binary.BigEndian.AppendUint16(dst, math.MaxUint16)    // producer epoch -1
	dst = binary.BigEndian.AppendUint32(dst, math.MaxUint32)    // base sequence -1
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(recs))) // record count
	for i := range recs {
		r := &recs[i]
		offDelta, tsDelta := r.Offset-base, r.Timestamp-firstTS
		dst = binary.AppendVarint(dst, int64(kbatchRecordBodySize(r, offDelta, tsDelta)))
		dst = append(dst, 0) // attributes
		dst = binary.AppendVarint(dst, tsDelta)
		dst = binary.AppendVarint(dst, offDelta)
		dst = kbatchAppendNullable(dst, r.Key)
		dst = kbatchAppendNullable(dst, r.Value)
		dst = binary.AppendVarint(dst, int64(len(r.Headers)))
		for j := range r.Headers {
			h := &r.Headers[j]
			dst = binary.AppendVarint(dst, int64(len(h.Key)))
			dst = append(dst, h.Key...)
			dst = kbatchAppendNullable(dst, h.Value)
		}
	}
	binary.BigEndian.PutUint32(dst[start+kbatchCRCOffset:], crc32.Checksum(dst[start+kbatchAttrOffset:], kbatchCRCTable))
	return dst
}

// kbatchRecordBodySize is the size of r's encoding after its length
// varint, at the given offset and timestamp deltas.
func kbatchRecordBodySize(r *wlog.Record, offDelta, tsDelta int64) int {
	n := 1 + kbatchVarintLen(tsDelta) + kbatchVarintLen(offDelta) +
		kbatchNullableSize(r.Key) + kbatchNullableSize(r.Value) +
		kbatchVarintLen(int64(len(r.Headers)))
	for j := range r.Headers {
		h := &r.Headers[j]
		n += kbatchVarintLen(int64(len(h.Key))) + len(h.Key) + kbatchNullableSize(h.Value)
	}
	return n
}

// kbatchNullableSize is the size of b encoded as a varint length (-1 for
// nil) and its bytes.
func kbatchNullableSize(b []byte) int {
	if b == nil {
		return 1
	}
	return kbatchVarintLen(int64(len(b))) + len(b)
}

// kbatchAppendNullable appends b as a varint length (-1 for nil) and its
// bytes.
func kbatchAppendNullable(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// kbatchVarintLen is the size of v as a zigzag varint.
func kbatchVarintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	return (bits.Len64(u|1) + 6) / 7
}
