package web_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"github.com/weirstream/weir/internal/web"
)

// stateUsers is how many keys the state job's process operator keeps.
const stateUsers = 3000

// countPerUser counts clicks per key in a ValueState.
type countPerUser struct {
	n *weir.ValueState[string, int64]
}

func (f *countPerUser) Open(rc *weir.RuntimeContext[string]) error {
	f.n = weir.NewValueState[int64](rc, "n")
	return nil
}

func (f *countPerUser) ProcessElement(ctx *weir.KeyedContext[string, int64], _ click) error {
	n, _ := f.n.Value()
	f.n.Update(n + 1)
	return nil
}

// stateJob: clicks of stateUsers users counted per user by a process
// operator ("count-per-user"), which reports its state.
func stateJob(j *weir.Job) {
	src := weir.FromSource(j, "clicks", weir.GeneratorSource(weir.GeneratorConfig{Count: -1, Seed: 1, Rate: 20000},
		func(i int64, _ *rand.Rand) click {
			return click{Ad: fmt.Sprintf("user-%d", i%stateUsers), TS: 1_700_000_000_000 + i}
		}), weir.BoundedOutOfOrderness(100*time.Millisecond, func(c click) time.Time { return time.UnixMilli(c.TS) }), weir.Parallelism(1))
	counts := weir.ProcessWith(weir.KeyBy(src, func(c click) string { return c.Ad }),
		func() weir.KeyedProcessFunction[string, click, int64] { return &countPerUser{} }, weir.Name("count-per-user"))
	weir.To(counts, weir.SinkFunc[int64](func(context.Context, []int64) error { return nil }), weir.Name("print"), weir.Parallelism(1))
}

// The job API reports a process operator's keyed state: its keys, bytes
// and bytes a key, summed over its subtasks; operators without keyed
// state report none.
func TestJobAPIState(t *testing.T) {
	r := startJob(t, true, stateJob)
	var j web.JobJSON
	var op web.OperatorJSON
	weirtest.WaitFor(t, "the state of every user in the job API", 30*time.Second, func() bool {
		r.getJSON(t, "/v1/job", &j)
		for _, o := range j.Operators {
			if o.Name == "count-per-user" {
				op = o
			}
		}
		return op.StateKeys == stateUsers
	})
	// A string key of 8 or 9 bytes (16), an int64 value, its hash and a
	// control byte, in tables between 3/8 and 3/4 full.
	if op.StateBytesPerKey == nil || *op.StateBytesPerKey < 40 || *op.StateBytesPerKey > 150 || op.StateBytes < 40*stateUsers {
		t.Fatalf("count-per-user: %d keys, %d bytes, %v bytes a key", op.StateKeys, op.StateBytes, op.StateBytesPerKey)
	}
	for _, o := range j.Operators {
		if o.Name != "count-per-user" && (o.StateKeys != 0 || o.StateBytesPerKey != nil) {
			t.Errorf("%s keeps no keyed state but reports %d keys, %v bytes a key", o.Name, o.StateKeys, o.StateBytesPerKey)
		}
	}
}

// The dashboard's operators table shows a process operator's keys and
// bytes a key.
func TestDashboardStateInBrowser(t *testing.T) {
	ctx := browser(t)
	r := startJob(t, true, stateJob)
	base := "http://" + r.addr
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/login?token="+r.token)); err != nil {
		t.Fatal(err)
	}
	var cell string
	weirtest.WaitFor(t, "the operator's state in the operators table", 30*time.Second, func() bool {
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
			`[...document.querySelectorAll("#operators tbody tr")].map((tr) => tr.cells[0].textContent + "|" + tr.cells[tr.cells.length - 1].textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			if name, c, _ := strings.Cut(row, "|"); name == "count-per-user" {
				cell = c
			}
		}
		return strings.HasPrefix(cell, fmt.Sprintf("%d keys, ", stateUsers)) && strings.HasSuffix(cell, " B/key")
	})
}
