// Package incremental holds the incremental checkpoints of the Pebble
// state backend (weir.IncrementalCheckpoints), as Flink's RocksDB backend
// takes them: the backend of one operator subtask (Backend, opened with
// Open), its local snapshot at a barrier (Snapshot), writing it into a
// checkpoint (WriteLocal), and restoring a database from a checkpoint's
// files, at the same or another parallelism.
package incremental

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sync"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/pebblestate"
)

// How (weir.IncrementalCheckpoints):
//
//   - Synchronous part, at the barrier, on the subtask's goroutine: flush
//     the memtable and take a Pebble checkpoint of the database into a
//     local directory (SST files hard-linked, MANIFEST and OPTIONS
//     copied), plus a view of the stores (state.View) in case the barrier
//     is a savepoint's. The operator's codec.StateFile carries a token naming
//     this local snapshot (LocalKey), and no key groups.
//   - Asynchronous part, in the coordinator (writeSnapshot): for a
//     checkpoint, upload the SST files that the backend's last completed
//     checkpoint did not have into the store's shared area,
//     DIR/shared/<operator>/<database instance>/<file>, list the others
//     again (ReuseShared), and copy the small files into the checkpoint's
//     directory; the codec.StateFile then describes the files (Desc, under
//     MetaKey). For a savepoint, write the per-key-group snapshot of
//     the local copy instead: savepoints are self-contained and canonical.
//   - Restore with the key groups the database had: put its files into a
//     new directory and open it. With other key groups (rescaling): open
//     each old database that overlaps, read-only, and copy the entries of
//     the key groups now owned into a new one.
//
// A database instance gets a fresh random id whenever a backend opens, so
// (instance, file name) names one content for ever, even when a restored
// database goes on numbering files from where its checkpoint stood.

// Keys of a state file's Meta (codec.StateFile) for incremental Pebble
// state.
const (
	MetaKey  = "weir.pebble.files"
	LocalKey = "weir.pebble.local"
)

// Desc describes the database of one operator subtask in a checkpoint.
type Desc struct {
	Instance   string
	Start, End int   // the key groups the database holds
	NonEmpty   []int // those with entries
	Stores     []state.StoreLayout
	Files      []File
	// Log lists the state changelog's segments to replay, in order, over
	// the database of Files (changelog.go); none without the changelog.
	Log []File
}

// File is one file of the database: its name in the database
// directory, and the name of the checkpoint's file holding it (shared or
// not).
type File struct {
	Local, Ref string
	Shared     bool
}

// Backend is the Pebble backend of one operator subtask, in a
// directory of its own: the database in root/db. It removes root on
// Close. Local snapshots are next to root, in snapRoot, since they may
// outlive the backend: the final checkpoint, and a stop-with-savepoint,
// are written out after the subtask closed.
type Backend struct {
	*pebblestate.Backend
	root        string
	snapRoot    string
	uid         string
	subtask     int
	incremental bool
	instance    string
	// the state changelog (changelog.go): on with changelog, the open
	// segment log, interval the ms after which a checkpoint materializes
	changelog bool
	interval  int64
	log       *logWriter
	logSeq    int
	// restored are the layouts of the stores of the databases restored
	// from files, checked once Open created the stores.
	restored [][]state.StoreLayout

	mu struct {
		sync.Mutex
		// confirmed maps the shared files of the last completed
		// checkpoint, by their name in the database directory, to their
		// listing: those a checkpoint lists again rather than uploads.
		confirmed   map[string]checkpoint.FileInfo
		confirmedID int64
		closed      bool
		// the changelog's completed base, the closed segments not
		// covered by it, oldest first, and the next base, being uploaded
		base *base
		segs []*segment
		next *nextBase
	}
}

func newInstanceID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Close closes the database and removes the subtask's directory, and the
// local snapshots not written yet, but for that of a final checkpoint or a
// stop-with-savepoint, which the coordinator writes after the subtask
// ended.
func (b *Backend) Close() error {
	b.mu.Lock()
	b.mu.closed = true
	b.mu.Unlock()
	localSnaps.drop(func(o *localSnap) bool { return o.be == b && !o.last })
	var err error
	if b.log != nil {
		b.Backend.SetRecorder(nil)
		err = b.log.close()
	}
	b.mu.Lock()
	if nb := b.mu.next; nb != nil {
		os.RemoveAll(nb.dir)
		b.mu.next = nil
	}
	b.mu.Unlock()
	return errors.Join(err, b.Backend.Close(), os.RemoveAll(b.root))
}

