package avro

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/flate"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/hamba/avro/v2"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

// Avro object-container files (OCF), the 'avro' format of Flink's
// filesystem connector: a header (the magic "Obj\x01", a metadata map
// holding the writer's schema and the codec, a random 16-byte sync
// marker), then blocks of records, each its count, its size, its records
// (binary encoding, compressed by the codec as a whole) and the sync
// marker. Rows are encoded and decoded by RowEncoder and RowDecoder, with
// no reflection (hamba's ocf package decodes into Go values by
// reflection).

// The codecs of 'avro.codec'.
const (
	CodecNull      = "null"
	CodecDeflate   = "deflate"
	CodecSnappy    = "snappy"
	CodecZstandard = "zstandard"
	CodecBzip2     = "bzip2" // read only
	CodecXZ        = "xz"    // neither read nor written
)

// SyncInterval is the size of a block's records (before compression)
// at which the writer ends the block: Avro Java's default sync interval
// (DataFileConstants.DEFAULT_SYNC_INTERVAL), which Flink's writer keeps.
const SyncInterval = 64000

// maxBlockBytes bounds a block's size, compressed and not: a corrupt
// size must not make the reader allocate without end.
const maxBlockBytes = 1 << 30

var ocfMagic = [4]byte{'O', 'b', 'j', 1}

// FileOptions are the 'avro.*' options of a filesystem table.
type FileOptions struct {
	Mapping Mapping
	// Schema is 'avro.schema', the schema's JSON instead of the derived
	// one ("": derived).
	Schema string
	// Codec is 'avro.codec' (default snappy, as Flink's).
	Codec string
}

// ReadFileOptions reads the 'avro' format's options of a filesystem table
// (o scoped to "avro."); a problem is recorded in o.O. A sink refuses the
// codecs weir does not write (bzip2, xz), a source takes any: it reads
// each file's own codec.
func ReadFileOptions(o *format.Scoped, sink bool) FileOptions {
	opt := FileOptions{
		Mapping: Mapping{Legacy: o.O.Bool(o.Key("timestamp_mapping.legacy"), true)},
		Schema:  o.O.String(o.Key("schema"), ""),
		Codec:   o.O.Enum(o.Key("codec"), CodecSnappy, CodecNull, CodecDeflate, CodecSnappy, CodecBzip2, CodecXZ, CodecZstandard),
	}
	if sink && (opt.Codec == CodecBzip2 || opt.Codec == CodecXZ) {
		o.O.Invalid(o.Key("codec"), "weir does not write it (it writes null, deflate, snappy and zstandard; it reads bzip2 files too)")
	}
	if enc := o.O.Enum(o.Key("encoding"), "binary", "binary", "json"); enc == "json" {
		o.O.Invalid(o.Key("encoding"), "'json' is not supported (only 'binary')")
	}
	return opt
}

// FileSchema is the Avro schema of a file table's rows of cols: the one
// given, or the one derived from the columns (as Flink's
// AvroSchemaConverter).
func FileSchema(cols types.Schema, opt FileOptions) (avro.Schema, error) {
	return tableSchema(cols, Options{Mapping: opt.Mapping, Schema: opt.Schema})
}

// OCFWriter writes rows to an object-container file.
type OCFWriter struct {
	w        io.Writer
	enc      *RowEncoder
	codec    string
	sync     [16]byte
	interval int
	block    []byte // the current block's records, encoded
	count    int64
	prefix   []byte
	cbuf     []byte // the compressed block
	fbuf     bytes.Buffer
	fw       *flate.Writer
	err      error
}

// NewOCFWriter writes the header of an object-container file of enc's
// schema and codec to w, and returns the writer of its rows.
func NewOCFWriter(w io.Writer, enc *RowEncoder, codec string) (*OCFWriter, error) {
	switch codec {
	case CodecNull, CodecDeflate, CodecSnappy, CodecZstandard:
	default:
		return nil, fmt.Errorf("avro: codec '%s' is not written (null, deflate, snappy and zstandard are)", codec)
	}
	ow := &OCFWriter{w: w, enc: enc, codec: codec, interval: SyncInterval}
	_, _ = rand.Read(ow.sync[:])
	h := append([]byte(nil), ocfMagic[:]...)
	h = appendLong(h, 2)
	h = appendBytes(h, "avro.schema")
	h = appendBytes(h, SchemaJSON(enc.Schema()))
	h = appendBytes(h, "avro.codec")
	h = appendBytes(h, codec)
	h = appendLong(h, 0)
	h = append(h, ow.sync[:]...)
	if _, err := w.Write(h); err != nil {
		return nil, err
	}
	return ow, nil
}

