package checkpoint

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

const inProgressSuffix = ".inprogress"

// Store is a checkpoint directory. Its methods are safe for concurrent use
// by the goroutines of one process. One process at a time may write to a
// directory (nothing here locks it against another); another process that
// reads it, such as the CLI with ReadOnly, may see a checkpoint vanish
// under retention.
type Store struct {
	dir string
	cfg config
	// inPlace: the store's file system creates files whole and renames by
	// copying (object storage), so checkpoints are written in place: in
	// their final directory, complete once a metadata file is written,
	// shared files and commit records under their final names.
	inPlace bool

	// commitMu serializes the publishing step of commits (the check for a
	// newer checkpoint, the rename, retention), so that concurrent commits
	// see each other's results, and Latest and List (read-locked) do not
	// see a checkpoint vanish under retention. It is held during that I/O:
	// it orders I/O, it guards no fields.
	commitMu sync.RWMutex

	mu struct {
		sync.Mutex
		// pending holds the ids of Pendings in dir that are neither
		// committed nor aborted.
		pending map[int64]bool
		// pinned counts, per shared file, the Pendings that wrote or
		// reuse it: retention does not delete those.
		pinned map[string]int
	}
}

// Open opens the checkpoint directory dir, creating it if needed, and
// removes the in-progress checkpoints a crash left behind: they were never
// committed, and nothing may restore from them.
func Open(dir string, opts ...Option) (*Store, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	s := &Store{dir: filepath.Clean(dir), cfg: cfg}
	s.inPlace = atomicCreate(cfg.fs, s.dir)
	s.mu.pending = make(map[int64]bool)
	s.mu.pinned = make(map[string]int)
	if cfg.readOnly {
		if _, err := cfg.fs.Stat(s.dir); err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		return s, nil
	}
	if _, err := cfg.fs.Stat(s.dir); errors.Is(err, fs.ErrNotExist) {
		if err := cfg.fs.MkdirAll(s.dir, 0o755); err != nil {
			return nil, fmt.Errorf("checkpoint: %w", withPath("mkdir", s.dir, err))
		}
		if err := cfg.fs.SyncDir(filepath.Dir(s.dir)); err != nil {
			return nil, fmt.Errorf("checkpoint: %w", withPath("sync", filepath.Dir(s.dir), err))
		}
	} else if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	entries, err := s.scan()
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.inProgress {
			continue
		}
		cfg.logger.Warn("checkpoint: removing in-progress checkpoint left by a crash", "dir", e.path)
		if err := cfg.fs.RemoveAll(e.path); err != nil {
			return nil, fmt.Errorf("checkpoint: removing leftover: %w", withPath("removeall", e.path, err))
		}
	}
	// Shared files that a crash left unlisted (written for a checkpoint
	// that never completed).
	s.commitMu.Lock()
	s.gcSharedLocked()
	s.commitMu.Unlock()
	return s, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// LogValue implements slog.LogValuer.
func (s *Store) LogValue() slog.Value {
	return slog.GroupValue(slog.String("dir", s.dir), slog.String("config", s.cfg.String()))
}

// Begin starts writing checkpoint id of the given kind in the store's
// directory, in chk-<id>.inprogress (savepoint-<id>-<unix>.inprogress for a
// savepoint). The id must be greater than that of every checkpoint and
// savepoint in the directory (ErrStaleID; see NextID): Latest orders
// checkpoints by id.
func (s *Store) Begin(id int64, kind Kind) (*Pending, error) {
	switch {
	case s.cfg.readOnly:
		return nil, ErrReadOnly
	case id < 1:
		return nil, fmt.Errorf("checkpoint: begin: id %d: must be at least 1", id)
	case !kind.valid():
		return nil, fmt.Errorf("checkpoint: begin: kind %q: want %q or %q", kind, KindCheckpoint, KindSavepoint)
	}
	s.mu.Lock()
	if s.mu.pending[id] {
		s.mu.Unlock()
		return nil, fmt.Errorf("checkpoint: begin %d: %w: already in progress", id, ErrExists)
	}
	s.mu.pending[id] = true
	s.mu.Unlock()

	p, err := s.begin(id, kind)
	if err != nil {
		s.release(id)
		return nil, err
	}
	return p, nil
}

