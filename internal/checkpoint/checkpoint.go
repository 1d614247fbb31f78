package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
)

// Checkpoint is a complete checkpoint or savepoint, opened for reading.
// Its methods are safe for concurrent use.
type Checkpoint struct {
	fs    FS
	path  string
	meta  *Metadata
	files map[string]FileInfo
	// fix is set when one of the two copies of the metadata is damaged
	// (or missing) and the other is good: Store.load rewrites it.
	fix *metadataFix
}

// metadataFix says which copy of the metadata to rewrite, with what.
type metadataFix struct {
	name   string // metadataName or metadataCopyName
	reason string
	data   []byte
}

// readMetadata reads the metadata of the checkpoint in dir from _metadata
// or, if that is missing or corrupt, from its copy _metadata.copy. An I/O
// error other than a missing file is returned as is (not as corrupt): the
// checkpoint may be fine. A *VersionError is returned as is too: the copy
// holds the same bytes. With both copies bad, the error is the primary's,
// naming the copy's problem as well. hasMeta reports whether either file
// exists. fix is set when one copy is bad and the other good.
func readMetadata(fsys FS, dir string) (m *Metadata, hasMeta bool, fix *metadataFix, err error) {
	mpath := filepath.Join(dir, metadataName)
	cpath := filepath.Join(dir, metadataCopyName)
	data, err := readAll(fsys, mpath, maxMetadataSize+1)
	var perr error // why the primary is unusable
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, serr := fsys.Stat(dir); serr != nil {
			return nil, false, nil, fmt.Errorf("checkpoint: %w", serr)
		}
		perr = corruptf(dir, "no %s file: not a complete checkpoint", metadataName)
	case err != nil:
		return nil, false, nil, fmt.Errorf("checkpoint: %w", err)
	default:
		hasMeta = true
		m, perr = decodeMetadata(mpath, data)
		if perr == nil || errors.Is(perr, ErrUnsupportedVersion) {
			if perr == nil {
				fix = checkCopy(fsys, cpath, data)
			}
			return m, true, fix, perr
		}
	}
	cdata, err := readAll(fsys, cpath, maxMetadataSize+1)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, hasMeta, nil, perr // written before copies existed, or lost too
	case err != nil:
		return nil, true, nil, fmt.Errorf("checkpoint: %w", err)
	}
	cm, cerr := decodeMetadata(cpath, cdata)
	if cerr != nil {
		var ce *CorruptError
		if errors.As(perr, &ce) && errors.Is(cerr, ErrCorrupt) {
			var cc *CorruptError
			errors.As(cerr, &cc)
			return nil, true, nil, corruptf(ce.Path, "%s; its copy %s too: %s", ce.Reason, metadataCopyName, cc.Reason)
		}
		return nil, true, nil, perr
	}
	return cm, true, &metadataFix{name: metadataName, reason: perr.Error(), data: cdata}, nil
}

// checkCopy compares the copy of a good _metadata with it: a copy that
// exists and differs (or cannot be read) is to be rewritten. A missing
// copy is left alone: the checkpoint predates copies.
func checkCopy(fsys FS, cpath string, want []byte) *metadataFix {
	got, err := readAll(fsys, cpath, maxMetadataSize+1)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return &metadataFix{name: metadataCopyName, reason: err.Error(), data: want}
	case !bytes.Equal(got, want):
		return &metadataFix{name: metadataCopyName, reason: "differs from " + metadataName, data: want}
	}
	return nil
}

func newCheckpoint(fsys FS, path string, m *Metadata) *Checkpoint {
	c := &Checkpoint{fs: fsys, path: path, meta: m, files: make(map[string]FileInfo)}
	for _, op := range m.Operators {
		for _, f := range op.Files {
			c.files[f.Name] = f
		}
	}
	return c
}

// OpenPath opens the checkpoint or savepoint in directory path, validated
// as Store.Latest does: to restore from a savepoint, or to inspect one.
// Of the options, only WithFS matters.
func OpenPath(path string, opts ...Option) (*Checkpoint, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	c, _, err := load(cfg.fs, filepath.Clean(path))
	return c, err
}

