// Package rowbuf is what the SQL table sources share between reading a
// record's bytes and handing rows to the job: it decodes records with a
// format.Decoder, keeps the rows a record gave that did not fit in the
// caller's batch (debezium-json gives two for an update), counts the
// records the format's options skip, and reports malformed ones to the
// job's bad-record handler when one is set.
package rowbuf

import (
	"errors"
	"sync/atomic"

	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

// Where says where the record being decoded is ("events.jsonl:17 (byte
// offset 2310)", "orders/0@4711"). A reader implements it on itself so
// that nothing is allocated unless a record is bad.
type Where interface{ Where() string }

// Buf decodes records into rows. It is used by one reader (one goroutine),
// but Skipped may be read from any.
type Buf struct {
	Dec     format.Decoder
	OnBad   func(raw []byte, position string, err error) // the job's handler, or nil
	skipped atomic.Int64
	rows    []types.Row
	next    int
}

// Skipped returns the number of records skipped so far.
func (b *Buf) Skipped() int64 { return b.skipped.Load() }

// SetSkipped restores the count (from a checkpointed position).
func (b *Buf) SetSkipped(n int64) { b.skipped.Store(n) }

// SetBadRecordHandler implements weir.BadRecordReporter for the reader
// that embeds the Buf.
func (b *Buf) SetBadRecordHandler(h func(raw []byte, position string, err error)) { b.OnBad = h }

// Decode decodes one record into the buffer. A record the format skips is
// counted; one that does not decode goes to OnBad if set; otherwise its
// error is returned for the caller to wrap with the record's position.
func (b *Buf) Decode(data []byte, w Where) error {
	if b.next == len(b.rows) {
		b.rows, b.next = b.rows[:0], 0
	}
	n := len(b.rows)
	rows, err := b.Dec.Decode(data, b.rows)
	if err == nil {
		b.rows = rows
		return nil
	}
	b.rows = b.rows[:n]
	var skip *format.SkipError
	if errors.As(err, &skip) {
		b.skipped.Add(1)
		return nil
	}
	return b.bad(data, w, err)
}

// Bad is a record the reader could not hand to Decode (longer than its
// limit, say; data is what was kept of it): skipped and counted when the
// format skips parse errors, else given to OnBad if set; otherwise err is
// returned for the caller to wrap with the record's position.
func (b *Buf) Bad(data []byte, w Where, err error) error {
	if s, ok := b.Dec.(format.ParseErrorSkipper); ok && s.SkipsParseErrors() {
		b.skipped.Add(1)
		return nil
	}
	return b.bad(data, w, err)
}

func (b *Buf) bad(data []byte, w Where, err error) error {
	if b.OnBad != nil {
		b.OnBad(data, w.Where(), err)
		return nil
	}
	return err
}

// Pending reports whether decoded rows wait to be taken.
func (b *Buf) Pending() bool { return b.next < len(b.rows) }

// Take moves decoded rows into dst and returns how many.
func (b *Buf) Take(dst []types.Row) int {
	n := copy(dst, b.rows[b.next:])
	for i := b.next; i < b.next+n; i++ {
		b.rows[i] = types.Row{} // the job owns the values now
	}
	b.next += n
	return n
}

// Reset drops pending rows.
func (b *Buf) Reset() { b.rows, b.next = b.rows[:0], 0 }

// Taken returns how many rows of the buffered record were taken while
// some are still pending (0 when none are pending). A reader's position
// is then the record's start and this count: a source restored there
// decodes the record again and drops that many rows (Drop), so a record
// that gave several rows is neither lost nor duplicated by a checkpoint
// between them.
func (b *Buf) Taken() int {
	if b.Pending() {
		return b.next
	}
	return 0
}

// Drop drops the first n decoded rows (see Taken).
func (b *Buf) Drop(n int) {
	b.next = min(n, len(b.rows))
}
