package weir

// prefetch asks the CPU to bring the cache line at addr into its caches
// without waiting for it (PREFETCHT0). addr need not be valid: a prefetch
// never faults, and as a uintptr it is nothing the GC looks at. Firing a
// window walks keys whose state is scattered over the heap; asking for the
// next keys' lines while the current one fires overlaps their cache misses
// with its work instead of paying them one after the other
// (window_fixed_timers.go).
//
//go:noescape
func prefetch(addr uintptr)

// prefetch2 is prefetch of a and b in one call (an assembly function is
// not inlined: a call each was a fifth of a firing's CPU).
//
//go:noescape
func prefetch2(a, b uintptr)

// prefetchLines is prefetch of each cache line of [addr, addr+n).
//
//go:noescape
func prefetchLines(addr, n uintptr)
