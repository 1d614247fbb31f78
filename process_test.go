package weir_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// sessionCounter counts events per key and emits the count 1s (event time)
// after the key's last event, using a ValueState and an event-time timer
// that is moved on every event.
type sessionCounter struct {
	count *weir.ValueState[string, int64]
	timer *weir.ValueState[string, int64]
}

func (f *sessionCounter) Open(rc *weir.RuntimeContext[string]) error {
	f.count = weir.NewValueState[int64](rc, "count")
	f.timer = weir.NewValueState[int64](rc, "timer")
	return nil
}

func (f *sessionCounter) ProcessElement(ctx *weir.KeyedContext[string, string], e ev) error {
	n, _ := f.count.Value()
	f.count.Update(n + 1)
	if old, ok := f.timer.Value(); ok {
		ctx.DeleteEventTimeTimer(time.UnixMilli(old))
	}
	at := ctx.Timestamp().Add(time.Second)
	ctx.RegisterEventTimeTimer(at)
	ctx.RegisterEventTimeTimer(at) // deduplicated
	f.timer.Update(at.UnixMilli())
	return nil
}

func (f *sessionCounter) OnTimer(ctx *weir.KeyedContext[string, string], t time.Time) error {
	n, _ := f.count.Value()
	ctx.Emit(fmt.Sprintf("%s=%d@%d", ctx.Key(), n, t.UnixMilli()))
	f.count.Clear()
	f.timer.Clear()
	return nil
}

func TestProcessStateAndTimers(t *testing.T) {
	evs := []ev{{"a", 0}, {"b", 100}, {"a", 500}, {"a", 1400}, {"b", 3000}, {"a", 5000}}
	for _, p := range []int{1, 2} {
		job := weir.NewJob("p", weir.Parallelism(p))
		src := weir.FromSource(job, "events", weir.SliceSource(evs),
			weir.MonotonousTimestamps(func(e ev) time.Time { return time.UnixMilli(e.TS) }))
		out := weir.Collect(weir.ProcessWith(weir.KeyBy(src, func(e ev) string { return e.Key }),
			func() weir.KeyedProcessFunction[string, ev, string] { return &sessionCounter{} }))
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, s := range out.Items() {
			got[s] = true
		}
		// a: 0, 500, 1400 -> timer 2400 fires when ts 3000 arrives; then 5000
		// -> timer 6000 fires at end of input. b: 100 -> 1100; 3000 -> 4000.
		for _, w := range []string{"a=3@2400", "b=1@1100", "b=1@4000", "a=1@6000"} {
			if !got[w] {
				t.Errorf("p=%d: missing %s in %v", p, w, out.Items())
			}
		}
		if len(got) != 4 {
			t.Errorf("p=%d: got %v, want 4 results", p, out.Items())
		}
	}
}

func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	if !weirtest.Poll(30*time.Second, func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<16)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), before, buf)
	}
}

// endless is an unbounded source: it never ends by itself.
type endless struct{}

func (endless) Splits(context.Context) ([]weir.Split, error) {
	return []weir.Split{split("0"), split("1")}, nil
}
func (endless) Open(context.Context, weir.Split) (weir.SplitReader[ev], error) {
	return &endlessReader{}, nil
}

type split string

func (s split) ID() string { return string(s) }

type endlessReader struct{ n int64 }

func (r *endlessReader) Read(_ context.Context, dst []ev) (int, error) {
	for i := range dst {
		r.n++
		dst[i] = ev{Key: fmt.Sprint(r.n % 13), TS: r.n}
	}
	return len(dst), nil
}
func (r *endlessReader) Close() error { return nil }

func TestCancelStopsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, p := range []int{1, 3} {
		job := weir.NewJob("endless", weir.Parallelism(p))
		src := weir.FromSource(job, "endless", weir.Source[ev](endless{}),
			weir.MonotonousTimestamps(func(e ev) time.Time { return time.UnixMilli(e.TS) }))
		res := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ev) string { return e.Key }), weir.Tumbling(time.Second)), weir.Count[ev]())
		out := weir.Collect(res)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- job.Run(ctx) }()
		weirtest.WaitFor(t, "results from an endless source", 30*time.Second, func() bool { return len(out.Items()) > 0 })
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run returned %v, want context.Canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
	}
	waitGoroutines(t, before)
}

func TestOperatorPanicFailsRunWithName(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, p := range []int{1, 2} {
		job := weir.NewJob("boom", weir.Parallelism(p))
		src := weir.FromSource(job, "endless", weir.Source[ev](endless{}),
			weir.MonotonousTimestamps(func(e ev) time.Time { return time.UnixMilli(e.TS) }))
		ks := weir.KeyBy(src, func(e ev) string { return e.Key })
		res := weir.Process(ks, weir.ProcessFunc[string, ev, ev](func(ctx *weir.KeyedContext[string, ev], e ev) error {
			if e.TS == 5000 {
				panic("bad record 5000")
			}
			ctx.Emit(e)
			return nil
		}), weir.Name("fragile"))
		weir.Collect(res)
		err := job.Run(context.Background())
		var te *weir.TaskError
		if !errors.As(err, &te) || te.Operator != "fragile" || !strings.Contains(err.Error(), "bad record 5000") {
			t.Fatalf("Run returned %v, want a TaskError of operator fragile with the panic", err)
		}
	}
	waitGoroutines(t, before)
}

