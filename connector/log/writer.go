package wlog

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// SyncPolicy says when a writer fsyncs the active segment.
type SyncPolicy struct {
	every time.Duration // 0: every batch; <0: never; >0: at most this long after an append
}

// SyncEveryBatch fsyncs each batch before Append returns: an acknowledged
// record survives a crash of the process or of the machine.
func SyncEveryBatch() SyncPolicy { return SyncPolicy{} }

// SyncEvery fsyncs at most d after an append. A record acknowledged by
// Append survives a crash of the process (it is in the page cache), not
// necessarily of the machine.
func SyncEvery(d time.Duration) SyncPolicy {
	if d <= 0 {
		return SyncEveryBatch()
	}
	return SyncPolicy{every: d}
}

// SyncNever leaves flushing to the operating system (and to Close).
func SyncNever() SyncPolicy { return SyncPolicy{every: -1} }

func (p SyncPolicy) String() string {
	switch {
	case p.every == 0:
		return "every-batch"
	case p.every < 0:
		return "never"
	}
	return "every " + p.every.String()
}

// WriterOption configures a Writer (WithSync, WithLogger, WithClock).
type WriterOption interface{ applyWriter(*writerConfig) }

type writerConfig struct {
	sync SyncPolicy
	// callerSyncs: Append does not fsync; the caller calls Sync (the
	// Sink's committer, which appends many batches per commit). Segments
	// closed by a roll are still synced.
	callerSyncs bool
	logger      *slog.Logger
	now         func() time.Time
}

type writerOptionFunc func(*writerConfig)

func (f writerOptionFunc) applyWriter(c *writerConfig) { f(c) }

// WithSync sets the fsync policy (default SyncEveryBatch).
func WithSync(p SyncPolicy) WriterOption {
	return writerOptionFunc(func(c *writerConfig) { c.sync = p })
}

// WithLogger sets where a writer logs recoveries and cleaning (default
// slog.Default()).
func WithLogger(l *slog.Logger) WriterOption {
	return writerOptionFunc(func(c *writerConfig) { c.logger = l })
}

// WithClock sets the clock that stamps records appended with a zero
// Timestamp (default time.Now).
func WithClock(now func() time.Time) WriterOption {
	return writerOptionFunc(func(c *writerConfig) { c.now = now })
}

// ErrClosed is returned by the methods of a closed Writer or Reader.
var ErrClosed = errors.New("wlog: closed")

// Writer appends to one partition. It holds the partition's file lock
// until Close, so there is at most one writer per partition across all
// processes. Its methods are safe for concurrent use; appends are
// serialised.
type Writer struct {
	topic     string
	partition int
	dir       string
	cfg       TopicConfig
	wcfg      writerConfig
	lock      *os.File
	rpFile    *os.File // the recovery point (recovery.go)

	cleanMu sync.Mutex // serialises Clean

	// mu guards the active segment. File writes and fsyncs happen under it:
	// appends are serialised anyway, and a sync must not race a roll.
	mu struct {
		sync.Mutex
		f, idx      *os.File
		base        int64 // base offset of the active segment
		pos         int64 // end of the active segment
		next        int64 // offset of the next record
		maxTS       int64 // largest timestamp in the active segment
		lastIndexed int64 // position of the last index entry
		dirty       bool  // written since the last fsync
		rpSeq       uint64
		rpPos       int64 // pos of the last recovery point written (in segment base)
		err         error // sticky: a failed write or fsync
		closed      bool
		buf         []byte
	}
	stop, done chan struct{}
}