// SetSyncInterval sets the size of a block's records at which a block
// ends (SyncInterval by default).
func (w *OCFWriter) SetSyncInterval(n int) { w.interval = max(n, 1) }

// Write appends a row's values (the encoder's columns) to the current
// block, and writes the block out once it reaches the sync interval. A
// row that does not encode is an error and leaves the block as it was.
func (w *OCFWriter) Write(vals []types.Value) error {
	if w.err != nil {
		return w.err
	}
	b, err := w.enc.AppendValues(w.block, vals)
	if err != nil {
		return err
	}
	w.block = b
	w.count++
	if len(w.block) >= w.interval {
		return w.Flush()
	}
	return nil
}

// Flush writes the current block, if it holds records.
func (w *OCFWriter) Flush() error {
	if w.err != nil || w.count == 0 {
		return w.err
	}
	data, err := w.compress()
	if err != nil {
		w.err = err
		return err
	}
	w.prefix = appendLong(appendLong(w.prefix[:0], w.count), int64(len(data)))
	for _, b := range [][]byte{w.prefix, data, w.sync[:]} {
		if _, err := w.w.Write(b); err != nil {
			w.err = err
			return err
		}
	}
	w.block, w.count = w.block[:0], 0
	return nil
}

// Close writes the last block; it does not close the underlying writer.
func (w *OCFWriter) Close() error { return w.Flush() }

func (w *OCFWriter) compress() ([]byte, error) {
	switch w.codec {
	case CodecDeflate:
		w.fbuf.Reset()
		if w.fw == nil {
			fw, err := flate.NewWriter(&w.fbuf, flate.DefaultCompression)
			if err != nil {
				return nil, err
			}
			w.fw = fw
		} else {
			w.fw.Reset(&w.fbuf)
		}
		if _, err := w.fw.Write(w.block); err != nil {
			return nil, err
		}
		if err := w.fw.Close(); err != nil {
			return nil, err
		}
		return w.fbuf.Bytes(), nil
	case CodecSnappy:
		// Avro's snappy: a snappy block, then the CRC-32 (IEEE) of the
		// uncompressed data, big endian.
		if n := s2.MaxEncodedLen(len(w.block)) + 4; cap(w.cbuf) < n {
			w.cbuf = make([]byte, n)
		}
		c := s2.EncodeSnappy(w.cbuf[:cap(w.cbuf)], w.block)
		w.cbuf = binary.BigEndian.AppendUint32(c, crc32.ChecksumIEEE(w.block))
		return w.cbuf, nil
	case CodecZstandard:
		enc, err := zstdEncoder()
		if err != nil {
			return nil, err
		}
		w.cbuf = enc.EncodeAll(w.block, w.cbuf[:0])
		return w.cbuf, nil
	}
	return w.block, nil
}

// zstd's EncodeAll and DecodeAll may be called concurrently: one encoder
// and one decoder serve every file.
var (
	zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
		return zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	})
	zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
		return zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxBlockBytes))
	})
)

// OCFHeader is an object-container file's header.
type OCFHeader struct {
	SchemaJSON string // 'avro.schema'
	Schema     avro.Schema
	Codec      string // 'avro.codec', "null" when absent
	Meta       map[string][]byte
	Sync       [16]byte
	Size       int64 // the header's bytes: the offset of the first block
}

// OCFError is a file that does not read: its header (Offset -1) or the
// block at Offset, and the record of the block (-1: the block itself).
type OCFError struct {
	Offset int64
	Record int64
	Err    error
}

func (e *OCFError) Error() string {
	switch {
	case e.Offset < 0:
		return fmt.Sprintf("header: %v", e.Err)
	case e.Record < 0:
		return fmt.Sprintf("block at byte %d: %v", e.Offset, e.Err)
	}
	return fmt.Sprintf("block at byte %d, record %d of the block: %v", e.Offset, e.Record, e.Err)
}

func (e *OCFError) Unwrap() error { return e.Err }

