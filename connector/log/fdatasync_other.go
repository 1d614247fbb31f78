//go:build !linux

package wlog

import "os"

// fdatasync is fsync where the system has no fdatasync(2) in Go's syscall
// package (macOS: Go's File.Sync issues F_FULLFSYNC, what durability
// needs there).
func fdatasync(f *os.File) error { return f.Sync() }

// fdatasyncHeld is fdatasync for a file another goroutine may close
// meanwhile (a roll): os.File.Sync holds the descriptor while it runs.
func fdatasyncHeld(f *os.File) error { return f.Sync() }