// OpenWriter opens the writer of partition p, recovering the tail of the
// last segment: a torn tail (from a crash during a write) past the
// partition's recovery point is truncated and logged. Damage (an invalid
// batch below the recovery point, or one that a valid batch follows) is
// not a torn tail: OpenWriter fails with a *CorruptError and changes
// nothing; missing data (a segment deleted or emptied, see checkChain) is
// a *GapError. It fails with a *LockedError if the partition already has a
// writer.
func (t *Topic) OpenWriter(p int, opts ...WriterOption) (*Writer, error) {
	if err := t.checkPartition(p); err != nil {
		return nil, err
	}
	w := &Writer{topic: t.Name, partition: p, dir: t.partDir(p), cfg: t.Config}
	w.wcfg = writerConfig{logger: slog.Default(), now: time.Now}
	for _, o := range opts {
		o.applyWriter(&w.wcfg)
	}
	lock, err := lockDir(w.dir)
	if err == errLockHeld {
		return nil, &LockedError{Topic: t.Name, Partition: p}
	}
	if err != nil {
		return nil, fmt.Errorf("wlog: lock partition %d of %s: %w", p, t.Name, err)
	}
	w.lock = lock
	if err := w.recover(); err != nil {
		if w.rpFile != nil {
			w.rpFile.Close()
		}
		lock.Close()
		if errors.Is(err, ErrCorrupt) {
			return nil, err // it names the topic and partition
		}
		return nil, fmt.Errorf("wlog: open partition %d of %s: %w", p, t.Name, err)
	}
	if w.wcfg.sync.every > 0 {
		w.stop, w.done = make(chan struct{}), make(chan struct{})
		go w.syncLoop(w.wcfg.sync.every)
	}
	return w, nil
}

func (w *Writer) recover() error {
	// Leftovers of a compaction that crashed before its rename.
	if ents, err := os.ReadDir(w.dir); err == nil {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), cleanedSuffix) {
				os.Remove(filepath.Join(w.dir, e.Name()))
			}
		}
	}
	bases, err := listSegments(w.dir)
	if err != nil {
		return err
	}
	rp, err := readRecovery(w.dir)
	if err != nil {
		return err
	}
	w.mu.rpSeq = rp.seq
	if w.rpFile, err = os.OpenFile(filepath.Join(w.dir, recoveryFile), os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		return err
	}
	if len(bases) == 0 {
		if rp.ok {
			return &GapError{Topic: w.topic, Partition: w.partition, Segment: logPath(w.dir, rp.base), From: rp.base, To: rp.next,
				Reason: "is missing (the partition has no segments left, but its recovery point is in it)"}
		}
		return w.openSegmentLocked(0)
	}
	if err := checkChain(w.topic, w.partition, w.dir, bases, w.cfg); err != nil {
		return err
	}
	base := bases[len(bases)-1]
	f, err := os.OpenFile(logPath(w.dir, base), os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if err := checkLast(w.topic, w.partition, w.dir, base, st.Size(), rp); err != nil {
		f.Close()
		return err
	}
	ents, err := readIndex(indexPath(w.dir, base))
	if err != nil {
		f.Close()
		return err
	}
	// The whole active segment is checked, not only the part after the
	// last index entry, so that damage anywhere in it stops the writer
	// instead of being appended past (a file this process's last writer
	// closed unchanged is not checked again).
	res, err := scanFrom(f, base, st.Size(), verifiedPrefix(w.dir, base, st, ents))
	if err == nil && res.damage != nil {
		err = res.damage.errorFor(w.topic, w.partition, logPath(w.dir, base))
	}
	if err == nil && res.end < st.Size() && res.end < rp.durableEnd(base) {
		// Not a torn write: these bytes were fsynced.
		err = belowRecovery(w.topic, w.partition, logPath(w.dir, base), res.end, res.nextOffset, rp.durableEnd(base), res.err)
	}
	if err != nil {
		f.Close()
		return err
	}
	if res.end < st.Size() {
		w.wcfg.logger.Warn("wlog: truncating torn tail past the recovery point",
			"topic", w.topic, "partition", w.partition, "segment", logPath(w.dir, base),
			"from_byte", res.end, "to_byte", st.Size(), "dropped_bytes", st.Size()-res.end,
			"recovery_point", rp.durableEnd(base), "next_offset", res.nextOffset, "cause", res.err)
		if err := f.Truncate(res.end); err != nil {
			f.Close()
			return err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	// The index of the active segment is rebuilt from the scan: entries
	// past a truncation must not survive it.
	if err := writeIndexFile(indexPath(w.dir, base), res.index); err != nil {
		f.Close()
		return err
	}
	idx, err := os.OpenFile(indexPath(w.dir, base), os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		f.Close()
		return err
	}
	w.mu.f, w.mu.idx = f, idx
	w.mu.base, w.mu.pos, w.mu.next = base, res.end, res.nextOffset
	w.mu.maxTS, w.mu.lastIndexed = res.maxTS, res.lastIndexd
	return nil
}

// writeRecoveryLocked records that the active segment is on disk up to
// w.mu.pos; call it only after an fsync (or a roll) made that true. A
// failed write leaves an older recovery point, which is safe.
func (w *Writer) writeRecoveryLocked() { w.writeRecoveryAtLocked(w.mu.pos, w.mu.next) }

// writeRecoveryAtLocked records that the active segment is on disk up to
// pos, where offset next begins (a SyncGroup's fsync that ended after
// later writes).
func (w *Writer) writeRecoveryAtLocked(pos, next int64) {
	w.mu.rpPos = pos
	if w.rpFile == nil {
		return
	}
	w.mu.rpSeq++
	b := encodeRecovery(recoveryPoint{seq: w.mu.rpSeq, base: w.mu.base, pos: pos, next: next})
	w.rpFile.WriteAt(b, int64(w.mu.rpSeq%2)*recoverySlot)
}

// openSegmentLocked creates and opens a new, empty active segment.
func (w *Writer) openSegmentLocked(base int64) error {
	f, err := os.OpenFile(logPath(w.dir, base), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	idx, err := os.OpenFile(indexPath(w.dir, base), os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		f.Close()
		return err
	}
	syncDir(w.dir)
	w.mu.f, w.mu.idx = f, idx
	w.mu.base, w.mu.pos, w.mu.next = base, 0, base
	w.mu.maxTS, w.mu.lastIndexed = minTS, 0
	return nil
}

// Append appends recs as one batch and returns the offset of the first.
// It sets each record's Offset, and its Timestamp if zero. Under
// SyncEveryBatch the batch is on disk when Append returns. After a failed
// write or fsync the writer refuses further appends (the state of the file
// is unknown); reopen it to recover.
func (w *Writer) Append(recs []Record) (int64, error) { return w.appendRecords(recs, nil) }

// appendRecords appends recs as one batch, with the producer section prod
// if it is not nil (AppendAs).
func (w *Writer) appendRecords(recs []Record, prod []byte) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return 0, err
	}
	if len(recs) == 0 {
		return w.mu.next, nil
	}
	if err := checkHeaders(recs); err != nil {
		return 0, err
	}
	first := w.mu.next
	var now int64
	maxTS := int64(minTS)
	for i := range recs {
		recs[i].Offset = first + int64(i)
		if recs[i].Timestamp == 0 {
			if now == 0 {
				now = w.wcfg.now().UnixMilli()
			}
			recs[i].Timestamp = now
		}
		maxTS = max(maxTS, recs[i].Timestamp)
	}
	if prod == nil {
		w.mu.buf = appendBatch(w.mu.buf[:0], recs)
	} else {
		w.mu.buf = appendBatchProducer(w.mu.buf[:0], recs, prod)
	}
	if err := w.writeLocked(w.mu.buf, nil, first, recs[len(recs)-1].Offset, maxTS, nil); err != nil {
		return 0, err
	}
	return first, nil
}

// appendEncoded appends the checked batch b (any base offset; it is moved
// to the next offset, which changes b) and returns its new base offset.
func (w *Writer) appendEncoded(b []byte, h batchHeader) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return 0, err
	}
	first := w.mu.next
	rebase(b, first)
	if err := w.writeLocked(b, nil, first, first+h.lastOffset-h.baseOffset, h.maxTimestamp, nil); err != nil {
		return 0, err
	}
	return first, nil
}