func (s *Store) begin(id int64, kind Kind) (*Pending, error) {
	entries, err := s.scan()
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.id >= id {
			return nil, fmt.Errorf("checkpoint: begin %d: %w: %s", id, ErrStaleID, e.path)
		}
	}
	started := time.Now()
	name := fmt.Sprintf("chk-%010d", id)
	if kind == KindSavepoint {
		name = fmt.Sprintf("savepoint-%d-%d", id, started.Unix())
	}
	final := filepath.Join(s.dir, name)
	return s.newPending(id, kind, final, started, true)
}

// BeginSavepointAt starts writing savepoint id to the directory path, which
// must not exist: a savepoint the user named. It is written in
// path.inprogress and renamed to path on Commit; a leftover path.inprogress
// from an earlier attempt is removed. The savepoint is not part of the
// store: Latest and List do not see it, and OpenPath opens it.
func (s *Store) BeginSavepointAt(path string, id int64) (*Pending, error) {
	switch {
	case s.cfg.readOnly:
		return nil, ErrReadOnly
	case id < 1:
		return nil, fmt.Errorf("checkpoint: begin: id %d: must be at least 1", id)
	}
	final := filepath.Clean(path)
	if strings.HasSuffix(final, inProgressSuffix) {
		return nil, fmt.Errorf("checkpoint: begin savepoint: %s: the suffix %s is reserved for savepoints being written", final, inProgressSuffix)
	}
	// A name that looks like a store's must tell the truth: OpenPath
	// checks it against the metadata.
	if dn, ok := parseDirName(filepath.Base(final)); ok && (dn.inProgress || dn.kind != KindSavepoint || dn.id != id) {
		return nil, fmt.Errorf("checkpoint: begin savepoint: %s is named like another checkpoint than savepoint %d", final, id)
	}
	if _, err := s.cfg.fs.Stat(final); err == nil {
		return nil, fmt.Errorf("checkpoint: begin savepoint: %w: %s", ErrExists, final)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint: begin savepoint: %w", err)
	}
	tmp := final + inProgressSuffix
	if _, err := s.cfg.fs.Stat(tmp); err == nil {
		// The path is the user's: remove only what an earlier attempt of
		// weir left there, never a directory someone else made.
		if _, err := s.cfg.fs.Stat(filepath.Join(tmp, ownerMarker)); err != nil {
			return nil, fmt.Errorf("checkpoint: begin savepoint: %w: %s was not made by weir (no %s in it); remove it or choose another path",
				ErrExists, tmp, ownerMarker)
		}
		// Never a completed savepoint (an older weir kept the marker in
		// it, and a user could name one X.inprogress).
		if _, err := s.cfg.fs.Stat(filepath.Join(tmp, metadataName)); err == nil {
			return nil, fmt.Errorf("checkpoint: begin savepoint: %w: %s holds a completed savepoint; move it or choose another path",
				ErrExists, tmp)
		}
		s.cfg.logger.Warn("checkpoint: removing in-progress savepoint left by an earlier attempt", "dir", tmp)
		if err := s.cfg.fs.RemoveAll(tmp); err != nil {
			return nil, fmt.Errorf("checkpoint: begin savepoint: %w", withPath("removeall", tmp, err))
		}
	}
	p, err := s.newPending(id, KindSavepoint, final, time.Now(), false)
	if err != nil {
		return nil, err
	}
	if err := writeFileSync(s.cfg.fs, filepath.Join(p.dir, ownerMarker), []byte("weir savepoint in progress\n")); err != nil {
		p.Abort()
		return nil, fmt.Errorf("checkpoint: begin savepoint: %w", err)
	}
	return p, nil
}

// ownerMarker marks a savepoint's .inprogress directory at a user-named
// path as weir's, so that a later attempt may remove it. It starts with
// '_', which no state file name may; Commit removes it before it
// publishes the savepoint.
const ownerMarker = "_weir_inprogress"

func (s *Store) release(id int64) {
	s.mu.Lock()
	delete(s.mu.pending, id)
	s.mu.Unlock()
}

// NextID returns an id that Begin accepts: one more than the greatest id
// of a checkpoint or savepoint in the directory (complete, corrupt or in
// progress), or 1 if there is none.
func (s *Store) NextID() (int64, error) {
	entries, err := s.scan()
	if err != nil {
		return 0, err
	}
	var last int64
	for _, e := range entries {
		last = max(last, e.id)
	}
	// Committed output names its checkpoint (part files, producer
	// sequences): after a fallback the ids must not be reused.
	rec, err := s.maxRecordID()
	if err != nil {
		return 0, err
	}
	last = max(last, rec)
	s.mu.Lock()
	for id := range s.mu.pending {
		last = max(last, id)
	}
	s.mu.Unlock()
	return last + 1, nil
}

