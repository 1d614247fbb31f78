// Package filesystem is the SQL connector 'filesystem', as Flink's: a table
// stored in local files, one record per line in the table's 'format'
// (json, csv, debezium-json, raw).
//
// As a source, 'path' is a file or a directory: a directory is read with
// everything below it, except files and directories whose names start
// with '.' or '_' (in-progress and hidden files, as Flink). Each file is a
// split; the source is bounded. Blank lines are skipped; a CSV record may
// span lines inside a quoted field. A record that does not decode fails
// the job with a *file.RecordError naming the file, the line and the byte
// offset, or goes to the job's bad-record policy, or is skipped and
// counted with the format's 'ignore-parse-errors'. A checkpoint keeps each
// file's position (restored exactly, even within a debezium-json update
// that gives two rows).
//
// As a sink, 'path' is a directory of part files written exactly once
// through connector/file's ExactlyOnce sink: in-progress files are
// dot-prefixed and become visible part files when the checkpoint that
// covers them completes (or at the end of a bounded job without
// checkpointing). 'sink.rolling-policy.file-size' (default 128MB) starts
// a new part file within a checkpoint. The sink accepts what its format
// accepts: insert-only rows for json, csv and raw, any changelog for
// debezium-json.
//
// 'format' = 'parquet' is a bulk format (sql/format/parquet): the sink
// writes one Parquet part file per checkpoint, partition and subtask,
// footer written at the checkpoint's pre-commit, through ExactlyOnce's
// Bulk option, named part-...parquet; PARTITIONED BY lays the rows out
// in Hive-style partition directories (key=value/...) and
// 'sink.partition-commit.policy.kind' = 'success-file' marks committed
// partitions (process-time trigger). The source reads each file, or each
// row group of a file of several, as a split, decodes only the columns a
// query reads (Source.Project), takes
// the values of columns the files lack from their partition directories,
// and checkpoints the count of rows read. See docs/format-parquet.md.
// PARTITIONED BY partitions the row formats too: their records leave the
// partition columns out, and the source reads them from each file's
// directory names.
package filesystem

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/internal/s3fs"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/connector/internal/rowbuf"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/format/parquet"
	"github.com/weirstream/weir/sql/types"
)

func init() { connector.Register(Factory{}) }

// Factory is the 'filesystem' connector.
type Factory struct{}

// Identifier implements connector.Factory.
func (Factory) Identifier() string { return "filesystem" }

// SupportsPartitioning implements connector.PartitioningFactory: the sink
// writes a PARTITIONED BY table's rows in Hive-style directories.
func (Factory) SupportsPartitioning() {}

var _ connector.PartitioningFactory = Factory{}

// CreateSource implements connector.SourceFactory.
func (Factory) CreateSource(t *connector.Table) (*connector.Source, error) {
	o := connector.NewOptions(t)
	path := tablePath(o)
	// the partition options are the sink's, and accepted (and checked)
	// here too: one table is read and written
	part := partitionOptions(t, o)
	o.Declare("sink.rolling-policy.file-size", "sink.rolling-policy.rollover-interval", "sink.rolling-policy.check-interval",
		lookupTTLKey) // read by CreateLookup
	if o.String("format", "") == "avro" {
		return createAvroSource(t, o, path, part)
	}
	if o.String("format", "") == "parquet" {
		popts := parquet.ParseOptions(o)
		if err := o.Err(); err != nil {
			return nil, err
		}
		if err := checkPath(t, path); err != nil {
			return nil, err
		}
		null := parquet.DefaultPartitionName
		if part != nil {
			null = part.null
		} else {
			null = defaultName(o)
		}
		src := newParquetSource(t, path, popts, null)
		return &connector.Source{Source: src, Bounded: true, Changelog: types.InsertOnly, Options: t.Settings.SourceOptions(), Project: src.project, Prune: src.prune}, nil
	}
	dec, mode := format.NewDecoder(o, "format", part.dataSchema(t.Schema))
	var quote byte
	if o.String("format", "") == "csv" {
		quote = '"'
		if q := o.String("csv.quote-character", `"`); len(q) == 1 {
			quote = q[0]
		}
		if o.Bool("csv.disable-quote-character", false) {
			quote = 0
		}
	}
	if err := o.Err(); err != nil {
		return nil, err
	}
	if err := checkPath(t, path); err != nil {
		return nil, err
	}
	src := &Source{table: t.Name, path: path, dec: dec, quote: quote, maxRecord: file.DefaultMaxRecordBytes, part: part, schema: t.Schema}
	return &connector.Source{Source: src, Bounded: true, Changelog: mode, Options: t.Settings.SourceOptions()}, nil
}

