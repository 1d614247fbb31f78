package wlog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// CleanStats says what Clean did.
type CleanStats struct {
	DeletedSegments   int   // by retention, or emptied by compaction
	CompactedSegments int   // rewritten by compaction
	RemovedRecords    int64 // by compaction
}

// Clean applies the topic's retention and, for a compacted topic,
// compaction to the closed segments of the partition (never to the active
// one: roll it with Roll first to include it). now is the time against
// which retention and tombstone delays are measured.
//
// Retention deletes whole segments, oldest first: those whose newest
// record is older than now-Retention, then the oldest while the partition
// would still hold at least RetentionBytes without them. Compaction
// rewrites each closed segment keeping, for each key, only the record with
// the highest offset in the partition; tombstones (nil values) are dropped
// too once their segment was last written more than TombstoneRetention
// ago. Records keep their offsets. Readers that have a segment open keep
// reading the old file.
func (w *Writer) Clean(now time.Time) (CleanStats, error) {
	w.cleanMu.Lock()
	defer w.cleanMu.Unlock()
	var st CleanStats
	active := w.activeBase()
	bases, err := listSegments(w.dir)
	if err != nil {
		return st, err
	}
	var closed []int64
	var sizes []int64
	var total int64
	for _, b := range bases {
		fi, err := os.Stat(logPath(w.dir, b))
		if err != nil {
			return st, err
		}
		total += fi.Size()
		if b < active {
			closed = append(closed, b)
			sizes = append(sizes, fi.Size())
		}
	}
	del := 0
	if r := w.cfg.Retention; r > 0 {
		limit := now.Add(-r).UnixMilli()
		for del < len(closed) {
			ts, err := segmentMaxTS(logPath(w.dir, closed[del]))
			if err != nil {
				return st, err
			}
			if ts >= limit {
				break
			}
			total -= sizes[del]
			del++
		}
	}
	if rb := w.cfg.RetentionBytes; rb > 0 {
		for del < len(closed) && total-sizes[del] >= rb {
			total -= sizes[del]
			del++
		}
	}
	for _, b := range closed[:del] {
		if err := w.deleteSegment(b); err != nil {
			return st, err
		}
		st.DeletedSegments++
	}
	if del > 0 {
		w.wcfg.logger.Info("wlog: retention deleted segments", "topic", w.topic, "partition", w.partition, "segments", del)
	}
	if w.cfg.Compact && del < len(closed) {
		if err := w.compact(closed[del:], bases[len(bases)-1], now, &st); err != nil {
			return st, err
		}
	}
	return st, nil
}

func (w *Writer) deleteSegment(base int64) error {
	if err := os.Remove(logPath(w.dir, base)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Remove(indexPath(w.dir, base)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// segmentMaxTS returns the largest timestamp in a closed segment, reading
// only batch headers.
func segmentMaxTS(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	maxTS := int64(minTS)
	var hdr [batchHeaderSize]byte
	for pos := int64(0); ; {
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			return maxTS, nil
		}
		h, err := parseBatchHeader(hdr[:])
		if err != nil {
			return maxTS, nil
		}
		maxTS = max(maxTS, h.maxTimestamp)
		pos += h.size()
	}
}

// forEachBatch calls fn with each valid batch of a segment, in order. A
// closed segment must be valid to its end; the active one (active true)
// may end in a batch being written.
func forEachBatch(dir string, base int64, active bool, fn func(h batchHeader, b []byte, recs []Record) error) error {
	path := logPath(dir, base)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	var buf []byte
	var recs []Record
	next := base
	for pos := int64(0); ; {
		h, b, err := batchAt(f, pos, buf)
		buf = b
		if err != nil {
			if pos >= st.Size() && err == errShort {
				return nil // the end
			}
			if active {
				return damageError(f, dir, base, pos, next, err)
			}
			// A closed segment has no torn tail: rewriting it without
			// what follows pos would lose records.
			return fmt.Errorf("%s at byte %d of %d: %w", path, pos, st.Size(), err)
		}
		recs, _, err = decodeBatch(recs[:0], b)
		if err != nil {
			return fmt.Errorf("%s at %d: %w", path, pos, err)
		}
		if err := fn(h, b, recs); err != nil {
			return err
		}
		pos += h.size()
		next = h.lastOffset + 1
	}
}

// compact rewrites the closed segments. The map of latest offsets covers
// every segment up to and including the last one, so that a value
// overwritten in the active segment is dropped from the closed ones.
func (w *Writer) compact(closed []int64, last int64, now time.Time, st *CleanStats) error {
	latest := map[string]int64{}
	bases, err := listSegments(w.dir)
	if err != nil {
		return err
	}
	for _, b := range bases {
		if b < closed[0] || b > last {
			continue
		}
		err := forEachBatch(w.dir, b, b == last, func(_ batchHeader, _ []byte, recs []Record) error {
			for _, r := range recs {
				if r.Key != nil {
					latest[string(r.Key)] = r.Offset
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, b := range closed {
		if err := w.compactSegment(b, latest, now, st); err != nil {
			return fmt.Errorf("wlog: compact %s: %w", logPath(w.dir, b), err)
		}
	}
	return nil
}

func (w *Writer) compactSegment(base int64, latest map[string]int64, now time.Time, st *CleanStats) error {
	path := logPath(w.dir, base)
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	dropTombstones := now.Sub(fi.ModTime()) >= w.cfg.TombstoneRetention
	var out []byte
	var index []indexEnt
	var removed int64
	maxTS, lastIndexed := int64(minTS), int64(0)
	var keep []Record
	err = forEachBatch(w.dir, base, false, func(_ batchHeader, b []byte, recs []Record) error {
		keep = keep[:0]
		for _, r := range recs {
			superseded := r.Key != nil && latest[string(r.Key)] != r.Offset
			if superseded || (r.Value == nil && dropTombstones) {
				removed++
				continue
			}
			keep = append(keep, r)
		}
		if len(keep) == 0 {
			return nil
		}
		pos := int64(len(out))
		if pos > 0 && pos-lastIndexed >= indexInterval {
			index = append(index, indexEnt{rel: uint32(keep[0].Offset - base), pos: uint32(pos), maxTS: maxTS})
			lastIndexed = pos
		}
		// A batch of the exactly-once Sink keeps its producer section, so
		// that the sink's deduplication still finds its sequence number.
		prod, _, _, err := producerSection(b)
		if err != nil {
			return err
		}
		out = appendBatchProducer(out, keep, prod)
		for _, r := range keep {
			maxTS = max(maxTS, r.Timestamp)
		}
		return nil
	})
	if err != nil || removed == 0 {
		return err
	}
	st.RemovedRecords += removed
	if len(out) == 0 {
		st.DeletedSegments++
		return w.deleteSegment(base)
	}
	// Write beside, fsync, rename over: a crash leaves either segment
	// whole (stray .cleaned files are removed when a writer opens). The
	// modification time is kept: it dates the segment's tombstones.
	tmp := path + cleanedSuffix
	if err := writeFileSync(tmp, out); err != nil {
		return err
	}
	if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
		return err
	}
	itmp := indexPath(w.dir, base) + cleanedSuffix
	if err := writeIndexFile(itmp, index); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if err := os.Rename(itmp, indexPath(w.dir, base)); err != nil {
		return err
	}
	syncDir(w.dir)
	st.CompactedSegments++
	return nil
}

func writeFileSync(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
