package cli

import (
	"testing"
	"testing/fstest"
)

// TestCgroupMemoryLimit: the least limit of the process's memory cgroup and
// its ancestors, under cgroup v1 (hybrid: v2 mounted beside it without a
// memory controller) and v2; none when unlimited or unreadable.
func TestCgroupMemoryLimit(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	v1 := `4:memory:/jobs/weir
0::/
1:cpu,cpuacct:/`
	for _, c := range []struct {
		name string
		fs   fstest.MapFS
		want int64
	}{
		{"v1", fstest.MapFS{
			"proc/self/cgroup":                                     file(v1),
			"sys/fs/cgroup/memory/memory.limit_in_bytes":           file("9223372036854771712\n"),
			"sys/fs/cgroup/memory/jobs/memory.limit_in_bytes":      file("1073741824\n"),
			"sys/fs/cgroup/memory/jobs/weir/memory.limit_in_bytes": file("9223372036854771712\n"),
		}, 1 << 30},
		{"v1 unlimited", fstest.MapFS{
			"proc/self/cgroup":                                     file(v1),
			"sys/fs/cgroup/memory/memory.limit_in_bytes":           file("9223372036854771712\n"),
			"sys/fs/cgroup/memory/jobs/weir/memory.limit_in_bytes": file("9223372036854771712\n"),
		}, 0},
		{"v2", fstest.MapFS{
			"proc/self/cgroup":                               file("0::/user.slice/weir.scope\n"),
			"sys/fs/cgroup/cgroup.controllers":               file("cpu memory\n"),
			"sys/fs/cgroup/user.slice/memory.max":            file("max\n"),
			"sys/fs/cgroup/user.slice/weir.scope/memory.max": file("268435456\n"),
		}, 256 << 20},
		{"no proc", fstest.MapFS{}, 0},
	} {
		if got := cgroupMemoryLimit(c.fs); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	if got := goMemoryLimit(1<<30, env(nil)); got != 3<<28 {
		t.Errorf("Go's memory limit under 1 GiB: %d, want 768 MiB", got)
	}
	if got := goMemoryLimit(1<<30, env(map[string]string{"GOMEMLIMIT": "512MiB"})); got != 0 {
		t.Errorf("with GOMEMLIMIT set, the command sets a limit of its own: %d", got)
	}
	if got := goMemoryLimit(0, env(nil)); got != 0 {
		t.Errorf("without a cgroup limit: %d", got)
	}
}