// lineage names the operator subtask across restarts within the process.
func (b *Backend) lineage() string {
	return fmt.Sprintf("%s\x00%s\x00%d", b.snapRoot, b.uid, b.subtask)
}

func (b *Backend) confirmedFile(local string) (checkpoint.FileInfo, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fi, ok := b.mu.confirmed[local]
	return fi, ok
}

// confirm records the shared files of completed checkpoint id.
func (b *Backend) confirm(id int64, files map[string]checkpoint.FileInfo) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id > b.mu.confirmedID {
		b.mu.confirmed, b.mu.confirmedID = files, id
	}
}

// localSnap is a local Pebble checkpoint of a backend, waiting to be
// written out by the coordinator.
type localSnap struct {
	be   *Backend
	id   int64
	last bool // of a final checkpoint or a stop-with-savepoint
	dir  string
	desc Desc // without Files
	view *state.View
	now  int64
	// log: a changelog checkpoint's base and segments (no dir, no view);
	// materialize: a Pebble checkpoint that starts a new changelog base
	log         *logSnapshot
	materialize bool
}

// localSnaps holds the local snapshots taken at barriers and not yet
// written, by token (codec.StateFile.Meta[LocalKey]).
var localSnaps = &snapRegistry{m: map[string]*localSnap{}}

type snapRegistry struct {
	mu sync.Mutex
	m  map[string]*localSnap
}

func (r *snapRegistry) put(token string, s *localSnap) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Snapshots of older checkpoints of the same operator subtask (of this
	// backend, or of one before a restart) were never written: the
	// checkpoint was aborted or failed, as one checkpoint is in flight at
	// a time.
	lin := s.be.lineage()
	for t, o := range r.m {
		if o.id < s.id && (o.be == s.be || o.be.lineage() == lin) {
			delete(r.m, t)
			os.RemoveAll(o.dir)
		}
	}
	r.m[token] = s
}

// take removes and returns the snapshot of token; its directory is the
// caller's to remove.
func (r *snapRegistry) take(token string) *localSnap {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.m[token]
	delete(r.m, token)
	return s
}

// drop removes the snapshots that match, and their directories.
func (r *snapRegistry) drop(match func(*localSnap) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for t, o := range r.m {
		if match(o) {
			delete(r.m, t)
			os.RemoveAll(o.dir)
		}
	}
}

// Snapshot is the synchronous part of an incremental checkpoint: a local
// Pebble checkpoint of the database, and the token that names it (the
// state file carries it under LocalKey until WriteLocal replaces it). With
// the changelog, it closes the open log segment and, unless the
// checkpoint materializes, takes no Pebble checkpoint: the state is the
// base and the segments (changelog.go). A savepoint's snapshot is always
// a Pebble checkpoint (written by key group), and leaves the log alone.
func (b *Backend) Snapshot(id int64, last, savepoint bool, now int64) ([]byte, error) {
	var ls *localSnap
	materialize := false
	if b.changelog && !savepoint {
		// the record cache's writes reach the log before it is closed
		if err := b.Backend.FlushCache(); err != nil {
			return nil, err
		}
		if err := b.rotate(id); err != nil {
			return nil, err
		}
		b.promote()
		// a final checkpoint's is written after the subtask closed and
		// removed its segments: it materializes
		if chain, due := b.chain(id, now); chain != nil && !last {
			if due && chain.next == nil {
				nb, err := b.startNext(id, now)
				if err != nil {
					return nil, err
				}
				chain.next = nb
			}
			ls = &localSnap{log: chain}
		} else {
			materialize = true
		}
	}
	if ls == nil {
		dir := filepath.Join(b.snapRoot, fmt.Sprintf("%s-%d-snap-%s-%d", checkpoint.SafeName(b.uid), b.subtask, b.instance, id))
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		if err := b.Backend.Checkpoint(dir); err != nil {
			return nil, fmt.Errorf("pebble checkpoint: %w", err)
		}
		view, err := state.NewView(b.Backend)
		if err != nil {
			return nil, err
		}
		ls = &localSnap{dir: dir, view: view, materialize: materialize}
	}
	lays, err := state.Layouts(b)
	if err != nil {
		return nil, err
	}
	r := b.KeyGroups()
	nonEmpty, err := state.NonEmptyKeyGroups(b.KV(), r)
	if err != nil {
		return nil, err
	}
	ls.be, ls.id, ls.last, ls.now = b, id, last, now
	ls.desc = Desc{Instance: b.instance, Start: r.Start, End: r.End, NonEmpty: nonEmpty, Stores: lays}
	token := fmt.Sprintf("%s/%d", b.instance, id)
	localSnaps.put(token, ls)
	return []byte(token), nil
}

