package checkpoint

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Pending is a checkpoint being written. Its files may be created and
// written by several goroutines at once (one per subtask); each FileWriter
// belongs to one goroutine. A Pending ends with Commit or Abort; deferring
// Abort is safe, as it does nothing after Commit.
type Pending struct {
	s       *Store
	id      int64
	kind    Kind
	dir     string // the .inprogress directory
	final   string
	started time.Time
	managed bool // in s.dir: id reserved, subject to retention
	inPlace bool // written in its final directory (Store.inPlace)

	mu struct {
		sync.Mutex
		files map[string]*fileState
		done  bool
		// pinned are the shared files this Pending created or reuses:
		// retention leaves them alone until it ends.
		pinned []string
	}
}

// fileState is what a Pending knows of a file. Guarded by Pending.mu.
type fileState struct {
	closed bool
	err    error
	info   FileInfo
}

func (s *Store) newPending(id int64, kind Kind, final string, started time.Time, managed bool) (*Pending, error) {
	p := &Pending{s: s, id: id, kind: kind, dir: final + inProgressSuffix, final: final,
		started: started, managed: managed}
	if s.inPlace && managed {
		p.dir, p.inPlace = final, true
	}
	p.mu.files = make(map[string]*fileState)
	if err := s.cfg.fs.MkdirAll(p.dir, 0o755); err != nil {
		return nil, fmt.Errorf("checkpoint: begin %d: %w", id, withPath("mkdir", p.dir, err))
	}
	return p, nil
}

// ID returns the checkpoint's id.
func (p *Pending) ID() int64 { return p.id }

// Kind returns the checkpoint's kind.
func (p *Pending) Kind() Kind { return p.kind }

// Path returns the directory the checkpoint will have once committed.
func (p *Pending) Path() string { return p.final }

// Create creates the state file name in the checkpoint. Names are flat
// (letters, digits, '.', '_', '-'; not starting with '_' or '.') and unique
// within a checkpoint.
func (p *Pending) Create(name string) (*FileWriter, error) {
	if err := validName(name); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	path := filepath.Join(p.dir, name)
	st := new(fileState)
	p.mu.Lock()
	switch {
	case p.mu.done:
		p.mu.Unlock()
		return nil, fmt.Errorf("checkpoint: create %s: %w", path, ErrDone)
	case p.mu.files[name] != nil:
		p.mu.Unlock()
		return nil, fmt.Errorf("checkpoint: create %s: %w", path, ErrExists)
	}
	p.mu.files[name] = st
	p.mu.Unlock()

	f, err := p.s.cfg.fs.Create(path)
	if err != nil {
		p.mu.Lock()
		delete(p.mu.files, name)
		p.mu.Unlock()
		return nil, fmt.Errorf("checkpoint: %w", withPath("create", path, err))
	}
	return &FileWriter{p: p, st: st, name: name, path: path, f: f, bw: bufio.NewWriterSize(f, 64<<10)}, nil
}

// FileWriter writes one state file, buffered, and computes its size and
// CRC-32C as it goes. It is not safe for concurrent use.
type FileWriter struct {
	p    *Pending
	st   *fileState
	name string
	path string // written to: for a shared file, a temporary name
	// final is, for a shared file, the name Close renames path to.
	final string
	f     File
	bw    *bufio.Writer
	size  int64
	crc   uint32
	err   error // sticky

	closed   bool
	info     FileInfo
	closeErr error
}

// Write implements io.Writer. After an error, every call fails: the file is
// lost, and so is the checkpoint unless the caller drops the file.
func (w *FileWriter) Write(b []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, fmt.Errorf("checkpoint: write %s: file closed", w.path)
	}
	n, err := w.bw.Write(b)
	w.size += int64(n)
	w.crc = crc32.Update(w.crc, castagnoli, b[:n])
	if err != nil {
		w.err = fmt.Errorf("checkpoint: %w", withPath("write", w.path, err))
		return n, w.err
	}
	return n, nil
}

