// Package pebblestate is the Pebble state backend: keyed state and timers
// in a Pebble LSM on disk, so that state can be larger than memory. The
// stores are package state's serializing stores (state.Serial), over a
// Pebble database; see state.Serial for the key layout.
//
// The database is a working copy, not the durable state: the write-ahead
// log is off (as Flink's RocksDB backend has it), and what survives a
// failure is what checkpoints saved. Each operator subtask has a database
// of its own, in a directory that Close removes when asked to.
package pebblestate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weirstream/weir/internal/state"
)

// DefaultMemoryBudget is the memory budget of a backend when none is given.
const DefaultMemoryBudget = 64 << 20

// Options configure a Pebble backend.
type Options struct {
	// Dir is the database's directory, created if missing.
	Dir string
	// MemoryBudget bounds the memory Pebble uses, in bytes: three eighths
	// for the block cache, a quarter for each of the two memtables (a
	// memtable being written, one being flushed), an eighth for the record
	// cache (RecordCache). 0 means DefaultMemoryBudget.
	// Index and filter blocks count too (they live in the block cache);
	// iterators, compactions and Go's own overhead come on top.
	MemoryBudget int64
	// Memory, when set, is a budget shared with other databases (the
	// process's): the database reads through its block cache and takes its
	// memtable size and record cache size, and MemoryBudget is ignored.
	Memory *Memory
	// RecordCache is the size in bytes of the write-back cache of state
	// entries in front of the database (state.CachedKV): 0 takes the
	// memory budget's share (Memory.RecordCacheSize), a negative size
	// disables it.
	RecordCache int64
	// RemoveOnClose removes Dir when the backend is closed: for a working
	// copy that nothing reopens.
	RemoveOnClose bool
	// FS is the file system (default: the OS's); tests use vfs.NewMem().
	FS vfs.FS
}

// Backend is a state.Backend over a Pebble database.
type Backend struct {
	*state.Serial
	db    *pebble.DB
	kv    *kv
	opts  Options
	mem   *Memory
	cache *state.CachedKV // nil if disabled
}

