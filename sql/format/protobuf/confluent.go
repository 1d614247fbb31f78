package protobuf

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

// The 'protobuf-confluent' format: Confluent's schema-registry wire format
// for Protobuf. A record is byte 0, the writer schema's registry id (4
// bytes, big endian), the message's index path in its file (a count and
// the indexes, zigzag varints; the single byte 0 for the file's first
// message), then the message.
//
// Writing registers the .proto file ('protobuf-confluent.proto-file')
// under the subject, its imports from the proto path first under their
// import paths as references (the well-known types are not registered:
// the registry knows them), once, and frames every record with the id.
// Reading takes the writer's schema by the record's id from the registry
// (fetched, with its references, and compiled once per id), unless a
// .proto file is given: then that file's message reads every record, as a
// protobuf reader of a compatible schema does.
func init() { format.Register(ConfluentFactory{}) }

// ConfluentFactory is the 'protobuf-confluent' format.
type ConfluentFactory struct{}

// Identifier implements format.Factory.
func (ConfluentFactory) Identifier() string { return "protobuf-confluent" }

const registryTimeout = 30 * time.Second

// ErrNotConfluent is the cause of the error of a record that does not
// start with Confluent's header.
var ErrNotConfluent = errors.New("not in Confluent's wire format (magic byte 0, a schema id, message indexes)")

type registryOptions struct {
	url, subject string
	autoRegister bool
	basicAuth    string
	bearer       string
}

func readRegistryOptions(o *format.Scoped) registryOptions {
	ro := registryOptions{
		url:          o.O.Required(o.Key("url")),
		subject:      o.O.String(o.Key("subject"), ""),
		autoRegister: o.O.Bool(o.Key("auto.register.schemas"), true),
		basicAuth:    o.O.String(o.Key("basic-auth.user-info"), ""),
		bearer:       o.O.String(o.Key("bearer-auth.token"), ""),
	}
	if ro.basicAuth != "" && !strings.Contains(ro.basicAuth, ":") {
		o.O.Invalid(o.Key("basic-auth.user-info"), "must be 'user:password'")
	}
	if ro.subject == "" {
		// Flink's default for the Kafka connectors' value and key formats.
		if c := o.O.Connector(); c == "kafka" || c == "upsert-kafka" {
			if topic, _ := o.O.Lookup("topic"); topic != "" && !strings.Contains(topic, ";") {
				ro.subject = topic + "-value"
				if strings.HasPrefix(o.Prefix, "key.") {
					ro.subject = topic + "-key"
				}
			}
		}
	}
	return ro
}

func newRegistry(ro registryOptions) (*sr.Client, error) {
	opts := []sr.ClientOpt{sr.URLs(strings.Split(ro.url, ",")...), sr.UserAgent("weir"),
		sr.HTTPClient(&http.Client{Timeout: registryTimeout})}
	if user, pass, ok := strings.Cut(ro.basicAuth, ":"); ok {
		opts = append(opts, sr.BasicAuth(user, pass))
	}
	if ro.bearer != "" {
		opts = append(opts, sr.BearerToken(ro.bearer))
	}
	return sr.NewClient(opts...)
}

// Decoder implements format.Factory.
func (ConfluentFactory) Decoder(schema types.Schema, o *format.Scoped) (format.Decoder, types.ChangelogMode, error) {
	t := readTableOptions(o, false)
	ro := readRegistryOptions(o)
	d := &ConfluentDecoder{columns: schema, opt: t.opt}
	if t.file != "" || t.message != "" {
		if t.file == "" || t.message == "" {
			return nil, types.InsertOnly, fmt.Errorf("'%s' and '%s' go together (reading with a local .proto rather than the writer's schema)", o.Key("proto-file"), o.Key("message-class-name"))
		}
		s, err := t.compile()
		if err != nil {
			return nil, types.InsertOnly, err
		}
		md, err := s.Message(t.message)
		if err != nil {
			return nil, types.InsertOnly, err
		}
		if d.local, err = NewDecoder(schema, md, t.opt); err != nil {
			return nil, types.InsertOnly, err
		}
		return d, types.InsertOnly, nil
	}
	if ro.url == "" {
		return nil, types.InsertOnly, nil // reported by the options
	}
	cl, err := newRegistry(ro)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	d.reg = cl
	return d, types.InsertOnly, nil
}