// Close flushes, fsyncs and closes the file, and returns its name, size and
// checksum, for the caller to list in the Metadata (with Subtask and
// KeyGroups set). Close is idempotent.
func (w *FileWriter) Close() (FileInfo, error) {
	if w.closed {
		return w.info, w.closeErr
	}
	w.closed = true
	err := w.err
	if err == nil {
		if err = w.bw.Flush(); err != nil {
			err = fmt.Errorf("checkpoint: %w", withPath("write", w.path, err))
		}
	}
	if err == nil {
		if err = w.f.Sync(); err != nil {
			err = fmt.Errorf("checkpoint: %w", withPath("sync", w.path, err))
		}
	}
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("checkpoint: %w", withPath("close", w.path, cerr))
	}
	info := FileInfo{Name: w.name, Size: w.size, CRC32C: Checksum(w.crc)}
	if w.final != "" {
		info.Shared, info.UploadedIn = true, w.p.id
		if err == nil {
			err = w.publishShared()
		}
		if err != nil {
			w.p.s.cfg.fs.Remove(w.path)
		}
	}

	w.p.mu.Lock()
	if err == nil && w.p.mu.done {
		err = fmt.Errorf("checkpoint: close %s: %w", w.path, ErrDone)
	}
	w.st.closed, w.st.err, w.st.info = true, err, info
	w.p.mu.Unlock()

	if err != nil {
		info = FileInfo{}
	}
	w.info, w.closeErr = info, err
	return info, err
}

// publishShared renames a shared file written to its temporary name to its
// final one, and makes that durable.
func (w *FileWriter) publishShared() error {
	fsys := w.p.s.cfg.fs
	if w.path == w.final {
		return nil // written in place
	}
	if err := fsys.Rename(w.path, w.final); err != nil {
		return fmt.Errorf("checkpoint: %w", withPath("rename", w.path, err))
	}
	if err := fsys.SyncDir(filepath.Dir(w.final)); err != nil {
		return fmt.Errorf("checkpoint: %w", withPath("sync", filepath.Dir(w.final), err))
	}
	return nil
}

// CreateShared creates the shared file name (a slash-separated path under
// the store's SharedDirName: see FileInfo.Shared), for an incremental
// checkpoint to list. Names must be unique to their content for as long as
// a checkpoint in the store may list them: a shared file is written once
// and never changed (an SST file of one database instance, named by its
// file number). The file is written under a temporary name and renamed on
// Close, so that a shared file either is complete or does not exist; an
// existing file of the same name is replaced. Savepoints cannot have
// shared files.
func (p *Pending) CreateShared(name string) (*FileWriter, error) {
	if err := p.checkShared(name); err != nil {
		return nil, err
	}
	final := p.s.sharedPath(name)
	path := final + sharedTmpSuffix
	if p.inPlace {
		path = final // whole once closed: no rename (a copy there)
	}
	st := new(fileState)
	if err := p.addShared(name, st); err != nil {
		return nil, err
	}
	fsys := p.s.cfg.fs
	err := mkdirAllSync(fsys, filepath.Dir(final))
	var f File
	if err == nil {
		f, err = fsys.Create(path)
		err = withPath("create", path, err)
	}
	if err != nil {
		p.mu.Lock()
		delete(p.mu.files, name)
		p.mu.Unlock()
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return &FileWriter{p: p, st: st, name: name, path: path, final: final, f: f, bw: bufio.NewWriterSize(f, 64<<10)}, nil
}

// ReuseShared declares that the checkpoint lists the shared file info
// (as an earlier checkpoint of the store listed it, with Shared set and
// UploadedIn the id of the checkpoint that wrote it) without writing it
// again. The file must exist with its listed size; its content is checked
// when it is read, as any file's.
func (p *Pending) ReuseShared(info FileInfo) error {
	if !info.Shared || info.UploadedIn < 1 || info.UploadedIn >= p.id {
		return fmt.Errorf("checkpoint: reuse %s: not a shared file of an earlier checkpoint (shared %t, uploaded in %d)", info.Name, info.Shared, info.UploadedIn)
	}
	if err := p.checkShared(info.Name); err != nil {
		return err
	}
	st := &fileState{closed: true, info: info}
	if err := p.addShared(info.Name, st); err != nil {
		return err
	}
	path := p.s.sharedPath(info.Name)
	fi, err := p.s.cfg.fs.Stat(path)
	switch {
	case err == nil && fi.Size() != info.Size:
		err = corruptf(path, "%d bytes, listed with %d", fi.Size(), info.Size)
	case err != nil:
		err = fmt.Errorf("checkpoint: reuse: %w", err)
	}
	if err != nil {
		p.mu.Lock()
		delete(p.mu.files, info.Name)
		p.mu.Unlock()
	}
	return err
}

func (p *Pending) checkShared(name string) error {
	switch {
	case p.kind == KindSavepoint:
		return fmt.Errorf("checkpoint: shared file %s: a savepoint must be self-contained", name)
	case !p.managed:
		return fmt.Errorf("checkpoint: shared file %s: only checkpoints in the store may have shared files", name)
	}
	if err := validSharedName(name); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// addShared registers st as the shared file name of p, and pins it.
func (p *Pending) addShared(name string, st *fileState) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.mu.done:
		return fmt.Errorf("checkpoint: shared file %s: %w", name, ErrDone)
	case p.mu.files[name] != nil:
		return fmt.Errorf("checkpoint: shared file %s: %w", name, ErrExists)
	}
	p.mu.files[name] = st
	p.mu.pinned = append(p.mu.pinned, name)
	p.s.pin(name, 1)
	return nil
}

