package crashtest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Attempt runs cmd, capturing its stderr, and kills it with SIGKILL after
// killAfter (0: never) unless it ended first: the moment of a crash, not a
// wait for a result. sigkilled reports that the process died of SIGKILL,
// ours that the signal was this one (otherwise a failpoint of the process
// killed it); err is cmd.Wait's.
func Attempt(cmd *exec.Cmd, killAfter time.Duration) (sigkilled, ours bool, stderr string, err error) {
	var buf strings.Builder
	cmd.Stderr = &buf
	if err := cmd.Start(); err != nil {
		return false, false, "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var kill <-chan time.Time
	if killAfter > 0 {
		timer := time.NewTimer(killAfter)
		defer timer.Stop()
		kill = timer.C
	}
	select {
	case err = <-done:
	case <-kill:
		cmd.Process.Signal(syscall.SIGKILL)
		err = <-done
		ours = true
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		return true, ours, buf.String(), err
	}
	// Our signal came too late: the process had ended by itself.
	return false, false, buf.String(), err
}

// Kills is the number of kills a crash test makes: WEIR_CRASH_KILLS, or def.
func Kills(def int) int {
	if n, err := strconv.Atoi(os.Getenv("WEIR_CRASH_KILLS")); err == nil && n > 0 {
		return n
	}
	return def
}
