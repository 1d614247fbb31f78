package weir_test

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir"
)

// TestWindowsGolden runs the cases of testdata/windows.txt, a
// cockroachdb/datadriven file. Each case is
//
//	run <options>
//	<key> <timestamp ms>      (one event per line, in arrival order)
//	----
//	<expected output>
//
// and the output lists, at parallelism 1, every result in emission order
// ("+I a [1000,2000) 3"), every late event ("late a@700 missed [0,1000) wm=1999"),
// and the number dropped. Options: window=tumbling:1000 | hopping:3000:1000 |
// session:1000 | global, bound=<ms>, lateness=<ms>, trigger=count:<n>[:purge],
// mode=retract, late=side. Regenerate with -rewrite and review the diff.
func TestWindowsGolden(t *testing.T) {
	datadriven.RunTest(t, "testdata/windows.txt", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "run" {
			d.Fatalf(t, "unknown command %q", d.Cmd)
		}
		var opts []string
		for _, a := range d.CmdArgs {
			opts = append(opts, a.String())
		}
		heap, _ := runGoldenCase(t, strings.Join(opts, " "), strings.Split(d.Input, "\n"))
		// The same case on PebbleState: every window, with any trigger,
		// runs there on a process function with its state in Pebble (and
		// leaves no operator on the heap). The same results, late
		// events and drops; results of one watermark may come in another
		// order.
		pebble, job := runGoldenCase(t, strings.Join(opts, " "), strings.Split(d.Input, "\n"), weir.PebbleState(t.TempDir(), 4<<20))
		if sortedLines(pebble) != sortedLines(heap) {
			t.Errorf("%s %s: on PebbleState:\n%s\non the heap:\n%s", d.Pos, d.Cmd, pebble, heap)
		}
		if heapOps := job.HeapStateOperators(); len(heapOps) != 0 {
			t.Errorf("%s: on PebbleState, operators with heap state: %q", d.Pos, heapOps)
		}
		return heap
	})
}

// sortedLines is s with its lines sorted.
func sortedLines(s string) string {
	ls := strings.Split(s, "\n")
	slices.Sort(ls)
	return strings.Join(ls, "\n")
}

func runGoldenCase(t *testing.T, opts string, lines []string, jobOpts ...weir.JobOption) (string, *weir.Job) {
	t.Helper()
	var evs []ev
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		var e ev
		if _, err := fmt.Sscanf(l, "%s %d", &e.Key, &e.TS); err != nil {
			t.Fatalf("bad event line %q: %v", l, err)
		}
		evs = append(evs, e)
	}
	var (
		w       weir.Windows
		bound   time.Duration
		wopts   []weir.WindowOption
		sideOut bool
	)
	ms := func(s string) time.Duration {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("bad number %q", s)
		}
		return time.Duration(n) * time.Millisecond
	}
	for _, o := range strings.Fields(opts) {
		k, v, _ := strings.Cut(o, "=")
		a := strings.Split(v, ":")
		switch k {
		case "window":
			switch a[0] {
			case "tumbling":
				w = weir.Tumbling(ms(a[1]))
			case "hopping":
				w = weir.Hopping(ms(a[1]), ms(a[2]))
			case "session":
				w = weir.Session(ms(a[1]))
			case "global":
				w = weir.Global()
			case "sliding":
				w = weir.Sliding(ms(a[1]))
			}
		case "bound":
			bound = ms(v)
		case "lateness":
			wopts = append(wopts, weir.AllowedLateness(ms(v)))
		case "trigger":
			n, _ := strconv.ParseInt(a[1], 10, 64)
			tr := weir.CountTrigger(n)
			if len(a) > 2 && a[2] == "purge" {
				tr = tr.Purging()
			}
			wopts = append(wopts, weir.Trigger(tr))
		case "mode":
			wopts = append(wopts, weir.Retracting())
		case "late":
			sideOut = true
		default:
			t.Fatalf("unknown option %q", o)
		}
	}
	job := weir.NewJob("golden", jobOpts...)
	src := weir.FromSource(job, "events", weir.SliceSource(evs),
		weir.BoundedOutOfOrderness(bound, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
	res := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ev) string { return e.Key }), w, wopts...), weir.Count[ev]())
	var lines2 []string
	weir.To(res, weir.SinkFunc[weir.WindowResult[string, int64]](func(_ context.Context, rs []weir.WindowResult[string, int64]) error {
		for _, r := range rs {
			lines2 = append(lines2, fmt.Sprintf("%v %s %s %d", r.Kind, r.Key, span(r.Start, r.End), r.Value))
		}
		return nil
	}))
	if sideOut {
		weir.To(weir.LateEvents[ev](res), weir.SinkFunc[weir.LateEvent[string, ev]](func(_ context.Context, ls []weir.LateEvent[string, ev]) error {
			for _, l := range ls {
				lines2 = append(lines2, fmt.Sprintf("late %s@%d missed %s wm=%d", l.Key, l.Timestamp.UnixMilli(), span(l.Window.Start, l.Window.End), l.Watermark.UnixMilli()))
			}
			return nil
		}))
	}
	if err := job.Run(context.Background()); err != nil {
		return "error: " + err.Error() + "\n", job
	}
	var b strings.Builder
	w2 := bufio.NewWriter(&b)
	for _, l := range lines2 {
		fmt.Fprintln(w2, l)
	}
	fmt.Fprintf(w2, "dropped %d\n", job.Metrics().Sum(lateDropped))
	w2.Flush()
	return b.String(), job
}

func span(s, e time.Time) string {
	f := func(t time.Time) string {
		switch ms := t.UnixMilli(); {
		case ms <= -1<<62:
			return "-inf"
		case ms >= 1<<62:
			return "+inf"
		default:
			return strconv.FormatInt(ms, 10)
		}
	}
	return "[" + f(s) + "," + f(e) + ")"
}
