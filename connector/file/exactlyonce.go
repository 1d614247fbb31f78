package file

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/s3fs"
)

// Names of the files of an ExactlyOnce sink. Committed part files are
// visible; in-progress and pending files are hidden (their names start with
// a dot), so that readers of the directory that skip dot files, as most
// tools do, only ever see committed output.
const (
	partPrefix       = "part-"
	hiddenPrefix     = "." + partPrefix
	inProgressSuffix = ".inprogress"
	pendingSuffix    = ".pending"
)

// SinkOption configures an ExactlyOnce sink (Format, RollSize). It is a
// type of its own, so that a source Option given to a sink, or the other way
// round, does not compile.
type SinkOption interface{ applySink(*sinkConfig) }

type sinkConfig struct {
	format      any // func(T) ([]byte, error), checked by ExactlyOnce[T]
	bulk        any // BulkFactory[T]
	partition   any // func(T) (string, error)
	suffix      string
	rollSize    int64
	success     string
	commitDelay time.Duration
	rollEvery   time.Duration
	now         func() time.Time
	partTime    func(partition string) (time.Time, error)
	fs          fsOps
}

type sinkOptionFunc func(*sinkConfig)

func (f sinkOptionFunc) applySink(c *sinkConfig) { f(c) }

// Format makes an ExactlyOnce sink write f(record) followed by '\n' for each
// record, instead of the record's JSON encoding. f's result should not end
// with a '\n' of its own. An error of f fails the write. T must be the
// record type of the sink (opening the sink's writers fails otherwise).
func Format[T any](f func(T) ([]byte, error)) SinkOption {
	return sinkOptionFunc(func(c *sinkConfig) { c.format = f })
}

// RollSize makes an ExactlyOnce sink writer start a new part file, within
// the same checkpoint, once its current part file holds at least bytes
// bytes: a part file ends after the record that brings it to bytes or more
// (so a record is never split, and a record larger than bytes gets a part
// file of its own). Without RollSize, or with bytes <= 0, a writer writes
// one part file per checkpoint.
func RollSize(bytes int64) SinkOption {
	return sinkOptionFunc(func(c *sinkConfig) { c.rollSize = bytes })
}

// RollInterval makes an ExactlyOnce sink writer start a new part file,
// within the same checkpoint, once its current one has been open for d
// (Flink's 'sink.rolling-policy.rollover-interval'): the age is checked
// when records are written, after each record, against the sink's clock
// (PartitionCommit's now, else time.Now) read once per Write. d <= 0:
// no rolling by time.
func RollInterval(d time.Duration) SinkOption {
	return sinkOptionFunc(func(c *sinkConfig) { c.rollEvery = d })
}

