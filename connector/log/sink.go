package wlog

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/weirstream/weir"
)

// SinkOption configures Sink (Partitioner, SinkBatchBytes).
type SinkOption interface{ applySink(*sinkConfig) }

type sinkConfig struct {
	partitioner func(r *Record, partitions int) int
	batchBytes  int
	now         func() time.Time
	lockWait    time.Duration
	hook        func(stage string) error // tests: failpoints inside Commit
}

type sinkOptionFunc func(*sinkConfig)

func (f sinkOptionFunc) applySink(c *sinkConfig) { f(c) }

// Partitioner sets how the sink picks the partition of a record (after
// the record function filled it in); f must return a partition in
// [0, partitions). The default is the key's xxhash64 modulo the number of
// partitions (as `weir produce` does), and for a nil key the value's.
func Partitioner(f func(r *Record, partitions int) int) SinkOption {
	return sinkOptionFunc(func(c *sinkConfig) { c.partitioner = f })
}

// SinkBatchBytes sets the size at which a writer closes a staged batch of a
// partition and starts the next (default 256 KiB). Batches are the unit of
// appends, so larger batches make commits cheaper.
func SinkBatchBytes(n int) SinkOption {
	return sinkOptionFunc(func(c *sinkConfig) {
		if n > 0 {
			c.batchBytes = n
		}
	})
}

// SinkClock sets the clock that stamps records the record function left
// with a zero Timestamp (default time.Now).
func SinkClock(now func() time.Time) SinkOption {
	return sinkOptionFunc(func(c *sinkConfig) { c.now = now })
}

const (
	defaultSinkBatchBytes = 256 << 10
	defaultLockWait       = 10 * time.Second
	txnDir                = ".txn" // DATA-DIR/TOPIC/.txn/PRODUCER/: staged output
	inProgressExt         = ".inprogress"
	pendingExt            = ".pending"
	epochFile             = "epoch"
	frameHeader           = 8 // uint32 partition, uint32 CRC-32C of those 4 bytes
)

// Sink returns an exactly-once sink (a weir.CommittingSink) into topic of
// the log in dataDir. record fills in the log record for a value: key,
// value, timestamp (ms; 0 stamps it with the time of the write) and
// headers. It gets a zeroed Record whose Key and Value are empty slices
// with spare capacity (append to them to avoid allocating), and must not
// keep r or its slices after it returns. The topic must exist.
//
// producer names the sink: subtask i of the sink is the producer
// "producer-i". It must be stable across restarts of the job (it finds the
// job's staged output and its batches in the topic) and used by one sink
// of one job only. It is made of letters, digits, '.', '_' and '-'.
//
// See the package documentation for how it is exactly once.
func Sink[T any](dataDir, topic, producer string, record func(v T, r *Record) error, opts ...SinkOption) weir.CommittingSink[T] {
	c := sinkConfig{batchBytes: defaultSinkBatchBytes, now: time.Now, lockWait: defaultLockWait}
	for _, o := range opts {
		o.applySink(&c)
	}
	s := &logSink[T]{dataDir: dataDir, topic: topic, producer: producer, record: record, cfg: c}
	switch {
	case checkExisting(topic) != nil:
		s.err = checkExisting(topic)
	case !oldTopicName.MatchString(producer) || len(producer) > 200:
		s.err = fmt.Errorf("wlog: invalid producer id %q (1 to 200 letters, digits, '.', '_', '-')", producer)
	case record == nil:
		s.err = errors.New("wlog: Sink without a record function")
	}
	return s
}

type logSink[T any] struct {
	dataDir, topic, producer string
	record                   func(T, *Record) error
	cfg                      sinkConfig
	err                      error
}

func (s *logSink[T]) Committer() weir.Committer {
	return &logCommitter{dataDir: s.dataDir, topic: s.topic, cfg: s.cfg}
}

