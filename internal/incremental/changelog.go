package incremental

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/pebblestate"
)

// Changelog checkpoints (weir.StateChangelog; Flink's
// `state.backend.changelog.enabled`, its generic log-based incremental
// checkpoints, FLIP-158): a checkpoint writes the changes made since the
// one before, not the files an LSM rewrote.
//
// An incremental checkpoint uploads the SST files the last one did not
// have; with changes spread over the keys, Pebble's compactions rewrite
// most files between two checkpoints, so a checkpoint after 1% of the
// keys changed wrote 20-50% of the state (docs/operations.md). With the
// changelog, every write that reaches the database (pebblestate.Recorder)
// is also appended to a local log segment. A checkpoint then closes the
// segment and uploads it as a shared file, listing again the base — the
// files of the last materialization, an incremental checkpoint of the
// database as above — and the segments uploaded since it. A restore opens
// the base's files (or copies its key groups, when rescaling) and replays
// the segments in order.
//
// A checkpoint materializes (takes an incremental checkpoint, and starts
// a new chain once it completes) when there is no completed base yet (the
// first checkpoint; the first after a restore at other key groups, or
// from a checkpoint that was not a changelog one: a restore with the same
// key groups carries on with the restored base and segments, adoptChain),
// when the segments since
// the base add up to more than MaxLogRatio of its size (bounding what a
// restore replays), or when MaterializeInterval has passed since the base
// was taken. Flink materializes in the background, outside checkpoints;
// here the materializing checkpoint uploads the new SST files itself, so
// its size is an incremental checkpoint's: the bytes written are the
// segments' every time and the SST files' once per materialization.
//
// Savepoints are by key group, as without the changelog.

// MaxLogRatio is the share of the base's size that the log segments since
// it may reach before a checkpoint materializes.
const MaxLogRatio = 0.5

// segment is one closed log segment: the writes between two checkpoints'
// barriers. id is the checkpoint whose barrier closed it.
type segment struct {
	id   int64
	path string // local file
	size int64
	fi   checkpoint.FileInfo // once uploaded in a completed checkpoint
	done bool                // fi is set
}

// base is the completed materialization that log checkpoints build on:
// its files, all shared.
type base struct {
	id    int64
	taken int64 // the processing time of its barrier, ms
	files []File
	infos []checkpoint.FileInfo
	size  int64
}

// logWriter appends records to the open segment. Records: op (1 byte),
// uvarint key length, key, uvarint value length, value.
type logWriter struct {
	f    *os.File
	w    *bufio.Writer
	n    int64
	path string
	err  error
	hdr  [1 + 2*binary.MaxVarintLen64]byte
}

func (l *logWriter) Record(op pebblestate.Op, key, value []byte) error {
	if l.err != nil {
		return l.err
	}
	// bufio.Writer's errors stick: the last Write reports any
	h := binary.AppendUvarint(append(l.hdr[:0], byte(op)), uint64(len(key)))
	n1, _ := l.w.Write(h)
	n2, _ := l.w.Write(key)
	n3, _ := l.w.Write(binary.AppendUvarint(l.hdr[:0], uint64(len(value))))
	n4, err := l.w.Write(value)
	if err != nil {
		l.err = fmt.Errorf("state changelog %s: %w", l.path, err)
		return l.err
	}
	l.n += int64(n1 + n2 + n3 + n4)
	return nil
}

// countingReader counts the bytes read through it (a segment's offsets).
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// close flushes and closes the segment file; it is not synced: the
// checkpoint's upload is what makes it durable.
func (l *logWriter) close() error {
	err := l.err
	if err == nil {
		err = l.w.Flush()
	}
	return errors.Join(err, l.f.Close())
}

// openLog opens a new segment file in the backend's directory and records
// the database's writes into it.
func (b *Backend) openLog() error {
	b.logSeq++
	p := filepath.Join(b.root, fmt.Sprintf("changelog-%06d", b.logSeq))
	f, err := os.Create(p)
	if err != nil {
		return fmt.Errorf("state changelog: %w", err)
	}
	b.log = &logWriter{f: f, w: bufio.NewWriterSize(f, 256<<10), path: p}
	b.Backend.SetRecorder(b.log)
	return nil
}

