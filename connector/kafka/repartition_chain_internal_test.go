package kafka

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/weirstream/weir/internal/group"
)

// TestChainExchangeWaitsForEveryFirstStageTask: the repartition topic of a
// KeyBy behind a keyed operator (a chain of KeyBys) has as upstream tasks
// the first stage's repartition partitions, whichever process runs them:
// setupExchanges gives it the first topic's partition count as its
// partitions and as the tasks its readers wait for; a reader's watermark
// is none while one first-stage task has not written (here: partition 3,
// its owner not yet started or behind), then the minimum over all four; a
// task that moves to another process and writes a lower watermark than
// its committed one (the new owner's restored first stage starting from
// the commit) does not move it back, nor does the committed metadata the
// next owner of the partition starts from.
func TestChainExchangeWaitsForEveryFirstStageTask(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "in"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cc := defaultClientConfig(c.ListenAddrs())
	x1 := &group.Exchange{UID: "hop", MaxParallelism: 128, Upstreams: []any{Source(c.ListenAddrs(), []string{"in"}, decodeExchange)}}
	x2 := &group.Exchange{UID: "best", MaxParallelism: 128, Upstreams: []any{x1}}
	r := &groupRunner{job: group.Job{AppID: "app", Exchanges: []*group.Exchange{x1, x2}}, client: &cc,
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.setupExchanges(ctx); err != nil {
		t.Fatal(err)
	}
	if x1.Topic != "app-hop-repartition" || x1.Partitions != 4 || x1.Tasks != 4 {
		t.Fatalf("first stage: %+v", x1)
	}
	if x2.Topic != "app-best-repartition" || x2.Partitions != 4 || x2.Tasks != 4 {
		t.Fatalf("second stage: topic %q, %d partitions, %d tasks; want app-best-repartition, 4, 4", x2.Topic, x2.Partitions, x2.Tasks)
	}
	tr := newTracker(x2.Tasks, "")
	for p, wm := range []int64{500, 300, 400} {
		tr.observe(x1.Topic+"/"+strconv.Itoa(p), wm)
	}
	if tr.wm != math.MinInt64 {
		t.Fatalf("first-stage task 3 has not written: watermark %d, want none", tr.wm)
	}
	if !tr.observe(x1.Topic+"/3", 200) || tr.wm != 200 {
		t.Fatalf("every task written: watermark %d, want 200 (task 3's)", tr.wm)
	}
	tr.observe(x1.Topic+"/3", 900)
	tr.observe(x1.Topic+"/1", 350)
	if tr.wm != 350 {
		t.Fatalf("watermark %d, want 350 (task 1's)", tr.wm)
	}
	// Task 1 moved: its new owner starts from the last commit's state and
	// writes a lower watermark first.
	if tr.observe(x1.Topic+"/1", 310) || tr.wm != 350 {
		t.Fatalf("a moved task's lower marker moved the watermark to %d", tr.wm)
	}
	back := newTracker(x2.Tasks, tr.encode())
	if back.wm != 350 {
		t.Fatalf("from the committed metadata %q: watermark %d, want 350", tr.encode(), back.wm)
	}
}
