package file

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/format/jsontime"
)

// sqlClick is a record of a file that `weir sql` reads and writes: its
// timestamps are in Flink's SQL standard.
type sqlClick struct {
	Ad string             `json:"ad"`
	TS jsontime.Timestamp `json:"ts"`
}

// countPerMinute counts the records of src per ad and minute of event
// time, as "ad start count" lines in order; with deadLetters, the source's
// bad records go to its side output, which it returns.
func countPerMinute[T any](t *testing.T, src weir.Source[T], ws weir.WatermarkStrategy[T], ad func(T) string, deadLetters bool, opts ...weir.SourceOption) ([]string, []weir.BadRecord, *weir.Job, error) {
	t.Helper()
	job := weir.NewJob("count")
	in := weir.FromSource(job, "in", src, ws, opts...)
	var dead *weir.Collector[weir.BadRecord]
	if deadLetters {
		dead = weir.Collect(weir.BadRecords(in))
	}
	counts := weir.Collect(weir.Aggregate(weir.Window(weir.KeyBy(in, ad), weir.Tumbling(time.Minute)), weir.Count[T]()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := job.Run(ctx)
	var out []string
	for _, r := range counts.Items() {
		out = append(out, fmt.Sprintf("%s %s %d", r.Key, r.Start.UTC().Format("15:04"), r.Value))
	}
	slices.Sort(out)
	var bad []weir.BadRecord
	if dead != nil {
		bad = dead.Items()
	}
	return out, bad, job, err
}

// A JSON-lines file with the timestamps of SQL (as `weir sql` reads it)
// reads with a jsontime.Timestamp field; a timestamp that is not one is a
// bad record with its line.
func TestJSONLinesReadsSQLTimestamps(t *testing.T) {
	dir := t.TempDir()
	lines := `{"ad":"a","ts":"2024-01-01 12:00:01.000"}
{"ad":"b","ts":"2024-01-01 12:00:59.999"}
{"ad":"a","ts":"2024-01-01T12:00:30.5Z"}
{"ad":"a","ts":"2024-01-01 12:01:00.000"}
{"ad":"b","ts":"2024-01-01T13:01:10+01:00"}
`
	path := writeFile(t, dir, "clicks.jsonl", lines)
	ws := weir.BoundedOutOfOrderness(time.Second, func(c sqlClick) time.Time { return c.TS.Time })
	ad := func(c sqlClick) string { return c.Ad }
	got, _, _, err := countPerMinute(t, JSONLines[sqlClick]([]string{path}), ws, ad, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a 12:00 2", "a 12:01 1", "b 12:00 1", "b 12:01 1"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}

	bad := writeFile(t, dir, "bad.jsonl", lines+`{"ad":"a","ts":"2024-02-30 00:00:00"}`+"\n"+`{"ad":"a","ts":"2024-01-01 12:01:02"}`+"\n")
	_, _, _, err = countPerMinute(t, JSONLines[sqlClick]([]string{bad}), ws, ad, false)
	if err == nil || !strings.Contains(err.Error(), "bad.jsonl:6") || !strings.Contains(err.Error(), "day out of range for its month") {
		t.Fatalf("got %v, want the bad timestamp's line and reason", err)
	}
	got, _, job, err := countPerMinute(t, JSONLines[sqlClick]([]string{bad}), ws, ad, false, weir.OnBadRecord(weir.Skip))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a 12:00 2", "a 12:01 2", "b 12:00 1", "b 12:01 1"}; !slices.Equal(got, want) || skippedMetric(job) != 1 {
		t.Fatalf("skipping: got %q and %d skipped, want %q and 1", got, skippedMetric(job), want)
	}
}

// rawClick keeps its time as text, which the timestamp function parses.
type rawClick struct {
	Ad string `json:"ad"`
	TS string `json:"ts"`
}

// A timestamp function that refuses a record makes it a bad record of the
// source, under the source's policy.
func TestTimestampFunctionRefusesRecords(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "clicks.jsonl", `{"ad":"a","ts":"2024-01-01 12:00:01"}
{"ad":"a","ts":"yesterday"}
{"ad":"b","ts":"2024-01-01 12:00:02"}
{"ad":"a","ts":"2024-01-01 12:01:00"}
{"ad":"b","ts":"9999-99-99 00:00:00"}
{"ad":"b","ts":"2024-01-01 12:01:30"}
`)
	ws := weir.BoundedOutOfOrdernessOrBad(time.Second, func(c rawClick) (time.Time, error) { return jsontime.Parse(c.TS) })
	ad := func(c rawClick) string { return c.Ad }
	src := func() weir.Source[rawClick] { return JSONLines[rawClick]([]string{path}) }
	want := []string{"a 12:00 1", "a 12:01 1", "b 12:00 1", "b 12:01 1"}

	// Fail, the default: the job fails, naming the split and the value.
	_, _, _, err := countPerMinute(t, src(), ws, ad, false)
	if err == nil || !strings.Contains(err.Error(), "clicks.jsonl: the timestamp of record {\"ad\":\"a\",\"ts\":\"yesterday\"}: jsontime: timestamp \"yesterday\": not in an accepted form") {
		t.Fatalf("got %v, want the refusal", err)
	}

	// Skip: counted, the rest counted right.
	got, _, job, err := countPerMinute(t, src(), ws, ad, false, weir.OnBadRecord(weir.Skip))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) || skippedMetric(job) != 2 {
		t.Fatalf("skip: got %q and %d skipped, want %q and 2", got, skippedMetric(job), want)
	}

	// The side output: each refused record as JSON, with the reason.
	got, dead, _, err := countPerMinute(t, src(), ws, ad, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) || len(dead) != 2 {
		t.Fatalf("dead letters: got %q and %d dead letters, want %q and 2", got, len(dead), want)
	}
	for i, raw := range []string{`{"ad":"a","ts":"yesterday"}`, `{"ad":"b","ts":"9999-99-99 00:00:00"}`} {
		d := dead[i]
		if string(d.Raw) != raw || d.Source != "in" || !strings.HasSuffix(d.Split, "clicks.jsonl") || !strings.HasPrefix(d.Err, "timestamp: jsontime: timestamp") {
			t.Errorf("dead letter %d: %+v", i, d)
		}
	}
}