// checkPath checks that a source's path exists: a missing input is an
// error of the statement, where the table is used, not of the job once it
// runs (Splits checks again then).
func checkPath(t *connector.Table, path string) error {
	if s3fs.IsURL(path) {
		if _, err := listObjects(path); err != nil {
			return fmt.Errorf("table '%s': %w", t.Name, err)
		}
		return nil
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("table '%s': its 'path' %s does not exist", t.Name, path)
	} else if err != nil {
		return fmt.Errorf("table '%s': %w", t.Name, err)
	}
	return nil
}

// CreateSink implements connector.SinkFactory.
func (Factory) CreateSink(t *connector.Table) (*connector.Sink, error) {
	o := connector.NewOptions(t)
	path := tablePath(o)
	roll := o.MemorySize("sink.rolling-policy.file-size", 128<<20)
	// Flink's rollover interval (default 30 min); its check interval is
	// accepted: weir checks a file's age at every write
	rollEvery := file.RollInterval(o.Duration("sink.rolling-policy.rollover-interval", 30*time.Minute))
	if o.Duration("sink.rolling-policy.check-interval", time.Minute) <= 0 {
		o.Invalid("sink.rolling-policy.check-interval", "must be positive")
	}
	if o.String("format", "") == "avro" {
		return createAvroSink(t, o, path, roll, rollEvery)
	}
	if o.String("format", "") == "parquet" {
		popts := parquet.ParseOptions(o)
		part := partitionOptions(t, o)
		if err := o.Err(); err != nil {
			return nil, err
		}
		if err := checkSinkPath(t, path); err != nil {
			return nil, err
		}
		sink, err := parquetSink(t, path, roll, popts, part, rollEvery)
		if err != nil {
			return nil, err
		}
		return &connector.Sink{Sink: sink, Accepts: types.InsertOnly, ExactlyOnce: true}, nil
	}
	part := partitionOptions(t, o)
	enc, mode := format.NewEncoder(o, "format", part.dataSchema(t.Schema))
	if err := o.Err(); err != nil {
		return nil, err
	}
	if err := checkSinkPath(t, path); err != nil {
		return nil, err
	}
	opts := []file.SinkOption{file.RollSize(roll), rollEvery, file.Format(func(r types.Row) ([]byte, error) {
		if part != nil {
			// the partition columns are in the directory names only
			vs := make([]types.Value, len(part.data))
			for i, c := range part.data {
				vs[i] = r.Values[c]
			}
			r.Values = vs
		}
		b, _, err := enc.Encode(nil, &r)
		return b, err
	})}
	if part != nil {
		opts = append(opts, file.PartitionBy(part.dir))
		opts = append(opts, part.commit...)
	}
	sink := file.ExactlyOnce[types.Row](path, opts...)
	return &connector.Sink{Sink: sink, Accepts: mode, ExactlyOnce: true}, nil
}