// WriteLocal is the asynchronous part: it writes the local
// snapshot st refers to into checkpoint p, and returns st as the state
// file records it, the files to list for the operator, and what to tell
// the backend once the checkpoint is complete. opIndex numbers the
// operator in the checkpoint (for file names).
func WriteLocal(p *checkpoint.Pending, st codec.StateFile, opIndex int) (codec.StateFile, []checkpoint.FileInfo, func(), error) {
	token := string(st.Meta[LocalKey])
	ls := localSnaps.take(token)
	if ls == nil {
		return st, nil, nil, fmt.Errorf("weir: operator %q subtask %d: the local Pebble snapshot %s is gone (the subtask ended)", st.Name, st.Subtask, token)
	}
	if ls.dir != "" {
		defer os.RemoveAll(ls.dir)
	}
	meta := map[string][]byte{}
	for k, v := range st.Meta {
		if k != LocalKey {
			meta[k] = v
		}
	}
	st.Meta = meta
	if ls.log != nil {
		desc, files, uploaded, next, err := ls.writeLog(p, st.UID, st.Subtask)
		if err != nil {
			return st, nil, nil, err
		}
		data, err := codec.Marshal(desc)
		if err != nil {
			return st, nil, nil, err
		}
		st.Meta[MetaKey] = data
		be, nextID := ls.be, int64(0)
		if ls.log.next != nil {
			nextID = ls.log.next.id
		}
		return st, files, func() { be.confirmLog(uploaded, nextID, next) }, nil
	}
	if p.Kind() == checkpoint.KindSavepoint {
		if ls.view == nil {
			return st, nil, nil, fmt.Errorf("weir: operator %q subtask %d: savepoint %d was taken as a changelog checkpoint", st.Name, st.Subtask, p.ID())
		}
		groups, err := ls.keyGroups()
		if err != nil {
			return st, nil, nil, fmt.Errorf("weir: operator %q subtask %d: savepoint of Pebble state: %w", st.Name, st.Subtask, err)
		}
		st.Groups = groups
		return st, nil, nil, nil
	}
	des, err := os.ReadDir(ls.dir)
	if err != nil {
		return st, nil, nil, err
	}
	desc := ls.desc
	var files []checkpoint.FileInfo
	shared := map[string]checkpoint.FileInfo{}
	for _, de := range des {
		local := de.Name()
		if !de.Type().IsRegular() {
			return st, nil, nil, fmt.Errorf("weir: Pebble checkpoint %s: %s is not a regular file", ls.dir, local)
		}
		var fi checkpoint.FileInfo
		if ls.materialize && !pebblestate.IsSharedFile(local) {
			// a changelog base: its small files are shared too, so that
			// the log checkpoints after it list them again
			ref := path.Join(checkpoint.SafeName(st.UID), desc.Instance, fmt.Sprintf("%d-%s", ls.id, local))
			if fi, err = copyInto(p.CreateShared(ref))(filepath.Join(ls.dir, local)); err != nil {
				return st, nil, nil, err
			}
			shared[local] = fi
		} else if pebblestate.IsSharedFile(local) {
			var ok bool
			if fi, ok = ls.be.confirmedFile(local); !ok || p.ReuseShared(fi) != nil {
				ref := path.Join(checkpoint.SafeName(st.UID), desc.Instance, local)
				if fi, err = copyInto(p.CreateShared(ref))(filepath.Join(ls.dir, local)); err != nil {
					return st, nil, nil, err
				}
			}
			shared[local] = fi
		} else {
			name := fmt.Sprintf("op%03d-%s-%d.db.%s", opIndex, checkpoint.SafeName(st.UID), st.Subtask, local)
			if fi, err = copyInto(p.Create(name))(filepath.Join(ls.dir, local)); err != nil {
				return st, nil, nil, err
			}
		}
		desc.Files = append(desc.Files, File{Local: local, Ref: fi.Name, Shared: fi.Shared})
		fi.Subtask = st.Subtask
		fi.KeyGroups = &checkpoint.KeyGroupRange{Start: desc.Start, End: desc.End}
		files = append(files, fi)
	}
	data, err := codec.Marshal(desc)
	if err != nil {
		return st, nil, nil, err
	}
	st.Meta[MetaKey] = data
	id, be := p.ID(), ls.be
	if !ls.materialize {
		return st, files, func() { be.confirm(id, shared) }, nil
	}
	nb := &base{id: ls.id, taken: ls.now, files: desc.Files}
	for _, fi := range files {
		nb.infos = append(nb.infos, fi)
		nb.size += fi.Size
	}
	return st, files, func() {
		be.confirm(id, shared)
		be.confirmBase(nb)
	}, nil
}

