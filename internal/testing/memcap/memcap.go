package memcap

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Root is where cgroup v1's memory controller is mounted.
const Root = "/sys/fs/cgroup/memory"

// Available returns nil when memory cgroups can be made here (root, cgroup
// v1's memory controller mounted at Root), else why not: a test skips
// with it.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("memcap: not root: making a memory cgroup needs root")
	}
	if _, err := os.Stat(filepath.Join(Root, "memory.limit_in_bytes")); err != nil {
		return fmt.Errorf("memcap: cgroup v1's memory controller is not mounted at %s (%v)", Root, err)
	}
	return nil
}

// Result is how a program run under a limit ended.
type Result struct {
	// Limit is the limit it ran under, in bytes.
	Limit int64
	// Err is the error of its wait: nil when it exited with status 0.
	Err error
	// OOMKilled reports that the out-of-memory killer killed it: the
	// cgroup counted a kill (memory.oom_control's oom_kill) or the program
	// died of SIGKILL, which nothing else here sends.
	OOMKilled bool
	// Peak is the cgroup's memory.max_usage_in_bytes: the most memory
	// charged to it at once, its page cache included (the kernel charges
	// the pages of the files a program writes to its cgroup and reclaims
	// them under the limit, so a program that writes files reaches the
	// limit without being at risk).
	Peak int64
	// PeakRSS is the most anonymous memory (memory.stat's rss: heap,
	// stacks, the C allocator's memory) seen by sampling every few
	// milliseconds: what the program itself holds, which the kernel cannot
	// reclaim without swap.
	PeakRSS int64
	// Elapsed is the program's run time.
	Elapsed time.Duration
	// Stdout and Stderr are the program's output.
	Stdout, Stderr []byte
}

// Finished reports that the program exited with status 0.
func (r Result) Finished() bool { return r.Err == nil }

func (r Result) String() string {
	how := "finished"
	switch {
	case r.OOMKilled:
		how = "killed by the OOM killer"
	case r.Err != nil:
		how = "failed: " + r.Err.Error()
	}
	return fmt.Sprintf("%s after %v under %d MiB (peak %d MiB charged, %d MiB anonymous)",
		how, r.Elapsed.Round(time.Millisecond), r.Limit>>20, r.Peak>>20, r.PeakRSS>>20)
}

// Run runs cmd (not started; its Stdout and Stderr are set by Run) in a new
// memory cgroup limited to limit bytes, waits for it to end, and removes
// the cgroup. The limit covers swap too (memory.memsw.limit_in_bytes where
// the kernel has it), so the program cannot escape into swap. The program
// enters the cgroup before it execs: a shell writes its own pid into
// cgroup.procs and execs cmd, so every byte the program ever allocates is
// charged. ctx kills it.
func Run(ctx context.Context, limit int64, cmd *exec.Cmd) (res Result, err error) {
	res.Limit = limit
	if err := Available(); err != nil {
		return res, err
	}
	dir := filepath.Join(Root, fmt.Sprintf("weir-memcap-%d-%08x", os.Getpid(), rand.Uint32()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return res, fmt.Errorf("memcap: %w", err)
	}
	defer func() { err = errors.Join(err, remove(dir)) }()
	if err := write(dir, "memory.limit_in_bytes", limit); err != nil {
		return res, err
	}
	if _, serr := os.Stat(filepath.Join(dir, "memory.memsw.limit_in_bytes")); serr == nil {
		// memory+swap: set after memory's own limit, which it may not
		// undercut
		if err := write(dir, "memory.memsw.limit_in_bytes", limit); err != nil {
			return res, err
		}
	}
	// the wrapper: the shell joins the cgroup, then becomes the program
	argv := append([]string{"sh", "-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(dir, "cgroup.procs"), cmd.Path}, cmd.Args[1:]...)
	wrapped := exec.CommandContext(ctx, "/bin/sh")
	wrapped.Args, wrapped.Env, wrapped.Dir = argv, cmd.Env, cmd.Dir
	var stdout, stderr bytes.Buffer
	wrapped.Stdout, wrapped.Stderr = &stdout, &stderr
	start := time.Now()
	if err := wrapped.Start(); err != nil {
		return res, fmt.Errorf("memcap: start %s: %w", cmd.Path, err)
	}
	done := make(chan error, 1)
	go func() { done <- wrapped.Wait() }()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case res.Err = <-done:
			waiting = false
		case <-tick.C:
			if rss, ok := stat(dir, "rss"); ok {
				res.PeakRSS = max(res.PeakRSS, rss)
			}
		}
	}
	res.Elapsed = time.Since(start)
	res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	res.Peak, _ = readInt(filepath.Join(dir, "memory.max_usage_in_bytes"))
	if kills, ok := field(filepath.Join(dir, "memory.oom_control"), "oom_kill"); ok && kills > 0 {
		res.OOMKilled = true
	}
	var exit *exec.ExitError
	if errors.As(res.Err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL && ctx.Err() == nil {
			res.OOMKilled = true
		}
	}
	return res, nil
}

func write(dir, file string, n int64) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.FormatInt(n, 10)), 0o644); err != nil {
		return fmt.Errorf("memcap: %w", err)
	}
	return nil
}

// remove removes the cgroup once its last task has gone: the program has
// been waited for, so at most the kernel is still tearing it down.
func remove(dir string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("memcap: removing %s: %w", dir, err)
		}
		time.Sleep(10 * time.Millisecond) // the kernel's teardown has no event to wait on
	}
}

func readInt(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}

// field reads "name value" from a file of such lines (memory.stat,
// memory.oom_control).
func field(path, name string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == name {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

func stat(dir, name string) (int64, bool) { return field(filepath.Join(dir, "memory.stat"), name) }
