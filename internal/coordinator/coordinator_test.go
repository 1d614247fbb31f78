package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/metrics"
)

// coordEnv drives a checkpoint coordinator by hand, as raft's
// InteractionEnv drives a RawNode: ticks and timeouts are channels the
// test sends on, and after each command the env waits until the
// coordinator's goroutine has handled it (it takes a no-op acknowledgement
// next), so the output never depends on the machine's speed.
type coordEnv struct {
	c       *Coordinator
	ticks   chan time.Time
	timeout chan time.Time // the armed checkpoint timeout, nil if none
	done    chan error
	cancel  context.CancelFunc
	ended   bool
	out     strings.Builder
	failing int // persists that fail next
	reqs    []*envReq
	m       metrics.Checkpoints
}

type envReq struct {
	name string
	req  *savepointReq
}

func newCoordEnv(sources, tasks int, nextID int64, epoch time.Duration) *coordEnv {
	e := &coordEnv{ticks: make(chan time.Time), done: make(chan error, 1)}
	now := time.Unix(0, 0)
	c := &Coordinator{
		interval: time.Second, epoch: epoch, timeout: time.Minute, log: slog.New(slog.DiscardHandler), metrics: &e.m,
		triggers: map[int][]chan *Barrier{}, nsources: sources, ntasks: tasks,
		// Unbuffered: a send returns once the loop took it, which is
		// what the env's sync relies on.
		acks: make(chan *TaskSnapshot), finished: make(chan struct{}),
		requests: make(chan *savepointReq), nextID: nextID,
	}
	for range sources {
		c.triggers[0] = append(c.triggers[0], make(chan *Barrier, 1))
	}
	c.time = Time{
		Ticks: func(d time.Duration) (<-chan time.Time, func()) {
			if epoch > 0 {
				// In microbatch mode the clock restarts at each epoch's
				// end: show when.
				fmt.Fprintf(&e.out, "epoch clock started (%v)\n", d)
			}
			return e.ticks, func() {}
		},
		// The first periodic checkpoint comes with the first "tick" too:
		// the env's ticks are "the next trigger time has come", wherever
		// it falls (TestFirstCheckpointDelay times them).
		After: func(time.Duration) (<-chan time.Time, func()) {
			return e.ticks, func() {}
		},
		Timeout: func(d time.Duration) (<-chan time.Time, func()) {
			ch := make(chan time.Time)
			e.timeout = ch
			fmt.Fprintf(&e.out, "timeout armed (%v)\n", d)
			return ch, func() {
				if e.timeout == ch {
					e.timeout = nil
				}
			}
		},
		Now: func() time.Time { now = now.Add(time.Millisecond); return now },
	}
	names := func(snaps []*TaskSnapshot) string {
		var parts []string
		for _, s := range snaps {
			var cs []string
			for _, pc := range s.Committables {
				cs = append(cs, pc.Name)
			}
			part := fmt.Sprintf("%s[%s]", s.Task, strings.Join(cs, ","))
			for _, st := range s.States {
				part += "{" + st.UID + "}"
			}
			if len(s.Deferred) > 0 {
				part += fmt.Sprintf("{%d deferred}", len(s.Deferred))
			}
			parts = append(parts, part)
		}
		slices.Sort(parts)
		return strings.Join(parts, " ")
	}
	c.persist = func(_ context.Context, id int64, final bool, snaps []*TaskSnapshot) error {
		if e.failing > 0 {
			e.failing--
			fmt.Fprintf(&e.out, "persist %d final=%v: fails\n", id, final)
			return errors.New("disk full")
		}
		fmt.Fprintf(&e.out, "persist %d final=%v: %s\n", id, final, names(snaps))
		return nil
	}
	c.persistSP = func(_ context.Context, id int64, path string, snaps []*TaskSnapshot) error {
		fmt.Fprintf(&e.out, "persist savepoint %d to %s: %s\n", id, path, names(snaps))
		return nil
	}
	c.commit = func(_ context.Context, id int64, snaps []*TaskSnapshot) error {
		fmt.Fprintf(&e.out, "commit %d: %s\n", id, names(snaps))
		return nil
	}
	e.c = c
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() { e.done <- c.Run(ctx) }()
	return e
}

// send hands v to the loop (or notes that the loop has ended).
func send[T any](e *coordEnv, ch chan T, v T) {
	if e.ended {
		return
	}
	select {
	case ch <- v:
	case err := <-e.done:
		e.ended = true
		fmt.Fprintf(&e.out, "coordinator returned: %v\n", err)
	}
}

// sync waits until the loop has handled everything sent before, then
// reports barriers sent to the sources and answers to requests.
func (e *coordEnv) sync() string {
	// An acknowledgement of no checkpoint is a no-op for the loop.
	send(e, e.c.acks, &TaskSnapshot{ID: -1})
	for i, ch := range e.c.triggers[0] {
		select {
		case b := <-ch:
			fmt.Fprintf(&e.out, "source %d: barrier %d%s%s\n", i, b.ID, ifSet(b.Final, " final"), ifSet(b.Stop, " stop"))
		default:
		}
	}
	e.reqs = slices.DeleteFunc(e.reqs, func(r *envReq) bool {
		select {
		case res := <-r.req.resp:
			if res.err != nil {
				fmt.Fprintf(&e.out, "%s: %v\n", r.name, res.err)
			} else {
				fmt.Fprintf(&e.out, "%s: done, id %d\n", r.name, res.id)
			}
			return true
		default:
			return false
		}
	})
	out := e.out.String()
	e.out.Reset()
	if out == "" {
		return "ok\n"
	}
	return out
}

