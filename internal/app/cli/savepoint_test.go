package cli

import (
	"context"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/control"
)

// runningJob starts an unbounded job with a control endpoint, checkpointing
// into a new directory, and returns that directory and where Run's error
// will arrive.
func runningJob(t *testing.T, opts ...weir.JobOption) (string, <-chan error) {
	t.Helper()
	ck := t.TempDir()
	job := weir.NewJob("cli-sp", append([]weir.JobOption{weir.Checkpointing(50*time.Millisecond, ck), weir.ControlAddr("127.0.0.1:0")}, opts...)...)
	src := weir.FromSource(job, "gen", weir.GeneratorSource(weir.GeneratorConfig{Count: -1, Rate: 10_000},
		func(i int64, _ *rand.Rand) int64 { return i }), weir.NoWatermarks[int64](), weir.UID("gen"))
	weir.To(src, weir.SinkFunc[int64](func(context.Context, []int64) error { return nil }), weir.UID("sink"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	weirtest.WaitFor(t, "the job's control.addr", 30*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(ck, control.AddrFile))
		return err == nil
	})
	return ck, done
}

// `weir savepoint` finds the job and its token through --checkpoint-dir;
// a name goes under the savepoint directory, a path outside is refused.
func TestSavepointCommand(t *testing.T) {
	ck, done := runningJob(t)
	out, stderr, code := run(t, "savepoint", "--checkpoint-dir", ck, "sp1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	root, _ := filepath.EvalSymlinks(filepath.Join(ck, "savepoints"))
	if got := strings.TrimSpace(out); got != filepath.Join(root, "sp1") {
		t.Fatalf("savepoint at %q, want %s", got, filepath.Join(root, "sp1"))
	}
	if _, err := os.Stat(filepath.Join(root, "sp1", "_metadata")); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	for _, p := range []string{"../escape", filepath.Join(outside, "sp2")} {
		if _, stderr, code := run(t, "savepoint", "--checkpoint-dir", ck, p); code == 0 || !strings.Contains(stderr, "outside the savepoint directory") {
			t.Fatalf("savepoint into %s: exit %d: %s", p, code, stderr)
		}
	}
	if des, _ := os.ReadDir(outside); len(des) != 0 {
		t.Fatalf("%d entries written outside", len(des))
	}
	// --control with --token-file, and --stop.
	addr, _ := os.ReadFile(filepath.Join(ck, control.AddrFile))
	if _, stderr, code := run(t, "savepoint", "--control", strings.TrimSpace(string(addr)), "sp3"); code == 0 || !strings.Contains(stderr, "token") {
		t.Fatalf("--control without a token: exit %d: %s", code, stderr)
	}
	if _, stderr, code := run(t, "savepoint", "--control", strings.TrimSpace(string(addr)), "--token-file", filepath.Join(ck, control.TokenFile), "--stop", "sp3"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if err := <-done; err != nil {
		t.Fatalf("a job stopped with a savepoint must end cleanly: %v", err)
	}
}

// --savepoint-dir moves the confinement, on Main's flags.
func TestMainSavepointDir(t *testing.T) {
	spDir := t.TempDir()
	ck, _ := runningJob(t, weir.SavepointDir(spDir))
	out, stderr, code := run(t, "savepoint", "--checkpoint-dir", ck, filepath.Join(spDir, "abs"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	root, _ := filepath.EvalSymlinks(spDir)
	if got := strings.TrimSpace(out); got != filepath.Join(root, "abs") {
		t.Fatalf("savepoint at %q", got)
	}
}

// A backtick in a pflag usage string names the flag's value type: the
// help of --control-addr must say "string", not a command.
func TestControlAddrHelp(t *testing.T) {
	out, _, _ := run(t, "demo", "adclicks", "--help")
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "--control-addr") && !strings.Contains(line, "--control-addr string") {
			t.Fatalf("help line %q", line)
		}
	}
	if !strings.Contains(out, "--savepoint-dir string") {
		t.Fatalf("no --savepoint-dir in:\n%s", out)
	}
}
