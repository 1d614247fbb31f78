package cli

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/testing/poll"
)

// TestMain lets a test run this test binary as the weir command (with
// WEIR_TEST_MAIN=1 and weir's arguments), a real process to signal.
func TestMain(m *testing.M) {
	if os.Getenv("WEIR_TEST_MAIN") == "1" {
		os.Exit(Main())
	}
	os.Exit(m.Run())
}

// weirCommand is this test binary run as `weir args...` (TestMain), with
// env added to the environment.
func weirCommand(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "WEIR_TEST_MAIN=1"), env...)
	return cmd
}

// waitExit waits for a shell started with weirCommand to end well after
// what ended it (its exit status arrives on exited).
func waitExit(t *testing.T, exited <-chan error, after string) {
	t.Helper()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the shell ended with %v after %s", err, after)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the shell did not end after %s", after)
	}
}

// Ctrl-C (SIGINT) on a running query of the `weir sql` shell cancels the
// query and keeps the session, as Flink's sql-client does: the table
// created before it is still known after it (issue 38: SIGINT ended the
// shell and lost every table). The end of the input ends the shell.
func TestShellInterruptCancelsTheQuery(t *testing.T) {
	cmd := weirCommand(nil, "sql")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}()
	io.WriteString(in, "CREATE TABLE clicks (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '100');\n"+
		"SELECT COUNT(*) FROM clicks;\n")
	poll.WaitFor(t, "the running query's first row", 2*time.Minute, func() bool { return strings.Contains(out.String(), "+I[") })
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	poll.WaitFor(t, "the query cancelled", 2*time.Minute, func() bool {
		return strings.Contains(out.String(), "[INFO] The statement was cancelled.")
	})
	io.WriteString(in, "SHOW TABLES;\n")
	poll.WaitFor(t, "SHOW TABLES after the Ctrl-C", 2*time.Minute, func() bool {
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.TrimSpace(strings.Trim(l, "|")) == "clicks" {
				return true
			}
		}
		return false
	})
	in.Close()
	waitExit(t, exited, "the end of its input")
}
