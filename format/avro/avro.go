package avro

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/ocf"
	"github.com/twmb/franz-go/pkg/sr"
)

// Parse parses a schema's JSON text with a cache of its own (hamba's
// default cache is global: two schemas reusing a record name would see
// each other's definitions).
func Parse(text string) (avro.Schema, error) {
	return avro.ParseWithCache(text, "", &avro.SchemaCache{})
}

// readers are reused for unmarshal.
var readers = sync.Pool{New: func() any { return avro.NewReader(nil, 0) }}

// ErrTruncated is the cause of the error for data that ends in the middle
// of a value.
var ErrTruncated = errors.New("avro: truncated data")

// unmarshal decodes data as hamba's Unmarshal does, except that data that
// ends too soon is an error: hamba's Unmarshal takes the io.EOF of a
// truncated datum for the end of its input and returns no error.
func unmarshal(schema avro.Schema, data []byte, v any) error {
	r := readers.Get().(*avro.Reader)
	r.Reset(data)
	r.ReadVal(schema, v)
	err := r.Error
	r.Error = nil
	r.Reset(nil)
	readers.Put(r)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF):
		return ErrTruncated
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: %v", ErrTruncated, err)
	}
	return err
}

// Codec encodes and decodes values of T as Avro binary of one schema. It
// is safe for concurrent use.
type Codec[T any] struct {
	schema avro.Schema
}

// NewCodec parses schema (JSON) for values of T.
func NewCodec[T any](schema string) (*Codec[T], error) {
	s, err := Parse(schema)
	if err != nil {
		return nil, fmt.Errorf("avro: %w", err)
	}
	return &Codec[T]{schema: s}, nil
}

// Schema returns the codec's schema.
func (c *Codec[T]) Schema() avro.Schema { return c.schema }

// Encode returns the binary encoding of v.
func (c *Codec[T]) Encode(v T) ([]byte, error) { return avro.Marshal(c.schema, v) }

// Decode decodes data written with the codec's schema.
func (c *Codec[T]) Decode(data []byte) (T, error) {
	var v T
	err := unmarshal(c.schema, data, &v)
	return v, err
}

// Resolver decodes data written with other schemas (writer schemas) into
// values of T of a reader schema, resolving each writer schema against the
// reader's once and keeping the result.
type Resolver[T any] struct {
	reader avro.Schema
	mu     sync.Mutex
	byFP   map[[32]byte]avro.Schema // writer fingerprint -> resolved
}

// NewResolver returns a resolver to the reader schema.
func NewResolver[T any](reader avro.Schema) *Resolver[T] {
	return &Resolver[T]{reader: reader, byFP: map[[32]byte]avro.Schema{}}
}

// resolved returns the composite schema reading writer's data as reader.
func (r *Resolver[T]) resolved(writer avro.Schema) (avro.Schema, error) {
	fp := writer.Fingerprint()
	r.mu.Lock()
	s, ok := r.byFP[fp]
	r.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := avro.NewSchemaCompatibility().Resolve(r.reader, writer)
	if err != nil {
		return nil, fmt.Errorf("avro: the writer's schema does not resolve against the reader's: %w", err)
	}
	r.mu.Lock()
	r.byFP[fp] = s
	r.mu.Unlock()
	return s, nil
}

// Decode decodes data written with writer.
func (r *Resolver[T]) Decode(writer avro.Schema, data []byte) (T, error) {
	var v T
	s, err := r.resolved(writer)
	if err != nil {
		return v, err
	}
	err = unmarshal(s, data, &v)
	return v, err
}

// Confluent encodes and decodes values of T in Confluent's wire format (a
// zero byte, the schema's registry id in 4 bytes big endian, the Avro
// body). It is safe for concurrent use.
type Confluent[T any] struct {
	reg     *sr.Client
	schema  avro.Schema
	res     *Resolver[T]
	subject string
	auto    bool

	writers sync.Map     // id -> avro.Schema (resolved against the reader)
	id      atomic.Int64 // the encoding schema's id + 1, 0 until known
	idMu    sync.Mutex   // held while registering: encoders wait for the id
}

// ConfluentOption configures a Confluent codec.
type ConfluentOption func(*confluentConfig)

type confluentConfig struct {
	subject string
	noAuto  bool
}

// Subject names the subject the schema is registered under to encode
// (Kafka's convention: "<topic>-value", "<topic>-key"). Without one,
// Encode fails.
func Subject(s string) ConfluentOption { return func(c *confluentConfig) { c.subject = s } }

// NoAutoRegister looks the schema up under the subject rather than
// registering it (it must be registered already).
func NoAutoRegister() ConfluentOption { return func(c *confluentConfig) { c.noAuto = true } }

// NewRegistry returns a client of the schema registry at url (see
// franz-go's sr.ClientOpt for authentication and TLS).
func NewRegistry(url string, opts ...sr.ClientOpt) (*sr.Client, error) {
	opts = append([]sr.ClientOpt{sr.URLs(url), sr.UserAgent("weir"), sr.HTTPClient(&http.Client{Timeout: 30 * time.Second})}, opts...)
	return sr.NewClient(opts...)
}

// NewConfluent returns a codec of values of T whose schema (JSON) is the
// reader's schema to decode and the schema written and registered to
// encode.
func NewConfluent[T any](reg *sr.Client, schema string, opts ...ConfluentOption) (*Confluent[T], error) {
	var cfg confluentConfig
	for _, o := range opts {
		o(&cfg)
	}
	s, err := Parse(schema)
	if err != nil {
		return nil, fmt.Errorf("avro: %w", err)
	}
	return &Confluent[T]{reg: reg, schema: s, res: NewResolver[T](s), subject: cfg.subject, auto: !cfg.noAuto}, nil
}

