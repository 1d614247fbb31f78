// Package prefetch asks the CPU for cache lines ahead of their use.
//
// A prefetch (PREFETCHT0) brings a line into the caches without waiting
// for it. The address need not be valid: a prefetch never faults, and as a
// uintptr it is nothing the GC looks at. Firing a window walks state that
// is scattered over the heap, or spread thin over a large hash table;
// asking for the lines of the next keys while the current one is worked on
// overlaps their cache misses with that work instead of paying them one
// after the other (window_fixed_timers.go, window_op.go).
//
// The functions are assembly, so they are not inlined: one call asks for
// several lines (Two, Lines) where a caller needs several.
package prefetch

// One asks for the cache line at addr.
//
//go:noescape
func One(addr uintptr)

// Two asks for the cache lines at a and b in one call (a call each was a
// fifth of a firing's CPU).
//
//go:noescape
func Two(a, b uintptr)

// Lines asks for each cache line of [addr, addr+n).
//
//go:noescape
func Lines(addr, n uintptr)