// ExactlyOnce returns a sink with two-phase commit (a weir.CommittingSink)
// that writes its records as JSON Lines to part files in dir, modelled on
// Flink's FileSink. Run by a job with checkpointing, each record ends up in
// exactly one committed part file whatever crashes and restarts happen in
// between, provided the job restores its latest complete checkpoint after a
// crash; the output of a checkpoint becomes visible when the checkpoint
// completes. Without checkpointing, the job pre-commits and commits once, as
// checkpoint 0, at the end of a bounded input: the output becomes visible
// when the job succeeds, and a failed job leaves only hidden files. Records
// are encoded with encoding/json (HTML characters not escaped), one per
// line, unless Format says otherwise.
//
// # Files
//
// dir is created if it does not exist. It belongs to the sink: two sinks, or
// two jobs, must not write to the same directory. Each writer (sink subtask)
// gets a random writer id when it is opened, and writes to hidden files:
//
//	.part-<subtask>-<writer>-<n>.inprogress          being written
//	.part-<ckpt>-<subtask>-<seq>.<writer>.pending    pre-committed, not committed
//	part-<ckpt>-<subtask>-<seq>                      committed (visible)
//
// A writer creates its in-progress file on the first record after a
// checkpoint, so a checkpoint in which a subtask got no records produces no
// file. RollSize starts further part files within a checkpoint. At
// checkpoint ckpt, PreCommit flushes, fsyncs and closes the in-progress
// files, renames them to pending files (seq numbering them in the order they
// were written, from 0), fsyncs dir and returns a committable: a JSON object
// naming dir absolutely and listing each pending file with its final name
// and size. (Commit renames in the directory the committable names, not in
// the committer's: a job restored from a savepoint with a new directory, as
// a blue/green deployment does, commits the savepoint's output where it
// was written and writes its new output to the new directory, as Flink's
// FileSink does with absolute paths. A relative dir is made absolute when
// the sink is created.) The committable
// also lists again the files of the writer's earlier PreCommits that are
// still pending, so that the output of a checkpoint that was aborted (whose
// committable the job dropped) is committed with the next checkpoint that
// completes. PreCommit returns nil when it has nothing to list. Commit renames
// each pending file to its final name, which is the pending name without
// the leading dot and the writer id, then fsyncs dir. Checkpoint ids are at
// least 0 and must increase from one PreCommit of a writer to the next that
// has data to stage.
//
// Final names are unique across attempts and rescaling, because each
// checkpoint is committed by one attempt of the job, at one parallelism. In
// the final names the checkpoint id is padded to 10 digits, the subtask and
// the sequence number to 4, so that below those bounds the names sort in
// the order the records were written: concatenating the part files in name
// order gives every record once, checkpoint after checkpoint, and in each
// checkpoint the records of each subtask in the order it wrote them.
//
// # Commit
//
// Commit is idempotent: a pending file that is gone while its final file
// exists with the size the committable records was committed before, and
// is skipped. A committable whose pending and final file are both missing
// is an error naming them (the output is lost, and this must not pass
// silently), and so is a final file that exists with another size, or that
// already exists while its pending file is still there (Commit never
// overwrites a committed file, as restoring a checkpoint older than the
// latest committed one, or reusing the directory of an earlier job, would
// have it do). These errors are weir.Permanent: no restart can fix them,
// so the job fails at once instead of restarting in a loop (lost output
// only while its directory exists: a missing directory may be an
// unmounted disk).
//
// # Recovery
//
// Recover(restoredID) deletes the hidden files that earlier attempts left
// behind and that no committed output covers. A writer of subtask i of p
// only considers hidden files of subtask i, and subtask 0 also those of
// subtasks >= p, which no subtask of the current attempt has after a
// rescale; so the writers of an attempt may recover concurrently, and start
// writing as soon as their own Recover returns, without ever deleting each
// other's files. A writer never deletes its own files, nor files that are
// not named as above. Of the files it considers, Recover deletes
//
//   - every in-progress file: it holds records written after the last
//     PreCommit of a crashed attempt (or during a crashed PreCommit), which
//     the restored job reads and writes again;
//   - every pending file of a checkpoint after restoredID (or of any
//     checkpoint, when restoredID is 0): a checkpoint that was pre-committed
//     but never completed, whose records are written again after the
//     restore.
//
// Pending files of checkpoint restoredID were committed by the job before
// it called Recover (it commits the restored checkpoint's committables
// first), so they are no longer pending. A pending file of a checkpoint
// before restoredID, or of restoredID itself, is left in place: its records
// precede the restored position and are not written again, so it can only
// be output that the job has not committed (yet), and deleting it would lose
// them for good.
//
// Close after a PreCommit with no write in between leaves nothing hidden
// that Commit does not rename. Close without such a PreCommit (the job
// failed) closes the current in-progress file without flushing it and
// leaves it, and any rolled in-progress files, to the next Recover: their
// records are not committed. The job must stop the writers of a failed
// attempt before the next attempt recovers.
//
// # Object storage
//
// dir may be `s3://bucket/prefix`: part files are then staged as
// multipart uploads at PreCommit and completed by Commit, Recover aborts
// the uploads it would delete as pending files (see the package
// documentation, "Object storage"), and OpenWriter checks that the
// bucket exists.
//
// # Errors
//
// Errors name the file or directory concerned: a directory that cannot be
// created, read or written, a full disk (ENOSPC from a write or an fsync;
// find it with errors.Is(err, syscall.ENOSPC)), a failed rename. After a
// failed Write or PreCommit the writer refuses further writes and
// pre-commits, so that a part file with missing records is never staged;
// the job fails, restarts and recovers.
func ExactlyOnce[T any](dir string, opts ...SinkOption) weir.CommittingSink[T] {
	cfg := sinkConfig{fs: osFS}
	for _, o := range opts {
		o.applySink(&cfg)
	}
	// Committables name the directory absolutely (see Commit): a job
	// restored with another directory, or from another working directory,
	// commits old output where it was written.
	var obj *s3fs.FS
	var objErr error
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = filepath.Clean(dir)
	}
	if s3fs.IsURL(dir) {
		if abs, objErr = s3fs.Clean(dir); objErr == nil {
			obj, objErr = s3fs.FromEnv()
		}
	}
	s := &eoSink[T]{dir: abs, obj: obj, err: objErr, rollSize: cfg.rollSize, fs: cfg.fs, suffix: cfg.suffix,
		success: cfg.success, delay: cfg.commitDelay.Milliseconds(), now: cfg.now, partTime: cfg.partTime, rollEvery: cfg.rollEvery}
	if s.partTime != nil {
		s.rounds = &ptRounds{open: map[int64]*ptRound{}}
		if s.success == "" {
			s.err = errors.New("file: ExactlyOnce: PartitionTime needs PartitionCommit")
		}
	}
	if s.now == nil {
		s.now = time.Now
	}
	var zero T
	switch f := cfg.format.(type) {
	case nil:
	case func(T) ([]byte, error):
		s.format = f
	default:
		s.err = fmt.Errorf("file: ExactlyOnce[%T]: Format function %T does not take a %T", zero, f, zero)
	}
	switch f := cfg.bulk.(type) {
	case nil:
	case BulkFactory[T]:
		s.bulk = f
	default:
		s.err = fmt.Errorf("file: ExactlyOnce[%T]: Bulk factory %T does not take a %T", zero, f, zero)
	}
	switch f := cfg.partition.(type) {
	case nil:
	case func(T) (string, error):
		s.partition = f
	default:
		s.err = fmt.Errorf("file: ExactlyOnce[%T]: PartitionBy function %T does not take a %T", zero, f, zero)
	}
	if s.success != "" && (s.partition == nil || !filepath.IsLocal(s.success) || strings.ContainsRune(s.success, filepath.Separator)) {
		s.err = fmt.Errorf("file: ExactlyOnce: PartitionCommit(%q) needs PartitionBy and a plain file name", s.success)
	}
	return s
}