func (s *logSink[T]) OpenWriter(_ context.Context, subtask, parallelism int) (weir.SinkWriter[T], error) {
	if s.err != nil {
		return nil, s.err
	}
	t, err := OpenTopic(s.dataDir, s.topic)
	if err != nil {
		return nil, err
	}
	producer := s.producer + "-" + strconv.Itoa(subtask)
	dir := filepath.Join(t.Dir, txnDir, producer)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("wlog: sink to topic %q: %w", s.topic, err)
	}
	var id [4]byte
	rand.Read(id[:])
	w := &sinkWriter[T]{
		s: s, t: t, subtask: subtask, parallelism: parallelism, producer: producer, dir: dir,
		id: hex.EncodeToString(id[:]), parts: make([]stagedBatch, t.Config.Partitions),
		lastIdx: make([]int64, t.Config.Partitions),
		kbuf:    make([]byte, 0, 64), vbuf: make([]byte, 0, 256),
	}
	w.prod = appendProducerSection(nil, producer, prodSeq{})
	return w, nil
}

// stagedBatch is the batch of one partition being filled: frame header,
// batch header, producer section, then the records.
type stagedBatch struct {
	buf   []byte
	count int
	maxTS int64
}

// stagedFile is a pending staging file of a committable.
type stagedFile struct {
	Name  string     `json:"name"`
	Ckpt  int64      `json:"ckpt"`
	Size  int64      `json:"size"`
	Parts []partLast `json:"parts"`
}

// partLast is a partition a staging file has batches for, and the index of
// its last one there.
type partLast struct {
	P    int    `json:"p"`
	Last uint32 `json:"last"`
}

// sinkCommittable is what PreCommit returns and Commit takes.
type sinkCommittable struct {
	Producer string       `json:"producer"`
	Epoch    uint64       `json:"epoch"`
	Files    []stagedFile `json:"files"`
}

type sinkWriter[T any] struct {
	s                    *logSink[T]
	t                    *Topic
	subtask, parallelism int
	producer             string
	dir                  string // staging directory
	id                   string // writer id, in the names of its files
	epoch                uint64
	prod                 []byte // producer section, sequence zero

	rec         Record
	kbuf, vbuf  []byte
	hbuf        []Header
	parts       []stagedBatch
	f           *os.File // current staging file, nil if none
	bw          *bufio.Writer
	path        string
	size        int64
	frames      uint32
	lastIdx     []int64 // per partition: last frame index in f, -1 if none
	opened      int
	staged      []stagedFile
	preID       int64
	pre, closed bool
	recovered   bool
	err         error
}

func (w *sinkWriter[T]) fail(err error) error {
	w.err = err
	return err
}

func (w *sinkWriter[T]) usable() error {
	if w.closed {
		return fmt.Errorf("wlog: sink to topic %q: writer used after Close", w.s.topic)
	}
	return w.err
}

// Write stages records: each is encoded into the open batch of its
// partition, and full batches go to the staging file.
func (w *sinkWriter[T]) Write(_ context.Context, items []T) error {
	if err := w.usable(); err != nil {
		return err
	}
	if !w.recovered {
		return w.fail(fmt.Errorf("wlog: sink to topic %q: Write before Recover", w.s.topic))
	}
	nparts := len(w.parts)
	var now int64
	for i := range items {
		w.rec = Record{Key: w.kbuf[:0], Value: w.vbuf[:0], Headers: w.hbuf[:0]}
		r := &w.rec
		if err := w.s.record(items[i], r); err != nil {
			return w.fail(fmt.Errorf("wlog: sink to topic %q: record function: %w", w.s.topic, err))
		}
		if r.Timestamp == 0 {
			if now == 0 {
				now = w.s.cfg.now().UnixMilli()
			}
			r.Timestamp = now
		}
		if len(r.Headers) > MaxHeaders {
			return w.fail(fmt.Errorf("wlog: sink to topic %q: record with %d headers, more than %d", w.s.topic, len(r.Headers), MaxHeaders))
		}
		var p int
		switch {
		case w.s.cfg.partitioner != nil:
			p = w.s.cfg.partitioner(r, nparts)
			if p < 0 || p >= nparts {
				return w.fail(fmt.Errorf("wlog: sink to topic %q: partitioner returned partition %d (the topic has %d)", w.s.topic, p, nparts))
			}
		case nparts == 1:
		case r.Key != nil:
			p = int(xxhash.Sum64(r.Key) % uint64(nparts))
		default:
			p = int(xxhash.Sum64(r.Value) % uint64(nparts))
		}
		b := &w.parts[p]
		if b.count == 0 {
			b.buf = append(b.buf[:0], make([]byte, frameHeader+batchHeaderSize)...)
			b.buf = append(b.buf, w.prod...)
			b.maxTS = r.Timestamp
		}
		b.buf = appendRecord(b.buf, uint64(b.count), r)
		b.count++
		b.maxTS = max(b.maxTS, r.Timestamp)
		// Keep scratch space that the record function outgrew.
		if len(r.Key) > cap(w.kbuf) {
			w.kbuf = make([]byte, 0, 2*len(r.Key))
		}
		if len(r.Value) > cap(w.vbuf) {
			w.vbuf = make([]byte, 0, 2*len(r.Value))
		}
		if len(r.Headers) > cap(w.hbuf) {
			w.hbuf = make([]Header, 0, 2*len(r.Headers))
		}
		clear(w.hbuf[:cap(w.hbuf)]) // drop references to the caller's header values
		if len(b.buf) >= w.s.cfg.batchBytes {
			if err := w.flush(p); err != nil {
				return w.fail(err)
			}
		}
	}
	w.rec = Record{}
	return nil
}