func ifSet(b bool, s string) string {
	if b {
		return s
	}
	return ""
}

func TestCoordinatorDataDriven(t *testing.T) {
	var e *coordEnv
	defer func() {
		if e != nil {
			e.cancel()
		}
	}()
	datadriven.RunTest(t, "testdata/coordinator", func(t *testing.T, d *datadriven.TestData) string {
		return coordCmd(t, d, &e)
	})
}

// TestCoordinatorEpochs drives the coordinator of a microbatch job: the
// end of the next epoch is due one epoch after the previous one settled
// (committed, failed or aborted), and sources waiting in WaitSettled wake
// then.
func TestCoordinatorEpochs(t *testing.T) {
	var e *coordEnv
	defer func() {
		if e != nil {
			e.cancel()
		}
	}()
	datadriven.RunTest(t, "testdata/epochs", func(t *testing.T, d *datadriven.TestData) string {
		return coordCmd(t, d, &e)
	})
}

// TestWaitSettled: a waiter wakes when its checkpoint settles, not before,
// and a cancelled context ends the wait.
func TestWaitSettled(t *testing.T) {
	c := &Coordinator{}
	woke := make(chan error, 1)
	go func() { woke <- c.WaitSettled(context.Background(), 2) }()
	c.settled.set(1)
	select {
	case err := <-woke:
		t.Fatalf("woke at settled 1 waiting for 2: %v", err)
	default:
	}
	c.settled.set(2)
	if err := <-woke; err != nil {
		t.Fatal(err)
	}
	if err := c.WaitSettled(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.WaitSettled(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
}

// coordCmd runs one command of testdata/coordinator on *env.
func coordCmd(t *testing.T, d *datadriven.TestData, env **coordEnv) string {
	e := *env
	if d.Cmd != "init" && e == nil {
		d.Fatalf(t, "init first")
	}
	switch d.Cmd {
	case "init":
		sources, tasks, next := 2, 2, 0
		epoch := ""
		d.MaybeScanArgs(t, "epoch", &epoch)
		var ep time.Duration
		if epoch != "" {
			var err error
			if ep, err = time.ParseDuration(epoch); err != nil {
				d.Fatalf(t, "epoch: %v", err)
			}
		}
		d.MaybeScanArgs(t, "sources", &sources)
		d.MaybeScanArgs(t, "tasks", &tasks)
		d.MaybeScanArgs(t, "next-id", &next)
		if e != nil {
			e.cancel()
		}
		e = newCoordEnv(sources, tasks, int64(next), ep)
		*env = e
	case "tick":
		send(e, e.ticks, time.Time{})
	case "timeout":
		if e.timeout == nil {
			return "no timeout armed\n"
		}
		send(e, e.timeout, time.Time{})
	case "ack":
		var id int
		var task string
		d.ScanArgs(t, "id", &id)
		d.ScanArgs(t, "task", &task)
		s := &TaskSnapshot{ID: int64(id), Task: task}
		if d.HasArg("commit") {
			var name string
			d.ScanArgs(t, "commit", &name)
			s.Committables = []Committable{{Name: name}}
		}
		if d.HasArg("deferred") {
			// A state file the task left to encode: the coordinator runs
			// it before persisting ("fail" makes it return an error).
			var uid string
			d.ScanArgs(t, "deferred", &uid)
			s.Deferred = []func() (codec.StateFile, error){func() (codec.StateFile, error) {
				if uid == "fail" {
					return codec.StateFile{}, errors.New("encoding failed")
				}
				return codec.StateFile{UID: uid}, nil
			}}
		}
		send(e, e.c.acks, s)
	case "finish-source":
		send(e, e.c.finished, struct{}{})
	case "persist-fails":
		e.failing++
	case "checkpoint", "savepoint", "stop-with-savepoint":
		r := &savepointReq{stop: d.Cmd == "stop-with-savepoint", resp: make(chan savepointResult, 1)}
		if d.Cmd != "checkpoint" {
			d.ScanArgs(t, "path", &r.path)
		}
		e.reqs = append(e.reqs, &envReq{name: d.Cmd, req: r})
		send(e, e.c.requests, r)
	case "settled":
		fmt.Fprintf(&e.out, "settled %d committed %d\n", e.c.Settled(), e.c.committed.Load())
	case "metrics":
		fmt.Fprintf(&e.out, "completed %d failed %d aborted %d last %d committed %d\n",
			e.m.Completed.Load(), e.m.Failed.Load(), e.m.Aborted.Load(), e.m.LastID.Load(), e.c.committed.Load())
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	return e.sync()
}