// rotate closes the open segment at checkpoint id's barrier, keeps it
// (unless empty) and opens the next.
func (b *Backend) rotate(id int64) error {
	l := b.log
	if err := l.close(); err != nil {
		return err
	}
	if l.n == 0 {
		os.Remove(l.path)
	} else {
		b.mu.Lock()
		b.mu.segs = append(b.mu.segs, &segment{id: id, path: l.path, size: l.n})
		b.mu.Unlock()
	}
	return b.openLog()
}

// logSnapshot is what a log checkpoint lists: the base and the segments
// after it, up to the barrier, and the materialization being uploaded
// (nil: none).
type logSnapshot struct {
	base base
	segs []segment
	next *nextBase
}

// nextBase is a materialization being uploaded: a local Pebble checkpoint
// of the database taken at the barrier of checkpoint id, whose files the
// log checkpoints after it upload a few at a time, listing those
// uploaded, until all are; the next barrier then makes it the base.
type nextBase struct {
	id    int64
	taken int64
	dir   string
	files []nextFile // in the order they are uploaded
}

type nextFile struct {
	local string
	size  int64
	fi    checkpoint.FileInfo
	done  bool // uploaded in a completed checkpoint: fi is set
}

// MaxUploadShare is the share of the state that a log checkpoint uploads
// of the next base's files, its segments included; at least one file is
// uploaded, so that the materialization ends.
const MaxUploadShare = 0.04

// chain returns what a log checkpoint at the barrier of id (now in ms)
// lists, nil if there is no completed base, and whether a new
// materialization is due: the log since the base passed MaxLogRatio of
// it, or MaterializeInterval passed.
func (b *Backend) chain(id, now int64) (*logSnapshot, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bs := b.mu.base
	if bs == nil {
		return nil, true
	}
	ls := &logSnapshot{base: *bs}
	var n int64
	for _, s := range b.mu.segs {
		if s.id > bs.id && s.id <= id {
			ls.segs = append(ls.segs, *s)
			n += s.size
		}
	}
	if b.mu.next != nil {
		ls.next = b.mu.next.clone()
	}
	due := float64(n) > MaxLogRatio*float64(bs.size) || (b.interval > 0 && now-bs.taken >= b.interval)
	return ls, due
}

// clone copies nb for a checkpoint to upload from, while confirmations
// change nb's files.
func (nb *nextBase) clone() *nextBase {
	c := *nb
	c.files = append([]nextFile(nil), nb.files...)
	return &c
}

