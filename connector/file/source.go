package file

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/s3fs"
)

const (
	// readBufferSize is the size of the read buffer of each split.
	readBufferSize = 256 << 10
	// maxIdleWait bounds how long one Read of a followed file waits when
	// there is nothing new, as weir.SplitReader asks: the source loop must
	// get to flush its buffers, serve its other splits and notice
	// cancellation.
	maxIdleWait = 10 * time.Millisecond
)

// Option configures a file source (JSONLines, CSV).
type Option interface{ apply(*config) }

type config struct {
	follow    bool
	poll      time.Duration
	skipBad   bool
	header    bool
	bufSize   int
	maxRecord int64
}

// DefaultMaxRecordBytes is the longest line (JSON Lines) or record (CSV,
// whose quoted fields may span lines) a source reads unless told
// otherwise with MaxRecordBytes.
const DefaultMaxRecordBytes = 16 << 20

// MaxRecordBytes sets the longest line (JSON Lines) or record (CSV) the
// source reads, in bytes, without its line ending (default
// DefaultMaxRecordBytes). A longer one is never held in memory whole: it
// is skipped and reported as a bad record wrapping ErrTooLong, with its
// line number (a *RecordError, or skipped and counted with
// SkipBadRecords). n must be positive.
func MaxRecordBytes(n int64) Option {
	return optionFunc(func(c *config) { c.maxRecord = n })
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// Follow makes the source follow its files like tail -f: at the end of a
// file it does not end but waits for the file to grow, looking for new data
// every pollInterval. A last line without its '\n' is held back until the
// '\n' arrives. A file that shrinks (truncated in place, as by logrotate's
// copytruncate) is read again from its start. The job then only ends when
// its context is cancelled. pollInterval must be positive.
func Follow(pollInterval time.Duration) Option {
	return optionFunc(func(c *config) { c.follow, c.poll = true, pollInterval })
}

// SkipBadRecords makes the source skip records it cannot decode (or that
// the parse function of CSV rejects) and count them, instead of failing the
// job with a *RecordError. The count is the reader's Skipped and the job's
// weir_bad_records_skipped_total metric.
func SkipBadRecords() Option {
	return optionFunc(func(c *config) { c.skipBad = true })
}

// Header says whether the first record of each CSV file is a header, to be
// skipped. It is only valid for CSV.
func Header(skip bool) Option {
	return optionFunc(func(c *config) { c.header = skip })
}

// RecordError is the failure to decode one record of a file.
type RecordError struct {
	Path   string // the file, as cleaned by filepath.Clean
	Line   int64  // 1-based number of the line where the record starts
	Offset int64  // byte offset of the start of the record
	Err    error  // the cause
}

func (e *RecordError) Error() string {
	return "file: " + e.Path + ":" + strconv.FormatInt(e.Line, 10) +
		" (byte offset " + strconv.FormatInt(e.Offset, 10) + "): " + e.Err.Error()
}

func (e *RecordError) Unwrap() error { return e.Err }

// JSONLines returns a source reading JSON Lines files: one JSON value per
// line, decoded into a T with encoding/json. Blank lines are skipped. Each
// path is one split, whose ID is the path cleaned by filepath.Clean. A path
// may be an object, `s3://bucket/key` (read by ranged requests, resumed
// from a checkpoint's offset; not with Follow).
func JSONLines[T any](paths []string, opts ...Option) weir.Source[T] {
	return newSource[T](paths, opts, formatJSON, nil)
}

// CSV returns a source reading CSV files (RFC 4180, as encoding/csv reads
// them: comma-separated, quoted fields may contain commas, quotes written
// as "" and line breaks). parse turns the fields of one record into a T;
// records may have different numbers of fields, parse checks them. The
// fields slice is reused for the next record: parse must not keep it (the
// strings in it it may keep). Empty lines are skipped; Header(true) skips
// the first record of each file. Each path is one split, whose ID is the
// path cleaned by filepath.Clean; paths may be s3:// objects, as for
// JSONLines.
func CSV[T any](paths []string, parse func(fields []string) (T, error), opts ...Option) weir.Source[T] {
	return newSource(paths, opts, formatCSV, parse)
}

type format uint8

const (
	formatJSON format = iota
	formatCSV
)

type source[T any] struct {
	paths  []string
	cfg    config
	format format
	parse  func([]string) (T, error)
	err    error // a configuration error, reported by Splits
}

func newSource[T any](paths []string, opts []Option, f format, parse func([]string) (T, error)) *source[T] {
	s := &source[T]{cfg: config{bufSize: readBufferSize, maxRecord: DefaultMaxRecordBytes}, format: f, parse: parse}
	for _, o := range opts {
		o.apply(&s.cfg)
	}
	var errs []error
	if len(paths) == 0 {
		errs = append(errs, errors.New("file: no paths given"))
	}
	seen := make(map[string]bool, len(paths))
	for _, p := range paths {
		if p == "" {
			errs = append(errs, errors.New("file: empty path"))
			continue
		}
		c := filepath.Clean(p)
		if s3fs.IsURL(p) {
			var err error
			if c, err = s3fs.Clean(p); err != nil {
				errs = append(errs, fmt.Errorf("file: %w", err))
				continue
			}
			if s.cfg.follow {
				errs = append(errs, fmt.Errorf("file: Follow: %s is an object, which does not grow", c))
			}
		}
		if seen[c] {
			errs = append(errs, fmt.Errorf("file: path %s given twice", c))
			continue
		}
		seen[c] = true
		s.paths = append(s.paths, c)
	}
	if s.cfg.follow && s.cfg.poll <= 0 {
		errs = append(errs, fmt.Errorf("file: Follow(%v): the poll interval must be positive", s.cfg.poll))
	}
	if s.cfg.maxRecord <= 0 {
		errs = append(errs, fmt.Errorf("file: MaxRecordBytes(%d): must be positive", s.cfg.maxRecord))
	}
	if f == formatJSON && s.cfg.header {
		errs = append(errs, errors.New("file: Header is only valid for CSV"))
	}
	if f == formatCSV && parse == nil {
		errs = append(errs, errors.New("file: CSV needs a parse function"))
	}
	s.err = errors.Join(errs...)
	return s
}

// split is one file.
type split string

func (s split) ID() string { return string(s) }

// Splits implements weir.Source: one split per path.
func (s *source[T]) Splits(context.Context) ([]weir.Split, error) {
	if s.err != nil {
		return nil, s.err
	}
	out := make([]weir.Split, len(s.paths))
	for i, p := range s.paths {
		out[i] = split(p)
	}
	return out, nil
}

// Open implements weir.Source. It returns a *Reader[T]. A file that does
// not exist fails here.
func (s *source[T]) Open(_ context.Context, sp weir.Split) (weir.SplitReader[T], error) {
	if s.err != nil {
		return nil, s.err
	}
	p, ok := sp.(split)
	if !ok {
		return nil, fmt.Errorf("file: split %q does not belong to this source", sp.ID())
	}
	if s3fs.IsURL(string(p)) {
		rc, err := openObject(string(p), 0)
		if err != nil {
			return nil, err
		}
		r := newReader(string(p), rc, s.cfg, s.format, s.parse)
		r.obj = rc
		return r, nil
	}
	f, _, err := openFile(string(p))
	if err != nil {
		return nil, err
	}
	return newReader(string(p), f, s.cfg, s.format, s.parse), nil
}

// openObject opens an s3:// object from byte off (a ranged read).
func openObject(path string, off int64) (io.ReadCloser, error) {
	obj, err := s3fs.FromEnv()
	if err == nil {
		var rc io.ReadCloser
		if rc, err = obj.OpenFrom(path, off); err == nil {
			return rc, nil
		}
	}
	return nil, fmt.Errorf("file: %w", err)
}

func openFile(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("file: %w", err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, 0, fmt.Errorf("file: %s is a directory", path)
	}
	return f, fi.Size(), nil
}

// OpenAt implements weir.RestorableSource: it reopens a file where a
// checkpoint left its reader. A bounded file now shorter than that offset
// was replaced or truncated: an error (a followed one is read again from
// its start, as when it shrinks while read).
func (s *source[T]) OpenAt(_ context.Context, sp weir.Split, pos []byte) (weir.SplitReader[T], error) {
	if s.err != nil {
		return nil, s.err
	}
	p, ok := sp.(split)
	if !ok {
		return nil, fmt.Errorf("file: split %q does not belong to this source", sp.ID())
	}
	at, err := decodeFilePos(pos)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, string(p))
	}
	if s3fs.IsURL(string(p)) {
		rc, err := openObject(string(p), at.Off)
		if err != nil {
			return nil, err
		}
		r := newReader(string(p), rc, s.cfg, s.format, s.parse)
		r.obj = rc
		r.lines.off, r.lines.start, r.lines.line = at.Off, at.Off, at.Line
		r.sawHeader = at.Header
		r.skipped.Store(at.Skipped)
		return r, nil
	}
	f, size, err := openFile(string(p))
	if err != nil {
		return nil, err
	}
	if size < at.Off {
		if !s.cfg.follow {
			f.Close()
			return nil, fmt.Errorf("file: %s has %d bytes, fewer than the checkpointed offset %d: it was truncated or replaced", string(p), size, at.Off)
		}
		at = filePos{}
	}
	if _, err := f.Seek(at.Off, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("file: %w", err)
	}
	r := newReader(string(p), f, s.cfg, s.format, s.parse)
	r.lines.off, r.lines.start, r.lines.line = at.Off, at.Off, at.Line
	r.sawHeader = at.Header
	r.skipped.Store(at.Skipped)
	return r, nil
}

