package kafka_test

import (
	"context"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir/connector/kafka"
)

// dialHook counts the connection attempts of the job's clients that failed.
type dialHook struct{ failed atomic.Int64 }

func (h *dialHook) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		h.failed.Add(1)
	}
}

// The cluster is down when the job starts, and goes down again mid-run: the
// job's clients retry with backoff and the job completes with exactly the
// output of an undisturbed run. The cluster keeps its data across its
// restarts (kfake's DataDir) and comes back on the same loopback port.
func TestBrokerUnavailableAtStartAndMidRun(t *testing.T) {
	data := t.TempDir()
	port := freePort(t)
	addrs := []string{"127.0.0.1:" + strconv.Itoa(port)}
	start := func() *kfake.Cluster {
		t.Helper()
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.DataDir(data),
			kfake.SeedTopics(4, "in"), kfake.SeedTopics(3, "out"))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := start()
	evs := events(20000, 40)
	produce(t, addrs, "in", 4, evs)
	c.Close()

	hook := &dialHook{}
	var read atomic.Int64
	pace := func(e event) {
		read.Add(1)
		// Pacing on purpose, not waiting for a result: the input takes
		// ≥ 1s, so the outage the test causes (on conditions, below)
		// comes mid-run; a slower machine only makes that surer.
		if e.Seq%20 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	hooks := kafka.ClientOptions(kgo.WithHooks(hook))
	job := countingJob(addrs, "in", "out", t.TempDir(), 2, pace, []kafka.SourceOption{hooks},
		hooks, kafka.DeliveryGuarantee(kafka.ExactlyOnce), kafka.TransactionalIDPrefix("down"))
	done := make(chan error, 1)
	go func() { done <- job.Run(context.Background()) }()

	waitFor(t, "the job's first failed connection attempts", 30*time.Second, func() bool { return hook.failed.Load() >= 2 })
	c = start()
	waitFor(t, "checkpoints with the cluster up", 60*time.Second, func() bool {
		return job.Metrics().Checkpoints.Completed >= 2 && read.Load() > 2000
	})
	// Down mid-run.
	failedBefore := hook.failed.Load()
	c.Close()
	waitFor(t, "failed reconnections", 30*time.Second, func() bool { return hook.failed.Load() >= failedBefore+2 })
	if read.Load() >= int64(len(evs)) {
		t.Fatal("the job had read its whole input before the outage; the test proves nothing")
	}
	c = start()
	defer c.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the job did not complete after the cluster came back")
	}
	sameOutput(t, "after outages", committedValues(t, addrs, "out"), windowCounts(evs))
	t.Logf("%d failed connection attempts, %d checkpoints, %d restarts", hook.failed.Load(),
		job.Metrics().Checkpoints.Completed, job.Metrics().Checkpoints.Restarts)
}