// startNext takes the local Pebble checkpoint of a new materialization at
// the barrier of id (none is being uploaded), and returns a copy of it.
func (b *Backend) startNext(id, now int64) (*nextBase, error) {
	dir := filepath.Join(b.snapRoot, fmt.Sprintf("%s-%d-base-%s-%d", checkpoint.SafeName(b.uid), b.subtask, b.instance, id))
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := b.Backend.Checkpoint(dir); err != nil {
		return nil, fmt.Errorf("pebble checkpoint: %w", err)
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	nb := &nextBase{id: id, taken: now, dir: dir}
	for _, de := range des {
		if !de.Type().IsRegular() {
			return nil, fmt.Errorf("weir: Pebble checkpoint %s: %s is not a regular file", dir, de.Name())
		}
		info, err := de.Info()
		if err != nil {
			return nil, err
		}
		nb.files = append(nb.files, nextFile{local: de.Name(), size: info.Size()})
	}
	b.mu.Lock()
	b.mu.next = nb
	b.mu.Unlock()
	return nb.clone(), nil
}

// promote makes the next base, once all its files are uploaded, the base:
// the segments it covers are dropped, and its SST files are those later
// materializations list again rather than upload.
func (b *Backend) promote() {
	b.mu.Lock()
	defer b.mu.Unlock()
	nb := b.mu.next
	if nb == nil {
		return
	}
	bs := &base{id: nb.id, taken: nb.taken}
	confirmed := map[string]checkpoint.FileInfo{}
	for _, f := range nb.files {
		if !f.done {
			return
		}
		bs.files = append(bs.files, File{Local: f.local, Ref: f.fi.Name, Shared: true})
		bs.infos = append(bs.infos, f.fi)
		bs.size += f.fi.Size
		if pebblestate.IsSharedFile(f.local) {
			confirmed[f.local] = f.fi
		}
	}
	b.mu.next = nil
	os.RemoveAll(nb.dir)
	b.mu.confirmed = confirmed
	b.setBaseLocked(bs)
}

// writeLog writes a log checkpoint into p: the base's files and the
// segments uploaded before listed again, the new segments uploaded.
func (ls *localSnap) writeLog(p *checkpoint.Pending, uid string, subtask int) (Desc, []checkpoint.FileInfo, map[int64]checkpoint.FileInfo, map[string]checkpoint.FileInfo, error) {
	desc := ls.desc
	var files []checkpoint.FileInfo
	for i, f := range ls.log.base.files {
		fi := ls.log.base.infos[i]
		if err := p.ReuseShared(fi); err != nil {
			ls.be.dropChain()
			return desc, nil, nil, nil, fmt.Errorf("state changelog: the base of the log: %w", err)
		}
		desc.Files = append(desc.Files, f)
		files = append(files, fi)
	}
	var state, spent int64 = ls.log.base.size, 0
	for _, s := range ls.log.segs {
		state += s.size
	}
	uploaded := map[int64]checkpoint.FileInfo{}
	for _, s := range ls.log.segs {
		fi := s.fi
		if !s.done || p.ReuseShared(fi) != nil {
			if s.path == "" {
				// a restored segment, gone from the store
				ls.be.dropChain()
				return desc, nil, nil, nil, fmt.Errorf("state changelog: segment %s is not in the checkpoint store", fi.Name)
			}
			ref := path.Join(checkpoint.SafeName(uid), desc.Instance, fmt.Sprintf("changelog-%d", s.id))
			var err error
			if fi, err = copyInto(p.CreateShared(ref))(s.path); err != nil {
				return desc, nil, nil, nil, err
			}
			uploaded[s.id] = fi
			spent += fi.Size
		}
		desc.Log = append(desc.Log, File{Local: fmt.Sprintf("changelog-%d", s.id), Ref: fi.Name, Shared: true})
		files = append(files, fi)
	}
	// The next base: its files uploaded so far are listed (so that
	// retention keeps them), and more are uploaded, up to MaxUploadShare
	// of the state with the segments, one at least. They are not part of
	// this checkpoint's state (desc).
	next := map[string]checkpoint.FileInfo{}
	if nb := ls.log.next; nb != nil {
		listed := map[string]bool{}
		for _, fi := range files {
			listed[fi.Name] = true
		}
		// reuse lists fi again, once (the next base shares SST files
		// with the base)
		reuse := func(fi checkpoint.FileInfo) bool {
			if listed[fi.Name] {
				return true
			}
			if p.ReuseShared(fi) != nil {
				return false
			}
			listed[fi.Name] = true
			files = append(files, fi)
			return true
		}
		quota := int64(MaxUploadShare * float64(state))
		one := false
		for _, f := range nb.files {
			if f.done && reuse(f.fi) {
				continue
			}
			if pebblestate.IsSharedFile(f.local) {
				// an SST file the base has too
				if fi, ok := ls.be.confirmedFile(f.local); ok && reuse(fi) {
					next[f.local] = fi
					continue
				}
			}
			if one && spent+f.size > quota {
				continue
			}
			ref := path.Join(checkpoint.SafeName(uid), desc.Instance, f.local)
			if !pebblestate.IsSharedFile(f.local) {
				ref = path.Join(checkpoint.SafeName(uid), desc.Instance, fmt.Sprintf("%d-%s", nb.id, f.local))
			}
			fi, err := copyInto(p.CreateShared(ref))(filepath.Join(nb.dir, f.local))
			if err != nil {
				return desc, nil, nil, nil, err
			}
			next[f.local] = fi
			listed[fi.Name] = true
			files = append(files, fi)
			spent += fi.Size
			one = true
		}
	}
	for i := range files {
		files[i].Subtask = subtask
		files[i].KeyGroups = &checkpoint.KeyGroupRange{Start: desc.Start, End: desc.End}
	}
	return desc, files, uploaded, next, nil
}

// confirmLog records the segments and the next base's files that a
// completed checkpoint uploaded (or listed), so that later checkpoints
// list them rather than upload them again.
func (b *Backend) confirmLog(uploaded map[int64]checkpoint.FileInfo, nextID int64, next map[string]checkpoint.FileInfo) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.mu.segs {
		if fi, ok := uploaded[s.id]; ok {
			s.fi, s.done = fi, true
		}
	}
	if nb := b.mu.next; nb != nil && nb.id == nextID {
		for i := range nb.files {
			if fi, ok := next[nb.files[i].local]; ok {
				nb.files[i].fi, nb.files[i].done = fi, true
			}
		}
	}
}

