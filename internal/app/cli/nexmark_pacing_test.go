package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/nexmark"
)

// A windowed query's pacing run spans its window extent + the watermark
// delay (and one more extent), whatever the cap on its events: with a
// tight cap the event rate drops, not the span.
func TestPacingRunSpansWindows(t *testing.T) {
	for _, name := range []string{"q5", "q7", "q8", "q11"} {
		q, err := nexmark.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if !q.Windowed || q.Extent <= 0 {
			t.Fatalf("%s: Windowed %v, Extent %v", name, q.Windowed, q.Extent)
		}
		for _, o := range []nexmarkBenchOpts{
			{fraction: 0.5, events: 10_000_000, parallelism: 2},
			{fraction: 0.5, events: 10_000_000, parallelism: 2, pacingEvents: 1000},
			{fraction: 1, events: 30_000, parallelism: 1},
			{fraction: 0.5, events: 20_000, parallelism: 2, pacingEvents: 40_000},
			{fraction: 0.3, events: 7, parallelism: 2},
		} {
			cfg := pacingRun(q, 4e6, o)
			g, err := nexmark.NewGenerator(cfg)
			if err != nil {
				t.Fatal(err)
			}
			span := time.Duration(g.Timestamp(cfg.Events-1)-g.Config().BaseTime) * time.Millisecond
			if want := 2*q.Extent + nexmark.WatermarkDelay; span < want {
				t.Errorf("%s %+v: %d events at %.0f/s span %v of event time, want ≥ %v", name, o, cfg.Events, cfg.EventRate, span, want)
			}
			limit := o.pacingEvents
			if limit == 0 {
				limit = defaultPacingEvents * o.events
			}
			if cfg.Events > limit {
				t.Errorf("%s %+v: %d events, cap %d", name, o, cfg.Events, limit)
			}
			if o.pacingEvents == 0 && o.events == 10_000_000 && cfg.EventRate != o.fraction*4e6 {
				t.Errorf("%s %+v: event rate %v, want the latency run's %v", name, o, cfg.EventRate, o.fraction*4e6)
			}
		}
	}
}

// With the default cap, the set's pacing runs are generated at their
// latency runs' event rate (so their windows are as large) for throughput
// runs up to 20 M events/s: at 5 × --events, every windowed query's
// pacing run was capped to 2.08 M/s of event time in the set's runs.
func TestPacingRunDefaultCapHoldsLatencyRate(t *testing.T) {
	for _, name := range []string{"q5", "q7", "q8", "q11"} {
		q, err := nexmark.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, thr := range []float64{3e6, 7.2e6, 15.3e6, 20e6} {
			o := nexmarkBenchOpts{fraction: 0.5, events: 10_000_000, parallelism: 2}
			if cfg := pacingRun(q, thr, o); cfg.EventRate != o.fraction*thr {
				t.Errorf("%s after %.1f M/s: pacing run at %.2f M/s of event time (%d events), want the latency run's %.2f M/s",
					name, thr/1e6, cfg.EventRate/1e6, cfg.Events, o.fraction*thr/1e6)
			}
		}
	}
}

// The latency run of a windowed query is paced against a run in which
// windows fired before the end of its input; a query without windows
// against the throughput run.
func TestBenchNexmarkPacingFiresWindows(t *testing.T) {
	out, stderr, code := run(t, "bench", "nexmark", "--queries", "q2,q7", "--events", "20000", "--pacing-events", "40000",
		"--latency-duration", "300ms", "--latency-warmup", "0", "--checkpoint-interval", "0", "--latency-fraction", "0.5", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines: %s", len(lines), out)
	}
	var q2, q7 nexmarkBenchResult
	if err := json.Unmarshal([]byte(lines[0]), &q2); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &q7); err != nil {
		t.Fatal(err)
	}
	if q2.PacingFrom != "throughput" || q2.PacingMaxEventsPerSec != q2.EventsPerSec || q2.LatencyRate != 0.5*q2.EventsPerSec {
		t.Errorf("q2: pacing from %q at %v, throughput %v, latency rate %v", q2.PacingFrom, q2.PacingMaxEventsPerSec, q2.EventsPerSec, q2.LatencyRate)
	}
	if want := min(q7.EventsPerSec, q7.PacingRunEventsPerSec); q7.PacingMaxEventsPerSec != want ||
		q7.PacingFrom != map[bool]string{true: "windows", false: "throughput"}[want < q7.EventsPerSec] {
		t.Errorf("q7: pacing max %v from %q; throughput %v, windows run %v", q7.PacingMaxEventsPerSec, q7.PacingFrom, q7.EventsPerSec, q7.PacingRunEventsPerSec)
	}
	if q7.PacingEvents != 40000 || q7.PacingEventTimeSecs < 24 {
		t.Errorf("q7: pacing from %q, %d events spanning %v s", q7.PacingFrom, q7.PacingEvents, q7.PacingEventTimeSecs)
	}
	if q7.PacingWindowRows < 1 || q7.PacingRows <= q7.PacingWindowRows {
		t.Errorf("q7: pacing run fired %d of its %d rows before the end of input, want ≥ 1 (and the last windows at the end)", q7.PacingWindowRows, q7.PacingRows)
	}
	if q7.PacingMaxEventsPerSec <= 0 || q7.LatencyRate != 0.5*q7.PacingMaxEventsPerSec {
		t.Errorf("q7: latency rate %v, pacing max %v", q7.LatencyRate, q7.PacingMaxEventsPerSec)
	}
	if q7.EventsPerSec <= 0 || q7.Events != 20000 {
		t.Errorf("q7: the throughput run changed: %d events at %v/s", q7.Events, q7.EventsPerSec)
	}
}