// tablePath reads the 'path' option: a local path, or a file:// URL of
// one (as Flink's job files often write it).
func tablePath(o *connector.Options) string {
	p := o.Required("path")
	if rest, ok := strings.CutPrefix(p, "file://"); ok {
		return rest
	}
	if s3fs.IsURL(p) {
		c, err := s3fs.Clean(p)
		if err != nil {
			o.Invalid("path", "%v", err)
		}
		return c
	}
	if i := strings.Index(p, "://"); i > 0 && !strings.ContainsAny(p[:i], "/.\\") {
		o.Invalid("path", "%s:// paths are not supported by the filesystem connector (local paths, file:// and s3:// are)", p[:i])
	}
	return p
}

func checkSinkPath(t *connector.Table, path string) error {
	if s3fs.IsURL(path) {
		return nil // (the writers check the bucket)
	}
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
		return fmt.Errorf("table '%s': the sink path %s is a file; a filesystem sink writes a directory of part files", t.Name, path)
	}
	return nil
}

// Source reads the files of a table. It implements
// weir.RestorableSource[types.Row].
type Source struct {
	table     string
	path      string
	dec       format.Decoder
	quote     byte // CSV: records may span lines inside quotes
	maxRecord int
	part      *partitioning // nil: not partitioned
	schema    types.Schema  // the table's (dec decodes part's data columns)
}

type split string

func (s split) ID() string { return string(s) }

// Splits lists the files: the path itself, or the files below it.
func (s *Source) Splits(context.Context) ([]weir.Split, error) {
	return listSplits(s.table, s.path)
}

func listSplits(table, path string) ([]weir.Split, error) {
	if s3fs.IsURL(path) {
		files, err := listObjects(path)
		if err != nil {
			return nil, fmt.Errorf("table '%s': %w", table, err)
		}
		splits := make([]weir.Split, len(files))
		for i, f := range files {
			splits[i] = split(f)
		}
		return splits, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("table '%s': %w", table, err)
	}
	if !fi.IsDir() {
		return []weir.Split{split(filepath.Clean(path))}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != path && hidden(d.Name()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, filepath.Clean(p))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("table '%s': %w", table, err)
	}
	sort.Strings(files)
	splits := make([]weir.Split, len(files))
	for i, f := range files {
		splits[i] = split(f)
	}
	return splits, nil
}

// listObjects lists the objects of an s3:// path: the object itself, or
// those below it but in hidden "directories" or with hidden names, as
// listSplits does on a local disk. None is an error matching
// fs.ErrNotExist (a prefix without objects does not exist).
func listObjects(path string) ([]string, error) {
	obj, err := s3fs.FromEnv()
	if err != nil {
		return nil, err
	}
	objs, err := obj.Walk(path)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, o := range objs {
		rel := strings.TrimPrefix(strings.TrimPrefix(o.Name, path), "/")
		skip := false
		for _, seg := range strings.Split(rel, "/") {
			if rel != "" && hidden(seg) {
				skip = true
			}
		}
		if !skip {
			files = append(files, o.Name)
		}
	}
	if len(objs) == 0 {
		return nil, &fs.PathError{Op: "list", Path: path, Err: fs.ErrNotExist}
	}
	return files, nil
}