// flush closes the open batch of partition p and writes it to the staging
// file as the next frame.
func (w *sinkWriter[T]) flush(p int) error {
	b := &w.parts[p]
	if b.count == 0 {
		return nil
	}
	if w.f == nil {
		if err := w.openFile(); err != nil {
			return err
		}
	}
	batch := b.buf[frameHeader:]
	if len(batch)-4 > maxBatchBytes {
		return fmt.Errorf("wlog: sink to topic %q partition %d: batch of %d bytes is larger than %d", w.s.topic, p, len(batch), maxBatchBytes)
	}
	idx := w.frames
	binary.BigEndian.PutUint32(batch[batchHeaderSize+len(w.prod)-4:], idx)
	sealBatch(batch, flagProducer, b.count, 0, int64(b.count-1), b.maxTS)
	binary.BigEndian.PutUint32(b.buf[0:], uint32(p))
	binary.BigEndian.PutUint32(b.buf[4:], crc32.Checksum(b.buf[0:4], crcTable))
	if _, err := w.bw.Write(b.buf); err != nil {
		return fmt.Errorf("wlog: sink to topic %q: write %s: %w", w.s.topic, w.path, err)
	}
	w.size += int64(len(b.buf))
	w.frames++
	w.lastIdx[p] = int64(idx)
	b.count = 0
	b.buf = b.buf[:0]
	return nil
}

func (w *sinkWriter[T]) openFile() error {
	w.path = filepath.Join(w.dir, w.id+"-"+strconv.Itoa(w.opened)+inProgressExt)
	w.opened++
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("wlog: sink to topic %q: %w", w.s.topic, err)
	}
	if w.bw == nil {
		w.bw = bufio.NewWriterSize(f, 256<<10)
	} else {
		w.bw.Reset(f)
	}
	w.f, w.size, w.frames = f, 0, 0
	for i := range w.lastIdx {
		w.lastIdx[i] = -1
	}
	return nil
}

