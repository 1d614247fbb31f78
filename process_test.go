package weir_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
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
