package wlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A partition directory holds segments: NNNNNNNNNNNNNNNNNNNN.log, named by
// the offset of its first record (the base offset) in 20 digits, and a
// sparse index NNNNNNNNNNNNNNNNNNNN.index beside it.
//
// An index entry is 16 bytes, big-endian: uint32 offset relative to the
// base offset of a batch, uint32 file position of that batch, int64 the
// largest timestamp of the records before that position in the segment
// (math.MinInt64 if none). An entry is added before a batch once at least
// indexInterval bytes were written since the last entry. The index is a
// hint: writers and readers check the batch an entry points to (CRC and
// base offset) and scan from the segment start if it does not match, so a
// stale or torn index costs time, never correctness.
const (
	logSuffix     = ".log"
	indexSuffix   = ".index"
	cleanedSuffix = ".cleaned" // compaction output before its rename
	indexEntry    = 16
	indexInterval = 4096
)

func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }

func logPath(dir string, base int64) string {
	return filepath.Join(dir, segmentName(base)+logSuffix)
}

func indexPath(dir string, base int64) string {
	return filepath.Join(dir, segmentName(base)+indexSuffix)
}

// listSegments returns the base offsets of the segments in dir, ascending.
func listSegments(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var bases []int64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), logSuffix)
		if !ok || len(name) != 20 {
			continue
		}
		b, err := strconv.ParseInt(name, 10, 64)
		if err != nil || b < 0 {
			continue
		}
		bases = append(bases, b)
	}
	slices.Sort(bases)
	return bases, nil
}

type indexEnt struct {
	rel   uint32
	pos   uint32
	maxTS int64 // largest timestamp before pos
}

func appendIndexEnt(dst []byte, e indexEnt) []byte {
	dst = binary.BigEndian.AppendUint32(dst, e.rel)
	dst = binary.BigEndian.AppendUint32(dst, e.pos)
	return binary.BigEndian.AppendUint64(dst, uint64(e.maxTS))
}

// readIndex reads an index, dropping a torn last entry and entries that
// do not increase. A missing index is empty.
func readIndex(path string) ([]indexEnt, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ents := make([]indexEnt, 0, len(b)/indexEntry)
	for ; len(b) >= indexEntry; b = b[indexEntry:] {
		e := indexEnt{
			rel:   binary.BigEndian.Uint32(b),
			pos:   binary.BigEndian.Uint32(b[4:]),
			maxTS: int64(binary.BigEndian.Uint64(b[8:])),
		}
		if n := len(ents); n > 0 && (e.pos <= ents[n-1].pos || e.rel <= ents[n-1].rel) {
			break
		}
		ents = append(ents, e)
	}
	return ents, nil
}

// batchAt reads and checks the batch at pos of f, returning its header. A
// batch that runs past the end of the file is errShort.
func batchAt(f io.ReaderAt, pos int64, buf []byte) (batchHeader, []byte, error) {
	if cap(buf) < batchHeaderSize {
		buf = make([]byte, batchHeaderSize)
	}
	buf = buf[:batchHeaderSize]
	if _, err := f.ReadAt(buf, pos); err != nil {
		if err == io.EOF {
			return batchHeader{}, buf, errShort
		}
		return batchHeader{}, buf, err
	}
	h, err := parseBatchHeader(buf)
	if err != nil {
		return h, buf, err
	}
	if !reaches(f, pos+h.size()) {
		// Do not allocate what a (maybe garbled) length claims before
		// knowing that the file holds it.
		return h, buf, errShort
	}
	if int64(cap(buf)) < h.size() {
		buf = append(buf[:0], make([]byte, h.size())...)
	}
	buf = buf[:h.size()]
	if _, err := f.ReadAt(buf, pos); err != nil {
		if err == io.EOF {
			return h, buf, errShort
		}
		return h, buf, err
	}
	h, err = checkBatch(buf)
	return h, buf, err
}

// segReader serves batches of a segment file through a cache of
// scanChunk bytes, so that a scan costs one read per chunk, not two per
// batch.
type segReader struct {
	f      io.ReaderAt
	buf    []byte
	bufPos int64
}

