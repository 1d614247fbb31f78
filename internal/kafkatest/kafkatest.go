// Package kafkatest holds what the multi-process tests of group mode
// (docs/scale-out.md) share: a kfake cluster on loopback TCP, building a
// program, starting it as a real process of a group and killing it, and
// reading a topic read_committed. Tests only.
package kafkatest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir/internal/crashtest"
	"github.com/weirstream/weir/internal/weirtest"
)

// InstanceEnv is the environment variable of a group member's stable
// instance id (kafka.InstanceEnv; not imported, to keep this package a
// leaf).
const InstanceEnv = "WEIR_INSTANCE_ID"

// Cluster starts an in-process kfake cluster of one broker listening on
// loopback TCP, closed at the end of the test.
func Cluster(t testing.TB, opts ...kfake.Opt) (*kfake.Cluster, []string) {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, c.ListenAddrs()
}

// builds are the programs Build made for the package's tests: one build
// per program, shared by every test (linking one takes seconds, longer on a
// busy machine, and every group test needs the same binary). dir is set by
// Main, which removes it when the tests end.
var builds struct {
	sync.Mutex
	dir  string
	bins map[string]*build
	wg   sync.WaitGroup
}

type build struct {
	once sync.Once
	done chan struct{} // closed when the build has ended
	dir  string
	bin  string
	err  error
}

// Main runs a package's tests (call it from TestMain: os.Exit(Main(m)))
// with one build of each program Build is asked for, removed at the end.
// When the whole package runs (no -run, no -short) it starts building
// prebuild's programs at once, in the background, so that the builds
// overlap the tests that come before the first one needing them (mostly
// waiting on brokers and commits, not on the CPU).
func Main(m *testing.M, prebuild ...string) int {
	flag.Parse()
	dir, err := os.MkdirTemp("", "kafkatest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafkatest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	builds.Lock()
	builds.dir, builds.bins = dir, map[string]*build{}
	builds.Unlock()
	if run := flag.Lookup("test.run"); !testing.Short() && (run == nil || run.Value.String() == "") {
		for _, pkg := range prebuild {
			buildOf(pkg).start(pkg)
		}
	}
	defer builds.wg.Wait() // before the directory is removed
	return m.Run()
}

// buildOf is the (shared) build of pkg under Main.
func buildOf(pkg string) *build {
	builds.Lock()
	defer builds.Unlock()
	b := builds.bins[pkg]
	if b == nil {
		b = &build{done: make(chan struct{}), dir: filepath.Join(builds.dir, strconv.Itoa(len(builds.bins)))}
		builds.bins[pkg] = b
	}
	return b
}

// start starts the build, once.
func (b *build) start(pkg string) {
	b.once.Do(func() {
		builds.wg.Add(1)
		go func() {
			defer builds.wg.Done()
			defer close(b.done)
			if b.err = os.Mkdir(b.dir, 0o755); b.err == nil {
				b.bin = filepath.Join(b.dir, filepath.Base(pkg))
				b.err = goBuild(b.bin, pkg)
			}
		}()
	})
}

// Build builds the main package pkg (an import path or a directory
// relative to the test's package): once for all the package's tests under
// Main, else into the test's temporary directory.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	builds.Lock()
	under := builds.dir != ""
	builds.Unlock()
	if !under {
		return buildTo(t, t.TempDir(), pkg)
	}
	b := buildOf(pkg)
	b.start(pkg)
	<-b.done
	if b.err != nil {
		t.Fatalf("build %s: %v", pkg, b.err)
	}
	return b.bin
}

func buildTo(t testing.TB, dir, pkg string) string {
	t.Helper()
	bin := filepath.Join(dir, filepath.Base(pkg))
	if err := goBuild(bin, pkg); err != nil {
		t.Fatalf("build %s: %v", pkg, err)
	}
	return bin
}

// goBuild builds pkg the way the test binary was built (with -race under
// the test command), so that it reuses the test build's packages.
func goBuild(bin, pkg string) error { return crashtest.GoBuild(bin, pkg) }

// Proc is one process of a group: Done gets its exit (once; whoever takes
// it and wants others to see it puts it back).
type Proc struct {
	Name   string
	Cmd    *exec.Cmd
	Stderr *weirtest.LockedBuffer
	Done   chan error
}

// Start starts bin with args as the group member named name (its
// InstanceEnv), with env added to the test's environment and TMPDIR in the
// test's temporary directory. The process is killed at the end of the
// test; if the test failed its stderr is logged (without the
// per-checkpoint lines).
func Start(t testing.TB, bin, name string, env []string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Name: name, Stderr: &weirtest.LockedBuffer{}, Done: make(chan error, 1)}
	p.Cmd = exec.Command(bin, args...)
	// The process's temporary files (group mode's checkpoint directory)
	// go under the test's: a killed process cannot remove its own, and
	// the test's temporary directory is removed after the kill below.
	p.Cmd.Env = append(append(os.Environ(), InstanceEnv+"="+name, "TMPDIR="+t.TempDir()), env...)
	p.Cmd.Stderr = p.Stderr
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.Done <- p.Cmd.Wait() }()
	t.Cleanup(func() {
		p.Cmd.Process.Kill()
		err := <-p.Done
		p.Done <- err
		if t.Failed() {
			var lines []string
			for _, l := range strings.Split(p.Stderr.String(), "\n") {
				if !strings.Contains(l, `msg="checkpoint complete"`) {
					lines = append(lines, l)
				}
			}
			t.Logf("process %s stderr:\n%s", name, strings.Join(lines, "\n"))
		}
	})
	return p
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case err := <-p.Done:
		p.Done <- err
		return true
	default:
		return false
	}
}

// Kill kills the process with SIGKILL and waits for it to end.
func (p *Proc) Kill(t testing.TB) {
	t.Helper()
	if err := p.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err := <-p.Done
	p.Done <- err
}

// Wait waits up to d (a deadline, not a wait for a result) for the
// process to end by itself, and fails the test if it does not or fails.
func (p *Proc) Wait(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case err := <-p.Done:
		p.Done <- err
		if err != nil {
			t.Fatalf("process %s: %v\n%s", p.Name, err, p.Stderr.String())
		}
	case <-time.After(d):
		t.Fatalf("process %s did not end within %v", p.Name, d)
	}
}

// Committed reads topic read_committed from its start to the last stable
// offsets of its partitions as of now (the committed data records; the
// transaction markers are read to know where a partition ends, and
// dropped).
func Committed(t testing.TB, addrs []string, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("list the last stable offsets of %s: %v", topic, err)
	}
	offs := map[int32]kgo.Offset{}
	end := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			offs[o.Partition] = kgo.NewOffset().AtStart()
			end[o.Partition] = o.Offset
		}
	})
	var out []*kgo.Record
	if len(offs) == 0 {
		return out
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs})
	for len(end) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %v (read %d records; partitions not at their end: %v)", topic, ctx.Err(), len(out), end)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("read %s partition %d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			e, ok := end[r.Partition]
			if !ok || r.Offset >= e {
				return
			}
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
			if r.Offset+1 >= e {
				delete(end, r.Partition)
			}
		})
	}
	return out
}