// load reads and validates the checkpoint in dir. It returns the
// checkpoint whenever its metadata could be read, even if err says it is
// unusable (List shows what it can), and whether dir has a _metadata file.
func load(fsys FS, dir string) (c *Checkpoint, hasMeta bool, err error) {
	name, named := parseDirName(filepath.Base(dir))
	if named && name.inProgress {
		return nil, false, corruptf(dir, "in progress: never committed")
	}
	mpath := filepath.Join(dir, metadataName)
	m, hasMeta, fix, err := readMetadata(fsys, dir)
	if err != nil {
		return nil, hasMeta, err
	}
	switch {
	case named && m.ID != name.id:
		return nil, true, corruptf(mpath, "checkpoint id %d, but the directory is named for %d", m.ID, name.id)
	case named && m.Kind != name.kind:
		return nil, true, corruptf(mpath, "kind %s, but the directory is named for a %s", m.Kind, name.kind)
	}
	c = newCheckpoint(fsys, dir, m)
	c.fix = fix
	for _, op := range m.Operators {
		for _, f := range op.Files {
			path := c.FilePath(f)
			st, err := fsys.Stat(path)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return c, true, corruptf(path, "missing (listed with %d bytes)", f.Size)
			case err != nil:
				return c, true, fmt.Errorf("checkpoint: %w", err)
			case !st.Mode().IsRegular():
				return c, true, corruptf(path, "not a regular file")
			case st.Size() != f.Size:
				return c, true, corruptf(path, "%d bytes, listed with %d", st.Size(), f.Size)
			}
		}
	}
	return c, true, nil
}

func readAll(fsys FS, path string, limit int64) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, limit))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return data, withPath("read", path, err)
}

// Path returns the checkpoint's directory.
func (c *Checkpoint) Path() string { return c.path }

// ID returns the checkpoint's id.
func (c *Checkpoint) ID() int64 { return c.meta.ID }

// Kind returns the checkpoint's kind.
func (c *Checkpoint) Kind() Kind { return c.meta.Kind }

// Metadata returns the checkpoint's metadata. It must not be modified.
func (c *Checkpoint) Metadata() *Metadata { return c.meta }

// File returns the listing of the state file name.
func (c *Checkpoint) File(name string) (FileInfo, bool) {
	f, ok := c.files[name]
	return f, ok
}

// FilePath returns the path of the file f of the checkpoint: in its
// directory, or, for a shared file, in the shared area next to it.
func (c *Checkpoint) FilePath(f FileInfo) string {
	if f.Shared {
		return filepath.Join(filepath.Dir(c.path), SharedDirName, filepath.FromSlash(f.Name))
	}
	return filepath.Join(c.path, f.Name)
}

// LogValue implements slog.LogValuer.
func (c *Checkpoint) LogValue() slog.Value {
	return slog.GroupValue(slog.Int64("id", c.meta.ID), slog.String("kind", string(c.meta.Kind)),
		slog.String("path", c.path), slog.Int64("size", c.meta.TotalSize()))
}

// Open opens the state file name for reading. The reader checks the size
// and checksum the metadata lists: when the file is read to its end, a
// mismatch makes Read return a *CorruptError instead of io.EOF. A caller
// that stops early gets no such check.
func (c *Checkpoint) Open(name string) (io.ReadCloser, error) {
	info, ok := c.files[name]
	if !ok {
		return nil, fmt.Errorf("checkpoint: %s is not a file of %s: %w", name, c.path, fs.ErrNotExist)
	}
	path := c.FilePath(info)
	f, err := c.fs.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, corruptf(path, "missing (listed with %d bytes)", info.Size)
	} else if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", withPath("open", path, err))
	}
	return &verifyingReader{f: f, path: path, want: info}, nil
}

// ReadFile reads the state file name and checks it, as Open does.
func (c *Checkpoint) ReadFile(name string) ([]byte, error) {
	r, err := c.Open(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var buf bytes.Buffer
	buf.Grow(int(c.files[name].Size) + bytes.MinRead) // room to see EOF without growing
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Verify reads every state file and checks its size and checksum. It
// returns every problem it finds, joined.
func (c *Checkpoint) Verify() error {
	var errs []error
	for _, op := range c.meta.Operators {
		for _, f := range op.Files {
			r, err := c.Open(f.Name)
			if err == nil {
				_, err = io.Copy(io.Discard, r)
				r.Close()
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// verifyingReader reads a state file and checks it against its listing.
type verifyingReader struct {
	f    File
	path string
	want FileInfo
	n    int64
	crc  uint32
	err  error // sticky
}

func (r *verifyingReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.f.Read(p)
	r.n += int64(n)
	r.crc = crc32.Update(r.crc, castagnoli, p[:n])
	switch {
	case r.n > r.want.Size:
		// Caught before EOF, so that a caller does not read a huge file
		// to learn it is wrong.
		r.err = corruptf(r.path, "longer than the %d bytes listed", r.want.Size)
	case err == io.EOF && r.n < r.want.Size:
		r.err = corruptf(r.path, "%d bytes, listed with %d", r.n, r.want.Size)
	case err == io.EOF && Checksum(r.crc) != r.want.CRC32C:
		r.err = corruptf(r.path, "checksum mismatch: content has crc32c %v, listed with %v", Checksum(r.crc), r.want.CRC32C)
	case err != nil && err != io.EOF:
		r.err = fmt.Errorf("checkpoint: %w", withPath("read", r.path, err))
	default:
		return n, err
	}
	return n, r.err
}

func (r *verifyingReader) Close() error { return r.f.Close() }
