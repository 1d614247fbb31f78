// Package poll waits in tests on a condition with a deadline, never for a
// time that a result is hoped to take. It imports nothing of the module,
// so the root package's internal tests use it too (internal/testing/weirtest,
// which re-exports it, imports the root package).
package poll

import (
	"testing"
	"time"
)

// Poll checks cond every millisecond until it holds (true) or timeout has
// passed (false). It waits on a condition, never for a time that a result
// is hoped to take: a busy machine only makes it check more times.
func Poll(timeout time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
	return false
}

// WaitFor fails the test when cond does not hold within timeout; what
// names the condition in the failure.
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	if !Poll(timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}