// unpin releases the shared files of p, once it is committed or aborted.
func (p *Pending) unpin() {
	p.mu.Lock()
	pinned := p.mu.pinned
	p.mu.pinned = nil
	p.mu.Unlock()
	for _, name := range pinned {
		p.s.pin(name, -1)
	}
}

// Commit completes the checkpoint, described by meta: every file listed
// in meta must have been written and closed, with the size and checksum
// Close returned, and every file written must be listed. Commit sets meta's
// FormatVersion, ID and Kind (an ID or Kind set by the caller must match),
// and Created if zero; meta must not be modified afterwards.
//
// The protocol: write _metadata.tmp, fsync it, rename it to _metadata,
// fsync the directory, rename it to its final name, fsync the parent.
// Then, for a checkpoint, older ones beyond the retention count are
// deleted.
//
// Commit ends the Pending whatever the outcome. On error the in-progress
// directory is removed, and the store holds what it held before: Latest
// returns what it returned before.
func (p *Pending) Commit(meta Metadata) (*Checkpoint, error) {
	p.mu.Lock()
	if p.mu.done {
		p.mu.Unlock()
		return nil, fmt.Errorf("checkpoint: commit %s: %w", p.final, ErrDone)
	}
	p.mu.done = true
	written := make(map[string]fileState, len(p.mu.files))
	for name, st := range p.mu.files {
		written[name] = *st
	}
	p.mu.Unlock()
	if p.managed {
		defer p.s.release(p.id)
	}
	defer p.unpin()

	c, err := p.commit(meta, written)
	if err != nil {
		if rerr := p.s.cfg.fs.RemoveAll(p.dir); rerr != nil {
			p.s.cfg.logger.Warn("checkpoint: could not remove failed checkpoint", "dir", p.dir, "err", rerr)
		}
		return nil, fmt.Errorf("checkpoint: commit %s: %w", p.final, err)
	}
	return c, nil
}

