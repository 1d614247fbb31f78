package web_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"github.com/weirstream/weir/internal/web"
)

// The dashboard's Group panel in a real browser, for a process of a
// group-mode job: without the token the page shows nothing of it; logged
// in, it names the app id, the member, the generation and every owned
// partition with its committed offset and lag, and follows a rebalance
// (a partition gone, another new, a new generation). A job not in group
// mode has no Group panel. The registry's group state is what the Kafka
// connector's runner sets through the root package
// (connector/kafka TestGroupOwnedPartitionsMetrics checks that path).
func TestDashboardGroupInBrowser(t *testing.T) {
	ctx := browser(t)
	reg := metrics.NewRegistry("clicks")
	token := strings.Repeat("ab", 16)
	srv, err := web.Start(web.Config{Addrs: []string{"127.0.0.1:0"}, Token: token, Registry: reg, SampleEvery: -1,
		Job: func() web.Job {
			return web.Job{Name: "clicks", State: web.StateRunning, Parallelism: 1,
				Operators: []web.Operator{{ID: 0, Name: "in", Parallelism: 1, SideOutputOf: -1}}}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	base := "http://" + srv.Addr()
	text := func(sel string) string {
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	hidden := func() bool {
		h, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("group").hidden`))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	// Not in group mode (yet): no panel.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/login?token="+token)); err != nil {
		t.Fatal(err)
	}
	weirtest.WaitFor(t, "the page polled", 30*time.Second, func() bool { return strings.Contains(text("#conn"), "live") })
	if !hidden() {
		t.Fatal("the Group panel shows for a job not in group mode")
	}

	member := "clicks-v1-pod-3-5f0e"
	reg.Group.Start("clicks-v1")
	reg.Group.Assign(member, 7, []metrics.GroupPartition{{Topic: "clicks", Partition: 0}, {Topic: "clicks", Partition: 2}}, time.Now())
	reg.Group.Commit([]metrics.GroupPartition{{Topic: "clicks", Partition: 0, Committed: 1200, End: 1250}, {Topic: "clicks", Partition: 2, Committed: 990, End: 990}})

	// Without the token: nothing of the group, on the page or the API.
	for _, path := range []string{"/", "/v1/job"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("GET %s without the token: %s", path, resp.Status)
		}
		for _, s := range []string{"clicks-v1", member, "1200"} {
			if strings.Contains(string(body), s) {
				t.Fatalf("%s without the token shows %q:\n%s", path, s, body)
			}
		}
	}

	rowsText := func() string { return text("#group-partitions") }
	weirtest.WaitFor(t, "the Group panel with both partitions", 30*time.Second, func() bool {
		if hidden() {
			return false
		}
		info, rows := text("#group-info"), rowsText()
		return strings.Contains(info, "clicks-v1") && strings.Contains(info, member) && strings.Contains(info, "generation 7") &&
			strings.Contains(rows, "1200") && strings.Contains(rows, "1250") && strings.Contains(rows, "990")
	})
	lines := tableRows(t, ctx, "#group-partitions")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "clicks\t0\t") || !strings.HasSuffix(lines[0], "\t1200\t1250\t50") ||
		!strings.HasPrefix(lines[1], "clicks\t2\t") || !strings.HasSuffix(lines[1], "\t990\t990\t0") {
		t.Fatalf("owned partitions:\n%s", strings.Join(lines, "\n"))
	}

	// A rebalance: partition 2 moves away, 5 arrives (not committed yet).
	reg.Group.Assign(member, 9, []metrics.GroupPartition{{Topic: "clicks", Partition: 0}, {Topic: "clicks", Partition: 5}}, time.Now())
	weirtest.WaitFor(t, "the panel after the rebalance", 30*time.Second, func() bool {
		l := tableRows(t, ctx, "#group-partitions")
		return strings.Contains(text("#group-info"), "generation 9") && len(l) == 2 &&
			strings.HasPrefix(l[0], "clicks\t0\t") && strings.HasPrefix(l[1], "clicks\t5\t") && strings.HasSuffix(l[1], "\t–\t–\t–")
	})

	// The page as served, before its script polls, has the panel too.
	body, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch("/", {credentials: "same-origin"}).then(r => r.text())`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, `id="group" aria-labelledby="h-group">`) || !strings.Contains(body, "<td class=\"name\">clicks</td><td>5</td>") {
		t.Fatalf("the served page lacks the Group panel:\n%s", body)
	}
}

// tableRows is the text of a table's body rows, cells joined by tabs.
func tableRows(t *testing.T, ctx context.Context, sel string) []string {
	t.Helper()
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelector(`+"`"+sel+"`"+`).tBodies[0].rows).map(r => Array.from(r.cells).map(c => c.textContent).join("\t"))`))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