// Reader reads one file of a JSONLines or CSV source; Open returns one. Its
// methods are meant to be called from one goroutine, except Skipped.
type Reader[T any] struct {
	path   string
	f      *os.File      // nil if not reading a file (tests, objects)
	obj    io.ReadCloser // an s3:// object being read
	cfg    config
	format format
	lines  *lineReader

	// CSV
	parse     func([]string) (T, error)
	csv       *csv.Reader
	csvIn     bytesReader   // what csv reads: the current record
	csvBuf    *bufio.Reader // csv's buffer over csvIn, reset per record
	rec       []byte        // a record of several lines being assembled
	inRec     bool          // rec holds the start of a record
	recSkip   int64         // >0: the record is too long; bytes skipped so far
	state     csvState      // CSV scanner state at the end of rec
	sawHeader bool

	recOff, recLine int64 // where the current record starts

	skipped   atomic.Int64
	onBad     func(raw []byte, position string, err error) // set by the job for OnBadRecord(Skip|DeadLetter)
	idleUntil time.Time                                    // follow: don't look at the file again before
	timer     *time.Timer                                  // follow: for idle waits
	err       error                                        // returned by the next Read
	eof       bool
}

var (
	_ weir.CheckpointedReader[int] = (*Reader[int])(nil)
	_ weir.SkipCounter             = (*Reader[int])(nil)
	_ weir.BadRecordReporter       = (*Reader[int])(nil)
	_ weir.RestorableSource[int]   = (*source[int])(nil)
)