// Open opens (or creates) the database in o.Dir and returns a backend
// over it for cfg. A database that holds state (reopened from an
// incremental checkpoint) keeps it: stores created under the names it
// knows see their entries.
func Open(o Options, cfg state.Config) (*Backend, error) {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	mem := o.Memory
	if mem == nil {
		// a budget of its own
		mem = NewMemory(o.MemoryBudget, 1)
		defer mem.Close() // the database holds its own reference to the cache
	}
	popts := &pebble.Options{
		FS:                          o.FS,
		Cache:                       mem.cache,
		MemTableSize:                mem.memtable,
		MemTableStopWritesThreshold: 2,
		DisableWAL:                  true,
		Merger:                      listMerger,
		Logger:                      quiet{},
	}
	// Files of at most 8 MiB (Pebble's default doubles per level from
	// 2 MiB, to 128 MiB at L6): a changelog checkpoint uploads the next
	// base a few files at a time, within a share of the state
	// (internal/incremental), and an incremental one re-uploads whole
	// files.
	for i := range popts.TargetFileSizes {
		popts.TargetFileSizes[i] = min(int64(2<<20)<<i, 8<<20)
	}
	for i := range popts.Levels {
		// Bloom filters: a lookup of an absent key (a new key's state, a
		// timer not registered yet) reads no data block.
		popts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := pebble.Open(o.Dir, popts)
	if err != nil {
		return nil, fmt.Errorf("pebblestate: open %s: %w", o.Dir, err)
	}
	base := &kv{db: db, maxOps: batchOps, maxBytes: batchBytes}
	var store state.KVStore = base
	var cache *state.CachedKV
	if size := o.RecordCache; size >= 0 {
		if size == 0 {
			size = mem.recordCache
		}
		cache = state.NewCachedKV(store, size)
		store = cache
	}
	s, err := state.NewSerial("pebble", cfg, store)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Backend{Serial: s, db: db, kv: base, opts: o, mem: mem, cache: cache}, nil
}

// Close closes the database and, with RemoveOnClose, removes its
// directory.
func (b *Backend) Close() error {
	err := b.Serial.Close()
	if b.opts.RemoveOnClose {
		err = errors.Join(err, b.opts.FS.RemoveAll(b.opts.Dir))
	}
	return err
}

// Memory is the memory budget the database is in: Options.Memory, or one
// of its own.
func (b *Backend) Memory() *Memory { return b.mem }

// DB is the Pebble database, with every write made so far committed to
// it.
func (b *Backend) DB() *pebble.DB {
	if err := b.kv.commit(); err != nil {
		panic(fmt.Errorf("pebblestate: commit: %w", err))
	}
	return b.db
}

// Checkpoint writes a copy of the database into dir (which must not
// exist): its SST files hard-linked where the file system allows, so that
// unchanged files are shared between checkpoints. Open on dir resumes from
// it.
func (b *Backend) Checkpoint(dir string) error {
	if err := b.Flush(); err != nil {
		return err
	}
	return b.db.Checkpoint(dir)
}

// SetRecorder makes r receive every write that reaches the database from
// now on, in order (nil: none): the changes a changelog checkpoint saves
// (internal/incremental). Writes the record cache holds reach r when they
// reach the database: FlushCache before reading what r has.
func (b *Backend) SetRecorder(r Recorder) { b.kv.rec = r }

// FlushCache writes the record cache's dirty entries into the database
// (its memtable), not the memtable into files.
func (b *Backend) FlushCache() error {
	if b.cache != nil {
		if err := b.cache.Flush(); err != nil {
			return err
		}
	}
	return b.kv.commit()
}

// Op is the kind of a write a Recorder receives.
type Op byte

// The writes a Recorder receives. For OpDeleteRange, the value is the
// range's end (exclusive); for OpDelete, it is empty.
const (
	OpSet Op = 1 + iota
	OpDelete
	OpDeleteRange
	OpMerge
)

// Recorder receives the writes that reach a database, in the order they
// reach it. An error fails the write.
type Recorder interface {
	Record(op Op, key, value []byte) error
}

// Apply applies a recorded write to kv.
func Apply(kv state.KVStore, op Op, key, value []byte) error {
	switch op {
	case OpSet:
		return kv.Set(key, value)
	case OpDelete:
		return kv.Delete(key)
	case OpDeleteRange:
		return kv.DeleteRange(key, value)
	case OpMerge:
		return kv.Merge(key, value)
	}
	return fmt.Errorf("pebblestate: unknown write %d", op)
}

// Flush writes the record cache's dirty entries into the database and
// its memtables into files: the database then holds all the state, on
// disk (it has no write-ahead log).
func (b *Backend) Flush() error {
	if err := b.FlushCache(); err != nil {
		return err
	}
	return b.db.Flush()
}

// DiskUsage is the bytes of the database's files.
func (b *Backend) DiskUsage() uint64 { return b.db.Metrics().DiskSpaceUsage() }

// kv adapts a Pebble database to state.KVStore. Writes go into a batch
// that is committed before the next read (Get, Scan), when it holds
// maxOps writes or maxBytes bytes, and before the database is
// flushed, checkpointed or closed: a write costs an append to the batch,
// not a commit of its own (Pebble's commit pipeline per Set took a third
// of a write's time), and a read still sees every write before it.
type kv struct {
	db     *pebble.DB
	rec    Recorder      // nil: none
	b      *pebble.Batch // pending writes; nil: none
	closed bool
	// the most writes and bytes the pending batch holds before it is
	// committed
	maxOps   int
	maxBytes int
}

// A backend's batch limits: small, so that a batch stays well within a
// memtable and a long run of writes reaches the database soon.
const (
	batchOps   = 256
	batchBytes = 256 << 10
)

// pending is the batch to write into.
func (k *kv) pending() *pebble.Batch {
	if k.b == nil {
		k.b = k.db.NewBatch()
	}
	return k.b
}

// wrote commits the pending batch if it is full; err is the write's.
func (k *kv) wrote(err error) error {
	if err != nil {
		return err
	}
	if int(k.b.Count()) >= k.maxOps || k.b.Len() >= k.maxBytes {
		return k.commit()
	}
	return nil
}

// commit commits the pending writes.
func (k *kv) commit() error {
	b := k.b
	if b == nil {
		return nil
	}
	k.b = nil
	err := b.Commit(pebble.NoSync)
	return errors.Join(err, b.Close())
}

func (k *kv) Get(dst, key []byte) ([]byte, bool, error) {
	if err := k.commit(); err != nil {
		return dst, false, err
	}
	v, c, err := k.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return dst, false, nil
	}
	if err != nil {
		return dst, false, err
	}
	dst = append(dst, v...)
	return dst, true, c.Close()
}

