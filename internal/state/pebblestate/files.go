package pebblestate

import (
	"errors"
	"fmt"
	"math"
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
	readOnly bool
}

// OpenKV opens the database in dir, read-only or for writing (created if
// missing). Writes are batched (kv's batch, in bigger batches); Close
// commits and flushes them, since the database has no write-ahead log.
func OpenKV(dir string, readOnly bool, fs vfs.FS) (*KV, error) {
	if fs == nil {
		fs = vfs.Default
	}
	opts := &pebble.Options{FS: fs, DisableWAL: true, Merger: listMerger, Logger: quiet{}, ReadOnly: readOnly}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("pebblestate: open %s: %w", dir, err)
	}
	return &KV{kv: kv{db: db, maxOps: math.MaxInt, maxBytes: batchSize}, readOnly: readOnly}, nil
}

// batchSize is how many bytes of writes a KV batches before committing.
const batchSize = 4 << 20

var errReadOnly = errors.New("pebblestate: read-only")

// Set, Delete, DeleteRange and Merge implement state.KVStore, batched;
// Get and Scan see the writes batched so far.
func (k *KV) Set(key, value []byte) error {
	if k.readOnly {
		return errReadOnly
	}
	return k.kv.Set(key, value)
}

func (k *KV) Delete(key []byte) error {
	if k.readOnly {
		return errReadOnly
	}
	return k.kv.Delete(key)
}

func (k *KV) DeleteRange(start, end []byte) error {
	if k.readOnly {
		return errReadOnly
	}
	return k.kv.DeleteRange(start, end)
}

func (k *KV) Merge(key, operand []byte) error {
	if k.readOnly {
		return errReadOnly
	}
	return k.kv.Merge(key, operand)
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
	}
	return errors.Join(err, k.kv.Close())
}

var _ state.KVStore = (*KV)(nil)