// PreCommit flushes every open batch, fsyncs and closes the staging file,
// renames it to its pending name (with the checkpoint id), and returns a
// committable listing it and the writer's earlier pending files.
func (w *sinkWriter[T]) PreCommit(_ context.Context, checkpointID int64) ([]byte, error) {
	if err := w.usable(); err != nil {
		return nil, err
	}
	for p := range w.parts {
		if err := w.flush(p); err != nil {
			return nil, w.fail(err)
		}
	}
	prev, hadPrev := w.preID, w.pre
	w.preID, w.pre = checkpointID, true
	// Files staged earlier that are still pending: their checkpoint was
	// aborted, or is not committed yet. Listing them again is harmless
	// (Commit is idempotent) and commits an aborted checkpoint's output.
	staged := w.staged[:0]
	for _, f := range w.staged {
		if _, err := os.Lstat(filepath.Join(w.dir, f.Name)); !errors.Is(err, fs.ErrNotExist) {
			staged = append(staged, f)
		}
	}
	w.staged = staged
	if w.f != nil {
		if checkpointID < 0 || hadPrev && checkpointID <= prev {
			return nil, w.fail(fmt.Errorf("wlog: sink to topic %q: PreCommit(%d) after PreCommit(%d) of subtask %d: checkpoint ids must be >= 0 and increase",
				w.s.topic, checkpointID, prev, w.subtask))
		}
		f, path := w.f, w.path
		w.f = nil
		err := w.bw.Flush()
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, w.fail(fmt.Errorf("wlog: sink to topic %q: stage %s: %w", w.s.topic, path, err))
		}
		name := fmt.Sprintf("%020d.%s%s", checkpointID, w.id, pendingExt)
		if err := os.Rename(path, filepath.Join(w.dir, name)); err != nil {
			return nil, w.fail(fmt.Errorf("wlog: sink to topic %q: pre-commit: %w", w.s.topic, err))
		}
		if err := syncDirErr(w.dir); err != nil {
			return nil, w.fail(fmt.Errorf("wlog: sink to topic %q: pre-commit: fsync %s: %w", w.s.topic, w.dir, err))
		}
		sf := stagedFile{Name: name, Ckpt: checkpointID, Size: w.size}
		for p, last := range w.lastIdx {
			if last >= 0 {
				sf.Parts = append(sf.Parts, partLast{P: p, Last: uint32(last)})
			}
		}
		w.staged = append(w.staged, sf)
	}
	if len(w.staged) == 0 {
		return nil, nil
	}
	return json.Marshal(sinkCommittable{Producer: w.producer, Epoch: w.epoch, Files: w.staged})
}

// Close releases the writer. Records written since the last PreCommit
// are not committed: a staging file in progress stays, for Recover.
func (w *sinkWriter[T]) Close(context.Context) error {
	if w.closed {
		return nil
	}
	w.closed = true
	for i := range w.parts {
		w.parts[i] = stagedBatch{}
	}
	if w.f == nil {
		return nil
	}
	f := w.f
	w.f = nil
	return f.Close()
}

// Recover deletes the staged output of earlier attempts that no completed
// checkpoint covers, and sets the writer's epoch.
func (w *sinkWriter[T]) Recover(ctx context.Context, restoredID int64) error {
	if err := w.usable(); err != nil {
		return err
	}
	root := filepath.Join(w.t.Dir, txnDir)
	dirs := []string{w.producer}
	if w.subtask == 0 {
		// Subtasks that the current parallelism no longer has.
		ents, err := os.ReadDir(root)
		if err != nil {
			return fmt.Errorf("wlog: sink to topic %q: recover: %w", w.s.topic, err)
		}
		for _, e := range ents {
			n, ok := strings.CutPrefix(e.Name(), w.s.producer+"-")
			if i, err := strconv.Atoi(n); ok && err == nil && i >= w.parallelism && strconv.Itoa(i) == n {
				dirs = append(dirs, e.Name())
			}
		}
	}
	for _, d := range dirs {
		if err := cleanStaging(filepath.Join(root, d), restoredID); err != nil {
			return fmt.Errorf("wlog: sink to topic %q: recover: %w", w.s.topic, err)
		}
	}
	epoch, err := w.loadEpoch(restoredID)
	if err != nil {
		return fmt.Errorf("wlog: sink to topic %q: recover producer %s: %w", w.s.topic, w.producer, err)
	}
	w.epoch = epoch
	binary.BigEndian.PutUint64(w.prod[1+len(w.producer):], epoch)
	w.recovered = true
	return ctx.Err()
}

// cleanStaging deletes the in-progress files in dir, and the pending files
// of checkpoints after restoredID (all of them when it is 0).
func cleanStaging(dir string, restoredID int64) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	removed := false
	for _, e := range ents {
		name := e.Name()
		del := strings.HasSuffix(name, inProgressExt)
		if s, ok := strings.CutSuffix(name, pendingExt); ok {
			ck, _, _ := strings.Cut(s, ".")
			id, err := strconv.ParseInt(ck, 10, 64)
			del = err == nil && (restoredID == 0 || id > restoredID)
		}
		if !del {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		removed = true
	}
	if removed {
		return syncDirErr(dir)
	}
	return nil
}

