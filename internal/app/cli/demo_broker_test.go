package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/testing/weirtest"
)

// demoRows reads the rows of the job's print sink in out, "+I[start, end,
// ad, clicks]", into clicks per ad, and their total.
func demoRows(t *testing.T, out string) (perAd map[string]int64, total int64, rows int) {
	t.Helper()
	perAd = map[string]int64{}
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "+I[") {
			continue
		}
		f := strings.Split(strings.TrimSuffix(strings.TrimPrefix(l, "+I["), "]"), ", ")
		if len(f) != 4 {
			t.Fatalf("row %q: want 4 fields", l)
		}
		n, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			t.Fatalf("row %q: %v", l, err)
		}
		perAd[f[2]] += n
		total += n
		rows++
	}
	return perAd, total, rows
}

// weir demo broker, as the command runs: the broker, the topic, 2000
// clicks produced with franz-go, and the SQL job's per-ad-minute counts
// adding up to 2000, which its check line says.
func TestDemoBroker(t *testing.T) {
	out, errOut, code := run(t, "demo", "broker", "--events", "2000", "--listen", "127.0.0.1:0")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	_, total, rows := demoRows(t, out)
	if total != 2000 {
		t.Fatalf("the rows count %d clicks, want 2000:\n%s", total, out)
	}
	// five minutes and a few seconds of event time: 6 windows, at most 10 ads each
	if rows < 5 || rows > 60 {
		t.Fatalf("%d rows, want one per ad and minute:\n%s", rows, out)
	}
	want := fmt.Sprintf("check: the SQL job counted 2000 clicks in %d rows, 2000 were produced: equal\n", rows)
	if !strings.HasSuffix(out, want) {
		t.Fatalf("output does not end with %q:\n%s", want, out)
	}
	for _, s := range []string{"weir broker listening on 127.0.0.1:", "created topic clicks (4 partitions)", "produced 2000 clicks", "--define BOUNDED=latest-offset"} {
		if !strings.Contains(out, s) {
			t.Fatalf("output lacks %q:\n%s", s, out)
		}
	}
	// The same seed gives the same rows.
	again, _, code := run(t, "demo", "broker", "--events", "2000", "--listen", "127.0.0.1:0")
	if code != 0 || rowsOnly(again) != rowsOnly(out) {
		t.Fatalf("a second run (exit %d) printed other rows:\n%s", code, again)
	}
}

func rowsOnly(out string) string {
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "+I[") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// The job the demo runs is the example file the docs name.
func TestDemoBrokerSQLIsTheExample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "sql", "broker_clicks.sql"))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != brokerClicksSQL {
		t.Fatal("examples/sql/broker_clicks.sql and brokerClicksSQL (demo_broker.go) differ: keep them equal")
	}
}

// A --data-dir that holds the topic already is refused, rather than its
// clicks counted.
func TestDemoBrokerExistingTopic(t *testing.T) {
	dir := t.TempDir()
	if out, errOut, code := run(t, "demo", "broker", "--events", "10", "--listen", "127.0.0.1:0", "--data-dir", dir); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("a given --data-dir is kept: %v", err)
	}
	_, errOut, code := run(t, "demo", "broker", "--events", "10", "--listen", "127.0.0.1:0", "--data-dir", dir)
	if code == 0 || !strings.Contains(errOut, "topic clicks already exists") {
		t.Fatalf("exit %d, want the existing topic refused:\n%s", code, errOut)
	}
}

// demoKcat returns the kcat binary, or skips the test (fails it under
// WEIR_REQUIRE_KCAT=1), as broker/kcat_test.go.
func demoKcat(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("WEIR_KCAT"); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			t.Fatalf("WEIR_KCAT=%s: %v", p, err)
		}
		return path
	}
	for _, name := range []string{"kcat", "kafkacat"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("WEIR_REQUIRE_KCAT") == "1" {
		t.Fatal("no kcat found and WEIR_REQUIRE_KCAT=1: run bash scripts/kcat.sh install")
	}
	t.Skip("no kcat found (bash scripts/kcat.sh install; WEIR_REQUIRE_KCAT=1 makes this a failure)")
	return ""
}

// kcatProduce pipes lines into topic clicks with kcat -P, to its end.
func kcatProduce(ctx context.Context, kcat, addr string, lines []string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, "-b", addr, "-X", "broker.address.family=v4", "-X", "socket.timeout.ms=20000", "-t", "clicks", "-P")
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kcat: %v\n%s", err, out.String())
	}
	return nil
}

