package wlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sort"
	"time"
)

// StartAt says where a Reader starts: Earliest, Latest, AtOffset or
// AtTimestamp.
type StartAt struct {
	kind int
	v    int64
}

const (
	startEarliest = iota
	startLatest
	startOffset
	startTime
)

// Earliest starts at the oldest record still in the partition.
func Earliest() StartAt { return StartAt{kind: startEarliest} }

// Latest starts after the last record: the reader sees only new records.
func Latest() StartAt { return StartAt{kind: startLatest} }

// AtOffset starts at the first record with offset >= o (offsets have gaps
// in compacted topics; an offset older than the oldest segment starts at
// the oldest record).
func AtOffset(o int64) StartAt { return StartAt{kind: startOffset, v: o} }

// AtTimestamp starts at the first record, in offset order, whose timestamp
// (ms) is >= ms; at the end of the log if there is none.
func AtTimestamp(ms int64) StartAt { return StartAt{kind: startTime, v: ms} }

// AtTime is AtTimestamp(t.UnixMilli()).
func AtTime(t time.Time) StartAt { return AtTimestamp(t.UnixMilli()) }

func (s StartAt) String() string {
	switch s.kind {
	case startEarliest:
		return "earliest"
	case startLatest:
		return "latest"
	case startOffset:
		return fmt.Sprintf("offset %d", s.v)
	}
	return fmt.Sprintf("timestamp %d", s.v)
}

// ReaderOption configures a Reader (Follow).
type ReaderOption interface{ applyReader(*Reader) }

type readerOptionFunc func(*Reader)

func (f readerOptionFunc) applyReader(r *Reader) { f(r) }

// Follow makes Read wait for new records at the end of the log, looking
// for them every poll (default 10ms when poll <= 0), like tail -f.
func Follow(poll time.Duration) ReaderOption {
	if poll <= 0 {
		poll = 10 * time.Millisecond
	}
	return readerOptionFunc(func(r *Reader) { r.follow = poll })
}

// Reader reads one partition from a starting point. It takes no lock:
// there may be any number of readers, in any process, beside the writer.
// It only returns complete batches whose CRC matches, so it never returns
// a record that is still being written. A Reader is not safe for
// concurrent use.
type Reader struct {
	topic     string
	partition int
	dir       string
	cfg       TopicConfig
	follow    time.Duration // 0: stop at the end of the log

	f      *os.File // current segment; nil if none yet
	base   int64    // its base offset
	pos    int64    // position of the next batch to read in f
	next   int64    // offset of the next record to return
	end    int64    // offset after the last batch read in f (or where its reading started)
	buf    []byte   // cache of f from bufPos
	bufPos int64
	closed bool
	// dec is the batch at dec.pos of dec.f (dec.size bytes in the
	// segment), copied once into memory of its own, and an iterator that
	// decodes its records only as Read returns them.
	dec struct {
		f         *os.File
		pos, size int64
		it        recordIter
	}
	// kafka is the state of a ReadKafka call (kafka.go).
	kafka struct {
		on, first, full bool
		buf             []byte
		room, batches   int
		below           int64
	}
	// tail is the last classification of invalid data (see damaged).
	tail struct {
		f         *os.File
		pos, size int64
		err       error
	}
}

// OpenReader opens a reader of partition p.
func (t *Topic) OpenReader(p int, start StartAt, opts ...ReaderOption) (*Reader, error) {
	if err := t.checkPartition(p); err != nil {
		return nil, err
	}
	r := &Reader{topic: t.Name, partition: p, dir: t.partDir(p), cfg: t.Config}
	for _, o := range opts {
		o.applyReader(r)
	}
	if err := r.seek(start); err != nil {
		r.Close()
		return nil, fmt.Errorf("wlog: reader of partition %d of %s at %s: %w", p, t.Name, start, err)
	}
	return r, nil
}

// Next returns the offset from which the reader continues: one past the
// last record returned (store it to resume with AtOffset).
func (r *Reader) Next() int64 { return r.next }