func TestOperatorErrorFailsRun(t *testing.T) {
	job := weir.NewJob("err")
	src := weir.FromSource(job, "s", weir.SliceSource([]ev{{"a", 1}, {"b", 2}}), weir.NoWatermarks[ev]())
	ks := weir.KeyBy(src, func(e ev) string { return e.Key })
	sentinel := errors.New("cannot handle b")
	weir.Collect(weir.Process(ks, weir.ProcessFunc[string, ev, ev](func(ctx *weir.KeyedContext[string, ev], e ev) error {
		if e.Key == "b" {
			return sentinel
		}
		return nil
	})))
	if err := job.Run(context.Background()); !errors.Is(err, sentinel) {
		t.Fatalf("Run returned %v, want the operator's error", err)
	}
}

// allStates uses every kind of keyed state. Per key it keeps a count
// (ValueState), the last five timestamps (ListState), how many timestamps
// of each residue mod 3 it saw, modulo 10 (MapState), the largest timestamp
// (ReducingState) and their average (AggregatingState); an event-time timer
// after the input reports and clears them.
type allStates struct {
	count *weir.ValueState[string, int]
	last  *weir.ListState[string, int64]
	mods  *weir.MapState[string, int64, int]
	max   *weir.ReducingState[string, int64]
	avg   *weir.AggregatingState[string, ev, float64]
}

func (f *allStates) Open(rc *weir.RuntimeContext[string]) error {
	f.count = weir.NewValueState[int](rc, "count")
	f.last = weir.NewListState[int64](rc, "last")
	f.mods = weir.NewMapState[int64, int](rc, "mods")
	f.max = weir.NewReducingState(rc, "max", func(a, b int64) int64 { return max(a, b) })
	f.avg = weir.NewAggregatingState(rc, "avg", weir.Avg(func(e ev) int64 { return e.TS }))
	return nil
}

func (f *allStates) ProcessElement(ctx *weir.KeyedContext[string, string], e ev) error {
	n, _ := f.count.Value()
	f.count.Update(n + 1)
	f.last.Add(e.TS)
	if l := f.last.Get(); len(l) > 5 {
		f.last.Update(l[1:])
	}
	m := e.TS % 3
	c, ok := f.mods.Get(m)
	if ok != f.mods.Contains(m) {
		return fmt.Errorf("Get and Contains disagree on %d", m)
	}
	if c+1 == 10 {
		f.mods.Remove(m)
	} else {
		f.mods.Put(m, c+1)
	}
	f.max.Add(e.TS)
	f.avg.Add(e)
	ctx.RegisterEventTimeTimer(time.UnixMilli(1 << 40))
	return nil
}

func (f *allStates) OnTimer(ctx *weir.KeyedContext[string, string], t time.Time) error {
	if d := ctx.TimeDomain(); d != weir.EventTime {
		return fmt.Errorf("event-time timer in domain %v", d)
	}
	n, _ := f.count.Value()
	var last []int64
	for ts := range f.last.All() {
		last = append(last, ts)
	}
	if !slices.Equal(last, f.last.Get()) {
		return fmt.Errorf("ListState All %v != Get %v", last, f.last.Get())
	}
	var mods []string
	for k, v := range f.mods.All() {
		mods = append(mods, fmt.Sprintf("%d:%d", k, v))
	}
	if len(mods) != f.mods.Len() {
		return fmt.Errorf("MapState All yields %d entries, Len %d", len(mods), f.mods.Len())
	}
	slices.Sort(mods)
	mx, _ := f.max.Get()
	avg, _ := f.avg.Get()
	ctx.Emit(fmt.Sprintf("%s n=%d last=%v mods=%v max=%d avg=%.3f", ctx.Key(), n, last, mods, mx, avg))
	f.count.Clear()
	f.last.Clear()
	f.mods.Clear()
	f.max.Clear()
	f.avg.Clear()
	_, ok1 := f.count.Value()
	_, ok2 := f.max.Get()
	_, ok3 := f.avg.Get()
	if ok1 || ok2 || ok3 || f.last.Get() != nil || f.mods.Len() != 0 {
		return fmt.Errorf("state of %s left after Clear", ctx.Key())
	}
	return nil
}

// modelAllStates is what allStates reports, computed directly.
func modelAllStates(evs []ev) []string {
	type acc struct {
		n    int
		last []int64
		mods map[int64]int
		max  int64
		sum  int64
	}
	per := map[string]*acc{}
	for _, e := range evs {
		a := per[e.Key]
		if a == nil {
			a = &acc{mods: map[int64]int{}}
			per[e.Key] = a
		}
		a.n++
		a.last = append(a.last, e.TS)
		if len(a.last) > 5 {
			a.last = a.last[1:]
		}
		if a.mods[e.TS%3]++; a.mods[e.TS%3] == 10 {
			delete(a.mods, e.TS%3)
		}
		a.max = max(a.max, e.TS)
		a.sum += e.TS
	}
	var out []string
	for k, a := range per {
		var mods []string
		for m, c := range a.mods {
			mods = append(mods, fmt.Sprintf("%d:%d", m, c))
		}
		slices.Sort(mods)
		out = append(out, fmt.Sprintf("%s n=%d last=%v mods=%v max=%d avg=%.3f", k, a.n, a.last, mods, a.max, float64(a.sum)/float64(a.n)))
	}
	slices.Sort(out)
	return out
}

