//go:build !amd64

package weir

// prefetch, prefetch2 and prefetchLines do nothing on this architecture
// (prefetch_amd64.go).
func prefetch(uintptr)           {}
func prefetch2(_, _ uintptr)     {}
func prefetchLines(_, _ uintptr) {}