func newReader[T any](path string, r io.Reader, cfg config, f format, parse func([]string) (T, error)) *Reader[T] {
	rd := &Reader[T]{
		path:   path,
		cfg:    cfg,
		format: f,
		parse:  parse,
		lines:  newLineReader(r, cfg.bufSize, cfg.follow),
	}
	rd.lines.max = cfg.maxRecord
	if file, ok := r.(*os.File); ok {
		rd.f = file
	}
	if f == formatCSV {
		// csv.NewReader uses a *bufio.Reader as it is, so we can drop what
		// it buffered of a record it failed on.
		rd.csvBuf = bufio.NewReaderSize(&rd.csvIn, 4096)
		rd.csv = csv.NewReader(rd.csvBuf)
		rd.csv.FieldsPerRecord = -1
		rd.csv.ReuseRecord = true
	}
	return rd
}

// Read implements weir.SplitReader. It fills dst with up to len(dst)
// records. At the end of the file it returns io.EOF, unless following the
// file: then, when there is nothing new, it waits a little (at most 10ms,
// and it looks at the file again only once per poll interval) and returns
// 0, nil; it returns ctx's error once ctx is done.
//
// A record that cannot be decoded makes Read return a *RecordError
// (after the records before it have been returned), unless SkipBadRecords
// was given. Errors are final.
func (r *Reader[T]) Read(ctx context.Context, dst []T) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.eof {
		return 0, io.EOF
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if !r.idleUntil.IsZero() {
		if d := time.Until(r.idleUntil); d > 0 {
			return 0, r.wait(ctx, min(d, maxIdleWait))
		}
		r.idleUntil = time.Time{}
	}
	n := 0
	for n < len(dst) {
		rec, err := r.nextRecord()
		if err != nil {
			switch {
			case err == io.EOF:
				r.eof = true
				return n, io.EOF
			case err == errPending:
				if n > 0 {
					return n, nil
				}
				if r.truncated() {
					continue
				}
				r.idleUntil = time.Now().Add(r.cfg.poll)
				return 0, r.wait(ctx, min(r.cfg.poll, maxIdleWait))
			case errors.Is(err, ErrTooLong):
				// Handled as a record that does not decode; rec is nil
				// (the line was not kept).
			default:
				r.err = fmt.Errorf("file: %s: %w", r.path, err)
				if n > 0 {
					return n, nil
				}
				return 0, r.err
			}
		}
		if err == nil {
			err = r.decode(rec, &dst[n])
		}
		if err != nil {
			if err == errEmpty {
				continue
			}
			if errors.Is(err, io.EOF) {
				// Not to be taken for the end of the split.
				err = errors.New(err.Error())
			}
			if r.onBad != nil {
				r.onBad(bytes.TrimRight(rec, "\r\n"), r.path+":"+strconv.FormatInt(r.recLine, 10)+" (byte offset "+strconv.FormatInt(r.recOff, 10)+")", err)
				continue
			}
			if r.cfg.skipBad {
				r.skipped.Add(1)
				continue
			}
			r.err = &RecordError{Path: r.path, Line: r.recLine, Offset: r.recOff, Err: err}
			if n > 0 {
				return n, nil
			}
			return 0, r.err
		}
		n++
	}
	return n, nil
}

