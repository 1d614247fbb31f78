package wlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// The recovery point of a partition (like Kafka's recovery-point
// checkpoint) is where its data is known to be on disk: segment base,
// byte position pos in it and the offset next at pos. Everything before
// it was fsynced (and so acknowledged) by a writer; only bytes after it
// can be a torn write. The writer updates it after each fsync of the
// active segment (and at a roll), with one pwrite into
// DATA-DIR/TOPIC/P/recovery-point: two slots of recoverySlot bytes,
// written in turn, each with a sequence number and a CRC, so that a torn
// update leaves the other slot. The file is not fsynced itself (that
// would double the fsyncs): after a machine crash it may lag behind the
// data, never run ahead of it, since it is written after the data's
// fsync returned. A partition without the file (older versions) has no
// recovery point: invalid data at the end of its active segment is a torn
// tail, as before.
const (
	recoveryFile  = "recovery-point"
	recoverySlot  = 64
	recoveryMagic = 0x574c5250 // "WLRP"
	recoveryBody  = 4 + 8 + 8 + 8 + 8
)

// recoveryPoint is a partition's recovery point; ok is false if there is
// none.
type recoveryPoint struct {
	ok              bool
	seq             uint64
	base, pos, next int64
}

func encodeRecovery(rp recoveryPoint) []byte {
	b := make([]byte, 0, recoverySlot)
	b = binary.BigEndian.AppendUint32(b, recoveryMagic)
	b = binary.BigEndian.AppendUint64(b, rp.seq)
	b = binary.BigEndian.AppendUint64(b, uint64(rp.base))
	b = binary.BigEndian.AppendUint64(b, uint64(rp.pos))
	b = binary.BigEndian.AppendUint64(b, uint64(rp.next))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
	return b[:recoverySlot:recoverySlot]
}

func decodeRecovery(b []byte) (recoveryPoint, bool) {
	if len(b) < recoveryBody+4 || binary.BigEndian.Uint32(b) != recoveryMagic ||
		binary.BigEndian.Uint32(b[recoveryBody:]) != crc32.Checksum(b[:recoveryBody], crcTable) {
		return recoveryPoint{}, false
	}
	rp := recoveryPoint{ok: true, seq: binary.BigEndian.Uint64(b[4:]),
		base: int64(binary.BigEndian.Uint64(b[12:])), pos: int64(binary.BigEndian.Uint64(b[20:])),
		next: int64(binary.BigEndian.Uint64(b[28:]))}
	if rp.base < 0 || rp.pos < 0 || rp.next < rp.base {
		return recoveryPoint{}, false
	}
	return rp, true
}

// readRecovery returns the recovery point of partition directory dir.
func readRecovery(dir string) (recoveryPoint, error) {
	b, err := os.ReadFile(filepath.Join(dir, recoveryFile))
	if errors.Is(err, fs.ErrNotExist) {
		return recoveryPoint{}, nil
	}
	if err != nil {
		return recoveryPoint{}, err
	}
	var best recoveryPoint
	for i := 0; i+recoverySlot <= len(b); i += recoverySlot {
		if rp, ok := decodeRecovery(b[i : i+recoverySlot]); ok && (!best.ok || rp.seq > best.seq) {
			best = rp
		}
	}
	return best, nil
}

// durableEnd returns the position in segment base below which the data
// was fsynced, by the recovery point rp: all of a segment before rp's,
// none of a later one.
func (rp recoveryPoint) durableEnd(base int64) int64 {
	switch {
	case !rp.ok || base > rp.base:
		return 0
	case base < rp.base:
		return math.MaxInt64
	}
	return rp.pos
}

// GapError reports records missing between segments, or at the end of
// a partition: a segment file deleted, emptied or cut short. Offsets
// From to To-1 cannot be read. errors.Is(err, ErrCorrupt) holds for it.
type GapError struct {
	Topic     string
	Partition int
	Segment   string // the segment file that should hold offset From
	From, To  int64  // To is -1 if unknown
	Reason    string
}

func (e *GapError) Error() string {
	to := "on"
	if e.To >= 0 {
		to = fmt.Sprintf("to %d", e.To-1)
	}
	return fmt.Sprintf("wlog: topic %s partition %d: offsets %d %s are missing: segment %s %s",
		e.Topic, e.Partition, e.From, to, e.Segment, e.Reason)
}

// Unwrap returns ErrCorrupt.
func (e *GapError) Unwrap() error { return ErrCorrupt }