// ConfluentDecoder reads records in Confluent's wire format. It is safe
// for concurrent use.
type ConfluentDecoder struct {
	columns types.Schema
	opt     Options
	local   *Decoder   // the message of a local .proto, or nil
	reg     *sr.Client // else the registry
	schemas sync.Map   // id -> *writerSchema
	decs    sync.Map   // writerKey -> *Decoder
	last    atomic.Pointer[lastWriter]
}

// lastWriter is the writer schema id and index path (as in the header) of
// the last record, and their decoder.
type lastWriter struct {
	id  int
	idx []byte
	dec *Decoder
}

type writerKey struct {
	id    int
	index string // the index path, as text
}

type writerSchema struct {
	done   chan struct{}
	schema *Schema
	err    error
}

// Decode implements format.Decoder.
func (d *ConfluentDecoder) Decode(data []byte, dst []types.Row) ([]types.Row, error) {
	if data == nil {
		return dst, nil
	}
	id, idx, body, err := parseHeader(data)
	if err != nil {
		return dst, d.fail(err)
	}
	dec := d.local
	if dec == nil {
		// The last writer's decoder serves the next record without a
		// lookup or an allocation: a topic mostly has one writer schema.
		if l := d.last.Load(); l != nil && l.id == id && bytes.Equal(l.idx, idx) {
			dec = l.dec
		} else {
			index := decodeIndex(idx)
			k := writerKey{id: id, index: indexKey(index)}
			if v, ok := d.decs.Load(k); ok {
				dec = v.(*Decoder)
			} else if dec, err = d.writer(id, index); err != nil {
				return dst, fmt.Errorf("protobuf-confluent: schema id %d: %w", id, err)
			} else {
				d.decs.Store(k, dec)
			}
			d.last.Store(&lastWriter{id: id, idx: bytes.Clone(idx), dec: dec})
		}
	}
	dst, err = dec.Decode(body, dst)
	if err != nil && !errors.As(err, new(*format.SkipError)) {
		err = d.fail(err)
	}
	return dst, err
}

func (d *ConfluentDecoder) fail(err error) error {
	if d.opt.IgnoreParseErrors {
		return &format.SkipError{Err: err}
	}
	return err
}

// SkipsParseErrors implements format.ParseErrorSkipper.
func (d *ConfluentDecoder) SkipsParseErrors() bool { return d.opt.IgnoreParseErrors }

// parseHeader splits a record into its schema id, its message index path
// (as encoded, checked) and the message.
func parseHeader(b []byte) (id int, idx, body []byte, err error) {
	if len(b) < 6 || b[0] != 0 {
		return 0, nil, nil, fmt.Errorf("protobuf-confluent: %w", ErrNotConfluent)
	}
	id = int(binary.BigEndian.Uint32(b[1:5]))
	b = b[5:]
	n, k := binary.Varint(b)
	if k <= 0 || n < 0 || n > 100 {
		return 0, nil, nil, fmt.Errorf("protobuf-confluent: a bad message index count: %w", ErrNotConfluent)
	}
	at := k
	for range n {
		x, k := binary.Varint(b[at:])
		if k <= 0 || x < 0 || x > 1<<20 {
			return 0, nil, nil, fmt.Errorf("protobuf-confluent: a bad message index: %w", ErrNotConfluent)
		}
		at += k
	}
	return id, b[:at], b[at:], nil
}

// decodeIndex reads an index path parseHeader checked; a count of 0 is
// the file's first message.
func decodeIndex(idx []byte) []int {
	n, k := binary.Varint(idx)
	if n == 0 {
		return []int{0}
	}
	index := make([]int, n)
	for i := range index {
		x, m := binary.Varint(idx[k:])
		index[i] = int(x)
		k += m
	}
	return index
}

func indexKey(index []int) string {
	var b strings.Builder
	for _, i := range index {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('.')
	}
	return b.String()
}

