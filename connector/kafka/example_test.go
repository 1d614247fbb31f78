package kafka_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

// Count clicks per ad per minute from topic clicks into topic counts,
// exactly once. (The cluster here is kfake, in process.)
func Example() {
	cluster, _ := kfake.NewCluster(kfake.SeedTopics(2, "clicks", "counts"))
	defer cluster.Close()
	brokers := cluster.ListenAddrs()

	cl, _ := kgo.NewClient(kgo.SeedBrokers(brokers...))
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i, ad := range []string{"ad-1", "ad-2", "ad-1", "ad-1"} {
		cl.ProduceSync(context.Background(), &kgo.Record{Topic: "clicks", Key: []byte(ad), Value: []byte(ad),
			Timestamp: t0.Add(time.Duration(i) * 20 * time.Second)})
	}
	cl.Close()

	type click struct {
		Ad string
		TS time.Time
	}
	dir, _ := os.MkdirTemp("", "checkpoints")
	defer os.RemoveAll(dir)
	job := weir.NewJob("ad-clicks", weir.Checkpointing(time.Second, dir))
	clicks := weir.FromSource(job, "clicks",
		kafka.Source(brokers, []string{"clicks"}, func(r *kgo.Record) (click, error) {
			return click{Ad: string(r.Value), TS: r.Timestamp}, nil
		}, kafka.Bounded()),
		weir.BoundedOutOfOrderness(5*time.Second, func(c click) time.Time { return c.TS }))
	counts := weir.Aggregate(weir.Window(weir.KeyBy(clicks, func(c click) string { return c.Ad }), weir.Tumbling(time.Minute)),
		weir.Count[click]())
	weir.To(counts, kafka.Sink(brokers, func(r weir.WindowResult[string, int64], rec *kgo.Record) error {
		rec.Key = append(rec.Key, r.Key...)
		rec.Value = fmt.Appendf(rec.Value, "%s %s %d", r.Key, r.Start.Format("15:04"), r.Value)
		return nil
	}, kafka.DefaultTopic("counts"), kafka.DeliveryGuarantee(kafka.ExactlyOnce), kafka.TransactionalIDPrefix("ad-clicks")))
	if err := job.Run(context.Background()); err != nil {
		panic(err)
	}

	// Read what was committed.
	job = weir.NewJob("read")
	out := weir.Collect(weir.FromSource(job, "counts",
		kafka.Source(brokers, []string{"counts"}, func(r *kgo.Record) (string, error) { return string(r.Value), nil },
			kafka.Bounded(), kafka.ReadCommitted()), weir.NoWatermarks[string]()))
	if err := job.Run(context.Background()); err != nil {
		panic(err)
	}
	lines := out.Items()
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// ad-1 12:00 2
	// ad-1 12:01 1
	// ad-2 12:00 1
}