type eoSink[T any] struct {
	dir       string
	format    func(T) ([]byte, error)
	bulk      BulkFactory[T]
	partition func(T) (string, error)
	suffix    string
	rollSize  int64
	success   string // success file name, "" for none
	delay     int64  // partition commit delay, milliseconds
	now       func() time.Time
	rollEvery time.Duration // RollInterval
	// partTime, with PartitionTime, is the time of a partition; rounds
	// gathers each checkpoint's committables for the least watermark.
	partTime func(partition string) (time.Time, error)
	rounds   *ptRounds
	fs       fsOps
	// obj is the object store of an s3:// dir (objects.go), nil for a
	// local one.
	obj *s3fs.FS
	err error // configuration error, returned by OpenWriter
}

// Committer implements weir.CommittingSink.
func (s *eoSink[T]) Committer() weir.Committer {
	return &eoCommitter{dir: s.dir, fs: s.fs, obj: s.obj, success: s.success, delay: s.delay, now: s.now, partTime: s.partTime, rounds: s.rounds}
}

// OpenWriter implements weir.Sink. It returns a weir.CommittingWriter.
func (s *eoSink[T]) OpenWriter(_ context.Context, subtask, parallelism int) (weir.SinkWriter[T], error) {
	if s.err != nil {
		return nil, s.err
	}
	if subtask < 0 || subtask >= parallelism {
		return nil, fmt.Errorf("file: ExactlyOnce: subtask %d of %d", subtask, parallelism)
	}
	if s.obj != nil {
		if err := s.obj.CheckBucket(s.dir); err != nil {
			return nil, fmt.Errorf("file: ExactlyOnce: %w", err)
		}
	} else if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, pathError("create directory", s.dir, err)
	} else if fi, err := os.Stat(s.dir); err != nil {
		return nil, pathError("stat", s.dir, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("file: ExactlyOnce: %s is not a directory", s.dir)
	}
	var id [4]byte
	rand.Read(id[:])
	return &eoWriter[T]{s: s, subtask: subtask, parallelism: parallelism, id: hex.EncodeToString(id[:]),
		cur: map[string]*inProgress[T]{}, parts: map[string]*openPartition{}, wm: math.MinInt64}, nil
}

// part is an in-progress file that is complete: flushed, fsynced, closed.
type part struct {
	bucket string // its directory relative to the sink's, "" for the sink's
	path   string
	size   int64
	spool  *os.File // on object storage: the local file to upload
}

// inProgress is a part file being written.
type inProgress[T any] struct {
	bucket string
	f      partFile
	path   string
	bw     *bufio.Writer
	cw     countingWriter // cw.w is bw; cw.n is the size of f
	enc    *json.Encoder  // writes to cw (JSON Lines)
	bulk   BulkWriter[T]  // writes to cw (a bulk format)
	opened time.Time      // when it was opened (with RollInterval)
	spool  *os.File       // on object storage: f, an unlinked local file
}

// openPartition is a partition written to and not known committed.
type openPartition struct {
	created int64 // unix milliseconds of the first write
	listed  bool  // listed due in a committable: dropped once its success file exists
}

type eoWriter[T any] struct {
	mu                   sync.Mutex
	s                    *eoSink[T]
	subtask, parallelism int
	id                   string // writer id, in the names of its hidden files

	opened int                       // in-progress files opened so far (names them)
	cur    map[string]*inProgress[T] // current in-progress file of each bucket
	free   []*bufio.Writer
	done   []part // finished in-progress files since the last PreCommit
	// staged are the files of earlier PreCommits that were still pending
	// at the last PreCommit: PreCommit lists them again until they are
	// gone, so that the output of a checkpoint that was aborted (whose
	// committable the job dropped) is committed with the next one.
	staged []committableFile
	// parts are the partitions to commit with a success file.
	parts map[string]*openPartition

	preID  int64 // id of the last PreCommit
	pre    bool  // whether there was a PreCommit
	wm     int64 // the watermark (unix ms), with PartitionTime
	err    error // sticky failure of Write or PreCommit
	closed bool
}

var _ weir.CommittingWriter[int] = (*eoWriter[int])(nil)

// countingWriter counts what goes through it, and keeps the last write
// error (to tell write errors of json.Encoder from encoding errors).
type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil {
		c.err = err
	}
	return n, err
}

func (w *eoWriter[T]) usable() error {
	if w.closed {
		return errors.New("file: ExactlyOnce: writer used after Close")
	}
	return w.err
}

func (w *eoWriter[T]) fail(err error) error {
	w.err = err
	return err
}

// Write implements weir.SinkWriter.
func (w *eoWriter[T]) Write(_ context.Context, items []T) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	var now time.Time
	if w.s.rollEvery > 0 {
		now = w.s.now()
	}
	for i := range items {
		bucket := ""
		if w.s.partition != nil {
			b, err := w.s.partition(items[i])
			if err != nil {
				return w.fail(fmt.Errorf("file: partition of a record for %s: %w", w.s.dir, err))
			}
			if b = filepath.Clean(b); b == "." {
				b = ""
			} else if !filepath.IsLocal(b) {
				return w.fail(fmt.Errorf("file: partition %q of a record for %s is not a local path", b, w.s.dir))
			}
			bucket = b
		}
		ip := w.cur[bucket]
		if ip == nil {
			var err error
			if ip, err = w.open(bucket); err != nil {
				return w.fail(err)
			}
		}
		if err := w.encode(ip, &items[i]); err != nil {
			return w.fail(err)
		}
		if w.s.rollSize > 0 && ip.cw.n >= w.s.rollSize || w.s.rollEvery > 0 && now.Sub(ip.opened) >= w.s.rollEvery {
			if err := w.finish(ip); err != nil {
				return w.fail(err)
			}
		}
	}
	return nil
}