// Close closes the reader.
func (r *Reader) Close() error {
	r.closed = true
	if r.f != nil {
		err := r.f.Close()
		r.f = nil
		return err
	}
	return nil
}

func (r *Reader) seek(start StartAt) error {
	bases, err := listSegments(r.dir)
	if err != nil {
		return err
	}
	if len(bases) == 0 {
		// No writer has opened the partition yet: it will start at 0.
		if start.kind == startOffset {
			r.next = max(start.v, 0)
		}
		return nil
	}
	if start.kind != startLatest {
		if err := r.checkFirst(bases); err != nil {
			return err
		}
	}
	switch start.kind {
	case startEarliest:
		return r.openSegment(bases[0], 0, bases[0])
	case startLatest:
		last := bases[len(bases)-1]
		res, err := tailOf(r.topic, r.partition, r.dir, last)
		if err != nil {
			return err
		}
		return r.openSegment(last, res.end, res.nextOffset)
	case startOffset:
		o := start.v
		i := sort.Search(len(bases), func(i int) bool { return bases[i] > o }) - 1
		if i < 0 {
			return r.openSegment(bases[0], 0, bases[0])
		}
		ents, err := readIndex(indexPath(r.dir, bases[i]))
		if err != nil {
			return err
		}
		j := sort.Search(len(ents), func(j int) bool { return bases[i]+int64(ents[j].rel) > o }) - 1
		if err := r.openSegment(bases[i], 0, o); err != nil {
			return err
		}
		if j >= 0 && r.validEntry(ents[j]) {
			r.pos, r.end = int64(ents[j].pos), bases[i]+int64(ents[j].rel)
		}
		return nil
	}
	return r.seekTime(bases, start.v)
}

// seekTime finds the first record with timestamp >= ts. An index entry
// holds the largest timestamp before its position, so the record sought
// is after the last entry whose value is < ts: scan from there.
func (r *Reader) seekTime(bases []int64, ts int64) error {
	prevEnd, prevBase := int64(-1), int64(0)
	for _, base := range bases {
		if !r.cfg.Compact && prevEnd >= 0 && base > prevEnd {
			return gapBetween(r.topic, r.partition, r.dir, prevBase, prevEnd, base)
		}
		f, err := os.Open(logPath(r.dir, base))
		if errors.Is(err, fs.ErrNotExist) {
			prevEnd = -1
			continue // deleted by retention meanwhile
		}
		if err != nil {
			return err
		}
		if r.f != nil {
			r.f.Close()
		}
		r.f, r.base, r.pos, r.next, r.end, r.buf = f, base, 0, base, base, nil
		ents, err := readIndex(indexPath(r.dir, base))
		if err != nil {
			return err
		}
		j := sort.Search(len(ents), func(j int) bool { return ents[j].maxTS >= ts }) - 1
		if j >= 0 && r.validEntry(ents[j]) {
			r.pos, r.next = int64(ents[j].pos), base+int64(ents[j].rel)
			r.end = r.next
		}
		var buf []byte
		var hs []Header
		for {
			h, b, err := batchAt(f, r.pos, buf)
			buf = b
			if err != nil {
				if !errors.Is(err, ErrCorrupt) && err != errShort {
					return err
				}
				if err := r.damaged(r.pos, err); err != nil {
					return err
				}
				break // end of the valid part of this segment
			}
			if h.maxTimestamp >= ts {
				// Decode one record at a time; only timestamps matter.
				it, err := newRecordIter(b)
				for err == nil && !it.done() {
					var rec Record
					if hs, err = it.next(&rec, hs[:0]); err == nil && rec.Timestamp >= ts {
						r.next = rec.Offset
						return nil
					}
				}
				if err != nil {
					return r.contentError(err)
				}
			}
			r.pos += h.size()
			r.next = h.lastOffset + 1
			r.end = r.next
		}
		prevEnd, prevBase = r.next, base
	}
	return nil // at the end of the log
}