func TestProcessEveryStateKind(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var evs []ev
	for i := range 3000 {
		evs = append(evs, ev{Key: fmt.Sprint("k", r.IntN(20)), TS: int64(i)*3 + r.Int64N(3)})
	}
	want := modelAllStates(evs)
	for _, p := range []int{1, 2} {
		job := weir.NewJob("states", weir.Parallelism(p), weir.BatchSize(64))
		src := weir.FromSource(job, "events", weir.SliceSource(evs),
			weir.MonotonousTimestamps(func(e ev) time.Time { return time.UnixMilli(e.TS) }))
		out := weir.Collect(weir.ProcessWith(weir.KeyBy(src, func(e ev) string { return e.Key }),
			func() weir.KeyedProcessFunction[string, ev, string] { return &allStates{} }))
		if err := job.Run(context.Background()); err != nil {
			t.Fatalf("p=%d: %v", p, err)
		}
		got := out.Items()
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("p=%d:\n got %v\nwant %v", p, got, want)
		}
	}
}

// psClock is a processing-time clock that the test moves by hand.
type psClock struct{ ms atomic.Int64 }

func (c *psClock) now() time.Time { return time.UnixMilli(c.ms.Load()) }

// psCmd is a command for the functions under test; Op "" is a no-op.
type psCmd struct {
	Key, Op string
	TS      int64
}

// psFeed is an unbounded source the test drives: it emits the commands
// sent to it, and while there are none, every millisecond, no-op records
// on keys spread over the subtasks, so that every task loop runs and checks
// its processing-time timers. Closing it ends the input.
type psFeed chan []psCmd

func (f psFeed) Splits(context.Context) ([]weir.Split, error) { return []weir.Split{split("ps")}, nil }
func (f psFeed) Open(context.Context, weir.Split) (weir.SplitReader[psCmd], error) {
	return &psReader{ch: f}, nil
}

type psReader struct {
	ch      psFeed
	pending []psCmd
}