// usableLocked is the error that refuses a write: ErrClosed, or the
// writer's failure. w.mu must be held.
func (w *Writer) usableLocked() error {
	if w.mu.closed {
		return ErrClosed
	}
	return w.mu.err
}

// writeLocked writes the encoded batch holding offsets first..last (its
// bytes are batch followed by rest, which may be nil): rolls the segment
// if it is full, adds an index entry, writes the batch with one write(2)
// (pwritev(2) if rest is not nil) and fsyncs it if the policy says so.
//
// With a SyncGroup g (AppendKafkaTo), the fsync the policy asks for is
// started in g rather than waited for.
func (w *Writer) writeLocked(batch, rest []byte, first, last, maxTS int64, g *SyncGroup) error {
	size := int64(len(batch) + len(rest))
	if size-4 > maxBatchBytes {
		return fmt.Errorf("wlog: batch of %d bytes is larger than %d", size, maxBatchBytes)
	}
	if w.mu.pos > 0 && w.mu.pos+size > w.cfg.SegmentBytes {
		if err := w.rollLocked(); err != nil {
			return w.failLocked(err)
		}
	}
	if w.mu.pos > 0 && w.mu.pos-w.mu.lastIndexed >= indexInterval {
		e := indexEnt{rel: uint32(first - w.mu.base), pos: uint32(w.mu.pos), maxTS: w.mu.maxTS}
		// The index is a hint: a failed write is harmless to the log.
		if _, err := w.mu.idx.Write(appendIndexEnt(nil, e)); err == nil {
			w.mu.lastIndexed = w.mu.pos
		}
	}
	var err error
	if rest == nil {
		_, err = w.mu.f.WriteAt(batch, w.mu.pos)
	} else {
		err = writeAt2(w.mu.f, batch, rest, w.mu.pos)
	}
	if err != nil {
		// Take back a partial write so that the file ends at a batch
		// boundary; if even that fails, the writer is unusable.
		if terr := w.mu.f.Truncate(w.mu.pos); terr != nil {
			return w.failLocked(err)
		}
		return fmt.Errorf("wlog: append to partition %d of %s at offset %d: %w", w.partition, w.topic, first, err)
	}
	w.mu.pos += size
	w.mu.next = last + 1
	w.mu.maxTS = max(w.mu.maxTS, maxTS)
	w.mu.dirty = true
	if w.wcfg.sync.every == 0 && !w.wcfg.callerSyncs {
		if g != nil {
			g.start(w)
			return nil
		}
		if err := w.syncLocked(); err != nil {
			return err
		}
	}
	return nil
}