// loadEpoch returns the writer's epoch: the one in its epoch file when
// the job restored a checkpoint, else a new one, above every epoch of the
// producer in the file and in the topic (so that a job started afresh is
// never taken for a replay of an earlier run).
func (w *sinkWriter[T]) loadEpoch(restoredID int64) (uint64, error) {
	path := filepath.Join(w.dir, epochFile)
	var old uint64
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		old, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		if restoredID > 0 {
			return old, nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		return 0, err
	}
	for p := range w.t.Config.Partitions {
		e := partEntryFor(w.t.partDir(p))
		e.mu.Lock()
		err := e.refresh(w.t.partDir(p))
		if err == nil {
			if s, ok := e.last[w.producer]; ok {
				old = max(old, s.epoch)
			}
		}
		e.mu.Unlock()
		if err != nil {
			return 0, fmt.Errorf("partition %d: %w", p, err)
		}
	}
	epoch := old + 1
	tmp := path + ".tmp"
	if err := writeFileSync(tmp, []byte(strconv.FormatUint(epoch, 10)+"\n")); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return 0, err
	}
	return epoch, syncDirErr(w.dir)
}

// logCommitter appends staged batches to the topic. It keeps no state of
// its own; the partitions' producer state is shared by the process.
type logCommitter struct {
	dataDir, topic string
	cfg            sinkConfig
}

// Commit appends the batches of each staging file of the committable that
// the topic does not hold yet, in order, then deletes the files.
func (c *logCommitter) Commit(ctx context.Context, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	var cm sinkCommittable
	if err := json.Unmarshal(data, &cm); err != nil {
		return fmt.Errorf("wlog: commit to topic %q: malformed committable: %w", c.topic, err)
	}
	if len(cm.Files) == 0 {
		return nil
	}
	if !oldTopicName.MatchString(cm.Producer) {
		return fmt.Errorf("wlog: commit to topic %q: malformed committable: producer %q", c.topic, cm.Producer)
	}
	t, err := OpenTopic(c.dataDir, c.topic)
	if err != nil {
		return fmt.Errorf("wlog: commit: %w", err)
	}
	var parts []int
	for _, f := range cm.Files {
		for _, pl := range f.Parts {
			if err := t.checkPartition(pl.P); err != nil {
				return fmt.Errorf("wlog: commit: %w", err)
			}
			parts = append(parts, pl.P)
		}
	}
	slices.Sort(parts)
	parts = slices.Compact(parts)
	// Hold the partitions in increasing order (no deadlock between
	// committers of one process), each through its in-process entry and
	// then its file lock.
	held := make(map[int]*heldPart, len(parts))
	defer func() {
		for _, h := range held {
			h.release()
		}
	}()
	for _, p := range parts {
		h, err := acquire(ctx, t, p, c.cfg.lockWait)
		if err != nil {
			return fmt.Errorf("wlog: commit to topic %q: %w", c.topic, err)
		}
		held[p] = h
	}
	dir := filepath.Join(t.Dir, txnDir, cm.Producer)
	var done []string
	var buf []byte
	for _, f := range cm.Files {
		path := filepath.Join(dir, f.Name)
		fh, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			// Committed before (and deleted): the topic must hold it.
			for _, pl := range f.Parts {
				want := prodSeq{epoch: cm.Epoch, ckpt: f.Ckpt, idx: pl.Last}
				if got, ok := held[pl.P].e.last[cm.Producer]; !ok || got.less(want) {
					return fmt.Errorf("wlog: commit to topic %q partition %d: staging file %s is gone but the partition does not hold batch %v of producer %s (its last is %v): the output is lost",
						c.topic, pl.P, path, want, cm.Producer, got)
				}
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("wlog: commit to topic %q: %w", c.topic, err)
		}
		buf, err = c.commitFile(fh, path, f, cm, held, buf)
		fh.Close()
		if err != nil {
			for _, h := range held {
				h.e.invalidate()
			}
			return err
		}
		done = append(done, path)
		if err := c.stage("file-appended"); err != nil {
			return err
		}
	}
	for _, p := range parts {
		if err := held[p].w.Sync(); err != nil {
			for _, h := range held {
				h.e.invalidate()
			}
			return fmt.Errorf("wlog: commit to topic %q partition %d: %w", c.topic, p, err)
		}
	}
	if err := c.stage("synced"); err != nil {
		return err
	}
	for _, path := range done {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("wlog: commit to topic %q: %w", c.topic, err)
		}
	}
	if len(done) > 0 {
		if err := syncDirErr(dir); err != nil {
			return fmt.Errorf("wlog: commit to topic %q: fsync %s: %w", c.topic, dir, err)
		}
	}
	return nil
}

