// Command dial measures the microbatch dial: `weir bench adclicks` and
// `weir bench nexmark --queries q5` in continuous mode and with
// --microbatch 10ms, 100ms, 1s and 5s, and writes throughput per core and
// p50/p99 latency as a JSON file, a Markdown table (stdout) and a plot
// (an SVG drawn here, no plotting tools needed): docs/dial.json and
// docs/dial.svg. Run from the repository root:
//
//	go run ./scripts/dial            (or bash scripts/dial.sh)
//
// It builds cmd/weir into a temporary directory and takes a few minutes;
// the figures are only as quiet as the machine.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// point is one measurement of the dial.
type point struct {
	Workload        string  `json:"workload"`
	Mode            string  `json:"mode"` // "continuous" or the epoch length
	PerCorePerSec   float64 `json:"events_per_sec_per_core"`
	EventsPerSec    float64 `json:"events_per_sec"`
	P50Ms           float64 `json:"p50_latency_ms"`
	P99Ms           float64 `json:"p99_latency_ms"`
	LatencyRate     float64 `json:"latency_rate"`
	Checksum        string  `json:"checksum,omitempty"`
	ReferenceEquals bool    `json:"checksum_equals_baseline,omitempty"`
}

func main() {
	var (
		weirBin  = flag.String("weir", "", "weir binary (default: build ./cmd/weir)")
		svgPath  = flag.String("svg", "docs/dial.svg", "plot to write")
		jsonPath = flag.String("json", "docs/dial.json", "measurements to write")
		modes    = flag.String("modes", "0,10ms,100ms,1s,5s", "epoch lengths (0: continuous)")
		adEvents = flag.Int64("adclicks-events", 3_000_000, "events of each adclicks throughput run")
		adLat    = flag.Duration("adclicks-latency", 4*time.Second, "length of each adclicks latency run")
		q5Events = flag.Int64("q5-events", 2_000_000, "events of each q5 throughput run")
		q5Lat    = flag.Duration("q5-latency", 12*time.Second, "length of each q5 latency run (q5 emits a row per 2 s slide)")
		// The cap of q5's pacing run (weir bench nexmark --pacing-events),
		// as in the standard runs of 10 M events (25 × 10 M): a smaller
		// cap bounds the pacing run's windows below the latency run's, and
		// q5 is then paced above the rate it sustains.
		q5Pacing  = flag.Int64("q5-pacing-events", 250_000_000, "at most this many events in each q5 pacing run")
		fraction  = flag.Float64("latency-fraction", 0.5, "latency runs are paced at this fraction of the measured maximum")
		machineNB = flag.String("note", "", "a note printed under the plot's title (e.g. the machine's load)")
	)
	flag.Parse()
	bin := *weirBin
	if bin == "" {
		dir, err := os.MkdirTemp("", "weir-dial-")
		check(err)
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "weir")
		run("go", "build", "-o", bin, "./cmd/weir")
	}
	var pts []point
	for _, m := range strings.Split(*modes, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(m))
		check(err)
		mode, mb := "continuous", []string{}
		if d > 0 {
			mode, mb = d.String(), []string{"--microbatch", d.String()}
		}
		frac := fmt.Sprint(*fraction)
		var ad struct {
			EventsPerSec float64 `json:"events_per_sec"`
			PerCore      float64 `json:"events_per_sec_per_core"`
			P50          float64 `json:"p50_latency_ms"`
			P99          float64 `json:"p99_latency_ms"`
			LatencyRate  float64 `json:"latency_rate"`
			Checksum     string  `json:"checksum"`
			Baseline     string  `json:"baseline_checksum"`
		}
		lastJSON(run(bin, append([]string{"bench", "adclicks", "--runs", "1", "--json", "--delay", "5000",
			"--events", fmt.Sprint(*adEvents), "--latency-duration", adLat.String(), "--latency-fraction", frac}, mb...)...), &ad)
		pts = append(pts, point{Workload: "adclicks", Mode: mode, PerCorePerSec: ad.PerCore, EventsPerSec: ad.EventsPerSec,
			P50Ms: ad.P50, P99Ms: ad.P99, LatencyRate: ad.LatencyRate, Checksum: ad.Checksum, ReferenceEquals: ad.Checksum == ad.Baseline})
		var q5 struct {
			EventsPerSec float64 `json:"events_per_sec"`
			PerCore      float64 `json:"events_per_sec_per_core"`
			P50          float64 `json:"p50_latency_ms"`
			P99          float64 `json:"p99_latency_ms"`
			LatencyRate  float64 `json:"latency_rate"`
		}
		lastJSON(run(bin, append([]string{"bench", "nexmark", "--queries", "q5", "--json", "--events", fmt.Sprint(*q5Events),
			"--latency-duration", q5Lat.String(), "--latency-fraction", frac, "--pacing-events", fmt.Sprint(*q5Pacing)}, mb...)...), &q5)
		pts = append(pts, point{Workload: "q5", Mode: mode, PerCorePerSec: q5.PerCore, EventsPerSec: q5.EventsPerSec,
			P50Ms: q5.P50, P99Ms: q5.P99, LatencyRate: q5.LatencyRate})
		fmt.Fprintf(os.Stderr, "dial: %s done\n", mode)
	}
	b, _ := json.MarshalIndent(pts, "", "  ")
	check(os.WriteFile(*jsonPath, append(b, '\n'), 0o644))
	check(os.WriteFile(*svgPath, []byte(plot(pts, *machineNB)), 0o644))
	fmt.Println("| workload | mode | events/s per core | % of continuous | p50 ms | p99 ms |")
	fmt.Println("|---|---|---:|---:|---:|---:|")
	base := map[string]float64{}
	for _, p := range pts {
		if p.Mode == "continuous" {
			base[p.Workload] = p.PerCorePerSec
		}
	}
	for _, p := range pts {
		fmt.Printf("| %s | %s | %.2f M | %.0f%% | %.1f | %.1f |\n", p.Workload, p.Mode, p.PerCorePerSec/1e6, 100*p.PerCorePerSec/base[p.Workload], p.P50Ms, p.P99Ms)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "dial:", err)
		os.Exit(1)
	}
}

