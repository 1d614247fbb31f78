package file

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// errPending is returned by lineReader.next in follow mode when the input
// holds no complete line yet (it may hold the start of one).
var errPending = errors.New("file: no complete line yet")

// ErrTooLong is wrapped by the *RecordError of a line (or CSV record)
// longer than the source's MaxRecordBytes. The reader does not hold such a
// line in memory: it skips over it, so with SkipBadRecords or a dead
// letter queue the lines after it are read (the dead letter gets no raw
// bytes).
var ErrTooLong = errors.New("file: record too long")

// tooLongError is returned by lineReader.next for a line longer than its
// limit, once the whole line was skipped.
type tooLongError struct{ size, max int64 }

func (e *tooLongError) Error() string {
	return fmt.Sprintf("%v: %d bytes or more, longer than %d (raise the limit with file.MaxRecordBytes)", ErrTooLong, e.size, e.max)
}

func (e *tooLongError) Unwrap() error { return ErrTooLong }

// lineReader splits its input into lines and keeps track of where they are.
// A line is returned with its '\n' (if it has one) as a slice of the
// bufio.Reader's buffer, so reading a line costs no allocation unless it is
// longer than the buffer or arrives in pieces (follow mode).
type lineReader struct {
	br     *bufio.Reader
	follow bool

	off  int64 // byte offset of the first byte not part of a returned line
	line int64 // number of lines returned so far

	start int64 // byte offset of the line last returned

	// partial holds the beginning of a line that is not complete yet: longer
	// than the buffer, or (follow mode) not yet terminated by '\n'.
	partial []byte

	// max is the longest line kept (0: no limit). A longer one is skipped
	// (skipping; discarded counts its bytes so far) and reported as
	// tooLongError.
	max       int64
	skipping  bool
	discarded int64
}

func newLineReader(r io.Reader, bufSize int, follow bool) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, bufSize), follow: follow}
}

// over reports whether a line of n bytes (its '\n' included) is longer
// than the limit.
func (l *lineReader) over(n int64, nl bool) bool {
	if nl {
		n-- // the '\n' does not count
	}
	return l.max > 0 && n > l.max
}

// tooLong ends a skipped line of n bytes.
func (l *lineReader) tooLong(n int64) error {
	l.skipping, l.discarded = false, 0
	l.partial = l.partial[:0]
	l.start = l.off
	l.off += n
	l.line++
	return &tooLongError{size: n, max: l.max}
}

// reset starts over at offset 0 on r (used after a file was truncated).
func (l *lineReader) reset(r io.Reader) {
	l.br.Reset(r)
	l.off, l.line, l.start = 0, 0, 0
	l.partial = l.partial[:0]
	l.skipping, l.discarded = false, 0
}

// consumed is how many bytes were taken from the underlying reader so far.
func (l *lineReader) consumed() int64 {
	return l.off + l.discarded + int64(len(l.partial)) + int64(l.br.Buffered())
}

// next returns the next line, '\n' included. The slice is only valid until
// the next call. At the end of the input it returns io.EOF; a last line
// without '\n' is returned as a line first, except in follow mode, where it
// is held back (errPending) until its '\n' arrives. Other errors come from
// the underlying reader; the bytes read before them are kept.
//
// A line longer than max is not kept: once it is known to be too long its
// bytes are counted and dropped, and at its end next returns a
// *tooLongError (and the line counts as returned).
func (l *lineReader) next() ([]byte, error) {
	for {
		s, err := l.br.ReadSlice('\n')
		if !l.skipping && l.over(int64(len(l.partial)+len(s)), err == nil) {
			l.skipping, l.discarded = true, int64(len(l.partial))
			l.partial = l.partial[:0]
		}
		if l.skipping {
			l.discarded += int64(len(s))
			switch {
			case err == nil:
				return nil, l.tooLong(l.discarded)
			case err == bufio.ErrBufferFull:
				continue
			case err == io.EOF && l.follow:
				return nil, errPending
			case err == io.EOF:
				return nil, l.tooLong(l.discarded)
			default:
				return nil, err
			}
		}
		switch err {
		case nil:
			if len(l.partial) > 0 {
				l.partial = append(l.partial, s...)
				s = l.partial
				l.partial = l.partial[:0]
			}
			return l.emit(s), nil
		case bufio.ErrBufferFull:
			l.partial = append(l.partial, s...)
		case io.EOF:
			l.partial = append(l.partial, s...)
			if l.follow {
				return nil, errPending
			}
			if len(l.partial) == 0 {
				return nil, io.EOF
			}
			s = l.partial
			l.partial = l.partial[:0]
			return l.emit(s), nil
		default:
			l.partial = append(l.partial, s...)
			return nil, err
		}
	}
}

func (l *lineReader) emit(s []byte) []byte {
	l.start = l.off
	l.off += int64(len(s))
	l.line++
	return s
}

// blank reports whether a line holds nothing but spaces, tabs and line
// endings.
func blank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// empty reports whether a line is empty but for its line ending (encoding/csv
// skips such lines).
func empty(line []byte) bool {
	switch len(line) {
	case 0:
		return true
	case 1:
		return line[0] == '\n'
	case 2:
		return line[0] == '\r' && line[1] == '\n'
	}
	return false
}

// csvState is where a CSV record stands at the end of a line; it tells
// whether the line ends the record or a quoted field goes on to the next
// line. It mirrors the grammar of encoding/csv (comma ',', no lazy quotes):
// where encoding/csv reports an error in the middle of a line, it discards
// the rest of that line, and so the record ends there too.
type csvState uint8

const (
	csvFieldStart csvState = iota // at the start of a field
	csvUnquoted                   // in an unquoted field
	csvQuoted                     // in a quoted field
	csvQuote                      // just after a '"' in a quoted field
	csvBad                        // after a syntax error: the rest of the line is dropped
)

// scanCSV advances s over line (without its '\n').
func scanCSV(s csvState, line []byte) csvState {
	for _, c := range line {
		switch s {
		case csvFieldStart:
			switch c {
			case ',':
			case '"':
				s = csvQuoted
			default:
				s = csvUnquoted
			}
		case csvUnquoted:
			switch c {
			case ',':
				s = csvFieldStart
			case '"':
				return csvBad
			}
		case csvQuoted:
			if c == '"' {
				s = csvQuote
			}
		case csvQuote:
			switch c {
			case '"':
				s = csvQuoted // "" is an escaped quote
			case ',':
				s = csvFieldStart
			default:
				return csvBad // "\r" before "\n" ends the record as well
			}
		}
	}
	return s
}
