package web_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// browser starts headless Chromium (Debian's chromium, installed by
// scripts/chromium.sh; WEIR_CHROMIUM names another). Without one the test
// skips, unless WEIR_REQUIRE_CHROMIUM=1 (scripts/test.sh) makes that a
// failure.
func browser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := os.Getenv("WEIR_CHROMIUM")
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome", "headless-shell"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		if os.Getenv("WEIR_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("no Chromium found and WEIR_REQUIRE_CHROMIUM=1: run bash scripts/chromium.sh install")
		}
		t.Skip("no Chromium found (bash scripts/chromium.sh install; WEIR_REQUIRE_CHROMIUM=1 makes this a failure)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 800), chromedp.Flag("disable-dev-shm-usage", true))
	opts = append(opts, extra...)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	// A deadline for the whole test: a hung browser fails it, it does not
	// hang the suite.
	ctx, cancel3 := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancel3)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

// The dashboard in a real browser: without the token the page shows none
// of the job's operators; logged in through /login?token= it names every
// one, a counter changes as the job runs, the savepoint button works (a
// POST with the cookie and the page's own Origin), and the page fits a
// phone's width. WEIR_SCREENSHOT=FILE.png saves the whole page, 1280 pixels wide.
func TestDashboardInBrowser(t *testing.T) {
	ctx := browser(t)
	r := start(t, true)
	base := "http://" + r.addr
	text := func(sel string) string {
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	bodyText := func() string { return text("body") }

	// No token: the dashboard, its API and a wrong login show nothing.
	for _, path := range []string{"/", "/v1/job", "/login?token=" + strings.Repeat("0", len(r.token))} {
		if err := chromedp.Do(ctx, chromedp.Navigate(base+path)); err != nil {
			t.Fatal(err)
		}
		text := bodyText()
		for _, op := range append(operators, "web-test") {
			if strings.Contains(text, op) {
				t.Fatalf("%s without the token shows %q:\n%s", path, op, text)
			}
		}
		if path == "/" && !strings.Contains(text, "/login") {
			t.Fatalf("the page without the token does not point to /login:\n%s", text)
		}
	}

	// Logged in: the login link sets the cookie and leads to the page,
	// which names every operator once its script has polled.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/login?token="+r.token)); err != nil {
		t.Fatal(err)
	}
	url, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if url != base+"/" {
		t.Fatalf("after the login the browser is at %s, want %s/", url, base)
	}
	var graph string
	weirtest.WaitFor(t, "the graph and the tables naming every operator", 30*time.Second, func() bool {
		graph = text("#graph")
		body := bodyText()
		for _, op := range operators {
			if !strings.Contains(graph, op) || !strings.Contains(body, op) {
				return false
			}
		}
		return strings.Contains(body, "live")
	})
	counter := func() string { return text("#total-read") }
	first := counter()
	weirtest.WaitFor(t, "the records-read counter to change (from "+first+")", 30*time.Second, func() bool {
		c := counter()
		return c != first && c != "–"
	})

	// The watermark lag: the job's event time is years old but moves 5
	// times the clock (5,000 clicks/s a millisecond apart), so the lag is
	// shown, with its pace, and not in red (it shrinks).
	weirtest.WaitFor(t, "a watermark lag with its pace", 30*time.Second, func() bool {
		title, err := chromedp.Run(ctx, chromedp.Evaluate[string](
			`[...document.querySelectorAll("#watermarks td")].map((td) => td.title).join("|")`))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(title, "× the wall clock") && strings.Contains(text("#watermarks"), " h ")
	})
	warned, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#watermarks td.warn").length`))
	if err != nil {
		t.Fatal(err)
	}
	// Times of day on the 24-hour clock, as the watermarks.
	if u := text("#updated"); !regexp.MustCompile(`^\d{2}:\d{2}:\d{2}$`).MatchString(u) {
		t.Fatalf("the page's update time %q is not on the 24-hour clock", u)
	}
	if warned != 0 {
		t.Fatalf("%d watermark lags in red for a job replaying old events faster than the clock:\n%s", warned, text("#watermarks"))
	}

	if shot := os.Getenv("WEIR_SCREENSHOT"); shot != "" {
		// Wait for a rate and a completed checkpoint, so that the picture
		// shows a job at work.
		weirtest.WaitFor(t, "a checkpoint in the page", 30*time.Second, func() bool {
			return strings.Contains(text("#checkpoints"), "COMPLETED")
		})
		saveScreenshot(t, ctx, shot, chromedp.FullScreenshot(100))
	}

	// The savepoint button: a POST from the page, with the cookie and the
	// page's own Origin, lands in the savepoint directory.
	var result string
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#savepoint"))); err != nil {
		t.Fatal(err)
	}
	weirtest.WaitFor(t, "the savepoint's answer in the page", 60*time.Second, func() bool {
		result = text("#sp-result")
		return strings.HasPrefix(result, "savepoint written to ") || strings.HasPrefix(result, "savepoint failed")
	})
	sp := strings.TrimPrefix(result, "savepoint written to ")
	if sp == result || !strings.HasPrefix(sp, filepath.Join(mustEval(t, r.ckDir), "savepoints")+"/") {
		t.Fatalf("savepoint button: %q", result)
	}
	if _, err := os.Stat(sp); err != nil {
		t.Fatal(err)
	}

	// A phone: nothing wider than the screen but the scrolling boxes.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
		chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#graph svg"))); err != nil {
		t.Fatal(err)
	}
	overflow, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
	if err != nil {
		t.Fatal(err)
	}
	if overflow {
		t.Fatal("the page is wider than a phone's screen")
	}
	// Nor is anything cut off inside its box: the graph runs top to
	// bottom, the tables stack (issue 38: the graph and the operator
	// table were clipped at 390 px).
	clipped, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(".scroll")]
		.filter((b) => b.offsetParent !== null && b.scrollWidth > b.clientWidth + 1)
		.map((b) => (b.id || b.firstElementChild.id) + " " + b.scrollWidth + ">" + b.clientWidth)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(clipped) > 0 {
		t.Fatalf("cut off at 390 px: %v", clipped)
	}
	if shot := os.Getenv("WEIR_SCREENSHOT_PHONE"); shot != "" {
		saveScreenshot(t, ctx, shot, chromedp.CaptureScreenshot()) // the first screen, as the phone shows it
	}
}