// nextRecord returns the bytes of the next record, skipping blank lines
// (JSON) or empty lines and the header (CSV), and sets recOff and recLine.
// The slice is valid until the next call.
func (r *Reader[T]) nextRecord() ([]byte, error) {
	for {
		line, err := r.lines.next()
		if err != nil {
			if errors.Is(err, ErrTooLong) {
				// A line too long to keep ends the record it is part of.
				if !r.inRec {
					r.recOff, r.recLine = r.lines.start, r.lines.line
				}
				r.inRec, r.recSkip = false, 0
				return nil, err
			}
			if err == io.EOF && r.inRec {
				r.inRec = false
				if r.recSkip > 0 {
					return nil, r.recTooLong()
				}
				// A quoted field that never ends: let encoding/csv say so.
				return r.rec, nil
			}
			return nil, err
		}
		if r.format == formatJSON {
			if blank(line) {
				continue
			}
			r.recOff, r.recLine = r.lines.start, r.lines.line
			return line, nil
		}
		if !r.inRec {
			if empty(line) {
				continue
			}
			r.recOff, r.recLine = r.lines.start, r.lines.line
			r.state = csvFieldStart
		}
		r.state = scanCSV(r.state, trimNL(line))
		if r.state == csvQuoted {
			// The record goes on on the next line.
			switch {
			case !r.inRec:
				r.rec = append(r.rec[:0], line...)
				r.inRec = true
			case r.recSkip > 0:
				r.recSkip += int64(len(line))
			default:
				r.rec = append(r.rec, line...)
			}
			if r.recSkip == 0 && r.lines.over(int64(len(r.rec)), false) {
				// Too long: scan on to the record's end without keeping it.
				r.recSkip, r.rec = int64(len(r.rec)), r.rec[:0]
			}
			continue
		}
		if r.inRec {
			r.inRec = false
			if r.recSkip > 0 {
				r.recSkip += int64(len(line))
				return nil, r.recTooLong()
			}
			r.rec = append(r.rec, line...)
			line = r.rec
			if r.lines.over(int64(len(line)), line[len(line)-1] == '\n') {
				r.recSkip = int64(len(line))
				return nil, r.recTooLong()
			}
		}
		if r.cfg.header && !r.sawHeader {
			r.sawHeader = true
			continue
		}
		return line, nil
	}
}

// recTooLong ends a CSV record that grew past MaxRecordBytes.
func (r *Reader[T]) recTooLong() error {
	err := &tooLongError{size: r.recSkip, max: r.cfg.maxRecord}
	r.recSkip = 0
	r.rec = r.rec[:0]
	return err
}

func trimNL(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		return line[:n-1]
	}
	return line
}

// errEmpty is returned by decode for a record with nothing in it.
var errEmpty = errors.New("file: empty record")

// decode decodes one record into *dst.
func (r *Reader[T]) decode(rec []byte, dst *T) error {
	if r.format == formatJSON {
		// The batch slot may hold an older record: decoding into it would
		// merge the two and share its maps and slices.
		var zero T
		*dst = zero
		return json.Unmarshal(rec, dst)
	}
	r.csvIn.b = rec
	r.csvBuf.Reset(&r.csvIn) // drop what a failed record left behind
	fields, err := r.csv.Read()
	if err != nil {
		if err == io.EOF {
			return errEmpty // only line endings: nothing to parse
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			// pe's line numbers count only what csv was given.
			return fmt.Errorf("column %d: %w", pe.Column, pe.Err)
		}
		return err
	}
	v, err := r.parse(fields)
	if err != nil {
		return err
	}
	*dst = v
	return nil
}

