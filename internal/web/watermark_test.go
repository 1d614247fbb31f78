package web

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/metrics"
)

// A large watermark lag is a warning only when it grows: a job replaying
// old events (event time racing ahead of the clock, lag large but
// shrinking) is not behind; a stalled watermark or one slower than half
// the clock, with a lag above a minute, is. The clocks are the test's.
func TestWatermarkBehind(t *testing.T) {
	reg := metrics.NewRegistry("wm")
	var proc time.Time // the job's processing time, for the lag
	reg.Now = func() time.Time { return proc }
	j := Job{Name: "wm", State: StateRunning, Parallelism: 2, Operators: []Operator{{ID: 0, Name: "win", Parallelism: 2, SideOutputOf: -1}}}
	var now time.Time
	s := &Server{cfg: Config{Registry: reg, Job: func() Job { return j }, Now: func() time.Time { return now }}, rates: newSampler(10 * time.Second)}
	op0, op1 := reg.Operator("win", 0), reg.Operator("win", 1)
	week := 7 * 24 * time.Hour
	t0 := time.Unix(1_800_000_000, 0)
	// A subtask of an earlier attempt at parallelism 3 keeps its last
	// watermark: it is not the operator's and must not stall its pace.
	reg.Operator("win", 2).Watermark.Store(t0.Add(-week).UnixMilli())

	// at sets the clocks to t0+sec and the watermarks (ms since t0-week,
	// subtask 1 a second ahead), samples, and returns the operator's JSON.
	at := func(sec float64, wmSec float64) OperatorJSON {
		now = t0.Add(time.Duration(sec * float64(time.Second)))
		proc = now
		w := t0.Add(-week).Add(time.Duration(wmSec * float64(time.Second))).UnixMilli()
		op0.Watermark.Store(w)
		op1.Watermark.Store(w + 1000)
		s.sample()
		return s.job().Operators[0]
	}
	// No window yet: no pace, no warning.
	o := at(0, 0)
	if o.WatermarkPace != nil || o.WatermarkBehind || *o.WatermarkLagMs[0] < week.Milliseconds() {
		t.Fatalf("first sample: pace %v behind %v lag %v", o.WatermarkPace, o.WatermarkBehind, *o.WatermarkLagMs[0])
	}
	// A replay: a week behind, but event time moves 30 times the clock.
	for i := 1; i <= 10; i++ {
		o = at(float64(i), float64(30*i))
	}
	if o.WatermarkPace == nil || *o.WatermarkPace != 30 || o.WatermarkBehind {
		t.Fatalf("replay: pace %v behind %v, want 30 and no warning", o.WatermarkPace, o.WatermarkBehind)
	}
	// Stalled: the lag grows with the clock.
	for i := 11; i <= 30; i++ {
		o = at(float64(i), 300)
	}
	if *o.WatermarkPace != 0 || !o.WatermarkBehind {
		t.Fatalf("stalled: pace %v behind %v, want 0 and a warning", *o.WatermarkPace, o.WatermarkBehind)
	}
	// Live and keeping up: a lag of seconds, moving with the clock.
	for i := 31; i <= 50; i++ {
		o = at(float64(i), float64(i)+week.Seconds()-3)
	}
	if *o.WatermarkPace != 1 || o.WatermarkBehind || *o.WatermarkLagMs[0] != 3000 {
		t.Fatalf("live: pace %v behind %v lag %v", *o.WatermarkPace, o.WatermarkBehind, *o.WatermarkLagMs[0])
	}
	// Live but slow: the lag grows past a minute at half the clock.
	for i := 51; i <= 250; i++ {
		o = at(float64(i), 50+week.Seconds()-3+0.4*float64(i-50))
	}
	if *o.WatermarkPace != 0.4 || !o.WatermarkBehind {
		t.Fatalf("slow: pace %v behind %v lag %v", *o.WatermarkPace, o.WatermarkBehind, *o.WatermarkLagMs[0])
	}
}

// A job with a control endpoint (a random port) and a dashboard logs one
// line for each, each named for what it is: a user sees one dashboard
// line, with the address they asked for (issue 38: "web dashboard
// listening" twice).
func TestOneDashboardLine(t *testing.T) {
	var log bytes.Buffer // Start logs before it returns
	reg := metrics.NewRegistry("lines")
	srv, err := Start(Config{Addrs: []string{"127.0.0.1:0", "127.0.0.1:0"}, ControlAddrs: 1, Token: strings.Repeat("ab", 16),
		Registry: reg, SampleEvery: -1, Logger: slog.New(slog.NewTextHandler(&log, nil)),
		Job: func() Job { return Job{Name: "lines", State: StateRunning} }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	got := log.String()
	addrs := srv.Addrs()
	if strings.Count(got, "web dashboard listening") != 1 || !strings.Contains(got, "url=http://"+addrs[1]+"/") ||
		strings.Count(got, "control endpoint listening") != 1 || !strings.Contains(got, "addr="+addrs[0]) {
		t.Fatalf("log:\n%s", got)
	}
}