// open creates the next in-progress file of a bucket.
func (w *eoWriter[T]) open(bucket string) (*inProgress[T], error) {
	name := hiddenPrefix + strconv.Itoa(w.subtask) + "-" + w.id + "-" + strconv.Itoa(w.opened) + inProgressSuffix
	w.opened++
	dir := w.s.join(bucket)
	if bucket != "" {
		if w.s.obj == nil {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, pathError("create directory", dir, err)
			}
		}
		if w.s.success != "" {
			if p := w.parts[bucket]; p == nil {
				w.parts[bucket] = &openPartition{created: w.s.now().UnixMilli()}
			} else if p.listed {
				p.listed = false // new data: to be committed again
				if w.s.partTime != nil {
					p.created = w.s.now().UnixMilli()
				}
			}
		}
	}
	path := w.s.join(bucket, name)
	var f partFile
	var spool *os.File
	var err error
	if w.s.obj != nil {
		f, spool, err = newSpool(path)
	} else {
		f, err = w.s.fs.create(path)
	}
	if err != nil {
		return nil, pathError("create", path, err)
	}
	ip := &inProgress[T]{bucket: bucket, f: f, path: path, spool: spool}
	if w.s.rollEvery > 0 {
		ip.opened = w.s.now()
	}
	if n := len(w.free); n > 0 {
		ip.bw, w.free = w.free[n-1], w.free[:n-1]
		ip.bw.Reset(f)
	} else {
		ip.bw = bufio.NewWriterSize(f, writeBufferSize)
	}
	ip.cw.w = ip.bw
	switch {
	case w.s.bulk != nil:
		if ip.bulk, err = w.s.bulk(&ip.cw, bucket); err != nil {
			f.Close()
			return nil, fmt.Errorf("file: start %s: %w", path, err)
		}
	case w.s.format == nil:
		ip.enc = json.NewEncoder(&ip.cw)
		ip.enc.SetEscapeHTML(false)
	}
	w.cur[bucket] = ip
	return ip, nil
}

func (w *eoWriter[T]) encode(ip *inProgress[T], v *T) error {
	if ip.bulk != nil {
		if err := ip.bulk.Write(*v); err != nil {
			if ip.cw.err != nil {
				return pathError("write", ip.path, ip.cw.err)
			}
			return fmt.Errorf("file: encode a record for %s: %w", ip.path, err)
		}
		return nil
	}
	if w.s.format == nil {
		// Encode writes the value and a '\n' at once, or nothing when the
		// value cannot be encoded.
		if err := ip.enc.Encode(v); err != nil {
			if ip.cw.err != nil {
				return pathError("write", ip.path, err)
			}
			return fmt.Errorf("file: encode a record for %s: %w", ip.path, err)
		}
		return nil
	}
	b, err := w.s.format(*v)
	if err != nil {
		return fmt.Errorf("file: format a record for %s: %w", ip.path, err)
	}
	if _, err := ip.cw.Write(b); err != nil {
		return pathError("write", ip.path, err)
	}
	if _, err := ip.cw.Write(newline); err != nil {
		return pathError("write", ip.path, err)
	}
	return nil
}

var newline = []byte{'\n'}

// finish completes an in-progress file (a bulk format's trailer), flushes,
// fsyncs and closes it, and adds it to done.
func (w *eoWriter[T]) finish(ip *inProgress[T]) error {
	delete(w.cur, ip.bucket)
	var err error
	if ip.bulk != nil {
		if err = ip.bulk.Finish(); err != nil {
			if ip.cw.err != nil {
				err = pathError("write", ip.path, ip.cw.err)
			} else {
				err = fmt.Errorf("file: finish %s: %w", ip.path, err)
			}
		}
	}
	if err == nil {
		if err = ip.bw.Flush(); err != nil {
			err = pathError("write", ip.path, err)
		} else if ip.spool == nil {
			// (a spool is uploaded by PreCommit: its durability is the
			// object store's)
			if err = ip.f.Sync(); err != nil {
				err = pathError("fsync", ip.path, err)
			}
		}
	}
	if ip.spool == nil || err != nil {
		if cerr := ip.f.Close(); cerr != nil && err == nil {
			err = pathError("close", ip.path, cerr)
		}
	}
	ip.bw.Reset(nil)
	w.free = append(w.free, ip.bw)
	if err != nil {
		return err
	}
	w.done = append(w.done, part{bucket: ip.bucket, path: ip.path, size: ip.cw.n, spool: ip.spool})
	return nil
}

// committable is what PreCommit returns and Commit takes.
type committable struct {
	// Dir is the absolute directory the files were written to. Committables
	// of earlier builds have none: their files are in the committer's
	// directory.
	Dir   string            `json:"dir,omitempty"`
	Files []committableFile `json:"files"`
	// Checkpoint is the id of the PreCommit that made the committable.
	Checkpoint int64 `json:"checkpoint,omitempty"`
	// Partitions are the partitions to commit with a success file, once
	// their delay has passed.
	Partitions []committablePartition `json:"partitions,omitempty"`
	// Watermark, Subtask and Parallelism (with PartitionTime): the
	// writer's watermark at the checkpoint, and which of how many writers
	// it is.
	Watermark   *int64 `json:"watermark,omitempty"`
	Subtask     int    `json:"subtask,omitempty"`
	Parallelism int    `json:"parallelism,omitempty"`
}