// failLocked makes err sticky.
func (w *Writer) failLocked(err error) error {
	w.mu.err = fmt.Errorf("wlog: partition %d of %s: %w", w.partition, w.topic, err)
	return w.mu.err
}

func (w *Writer) syncLocked() error {
	if !w.mu.dirty {
		return nil
	}
	// fdatasync: the file's data and size, not its timestamps. A failed
	// fsync cannot be retried (the kernel may have dropped the dirty pages),
	// so it is sticky.
	if err := fdatasync(w.mu.f); err != nil {
		return w.failLocked(err)
	}
	w.mu.dirty = false
	w.writeRecoveryLocked()
	return nil
}

// Sync fsyncs the active segment.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return err
	}
	return w.syncLocked()
}

func (w *Writer) syncLoop(d time.Duration) {
	defer close(w.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.mu.Lock()
			if !w.mu.closed && w.mu.err == nil {
				if err := w.syncLocked(); err != nil {
					w.wcfg.logger.Error("wlog: fsync failed", "topic", w.topic, "partition", w.partition, "err", err)
				}
			}
			w.mu.Unlock()
		}
	}
}

// Roll closes the active segment and starts a new one, if the active
// segment is not empty. Only closed segments are cleaned.
func (w *Writer) Roll() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return err
	}
	if w.mu.pos == 0 {
		return nil
	}
	if err := w.rollLocked(); err != nil {
		return w.failLocked(err)
	}
	return nil
}

func (w *Writer) rollLocked() error {
	// The closed segment is synced whatever the policy, unless never: a
	// closed segment should not lose data that later segments kept.
	if w.wcfg.sync.every >= 0 {
		if err := w.syncLocked(); err != nil {
			return err
		}
	}
	w.mu.f.Close()
	w.mu.idx.Close()
	if err := w.openSegmentLocked(w.mu.next); err != nil {
		return err
	}
	if w.wcfg.sync.every >= 0 {
		w.writeRecoveryLocked() // the new segment is empty, the closed one synced
	}
	return nil
}

// NextOffset returns the offset the next appended record will get.
func (w *Writer) NextOffset() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.next
}

// activeBase returns the base offset of the active segment.
func (w *Writer) activeBase() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.base
}

// Close fsyncs (unless SyncNever), closes the files and releases the
// lock. It is idempotent.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.mu.closed {
		w.mu.Unlock()
		return nil
	}
	w.mu.closed = true
	var err error
	if w.mu.err == nil && w.wcfg.sync.every >= 0 {
		err = w.syncLocked()
	}
	if w.mu.err == nil {
		rememberVerified(w.dir, w.mu.base, w.mu.f, w.mu.pos, w.mu.next, w.mu.maxTS)
	}
	w.mu.f.Close()
	w.mu.idx.Close()
	w.rpFile.Close()
	w.mu.Unlock()
	if w.stop != nil {
		close(w.stop)
		<-w.done
	}
	w.lock.Close() // releases the flock
	return err
}
