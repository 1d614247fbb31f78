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

	mu struct {
		sync.Mutex
		files map[string]*fileState
		done  bool
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
	path string
	f    File
	bw   *bufio.Writer
	size int64
	crc  uint32
	err  error // sticky

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
	meta.FormatVersion, meta.ID, meta.Kind = FormatVersion, p.id, p.kind
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

	tmp := filepath.Join(p.dir, metadataTmp)
	if err := writeFileSync(fsys, tmp, data); err != nil {
		return nil, err
	}
	if err := fsys.Rename(tmp, filepath.Join(p.dir, metadataName)); err != nil {
		return nil, withPath("rename", tmp, err)
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

// checkPublishable checks that the final directory is free and, for a
// checkpoint, that no newer one completed meanwhile.
func (p *Pending) checkPublishable() error {
	fsys := p.s.cfg.fs
	if _, err := fsys.Stat(p.final); err == nil {
		return fmt.Errorf("%w: %s", ErrExists, p.final)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
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
