package pebblestate

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weirstream/weir/internal/state"
)

// Incremental checkpoints save a backend's database as files: Checkpoint
// writes a Pebble checkpoint (SST files hard-linked, the small files
// copied) into a local directory, which the caller uploads, sharing the
// SST files that an earlier checkpoint uploaded already. A restore with
// the same key groups puts the files of a checkpoint into a directory and
// Opens it; a restore with other key groups opens each old database with
// OpenKV and copies the entries of its key groups (state.CopyKeyGroups)
// into a new one made with OpenKV too, before Open.

// IsSharedFile reports whether the file name of a database directory is
// immutable and named uniquely within the database's life (a table or blob
// file, named by its file number, which Pebble never reuses): such a file
// can be shared between the checkpoints of one database. The other files
// (MANIFEST, OPTIONS, markers, CURRENT) change or are rewritten, and are
// saved with each checkpoint.
func IsSharedFile(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")
}

// KV is a Pebble database opened as a bare state.KVStore, for reading an
// old backend's files or filling a new one before Open.
type KV struct {
	kv
	batch    *pebble.Batch
	readOnly bool
}

// OpenKV opens the database in dir, read-only or for writing (created if
// missing). Writes are batched; Close commits and flushes them, since the
// database has no write-ahead log.
func OpenKV(dir string, readOnly bool, fs vfs.FS) (*KV, error) {
	if fs == nil {
		fs = vfs.Default
	}
	opts := &pebble.Options{FS: fs, DisableWAL: true, Merger: listMerger, Logger: quiet{}, ReadOnly: readOnly}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("pebblestate: open %s: %w", dir, err)
	}
	return &KV{kv: kv{db: db}, readOnly: readOnly}, nil
}

// batchSize is how many bytes of writes a KV batches before committing.
const batchSize = 4 << 20

// Set implements state.KVStore, batched.
func (k *KV) Set(key, value []byte) error {
	if k.readOnly {
		return errors.New("pebblestate: read-only")
	}
	if k.batch == nil {
		k.batch = k.db.NewBatch()
	}
	if err := k.batch.Set(key, value, nil); err != nil {
		return err
	}
	if k.batch.Len() >= batchSize {
		return k.commit()
	}
	return nil
}

// Get implements state.KVStore; it sees the writes batched so far.
func (k *KV) Get(dst, key []byte) ([]byte, bool, error) {
	if err := k.commit(); err != nil {
		return dst, false, err
	}
	return k.kv.Get(dst, key)
}

// Scan implements state.KVStore; it sees the writes batched so far.
func (k *KV) Scan(start, end []byte, fn func(key, value []byte) bool) error {
	if err := k.commit(); err != nil {
		return err
	}
	return k.kv.Scan(start, end, fn)
}

// Delete, DeleteRange and Merge are not batched: they commit the batch
// first, to keep the order of writes.
func (k *KV) Delete(key []byte) error {
	if err := k.commit(); err != nil {
		return err
	}
	return k.kv.Delete(key)
}

func (k *KV) DeleteRange(start, end []byte) error {
	if err := k.commit(); err != nil {
		return err
	}
	return k.kv.DeleteRange(start, end)
}

func (k *KV) Merge(key, operand []byte) error {
	if err := k.commit(); err != nil {
		return err
	}
	return k.kv.Merge(key, operand)
}

func (k *KV) commit() error {
	if k.batch == nil {
		return nil
	}
	err := k.batch.Commit(pebble.NoSync)
	k.batch.Close()
	k.batch = nil
	return err
}

// Close commits pending writes, flushes them to files and closes the
// database.
func (k *KV) Close() error {
	var err error
	if !k.readOnly {
		err = k.commit()
		if err == nil {
			err = k.db.Flush()
		}
	} else if k.batch != nil {
		k.batch.Close()
	}
	return errors.Join(err, k.kv.Close())
}

var _ state.KVStore = (*KV)(nil)