func (r *psReader) Read(ctx context.Context, dst []psCmd) (int, error) {
	if len(r.pending) == 0 {
		select {
		case cs, ok := <-r.ch:
			if !ok {
				return 0, io.EOF
			}
			r.pending = cs
		case <-time.After(time.Millisecond):
			n := min(len(dst), 16)
			for i := range n {
				dst[i] = psCmd{Key: fmt.Sprint("noop-", i)}
			}
			return n, nil
		case <-ctx.Done():
			return 0, nil
		}
	}
	n := copy(dst, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}
func (r *psReader) Close() error { return nil }

// psRun starts a job reading commands from a psFeed through fn and returns
// the feed, the output, and a function that ends the input and returns
// Run's error.
func psRun(t *testing.T, p int, clk *psClock, newFn func() weir.KeyedProcessFunction[string, psCmd, string]) (psFeed, *weir.Collector[string], func() error) {
	t.Helper()
	job := weir.NewJob("ps", weir.Parallelism(p), weir.Clock(clk.now))
	feed := make(psFeed)
	src := weir.FromSource(job, "feed", weir.Source[psCmd](feed),
		weir.MonotonousTimestamps(func(c psCmd) time.Time { return time.UnixMilli(c.TS) }))
	out := weir.Collect(weir.ProcessWith(weir.KeyBy(src, func(c psCmd) string { return c.Key }), newFn))
	done := make(chan error, 1)
	go func() { done <- job.Run(context.Background()) }()
	return feed, out, func() error {
		close(feed)
		select {
		case err := <-done:
			return err
		case <-time.After(20 * time.Second):
			t.Fatal("Run did not return after the end of input")
			return nil
		}
	}
}

// psExpect waits until out holds from+len(want) items and checks that the
// items after the first from are want, in any order.
func psExpect(t *testing.T, out *weir.Collector[string], from int, want ...string) {
	t.Helper()
	if !weirtest.Poll(30*time.Second, func() bool { return len(out.Items()) >= from+len(want) }) {
		t.Fatalf("timed out waiting for %v; have %v", want, out.Items()[from:])
	}
	got := slices.Clone(out.Items()[from:])
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// ttlStates has a state of each kind with a TTL of one second, and one
// value whose TTL reads refresh.
type ttlStates struct {
	v       *weir.ValueState[string, int]
	l       *weir.ListState[string, int]
	m       *weir.MapState[string, string, int]
	r       *weir.ReducingState[string, int]
	a       *weir.AggregatingState[string, int, int64]
	touched *weir.ValueState[string, int]
}

func (f *ttlStates) Open(rc *weir.RuntimeContext[string]) error {
	ttl := weir.TTL(time.Second)
	f.v = weir.NewValueState[int](rc, "v", ttl)
	f.l = weir.NewListState[int](rc, "l", ttl)
	f.m = weir.NewMapState[string, int](rc, "m", ttl)
	f.r = weir.NewReducingState(rc, "r", func(a, b int) int { return a + b }, ttl)
	f.a = weir.NewAggregatingState(rc, "a", weir.Count[int](), ttl)
	f.touched = weir.NewValueState[int](rc, "touched", ttl, weir.TTLUpdateOnRead())
	return nil
}

func (f *ttlStates) ProcessElement(ctx *weir.KeyedContext[string, string], c psCmd) error {
	switch c.Op {
	case "put":
		f.v.Update(1)
		f.l.Add(int(ctx.CurrentProcessingTime().UnixMilli()))
		f.m.Put("x", 1)
		f.r.Add(1)
		f.a.Add(1)
		f.touched.Update(1)
	case "get":
		v, _ := f.v.Value()
		r, _ := f.r.Get()
		a, _ := f.a.Get()
		tv, _ := f.touched.Value()
		ctx.Emit(fmt.Sprintf("%s@%d v=%d l=%v m=%d r=%d a=%d t=%d", c.Key, ctx.CurrentProcessingTime().UnixMilli(),
			v, f.l.Get(), f.m.Len(), r, a, tv))
	}
	return nil
}

// TTL runs on the job's clock: values expire a second after they were
// written (list elements one by one), and reads refresh only where asked.
func TestProcessStateTTL(t *testing.T) {
	for _, p := range []int{1, 2} {
		clk := &psClock{}
		clk.ms.Store(1000)
		feed, out, end := psRun(t, p, clk, func() weir.KeyedProcessFunction[string, psCmd, string] { return &ttlStates{} })
		// Each step waits for a read of every key it wrote: a key's
		// commands are processed in order, but keys on different subtasks
		// are not, and the clock must not move before the writes are done.
		feed <- []psCmd{{Key: "a", Op: "put"}, {Key: "b", Op: "put"}, {Key: "a", Op: "get"}, {Key: "b", Op: "get"}}
		psExpect(t, out, 0, "a@1000 v=1 l=[1000] m=1 r=1 a=1 t=1", "b@1000 v=1 l=[1000] m=1 r=1 a=1 t=1")
		clk.ms.Store(1500)
		feed <- []psCmd{{Key: "b", Op: "put"}, {Key: "b", Op: "get"}, {Key: "a", Op: "get"}}
		psExpect(t, out, 2, "b@1500 v=1 l=[1000 1500] m=1 r=2 a=2 t=1", "a@1500 v=1 l=[1000] m=1 r=1 a=1 t=1")
		clk.ms.Store(2000) // a written at 1000 expired, except t, read at 1500
		feed <- []psCmd{{Key: "a", Op: "get"}, {Key: "b", Op: "get"}}
		psExpect(t, out, 4, "a@2000 v=0 l=[] m=0 r=0 a=0 t=1", "b@2000 v=1 l=[1500] m=1 r=2 a=2 t=1")
		clk.ms.Store(3000)
		feed <- []psCmd{{Key: "a", Op: "get"}, {Key: "b", Op: "get"}}
		psExpect(t, out, 6, "a@3000 v=0 l=[] m=0 r=0 a=0 t=0", "b@3000 v=0 l=[] m=0 r=0 a=0 t=0")
		if err := end(); err != nil {
			t.Fatalf("p=%d: %v", p, err)
		}
	}
}

// procTimers registers processing-time timers (and one event-time timer)
// and reports what fires.
type procTimers struct{}

func (procTimers) ProcessElement(ctx *weir.KeyedContext[string, string], c psCmd) error {
	now := ctx.CurrentProcessingTime()
	switch c.Op {
	case "reg":
		ctx.RegisterProcessingTimeTimer(now.Add(100 * time.Millisecond))
		ctx.RegisterProcessingTimeTimer(now.Add(100 * time.Millisecond)) // deduplicated
		ctx.RegisterProcessingTimeTimer(now.Add(50 * time.Millisecond))
		ctx.DeleteProcessingTimeTimer(now.Add(50 * time.Millisecond))
		ctx.Emit(fmt.Sprintf("reg %s@%d %v", c.Key, now.UnixMilli(), ctx.TimeDomain()))
	case "late":
		ctx.RegisterProcessingTimeTimer(now.Add(time.Hour)) // never due: dropped at the end
		ctx.RegisterEventTimeTimer(time.UnixMilli(5))       // fires at the end of input
		ctx.Emit("late " + c.Key)
	}
	return nil
}

func (procTimers) OnTimer(ctx *weir.KeyedContext[string, string], t time.Time) error {
	ms := t.UnixMilli()
	if ctx.TimeDomain() == weir.ProcessingTime && ms == 1100 {
		ctx.RegisterProcessingTimeTimer(t.Add(100 * time.Millisecond)) // from a timer
	}
	if !ctx.Timestamp().Equal(t) {
		return fmt.Errorf("Timestamp %v in OnTimer(%v)", ctx.Timestamp(), t)
	}
	ctx.Emit(fmt.Sprintf("%s %v@%d now=%d", ctx.Key(), ctx.TimeDomain(), ms, ctx.CurrentProcessingTime().UnixMilli()))
	return nil
}

func TestProcessingTimeTimers(t *testing.T) {
	for _, p := range []int{1, 2} {
		clk := &psClock{}
		clk.ms.Store(1000)
		feed, out, end := psRun(t, p, clk, func() weir.KeyedProcessFunction[string, psCmd, string] { return procTimers{} })
		feed <- []psCmd{{Key: "a", Op: "reg"}, {Key: "b", Op: "reg"}}
		psExpect(t, out, 0, "reg a@1000 EventTime", "reg b@1000 EventTime")
		clk.ms.Store(1100) // the deleted timers at 1050 do not fire
		psExpect(t, out, 2, "a ProcessingTime@1100 now=1100", "b ProcessingTime@1100 now=1100")
		clk.ms.Store(1250)
		psExpect(t, out, 4, "a ProcessingTime@1200 now=1250", "b ProcessingTime@1200 now=1250")
		feed <- []psCmd{{Key: "c", Op: "late"}}
		psExpect(t, out, 6, "late c")
		if err := end(); err != nil {
			t.Fatalf("p=%d: %v", p, err)
		}
		// At the end of input the event-time timer fires, the
		// processing-time one does not; nothing else fired meanwhile.
		psExpect(t, out, 7, "c EventTime@5 now=1250")
	}
}

// timerOrder registers event-time timers as the records say, to check
// deduplication, deletion and the firing order.
type timerOrder struct{}

func (timerOrder) ProcessElement(ctx *weir.KeyedContext[string, string], e ev) error {
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	switch e.TS {
	case 1, 2, 5:
		ctx.RegisterEventTimeTimer(at(100))
	case 3:
		ctx.RegisterEventTimeTimer(at(100))
		ctx.RegisterEventTimeTimer(at(50))
		ctx.DeleteEventTimeTimer(at(100))
	case 4:
		ctx.RegisterEventTimeTimer(at(100)) // already there: keeps its place
		ctx.RegisterEventTimeTimer(at(60))
		ctx.DeleteEventTimeTimer(at(60))
		ctx.RegisterEventTimeTimer(at(60))
		ctx.DeleteEventTimeTimer(at(1000)) // not registered: nothing happens
	}
	return nil
}

func (timerOrder) OnTimer(ctx *weir.KeyedContext[string, string], t time.Time) error {
	ctx.Emit(fmt.Sprintf("%s@%d %v", ctx.Key(), t.UnixMilli(), ctx.TimeDomain()))
	return nil
}

func TestEventTimeTimerOrder(t *testing.T) {
	evs := []ev{{"x", 1}, {"y", 2}, {"z", 3}, {"x", 4}, {"w", 5}}
	want := []string{"z@50 EventTime", "x@60 EventTime", "x@100 EventTime", "y@100 EventTime", "w@100 EventTime"}
	for _, p := range []int{1, 2} {
		job := weir.NewJob("order", weir.Parallelism(p))
		src := weir.FromSource(job, "events", weir.SliceSource(evs),
			weir.MonotonousTimestamps(func(e ev) time.Time { return time.UnixMilli(e.TS) }))
		out := weir.Collect(weir.Process(weir.KeyBy(src, func(e ev) string { return e.Key }),
			weir.KeyedProcessFunction[string, ev, string](timerOrder{})))
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := out.Items()
		if p == 1 {
			if !slices.Equal(got, want) {
				t.Errorf("p=1: fired %v, want %v (time order, then registration order)", got, want)
			}
			continue
		}
		got = slices.Clone(got)
		slices.Sort(got)
		w := slices.Clone(want)
		slices.Sort(w)
		if !slices.Equal(got, w) {
			t.Errorf("p=%d: fired %v, want %v", p, got, w)
		}
	}
}

// openFunc is a process function that only creates state.
type openFunc func(rc *weir.RuntimeContext[string]) error

func (f openFunc) Open(rc *weir.RuntimeContext[string]) error { return f(rc) }
func (f openFunc) ProcessElement(*weir.KeyedContext[string, string], ev) error {
	return nil
}

func TestStateErrorsFailOpen(t *testing.T) {
	cases := []struct {
		name string
		open openFunc
		want string
	}{
		{"duplicate", func(rc *weir.RuntimeContext[string]) error {
			weir.NewValueState[int](rc, "s")
			weir.NewListState[int](rc, "s")
			return nil
		}, `state "s": duplicate name`},
		{"update on read without TTL", func(rc *weir.RuntimeContext[string]) error {
			weir.NewValueState[int](rc, "s", weir.TTLUpdateOnRead())
			return nil
		}, "TTL update on read without a TTL"},
		{"negative TTL", func(rc *weir.RuntimeContext[string]) error {
			weir.NewReducingState(rc, "s", func(a, b int) int { return a }, weir.TTL(-time.Second))
			return nil
		}, "must not be negative"},
		{"map key without a stable hash", func(rc *weir.RuntimeContext[string]) error {
			weir.NewMapState[*int, int](rc, "s")
			return nil
		}, "no stable hash"},
		{"Open's own error", func(rc *weir.RuntimeContext[string]) error {
			return errors.New("cannot open")
		}, "cannot open"},
	}
	for _, c := range cases {
		job := weir.NewJob("bad")
		src := weir.FromSource(job, "s", weir.SliceSource([]ev{{"a", 1}}), weir.NoWatermarks[ev]())
		weir.Collect(weir.Process(weir.KeyBy(src, func(e ev) string { return e.Key }),
			weir.KeyedProcessFunction[string, ev, string](c.open), weir.Name("opener")))
		err := job.Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "opener") {
			t.Errorf("%s: Run returned %v, want an error naming the operator and containing %q", c.name, err, c.want)
		}
	}
}

// lateCreator creates state while processing a record, which is refused.
type lateCreator struct{ rc *weir.RuntimeContext[string] }

func (f *lateCreator) Open(rc *weir.RuntimeContext[string]) error { f.rc = rc; return nil }
func (f *lateCreator) ProcessElement(*weir.KeyedContext[string, string], ev) error {
	weir.NewValueState[int](f.rc, "late")
	return nil
}

func TestStateOutsideOpenFails(t *testing.T) {
	job := weir.NewJob("late")
	src := weir.FromSource(job, "s", weir.SliceSource([]ev{{"a", 1}}), weir.NoWatermarks[ev]())
	weir.Collect(weir.Process(weir.KeyBy(src, func(e ev) string { return e.Key }),
		weir.KeyedProcessFunction[string, ev, string](&lateCreator{})))
	if err := job.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "outside Open") {
		t.Fatalf("Run returned %v, want a failure for state created outside Open", err)
	}
}

