package kafkatest

import (
	"context"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// Group is the processes of one group-mode job that a test starts, kills
// and starts again: the kill-test flow the multi-process tests share.
// Members are named ("a", "b", ...: their instance ids); Args gives the
// command line of a member, the same each time it is started.
type Group struct {
	t     testing.TB
	bin   string
	args  func(name string) []string
	env   []string
	procs map[string]*Proc
	// killed are the members killed and not started again: they are not
	// expected to run.
	killed map[string]bool
	began  time.Time
	// Diagnose, if set, logs what the test knows of the job's progress
	// (its output so far, the group's description) when a wait of
	// WaitFor times out.
	Diagnose func()
}

// NewGroup returns the group of bin's processes whose command line is
// args(name), with env added to their environment; none runs yet.
func NewGroup(t testing.TB, bin string, env []string, args func(name string) []string) *Group {
	return &Group{t: t, bin: bin, args: args, env: env, procs: map[string]*Proc{}, killed: map[string]bool{}, began: time.Now()}
}

// Start starts the named members (again, if they ran before and ended).
func (g *Group) Start(names ...string) {
	g.t.Helper()
	for _, name := range names {
		if p := g.procs[name]; p != nil && !p.Exited() {
			g.t.Fatalf("process %s started again while it runs", name)
		}
		g.procs[name] = Start(g.t, g.bin, name, g.env, g.args(name)...)
		delete(g.killed, name)
	}
}

// Proc is the member's current process (nil if it never started).
func (g *Group) Proc(name string) *Proc { return g.procs[name] }

// Names are the members started so far, sorted.
func (g *Group) Names() []string {
	var out []string
	for name := range g.procs {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Running fails the test if a member's process has ended (but for one
// the test killed).
func (g *Group) Running() {
	g.t.Helper()
	for _, name := range g.Names() {
		if p := g.procs[name]; !g.killed[name] && p.Exited() {
			g.t.Fatalf("process %s ended:\n%s", name, p.Stderr.String())
		}
	}
}

// checkEvery spaces the checks of WaitFor: its conditions read topics and
// describe the group, which costs the test process (built with -race)
// tens of milliseconds of CPU each, taken from the processes under test
// on a small machine. A check rate, not a wait for a result.
const checkEvery = 20 * time.Millisecond

// WaitFor waits, with a deadline, for cond while every member runs (one
// that ends fails the test).
func (g *Group) WaitFor(what string, d time.Duration, cond func() bool) {
	g.t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(checkEvery)
	defer tick.Stop()
	for {
		g.Running()
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			g.timedOut()
			g.t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		<-tick.C
	}
}

// timedOut logs, for a wait that timed out, the test's Diagnose and the
// stacks of the members' long-blocked goroutines (ending them).
func (g *Group) timedOut() {
	g.t.Helper()
	if g.Diagnose != nil {
		g.Diagnose()
	}
	for _, name := range g.Names() {
		if p := g.procs[name]; !p.Exited() {
			g.t.Logf("process %s, goroutines blocked for minutes:\n%s", name, p.Stacks(10*time.Second))
		}
	}
}

// Kill kills the member with SIGKILL and waits for it to end.
func (g *Group) Kill(name string) {
	g.t.Helper()
	p := g.procs[name]
	if p == nil {
		g.t.Fatalf("no process %s to kill", name)
	}
	p.Kill(g.t)
	g.killed[name] = true
	g.Logf("%s killed", name)
}

// Logf logs with the time since the group was made.
func (g *Group) Logf(format string, args ...any) {
	g.t.Helper()
	g.t.Logf("%v: "+format, append([]any{time.Since(g.began).Round(time.Millisecond)}, args...)...)
}

// Wait waits up to d (a deadline) for every member to end by itself
// (a bounded job), and fails the test if one does not or fails.
func (g *Group) Wait(d time.Duration) {
	g.t.Helper()
	for _, name := range g.Names() {
		g.procs[name].Wait(g.t, d)
	}
	g.Logf("every process ended")
}

// Stop stops every member with SIGTERM and fails the test unless each
// ends cleanly within d (a deadline).
func (g *Group) Stop(d time.Duration) {
	g.t.Helper()
	for _, name := range g.Names() {
		g.procs[name].Cmd.Process.Signal(syscall.SIGTERM)
	}
	g.Wait(d)
}

// KillMidRun is the kill of a kill test: wait for the moment (Victim
// names the member to kill, "" until then), run Before, kill the victim
// with SIGKILL, start it again at once if Restart (with its instance id
// it fences its predecessor's open transaction), start the Join members,
// and run Then. Committed counts the output committed so far: a kill that
// finds TooLate or more committed, or joiners that find Want, fail the
// test (it would prove little); 0 checks nothing.
type KillMidRun struct {
	When      string
	Deadline  time.Duration // for the moment; 0: two minutes
	Victim    func() string
	Before    func()
	Restart   bool
	Join      []string
	Then      func()
	Committed func() int
	TooLate   int
	Want      int
}

// KillMidRun runs k on the group and returns the victim and how much
// output was committed when it was killed.
func (g *Group) KillMidRun(k KillMidRun) (victim string, killedAt int) {
	g.t.Helper()
	d := k.Deadline
	if d == 0 {
		d = 2 * time.Minute
	}
	g.WaitFor(k.When, d, func() bool {
		victim = k.Victim()
		return victim != ""
	})
	if k.Before != nil {
		k.Before()
	}
	g.Kill(victim)
	if k.Committed != nil {
		killedAt = k.Committed()
		g.Logf("%d committed when %s was killed", killedAt, victim)
		if k.TooLate > 0 && killedAt >= k.TooLate {
			g.t.Fatalf("%d committed before the kill (%d at the end): too late for the test to prove much", killedAt, k.Want)
		}
	}
	if k.Restart {
		g.Start(victim)
	}
	g.Start(k.Join...)
	if k.Committed != nil && k.Want > 0 && len(k.Join) > 0 {
		if got := k.Committed(); got >= k.Want {
			g.t.Fatalf("all %d committed before %v joined: the test proves nothing", got, k.Join)
		}
	}
	if k.Then != nil {
		k.Then()
	}
	return victim, killedAt
}

// Run runs bin to its end (a one-process reference run) and fails the
// test if it fails.
func Run(t testing.TB, bin string, args ...string) {
	t.Helper()
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, args, err, out)
	}
}

// Fence aborts the open transaction of transactional id txnID (a killed
// group member's: "<app id>-<instance id>") as the member does when it is
// started again with its instance id: by initialising a producer with
// the id. Until then, or until the transaction timeout (a minute in group
// mode), read_committed readers of every partition the dead transaction
// wrote, the group's own readers of its repartition topics and changelogs
// among them, wait. A test that must not start the member again before
// another one has taken its partitions over fences it this way.
func Fence(t testing.TB, addrs []string, txnID string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var last error
	ok := weirtest.Poll(time.Minute, func() bool {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &txnID
		req.TransactionTimeoutMillis = int32(time.Minute.Milliseconds())
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		last = err
		// CONCURRENT_TRANSACTIONS: the abort is under way; ask again.
		return err == nil
	})
	if !ok {
		t.Fatalf("fence transactional id %s: %v", txnID, last)
	}
}
