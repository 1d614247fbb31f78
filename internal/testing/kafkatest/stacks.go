package kafkatest

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// quitLine is the line the Go runtime prints on SIGQUIT before every
// goroutine's stack.
const quitLine = "SIGQUIT: quit"

// Stacks ends the process with SIGQUIT, on which the Go runtime prints
// every goroutine's stack and exits, and returns the stacks of weir's
// goroutines that were blocked for a minute or more (the runtime notes
// the minutes of those): where a hung process waits. It waits up to d (a
// deadline) for the dump; "" if the process had ended.
func (p *Proc) Stacks(d time.Duration) string {
	if p.Exited() {
		return ""
	}
	if err := p.Cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		return fmt.Sprintf("SIGQUIT: %v", err)
	}
	select {
	case err := <-p.Done:
		p.Done <- err
	case <-time.After(d):
		return fmt.Sprintf("no stacks: the process did not end within %v of SIGQUIT", d)
	}
	return longBlocked(p.Stderr.String())
}

// longBlocked picks, from a Go runtime's goroutine dump in out, the
// goroutines blocked for minutes with a frame in weir, each as its header
// and its frames (function, file base name and line), and how many
// goroutines there were in all.
func longBlocked(out string) string {
	_, dump, ok := strings.Cut(out, quitLine)
	if !ok {
		return "no goroutine dump"
	}
	var b strings.Builder
	n := 0
	for _, g := range strings.Split(dump, "\n\n") {
		g = strings.TrimSpace(g)
		if !strings.HasPrefix(g, "goroutine ") {
			continue
		}
		n++
		lines := strings.Split(g, "\n")
		if !strings.Contains(lines[0], " minutes]") || !strings.Contains(g, "weirstream/weir") {
			continue
		}
		b.WriteString(lines[0])
		for i := 1; i+1 < len(lines); i += 2 {
			fn := lines[i]
			if j := strings.LastIndex(fn, "("); j > 0 {
				fn = fn[:j] // the arguments
			}
			loc, _, _ := strings.Cut(strings.TrimSpace(lines[i+1]), " +")
			fmt.Fprintf(&b, "\n    %s %s", fn, filepath.Base(loc))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "(%d goroutines in all)", n)
	return b.String()
}

// withoutDump is a process's stderr without the goroutine dump that
// Stacks asked for (logged in part by the test that asked).
func withoutDump(out string) string {
	before, _, _ := strings.Cut(out, quitLine)
	return before
}