// validEntry checks that an index entry of the current segment points at
// a valid batch of the expected offset.
func (r *Reader) validEntry(e indexEnt) bool {
	h, _, err := batchAt(r.f, int64(e.pos), nil)
	return err == nil && h.baseOffset == r.base+int64(e.rel)
}

func (r *Reader) openSegment(base, pos, next int64) error {
	f, err := os.Open(logPath(r.dir, base))
	if err != nil {
		return err
	}
	if r.f != nil {
		r.f.Close()
	}
	r.f, r.base, r.pos, r.next, r.buf, r.bufPos = f, base, pos, next, nil, 0
	r.end = base
	if pos > 0 {
		r.end = next
	}
	return nil
}

// Read returns up to max records (at least 1). At the end of the log it
// returns io.EOF, or, with Follow, waits for records until ctx is done.
func (r *Reader) Read(ctx context.Context, max int) ([]Record, error) {
	if r.closed {
		return nil, ErrClosed
	}
	if max < 1 {
		max = 1
	}
	var timer *time.Timer
	for {
		recs, err := r.readAvailable(max)
		if err != nil || len(recs) > 0 {
			return recs, err
		}
		if r.follow == 0 {
			return nil, io.EOF
		}
		if timer == nil {
			timer = time.NewTimer(r.follow)
			defer timer.Stop()
		} else {
			timer.Reset(r.follow)
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-timer.C:
		}
	}
}

const readChunk = 64 << 10

// readAvailable returns the records available now, moving on to the next
// segment at the end of one.
func (r *Reader) readAvailable(max int) ([]Record, error) {
	for {
		if r.f == nil {
			ok, err := r.nextSegment()
			if err != nil || !ok {
				return nil, err
			}
		}
		recs, err := r.readSegment(max)
		if err != nil || len(recs) > 0 || r.kafkaStop() {
			return recs, err
		}
		// At the end of the valid part of this segment. If a newer segment
		// exists, this one was complete before it was created (the writer
		// finishes a batch before it rolls): read to its end once more,
		// then move on.
		ok, err := r.hasNewer()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, r.checkEnd()
		}
		if recs, err := r.readSegment(max); err != nil || len(recs) > 0 || r.kafkaStop() {
			return recs, err
		}
		if st, err := r.f.Stat(); err == nil && st.Size() > r.pos {
			return nil, &CorruptError{Topic: r.topic, Partition: r.partition, Segment: logPath(r.dir, r.base),
				Position: r.pos, Offset: r.next, NextPosition: -1, NextOffset: -1,
				Err: fmt.Errorf("%w: invalid batch in a closed segment of %d bytes", ErrCorrupt, st.Size())}
		}
		if _, err := r.nextSegment(); err != nil {
			return nil, err
		}
	}
}

// checkFirst checks the oldest segment of a topic without retention
// or compaction: it starts at offset 0.
func (r *Reader) checkFirst(bases []int64) error {
	if len(bases) == 0 || bases[0] == 0 || r.cfg.Compact || r.cfg.Retention != 0 || r.cfg.RetentionBytes != 0 {
		return nil
	}
	return &GapError{Topic: r.topic, Partition: r.partition, Segment: logPath(r.dir, 0), From: 0, To: bases[0],
		Reason: "is missing (the topic has no retention, so its first segment starts at 0)"}
}

// checkEnd checks, at the end of the valid data of the last segment, that
// the partition's recovery point is not beyond it: the recovery point is
// read first, then the files, so a writer's progress meanwhile is no
// damage.
func (r *Reader) checkEnd() error {
	rp, err := readRecovery(r.dir)
	if err != nil || !rp.ok || rp.base < r.base {
		return err
	}
	st, err := r.f.Stat()
	if err != nil {
		return err
	}
	if rp.base == r.base && r.pos >= rp.pos {
		return nil
	}
	if rp.base == r.base && st.Size() >= rp.pos {
		return nil // more data now, or invalid data the next read classifies
	}
	if ok, err := r.hasNewer(); err != nil || ok {
		return err
	}
	return checkLast(r.topic, r.partition, r.dir, r.base, st.Size(), rp)
}