// committableFile is one pending file: names relative to the sink's
// directory (in a partition's directory when the sink is partitioned),
// and its size in bytes.
type committableFile struct {
	Pending string `json:"pending"`
	Final   string `json:"final"`
	Size    int64  `json:"size"`
	// On object storage: no pending file, a multipart upload of Final
	// with all its parts, to be completed.
	Upload string   `json:"upload,omitempty"`
	Parts  []string `json:"parts,omitempty"`
}

// committablePartition is a partition directory, relative to the sink's,
// and when it was first written (unix milliseconds).
type committablePartition struct {
	Dir     string `json:"dir"`
	Created int64  `json:"created"`
}

// finalName is the name of part file seq of subtask in checkpoint ckpt.
func finalName(ckpt int64, subtask, seq int) string {
	return fmt.Sprintf("%s%010d-%04d-%04d", partPrefix, ckpt, subtask, seq)
}

// PreCommit implements weir.CommittingWriter.
func (w *eoWriter[T]) PreCommit(_ context.Context, checkpointID int64) ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return nil, err
	}
	if len(w.cur) > 0 {
		buckets := make([]string, 0, len(w.cur))
		for b := range w.cur {
			buckets = append(buckets, b)
		}
		slices.Sort(buckets)
		for _, b := range buckets {
			if err := w.finish(w.cur[b]); err != nil {
				return nil, w.fail(err)
			}
		}
	}
	prev, hadPrev := w.preID, w.pre
	w.preID, w.pre = checkpointID, true
	// Files staged earlier that are still pending: their checkpoint was
	// aborted, or it is not committed yet (listing them twice is harmless,
	// Commit is idempotent).
	staged := w.staged[:0]
	for _, f := range w.staged {
		if w.s.obj != nil {
			if open, err := w.s.obj.UploadExists(w.s.join(f.Final), f.Upload); open || err != nil {
				staged = append(staged, f)
			}
		} else if _, err := os.Lstat(filepath.Join(w.s.dir, f.Pending)); !errors.Is(err, fs.ErrNotExist) {
			staged = append(staged, f)
		}
	}
	w.staged = staged
	if len(w.done) > 0 {
		if checkpointID < 0 || hadPrev && checkpointID <= prev {
			return nil, w.fail(fmt.Errorf("file: ExactlyOnce: PreCommit(%d) after PreCommit(%d) of subtask %d: checkpoint ids must be >= 0 and increase",
				checkpointID, prev, w.subtask))
		}
		dirs := map[string]bool{}
		for seq, p := range w.done {
			final := finalName(checkpointID, w.subtask, seq) + w.s.suffix
			pending := "." + final + "." + w.id + pendingSuffix
			if p.bucket != "" {
				final, pending = filepath.Join(p.bucket, final), filepath.Join(p.bucket, pending)
			}
			if p.spool != nil {
				cf, err := w.stage(p, final)
				if err != nil {
					w.done = w.done[seq:]
					return nil, w.fail(err)
				}
				w.staged = append(w.staged, cf)
				continue
			}
			if err := w.s.fs.rename(p.path, filepath.Join(w.s.dir, pending)); err != nil {
				return nil, w.fail(pathError("pre-commit: rename", p.path, err))
			}
			w.staged = append(w.staged, committableFile{Pending: pending, Final: final, Size: p.size})
			// A new partition directory is durable once its parents are
			// synced too.
			for b := p.bucket; ; b = filepath.Dir(b) {
				if b == "." {
					b = ""
				}
				dirs[b] = true
				if b == "" {
					break
				}
			}
		}
		w.done = nil
		for _, d := range slices.Sorted(maps.Keys(dirs)) {
			if w.s.obj != nil {
				break // nothing to make durable
			}
			dir := filepath.Join(w.s.dir, d)
			if err := w.s.fs.syncDir(dir); err != nil {
				return nil, w.fail(pathError("pre-commit: fsync", dir, err))
			}
		}
	}
	parts := w.partitionsLocked()
	if w.s.partTime != nil {
		// Every subtask answers at every checkpoint, so that the committer
		// knows the least watermark of them all.
		wm := w.wm
		return json.Marshal(committable{Dir: w.s.dir, Files: w.staged, Partitions: parts, Checkpoint: checkpointID,
			Watermark: &wm, Subtask: w.subtask, Parallelism: w.parallelism})
	}
	if len(w.staged) == 0 && len(parts) == 0 {
		return nil, nil
	}
	return json.Marshal(committable{Dir: w.s.dir, Files: w.staged, Partitions: parts, Checkpoint: checkpointID})
}

// WriteWatermark implements weir.WatermarkWriter: with PartitionTime the
// writer keeps the watermark for its committables.
func (w *eoWriter[T]) WriteWatermark(_ context.Context, wm time.Time) error {
	w.mu.Lock()
	w.wm = wm.UnixMilli()
	w.mu.Unlock()
	return nil
}

