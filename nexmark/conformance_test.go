package nexmark_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/nexmark/batchref"
)

// conformanceEvents: enough event time at conformanceRate for several 10 s
// windows (q7), many hopping windows (q5) and sessions that close (q11).
func conformanceConfig() nexmark.GeneratorConfig {
	n := int64(60_000) // 30 s of event time
	if raceEnabled {
		n = 30_000
	}
	return nexmark.GeneratorConfig{Events: n, Seed: 42, EventRate: 2000}
}

// writeEventFile writes cfg's events as `weir nexmark gen` does.
func writeEventFile(t *testing.T, cfg nexmark.GeneratorConfig) string {
	t.Helper()
	g, err := nexmark.NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	var e nexmark.Event
	var line []byte
	for i := int64(0); i < cfg.Events; i++ {
		g.Event(i, &e)
		line = append(e.AppendJSON(line[:0]), '\n')
		buf.Write(line)
	}
	path := filepath.Join(t.TempDir(), "events.json")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runQuery runs q over src at parallelism p and returns its rows.
func runQuery(t *testing.T, q *nexmark.Query, src weir.Source[nexmark.Event], p int) []string {
	t.Helper()
	var buf bytes.Buffer
	jl := nexmark.NewJSONLines(&buf)
	job := weir.NewJob("conformance-"+q.Name, weir.Parallelism(p))
	q.Build(nexmark.Events(job, src), jl.Output())
	if err := job.Run(context.Background()); err != nil {
		t.Fatalf("%s at parallelism %d: %v", q.Name, p, err)
	}
	if err := jl.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	return lines
}

// canonical decodes JSON rows (numbers kept as written) and encodes them
// again with sorted keys, sorted as a multiset.
func canonical(t *testing.T, rows []string) []string {
	t.Helper()
	out := make([]string, len(rows))
	for i, r := range rows {
		d := json.NewDecoder(strings.NewReader(r))
		d.UseNumber()
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			t.Fatalf("row %q: %v", r, err)
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	slices.Sort(out)
	return out
}

// diff describes how two sorted multisets differ (a few rows each way).
func diff(got, want []string) string {
	var missing, extra []string
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || i < len(got) && got[i] < want[j]:
			extra = append(extra, got[i])
			i++
		case i == len(got) || got[i] > want[j]:
			missing = append(missing, want[j])
			j++
		default:
			i++
			j++
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		return ""
	}
	cut := func(s []string) []string { return s[:min(len(s), 5)] }
	return fmt.Sprintf("%d rows, want %d; %d missing, e.g. %v; %d unexpected, e.g. %v",
		len(got), len(want), len(missing), cut(missing), len(extra), cut(extra))
}

// TestConformance checks every query that both weir and the batch
// evaluator implement: weir's rows over a generated file, at parallelism 1
// (reading the file) and 2 (generating the same events in two splits),
// equal batchref's as multisets.
func TestConformance(t *testing.T) {
	cfg := conformanceConfig()
	path := writeEventFile(t, cfg)
	var names []string
	for _, n := range nexmark.QueryNames() {
		if batchref.Columns(n) != nil {
			names = append(names, n)
		}
	}
	if len(names) < 6 {
		t.Fatalf("only %v are in both weir and batchref", names)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := batchref.EvaluateAll(names, f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			q, err := nexmark.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(slices.Sorted(slices.Values(q.Columns)), slices.Sorted(slices.Values(batchref.Columns(name)))) {
				t.Errorf("columns %v, batchref's %v", q.Columns, batchref.Columns(name))
			}
			w := canonical(t, want[name])
			if len(w) == 0 {
				t.Fatalf("batchref gives no rows: the input does not exercise %s", name)
			}
			fromFile := canonical(t, runQuery(t, q, file.JSONLines[nexmark.Event]([]string{path}), 1))
			if d := diff(fromFile, w); d != "" {
				t.Errorf("parallelism 1 over the file: %s", d)
			}
			c := cfg
			c.Splits = 2
			generated := canonical(t, runQuery(t, q, nexmark.Source(c), 2))
			if d := diff(generated, w); d != "" {
				t.Errorf("parallelism 2, generated in 2 splits: %s", d)
			}
		})
	}
}
