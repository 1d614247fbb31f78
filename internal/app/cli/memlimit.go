package cli

import (
	"bufio"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// The memory limit of the process's cgroup. A job in a container or a
// memory cgroup is killed by the kernel when it charges more than the
// limit, and Go's collector does not know the limit: by default it lets
// the heap grow to twice what the last cycle left live, and the heap floor
// adds 128 MiB of allowance for garbage on top. A job whose state is in
// Pebble (off the Go heap, bounded by its memory budget) has a small live
// heap, but under a limit of a few hundred MiB that allowance alone got it
// killed within a second (internal/testing/memcap, TestBoundedMemory). So
// the weir command reads the limit when it starts, and, unless the user
// tunes the collector (GOGC, GOMEMLIMIT), cuts the floor to a sixteenth
// of the limit and sets Go's soft memory limit to three quarters of it,
// leaving the last quarter to what is not Go heap: Pebble's block cache
// and memtables, stacks, the runtime.

// cgroupMemoryLimit is the memory limit of the process's cgroup and of its
// ancestors, the least of them, in bytes; 0 if none is set or it cannot be
// read. It reads cgroup v1's memory controller (memory.limit_in_bytes) and
// cgroup v2 (memory.max) through root (the file system at /, os.DirFS("/")
// outside tests).
func cgroupMemoryLimit(root fs.FS) int64 {
	f, err := root.Open("proc/self/cgroup")
	if err != nil {
		return 0
	}
	defer f.Close()
	var limit int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir, file string
		switch {
		case parts[0] == "0" && parts[1] == "":
			dir, file = "sys/fs/cgroup", "memory.max" // v2 (when v1 has no memory controller, below)
			if _, err := fs.Stat(root, "sys/fs/cgroup/cgroup.controllers"); err != nil {
				continue // v2 mounted elsewhere (hybrid): v1's line counts
			}
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			dir, file = "sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		for p := path.Clean("/" + parts[2]); ; p = path.Dir(p) {
			if n := readLimit(root, path.Join(dir, p, file)); n > 0 && (limit == 0 || n < limit) {
				limit = n
			}
			if p == "/" {
				break
			}
		}
	}
	return limit
}

// readLimit reads a limit file: 0 for none ("max", or v1's "unlimited",
// a number near 2^63).
func readLimit(root fs.FS, name string) int64 {
	b, err := fs.ReadFile(root, strings.TrimPrefix(name, "/"))
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0
	}
	return n
}

// goMemoryLimit is the soft memory limit the command gives Go's runtime
// under a cgroup limit of limit bytes (0: none), unless the user set
// GOMEMLIMIT or GOGC.
func goMemoryLimit(limit int64, getenv func(string) string) int64 {
	if limit <= 0 || userTunesGC(getenv) {
		return 0
	}
	return limit / 4 * 3
}

// rootFS is the file system cgroupMemoryLimit reads.
var rootFS = os.DirFS("/")

// userTunesGC reports whether the environment sets the collector's knobs
// (GOGC or GOMEMLIMIT), which the command then leaves alone.
func userTunesGC(getenv func(string) string) bool {
	return getenv("GOGC") != "" || getenv("GOMEMLIMIT") != ""
}