// FileDecoders reads object-container files into rows of a table's
// columns: each file's writer schema is resolved against the reader's
// schema (the table's) and compiled once, and kept for the files that
// share it. It is safe for concurrent use.
type FileDecoders struct {
	cols   types.Schema
	reader avro.Schema
	mu     sync.Mutex
	m      map[string]*fileDecoder
}

type fileDecoder struct {
	schema avro.Schema
	dec    *RowDecoder
	skip   skipFn
}

// NewFileDecoders reads files into rows of cols; reader is the table's
// Avro schema (FileSchema), for defaults and aliases.
func NewFileDecoders(cols types.Schema, reader avro.Schema) *FileDecoders {
	return &FileDecoders{cols: cols, reader: reader, m: map[string]*fileDecoder{}}
}

func (f *FileDecoders) compile(text string) (*fileDecoder, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d, ok := f.m[text]; ok {
		return d, nil
	}
	s, err := Parse(text)
	if err != nil {
		return nil, fmt.Errorf("its schema: %w", err)
	}
	dec, err := NewRowDecoder(s, f.reader, f.cols)
	if err != nil {
		return nil, fmt.Errorf("its schema cannot be read as the table's: %w", err)
	}
	skip, err := compileSkip(s)
	if err != nil {
		return nil, fmt.Errorf("its schema: %w", err)
	}
	d := &fileDecoder{schema: s, dec: dec, skip: skip}
	f.m[text] = d
	return d, nil
}

// Open reads the header of the file src reads from its start, and
// returns the reader of its rows.
func (f *FileDecoders) Open(src io.Reader) (*OCFReader, error) {
	r := &OCFReader{br: bufio.NewReaderSize(src, 128<<10), width: len(f.cols)}
	h, err := r.readHeader()
	if err != nil {
		return nil, &OCFError{Offset: -1, Record: -1, Err: err}
	}
	switch h.Codec {
	case CodecNull, CodecDeflate, CodecSnappy, CodecZstandard, CodecBzip2:
	default:
		return nil, &OCFError{Offset: -1, Record: -1, Err: fmt.Errorf("codec '%s' is not supported (null, deflate, snappy, zstandard and bzip2 are)", h.Codec)}
	}
	d, err := f.compile(h.SchemaJSON)
	if err != nil {
		return nil, &OCFError{Offset: -1, Record: -1, Err: err}
	}
	h.Schema = d.schema
	r.h, r.dec = h, d
	r.r.window = true
	return r, nil
}

// OCFReader reads the rows of an object-container file, block by block;
// its position is the offset of the block it is in and the records of
// the block taken.
type OCFReader struct {
	h        *OCFHeader
	dec      *fileDecoder
	br       *bufio.Reader
	off      int64 // the file offset of the next byte br gives
	blockOff int64
	count    int64 // the records of the current block
	taken    int64 // ... decoded
	raw      []byte
	dbuf     []byte
	r        reader // over the current block's records
	fr       io.ReadCloser
	err      error

	// rows of width values: the decoded columns go to data's places, the
	// values fixed to fixed's (a partitioned table's directory values)
	width   int
	data    []int
	fixed   []int
	fixVals []types.Value
	scratch []types.Value
}

// Header returns the file's header.
func (r *OCFReader) Header() *OCFHeader { return r.h }

// Widen makes the rows width values wide: the decoded columns go to
// data's places, and vals to fixed's (the values of a file's partition
// directories).
func (r *OCFReader) Widen(width int, data, fixed []int, vals []types.Value) {
	r.width, r.data, r.fixed, r.fixVals = width, data, fixed, vals
	r.scratch = make([]types.Value, len(data))
}

func (r *OCFReader) readByte() (byte, error) {
	c, err := r.br.ReadByte()
	if err == nil {
		r.off++
	}
	return c, err
}

func (r *OCFReader) readLong() (int64, error) {
	var u uint64
	for s := uint(0); ; s += 7 {
		c, err := r.readByte()
		if err != nil {
			return 0, noEOF(err)
		}
		if s == 63 && c > 1 {
			return 0, errors.New("varint overflows a long")
		}
		u |= uint64(c&0x7f) << s
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), nil
		}
	}
}

func (r *OCFReader) readFull(b []byte) error {
	n, err := io.ReadFull(r.br, b)
	r.off += int64(n)
	return noEOF(err)
}

// noEOF: the file ends in the middle of something.
func noEOF(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return errors.New("truncated file")
	}
	return err
}