func hidden(name string) bool { return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") }

// Open implements weir.Source.
func (s *Source) Open(_ context.Context, sp weir.Split) (weir.SplitReader[types.Row], error) {
	return s.open(string(sp.(split)), pos{})
}

// OpenAt implements weir.RestorableSource.
func (s *Source) OpenAt(_ context.Context, sp weir.Split, b []byte) (weir.SplitReader[types.Row], error) {
	p, err := decodePos(b)
	if err != nil {
		return nil, fmt.Errorf("table '%s': %s: %w", s.table, sp.ID(), err)
	}
	return s.open(sp.ID(), p)
}

func (s *Source) open(path string, at pos) (*reader, error) {
	if s3fs.IsURL(path) {
		return s.openObject(path, at)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("table '%s': %w", s.table, err)
	}
	if at.off > 0 {
		fi, err := f.Stat()
		if err == nil && fi.Size() < at.off {
			f.Close()
			return nil, fmt.Errorf("table '%s': %s is shorter (%d bytes) than the checkpointed position %d: it was changed", s.table, path, fi.Size(), at.off)
		}
		if _, err := f.Seek(at.off, io.SeekStart); err != nil {
			f.Close()
			return nil, fmt.Errorf("table '%s': %w", s.table, err)
		}
	}
	return s.start(path, f, at)
}

// openObject opens an s3:// object at a checkpointed position: a ranged
// read from its offset.
func (s *Source) openObject(path string, at pos) (*reader, error) {
	obj, err := s3fs.FromEnv()
	if err != nil {
		return nil, fmt.Errorf("table '%s': %w", s.table, err)
	}
	f, err := obj.OpenFrom(path, at.off) // (an object shorter than at.off: an error)
	if err != nil {
		return nil, fmt.Errorf("table '%s': %w", s.table, err)
	}
	return s.start(path, f, at)
}

// start makes the reader of an open file positioned at at.off.
func (s *Source) start(path string, f io.ReadCloser, at pos) (*reader, error) {
	r := &reader{path: path, f: f, br: bufio.NewReaderSize(f, 256<<10), off: at.off, line: at.line, quote: s.quote, max: s.maxRecord}
	if s.part != nil {
		vs, err := s.part.values(s.path, path, s.schema)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("table '%s': %w", s.table, err)
		}
		r.part, r.partValues, r.width = s.part, vs, len(s.schema)
	}
	r.buf.Dec = s.dec
	r.buf.SetSkipped(at.skipped)
	if at.taken > 0 {
		// Decode the record whose first rows were emitted before the
		// checkpoint again, and drop them.
		rec, err := r.next()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("table '%s': %s: reading the record at the checkpointed position: %w", s.table, path, err)
		}
		if err := r.buf.Decode(rec, r); err != nil {
			f.Close()
			return nil, r.recordError(err)
		}
		r.buf.Drop(at.taken)
	}
	return r, nil
}

type reader struct {
	path            string
	f               io.ReadCloser
	br              *bufio.Reader
	off, line       int64 // the next unread byte, the lines before it
	recOff, recLine int64 // the current record: its offset and (first) line
	quote           byte
	max             int
	rec             []byte
	buf             rowbuf.Buf
	err             error
	eof             bool
	// a partitioned table: the rows decoded hold part.data's columns,
	// widened to the table's with partValues
	part       *partitioning
	partValues []types.Value
	width      int
}

var (
	_ weir.CheckpointedReader[types.Row] = (*reader)(nil)
	_ weir.BadRecordReporter             = (*reader)(nil)
	_ weir.SkipCounter                   = (*reader)(nil)
	_ weir.RestorableSource[types.Row]   = (*Source)(nil)
)

// Where implements rowbuf.Where.
func (r *reader) Where() string {
	return r.path + ":" + strconv.FormatInt(r.recLine, 10) + " (byte offset " + strconv.FormatInt(r.recOff, 10) + ")"
}

func (r *reader) SetBadRecordHandler(h func(raw []byte, position string, err error)) {
	r.buf.SetBadRecordHandler(h)
}

func (r *reader) Skipped() int64 { return r.buf.Skipped() }

func (r *reader) recordError(err error) error {
	return &file.RecordError{Path: r.path, Line: r.recLine, Offset: r.recOff, Err: err}
}

// Read implements weir.SplitReader.
func (r *reader) Read(ctx context.Context, dst []types.Row) (int, error) {
	n, err := r.read(ctx, dst)
	if r.part != nil {
		for i := range dst[:n] {
			vs := make([]types.Value, r.width)
			for j, c := range r.part.data {
				vs[c] = dst[i].Values[j]
			}
			for j, c := range r.part.keys {
				vs[c] = r.partValues[j]
			}
			dst[i].Values = vs
		}
	}
	return n, err
}

