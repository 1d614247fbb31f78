package kafkatest

import (
	"strings"
	"testing"
)

// dump is a Go runtime's SIGQUIT output in its format: one goroutine of
// weir blocked for minutes, one of weir blocked briefly, one outside weir
// blocked for minutes.
const dump = `time=2026-12-03T23:00:00Z level=INFO msg="job starting"
SIGQUIT: quit
PC=0x47a1c1 m=0 sigcode=0

goroutine 0 gp=0x1 m=0 mp=0x2 [idle]:
runtime.futex(0x1, 0x80, 0x0)
	/usr/lib/go/src/runtime/sys_linux_amd64.s:557 +0x21 fp=0x1 sp=0x2 pc=0x3

goroutine 41 gp=0xc000 m=nil [chan receive, 3 minutes]:
runtime.gopark(0x0?, 0x0?, 0x0?)
	/usr/lib/go/src/runtime/proc.go:460 +0xce fp=0x1 sp=0x2 pc=0x3
github.com/weirstream/weir/connector/kafka.(*groupRunner).runOnce(0xc0001, {0x1, 0x2})
	/work/main/connector/kafka/group.go:433 +0x5a5 fp=0x1 sp=0x2 pc=0x3

goroutine 42 gp=0xc001 m=nil [select]:
github.com/weirstream/weir.(*subtask).wait(0xc0002)
	/work/main/task.go:120 +0x10 fp=0x1 sp=0x2 pc=0x3

goroutine 43 gp=0xc002 m=nil [IO wait, 4 minutes]:
internal/testing/poll.runtime_pollWait(0x1, 0x72)
	/usr/lib/go/src/runtime/netpoll.go:351 +0x85 fp=0x1 sp=0x2 pc=0x3

rax    0x0
`

// TestLongBlocked: from a goroutine dump only weir's goroutines blocked
// for minutes are kept, with their frames in short form; the lines before
// the dump are the process's own stderr.
func TestLongBlocked(t *testing.T) {
	got := longBlocked(dump)
	want := `goroutine 41 gp=0xc000 m=nil [chan receive, 3 minutes]:
    runtime.gopark proc.go:460
    github.com/weirstream/weir/connector/kafka.(*groupRunner).runOnce group.go:433
(4 goroutines in all)`
	if got != want {
		t.Errorf("longBlocked:\n%s\nwant:\n%s", got, want)
	}
	if got := withoutDump(dump); strings.Contains(got, "goroutine") || !strings.Contains(got, "job starting") {
		t.Errorf("withoutDump: %q", got)
	}
	if got := longBlocked("no dump here"); got != "no goroutine dump" {
		t.Errorf("longBlocked of no dump: %q", got)
	}
}