func (r *Reader) hasNewer() (bool, error) {
	bases, err := listSegments(r.dir)
	if err != nil {
		return false, err
	}
	return len(bases) > 0 && bases[len(bases)-1] > r.base, nil
}

// nextSegment opens the oldest segment after the current one (or the
// oldest if there is no current one). Segments deleted by retention are
// skipped, and r.next moves up to the new segment's base if it is below.
func (r *Reader) nextSegment() (bool, error) {
	for {
		bases, err := listSegments(r.dir)
		if err != nil {
			return false, err
		}
		i := 0
		if r.f != nil {
			i = sort.Search(len(bases), func(i int) bool { return bases[i] > r.base })
		} else if j := sort.Search(len(bases), func(i int) bool { return bases[i] > r.next }) - 1; j > 0 {
			i = j
		}
		if i >= len(bases) {
			return false, nil
		}
		if r.f == nil {
			if err := r.checkFirst(bases); err != nil {
				return false, err
			}
		} else if _, listed := slices.BinarySearch(bases, r.base); listed && !r.cfg.Compact && bases[i] > r.end {
			// The segment just read is still there, so retention (which
			// deletes the oldest segments) did not make this gap.
			return false, gapBetween(r.topic, r.partition, r.dir, r.base, r.end, bases[i])
		}
		err = r.openSegment(bases[i], 0, max(r.next, bases[i]))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		return err == nil, err
	}
}

// readBudget bounds the encoded bytes of the records one Read decodes
// (beyond the first): decoded records take more memory than encoded ones
// (a Record is 88 bytes, a Header 40), so a Read of a batch of tiny
// records or headers must not decode all of it at once.
const readBudget = 1 << 20

// readSegment returns records of the complete, valid batches from r.pos
// on. A batch is copied once, into memory of its own that the records
// alias, and kept until the reader moves past it; its records are decoded
// as they are returned (max or readBudget may end a read inside it).
func (r *Reader) readSegment(max int) ([]Record, error) {
	var out []Record
	var hs []Header
	budget := readBudget
	for len(out) < max && (budget > 0 || len(out) == 0) {
		if r.dec.f != r.f || r.dec.pos != r.pos {
			if r.kafka.on && len(out) == 0 {
				switch k, err := r.readKafkaDirect(); {
				case err != nil:
					return out, err
				case k == kafkaNext:
					continue
				case k == kafkaStop:
					return out, nil
				}
			}
			b, err := r.bytesAt(r.pos)
			if err != nil {
				if len(out) > 0 {
					return out, nil // the next Read returns the error
				}
				return out, err
			}
			if b == nil {
				break
			}
			if r.kafka.on {
				switch k, err := r.takeKafka(b, len(out)); {
				case err != nil:
					if len(out) > 0 {
						return out, nil
					}
					return out, r.contentError(err)
				case k == kafkaNext:
					continue
				case k == kafkaStop:
					return out, nil
				}
			}
			var raw []byte
			if cap(r.buf) > readChunk {
				// The cache was grown for this one large batch: hand it
				// over rather than copy it.
				raw, r.buf, r.bufPos = b, nil, 0
			} else {
				raw = append([]byte(nil), b...)
			}
			it, err := newRecordIter(raw)
			if err != nil {
				return out, r.contentError(err)
			}
			r.dec.it, r.dec.f, r.dec.pos, r.dec.size = it, r.f, r.pos, it.h.size()
		}
		it := &r.dec.it
		if out == nil {
			out = make([]Record, 0, min(max, int(it.h.count-it.i)))
		}
		// The budget only stops a Read that has a record to return.
		for !it.done() && len(out) < max && (budget > 0 || len(out) == 0) {
			before := it.d.Len()
			var rec Record
			var err error
			if hs, err = it.next(&rec, hs); err != nil {
				// The framing and CRC are valid (bytesAt checked them): the
				// contents are not. Return what came before first.
				r.dec.f = nil
				if len(out) > 0 {
					return out, nil
				}
				return out, r.contentError(err)
			}
			budget -= before - it.d.Len()
			if rec.Offset < r.next {
				continue
			}
			out = append(out, rec)
			r.next = rec.Offset + 1
		}
		if !it.done() {
			break // max or the budget reached inside the batch; stay on it
		}
		if r.next <= it.h.lastOffset {
			r.next = it.h.lastOffset + 1
		}
		r.pos += r.dec.size
		r.end = it.h.lastOffset + 1
	}
	return out, nil
}