// Latest returns the newest checkpoint or savepoint in the directory that
// passes validation: its metadata parses, its checksum matches, its format
// version is supported, and every file it lists exists with the listed
// size. File contents are checked as they are read, or by
// Checkpoint.Verify; with the VerifyContents option, Latest verifies them
// too.
//
// An unusable newer checkpoint is logged, naming the directory and the
// reason, and skipped for an older one. Savepoints count: sinks may have
// committed on a savepoint, and restoring an older checkpoint would
// replay what they committed. An I/O error is returned as is rather than
// skipped, since falling back on a transient error would rewind the job for
// nothing.
//
// With no checkpoint at all, Latest returns ErrNoCheckpoint; if none is
// usable, a *NoValidCheckpointError that lists each one and why.
func (s *Store) Latest() (*Checkpoint, error) {
	s.commitMu.RLock()
	defer s.commitMu.RUnlock()
	entries, err := s.scan()
	if err != nil {
		return nil, err
	}
	var rejected []Rejection
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.inProgress {
			continue
		}
		c, _, err := s.load(e.path)
		if err == nil {
			return c, nil
		}
		if !IsUnusable(err) {
			return nil, err
		}
		s.cfg.logger.Warn("checkpoint: skipping unusable checkpoint", "dir", e.path, "reason", err)
		rejected = append(rejected, Rejection{Path: e.path, Err: err})
	}
	if len(rejected) == 0 {
		return nil, fmt.Errorf("%w in %s", ErrNoCheckpoint, s.dir)
	}
	return nil, &NoValidCheckpointError{Dir: s.dir, Rejected: rejected}
}

// Info describes a checkpoint directory, for listing.
type Info struct {
	Path       string
	ID         int64
	Kind       Kind
	InProgress bool // being written (or left by a crash, if the store is read-only)
	Complete   bool // not in progress, and has a _metadata file
	// Err says why the checkpoint cannot be restored; nil if it can (and
	// for one in progress).
	Err error
	// From the metadata, if it could be read.
	Created   time.Time
	Size      int64 // of the state files
	Operators int
}

// Valid reports whether the checkpoint can be restored.
func (i Info) Valid() bool { return i.Complete && i.Err == nil }

// List describes every checkpoint and savepoint directory in the store,
// oldest first, validated as Latest does. I/O errors on one checkpoint are
// reported in its Info.
func (s *Store) List() ([]Info, error) {
	s.commitMu.RLock()
	defer s.commitMu.RUnlock()
	entries, err := s.scan()
	if err != nil {
		return nil, err
	}
	infos := make([]Info, 0, len(entries))
	for _, e := range entries {
		info := Info{Path: e.path, ID: e.id, Kind: e.kind, InProgress: e.inProgress}
		if !e.inProgress {
			var c *Checkpoint
			c, info.Complete, info.Err = s.load(e.path)
			if c != nil {
				info.Created = c.meta.Created
				info.Size = c.meta.TotalSize()
				info.Operators = len(c.meta.Operators)
			}
		}
		infos = append(infos, info)
	}
	return infos, nil
}

// load is the package's load, followed by Checkpoint.Verify with the
// VerifyContents option.
func (s *Store) load(path string) (*Checkpoint, bool, error) {
	c, hasMeta, err := load(s.cfg.fs, path)
	if c != nil && c.fix != nil {
		s.repair(c)
	}
	if err == nil && s.cfg.verifyContents {
		err = c.Verify()
	}
	return c, hasMeta, err
}

// repair rewrites the damaged copy of a checkpoint's metadata from the
// good one (a read-only store only logs it). A failed repair is logged:
// the checkpoint is usable from the good copy either way.
func (s *Store) repair(c *Checkpoint) {
	fix := c.fix
	c.fix = nil
	path := filepath.Join(c.path, fix.name)
	if s.cfg.readOnly {
		s.cfg.logger.Warn("checkpoint: one copy of the metadata is damaged; the other is good (not repaired: read-only)",
			"file", path, "reason", fix.reason)
		return
	}
	tmp := path + ".tmp"
	err := writeFileSync(s.cfg.fs, tmp, fix.data)
	if err == nil {
		err = withPath("rename", tmp, s.cfg.fs.Rename(tmp, path))
	}
	if err == nil {
		err = withPath("sync", c.path, s.cfg.fs.SyncDir(c.path))
	}
	if err != nil {
		s.cfg.logger.Warn("checkpoint: one copy of the metadata is damaged; the other is good; repair failed",
			"file", path, "reason", fix.reason, "err", err)
		return
	}
	s.cfg.logger.Warn("checkpoint: repaired a damaged copy of the metadata from the other copy",
		"file", path, "reason", fix.reason)
}