// confirmBase makes the materialization of checkpoint id the base of the
// log checkpoints that follow, and drops the segments it covers.
func (b *Backend) confirmBase(nb *base) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.closed || (b.mu.base != nil && b.mu.base.id >= nb.id) {
		return
	}
	b.setBaseLocked(nb)
}

func (b *Backend) setBaseLocked(nb *base) {
	b.mu.base = nb
	keep := b.mu.segs[:0]
	for _, s := range b.mu.segs {
		if s.id <= nb.id {
			os.Remove(s.path)
			continue
		}
		keep = append(keep, s)
	}
	b.mu.segs = keep
}

// adoptChain makes the base and the log segments of d, restored from
// checkpoint c with the same key groups, the chain that the next
// checkpoints list, so that the first checkpoint after a restore is a log
// checkpoint too. d must be a changelog checkpoint's (all its files
// shared); else the chain stays empty and that checkpoint materializes.
func (b *Backend) adoptChain(c *checkpoint.Checkpoint, d Desc) {
	bs := &base{}
	for _, f := range d.Files {
		fi, ok := c.File(f.Ref)
		if !ok || !f.Shared {
			return
		}
		bs.files = append(bs.files, f)
		bs.infos = append(bs.infos, fi)
		bs.size += fi.Size
	}
	var segs []*segment
	for _, f := range d.Log {
		fi, ok := c.File(f.Ref)
		id, err := strconv.ParseInt(strings.TrimPrefix(f.Local, "changelog-"), 10, 64)
		if !ok || err != nil {
			return
		}
		segs = append(segs, &segment{id: id, size: fi.Size, fi: fi, done: true})
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.base, b.mu.segs = bs, segs
}

// dropChain forgets the base and the segments uploaded (a file of theirs
// is gone from the store): the next checkpoint materializes.
func (b *Backend) dropChain() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.base = nil
}

// replay applies the log segments of d, in order, to kv.
func replay(c *checkpoint.Checkpoint, d Desc, kv state.KVStore) error {
	for _, f := range d.Log {
		if err := replaySegment(c, f, kv); err != nil {
			return err
		}
	}
	return nil
}

func replaySegment(c *checkpoint.Checkpoint, f File, kv state.KVStore) error {
	info, ok := c.File(f.Ref)
	if !ok {
		return fmt.Errorf("weir: %s: state changelog segment %s is not listed", c.Path(), f.Ref)
	}
	rc, err := c.Open(f.Ref)
	if err != nil {
		return err
	}
	defer rc.Close()
	cr := &countingReader{r: rc}
	r := bufio.NewReaderSize(cr, 256<<10)
	var key, value []byte
	var off int64 // the record's
	bad := func(what string) error {
		return fmt.Errorf("weir: %s: state changelog segment %s: %s at offset %d", c.Path(), f.Ref, what, off)
	}
	readBytes := func(dst []byte) ([]byte, error) {
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return dst, bad("truncated record")
		}
		if n > uint64(info.Size) {
			return dst, bad(fmt.Sprintf("length %d beyond the file's %d bytes", n, info.Size))
		}
		if uint64(cap(dst)) < n {
			dst = make([]byte, n)
		}
		dst = dst[:n]
		if _, err := io.ReadFull(r, dst); err != nil {
			return dst, bad("truncated record")
		}
		return dst, nil
	}
	for {
		off = cr.n - int64(r.Buffered())
		op, err := r.ReadByte()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			// the checkpoint's reader checks the file's size and checksum
			// at its end
			return fmt.Errorf("weir: %s: state changelog segment %s: %w", c.Path(), f.Ref, err)
		}
		if op < byte(pebblestate.OpSet) || op > byte(pebblestate.OpMerge) {
			return bad(fmt.Sprintf("unknown record kind %d", op))
		}
		if key, err = readBytes(key); err != nil {
			return err
		}
		if value, err = readBytes(value); err != nil {
			return err
		}
		if err := pebblestate.Apply(kv, pebblestate.Op(op), key, value); err != nil {
			return err
		}
	}
}