func (k *kv) Set(key, value []byte) error {
	if k.rec != nil {
		if err := k.rec.Record(OpSet, key, value); err != nil {
			return err
		}
	}
	return k.wrote(k.pending().Set(key, value, nil))
}

func (k *kv) Delete(key []byte) error {
	if k.rec != nil {
		if err := k.rec.Record(OpDelete, key, nil); err != nil {
			return err
		}
	}
	return k.wrote(k.pending().Delete(key, nil))
}

func (k *kv) DeleteRange(start, end []byte) error {
	if k.rec != nil {
		if err := k.rec.Record(OpDeleteRange, start, end); err != nil {
			return err
		}
	}
	return k.wrote(k.pending().DeleteRange(start, end, nil))
}

func (k *kv) Merge(key, operand []byte) error {
	if k.rec != nil {
		if err := k.rec.Record(OpMerge, key, operand); err != nil {
			return err
		}
	}
	return k.wrote(k.pending().Merge(key, operand, nil))
}

func (k *kv) Scan(start, end []byte, fn func(key, value []byte) bool) (err error) {
	if err := k.commit(); err != nil {
		return err
	}
	// The iterator keeps its bounds: they are copied, as callers reuse
	// their buffers.
	it, err := k.db.NewIter(&pebble.IterOptions{LowerBound: bytes.Clone(start), UpperBound: bytes.Clone(end)})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, it.Close()) }()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		if !fn(it.Key(), v) {
			return nil
		}
	}
	return it.Error()
}

func (k *kv) Close() error {
	if k.closed {
		return nil
	}
	k.closed = true
	return errors.Join(k.commit(), k.db.Close())
}

// listMerger merges list values with state.MergeList. Its name is recorded
// in the database: a database written with it opens only with it.
var listMerger = &pebble.Merger{
	Name: "weir.list.v1",
	Merge: func(_, value []byte) (pebble.ValueMerger, error) {
		m := &listValueMerger{}
		m.add(value, false)
		return m, nil
	},
}

// listValueMerger collects operands, the first one given and those newer
// and older than all before (Pebble's MergeNewer and MergeOlder), in one
// buffer in the order they came, and puts them in order, oldest first,
// when it finishes: linear in the operands' bytes however many there are
// (a hot key's list: a join side's rows).
type listValueMerger struct {
	buf []byte
	ops []listOperand // in the order they came
}

// listOperand is an operand's bytes in the merger's buffer.
type listOperand struct {
	start, end int
	older      bool // MergeOlder's
}

func (m *listValueMerger) add(v []byte, older bool) {
	start := len(m.buf)
	m.buf = append(m.buf, v...)
	m.ops = append(m.ops, listOperand{start, len(m.buf), older})
}

func (m *listValueMerger) MergeNewer(v []byte) error {
	m.add(v, false)
	return nil
}

func (m *listValueMerger) MergeOlder(v []byte) error {
	m.add(v, true)
	return nil
}

// Finish merges the operands with state.MergeList, oldest first: the
// older ones in the reverse of the order they came, then the first and
// the newer ones in theirs.
func (m *listValueMerger) Finish(bool) ([]byte, io.Closer, error) {
	ordered := make([][]byte, 0, len(m.ops))
	for i := len(m.ops) - 1; i >= 0; i-- {
		if o := m.ops[i]; o.older {
			ordered = append(ordered, m.buf[o.start:o.end])
		}
	}
	for _, o := range m.ops {
		if !o.older {
			ordered = append(ordered, m.buf[o.start:o.end])
		}
	}
	return state.MergeList(ordered...), nil, nil
}

// quiet is Pebble's logger: informational messages are dropped, errors go
// to standard error, and a fatal error panics (Pebble's default logger
// exits the process), so that the task fails and the job restarts.
type quiet struct{}

func (quiet) Infof(string, ...any) {}
func (quiet) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}
func (quiet) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}