// stage is a failpoint for tests: an error from the hook ends Commit
// there, as a crash would.
func (c *logCommitter) stage(s string) error {
	if c.cfg.hook != nil {
		return c.cfg.hook(s)
	}
	return nil
}

// commitFile appends the frames of one staging file that the partitions
// do not hold yet.
func (c *logCommitter) commitFile(fh *os.File, path string, f stagedFile, cm sinkCommittable, held map[int]*heldPart, buf []byte) ([]byte, error) {
	st, err := fh.Stat()
	if err != nil {
		return buf, fmt.Errorf("wlog: commit to topic %q: %w", c.topic, err)
	}
	if st.Size() != f.Size {
		return buf, fmt.Errorf("wlog: commit to topic %q: staging file %s has %d bytes, the committable says %d", c.topic, path, st.Size(), f.Size)
	}
	br := bufio.NewReaderSize(fh, 256<<10)
	var pos int64
	for pos < f.Size {
		bad := func(what string, args ...any) error {
			return fmt.Errorf("wlog: commit to topic %q: staging file %s at position %d: %w: %s", c.topic, path, pos, ErrCorrupt, fmt.Sprintf(what, args...))
		}
		var hdr [frameHeader + 4]byte
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return buf, bad("frame header: %v", err)
		}
		p := int(binary.BigEndian.Uint32(hdr[0:]))
		if crc32.Checksum(hdr[0:4], crcTable) != binary.BigEndian.Uint32(hdr[4:]) {
			return buf, bad("frame header CRC mismatch")
		}
		n := int64(binary.BigEndian.Uint32(hdr[frameHeader:]))
		if n < batchHeaderSize-4 || n > maxBatchBytes {
			return buf, bad("batch length %d", n)
		}
		if int64(cap(buf)) < 4+n {
			buf = make([]byte, 4+n)
		}
		buf = buf[:4+n]
		copy(buf, hdr[frameHeader:])
		if _, err := io.ReadFull(br, buf[4:]); err != nil {
			return buf, bad("batch: %v", err)
		}
		h, err := checkBatch(buf)
		if err != nil {
			return buf, bad("%v", err)
		}
		raw, prod, seq, err := producerSection(buf)
		if err != nil || raw == nil || string(prod) != cm.Producer || seq.epoch != cm.Epoch {
			return buf, bad("not a batch of producer %s epoch %d", cm.Producer, cm.Epoch)
		}
		hp := held[p]
		if hp == nil {
			return buf, bad("batch for partition %d, which the committable does not list", p)
		}
		seq.ckpt = f.Ckpt
		binary.BigEndian.PutUint64(raw[1+len(prod)+8:], uint64(f.Ckpt))
		if last, ok := hp.e.last[cm.Producer]; !ok || last.less(seq) {
			off, err := hp.w.appendEncoded(buf, h)
			if err != nil {
				return buf, fmt.Errorf("wlog: commit to topic %q partition %d at offset %d: %w", c.topic, p, off, err)
			}
			hp.e.appended(hp.w, cm.Producer, seq)
			if err := c.stage("batch-appended"); err != nil {
				return buf, err
			}
		}
		pos += frameHeader + int64(len(buf))
	}
	return buf, nil
}

// heldPart is a partition held by a committer: its in-process entry
// (locked) and its writer (the file lock).
type heldPart struct {
	e *partEntry
	w *Writer
}

func (h *heldPart) release() {
	h.w.Close()
	h.e.mu.Unlock()
}