// ckProc is a checkpointed process function with every kind of state and
// event-time timers: per key a count (ValueState), the timestamps since the
// last firing (ListState), counts of timestamps by residue mod 5 (MapState,
// with TTL) and the last timestamp (ValueState with TTL refreshed on read);
// a timer at the end of each second of event time reports and clears the
// list.
type ckProc struct {
	count *weir.ValueState[string, int]
	buf   *weir.ListState[string, int64]
	mods  *weir.MapState[string, int64, int]
	last  *weir.ValueState[string, int64]
	// showWM adds the watermark to the output. With one subtask it is a
	// function of the input; with more, a subtask's input batches can
	// carry the watermark of records sent to others (a flush, a barrier),
	// so the watermark at which a timer fires depends on timing, though
	// what it sees in state does not.
	showWM bool
}

func (f *ckProc) Open(rc *weir.RuntimeContext[string]) error {
	f.count = weir.NewValueState[int](rc, "count")
	f.buf = weir.NewListState[int64](rc, "buf")
	f.mods = weir.NewMapState[int64, int](rc, "mods", weir.TTL(time.Hour))
	f.last = weir.NewValueState[int64](rc, "last", weir.TTL(time.Hour), weir.TTLUpdateOnRead())
	return nil
}

func (f *ckProc) ProcessElement(ctx *weir.KeyedContext[string, string], e ev) error {
	n, _ := f.count.Value()
	f.count.Update(n + 1)
	f.buf.Add(e.TS)
	c, _ := f.mods.Get(e.TS % 5)
	f.mods.Put(e.TS%5, c+1)
	prev, _ := f.last.Value()
	f.last.Update(max(prev, e.TS))
	ctx.RegisterEventTimeTimer(time.UnixMilli((e.TS/1000+1)*1000 - 1))
	return nil
}

