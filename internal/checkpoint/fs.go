package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
)

// FS is the file system that checkpoints are stored in: the operating
// system's by default (Default), or a wrapper that injects faults in tests
// (FaultFS). It is the subset of pebble's vfs.FS this package needs. Errors
// should name the path (*fs.PathError, *os.LinkError).
type FS interface {
	// Create creates or truncates a file for writing.
	Create(name string) (File, error)
	// Open opens a file for reading.
	Open(name string) (File, error)
	// Rename renames oldname to newname atomically, replacing newname if
	// it is a file.
	Rename(oldname, newname string) error
	Remove(name string) error
	// RemoveAll removes a directory tree; a missing one is not an error.
	RemoveAll(name string) error
	MkdirAll(name string, perm fs.FileMode) error
	// ReadDir lists a directory, sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	Stat(name string) (fs.FileInfo, error)
	// SyncDir fsyncs a directory, making the creation, removal and
	// renaming of its entries durable.
	SyncDir(name string) error
}

// File is an open file of an FS.
type File interface {
	io.Reader
	io.Writer
	io.Closer
	// Sync makes the file's content durable (fsync).
	Sync() error
}

// Default is the operating system's file system, and for a path of a
// registered scheme (`s3://bucket/prefix`, package internal/s3fs) that
// scheme's file system.
var Default FS = routerFS{}

var (
	schemesMu sync.RWMutex
	schemes   = map[string]func() (FS, error){}
)

// RegisterScheme makes paths `scheme://...` (and `scheme:/...`, as
// filepath.Clean leaves them) go to the file system open returns; open is
// called for each operation and should cache what it makes.
func RegisterScheme(scheme string, open func() (FS, error)) {
	schemesMu.Lock()
	defer schemesMu.Unlock()
	schemes[scheme] = open
}

// SchemeOf returns the scheme of a path like `s3://bucket/key` (or
// `s3:/bucket/key`), or "" for a local path.
func SchemeOf(path string) string {
	i := strings.Index(path, ":/")
	if i < 2 {
		return "" // not a URL (or a Windows drive letter)
	}
	for _, c := range path[:i] {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.') {
			return ""
		}
	}
	return path[:i]
}

// Remote reports whether path is in a registered remote file system
// (object storage) rather than on the local disk.
func Remote(path string) bool {
	s := SchemeOf(path)
	if s == "" {
		return false
	}
	schemesMu.RLock()
	defer schemesMu.RUnlock()
	return schemes[s] != nil
}

// atomicCreator is an FS whose created files appear whole when closed,
// never partly written (object storage: an upload), and whose renames
// copy: a store on it writes checkpoints in place (Store's doc).
type atomicCreator interface{ AtomicCreate() bool }

// atomicCreate reports whether files created at path appear whole when
// closed (see atomicCreator).
func atomicCreate(fsys FS, path string) bool {
	if r, ok := fsys.(routerFS); ok {
		f, err := r.pick(path)
		if err != nil {
			return false
		}
		fsys = f
	}
	a, ok := fsys.(atomicCreator)
	return ok && a.AtomicCreate()
}

// routerFS sends each path to its scheme's file system, local paths to
// the operating system's.
type routerFS struct{}

func (routerFS) pick(name string) (FS, error) {
	s := SchemeOf(name)
	if s == "" {
		return osFS{}, nil
	}
	schemesMu.RLock()
	open := schemes[s]
	known := make([]string, 0, len(schemes))
	for k := range schemes {
		known = append(known, k+"://")
	}
	schemesMu.RUnlock()
	if open == nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("no file system for %s:// paths (known: %s)", s, strings.Join(known, ", "))}
	}
	return open()
}

func (r routerFS) Create(name string) (File, error) {
	f, err := r.pick(name)
	if err != nil {
		return nil, err
	}
	return f.Create(name)
}

func (r routerFS) Open(name string) (File, error) {
	f, err := r.pick(name)
	if err != nil {
		return nil, err
	}
	return f.Open(name)
}

func (r routerFS) Rename(oldname, newname string) error {
	f, err := r.pick(oldname)
	if err != nil {
		return err
	}
	if SchemeOf(oldname) != SchemeOf(newname) {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: errors.New("not in the same file system")}
	}
	return f.Rename(oldname, newname)
}

func (r routerFS) Remove(name string) error {
	f, err := r.pick(name)
	if err != nil {
		return err
	}
	return f.Remove(name)
}

func (r routerFS) RemoveAll(name string) error {
	f, err := r.pick(name)
	if err != nil {
		return err
	}
	return f.RemoveAll(name)
}

func (r routerFS) MkdirAll(name string, perm fs.FileMode) error {
	f, err := r.pick(name)
	if err != nil {
		return err
	}
	return f.MkdirAll(name, perm)
}

func (r routerFS) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := r.pick(name)
	if err != nil {
		return nil, err
	}
	return f.ReadDir(name)
}

func (r routerFS) Stat(name string) (fs.FileInfo, error) {
	f, err := r.pick(name)
	if err != nil {
		return nil, err
	}
	return f.Stat(name)
}

func (r routerFS) SyncDir(name string) error {
	f, err := r.pick(name)
	if err != nil {
		return err
	}
	return f.SyncDir(name)
}

type osFS struct{}

func (osFS) Create(name string) (File, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

func (osFS) Open(name string) (File, error)               { return os.Open(name) }
func (osFS) Rename(oldname, newname string) error         { return os.Rename(oldname, newname) }
func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) RemoveAll(name string) error                  { return os.RemoveAll(name) }
func (osFS) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (osFS) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }

func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

// SafeName maps an operator UID to the characters a file name in a
// checkpoint may hold (at most 64 of them).
func SafeName(uid string) string {
	var b strings.Builder
	for _, c := range []byte(uid) {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() > 64 {
		return b.String()[:64]
	}
	return b.String()
}
