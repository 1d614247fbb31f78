//go:build !amd64

// Package prefetch asks the CPU for cache lines ahead of their use; on
// this architecture its functions do nothing (prefetch_amd64.go).
package prefetch

// One does nothing on this architecture.
func One(uintptr) {}

// Two does nothing on this architecture.
func Two(_, _ uintptr) {}

// Lines does nothing on this architecture.
func Lines(_, _ uintptr) {}