// writer compiles the decoder of the message index names in the schema
// of id.
func (d *ConfluentDecoder) writer(id int, index []int) (*Decoder, error) {
	s, err := d.schema(id)
	if err != nil {
		return nil, err
	}
	md, err := messageAt(s.Files[0], index)
	if err != nil {
		return nil, err
	}
	return NewDecoder(d.columns, md, d.opt)
}

// schema fetches and compiles the schema of id once (a failed fetch is
// tried again by the next record).
func (d *ConfluentDecoder) schema(id int) (*Schema, error) {
	w := &writerSchema{done: make(chan struct{})}
	if prev, loaded := d.schemas.LoadOrStore(id, w); loaded {
		p := prev.(*writerSchema)
		<-p.done
		if p.err == nil {
			return p.schema, nil
		}
		d.schemas.CompareAndDelete(id, p)
		return nil, p.err
	}
	w.schema, w.err = fetchSchema(d.reg, id)
	if w.err != nil {
		d.schemas.CompareAndDelete(id, w)
	}
	close(w.done)
	return w.schema, w.err
}

func fetchSchema(cl *sr.Client, id int) (*Schema, error) {
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	top, err := cl.SchemaByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("fetching it from the registry: %w", err)
	}
	if top.Type != sr.TypeProtobuf {
		return nil, fmt.Errorf("a %s schema, not PROTOBUF", top.Type)
	}
	srcs := map[string]string{}
	var refs func(rs []sr.SchemaReference, depth int) error
	refs = func(rs []sr.SchemaReference, depth int) error {
		if depth > 32 {
			return errors.New("references nest deeper than 32")
		}
		for _, r := range rs {
			if _, ok := srcs[r.Name]; ok {
				continue
			}
			ss, err := cl.SchemaByVersion(ctx, r.Subject, r.Version)
			if err != nil {
				return fmt.Errorf("fetching its reference %s (subject %s, version %d): %w", r.Name, r.Subject, r.Version, err)
			}
			srcs[r.Name] = ss.Schema.Schema
			if err := refs(ss.Schema.References, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := refs(top.References, 0); err != nil {
		return nil, err
	}
	main := "schema-" + strconv.Itoa(id) + ".proto"
	srcs[main] = top.Schema
	res := &protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(srcs)}
	return compile(ctx, main, res)
}

// messageAt finds a message by its index path in file.
func messageAt(fd protoreflect.FileDescriptor, index []int) (protoreflect.MessageDescriptor, error) {
	ms := fd.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range index {
		if i >= ms.Len() {
			return nil, fmt.Errorf("no message at index path %v of %s", index, fd.Path())
		}
		md = ms.Get(i)
		ms = md.Messages()
	}
	if md == nil {
		return nil, fmt.Errorf("an empty message index path")
	}
	return md, nil
}

// indexPath is md's index path in its file.
func indexPath(md protoreflect.MessageDescriptor) []int {
	var p []int
	for d := protoreflect.Descriptor(md); ; d = d.Parent() {
		if _, ok := d.(protoreflect.FileDescriptor); ok {
			break
		}
		p = append([]int{d.Index()}, p...)
	}
	return p
}

// Encoder implements format.Factory.
func (ConfluentFactory) Encoder(schema types.Schema, o *format.Scoped) (format.Encoder, types.ChangelogMode, error) {
	t := readTableOptions(o, true)
	ro := readRegistryOptions(o)
	s, err := t.compile()
	if s == nil {
		return nil, types.InsertOnly, err
	}
	if ro.url == "" {
		return nil, types.InsertOnly, nil
	}
	if ro.subject == "" {
		return nil, types.InsertOnly, fmt.Errorf("'%s' is needed: the connector has no topic to name the subject after", o.Key("subject"))
	}
	md, err := s.Message(t.message)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	if md.ParentFile().Path() != s.Files[0].Path() {
		return nil, types.InsertOnly, fmt.Errorf("message %s is declared in %s, not in %s: name that file as '%s'", md.FullName(), md.ParentFile().Path(), s.Files[0].Path(), o.Key("proto-file"))
	}
	enc, err := NewEncoder(schema, md, t.opt)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	cl, err := newRegistry(ro)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	return &ConfluentEncoder{enc: enc, reg: cl, schema: s, subject: ro.subject, auto: ro.autoRegister, index: indexPath(md)}, types.InsertOnly, nil
}

// ConfluentEncoder writes records in Confluent's wire format. It is safe
// for concurrent use.
type ConfluentEncoder struct {
	enc     *Encoder
	reg     *sr.Client
	schema  *Schema
	subject string
	auto    bool
	index   []int

	// header is the magic byte, id and index path once registered.
	header atomic.Pointer[[]byte]
	// registering serializes the registration (the registry's I/O): the
	// first record registers, the others wait for it.
	registering sync.Mutex
}

// Encode implements format.Encoder.
func (e *ConfluentEncoder) Encode(dst []byte, row *types.Row) ([]byte, bool, error) {
	h := e.header.Load()
	if h == nil {
		var err error
		if h, err = e.registerOnce(); err != nil {
			return dst, false, fmt.Errorf("protobuf-confluent: %w", err)
		}
	}
	return e.enc.Encode(append(dst, *h...), row)
}

// registerOnce registers the schema unless another record did meanwhile
// (a failure is tried again by the next record).
func (e *ConfluentEncoder) registerOnce() (*[]byte, error) {
	e.registering.Lock()
	defer e.registering.Unlock()
	if h := e.header.Load(); h != nil {
		return h, nil
	}
	id, err := e.register()
	if err != nil {
		return nil, err
	}
	h := appendHeader(nil, id, e.index)
	e.header.Store(&h)
	return &h, nil
}

func appendHeader(b []byte, id int, index []int) []byte {
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(id))
	if len(index) == 1 && index[0] == 0 {
		return append(b, 0)
	}
	b = binary.AppendVarint(b, int64(len(index)))
	for _, i := range index {
		b = binary.AppendVarint(b, int64(i))
	}
	return b
}