// pruneLocked deletes the checkpoints (not savepoints) older than the
// newest Retain valid ones. Failures are logged: the checkpoint that was
// just committed stands whatever happens here. s.commitMu must be held.
func (s *Store) pruneLocked() {
	entries, err := s.scan()
	if err != nil {
		s.cfg.logger.Warn("checkpoint: retention skipped", "err", err)
		return
	}
	// Count valid checkpoints, not merely complete ones: a corrupt one must
	// not push the last good one out.
	cutoff, kept := int64(-1), 0
	for i := len(entries) - 1; i >= 0 && cutoff < 0; i-- {
		if e := entries[i]; e.kind == KindCheckpoint && !e.inProgress {
			if _, _, err := load(s.cfg.fs, e.path); err == nil {
				if kept++; kept == s.cfg.retain {
					cutoff = e.id
				}
			}
		}
	}
	for _, e := range entries {
		if e.kind != KindCheckpoint || e.inProgress || e.id >= cutoff {
			continue
		}
		if err := s.cfg.fs.RemoveAll(e.path); err != nil {
			s.cfg.logger.Warn("checkpoint: could not remove old checkpoint", "dir", e.path, "err", err)
			continue
		}
		s.cfg.logger.Debug("checkpoint: removed old checkpoint", "dir", e.path)
	}
	if left, err := s.scan(); err == nil {
		s.pruneRecordsLocked(left)
	}
	s.gcSharedLocked()
}

// entry is a checkpoint directory found in the store.
type entry struct {
	path string
	dirName
}

type dirName struct {
	id         int64
	kind       Kind
	inProgress bool
}

// scan lists the checkpoint directories of the store by id, oldest first.
// Other entries are ignored.
func (s *Store) scan() ([]entry, error) {
	des, err := s.cfg.fs.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", withPath("readdir", s.dir, err))
	}
	var entries []entry
	for _, de := range des {
		if !de.IsDir() {
			continue
		}
		if dn, ok := parseDirName(de.Name()); ok {
			e := entry{path: filepath.Join(s.dir, de.Name()), dirName: dn}
			if s.inPlace && !dn.inProgress && !s.hasMetadata(e) {
				// written in place, and not complete (yet)
				e.inProgress = true
			}
			entries = append(entries, e)
		}
	}
	slices.SortStableFunc(entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.id, b.id), strings.Compare(a.path, b.path))
	})
	return entries, nil
}

// parseDirName parses chk-<id>, savepoint-<id>-<unix>, and either with
// the .inprogress suffix.
func parseDirName(name string) (dirName, bool) {
	var d dirName
	name, d.inProgress = strings.CutSuffix(name, inProgressSuffix)
	if rest, ok := strings.CutPrefix(name, "chk-"); ok {
		id, ok := parseID(rest)
		d.id, d.kind = id, KindCheckpoint
		return d, ok
	}
	if rest, ok := strings.CutPrefix(name, "savepoint-"); ok {
		idText, unix, ok := strings.Cut(rest, "-")
		if !ok {
			return d, false
		}
		id, ok1 := parseID(idText)
		_, ok2 := parseID(unix)
		d.id, d.kind = id, KindSavepoint
		return d, ok1 && ok2
	}
	return d, false
}

func parseID(s string) (int64, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil
}

// hasMetadata reports whether a checkpoint written in place has a
// metadata file (either copy): it is complete, if valid. One being
// written by this store has none yet.
func (s *Store) hasMetadata(e entry) bool {
	s.mu.Lock()
	pending := s.mu.pending[e.id]
	s.mu.Unlock()
	if pending {
		return false
	}
	for _, name := range []string{metadataName, metadataCopyName} {
		if _, err := s.cfg.fs.Stat(filepath.Join(e.path, name)); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return true // (an error other than missing: let load say it)
		}
	}
	return false
}