// saveScreenshot writes the PNG that shot takes to file.
func saveScreenshot(t *testing.T, ctx context.Context, file string, shot chromedp.Action[[]byte]) {
	t.Helper()
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustEval(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A login survives a browser restart while the job's token lives: the
// cookie is kept (Max-Age), not dropped with the browser session (issue
// 38). The browser is closed and started again on the same profile.
func TestLoginSurvivesBrowserRestart(t *testing.T) {
	r := start(t, false)
	base := "http://" + r.addr
	profile := t.TempDir()
	loggedIn := func(ctx context.Context) bool {
		body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(body, "count-per-second") && strings.Contains(body, "live")
	}
	first := browser(t, chromedp.UserDataDir(profile))
	if err := chromedp.Do(first, chromedp.Navigate(base+"/login?token="+r.token)); err != nil {
		t.Fatal(err)
	}
	weirtest.WaitFor(t, "the dashboard after the login", 30*time.Second, func() bool { return loggedIn(first) })
	// Close the browser as a user does (it writes its cookies to the
	// profile), and start it again.
	if err := chromedp.Cancel(first); err != nil {
		t.Fatal(err)
	}
	second := browser(t, chromedp.UserDataDir(profile))
	if err := chromedp.Do(second, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	weirtest.WaitFor(t, "the dashboard after the restart, without a new login", 30*time.Second, func() bool { return loggedIn(second) })
}
