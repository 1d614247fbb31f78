// Package kafkatest holds what the multi-process tests of group mode
// (docs/scale-out.md) share: a kfake cluster on loopback TCP (programs are
// built by internal/testing/crashtest.Build), starting one as a real process of a
// group and killing it, and reading a topic read_committed. Tests only.
package kafkatest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir/internal/testing/weirtest"
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
// per-checkpoint lines and a goroutine dump asked for by Stacks).
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
			for _, l := range strings.Split(withoutDump(p.Stderr.String()), "\n") {
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
