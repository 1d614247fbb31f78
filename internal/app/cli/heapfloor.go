package cli

import (
	"os"
	"runtime/debug"
	"sync"
)

// The heap floor. Go's garbage collector starts a cycle whenever the heap
// has grown by GOGC% (100) over what the last cycle left live; a stream
// job whose state is small (a few groups, a deduplication of recent keys)
// but which allocates per row (SQL's rows) then runs a cycle every few
// megabytes: hundreds a second, each with its write barriers, assists and
// preemptions. A JVM stream processor has a young generation of hundreds
// of megabytes for this. The weir command does as much: it keeps a floor
// of --heap-floor-mib MiB allocated and never touched (so never resident):
// live to the collector, it makes the heap goal at least twice the floor,
// and adds nothing to a large state's goal but the floor itself. Setting
// GOGC (or GOMEMLIMIT) in the environment leaves the collector as the
// user set it; --heap-floor-mib 0 turns the floor off.
// `weir bench nexmark --sql` measured the updating SQL plans at 1.2-2x
// per core with it (docs/performance.md, "GC").

var (
	floorOnce sync.Once
	floor     []byte
)

// setHeapFloor allocates the floor, once per process, and, under a
// cgroup's memory limit, sets Go's soft memory limit (memlimit.go).
func setHeapFloor(mib int) {
	floorOnce.Do(func() {
		limit := cgroupMemoryLimit(rootFS)
		if m := goMemoryLimit(limit, os.Getenv); m > 0 {
			debug.SetMemoryLimit(m)
		}
		n := heapFloorBytes(mib, limit, os.Getenv)
		if n == 0 {
			return
		}
		// a large pointer-free allocation: its own span, fresh from the
		// OS (already zero, so not written), never scanned
		floor = make([]byte, n)
	})
}

// heapFloorBytes is the floor's size: none when the user tunes the
// collector through the environment; under a cgroup memory limit of limit
// bytes (0: none), at most a sixteenth of it, so that the garbage it lets
// pile up (as much as the floor) stays a small part of the limit.
func heapFloorBytes(mib int, limit int64, getenv func(string) string) int {
	if mib <= 0 || userTunesGC(getenv) {
		return 0
	}
	n := int64(mib) << 20
	if limit > 0 {
		n = min(n, limit/16)
	}
	return int(n)
}