// partitionsLocked lists the partitions to commit, and forgets those that
// were listed due before and whose success file exists now.
func (w *eoWriter[T]) partitionsLocked() []committablePartition {
	if w.s.success == "" || len(w.parts) == 0 {
		return nil
	}
	now := w.s.now().UnixMilli()
	var out []committablePartition
	for _, b := range slices.Sorted(maps.Keys(w.parts)) {
		p := w.parts[b]
		if p.listed && w.cur[b] == nil {
			// (by partition time: a success file written since the
			// partition's last data, not an older one)
			if w.successSince(b, p.created) {
				delete(w.parts, b)
				continue
			}
		}
		if w.s.partTime != nil || now >= p.created+w.s.delay {
			p.listed = true
		}
		out = append(out, committablePartition{Dir: b, Created: p.created})
	}
	return out
}

// Close implements weir.SinkWriter. Records written since the last
// PreCommit are not committed: the in-progress files stay, for Recover.
func (w *eoWriter[T]) Close(context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	var errs []error
	for _, p := range w.done {
		if p.spool != nil {
			p.spool.Close() // unlinked: gone
		}
	}
	w.done = nil
	for b, ip := range w.cur {
		delete(w.cur, b)
		// The buffer is not flushed: its records are not committed, and
		// the file is deleted by the next Recover anyway.
		if err := ip.f.Close(); err != nil {
			errs = append(errs, pathError("close", ip.path, err))
		}
	}
	return errors.Join(errs...)
}

// hidden describes a hidden file of the sink, parsed from its name.
type hidden struct {
	pending bool
	ckpt    int64 // of a pending file
	subtask int
	writer  string
}

// parseHidden parses the name of an in-progress or a pending file.
func parseHidden(name string) (h hidden, ok bool) {
	if !strings.HasPrefix(name, hiddenPrefix) {
		return h, false
	}
	if s, ok := strings.CutSuffix(name, inProgressSuffix); ok {
		// .part-<subtask>-<writer>-<n>
		f := strings.Split(s[len(hiddenPrefix):], "-")
		if len(f) != 3 || !isHex(f[1]) {
			return h, false
		}
		sub, err1 := strconv.Atoi(f[0])
		_, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil || sub < 0 {
			return h, false
		}
		return hidden{subtask: sub, writer: f[1]}, true
	}
	if s, ok := strings.CutSuffix(name, pendingSuffix); ok {
		// .part-<ckpt>-<subtask>-<seq>.<writer>
		i := strings.LastIndexByte(s, '.')
		if i <= 0 || !isHex(s[i+1:]) {
			return h, false
		}
		ckpt, sub, _, ok := parsePartName(s[1:i])
		if !ok {
			return h, false
		}
		return hidden{pending: true, ckpt: ckpt, subtask: sub, writer: s[i+1:]}, true
	}
	return h, false
}

// parsePartName parses the name of a committed part file.
func parsePartName(name string) (ckpt int64, subtask, seq int, ok bool) {
	s, ok := strings.CutPrefix(name, partPrefix)
	if !ok {
		return 0, 0, 0, false
	}
	if i := strings.IndexByte(s, '.'); i >= 0 {
		s = s[:i] // the extension of Suffix
	}
	f := strings.Split(s, "-")
	if len(f) != 3 {
		return 0, 0, 0, false
	}
	ckpt, err1 := strconv.ParseInt(f[0], 10, 64)
	subtask, err2 := strconv.Atoi(f[1])
	seq, err3 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || err3 != nil || ckpt < 0 || subtask < 0 || seq < 0 {
		return 0, 0, 0, false
	}
	return ckpt, subtask, seq, true
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Recover implements weir.CommittingWriter; see ExactlyOnce for the rules.
func (w *eoWriter[T]) Recover(ctx context.Context, restoredID int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errors.New("file: ExactlyOnce: writer used after Close")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if w.s.obj != nil {
		return w.recoverObjects(restoredID)
	}
	dirs := []string{""}
	var errs []error
	for len(dirs) > 0 {
		bucket := dirs[0]
		dirs = dirs[1:]
		dir := filepath.Join(w.s.dir, bucket)
		entries, err := os.ReadDir(dir)
		if err != nil {
			if bucket != "" && errors.Is(err, fs.ErrNotExist) {
				continue // removed meanwhile
			}
			return pathError("recover: read directory", dir, err)
		}
		removed, committed, succeeded := false, false, false
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() {
				// Partition directories (only for a partitioned sink: the
				// directory of another sink holds none).
				if w.s.partition != nil && !strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "_") {
					dirs = append(dirs, filepath.Join(bucket, name))
				}
				continue
			}
			if name == w.s.success {
				succeeded = true
			}
			if _, _, _, ok := parsePartName(name); ok {
				committed = true
			}
			h, ok := parseHidden(name)
			if !ok || h.writer == w.id {
				continue
			}
			if h.subtask != w.subtask && (w.subtask != 0 || h.subtask < w.parallelism) {
				continue // another subtask's
			}
			if h.pending && restoredID > 0 && h.ckpt <= restoredID {
				continue // committed by now, or to be committed: see ExactlyOnce
			}
			path := filepath.Join(dir, name)
			if err := w.s.fs.remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, pathError("recover: remove", path, err))
				continue
			}
			removed = true
		}
		if removed {
			if err := w.s.fs.syncDir(dir); err != nil {
				errs = append(errs, pathError("recover: fsync", dir, err))
			}
		}
		// A partition committed by the restored checkpoint whose success
		// file was not written yet: subtask 0 takes it over.
		if w.s.success != "" && w.subtask == 0 && bucket != "" && committed && !succeeded && w.parts[bucket] == nil {
			w.parts[bucket] = &openPartition{created: w.s.now().UnixMilli()}
		}
	}
	return errors.Join(errs...)
}