// checkLast checks the last segment (base last, size bytes, of the listing
// bases) against the recovery point rp: it must exist and hold at least
// the recovery point's bytes. A roll after the listing (the recovery
// point on a newer segment that exists now) is no damage.
func checkLast(topic string, p int, dir string, last, size int64, rp recoveryPoint) error {
	switch {
	case !rp.ok || rp.base < last:
		return nil
	case rp.base > last:
		if _, err := os.Stat(logPath(dir, rp.base)); err == nil {
			return nil
		}
		return &GapError{Topic: topic, Partition: p, Segment: logPath(dir, rp.base), From: rp.base, To: rp.next,
			Reason: "is missing (the recovery point is in it)"}
	case size < rp.pos:
		return &GapError{Topic: topic, Partition: p, Segment: logPath(dir, last), From: -1, To: rp.next,
			Reason: fmt.Sprintf("is %d bytes, cut below its recovery point at byte %d (fsynced data lost)", size, rp.pos)}
	}
	return nil
}

// chain is the process's knowledge of closed segments found whole:
// a segment file unchanged since (same file, size and modification time)
// need not be scanned again.
var chain struct {
	sync.Mutex
	m map[string]chainEnt
}

type chainEnt struct {
	file os.FileInfo
	next int64
}

// closedNext returns the offset after the last batch of closed segment
// base (the next segment starting at nextBase), checking that the segment
// is not empty and valid to its end.
func closedNext(topic string, p int, dir string, base, nextBase int64) (int64, error) {
	path := logPath(dir, base)
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	chain.Lock()
	c, ok := chain.m[path]
	chain.Unlock()
	if ok && os.SameFile(c.file, st) && c.file.Size() == st.Size() && c.file.ModTime().Equal(st.ModTime()) {
		return c.next, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return 0, err
	}
	if st.Size() == 0 {
		return 0, &GapError{Topic: topic, Partition: p, Segment: path, From: base, To: nextBase,
			Reason: fmt.Sprintf("is empty, but it is not the last segment (the next starts at offset %d)", nextBase)}
	}
	ents, err := readIndex(indexPath(dir, base))
	if err != nil {
		return 0, err
	}
	res, err := scanSegment(f, base, ents, st.Size())
	if err != nil {
		return 0, err
	}
	if res.damage != nil {
		return 0, res.damage.errorFor(topic, p, path)
	}
	if res.end < st.Size() {
		return 0, &CorruptError{Topic: topic, Partition: p, Segment: path, Position: res.end, Offset: res.nextOffset,
			NextPosition: -1, NextOffset: -1, Err: fmt.Errorf("%w: invalid batch in a closed segment of %d bytes: %v", ErrCorrupt, st.Size(), res.err)}
	}
	chain.Lock()
	if chain.m == nil {
		chain.m = map[string]chainEnt{}
	}
	chain.m[path] = chainEnt{file: st, next: res.nextOffset}
	chain.Unlock()
	return res.nextOffset, nil
}

// checkChain checks the closed segments of a partition (all of bases but
// the last): none is empty or invalid, and, unless the topic is
// compacted (compaction deletes segments it empties, leaving gaps), each
// starts where the one before ended, and the first at 0 if the topic has
// no retention. Segments deleted meanwhile (retention) are skipped.
func checkChain(topic string, p int, dir string, bases []int64, cfg TopicConfig) error {
	if len(bases) == 0 {
		return nil
	}
	contiguous := !cfg.Compact
	if contiguous && bases[0] > 0 && cfg.Retention == 0 && cfg.RetentionBytes == 0 {
		return &GapError{Topic: topic, Partition: p, Segment: logPath(dir, 0), From: 0, To: bases[0],
			Reason: "is missing (the topic has no retention, so its first segment starts at 0)"}
	}
	prev, prevBase := int64(-1), int64(0)
	for i, base := range bases[:len(bases)-1] {
		next, err := closedNext(topic, p, dir, base, bases[i+1])
		if errors.Is(err, fs.ErrNotExist) {
			prev = -1
			continue
		}
		if err != nil {
			return err
		}
		if contiguous && prev >= 0 && base != prev {
			return gapBetween(topic, p, dir, prevBase, prev, base)
		}
		prev, prevBase = next, base
	}
	if last := bases[len(bases)-1]; contiguous && prev >= 0 && last != prev {
		if _, err := os.Stat(logPath(dir, last)); err == nil {
			return gapBetween(topic, p, dir, prevBase, prev, last)
		}
	}
	return nil
}

// gapBetween is the error for segment prevBase ending at offset from
// and the next segment starting at to.
func gapBetween(topic string, p int, dir string, prevBase, from, to int64) error {
	if from > to {
		return &GapError{Topic: topic, Partition: p, Segment: logPath(dir, to), From: to, To: from,
			Reason: fmt.Sprintf("overlaps segment %s, which ends at offset %d", logPath(dir, prevBase), from)}
	}
	reason := fmt.Sprintf("is missing: segment %s ends at offset %d (or was cut short), the next starts at %d", logPath(dir, prevBase), from, to)
	if bases, _ := listSegments(dir); slices.Contains(bases, from) {
		reason = fmt.Sprintf("is empty (the next segment starts at offset %d)", to)
	}
	return &GapError{Topic: topic, Partition: p, Segment: logPath(dir, from), From: from, To: to, Reason: reason}
}