// register registers the file and its imports from the proto path (or,
// without auto-registration, looks the file up) and returns its id.
func (e *ConfluentEncoder) register() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	versions := map[string]int{}
	// put registers a schema under subject, or looks it up without
	// auto-registration.
	put := func(subject string, s sr.Schema) (sr.SubjectSchema, error) {
		if e.auto {
			ss, err := e.reg.CreateSchema(ctx, subject, s)
			if err != nil {
				return ss, fmt.Errorf("registering the schema under subject '%s': %w", subject, err)
			}
			return ss, nil
		}
		ss, err := e.reg.LookupSchema(ctx, subject, s)
		if err != nil {
			return ss, fmt.Errorf("looking the schema up under subject '%s' (auto.register.schemas is false): %w", subject, err)
		}
		return ss, nil
	}
	var refsOf func(fd protoreflect.FileDescriptor) ([]sr.SchemaReference, error)
	refsOf = func(fd protoreflect.FileDescriptor) ([]sr.SchemaReference, error) {
		var refs []sr.SchemaReference
		imps := fd.Imports()
		for i := 0; i < imps.Len(); i++ {
			imp := imps.Get(i).FileDescriptor
			path := imp.Path()
			src, ok := e.schema.Sources[path]
			if !ok {
				continue // a well-known type
			}
			v, done := versions[path]
			if !done {
				sub, err := refsOf(imp)
				if err != nil {
					return nil, err
				}
				ss, err := put(path, sr.Schema{Schema: src, Type: sr.TypeProtobuf, References: sub})
				if err != nil {
					return nil, fmt.Errorf("the import %s: %w", path, err)
				}
				v = ss.Version
				versions[path] = v
			}
			refs = append(refs, sr.SchemaReference{Name: path, Subject: path, Version: v})
		}
		return refs, nil
	}
	top := e.schema.Files[0]
	refs, err := refsOf(top)
	if err != nil {
		return 0, err
	}
	ss, err := put(e.subject, sr.Schema{Schema: e.schema.Sources[top.Path()], Type: sr.TypeProtobuf, References: refs})
	return ss.ID, err
}
