package kafka

import (
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// SourceOption configures a Source.
type SourceOption interface{ applySource(*sourceConfig) }

// SinkOption configures a Sink.
type SinkOption interface{ applySink(*sinkConfig) }

// ClientOption configures the Kafka clients of a source or a sink: it is
// both a SourceOption and a SinkOption.
type ClientOption interface {
	SourceOption
	SinkOption
}

// clientConfig is what every franz-go client of a source or sink gets.
type clientConfig struct {
	brokers      []string
	sasl         []sasl.Mechanism
	tls          *tls.Config
	clientID     string
	retryTimeout time.Duration
	extra        []kgo.Opt
}

// kgoOpts are the options of a client: seeds, authentication, transport,
// then the caller's extra options (which win).
func (c *clientConfig) kgoOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.brokers...),
		kgo.ClientID(c.clientID),
		// Client metrics (KIP-714) make Close wait up to a second for a
		// last push; sinks close a client per transaction.
		kgo.DisableClientMetrics(),
		kgo.RetryTimeout(c.retryTimeout),
	}
	if len(c.sasl) > 0 {
		opts = append(opts, kgo.SASL(c.sasl...))
	}
	if c.tls != nil {
		opts = append(opts, kgo.DialTLSConfig(c.tls.Clone()))
	}
	return append(opts, c.extra...)
}

func (c *clientConfig) validate(what string) error {
	if len(c.brokers) == 0 {
		return fmt.Errorf("kafka: %s: no seed brokers", what)
	}
	for _, b := range c.brokers {
		if strings.TrimSpace(b) == "" {
			return fmt.Errorf("kafka: %s: empty seed broker address", what)
		}
	}
	return nil
}

func defaultClientConfig(brokers []string) clientConfig {
	return clientConfig{brokers: brokers, clientID: "weir", retryTimeout: time.Minute}
}

type clientOpt func(*clientConfig)

func (f clientOpt) applySource(c *sourceConfig) { f(&c.client) }
func (f clientOpt) applySink(c *sinkConfig)     { f(&c.client) }

// SASL authenticates every connection with the first mechanism the broker
// supports, e.g. plain.Auth{User: u, Pass: p}.AsMechanism() or
// scram.Auth{User: u, Pass: p}.AsSha256Mechanism() (packages
// github.com/twmb/franz-go/pkg/sasl/plain and .../sasl/scram).
func SASL(mechanisms ...sasl.Mechanism) ClientOption {
	return clientOpt(func(c *clientConfig) { c.sasl = append(c.sasl, mechanisms...) })
}

// TLS dials brokers over TLS with cfg (cloned for each client; a missing
// ServerName is filled in from the broker's host by franz-go).
func TLS(cfg *tls.Config) ClientOption {
	return clientOpt(func(c *clientConfig) { c.tls = cfg })
}

// ClientID sets the client id the clients send (default "weir").
func ClientID(id string) ClientOption {
	return clientOpt(func(c *clientConfig) { c.clientID = id })
}

// RetryTimeout bounds how long a request to the cluster (metadata, offsets,
// transaction control) is retried while brokers are unreachable before the
// operation fails (default 1 minute); the job then restarts under its
// restart policy. Fetching and producing retry until the job is cancelled.
func RetryTimeout(d time.Duration) ClientOption {
	return clientOpt(func(c *clientConfig) { c.retryTimeout = d })
}

// ClientOptions passes franz-go options through to every client, after the
// connector's own (so they override them). Options that change what the
// connector relies on (consumer groups, transactional ids, isolation levels)
// break it.
func ClientOptions(opts ...kgo.Opt) ClientOption {
	return clientOpt(func(c *clientConfig) { c.extra = append(c.extra, opts...) })
}

// StartAt is where a source starts reading a partition when the job has no
// checkpoint; a restored job continues from its checkpoint.
type StartAt struct {
	kind     startKind
	millis   int64
	fallback *StartAt // for committed offsets
}

type startKind int

const (
	startEarliest startKind = iota
	startLatest
	startTime
	startCommitted
)

// Earliest starts at the first record still in each partition (the default).
func Earliest() StartAt { return StartAt{kind: startEarliest} }

// Latest starts at the end of each partition: only records produced after
// the job started are read.
func Latest() StartAt { return StartAt{kind: startLatest} }

// AtTime starts at the first record whose timestamp is t or later (the end
// of the partition if there is none).
func AtTime(t time.Time) StartAt { return StartAt{kind: startTime, millis: t.UnixMilli()} }