// copyInto returns a function that copies the file src into w.
func copyInto(w *checkpoint.FileWriter, err error) func(src string) (checkpoint.FileInfo, error) {
	return func(src string) (checkpoint.FileInfo, error) {
		if err != nil {
			return checkpoint.FileInfo{}, err
		}
		f, err := os.Open(src)
		if err != nil {
			w.Close()
			return checkpoint.FileInfo{}, err
		}
		defer f.Close()
		if _, err := io.Copy(w, f); err != nil {
			w.Close()
			return checkpoint.FileInfo{}, err
		}
		return w.Close()
	}
}

// keyGroups writes the per-key-group snapshot of the local copy.
func (ls *localSnap) keyGroups() (map[int][]byte, error) {
	kv, err := pebblestate.OpenKV(ls.dir, true, nil)
	if err != nil {
		return nil, err
	}
	defer kv.Close()
	ls.view.Bind(kv, ls.now)
	groups := map[int][]byte{}
	for _, kg := range ls.desc.NonEmpty {
		data, err := state.SnapshotKeyGroup(ls.view, kg)
		if err != nil {
			return nil, err
		}
		if data != nil {
			groups[kg] = data
		}
	}
	return groups, nil
}

// Descs returns the databases that operator uid had in the restored
// checkpoint at path, from its state files states, if it has incremental
// state there.
func Descs(path, uid string, states []codec.StateFile) ([]Desc, error) {
	var out []Desc
	for _, s := range states {
		data, ok := s.Meta[MetaKey]
		if !ok {
			continue
		}
		var d Desc
		if err := codec.Unmarshal(data, &d); err != nil {
			return nil, fmt.Errorf("weir: %s: Pebble files of operator %q subtask %d: %w", path, uid, s.Subtask, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// materialize puts the files of database d of checkpoint c into dir,
// checking each file's size and checksum as it copies.
func materialize(c *checkpoint.Checkpoint, d Desc, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range d.Files {
		if f.Local != filepath.Base(f.Local) || f.Local == "." || f.Local == ".." {
			return fmt.Errorf("weir: %s: Pebble file name %q", c.Path(), f.Local)
		}
		r, err := c.Open(f.Ref)
		if err != nil {
			return err
		}
		err = func() error {
			defer r.Close()
			out, err := os.Create(filepath.Join(dir, f.Local))
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, r); err != nil {
				out.Close()
				return err
			}
			return out.Close()
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// restorePebble fills the database directory dbDir of a new backend of
// key groups r from the databases ds of checkpoint c: its files when
// one database had exactly r (it returns it: its shared files are
// already in the store), or the entries of r copied from each that
// overlaps.
func restorePebble(c *checkpoint.Checkpoint, ds []Desc, r state.KeyGroupRange, root, dbDir string) (*Desc, error) {
	// Same key groups as one old database (a restore at the same
	// parallelism, whatever it is): use its files as they are. The other
	// databases hold other key groups.
	for i := range ds {
		if ds[i].Start == r.Start && ds[i].End == r.End {
			if err := materialize(c, ds[i], dbDir); err != nil {
				return nil, err
			}
			if len(ds[i].Log) > 0 {
				kv, err := pebblestate.OpenKV(dbDir, false, nil)
				if err != nil {
					return nil, err
				}
				if err := errors.Join(replay(c, ds[i], kv), kv.Close()); err != nil {
					return nil, err
				}
			}
			return &ds[i], nil
		}
	}
	dst, err := pebblestate.OpenKV(dbDir, false, nil)
	if err != nil {
		return nil, err
	}
	for i, d := range ds {
		lo, hi := max(d.Start, r.Start), min(d.End, r.End)
		if lo >= hi {
			continue
		}
		tmp := filepath.Join(root, fmt.Sprintf("restore-%d", i))
		err := materialize(c, d, tmp)
		var src *pebblestate.KV
		if err == nil {
			// read-only, unless its log is to be replayed over it
			src, err = pebblestate.OpenKV(tmp, len(d.Log) == 0, nil)
		}
		if err == nil && len(d.Log) > 0 {
			if err = replay(c, d, src); err != nil {
				src.Close()
			}
		}
		if err == nil {
			_, err = state.CopyKeyGroups(dst, src, state.KeyGroupRange{Start: lo, End: hi})
			err = errors.Join(err, src.Close())
		}
		os.RemoveAll(tmp)
		if err != nil {
			dst.Close()
			return nil, fmt.Errorf("weir: restoring key groups [%d, %d) from %s: %w", lo, hi, c.Path(), err)
		}
	}
	return nil, dst.Close()
}

// Options open a Backend.
type Options struct {
	// Dir is the subtask's own directory (removed on Close): the database
	// is in Dir/db, local snapshots next to Dir.
	Dir         string
	UID         string
	Subtask     int
	Incremental bool
	// Changelog makes the incremental checkpoints changelog checkpoints
	// (changelog.go); MaterializeInterval (ms, 0: none) bounds the time
	// between materializations.
	Changelog           bool
	MaterializeInterval int64
	MemoryBudget        int64
	// Memory, when set, is the process's budget that the database shares
	// with the others (MemoryBudget is then ignored).
	Memory *pebblestate.Memory
	// Restore is the checkpoint to restore from (nil: none), RestoreID its
	// id, and Descs the databases it holds for this operator (Descs).
	Restore   *checkpoint.Checkpoint
	RestoreID int64
	Descs     []Desc
}

// Open opens the Pebble backend of one operator subtask, restoring the
// databases of opts.Descs that overlap its key groups.
func Open(opts Options, cfg state.Config) (*Backend, error) {
	b := &Backend{root: opts.Dir, snapRoot: filepath.Dir(opts.Dir), uid: opts.UID, subtask: opts.Subtask,
		incremental: opts.Incremental || opts.Changelog, changelog: opts.Changelog, interval: opts.MaterializeInterval,
		instance: newInstanceID()}
	dbDir := filepath.Join(opts.Dir, "db")
	var same *Desc
	if len(opts.Descs) > 0 {
		var err error
		if same, err = restorePebble(opts.Restore, opts.Descs, cfg.KeyGroups, opts.Dir, dbDir); err != nil {
			return nil, err
		}
		for _, d := range opts.Descs {
			if d.Start < cfg.KeyGroups.End && cfg.KeyGroups.Start < d.End {
				b.restored = append(b.restored, d.Stores)
			}
		}
	}
	be, err := pebblestate.Open(pebblestate.Options{Dir: dbDir, MemoryBudget: opts.MemoryBudget, Memory: opts.Memory}, cfg)
	if err != nil {
		return nil, err
	}
	b.Backend = be
	if same != nil {
		// Its SST files are in the store already: the next checkpoint
		// lists them rather than uploads them.
		shared := map[string]checkpoint.FileInfo{}
		for _, f := range same.Files {
			if fi, ok := opts.Restore.File(f.Ref); ok && f.Shared {
				shared[f.Local] = fi
			}
		}
		b.confirm(opts.RestoreID, shared)
		if b.changelog {
			b.adoptChain(opts.Restore, *same)
		}
	}
	if b.changelog {
		if err := b.openLog(); err != nil {
			be.Close()
			return nil, err
		}
	}
	return b, nil
}

// Incremental reports whether the backend takes incremental checkpoints
// (else its state is snapshot by key group, as the heap's).
func (b *Backend) Incremental() bool { return b.incremental }

// CheckRestored checks, once Open created the stores, that the state
// restored from files has the types the stores have now.
func (b *Backend) CheckRestored() error {
	for _, lays := range b.restored {
		if err := state.CheckLayouts(b, lays); err != nil {
			return err
		}
	}
	b.restored = nil
	return nil
}
