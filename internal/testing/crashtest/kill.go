package crashtest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
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

// SeedEnv names the environment variable that replays a randomized crash
// test: set it to the seed the test logged.
const SeedEnv = "WEIR_CRASH_SEED"

// Seed is the seed of a randomized crash test's choices (kill moments,
// failpoints): WEIR_CRASH_SEED if set, else a fresh one. Either way it is
// logged, and logged again if the test fails, so that every failure
// report carries the command that replays its choices (the effect of a
// kill at a given moment still depends on how far the process got).
func Seed(t testing.TB) uint64 {
	t.Helper()
	v := uint64(time.Now().UnixNano())
	if s := os.Getenv(SeedEnv); s != "" {
		var err error
		if v, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", SeedEnv, s, err)
		}
	}
	t.Logf("seed %d (replay: %s=%d go test -run '^%s$')", v, SeedEnv, v, t.Name())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("failed with seed %d: replay with %s=%d go test -run '^%s$'", v, SeedEnv, v, t.Name())
		}
	})
	return v
}

// Minus returns the lines of a that b lacks, as multisets: a line twice in
// a and once in b is in the result once. Crash tests compare committed
// output with a run without failures by it (missing: Minus(want, got);
// duplicated or extra: Minus(got, want)).
func Minus(a, b []string) []string {
	m := map[string]int{}
	for _, x := range b {
		m[x]++
	}
	var out []string
	for _, x := range a {
		if m[x] > 0 {
			m[x]--
		} else {
			out = append(out, x)
		}
	}
	return out
}
