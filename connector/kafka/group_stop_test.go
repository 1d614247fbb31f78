package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

// TestGroupStopBeforeAssignment: a group-mode process asked to stop (its
// context ended: SIGTERM in the CLI) before the group gave it partitions
// stops cleanly, as it does once it runs a local job. It returned the
// context's error, so a process stopped while joining exited with status
// 1 (seen in TestGroupKillAndAdd: a process that joined as the job
// ended).
func TestGroupStopBeforeAssignment(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(2, "in", "out"))
	job := weir.NewJob("stop", weir.AppID("stop"))
	s := weir.FromSource(job, "in", kafka.Source(addrs, []string{"in"}, decodeEvent, kafka.ReadCommitted()),
		weir.MonotonousTimestamps(func(e event) time.Time { return time.UnixMilli(e.TS) }))
	weir.To(weir.Map(s, func(e event) string { return e.Key }), kafka.Sink(addrs, func(v string, rec *kgo.Record) error {
		rec.Value = append(rec.Value, v...)
		return nil
	}, kafka.DefaultTopic("out")))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatalf("Run stopped before any assignment: %v, want a clean stop (nil)", err)
	}
}