// acquire locks partition p's in-process entry, opens its writer (waiting
// up to wait for a writer of another process to let go) and brings the
// entry's producer state up to date.
func acquire(ctx context.Context, t *Topic, p int, wait time.Duration) (*heldPart, error) {
	dir := t.partDir(p)
	e := partEntryFor(dir)
	e.mu.Lock()
	deadline := time.Now().Add(wait)
	pause := time.Millisecond
	for {
		w, err := t.OpenWriter(p, writerOptionFunc(func(c *writerConfig) { c.callerSyncs = true }))
		if err == nil {
			if err := e.refresh(dir); err != nil {
				w.Close()
				e.mu.Unlock()
				return nil, fmt.Errorf("partition %d: read producer state: %w", p, err)
			}
			return &heldPart{e: e, w: w}, nil
		}
		if !errors.Is(err, ErrLocked) || time.Now().After(deadline) {
			e.mu.Unlock()
			return nil, err
		}
		select {
		case <-ctx.Done():
			e.mu.Unlock()
			return nil, context.Cause(ctx)
		case <-time.After(pause):
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// partEntry is what the process knows of a partition's producers: the
// sequence of the last batch of each, as of a scan that stopped at
// segment base, position pos, before offset next. A process keeps one
// entry per partition directory, so that a commit scans only what was
// appended since the last one.
type partEntry struct {
	mu              sync.Mutex
	valid           bool
	base, pos, next int64
	last            map[string]prodSeq
}

var registry struct {
	sync.Mutex
	parts map[string]*partEntry
}

func partEntryFor(dir string) *partEntry {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	registry.Lock()
	defer registry.Unlock()
	if registry.parts == nil {
		registry.parts = map[string]*partEntry{}
	}
	e := registry.parts[dir]
	if e == nil {
		e = &partEntry{}
		registry.parts[dir] = e
	}
	return e
}

// invalidate makes the next refresh scan the whole partition again,
// forgetting even what the entry knew (after a failed commit, appended
// batches may not be on disk).
func (e *partEntry) invalidate() {
	e.valid = false
	e.last = nil
}

// appended records a batch the holder of the partition just appended.
func (e *partEntry) appended(w *Writer, producer string, seq prodSeq) {
	w.mu.Lock()
	e.base, e.pos, e.next = w.mu.base, w.mu.pos, w.mu.next
	w.mu.Unlock()
	if e.last == nil {
		e.last = map[string]prodSeq{}
	}
	e.last[producer] = seq
}

// refresh scans the batches appended to the partition since the entry's
// last scan (the whole partition the first time, or when segments were
// rewritten or deleted under it). It reads only complete batches whose CRC
// matches. Sequences only grow, so what the entry knew stays true.
func (e *partEntry) refresh(dir string) error {
	if e.last == nil {
		e.last = map[string]prodSeq{}
	}
	bases, err := listSegments(dir)
	if err != nil {
		return err
	}
	start, pos := 0, int64(0)
	if e.valid {
		e.valid = false
		if i, ok := slices.BinarySearch(bases, e.base); ok {
			if f, err := os.Open(logPath(dir, e.base)); err == nil {
				h, _, err := batchAt(f, e.pos, nil)
				st, serr := f.Stat()
				f.Close()
				switch {
				case err == nil && h.baseOffset == e.next:
					start, pos, e.valid = i, e.pos, true
				case err != nil && serr == nil && st.Size() <= e.pos:
					// The entry's segment ended there: go on with the next.
					start, pos, e.valid = i+1, 0, true
				}
			}
		}
	}
	if !e.valid {
		e.base, e.pos, e.next = 0, 0, 0
	}
	var buf []byte
	for i := start; i < len(bases); i++ {
		base := bases[i]
		f, err := os.Open(logPath(dir, base))
		if errors.Is(err, fs.ErrNotExist) {
			pos = 0
			continue // deleted by retention meanwhile
		}
		if err != nil {
			return err
		}
		if pos == 0 {
			e.base, e.pos, e.next = base, 0, max(e.next, base)
		}
		for {
			h, b, err := batchAt(f, pos, buf)
			buf = b
			if err != nil {
				// The end of the valid data of this segment, unless valid
				// data follows: then batches of a producer may be hidden
				// behind the damage, and appending could duplicate them.
				if derr := damageError(f, dir, base, pos, e.next, err); derr != nil {
					f.Close()
					return derr
				}
				break
			}
			if _, prod, seq, err := producerSection(b); err == nil && prod != nil {
				if last, ok := e.last[string(prod)]; !ok || last.less(seq) {
					e.last[string(prod)] = seq
				}
			}
			pos += h.size()
			e.pos, e.next = pos, h.lastOffset+1
		}
		f.Close()
		pos = 0
	}
	e.valid = true
	return nil
}

// syncDirErr fsyncs a directory, returning the error.
func syncDirErr(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
