package kafka_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir/sql"
)

// lockedBuffer collects what a session prints (its SELECTs' sinks print
// from their own tasks).
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the printed lines, sorted (nil for none).
func (l *lockedBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.TrimSpace(l.b.String())
	if s == "" {
		return nil
	}
	out := strings.Split(s, "\n")
	slices.Sort(out)
	return out
}

// runSQL plans and runs a script, and returns what it printed, sorted.
func runSQL(t *testing.T, script string) ([]string, error) {
	t.Helper()
	var out lockedBuffer
	s := sql.NewSession(sql.Stdout(&out))
	job, err := s.Plan(script)
	if err != nil || job == nil {
		return out.lines(), err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		return nil, err
	}
	return out.lines(), nil
}

// mustSQL is runSQL that fails the test on an error.
func mustSQL(t *testing.T, script string) []string {
	t.Helper()
	out, err := runSQL(t, script)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// produce writes records (to the partitions they name, if any) and waits
// for them.
func produce(t *testing.T, servers string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(servers, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// consumeRecords reads n records of topic from its start, failing after a
// minute.
func consumeRecords(t *testing.T, servers, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(servers, ",")...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: %d of %d records after a minute", topic, len(out), n)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// consumeValues reads n records' values of topic.
func consumeValues(t *testing.T, servers, topic string, n int) [][]byte {
	t.Helper()
	var out [][]byte
	for _, r := range consumeRecords(t, servers, topic, n) {
		out = append(out, r.Value)
	}
	return out
}