func (f *ckProc) OnTimer(ctx *weir.KeyedContext[string, string], t time.Time) error {
	n, _ := f.count.Value()
	var sum int64
	for ts := range f.buf.All() {
		sum += ts
	}
	var mods []string
	for m, c := range f.mods.All() {
		mods = append(mods, fmt.Sprintf("%d:%d", m, c))
	}
	slices.Sort(mods)
	last, _ := f.last.Value()
	if ctx.Watermark().Before(t) {
		return fmt.Errorf("timer %v fired at watermark %v", t, ctx.Watermark())
	}
	wm := ""
	if f.showWM {
		wm = fmt.Sprint(" wm=", ctx.Watermark().UnixMilli())
	}
	ctx.Emit(fmt.Sprintf("%s@%d n=%d buf=%d/%d mods=%v last=%d%s", ctx.Key(), t.UnixMilli(), n, len(f.buf.Get()), sum, mods, last, wm))
	f.buf.Clear()
	return nil
}

// buildProcessJob is buildCounting's job with a Process of ckProc instead
// of windows.
func buildProcessJob(evs []ev, p int, dir string, sink *memSink, failAt int64, failed *atomic.Bool, opts ...weir.JobOption) *weir.Job {
	job := weir.NewJob("process", append([]weir.JobOption{weir.Parallelism(p), weir.Checkpointing(5*time.Millisecond, dir),
		weir.Clock(func() time.Time { return time.UnixMilli(1_000_000) }),
		weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxFailures: 100, Interval: time.Hour})}, opts...)...)
	src := failingSource(job, evs, failAt, failed)
	out := weir.ProcessWith(weir.KeyBy(src, func(e ev) string { return e.Key }),
		func() weir.KeyedProcessFunction[string, ev, string] { return &ckProc{showWM: p == 1} }, weir.UID("proc"))
	weir.To(out, weir.Sink[string](sink), weir.UID("sink"))
	return job
}

