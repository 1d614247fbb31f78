package kafka_test

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/testing/certtest"
)

// roundTrip writes vals with an exactly-once sink and reads them back with
// a bounded read_committed source, both with opts; it returns the error of
// the first failing step.
func roundTrip(addrs []string, topic string, vals []string, opts ...kafka.ClientOption) ([]string, error) {
	sinkOpts := []kafka.SinkOption{kafka.DefaultTopic(topic), kafka.DeliveryGuarantee(kafka.ExactlyOnce), kafka.TransactionalIDPrefix("auth-" + topic)}
	srcOpts := []kafka.SourceOption{kafka.Bounded(), kafka.ReadCommitted()}
	for _, o := range opts {
		sinkOpts = append(sinkOpts, o)
		srcOpts = append(srcOpts, o)
	}
	job := weir.NewJob("write")
	weir.To(weir.FromSource(job, "in", weir.SliceSource(vals), weir.NoWatermarks[string]()), kafka.Sink(addrs, stringRecord, sinkOpts...))
	if err := job.Run(context.Background()); err != nil {
		return nil, err
	}
	job = weir.NewJob("read")
	out := weir.Collect(weir.FromSource(job, "in", kafka.Source(addrs, []string{topic}, func(r *kgo.Record) (string, error) { return string(r.Value), nil }, srcOpts...),
		weir.NoWatermarks[string]()))
	if err := job.Run(context.Background()); err != nil {
		return nil, err
	}
	return out.Items(), nil
}

func TestSASL(t *testing.T) {
	_, addrs := newCluster(t, kfakeOpt(kfake.EnableSASL()), kfakeOpt(kfake.Superuser("PLAIN", "alice", "secret")),
		kfakeOpt(kfake.Superuser("SCRAM-SHA-256", "bob", "hunter2")), seedTopics(1, "p", "s"))
	vals := strs("v", 20)
	got, err := roundTrip(addrs, "p", vals, kafka.SASL(plain.Auth{User: "alice", Pass: "secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	sameOutput(t, "PLAIN", got, vals)
	got, err = roundTrip(addrs, "s", vals, kafka.SASL(scram.Auth{User: "bob", Pass: "hunter2"}.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	sameOutput(t, "SCRAM-SHA-256", got, vals)
	// The options are what makes it work: a wrong password, or none, fails.
	if _, err := roundTrip(addrs, "p", vals, kafka.RetryTimeout(time.Second), kafka.SASL(plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism())); err == nil {
		t.Fatal("wrong password accepted")
	}
	if _, err := roundTrip(addrs, "p", vals, kafka.RetryTimeout(time.Second)); err == nil {
		t.Fatal("no authentication accepted")
	}
}

func TestTLS(t *testing.T) {
	server, client := tlsConfigs(t)
	_, addrs := newCluster(t, kfakeOpt(kfake.TLS(server)), seedTopics(1, "t"))
	vals := strs("v", 20)
	got, err := roundTrip(addrs, "t", vals, kafka.TLS(client))
	if err != nil {
		t.Fatal(err)
	}
	sameOutput(t, "TLS", got, vals)
	if _, err := roundTrip(addrs, "t", vals, kafka.RetryTimeout(time.Second)); err == nil {
		t.Fatal("plaintext accepted by a TLS listener")
	}
}

// tlsConfigs makes a self-signed certificate for 127.0.0.1.
func tlsConfigs(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	c, err := certtest.New()
	if err != nil {
		t.Fatal(err)
	}
	return c.Server(), c.Client()
}