// eoCommitter is the committer of an ExactlyOnce sink. It keeps no state:
// it may commit several committables at once.
type eoCommitter struct {
	dir      string
	fs       fsOps
	obj      *s3fs.FS // of an s3:// dir
	success  string
	delay    int64
	now      func() time.Time
	partTime func(partition string) (time.Time, error)
	rounds   *ptRounds
}

// ptRounds gathers, with PartitionTime, the committables of each
// checkpoint until every writer's has come: the least of their
// watermarks decides which partitions are complete (as Flink's one
// partition committer takes the least watermark of the writers).
type ptRounds struct {
	mu   sync.Mutex
	open map[int64]*ptRound
}

type ptRound struct {
	seen  map[int]bool
	wm    int64
	parts map[string]bool
}

// add records a committable; it returns the least watermark and the
// partitions of the checkpoint once every writer's committable is in.
func (r *ptRounds) add(cm *committable) (complete bool, wm int64, parts []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rd := r.open[cm.Checkpoint]
	if rd == nil {
		rd = &ptRound{seen: map[int]bool{}, wm: math.MaxInt64, parts: map[string]bool{}}
		r.open[cm.Checkpoint] = rd
	}
	rd.seen[cm.Subtask] = true
	rd.wm = min(rd.wm, *cm.Watermark)
	for _, p := range cm.Partitions {
		rd.parts[p.Dir] = true
	}
	if len(rd.seen) < max(cm.Parallelism, 1) {
		return false, 0, nil
	}
	// Rounds of earlier checkpoints that never completed (an attempt that
	// failed between commits) are replaced by the restored one's.
	for id := range r.open {
		if id <= cm.Checkpoint {
			delete(r.open, id)
		}
	}
	return true, rd.wm, slices.Sorted(maps.Keys(rd.parts))
}

// commitByPartitionTime writes the success file of each partition of the
// checkpoint whose time plus the delay the least watermark has reached,
// once every writer's committable is in.
func (c *eoCommitter) commitByPartitionTime(dir string, cm *committable) error {
	if cm.Watermark == nil {
		return nil
	}
	for _, p := range cm.Partitions {
		if !filepath.IsLocal(p.Dir) {
			return weir.Permanent(fmt.Errorf("file: commit to %s: malformed committable: partition %q", dir, p.Dir))
		}
	}
	complete, wm, parts := c.rounds.add(cm)
	if !complete {
		return nil
	}
	for _, p := range parts {
		t, err := c.partTime(p)
		if err != nil {
			return weir.Permanent(fmt.Errorf("file: commit to %s: the time of partition %s: %w", dir, p, err))
		}
		if wm < t.UnixMilli()+c.delay {
			continue
		}
		if err := c.markSuccess(c.join(dir, p)); err != nil {
			return err
		}
	}
	return nil
}

// Commit implements weir.Committer; see ExactlyOnce for the rules.
func (c *eoCommitter) Commit(ctx context.Context, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	var cm committable
	if err := json.Unmarshal(data, &cm); err != nil {
		return weir.Permanent(fmt.Errorf("file: commit to %s: malformed committable: %w", c.dir, err))
	}
	dir := c.dir
	if s3fs.IsURL(cm.Dir) || cm.Dir == "" && c.obj != nil {
		if cm.Dir != "" {
			d, err := s3fs.Clean(cm.Dir)
			if err != nil {
				return weir.Permanent(fmt.Errorf("file: commit to %s: malformed committable: %w", c.dir, err))
			}
			dir = d
		}
		for _, f := range cm.Files {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := c.commitObject(dir, f); err != nil {
				return err
			}
		}
	} else if err := c.commitLocal(ctx, &dir, &cm); err != nil {
		return err
	}
	if c.success == "" {
		return nil
	}
	if c.partTime != nil {
		return c.commitByPartitionTime(dir, &cm)
	}
	now := c.now().UnixMilli()
	for _, p := range cm.Partitions {
		if !filepath.IsLocal(p.Dir) {
			return weir.Permanent(fmt.Errorf("file: commit to %s: malformed committable: partition %q", dir, p.Dir))
		}
		if now < p.Created+c.delay {
			continue
		}
		pdir := c.join(dir, p.Dir)
		if pending, err := c.pendingUpTo(pdir, cm.Checkpoint); err != nil {
			return err
		} else if pending {
			// Another subtask's files of this checkpoint are still to be
			// renamed: the committable that renames the last of them
			// writes the success file (as Flink's one partition committer
			// does, after all of a checkpoint's files).
			continue
		}
		if err := c.markSuccess(pdir); err != nil {
			return err
		}
	}
	return nil
}