// ErrNotConfluent is the cause of a Decode error for data that does not
// start with the wire format's header.
var ErrNotConfluent = errors.New("avro: not the Confluent wire format")

// Decode decodes one record's value. Its writer schema is fetched from the
// registry on the first record with its id.
func (c *Confluent[T]) Decode(data []byte) (T, error) {
	var v T
	if len(data) < 5 {
		return v, fmt.Errorf("%w: a record of %d bytes is shorter than the 5-byte header", ErrNotConfluent, len(data))
	}
	if data[0] != 0 {
		return v, fmt.Errorf("%w: magic byte 0x%02x, want 0x00", ErrNotConfluent, data[0])
	}
	id := int(binary.BigEndian.Uint32(data[1:5]))
	s, err := c.writer(id)
	if err != nil {
		return v, err
	}
	if err := unmarshal(s, data[5:], &v); err != nil {
		return v, fmt.Errorf("avro: schema id %d: %w", id, err)
	}
	return v, nil
}

func (c *Confluent[T]) writer(id int) (avro.Schema, error) {
	if s, ok := c.writers.Load(id); ok {
		return s.(avro.Schema), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, err := c.reg.SchemaByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("avro: schema id %d: %w", id, err)
	}
	if ws.Type != sr.TypeAvro {
		return nil, fmt.Errorf("avro: schema id %d is a %s schema", id, ws.Type)
	}
	w, err := Parse(ws.Schema)
	if err != nil {
		return nil, fmt.Errorf("avro: schema id %d: %w", id, err)
	}
	s, err := c.res.resolved(w)
	if err != nil {
		return nil, fmt.Errorf("avro: schema id %d: %w", id, err)
	}
	c.writers.Store(id, s)
	return s, nil
}

// Encode returns v in the wire format, registering the schema (once) under
// the codec's subject.
func (c *Confluent[T]) Encode(v T) ([]byte, error) {
	return c.AppendEncode(nil, v)
}

// AppendEncode appends v in the wire format to b.
func (c *Confluent[T]) AppendEncode(b []byte, v T) ([]byte, error) {
	id, err := c.ID()
	if err != nil {
		return b, err
	}
	body, err := avro.Marshal(c.schema, v)
	if err != nil {
		return b, err
	}
	b = binary.BigEndian.AppendUint32(append(b, 0), uint32(id))
	return append(b, body...), nil
}

// ID returns the registry's id of the codec's schema, registering it (or
// looking it up) on first use.
func (c *Confluent[T]) ID() (int, error) {
	if id := c.id.Load(); id > 0 {
		return int(id - 1), nil
	}
	c.idMu.Lock()
	defer c.idMu.Unlock()
	if id := c.id.Load(); id > 0 {
		return int(id - 1), nil
	}
	if c.subject == "" {
		return 0, errors.New("avro: encoding needs a subject (avro.Subject)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	text, err := c.schema.(interface{ MarshalJSON() ([]byte, error) }).MarshalJSON()
	if err != nil {
		return 0, err
	}
	schema := sr.Schema{Schema: string(text), Type: sr.TypeAvro}
	var id int
	if c.auto {
		id, err = c.reg.RegisterSchema(ctx, c.subject, schema, -1, -1)
	} else {
		var ss sr.SubjectSchema
		ss, err = c.reg.LookupSchema(ctx, c.subject, schema)
		id = ss.ID
	}
	if err != nil {
		return 0, fmt.Errorf("avro: subject %s: %w", c.subject, err)
	}
	c.id.Store(int64(id) + 1)
	return id, nil
}

// ReadFile reads an object container file, decoding each value with the
// file's schema into T and calling fn with it. A struct's fields take the
// file's fields of their names: fields the file has and T lacks are
// skipped, fields T has and the file lacks stay zero (hamba's decoder does
// not apply a reader schema's defaults to a file; Resolver does, for
// single datums).
func ReadFile[T any](r io.Reader, fn func(T) error) error {
	dec, err := ocf.NewDecoder(r, ocf.WithDecoderSchemaCache(&avro.SchemaCache{}))
	if err != nil {
		return fmt.Errorf("avro: %w", err)
	}
	defer dec.Close()
	for dec.HasNext() {
		var v T
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("avro: %w", err)
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	if err := dec.Error(); err != nil {
		return fmt.Errorf("avro: %w", err)
	}
	return nil
}

// FileWriter writes values of T to an object container file.
type FileWriter[T any] struct {
	enc *ocf.Encoder
}

// Codecs of object container files' blocks.
const (
	Null    = ocf.Null
	Deflate = ocf.Deflate
	Snappy  = ocf.Snappy
	ZStd    = ocf.ZStandard
)

// NewFileWriter starts an object container file of schema (JSON) on w,
// its blocks compressed with codec.
func NewFileWriter[T any](w io.Writer, schema string, codec ocf.CodecName) (*FileWriter[T], error) {
	s, err := Parse(schema)
	if err != nil {
		return nil, fmt.Errorf("avro: %w", err)
	}
	enc, err := ocf.NewEncoderWithSchema(s, w, ocf.WithCodec(codec))
	if err != nil {
		return nil, fmt.Errorf("avro: %w", err)
	}
	return &FileWriter[T]{enc: enc}, nil
}

// Write appends v.
func (f *FileWriter[T]) Write(v T) error { return f.enc.Encode(v) }

// Close flushes the last block; it does not close the underlying writer.
func (f *FileWriter[T]) Close() error { return f.enc.Close() }