// contentError describes a batch at r.pos whose framing and CRC are valid
// but whose contents are not, or are of a format this version cannot read.
func (r *Reader) contentError(err error) error {
	return &CorruptError{Topic: r.topic, Partition: r.partition, Segment: logPath(r.dir, r.base),
		Position: r.pos, Offset: r.next, NextPosition: -1, NextOffset: -1, Err: err}
}

// bytesAt returns the complete, valid batch at pos, or nil if there is
// none (yet): the end of the file, a batch still being written, or a torn
// tail. Invalid data that a valid batch follows is a *CorruptError. Reads
// go through a cache of readChunk bytes.
func (r *Reader) bytesAt(pos int64) ([]byte, error) {
	var cause error = errShort
	for attempt := 0; attempt < 2; attempt++ {
		if pos >= r.bufPos && pos < r.bufPos+int64(len(r.buf)) {
			b := r.buf[pos-r.bufPos:]
			check := checkBatch
			if r.kafka.on {
				check = checkBatchKafka
			}
			h, err := check(b)
			if err == nil {
				return b[:h.size()], nil
			}
			cause = err
		}
		if attempt == 1 {
			break
		}
		// Refill from pos, large enough for the batch header's length.
		n := readChunk
		var hdr [batchHeaderSize]byte
		if _, err := r.f.ReadAt(hdr[:], pos); err == nil {
			if h, err := parseBatchHeader(hdr[:]); err == nil && h.size() > int64(n) && reaches(r.f, pos+h.size()) {
				n = int(h.size())
			}
		}
		if cap(r.buf) < n {
			r.buf = make([]byte, n)
		}
		m, err := r.f.ReadAt(r.buf[:n], pos)
		if err != nil && err != io.EOF {
			return nil, err
		}
		r.buf, r.bufPos = r.buf[:m], pos
		if m == 0 {
			return nil, nil // the end of the file
		}
	}
	return nil, r.damaged(pos, cause)
}

// damaged says whether the invalid data at pos of the current segment is
// damage (a *CorruptError) or a torn tail or a batch being written (nil).
// The answer is kept until the file grows.
func (r *Reader) damaged(pos int64, cause error) error {
	st, err := r.f.Stat()
	if err != nil {
		return err
	}
	if c := &r.tail; c.f == r.f && c.pos == pos && c.size == st.Size() {
		return c.err
	}
	var cerr error
	d, err := classify(r.f, pos, max(r.next, r.base), r.base, st.Size(), cause)
	switch {
	case err != nil:
		return err
	case d != nil:
		cerr = d.errorFor(r.topic, r.partition, logPath(r.dir, r.base))
	default:
		rp, err := readRecovery(r.dir)
		if err != nil {
			return err
		}
		if durable := rp.durableEnd(r.base); pos < durable && pos < st.Size() {
			// Read again after the recovery point: a batch being written
			// when it was first read is complete now.
			if _, _, err := batchAt(r.f, pos, nil); err == nil {
				return nil
			}
			cerr = belowRecovery(r.topic, r.partition, logPath(r.dir, r.base), pos, max(r.next, r.base), durable, cause)
		}
	}
	r.tail.f, r.tail.pos, r.tail.size, r.tail.err = r.f, pos, st.Size(), cerr
	return cerr
}