// A job with a checkpointed Process that fails once and restarts from the
// latest checkpoint gives exactly the output of a failure-free run: state,
// TTL entries, timers and watermark are restored.
func TestProcessCheckpointRecoversExactlyOnce(t *testing.T) {
	r := newRand(9)
	evs := randomEvents(r, 20000, 200, 3000)
	for _, p := range []int{1, 2} {
		// The watermark a timer sees depends on the parallelism (a subtask
		// sees the watermarks of its records only), so the reference run
		// has the same parallelism.
		want := func() []string {
			s := newMemSink()
			var f atomic.Bool
			if err := buildProcessJob(evs, p, t.TempDir(), s, 0, &f).Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			return s.output()
		}()
		if len(want) < 100 {
			t.Fatalf("only %d outputs", len(want))
		}
		s := newMemSink()
		var failed atomic.Bool
		job := buildProcessJob(evs, p, t.TempDir(), s, evs[15000].TS, &failed)
		if err := job.Run(context.Background()); err != nil {
			t.Fatalf("p=%d: %v", p, err)
		}
		if !failed.Load() {
			t.Fatal("the failure was not injected")
		}
		if n := job.Metrics().Checkpoints.Restarts; n != 1 {
			t.Fatalf("p=%d: %d restarts, want 1", p, n)
		}
		if n := job.Metrics().Checkpoints.Completed; n < 3 {
			t.Fatalf("p=%d: only %d checkpoints completed", p, n)
		}
		got := s.output()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("p=%d: output after a failure differs from a failure-free run: %d vs %d records\n%s", p, len(got), len(want), firstDiff(want, got))
		}
	}
}

func firstDiff(want, got []string) string {
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			return fmt.Sprintf("first difference at %d:\n want %q\n got  %q", i, w, g)
		}
	}
	return "no difference"
}

// counter counts the records of each key in a ValueState and emits
// "key=count" per record.
type counter struct{ n *weir.ValueState[string, int] }

func (c *counter) Open(rc *weir.RuntimeContext[string]) error {
	c.n = weir.NewValueState[int](rc, "n")
	return nil
}

func (c *counter) ProcessElement(ctx *weir.KeyedContext[string, string], e ev) error {
	n, _ := c.n.Value()
	c.n.Update(n + 1)
	ctx.Emit(fmt.Sprintf("%s=%d", ctx.Key(), n+1))
	return nil
}

// countJob counts evs per key with a Process of UID "count"; src is the
// source's UID.
func countJob(evs []ev, src string, opts ...weir.JobOption) (*weir.Job, *weir.Collector[string]) {
	job := weir.NewJob("count", opts...)
	s := weir.FromSource(job, "events", weir.SliceSource(evs),
		weir.MonotonousTimestamps(func(e ev) time.Time { return time.UnixMilli(e.TS) }), weir.UID(src))
	out := weir.Collect(weir.ProcessWith(weir.KeyBy(s, func(e ev) string { return e.Key }),
		func() weir.KeyedProcessFunction[string, ev, string] { return &counter{} }, weir.UID("count")))
	return job, out
}

// latestCheckpoint returns the newest checkpoint directory under dir.
func latestCheckpoint(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "chk-") && !strings.HasSuffix(e.Name(), ".inprogress") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		t.Fatalf("no checkpoint in %s", dir)
	}
	slices.Sort(names)
	return filepath.Join(dir, names[len(names)-1])
}

// checkCounts checks that the counts emitted per key continue from before:
// key k's counts are exactly before[k]+1 .. before[k]+n.
func checkCounts(t *testing.T, got []string, before map[string]int, evs []ev) {
	t.Helper()
	n := map[string]int{}
	for _, e := range evs {
		n[e.Key]++
	}
	seen := map[string][]int{}
	for _, s := range got {
		k, v, _ := strings.Cut(s, "=")
		var c int
		fmt.Sscan(v, &c)
		seen[k] = append(seen[k], c)
	}
	for k, m := range n {
		cs := seen[k]
		slices.Sort(cs)
		for i, c := range cs {
			if c != before[k]+i+1 {
				t.Fatalf("key %s: counts %v, want %d..%d", k, cs, before[k]+1, before[k]+m)
			}
		}
		if len(cs) != m {
			t.Fatalf("key %s: %d counts, want %d", k, len(cs), m)
		}
	}
}

// The state of a Process restores at another parallelism: key groups move
// between subtasks, and every key's count continues from its restored
// value.
func TestProcessRestoreAtOtherParallelism(t *testing.T) {
	r := newRand(3)
	gen := func(n int, from int64) []ev {
		out := make([]ev, n)
		for i := range out {
			out[i] = ev{Key: fmt.Sprint("k", r.IntN(50)), TS: from + int64(i)}
		}
		return out
	}
	first, more := gen(5000, 0), gen(3000, 10000)
	before := map[string]int{}
	for _, e := range first {
		before[e.Key]++
	}
	for _, p1 := range []int{2, 3} {
		dir := t.TempDir()
		job, out := countJob(first, "events", weir.Parallelism(p1), weir.Checkpointing(5*time.Millisecond, dir))
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		checkCounts(t, out.Items(), map[string]int{}, first)
		ck := latestCheckpoint(t, dir)
		for _, p2 := range []int{1, 3} {
			// The new input comes from a new source: the old one's state
			// (its input is done) is dropped.
			job, out := countJob(more, "more", weir.Parallelism(p2), weir.RestoreFrom(ck), weir.AllowNonRestoredState())
			if err := job.Run(context.Background()); err != nil {
				t.Fatalf("p %d -> %d: %v", p1, p2, err)
			}
			checkCounts(t, out.Items(), before, more)
		}
	}
}