func (r *OCFReader) readBytes(limit int64) ([]byte, error) {
	n, err := r.readLong()
	if err != nil {
		return nil, err
	}
	if n < 0 || n > limit {
		return nil, fmt.Errorf("length %d out of range", n)
	}
	b := make([]byte, n)
	return b, r.readFull(b)
}

func (r *OCFReader) readHeader() (*OCFHeader, error) {
	var magic [4]byte
	if err := r.readFull(magic[:]); err != nil || magic != ocfMagic {
		return nil, fmt.Errorf("not an Avro object-container file (it does not start with \"Obj\\x01\")")
	}
	h := &OCFHeader{Meta: map[string][]byte{}}
	for {
		n, err := r.readLong()
		if err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		if n == 0 {
			break
		}
		if n < 0 {
			n = -n
			if _, err := r.readLong(); err != nil {
				return nil, fmt.Errorf("metadata: %w", err)
			}
		}
		if n > 1<<20 {
			return nil, fmt.Errorf("metadata: %d entries", n)
		}
		for ; n > 0; n-- {
			k, err := r.readBytes(1 << 20)
			if err != nil {
				return nil, fmt.Errorf("metadata: %w", err)
			}
			v, err := r.readBytes(64 << 20)
			if err != nil {
				return nil, fmt.Errorf("metadata '%s': %w", k, err)
			}
			h.Meta[string(k)] = v
		}
	}
	if err := r.readFull(h.Sync[:]); err != nil {
		return nil, err
	}
	s, ok := h.Meta["avro.schema"]
	if !ok {
		return nil, errors.New("no 'avro.schema' in its metadata")
	}
	h.SchemaJSON = string(s)
	h.Codec = CodecNull
	if c, ok := h.Meta["avro.codec"]; ok && len(c) > 0 {
		h.Codec = string(c)
	}
	h.Size = r.off
	return h, nil
}

// nextBlock reads the block at r.off; io.EOF at the end of the file.
func (r *OCFReader) nextBlock() error {
	r.blockOff = r.off
	r.count, r.taken = 0, 0
	if _, err := r.br.Peek(1); err == io.EOF {
		return io.EOF
	}
	fail := func(err error) error { return &OCFError{Offset: r.blockOff, Record: -1, Err: err} }
	count, err := r.readLong()
	if err != nil {
		return fail(err)
	}
	size, err := r.readLong()
	if err != nil {
		return fail(err)
	}
	if count < 0 || size < 0 || size > maxBlockBytes {
		return fail(fmt.Errorf("invalid block: %d records of %d bytes", count, size))
	}
	if int64(cap(r.raw)) < size {
		r.raw = make([]byte, size)
	}
	r.raw = r.raw[:size]
	if err := r.readFull(r.raw); err != nil {
		return fail(err)
	}
	var sync [16]byte
	if err := r.readFull(sync[:]); err != nil {
		return fail(err)
	}
	if sync != r.h.Sync {
		return fail(errors.New("the block does not end with the file's sync marker"))
	}
	data, err := r.decompress()
	if err != nil {
		return fail(fmt.Errorf("%s: %w", r.h.Codec, err))
	}
	r.count = count
	r.r.b, r.r.i, r.r.str, r.r.strBase = data, 0, "", 0
	return nil
}

func (r *OCFReader) decompress() ([]byte, error) {
	switch r.h.Codec {
	case CodecDeflate:
		if r.fr == nil {
			r.fr = flate.NewReader(bytes.NewReader(r.raw))
		} else if err := r.fr.(flate.Resetter).Reset(bytes.NewReader(r.raw), nil); err != nil {
			return nil, err
		}
		return r.readAll(r.fr)
	case CodecBzip2:
		return r.readAll(bzip2.NewReader(bytes.NewReader(r.raw)))
	case CodecSnappy:
		if len(r.raw) < 4 {
			return nil, errors.New("a block shorter than its checksum")
		}
		body := r.raw[:len(r.raw)-4]
		n, err := s2.DecodedLen(body)
		if err != nil {
			return nil, err
		}
		if n > maxBlockBytes {
			return nil, fmt.Errorf("a block of %d bytes", n)
		}
		if cap(r.dbuf) < n {
			r.dbuf = make([]byte, n)
		}
		d, err := s2.Decode(r.dbuf[:cap(r.dbuf)], body)
		if err != nil {
			return nil, err
		}
		if got, want := crc32.ChecksumIEEE(d), binary.BigEndian.Uint32(r.raw[len(r.raw)-4:]); got != want {
			return nil, fmt.Errorf("checksum mismatch (CRC-32 %08x, the block says %08x)", got, want)
		}
		return d, nil
	case CodecZstandard:
		dec, err := zstdDecoder()
		if err != nil {
			return nil, err
		}
		d, err := dec.DecodeAll(r.raw, r.dbuf[:0])
		if err != nil {
			return nil, err
		}
		r.dbuf = d
		return d, nil
	}
	return r.raw, nil
}