// run runs a command and returns its stdout, failing on an error.
func run(name string, args ...string) string {
	fmt.Fprintf(os.Stderr, "dial: %s %s\n", filepath.Base(name), strings.Join(args, " "))
	var out bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	check(cmd.Run())
	return out.String()
}

func lastJSON(out string, v any) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	check(json.Unmarshal([]byte(lines[len(lines)-1]), v))
}

// plot draws two panels over the modes: throughput per core as a share of
// continuous mode (linear), and p50/p99 latency (log scale).
func plot(pts []point, note string) string {
	var modes []string
	seen := map[string]bool{}
	for _, p := range pts {
		if !seen[p.Mode] {
			seen[p.Mode] = true
			modes = append(modes, p.Mode)
		}
	}
	base := map[string]float64{}
	for _, p := range pts {
		if p.Mode == "continuous" {
			base[p.Workload] = p.PerCorePerSec
		}
	}
	const W, H, pw, ph, top, left = 960, 420, 380, 280, 70, 70
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" text-anchor="middle">The microbatch dial: weir bench adclicks and nexmark q5</text>`+"\n", W/2)
	if note != "" {
		fmt.Fprintf(&b, `<text x="%d" y="42" text-anchor="middle" fill="#555">%s</text>`+"\n", W/2, escape(note))
	}
	xOf := func(x0, i int) float64 {
		return float64(x0) + (float64(i)+0.5)*float64(pw)/float64(len(modes))
	}
	type series struct {
		name, workload, color, dash string
		val                         func(point) float64
	}
	colors := map[string]string{"adclicks": "#1f77b4", "q5": "#d62728"}
	panel := func(x0 int, title, ylabel string, yOf func(float64) float64, ticks []float64, tickLabel func(float64) string, ss []series) {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="14" text-anchor="middle">%s</text>`+"\n", x0+pw/2, top-12, title)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", x0, top, pw, ph)
		for _, t := range ticks {
			y := yOf(t)
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", x0, y, x0+pw, y)
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-6, y+4, tickLabel(t))
		}
		fmt.Fprintf(&b, `<text transform="translate(%d,%d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", x0-50, top+ph/2, ylabel)
		for i, m := range modes {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", xOf(x0, i), top+ph+18, m)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">epoch length</text>`+"\n", x0+pw/2, top+ph+38)
		for k, s := range ss {
			var path []string
			for i, m := range modes {
				for _, p := range pts {
					if p.Workload == s.workload && p.Mode == m {
						v := s.val(p)
						if v <= 0 || math.IsNaN(v) {
							continue
						}
						x, y := xOf(x0, i), yOf(v)
						path = append(path, fmt.Sprintf("%.1f,%.1f", x, y))
						fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", x, y, s.color)
					}
				}
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>`+"\n", strings.Join(path, " "), s.color, s.dash)
			ly := top + 14 + 16*k
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>`+"\n", x0+pw-120, ly, x0+pw-96, ly, s.color, s.dash)
			fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", x0+pw-90, ly+4, s.name)
		}
	}
	// Throughput: % of the workload's continuous per-core rate, 0..max.
	maxPct := 100.0
	for _, p := range pts {
		if base[p.Workload] > 0 {
			maxPct = max(maxPct, 100*p.PerCorePerSec/base[p.Workload])
		}
	}
	maxPct = math.Ceil(maxPct/25) * 25
	var tt []float64
	for t := 0.0; t <= maxPct; t += 25 {
		tt = append(tt, t)
	}
	pct := func(p point) float64 { return 100 * p.PerCorePerSec / base[p.Workload] }
	panel(left, "Throughput per core (% of continuous)", "% of continuous", func(v float64) float64 {
		return float64(top+ph) - v/maxPct*float64(ph)
	}, tt, func(v float64) string { return fmt.Sprintf("%.0f%%", v) }, []series{
		{"adclicks", "adclicks", colors["adclicks"], "", pct},
		{"q5", "q5", colors["q5"], "", pct},
	})
	// Latency: log scale from 1 ms to the next decade above the largest.
	hi := 10.0
	for _, p := range pts {
		hi = max(hi, p.P99Ms, p.P50Ms)
	}
	decades := math.Ceil(math.Log10(hi))
	var lt []float64
	for e := 0.0; e <= decades; e++ {
		lt = append(lt, math.Pow(10, e))
	}
	panel(left+pw+110, "Latency at a fraction of the max rate (ms, log)", "ms", func(v float64) float64 {
		v = max(v, 1)
		return float64(top+ph) - math.Log10(v)/decades*float64(ph)
	}, lt, func(v float64) string { return fmt.Sprintf("%g", v) }, []series{
		{"adclicks p50", "adclicks", colors["adclicks"], "4,3", func(p point) float64 { return p.P50Ms }},
		{"adclicks p99", "adclicks", colors["adclicks"], "", func(p point) float64 { return p.P99Ms }},
		{"q5 p50", "q5", colors["q5"], "4,3", func(p point) float64 { return p.P50Ms }},
		{"q5 p99", "q5", colors["q5"], "", func(p point) float64 { return p.P99Ms }},
	})
	b.WriteString("</svg>\n")
	return b.String()
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