func (r *reader) read(ctx context.Context, dst []types.Row) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	n := 0
	for n < len(dst) {
		if r.buf.Pending() {
			n += r.buf.Take(dst[n:])
			continue
		}
		if r.eof {
			return n, io.EOF
		}
		rec, err := r.next()
		if err == io.EOF {
			r.eof = true
			return n, io.EOF
		}
		if err == nil {
			err = r.buf.Decode(rec, r)
			if err != nil {
				err = r.recordError(err)
			}
		}
		if err != nil {
			r.err = err
			if n > 0 {
				return n, nil
			}
			return 0, err
		}
	}
	return n, nil
}

var errTooLong = errors.New("record too long")

// next returns the next record, without its line break, skipping blank
// lines; it sets recOff and recLine. The slice is valid until the next
// call. A record longer than max is a bad record (rowbuf.Buf.Bad): when the
// format skips parse errors or the job's bad-record policy takes it, the
// rest of it is read past and the next record returned.
func (r *reader) next() ([]byte, error) {
	for {
		r.recOff, r.recLine = r.off, r.line+1
		r.rec = r.rec[:0]
		inQuote, tooLong := false, false
		var rec []byte
		var err error
		for {
			var chunk []byte
			chunk, err = r.br.ReadSlice('\n')
			if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
				return nil, fmt.Errorf("%s: %w", r.path, err)
			}
			r.off += int64(len(chunk))
			if err == nil {
				r.line++
			}
			if r.quote != 0 && bytes.Count(chunk, []byte{r.quote})%2 == 1 {
				inQuote = !inQuote
			}
			more := err == bufio.ErrBufferFull || (err == nil && inQuote)
			if !more && len(r.rec) == 0 {
				rec = chunk // the whole record in the buffer: no copy
				break
			}
			// A long line, or a line break inside a quoted CSV field.
			if !tooLong {
				r.rec = append(r.rec, chunk...)
				if len(trimEOL(r.rec)) > r.max {
					if err := r.buf.Bad(r.rec[:r.max], r, fmt.Errorf("%w: more than %d bytes", errTooLong, r.max)); err != nil {
						return nil, r.recordError(err)
					}
					tooLong = true
				}
			}
			if !more {
				rec = r.rec
				break
			}
		}
		rec = trimEOL(rec)
		if !tooLong && len(bytes.TrimSpace(rec)) > 0 {
			return rec, nil
		}
		if err == io.EOF {
			return nil, io.EOF
		}
	}
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

// pos is a checkpointed position: the offset of the next record and the
// lines before it, the rows of that record already emitted, and the count
// of skipped records.
type pos struct {
	off, line, skipped int64
	taken              int
}

// Position implements weir.CheckpointedReader.
func (r *reader) Position() ([]byte, error) {
	p := pos{off: r.off, line: r.line, skipped: r.buf.Skipped()}
	if t := r.buf.Taken(); t > 0 {
		p.off, p.line, p.taken = r.recOff, r.recLine-1, t
	}
	b := binary.AppendUvarint([]byte{1}, uint64(p.off))
	b = binary.AppendUvarint(b, uint64(p.line))
	b = binary.AppendUvarint(b, uint64(p.taken))
	return binary.AppendUvarint(b, uint64(p.skipped)), nil
}

func decodePos(b []byte) (pos, error) {
	if len(b) < 1 || b[0] != 1 {
		return pos{}, fmt.Errorf("invalid checkpointed position (%d bytes)", len(b))
	}
	b = b[1:]
	var v [4]uint64
	for i := range v {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			return pos{}, fmt.Errorf("invalid checkpointed position")
		}
		v[i], b = x, b[n:]
	}
	return pos{off: int64(v[0]), line: int64(v[1]), taken: int(v[2]), skipped: int64(v[3])}, nil
}

// Close implements weir.SplitReader.
func (r *reader) Close() error { return r.f.Close() }