func (p *Pending) commit(meta Metadata, written map[string]fileState) (*Checkpoint, error) {
	fsys := p.s.cfg.fs
	for name, st := range written {
		switch {
		case !st.closed:
			return nil, fmt.Errorf("file %s not closed", name)
		case st.err != nil:
			return nil, fmt.Errorf("file %s failed: %w", name, st.err)
		}
	}
	switch {
	case meta.ID != 0 && meta.ID != p.id:
		return nil, fmt.Errorf("metadata has id %d, checkpoint is %d", meta.ID, p.id)
	case meta.Kind != "" && meta.Kind != p.kind:
		return nil, fmt.Errorf("metadata has kind %q, checkpoint is a %s", meta.Kind, p.kind)
	}
	meta.FormatVersion, meta.ID, meta.Kind = 1, p.id, p.kind
	if meta.HasShared() {
		meta.FormatVersion = sharedVersion
	}
	if meta.Created.IsZero() {
		meta.Created = p.started.UTC()
	}
	meta.Created = meta.Created.Round(0) // no monotonic reading: it does not survive JSON
	meta.Operators = slices.Clone(meta.Operators)
	for i := range meta.Operators {
		if meta.Operators[i].Files == nil {
			meta.Operators[i].Files = []FileInfo{} // "files": [], not null
		}
	}
	if err := meta.validate(); err != nil {
		return nil, fmt.Errorf("invalid metadata: %w", err)
	}
	listed := 0
	for _, op := range meta.Operators {
		for _, f := range op.Files {
			st, ok := written[f.Name]
			switch {
			case !ok:
				return nil, fmt.Errorf("file %s is listed in the metadata but was not written", f.Name)
			case st.info.Size != f.Size || st.info.CRC32C != f.CRC32C:
				return nil, fmt.Errorf("file %s is listed with size %d crc32c %v, but was written with size %d crc32c %v",
					f.Name, f.Size, f.CRC32C, st.info.Size, st.info.CRC32C)
			case st.info.Shared != f.Shared || st.info.UploadedIn != f.UploadedIn:
				return nil, fmt.Errorf("file %s is listed as shared %t uploaded in %d, but was written as shared %t uploaded in %d",
					f.Name, f.Shared, f.UploadedIn, st.info.Shared, st.info.UploadedIn)
			}
			listed++
		}
	}
	if listed != len(written) {
		for name := range written {
			if !slices.ContainsFunc(meta.Operators, func(op OperatorState) bool {
				return slices.ContainsFunc(op.Files, func(f FileInfo) bool { return f.Name == name })
			}) {
				return nil, fmt.Errorf("file %s was written but is not listed in the metadata", name)
			}
		}
	}
	data, err := encodeMetadata(&meta)
	if err != nil {
		return nil, fmt.Errorf("encoding metadata: %w", err)
	}
	if p.inPlace {
		return p.commitInPlace(&meta, data)
	}

	tmp := filepath.Join(p.dir, metadataTmp)
	if err := writeFileSync(fsys, tmp, data); err != nil {
		return nil, err
	}
	if err := fsys.Rename(tmp, filepath.Join(p.dir, metadataName)); err != nil {
		return nil, withPath("rename", tmp, err)
	}
	// The copy: a bad sector in one of the two is repaired from the other
	// (see load), instead of making a restore fall back to an older
	// checkpoint, whose sinks' output may be committed already. The
	// directory is not published yet, so it needs no rename of its own.
	if err := writeFileSync(fsys, filepath.Join(p.dir, metadataCopyName), data); err != nil {
		return nil, err
	}
	if !p.managed {
		// A completed savepoint is no leftover for a later attempt to
		// remove: the owner marker goes before it is published.
		if err := fsys.Remove(filepath.Join(p.dir, ownerMarker)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, withPath("remove", filepath.Join(p.dir, ownerMarker), err)
		}
	}
	if err := fsys.SyncDir(p.dir); err != nil {
		return nil, withPath("sync", p.dir, err)
	}

	if p.managed {
		p.s.commitMu.Lock()
		defer p.s.commitMu.Unlock()
	}
	if err := p.checkPublishable(); err != nil {
		return nil, err
	}
	if err := fsys.Rename(p.dir, p.final); err != nil {
		return nil, withPath("rename", p.dir, err)
	}
	parent := filepath.Dir(p.final)
	if err := fsys.SyncDir(parent); err != nil {
		// Whether the checkpoint would survive a crash is unknown. Report
		// the failure, and remove it so that a restart agrees with the
		// report: the caller will not have told sinks to commit.
		if rerr := fsys.RemoveAll(p.final); rerr != nil {
			p.s.cfg.logger.Error("checkpoint: could not remove checkpoint whose commit failed; restore may pick it",
				"dir", p.final, "err", rerr)
		}
		return nil, withPath("sync", parent, err)
	}
	c := newCheckpoint(fsys, p.final, &meta)
	p.s.cfg.logger.Debug("checkpoint: committed", "checkpoint", c)
	if p.managed && p.kind == KindCheckpoint {
		p.s.pruneLocked()
	}
	return c, nil
}

