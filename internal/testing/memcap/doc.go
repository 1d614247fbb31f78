// Package memcap runs a program under a memory limit: a cgroup v1 memory
// cgroup of its own (these machines run as root with cgroup v1 mounted at
// /sys/fs/cgroup/memory), so that a test can show a job either finishing
// within the limit or being killed by the kernel's out-of-memory killer
// when it exceeds it. It imports nothing of the module: it runs binaries.
//
// TestBoundedMemory is issue 37's bounded-memory check: `weir sql` jobs
// under a limit on the heap backend (killed) and on Pebble (finished, exact
// result). Under the race detector (the test command) it checks the live Go
// heap of a wide join against a budget instead (heapcheck_test.go: the
// kernel cannot judge a race build's memory; the comment on
// TestBoundedMemory says why, with figures):
//
//	go test ./internal/testing/memcap         # the kernel's check, scaled down (release build)
//	go test -race ./internal/testing/memcap   # the heap check (the test command)
//	WEIR_MEMCAP_KEYS=10000000 WEIR_MEMCAP_LIMIT_MIB=1024 go test -run BoundedMemory -v -timeout 3h ./internal/testing/memcap
package memcap
