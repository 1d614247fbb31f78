package checkpoint

import (
	"io"
	"io/fs"
	"os"
	"strings"
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

// Default is the operating system's file system.
var Default FS = osFS{}

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