// batch returns the checked batch at pos, like batchAt.
func (s *segReader) batch(pos int64) (batchHeader, []byte, error) {
	if pos >= s.bufPos && pos < s.bufPos+int64(len(s.buf)) {
		b := s.buf[pos-s.bufPos:]
		h, err := checkBatch(b)
		if err != errShort {
			return h, b, err
		}
		if len(b) >= batchHeaderSize && h.size() > int64(cap(s.buf)) {
			// Larger than the cache: read it on its own.
			return batchAt(s.f, pos, nil)
		}
	}
	if cap(s.buf) < scanChunk {
		s.buf = make([]byte, scanChunk)
	}
	s.buf = s.buf[:cap(s.buf)]
	n, err := s.f.ReadAt(s.buf, pos)
	if err != nil && err != io.EOF {
		return batchHeader{}, nil, err
	}
	s.buf, s.bufPos = s.buf[:n], pos
	h, err := checkBatch(s.buf)
	if err == errShort && n >= batchHeaderSize && h.size() > int64(n) && n == scanChunk {
		return batchAt(s.f, pos, nil)
	}
	return h, s.buf, err
}

// reaches reports whether f holds at least end bytes.
func reaches(f io.ReaderAt, end int64) bool {
	var probe [1]byte
	_, err := f.ReadAt(probe[:], end-1)
	return err == nil
}

// scanResult describes the valid prefix of a segment.
type scanResult struct {
	end        int64 // position after the last valid batch
	nextOffset int64 // offset after the last valid batch; base if none
	maxTS      int64 // largest timestamp in the valid prefix
	index      []indexEnt
	lastIndexd int64 // position of the last index entry (0 if none)
	err        error // why the scan stopped before the end of the file, if it did
	// damage is set when the scan stopped at invalid data that a valid
	// batch follows: not a torn tail (see CorruptError).
	damage *damage
}

// scanSegment finds the valid prefix of a segment, starting at the last
// index entry that points at a valid batch (or at 0). It rebuilds the index
// entries for the scanned part. An error is an I/O error.
func scanSegment(f *os.File, base int64, ents []indexEnt, size int64) (scanResult, error) {
	res := scanResult{nextOffset: base, maxTS: minTS}
	// Trust the last index entry that lies inside the file and points at a
	// valid batch of the expected offset.
	var buf []byte
	for len(ents) > 0 {
		e := ents[len(ents)-1]
		if int64(e.pos) < size {
			h, b, err := batchAt(f, int64(e.pos), buf)
			buf = b
			if err == nil && h.baseOffset == base+int64(e.rel) {
				break
			}
		}
		ents = ents[:len(ents)-1]
	}
	if n := len(ents); n > 0 {
		res.index = ents[: n-1 : n-1] // the last entry is re-added by the scan
		res.end = int64(ents[n-1].pos)
		res.maxTS = ents[n-1].maxTS
		res.nextOffset = base + int64(ents[n-1].rel)
		if n > 1 {
			res.lastIndexd = int64(ents[n-2].pos)
		}
	}
	return scanFrom(f, base, size, res)
}

// scanFrom goes on with a scan from res.end, a batch boundary, to the end
// of the valid data.
func scanFrom(f io.ReaderAt, base, size int64, res scanResult) (scanResult, error) {
	sr := segReader{f: f}
	for res.end < size {
		h, _, err := sr.batch(res.end)
		if err == nil && h.baseOffset < res.nextOffset {
			err = fmt.Errorf("%w: offset %d after %d", ErrCorrupt, h.baseOffset, res.nextOffset-1)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && err != errShort {
				return res, err
			}
			res.err = err
			d, cerr := classify(f, res.end, res.nextOffset, res.nextOffset, size, err)
			res.damage = d
			return res, cerr
		}
		if res.end > 0 && res.end-res.lastIndexd >= indexInterval {
			res.index = append(res.index, indexEnt{rel: uint32(h.baseOffset - base), pos: uint32(res.end), maxTS: res.maxTS})
			res.lastIndexd = res.end
		}
		res.end += h.size()
		res.nextOffset = h.lastOffset + 1
		res.maxTS = max(res.maxTS, h.maxTimestamp)
	}
	return res, nil
}

const minTS = -1 << 63

func writeIndexFile(path string, ents []indexEnt) error {
	b := make([]byte, 0, len(ents)*indexEntry)
	for _, e := range ents {
		b = appendIndexEnt(b, e)
	}
	return os.WriteFile(path, b, 0o644)
}