// ttlProc remembers each key's last timestamp with a TTL and reports, for
// each record, whether the value was still there.
type ttlProc struct {
	clock *atomic.Int64 // set to the event time, when not nil
	last  *weir.ValueState[string, int64]
}

func (f *ttlProc) Open(rc *weir.RuntimeContext[string]) error {
	f.last = weir.NewValueState[int64](rc, "last", weir.TTL(time.Second))
	return nil
}

func (f *ttlProc) ProcessElement(ctx *weir.KeyedContext[string, string], e ev) error {
	if f.clock != nil {
		f.clock.Store(e.TS)
	}
	v, ok := f.last.Value()
	ctx.Emit(fmt.Sprintf("%s had=%v %d", ctx.Key(), ok, v))
	f.last.Update(e.TS)
	return nil
}

// TTL expiry times survive a restore: a value restored with its expiry time
// expires when it would have, by the new job's clock.
func TestProcessRestoreKeepsTTL(t *testing.T) {
	var evs []ev
	for i := range 40 {
		evs = append(evs, ev{Key: fmt.Sprint("k", i), TS: int64(1000 + 10*i)})
	}
	dir := t.TempDir()
	var clk atomic.Int64
	job := weir.NewJob("ttl", weir.Parallelism(1), weir.Checkpointing(5*time.Millisecond, dir),
		weir.Clock(func() time.Time { return time.UnixMilli(clk.Load()) }))
	src := weir.FromSource(job, "events", weir.SliceSource(evs),
		weir.MonotonousTimestamps(func(e ev) time.Time { return time.UnixMilli(e.TS) }))
	weir.Collect(weir.Process(weir.KeyBy(src, func(e ev) string { return e.Key }), &ttlProc{clock: &clk}, weir.UID("ttl")))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Key ki was written at 1000+10i and expires at 2000+10i; the final
	// checkpoint was taken at 1390 (the clock then), when all were alive;
	// at 2250 the keys from k26 on are.
	for _, p := range []int{1, 2} {
		job := weir.NewJob("ttl2", weir.Parallelism(p), weir.RestoreFrom(latestCheckpoint(t, dir)), weir.AllowNonRestoredState(),
			weir.Clock(func() time.Time { return time.UnixMilli(2250) }))
		src := weir.FromSource(job, "more", weir.SliceSource(evs),
			weir.MonotonousTimestamps(func(e ev) time.Time { return time.UnixMilli(e.TS) }))
		out := weir.Collect(weir.ProcessWith(weir.KeyBy(src, func(e ev) string { return e.Key }),
			func() weir.KeyedProcessFunction[string, ev, string] { return &ttlProc{} }, weir.UID("ttl")))
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := out.Items()
		slices.Sort(got)
		var want []string
		for i := range 40 {
			if i >= 26 {
				want = append(want, fmt.Sprintf("k%d had=true %d", i, 1000+10*i))
			} else {
				want = append(want, fmt.Sprintf("k%d had=false 0", i))
			}
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("p=%d: %s", p, firstDiff(want, got))
		}
	}
}

// counterRenamed counts like counter, but its state has another name.
type counterRenamed struct{ n *weir.ValueState[string, int] }

func (c *counterRenamed) Open(rc *weir.RuntimeContext[string]) error {
	c.n = weir.NewValueState[int](rc, "count")
	return nil
}

func (c *counterRenamed) ProcessElement(ctx *weir.KeyedContext[string, string], e ev) error {
	return nil
}

// Restoring state that the function does not create (by name) fails the
// job with an error naming the state, as does a state of another type.
func TestProcessRestoreUnclaimedStateFails(t *testing.T) {
	evs := []ev{{"a", 1}, {"b", 2}, {"c", 3}}
	dir := t.TempDir()
	job, _ := countJob(evs, "events", weir.Checkpointing(5*time.Millisecond, dir))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ck := latestCheckpoint(t, dir)
	for _, c := range []struct {
		fn   func() weir.KeyedProcessFunction[string, ev, string]
		want []string
	}{
		{func() weir.KeyedProcessFunction[string, ev, string] { return &counterRenamed{} }, []string{`"n"`, "Open"}},
		{func() weir.KeyedProcessFunction[string, ev, string] {
			return openFuncEv(func(rc *weir.RuntimeContext[string]) error { weir.NewValueState[string](rc, "n"); return nil })
		}, []string{`"n"`, "types changed"}},
	} {
		job := weir.NewJob("count2", weir.RestoreFrom(ck), weir.AllowNonRestoredState())
		s := weir.FromSource(job, "more", weir.SliceSource(evs),
			weir.MonotonousTimestamps(func(e ev) time.Time { return time.UnixMilli(e.TS) }))
		weir.Collect(weir.ProcessWith(weir.KeyBy(s, func(e ev) string { return e.Key }), c.fn, weir.UID("count")))
		err := job.Run(context.Background())
		if err == nil {
			t.Fatal("restore succeeded")
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not mention %s", err, w)
			}
		}
	}
}

// openFuncEv is a process function that only opens.
type openFuncEv func(rc *weir.RuntimeContext[string]) error

func (f openFuncEv) Open(rc *weir.RuntimeContext[string]) error { return f(rc) }
func (f openFuncEv) ProcessElement(*weir.KeyedContext[string, string], ev) error {
	return nil
}
