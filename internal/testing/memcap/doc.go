// Package memcap runs a program under a memory limit: a cgroup v1 memory
// cgroup of its own (these machines run as root with cgroup v1 mounted at
// /sys/fs/cgroup/memory), so that a test can show a job either finishing
// within the limit or being killed by the kernel's out-of-memory killer
// when it exceeds it. It imports nothing of the module: it runs binaries.
//
//	go test ./internal/testing/memcap   # TestBoundedMemory, scaled down
//	WEIR_MEMCAP_KEYS=10000000 WEIR_MEMCAP_LIMIT_MIB=1024 go test -run BoundedMemory -v -timeout 3h ./internal/testing/memcap
package memcap