// Clicks kcat produces into the demo's broker (librdkafka, spreading them
// over the partitions) are counted by the SQL job, bounded, with the
// demo's: the check counts both.
func TestDemoBrokerKcat(t *testing.T) {
	kcat := demoKcat(t)
	var lines []string
	for i := range 5 {
		lines = append(lines, fmt.Sprintf(`{"ad":"ad-kcat","user_id":"u-kcat","ts":"2026-12-05 10:30:%02d.000"}`, i))
	}
	lines = append(lines, `{"ad":"ad-kcat","user_id":"u-kcat","ts":"2026-12-05 10:31:00"}`, `{"ad":"ad-kcat","user_id":"u-kcat","ts":"2026-12-05 10:31:59.999"}`)
	var out weirtest.LockedBuffer
	err := runDemoBroker(context.Background(), &out, demoBrokerOpts{listen: "127.0.0.1:0", events: 2000, seed: 1,
		afterProduce: func(ctx context.Context, addr string) (int64, error) {
			return int64(len(lines)), kcatProduce(ctx, kcat, addr, lines)
		}})
	s := out.String()
	if err != nil {
		t.Fatalf("%v\n%s", err, s)
	}
	perAd, total, rows := demoRows(t, s)
	if perAd["ad-kcat"] != 7 || total != 2007 {
		t.Fatalf("ad-kcat counted %d times (want 7), %d clicks in all (want 2007):\n%s", perAd["ad-kcat"], total, s)
	}
	for _, w := range []string{"+I[2026-12-05T10:30, 2026-12-05T10:31, ad-kcat, 5]", "+I[2026-12-05T10:31, 2026-12-05T10:32, ad-kcat, 2]",
		fmt.Sprintf("check: the SQL job counted 2007 clicks in %d rows, 2007 were produced (2000 by the demo, 7 by another client): equal", rows)} {
		if !strings.Contains(s, w) {
			t.Fatalf("output lacks %q:\n%s", w, s)
		}
	}
}

// --follow: the job reads on; a click kcat produces while it runs prints
// once the live clicks carry the watermark past its minute; the demo stops
// cleanly when its context is cancelled. The live clicks' clock is the
// test's, moved on after kcat's click is in.
func TestDemoBrokerFollowKcat(t *testing.T) {
	kcat := demoKcat(t)
	t0 := time.Date(2026, 12, 5, 12, 0, 30, 0, time.UTC)
	var clock atomic.Int64
	clock.Store(t0.UnixNano())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out weirtest.LockedBuffer
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runDemoBroker(ctx, &out, demoBrokerOpts{listen: "127.0.0.1:0", events: 200, seed: 1, follow: true,
			now: func() time.Time { return time.Unix(0, clock.Load()) }, liveEvery: 10 * time.Millisecond,
			afterProduce: func(_ context.Context, a string) (int64, error) { addr <- a; return 0, nil }})
	}()
	var a string
	select {
	case a = <-addr:
	case err := <-done:
		t.Fatalf("the demo ended: %v\n%s", err, out.String())
	case <-time.After(time.Minute):
		t.Fatalf("no broker after a minute:\n%s", out.String())
	}
	// The demo's clicks (11:55 to 12:00) print once the live ones (12:00:30)
	// carry the watermark past their minutes.
	weirtest.WaitFor(t, "the rows of the clicks before the live ones", time.Minute, func() bool {
		return strings.Contains(out.String(), "+I[2026-12-05T11:59, 2026-12-05T12:00, ")
	})
	if s := out.String(); !strings.Contains(s, "| kcat -b "+a+" -t clicks -P") || !strings.Contains(s, "--define BOUNDED=unbounded") {
		t.Fatalf("no kcat hint or not unbounded:\n%s", s)
	}
	if err := kcatProduce(ctx, kcat, a, []string{`{"ad":"ad-kcat","user_id":"me","ts":"2026-12-05 12:00:45"}`}); err != nil {
		t.Fatal(err)
	}
	clock.Store(t0.Add(2 * time.Minute).UnixNano())
	weirtest.WaitFor(t, "kcat's click counted", time.Minute, func() bool {
		return strings.Contains(out.String(), "+I[2026-12-05T12:00, 2026-12-05T12:01, ad-kcat, 1]")
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the demo stopped with %v\n%s", err, out.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("the demo did not stop within a minute of the cancel:\n%s", out.String())
	}
	if s := out.String(); !strings.Contains(s, "stopped: the SQL job printed ") {
		t.Fatalf("no stop line:\n%s", s)
	}
}
