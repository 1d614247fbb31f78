package checkpoint

import (
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"
)

// Op is a kind of FS operation, for FaultFS.
type Op uint8

// The operations FaultFS can fail. OpRead, OpWrite, OpSync and OpClose are
// operations on an open File.
const (
	OpCreate Op = iota + 1
	OpOpen
	OpRead
	OpWrite
	OpSync
	OpClose
	OpRename
	OpRemove
	OpRemoveAll
	OpMkdirAll
	OpReadDir
	OpStat
	OpSyncDir
)

var opNames = [...]string{"", "create", "open", "read", "write", "sync", "close", "rename",
	"remove", "removeall", "mkdirall", "readdir", "stat", "syncdir"}

func (o Op) String() string {
	if int(o) < len(opNames) && o != 0 {
		return opNames[o]
	}
	return "op?"
}

// Fault is an error for FaultFS to inject.
type Fault struct {
	Op Op
	// Path restricts the fault to operations on a path that contains it
	// (either path, for a rename). Empty matches every path.
	Path string
	// N fails the Nth matching operation, counted from Inject, and that one
	// only. Zero fails every matching operation.
	N int
	// Err is the cause, returned inside an *fs.PathError (*os.LinkError
	// for a rename) that names the path. Nil means syscall.EIO.
	Err error
}

// FaultFS wraps an FS and fails the operations its faults select, like
// pebble's errorfs: for tests of what a failed checkpoint leaves behind. It
// also simulates a full disk (SetSpace). It is safe for concurrent use.
//
// Data that was written but not synced is not lost on a simulated failure:
// FaultFS injects errors, it does not simulate crashes.
type FaultFS struct {
	fs FS
	mu struct {
		sync.Mutex
		faults   []*faultState
		space    int64 // bytes that may still be written; < 0: unlimited
		injected int
	}
}

type faultState struct {
	Fault
	seen  int
	spent bool
}

// NewFaultFS returns a FaultFS over inner (Default if nil) that injects
// nothing until told to.
func NewFaultFS(inner FS) *FaultFS {
	if inner == nil {
		inner = Default
	}
	f := &FaultFS{fs: inner}
	f.mu.space = -1
	return f
}

// Inject adds faults.
func (f *FaultFS) Inject(faults ...Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ft := range faults {
		if ft.Err == nil {
			ft.Err = syscall.EIO
		}
		f.mu.faults = append(f.mu.faults, &faultState{Fault: ft})
	}
}

// SetSpace simulates a disk with n bytes free: once n more bytes have been
// written, a write stores what still fits and fails with ENOSPC, and so
// does every later write. Removing files frees nothing. n < 0 means
// unlimited (the default).
func (f *FaultFS) SetSpace(n int64) {
	f.mu.Lock()
	f.mu.space = n
	f.mu.Unlock()
}

// Reset removes every fault and the space limit.
func (f *FaultFS) Reset() {
	f.mu.Lock()
	f.mu.faults = nil
	f.mu.space = -1
	f.mu.Unlock()
}

// Injected returns how many errors have been injected so far (ENOSPC
// included).
func (f *FaultFS) Injected() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.injected
}

// check returns the error to inject into op on paths, or nil. Every
// matching fault counts the operation, even if an earlier one fires.
func (f *FaultFS) check(op Op, paths ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var cause error
	for _, ft := range f.mu.faults {
		if ft.spent || ft.Op != op || !matchAny(ft.Path, paths) {
			continue
		}
		ft.seen++
		if ft.N != 0 && ft.seen != ft.N {
			continue
		}
		if ft.N != 0 {
			ft.spent = true
		}
		if cause == nil {
			cause = ft.Err
		}
	}
	if cause == nil {
		return nil
	}
	f.mu.injected++
	if op == OpRename {
		return &os.LinkError{Op: op.String(), Old: paths[0], New: paths[1], Err: cause}
	}
	return &fs.PathError{Op: op.String(), Path: paths[0], Err: cause}
}

func matchAny(sub string, paths []string) bool {
	for _, p := range paths {
		if strings.Contains(p, sub) {
			return true
		}
	}
	return false
}

// reserve returns how many of n bytes fit on the simulated disk and takes
// them.
func (f *FaultFS) reserve(n int) (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.space < 0 || int64(n) <= f.mu.space {
		if f.mu.space >= 0 {
			f.mu.space -= int64(n)
		}
		return n, true
	}
	fit := int(f.mu.space)
	f.mu.space = 0
	f.mu.injected++
	return fit, false
}

// Create implements FS.
func (f *FaultFS) Create(name string) (File, error) {
	if err := f.check(OpCreate, name); err != nil {
		return nil, err
	}
	file, err := f.fs.Create(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{fs: f, f: file, name: name}, nil
}

// Open implements FS.
func (f *FaultFS) Open(name string) (File, error) {
	if err := f.check(OpOpen, name); err != nil {
		return nil, err
	}
	file, err := f.fs.Open(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{fs: f, f: file, name: name}, nil
}

// Rename implements FS.
func (f *FaultFS) Rename(oldname, newname string) error {
	if err := f.check(OpRename, oldname, newname); err != nil {
		return err
	}
	return f.fs.Rename(oldname, newname)
}

// Remove implements FS.
func (f *FaultFS) Remove(name string) error {
	if err := f.check(OpRemove, name); err != nil {
		return err
	}
	return f.fs.Remove(name)
}

// RemoveAll implements FS.
func (f *FaultFS) RemoveAll(name string) error {
	if err := f.check(OpRemoveAll, name); err != nil {
		return err
	}
	return f.fs.RemoveAll(name)
}

// MkdirAll implements FS.
func (f *FaultFS) MkdirAll(name string, perm fs.FileMode) error {
	if err := f.check(OpMkdirAll, name); err != nil {
		return err
	}
	return f.fs.MkdirAll(name, perm)
}

// ReadDir implements FS.
func (f *FaultFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := f.check(OpReadDir, name); err != nil {
		return nil, err
	}
	return f.fs.ReadDir(name)
}

// Stat implements FS.
func (f *FaultFS) Stat(name string) (fs.FileInfo, error) {
	if err := f.check(OpStat, name); err != nil {
		return nil, err
	}
	return f.fs.Stat(name)
}

// SyncDir implements FS.
func (f *FaultFS) SyncDir(name string) error {
	if err := f.check(OpSyncDir, name); err != nil {
		return err
	}
	return f.fs.SyncDir(name)
}

type faultFile struct {
	fs   *FaultFS
	f    File
	name string
}

func (f *faultFile) Read(p []byte) (int, error) {
	if err := f.fs.check(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.f.Read(p)
}

func (f *faultFile) Write(p []byte) (int, error) {
	if err := f.fs.check(OpWrite, f.name); err != nil {
		return 0, err
	}
	fit, ok := f.fs.reserve(len(p))
	n, err := f.f.Write(p[:fit])
	if err == nil && !ok {
		err = &fs.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
	}
	return n, err
}

func (f *faultFile) Sync() error {
	if err := f.fs.check(OpSync, f.name); err != nil {
		return err
	}
	return f.f.Sync()
}

func (f *faultFile) Close() error {
	// Close the real file whatever happens, so a test does not leak it.
	err := f.f.Close()
	if ferr := f.fs.check(OpClose, f.name); ferr != nil {
		return ferr
	}
	return err
}