// readAll reads a decompressor's output into dbuf.
func (r *OCFReader) readAll(src io.Reader) ([]byte, error) {
	b := r.dbuf[:0]
	for {
		if len(b) == cap(b) {
			if len(b) >= maxBlockBytes {
				return nil, fmt.Errorf("a block of more than %d bytes", maxBlockBytes)
			}
			b = append(b, 0)[:len(b)]
		}
		n, err := src.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			r.dbuf = b
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Read reads rows (+I) into dst; io.EOF after the last.
func (r *OCFReader) Read(dst []types.Row) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n := 0
	for n < len(dst) {
		if r.taken == r.count {
			if err := r.nextBlock(); err != nil {
				if err != io.EOF {
					r.err = err
					if n > 0 {
						return n, nil
					}
				}
				return n, err
			}
			continue
		}
		row, ok, err := r.next()
		if err != nil {
			r.err = &OCFError{Offset: r.blockOff, Record: r.taken, Err: err}
			if n > 0 {
				return n, nil
			}
			return 0, r.err
		}
		if ok {
			dst[n] = types.Row{Kind: types.Insert, Values: row}
			n++
		}
	}
	return n, nil
}

// next decodes the block's next record.
func (r *OCFReader) next() ([]types.Value, bool, error) {
	dec := r.dec.dec
	var vals []types.Value
	var ok bool
	var err error
	if r.data == nil {
		vals = newValues(r.width)
		ok, err = dec.decode(&r.r, vals)
	} else {
		ok, err = dec.decode(&r.r, r.scratch)
		if ok && err == nil {
			vals = newValues(r.width)
			for i, c := range r.data {
				vals[c] = r.scratch[i]
			}
			for i, c := range r.fixed {
				vals[c] = r.fixVals[i]
			}
		}
	}
	if err != nil {
		return nil, false, err
	}
	r.taken++
	if r.taken == r.count && r.r.i != len(r.r.b) {
		return nil, false, fmt.Errorf("%d bytes after the block's %d records", len(r.r.b)-r.r.i, r.count)
	}
	return vals, ok, nil
}

// Position returns where the reader is: the offset of the block that
// holds the next record and the records of it already read (0 at a
// block's start).
func (r *OCFReader) Position() (block, taken int64) {
	if r.taken < r.count {
		return r.blockOff, r.taken
	}
	return r.off, 0
}

// Restore positions a reader that has read its file's header at a
// Position of an earlier reader of the same file: src reads the file
// from offset block on (the reader no longer reads the source it was
// opened with). The block's first taken records are skipped.
func (r *OCFReader) Restore(src io.Reader, block, taken int64) error {
	if block < r.h.Size || taken < 0 {
		return fmt.Errorf("invalid position: block at byte %d (the header ends at %d), record %d", block, r.h.Size, taken)
	}
	r.br.Reset(src)
	r.off, r.count, r.taken, r.err = block, 0, 0, nil
	if taken == 0 {
		return nil
	}
	if err := r.nextBlock(); err != nil {
		if err == io.EOF {
			return fmt.Errorf("no block at byte %d: the file was changed", block)
		}
		return err
	}
	if taken > r.count {
		return &OCFError{Offset: block, Record: -1, Err: fmt.Errorf("the block holds %d records, fewer than the %d of the position: the file was changed", r.count, taken)}
	}
	for r.taken < taken {
		if err := r.dec.skip(&r.r); err != nil {
			return &OCFError{Offset: block, Record: r.taken, Err: err}
		}
		r.taken++
	}
	return nil
}

// Close releases the decompressor.
func (r *OCFReader) Close() error {
	if r.fr != nil {
		return r.fr.Close()
	}
	return nil
}
