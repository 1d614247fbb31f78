package wlog

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// A segment's data can end in two ways that both look like an invalid
// batch: a torn tail (a write that did not complete before a crash, or one
// still under way), or damage (a bit flip, a bad sector, a stray write) in
// the middle of data that was written whole. A torn tail is only ever at
// the very end: nothing valid follows it, because the writer truncates it
// before appending again. So an invalid batch is damage exactly when a
// valid batch follows it in the segment; then reading on or appending
// after it would silently lose or hide records, and readers, jobs and the
// writer fail with a *CorruptError instead.

// CorruptError reports damaged data before the end of a segment: the
// records from Offset on, up to the valid batch at NextPosition, cannot be
// read. errors.Is(err, ErrCorrupt) holds for it.
type CorruptError struct {
	Topic     string
	Partition int
	Segment   string // the segment file
	Position  int64  // byte position of the damaged batch in the segment
	// Offset is the offset expected at Position (the first record that
	// cannot be read; offsets before it were read fine).
	Offset int64
	// NextPosition and NextOffset are where the next valid batch starts
	// (-1 if unknown, as in a closed segment cut short).
	NextPosition, NextOffset int64
	Err                      error // what is wrong with the batch at Position
}

func (e *CorruptError) Error() string {
	s := fmt.Sprintf("wlog: topic %s partition %d: corrupt data in segment %s at byte %d (offset %d)",
		e.Topic, e.Partition, e.Segment, e.Position, e.Offset)
	if e.NextPosition >= 0 {
		s += fmt.Sprintf(", before a valid batch at byte %d (offset %d): not a torn tail, so not truncated", e.NextPosition, e.NextOffset)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause; the chain always reaches ErrCorrupt.
func (e *CorruptError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// scanChunk is how much of a segment a scan reads at a time.
const scanChunk = 1 << 20

// validBatchAfter looks for a complete batch with a matching CRC and a
// base offset of at least lowest that starts after pos, in the first size
// bytes of f. It returns its position and header, or found false if there
// is none: then the invalid data at pos is a torn tail.
func validBatchAfter(f io.ReaderAt, pos, size, lowest int64) (at int64, h batchHeader, found bool, err error) {
	buf := make([]byte, 0, scanChunk)
	var full []byte
	for start := pos + 1; start+batchHeaderSize <= size; {
		n := min(int64(scanChunk), size-start)
		buf = buf[:n]
		if _, err := f.ReadAt(buf, start); err != nil && err != io.EOF {
			return 0, h, false, err
		}
		// A header can start at any q with q+batchHeaderSize <= n.
		for q := 0; q+batchHeaderSize <= len(buf); q++ {
			c := buf[q:]
			// Cheap filters before parsing: the magic byte and the zero
			// reserved field that every batch has.
			if c[8] != batchMagic || c[10] != 0 || c[11] != 0 {
				continue
			}
			hh, err := parseBatchHeader(c)
			if err != nil || hh.baseOffset < lowest || start+int64(q)+hh.size() > size {
				continue
			}
			var cerr error
			hh, full, cerr = batchAt(f, start+int64(q), full)
			if cerr == nil {
				return start + int64(q), hh, true, nil
			}
			if !errors.Is(cerr, ErrCorrupt) && !errors.Is(cerr, errShort) {
				return 0, h, false, cerr
			}
		}
		// The next chunk starts at the first position not tried.
		start += max(int64(len(buf))-batchHeaderSize+1, 1)
	}
	return 0, h, false, nil
}

// damage describes the invalid data a scan stopped at.
type damage struct {
	pos, next  int64 // position and expected offset of the invalid batch
	err        error // why it is invalid
	nextPos    int64 // the valid batch after it
	nextOffset int64
}

func (d *damage) errorFor(t string, p int, segment string) *CorruptError {
	return &CorruptError{Topic: t, Partition: p, Segment: segment, Position: d.pos, Offset: d.next,
		NextPosition: d.nextPos, NextOffset: d.nextOffset, Err: d.err}
}

// classify decides whether the invalid batch at pos (expected offset
// next, checked with error cause) of a segment of size bytes is a torn
// tail (nil) or damage: a valid batch with a base offset of at least
// lowest follows it.
func classify(f io.ReaderAt, pos, next, lowest, size int64, cause error) (*damage, error) {
	if pos >= size {
		return nil, nil
	}
	at, h, found, err := validBatchAfter(f, pos, size, lowest)
	if err != nil || !found {
		return nil, err
	}
	// The caller's read of the batch at pos may have raced with a writer:
	// a batch still being written, which the writer finished (and followed
	// with another) before this looked past it. A partition's one writer
	// appends in order, so a batch complete now was not damage: the
	// caller reads it again (a live reader at its next read; a scan that
	// runs beside the writer stops at pos, as if it had come a moment
	// earlier). Without a concurrent writer the batch reads the same. Only
	// a short batch is re-read: a reader never sees a write past the
	// file's size, so a batch being written reads short, not corrupt.
	if cause == errShort {
		if _, _, err := batchAt(f, pos, nil); err == nil {
			return nil, nil
		}
	}
	return &damage{pos: pos, next: next, err: cause, nextPos: at, nextOffset: h.baseOffset}, nil
}

// damageError classifies the invalid batch at pos of segment base in
// partition directory dir (the file f; cause is why batchAt refused it):
// an I/O error or a *CorruptError, or nil for a torn tail or the end.
func damageError(f *os.File, dir string, base, pos, next int64, cause error) error {
	if !errors.Is(cause, ErrCorrupt) && cause != errShort {
		return cause
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	d, err := classify(f, pos, next, base, st.Size(), cause)
	if err != nil || d == nil {
		return err
	}
	p, _ := strconv.Atoi(filepath.Base(dir))
	return d.errorFor(filepath.Base(filepath.Dir(dir)), p, logPath(dir, base))
}

// belowRecovery is the error for invalid data at pos (expected offset
// next) of a segment whose first durable bytes were fsynced: corruption,
// not a torn tail.
func belowRecovery(t string, p int, segment string, pos, next, durable int64, cause error) *CorruptError {
	where := fmt.Sprintf("byte %d", durable)
	if durable == math.MaxInt64 {
		where = "its end (a closed segment)"
	}
	if cause == nil || cause == errShort {
		cause = errors.New("batch cut short")
	}
	return &CorruptError{Topic: t, Partition: p, Segment: segment, Position: pos, Offset: next, NextPosition: -1, NextOffset: -1,
		Err: fmt.Errorf("%w, below the recovery point at %s: fsynced data, not a torn tail, so not truncated", cause, where)}
}