// commitInPlace publishes a checkpoint written in place: with no newer
// one committed, it writes the metadata's copy and then the metadata in
// the checkpoint's directory. The checkpoint is complete once either is
// whole (an object appears whole when uploaded); every state file is
// already. A failure removes the directory (Commit), as a crash before
// the first metadata file leaves one that the next Open removes.
func (p *Pending) commitInPlace(meta *Metadata, data []byte) (*Checkpoint, error) {
	fsys := p.s.cfg.fs
	p.s.commitMu.Lock()
	defer p.s.commitMu.Unlock()
	if err := p.checkNewer(); err != nil {
		return nil, err
	}
	if err := writeFileSync(fsys, filepath.Join(p.dir, metadataCopyName), data); err != nil {
		return nil, err
	}
	if err := writeFileSync(fsys, filepath.Join(p.dir, metadataName), data); err != nil {
		return nil, err
	}
	c := newCheckpoint(fsys, p.final, meta)
	p.s.cfg.logger.Debug("checkpoint: committed in place", "checkpoint", c)
	// no longer pending: retention counts it (Commit releases it again)
	p.s.release(p.id)
	if p.kind == KindCheckpoint {
		p.s.pruneLocked()
	}
	return c, nil
}

// checkPublishable checks that the final directory is free and, for a
// checkpoint, that no newer one completed meanwhile.
func (p *Pending) checkPublishable() error {
	fsys := p.s.cfg.fs
	if _, err := fsys.Stat(p.final); err == nil {
		return fmt.Errorf("%w: %s", ErrExists, p.final)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return p.checkNewer()
}

// checkNewer checks, for a checkpoint of the store, that no newer one is
// committed (ErrSubsumed).
func (p *Pending) checkNewer() error {
	fsys := p.s.cfg.fs
	if !p.managed || p.kind != KindCheckpoint {
		return nil
	}
	entries, err := p.s.scan()
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.kind != KindCheckpoint || e.inProgress || e.id <= p.id {
			continue
		}
		if _, err := fsys.Stat(filepath.Join(e.path, metadataName)); err == nil {
			return fmt.Errorf("%w: %s", ErrSubsumed, e.path)
		}
	}
	return nil
}

// Abort abandons the checkpoint and removes its directory. It does nothing
// after Commit or Abort. FileWriters still open fail on Close.
func (p *Pending) Abort() error {
	p.mu.Lock()
	if p.mu.done {
		p.mu.Unlock()
		return nil
	}
	p.mu.done = true
	p.mu.Unlock()
	if p.managed {
		defer p.s.release(p.id)
	}
	// Shared files it wrote stay until retention finds them unlisted.
	defer p.unpin()
	if err := p.s.cfg.fs.RemoveAll(p.dir); err != nil {
		return fmt.Errorf("checkpoint: abort: %w", withPath("removeall", p.dir, err))
	}
	return nil
}

func writeFileSync(fsys FS, path string, data []byte) error {
	f, err := fsys.Create(path)
	if err != nil {
		return withPath("create", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return withPath("write", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return withPath("sync", path, err)
	}
	return withPath("close", path, f.Close())
}