// truncated reports whether the followed file shrank below what was read,
// and if so starts reading it again from its start.
func (r *Reader[T]) truncated() bool {
	if r.f == nil {
		return false
	}
	fi, err := r.f.Stat()
	if err != nil || fi.Size() >= r.lines.consumed() {
		return false
	}
	if _, err := r.f.Seek(0, io.SeekStart); err != nil {
		return false
	}
	r.lines.reset(r.f)
	r.inRec, r.sawHeader = false, false
	return true
}

// wait waits for d or until ctx is done.
func (r *Reader[T]) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	if r.timer == nil {
		r.timer = time.NewTimer(d)
	} else {
		r.timer.Reset(d)
	}
	select {
	case <-ctx.Done():
		r.timer.Stop()
		return ctx.Err()
	case <-r.timer.C:
		return nil
	}
}

// Skipped implements weir.SkipCounter: how many bad records were skipped
// (always 0 without SkipBadRecords). It may be called concurrently with
// Read.
func (r *Reader[T]) Skipped() int64 { return r.skipped.Load() }

// SetBadRecordHandler implements weir.BadRecordReporter: records that
// cannot be decoded go to h, with "path:line (byte offset N)" as their
// position, instead of failing the reader or being counted by
// SkipBadRecords.
func (r *Reader[T]) SetBadRecordHandler(h func(raw []byte, position string, err error)) { r.onBad = h }

// Offset is the byte offset of the next unread line: where a reader
// would resume to read what this one has not returned yet. Lines held back
// (the incomplete last line of a followed file, a CSV record whose quoted
// field goes on) count as unread. After a *RecordError it is past the bad
// record.
func (r *Reader[T]) Offset() int64 {
	if r.inRec {
		return r.recOff
	}
	return r.lines.off
}

// filePos is a reader's position in a checkpoint.
type filePos struct {
	Off, Line int64 // Offset, and the number of lines before it
	Header    bool  // the CSV header was read
	Skipped   int64
}

// Position implements weir.CheckpointedReader: the offset of the next
// unread line (as Offset), with its line number, whether the CSV header
// was read, and the count of skipped records, so that a reader reopened
// there by OpenAt reports the same lines and counts.
func (r *Reader[T]) Position() ([]byte, error) {
	p := filePos{Off: r.lines.off, Line: r.lines.line, Header: r.sawHeader, Skipped: r.skipped.Load()}
	if r.inRec {
		p.Off, p.Line = r.recOff, r.recLine-1
	}
	b := binary.AppendUvarint([]byte{1}, uint64(p.Off))
	b = binary.AppendUvarint(b, uint64(p.Line))
	h := byte(0)
	if p.Header {
		h = 1
	}
	b = append(b, h)
	return binary.AppendUvarint(b, uint64(p.Skipped)), nil
}

func decodeFilePos(b []byte) (filePos, error) {
	bad := func() (filePos, error) {
		return filePos{}, fmt.Errorf("file: invalid checkpointed position (%d bytes)", len(b))
	}
	if len(b) < 1 || b[0] != 1 {
		return bad()
	}
	b = b[1:]
	var p filePos
	var v [2]uint64
	for i := range v {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			return bad()
		}
		v[i], b = x, b[n:]
	}
	if len(b) < 1 {
		return bad()
	}
	p.Off, p.Line, p.Header = int64(v[0]), int64(v[1]), b[0] == 1
	x, n := binary.Uvarint(b[1:])
	if n <= 0 {
		return bad()
	}
	p.Skipped = int64(x)
	return p, nil
}

// Path is the file the reader reads, as cleaned by filepath.Clean.
func (r *Reader[T]) Path() string { return r.path }

// Close implements weir.SplitReader: it closes the file.
func (r *Reader[T]) Close() error {
	if r.timer != nil {
		r.timer.Stop()
	}
	if r.obj != nil {
		o := r.obj
		r.obj = nil
		return o.Close()
	}
	if r.f == nil {
		return nil
	}
	f := r.f
	r.f = nil
	return f.Close()
}

// bytesReader reads b (like bytes.Reader, but reusable without allocating).
type bytesReader struct{ b []byte }

func (br *bytesReader) Read(p []byte) (int, error) {
	if len(br.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, br.b)
	br.b = br.b[n:]
	return n, nil
}