// Committed starts at the offsets committed to the source's consumer group
// (see Group), and where a partition has none, at fallback.
func Committed(fallback StartAt) StartAt {
	f := fallback
	if f.kind == startCommitted {
		f = *f.fallback
	}
	return StartAt{kind: startCommitted, fallback: &f}
}

func (s StartAt) String() string {
	switch s.kind {
	case startLatest:
		return "latest"
	case startTime:
		return "time " + time.UnixMilli(s.millis).UTC().Format(time.RFC3339Nano)
	case startCommitted:
		return "committed, else " + s.fallback.String()
	}
	return "earliest"
}

// Guarantee is the delivery guarantee of a Sink.
type Guarantee int

const (
	// None produces records asynchronously and never waits for them at a
	// checkpoint: a failure may lose or repeat records.
	None Guarantee = iota
	// AtLeastOnce flushes every record at each checkpoint barrier, before
	// the checkpoint can complete: after a failure, records since the
	// restored checkpoint are produced again (duplicates, no loss).
	AtLeastOnce
	// ExactlyOnce writes each checkpoint's records in a Kafka transaction
	// committed when the checkpoint completes: read_committed consumers see
	// every record once.
	ExactlyOnce
)

func (g Guarantee) String() string {
	switch g {
	case None:
		return "none"
	case AtLeastOnce:
		return "at-least-once"
	case ExactlyOnce:
		return "exactly-once"
	}
	return fmt.Sprintf("Guarantee(%d)", int(g))
}

type sourceOpt func(*sourceConfig)

func (f sourceOpt) applySource(c *sourceConfig) { f(c) }

// StartFrom sets where a source starts without a checkpoint (default
// Earliest()).
func StartFrom(s StartAt) SourceOption { return sourceOpt(func(c *sourceConfig) { c.start = s }) }

// Group names the consumer group the source commits its checkpointed
// offsets to, after each completed checkpoint, for monitoring (lag) and for
// Committed(). The source does not join the group: partitions are assigned
// by the job, and offsets live in its checkpoints.
func Group(id string) SourceOption { return sourceOpt(func(c *sourceConfig) { c.group = id }) }

// Bounded makes the source stop at the end offsets the partitions had when
// the job (or its latest attempt) started: the job then ends when it has
// read them.
func Bounded() SourceOption { return sourceOpt(func(c *sourceConfig) { c.bounded = true }) }

// ReadCommitted reads only committed records of transactional producers
// (such as an ExactlyOnce sink); the default reads uncommitted records too.
// A bounded read_committed source ends at the last stable offsets.
func ReadCommitted() SourceOption {
	return sourceOpt(func(c *sourceConfig) { c.readCommitted = true })
}

// RepartitionPartitions sets the number of partitions of the repartition
// topics a group-mode job (weir.AppID) creates for the KeyBys fed by this
// source's records (docs/scale-out.md); by default, the number of
// partitions of the source's topics. It is fixed when the topic is
// created: a job started again with another number fails with an error
// naming the topic (the key groups of each partition would change).
func RepartitionPartitions(n int) SourceOption {
	return sourceOpt(func(c *sourceConfig) { c.repartitionPartitions = n })
}

// SkipBadRecords skips records that the decode function rejects, counting
// them (weir_bad_records_skipped_total), instead of failing the job.
func SkipBadRecords() SourceOption { return sourceOpt(func(c *sourceConfig) { c.skipBad = true }) }

type sinkOpt func(*sinkConfig)

func (f sinkOpt) applySink(c *sinkConfig) { f(c) }

// DefaultTopic is the topic of records whose serialize function leaves
// Record.Topic empty.
func DefaultTopic(topic string) SinkOption { return sinkOpt(func(c *sinkConfig) { c.topic = topic }) }

// DeliveryGuarantee sets the sink's guarantee (default AtLeastOnce).
func DeliveryGuarantee(g Guarantee) SinkOption {
	return sinkOpt(func(c *sinkConfig) { c.guarantee = g })
}

// TransactionalIDPrefix is required by ExactlyOnce: the sink's transactional
// ids are "<prefix>-<subtask>-<n>". It must be unique per job (per sink) in
// the cluster and stay the same across restarts of the job.
func TransactionalIDPrefix(prefix string) SinkOption {
	return sinkOpt(func(c *sinkConfig) { c.txnPrefix = prefix })
}

// TransactionTimeout is the timeout of the sink's transactions (default 15
// minutes, Kafka's default transaction.max.timeout.ms). A transaction open
// longer is aborted by the broker, losing its records: it must exceed the
// checkpoint interval plus the time to complete a checkpoint and to restart.
func TransactionTimeout(d time.Duration) SinkOption {
	return sinkOpt(func(c *sinkConfig) { c.txnTimeout = d })
}
