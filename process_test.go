package weir_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
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
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), before, buf)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
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
		deadline := time.Now().Add(10 * time.Second)
		for len(out.Items()) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("no results from an endless source")
			}
			time.Sleep(time.Millisecond)
		}
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
	deadline := time.Now().Add(10 * time.Second)
	for len(out.Items()) < from+len(want) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %v; have %v", want, out.Items()[from:])
		}
		time.Sleep(time.Millisecond)
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