// commitLocal commits the files of a committable in a local directory
// (*dir: the committable's).
func (c *eoCommitter) commitLocal(ctx context.Context, dirp *string, cm *committable) error {
	dir := *dirp
	if cm.Dir != "" {
		if !filepath.IsAbs(cm.Dir) {
			return weir.Permanent(fmt.Errorf("file: commit to %s: malformed committable: directory %q is not absolute", c.dir, cm.Dir))
		}
		dir = filepath.Clean(cm.Dir)
		*dirp = dir
	}
	dirs := map[string]bool{}
	for _, f := range cm.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := c.commit(dir, f); err != nil {
			return err
		}
		dirs[filepath.Dir(f.Final)] = true
	}
	if len(dirs) == 0 {
		dirs["."] = true
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if err := c.fs.syncDir(filepath.Join(dir, d)); err != nil {
			return pathError("commit: fsync", filepath.Join(dir, d), err)
		}
	}
	return nil
}

// pendingUpTo says whether dir holds a pending file of checkpoint ckpt or
// an earlier one.
func (c *eoCommitter) pendingUpTo(dir string, ckpt int64) (bool, error) {
	if s3fs.IsURL(dir) {
		return c.uploadsUpTo(dir, ckpt)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, pathError("commit: read directory", dir, err)
	}
	for _, e := range entries {
		if h, ok := parseHidden(e.Name()); ok && h.pending && h.ckpt <= ckpt {
			return true, nil
		}
	}
	return false, nil
}

// markSuccess creates (or truncates) the success file of a partition.
func (c *eoCommitter) markSuccess(dir string) error {
	if s3fs.IsURL(dir) {
		obj, err := c.objects()
		if err == nil {
			err = obj.Put(dir+"/"+c.success, nil)
		}
		if err != nil {
			return fmt.Errorf("file: commit: %w", err)
		}
		return nil
	}
	path := filepath.Join(dir, c.success)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return pathError("commit: create", path, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = c.fs.syncDir(dir)
	}
	if err != nil {
		return pathError("commit: write", path, err)
	}
	return nil
}

// commit commits one file in dir. What no retry can change (a malformed
// committable, lost output, a committed file in the way or of another
// size) is a weir.Permanent error: the job fails at once instead of
// restarting in a loop. A failing stat, rename or a missing directory (an
// unmounted disk) may pass, and is not.
func (c *eoCommitter) commit(dir string, f committableFile) error {
	h, ok := parseHidden(filepath.Base(f.Pending))
	if !ok || !h.pending || !filepath.IsLocal(f.Pending) || filepath.Dir(f.Pending) != filepath.Dir(f.Final) ||
		"."+filepath.Base(f.Final)+"."+h.writer+pendingSuffix != filepath.Base(f.Pending) || f.Size < 0 {
		return weir.Permanent(fmt.Errorf("file: commit to %s: malformed committable: pending file %q, final file %q", dir, f.Pending, f.Final))
	}
	pending, final := filepath.Join(dir, f.Pending), filepath.Join(dir, f.Final)
	pi, perr := os.Lstat(pending)
	fi, ferr := os.Lstat(final)
	if ferr != nil && !errors.Is(ferr, fs.ErrNotExist) {
		return pathError("commit: stat", final, ferr)
	}
	switch {
	case perr == nil:
		if ferr == nil {
			return weir.Permanent(fmt.Errorf("file: commit %s: %s already exists (not overwritten)", pending, final))
		}
		if pi.Size() != f.Size {
			return weir.Permanent(fmt.Errorf("file: commit %s: it has %d bytes, the committable says %d", pending, pi.Size(), f.Size))
		}
		if err := c.fs.rename(pending, final); err != nil {
			return pathError("commit: rename", pending, err)
		}
		return nil
	case errors.Is(perr, fs.ErrNotExist):
		if ferr != nil {
			// No restart brings the files back: fail at once, whether the
			// directory is there without them or gone with them.
			if di, derr := os.Stat(dir); derr != nil || !di.IsDir() {
				return weir.Permanent(fmt.Errorf("file: commit: the directory %s of %s does not exist (or is not a directory): the output of this checkpoint is lost", dir, f.Pending))
			}
			return weir.Permanent(fmt.Errorf("file: commit: neither %s nor %s exists: the output of this checkpoint is lost", pending, final))
		}
		if fi.Size() != f.Size || !fi.Mode().IsRegular() {
			return weir.Permanent(fmt.Errorf("file: commit %s: committed file %s has %d bytes, the committable says %d", pending, final, fi.Size(), f.Size))
		}
		return nil // committed before
	default:
		return pathError("commit: stat", pending, perr)
	}
}

// pathError is an error "file: <op> <path>: <cause>". The cause of an
// *os.PathError or *os.LinkError is unwrapped (it would name the path
// again); errors.Is still finds its errno.
func pathError(op, path string, err error) error {
	var pe *os.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		return fmt.Errorf("file: %s %s to %s: %w", op, le.Old, le.New, le.Err)
	}
	return fmt.Errorf("file: %s %s: %w", op, path, err)
}

// partFile is a file being written by a sink writer.
type partFile interface {
	io.Writer
	Sync() error
	Close() error
}

// fsOps is the file system as the ExactlyOnce sink changes it; tests replace
// its functions to inject failures.
type fsOps struct {
	create  func(path string) (partFile, error) // must fail if path exists
	rename  func(oldpath, newpath string) error
	remove  func(path string) error
	syncDir func(dir string) error
}

var osFS = fsOps{
	create: func(path string) (partFile, error) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, err
		}
		return f, nil
	},
	rename:  os.Rename,
	remove:  os.Remove,
	syncDir: syncDir,
}

// syncDir fsyncs a directory, making the renames, creations and removals
// of its entries durable.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // directories cannot be fsynced there
	}
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
