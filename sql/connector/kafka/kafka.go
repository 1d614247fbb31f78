// Package kafka holds the SQL connectors 'kafka' and 'upsert-kafka', with
// Flink's options, on connector/kafka (franz-go).
//
// 'kafka' options: 'topic' (required; a source may read several, separated
// by ';'), 'properties.bootstrap.servers' (required), 'properties.group.id'
// (the group the source commits its checkpointed offsets to, for
// monitoring; the job keeps its own offsets in checkpoints), the formats
// ('format' or 'value.format', 'key.format' with 'key.fields',
// 'value.fields-include'), 'scan.startup.mode' = 'earliest-offset',
// 'latest-offset', 'group-offsets' (the group's committed offsets, else
// the earliest) or 'timestamp' (with 'scan.startup.timestamp-millis') —
// the default is 'group-offsets' when a group is set and 'earliest-offset'
// otherwise —, 'scan.bounded.mode' = 'unbounded' (default) or
// 'latest-offset' (the source ends at the offsets the partitions have when
// the job starts), 'sink.delivery-guarantee' = 'none', 'at-least-once'
// (default) or 'exactly-once' (Kafka transactions committed at
// checkpoints; needs 'sink.transactional-id-prefix'), 'sink.parallelism'.
// Of the Kafka client properties, 'properties.client.id',
// 'properties.isolation.level' (read_committed / read_uncommitted) and
// 'properties.transaction.timeout.ms' are understood, and for the consumer
// group of a job run in group mode (weir sql --app-id, docs/scale-out.md)
// 'properties.session.timeout.ms', 'properties.heartbeat.interval.ms'
// (default: a third of the session timeout, at most 3s) and
// 'properties.max.poll.interval.ms' (the rebalance timeout, as in Kafka's
// Java consumer), and the security properties: 'properties.security.protocol',
// 'properties.sasl.mechanism' with 'properties.sasl.jaas.config', and PEM
// trust and key stores under 'properties.ssl.' (see security); others are
// errors. Metadata columns: see Factory.ReadableMetadata.
//
// 'upsert-kafka' has the same options except the startup mode (it reads
// from the earliest offsets, as Flink) and 'key.fields': its key is the
// table's PRIMARY KEY, required, written with 'key.format'; 'value.format'
// must be insert-only. As a source it gives an upsert changelog: a record
// is a +U of its row, a record without a value (a tombstone) a -D of its
// key. As a sink it accepts an upsert changelog: +I/+U write the row under
// its key, -D writes a tombstone, -U is dropped.
package kafka

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/connector/internal/rowbuf"
	"github.com/weirstream/weir/sql/types"
)

func init() {
	connector.Register(Factory{upsert: false})
	connector.Register(Factory{upsert: true})
}

// Factory is the 'kafka' or (upsert) the 'upsert-kafka' connector.
type Factory struct{ upsert bool }

// ReadableMetadata implements connector.MetadataFactory: Flink's Kafka
// metadata keys, and 'key' (the record's key bytes, a weir extension).
func (f Factory) ReadableMetadata() []connector.MetadataColumn {
	nn := func(t types.Type) types.Type { t.NotNull = true; return t }
	return []connector.MetadataColumn{
		{Key: "topic", Type: nn(types.StringType)},
		{Key: "partition", Type: nn(types.IntType)},
		{Key: "headers", Type: nn(headersType)},
		{Key: "leader-epoch", Type: types.IntType},
		{Key: "offset", Type: nn(types.BigIntType)},
		{Key: "timestamp", Type: nn(types.TimestampLTZ3)},
		{Key: "timestamp-type", Type: nn(types.StringType)},
		{Key: "key", Type: types.BytesType},
	}
}

// WritableMetadata implements connector.MetadataFactory: a record's
// headers and timestamp, as Flink's.
func (f Factory) WritableMetadata() []connector.MetadataColumn {
	return []connector.MetadataColumn{
		{Key: "headers", Type: headersType},
		{Key: "timestamp", Type: types.TimestampLTZ3},
	}
}

var (
	nnString    = types.Type{Kind: types.Varchar, Length: types.MaxLength, NotNull: true}
	headersType = types.MapOf(nnString, types.BytesType)
)

// metaValue reads a readable metadata key of a record.
func metaValue(key string) func(r *kgo.Record) types.Value {
	switch key {
	case "topic":
		return func(r *kgo.Record) types.Value { return types.StringValue(r.Topic) }
	case "partition":
		return func(r *kgo.Record) types.Value { return types.IntValue(int64(r.Partition)) }
	case "headers":
		return func(r *kgo.Record) types.Value {
			kvs := make([]types.Value, 0, 2*len(r.Headers))
			for _, h := range r.Headers {
				v := types.NullValue
				if h.Value != nil {
					v = types.StringValue(string(h.Value))
				}
				kvs = append(kvs, types.StringValue(h.Key), v)
			}
			return types.ListValue(kvs)
		}
	case "leader-epoch":
		return func(r *kgo.Record) types.Value {
			if r.LeaderEpoch < 0 {
				return types.NullValue
			}
			return types.IntValue(int64(r.LeaderEpoch))
		}
	case "offset":
		return func(r *kgo.Record) types.Value { return types.IntValue(r.Offset) }
	case "timestamp":
		return func(r *kgo.Record) types.Value { return types.IntValue(r.Timestamp.UnixMilli() * 1000) }
	case "timestamp-type":
		return func(r *kgo.Record) types.Value {
			switch r.Attrs.TimestampType() {
			case 0:
				return types.StringValue("CreateTime")
			case 1:
				return types.StringValue("LogAppendTime")
			}
			return types.StringValue("NoTimestampType")
		}
	case "key":
		return func(r *kgo.Record) types.Value {
			if r.Key == nil {
				return types.NullValue
			}
			return types.StringValue(string(r.Key))
		}
	}
	panic("kafka: unknown metadata key " + key) // the planner checked the keys
}

// Identifier implements connector.Factory.
func (f Factory) Identifier() string {
	if f.upsert {
		return "upsert-kafka"
	}
	return "kafka"
}

// client reads the connection options shared by sources and sinks.
func client(o *connector.Options) ([]string, []kafka.ClientOption, map[string]string) {
	servers := o.Required("properties.bootstrap.servers")
	var brokers []string
	for _, s := range strings.Split(servers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			brokers = append(brokers, s)
		}
	}
	props := o.Prefixed("properties.")
	delete(props, "bootstrap.servers")
	var opts []kafka.ClientOption
	if id, ok := props["client.id"]; ok {
		opts = append(opts, kafka.ClientID(id))
		delete(props, "client.id")
	}
	opts = append(opts, security(o, props)...)
	if v, ok := props["default.api.timeout.ms"]; ok {
		// how long requests to the cluster are retried before the job
		// fails (Kafka's consumer API timeout; default 60 s)
		delete(props, "default.api.timeout.ms")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			o.Errorf("option 'properties.default.api.timeout.ms' = '%s': not a positive integer", v)
		}
		opts = append(opts, kafka.RetryTimeout(time.Duration(n)*time.Millisecond))
	}
	return brokers, opts, props
}

// unknownProps records the client properties nothing understood.
func unknownProps(o *connector.Options, props map[string]string) {
	for k := range props {
		o.Errorf("option 'properties.%s': the Kafka client property is not supported (supported: bootstrap.servers, group.id, client.id, isolation.level, transaction.timeout.ms, session.timeout.ms, heartbeat.interval.ms, max.poll.interval.ms, default.api.timeout.ms, security.protocol, sasl.mechanism, sasl.jaas.config, ssl.*)", k)
	}
}

// CreateSource implements connector.SourceFactory.
func (f Factory) CreateSource(t *connector.Table) (*connector.Source, error) {
	o := connector.NewOptions(t)
	topics := splitTopics(o.Required("topic"))
	brokers, copts, props := client(o)
	kv := rowbuf.NewKV(o, t, f.upsert, true, false)
	var opts []kafka.SourceOption
	for _, c := range copts {
		opts = append(opts, c)
	}
	group, hasGroup := props["group.id"]
	delete(props, "group.id")
	if hasGroup {
		opts = append(opts, kafka.Group(group))
	}
	if lvl, ok := props["isolation.level"]; ok {
		delete(props, "isolation.level")
		switch lvl {
		case "read_committed":
			opts = append(opts, kafka.ReadCommitted())
		case "read_uncommitted":
		default:
			o.Errorf("option 'properties.isolation.level' = '%s': must be 'read_committed' or 'read_uncommitted'", lvl)
		}
	}
	delete(props, "transaction.timeout.ms")
	opts = append(opts, groupTimeouts(o, props)...)
	unknownProps(o, props)
	// a table is read and written with the same options, as in Flink:
	// the sink's are accepted here
	o.Declare("sink.delivery-guarantee", "sink.transactional-id-prefix", "sink.parallelism")
	if !f.upsert {
		def := "earliest-offset"
		if hasGroup {
			def = "group-offsets"
		}
		switch o.Enum("scan.startup.mode", def, "earliest-offset", "latest-offset", "group-offsets", "timestamp") {
		case "earliest-offset":
			opts = append(opts, kafka.StartFrom(kafka.Earliest()))
		case "latest-offset":
			opts = append(opts, kafka.StartFrom(kafka.Latest()))
		case "group-offsets":
			if !hasGroup {
				o.Errorf("'scan.startup.mode' = 'group-offsets' needs 'properties.group.id'")
			}
			opts = append(opts, kafka.StartFrom(kafka.Committed(kafka.Earliest())))
		case "timestamp":
			ms := o.Int("scan.startup.timestamp-millis", -1)
			if ms < 0 {
				o.Errorf("'scan.startup.mode' = 'timestamp' needs 'scan.startup.timestamp-millis'")
			}
			opts = append(opts, kafka.StartFrom(kafka.AtTime(time.UnixMilli(ms))))
		}
	}
	bounded := o.Enum("scan.bounded.mode", "unbounded", "unbounded", "latest-offset") == "latest-offset"
	if bounded {
		opts = append(opts, kafka.Bounded())
	}
	if err := o.Err(); err != nil {
		return nil, err
	}
	metas := make([]func(*kgo.Record) types.Value, len(t.Metadata))
	for i, m := range t.Metadata {
		metas[i] = metaValue(m.Key)
	}
	src := kafka.Source(brokers, topics, func(r *kgo.Record) (rowbuf.Decoded, error) {
		var key []byte
		if kv.HasKey() {
			key = r.Key
		}
		d, err := kv.Decode(key, r.Value)
		if err != nil || len(metas) == 0 {
			return d, err
		}
		for i := range d.Rows {
			vals := make([]types.Value, len(d.Rows[i].Values), len(d.Rows[i].Values)+len(metas))
			copy(vals, d.Rows[i].Values)
			for _, m := range metas {
				vals = append(vals, m(r))
			}
			d.Rows[i].Values = vals
		}
		return d, nil
	}, opts...)
	return &connector.Source{Source: rowbuf.Flatten(src), Bounded: bounded, Changelog: kv.Mode, Options: t.Settings.SourceOptions()}, nil
}

// groupTimeouts reads the consumer group's timeouts (they matter in group
// mode, where the job's processes form a group: a killed process's
// partitions move once its session times out).
func groupTimeouts(o *connector.Options, props map[string]string) []kafka.SourceOption {
	ms := func(key string) time.Duration {
		v, ok := props[key]
		if !ok {
			return 0
		}
		delete(props, key)
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			o.Errorf("option 'properties.%s' = '%s': not a positive integer", key, v)
			return 0
		}
		return time.Duration(n) * time.Millisecond
	}
	session, heartbeat, poll := ms("session.timeout.ms"), ms("heartbeat.interval.ms"), ms("max.poll.interval.ms")
	var kopts []kgo.Opt
	if session > 0 {
		kopts = append(kopts, kgo.SessionTimeout(session))
		if heartbeat == 0 {
			heartbeat = min(session/3, 3*time.Second)
		}
	}
	if heartbeat > 0 {
		kopts = append(kopts, kgo.HeartbeatInterval(heartbeat))
	}
	if poll > 0 {
		kopts = append(kopts, kgo.RebalanceTimeout(poll))
	}
	if len(kopts) == 0 {
		return nil
	}
	return []kafka.SourceOption{kafka.ClientOptions(kopts...)}
}

func splitTopics(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ";") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// CreateSink implements connector.SinkFactory.
func (f Factory) CreateSink(t *connector.Table) (*connector.Sink, error) {
	o := connector.NewOptions(t)
	topics := splitTopics(o.Required("topic"))
	if len(topics) > 1 {
		o.Invalid("topic", "a sink writes one topic")
	}
	brokers, copts, props := client(o)
	kv := rowbuf.NewKV(o, t, f.upsert, false, true)
	var opts []kafka.SinkOption
	for _, c := range copts {
		opts = append(opts, c)
	}
	if ms, ok := props["transaction.timeout.ms"]; ok {
		delete(props, "transaction.timeout.ms")
		n, err := strconv.ParseInt(ms, 10, 64)
		if err != nil || n <= 0 {
			o.Errorf("option 'properties.transaction.timeout.ms' = '%s': not a positive integer", ms)
		}
		opts = append(opts, kafka.TransactionTimeout(time.Duration(n)*time.Millisecond))
	}
	// the source's options are accepted (a table is read and written with
	// the same options, as in Flink)
	for _, k := range []string{"group.id", "isolation.level", "session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms"} {
		delete(props, k)
	}
	o.Declare("scan.startup.mode", "scan.startup.timestamp-millis", "scan.bounded.mode")
	unknownProps(o, props)
	guarantee := kafka.AtLeastOnce
	switch o.Enum("sink.delivery-guarantee", "at-least-once", "none", "at-least-once", "exactly-once") {
	case "none":
		guarantee = kafka.None
	case "exactly-once":
		guarantee = kafka.ExactlyOnce
		prefix := o.String("sink.transactional-id-prefix", "")
		if prefix == "" {
			o.Errorf("'sink.delivery-guarantee' = 'exactly-once' needs 'sink.transactional-id-prefix' (unique per sink in the cluster, stable across restarts)")
		}
		opts = append(opts, kafka.TransactionalIDPrefix(prefix))
	}
	o.Declare("sink.transactional-id-prefix")
	par := o.Int("sink.parallelism", 0)
	if par < 0 {
		o.Invalid("sink.parallelism", "must be positive")
	}
	if err := o.Err(); err != nil {
		return nil, err
	}
	opts = append(opts, kafka.DeliveryGuarantee(guarantee))
	if len(topics) == 1 {
		opts = append(opts, kafka.DefaultTopic(topics[0]))
	}
	n := len(t.Schema)
	var headersAt, timestampAt = -1, -1
	for i, m := range t.Metadata {
		switch m.Key {
		case "headers":
			headersAt = n + i
		case "timestamp":
			timestampAt = n + i
		}
	}
	var sink weir.CommittingSink[types.Row] = kafka.Sink(brokers, func(v types.Row, r *kgo.Record) error {
		if headersAt >= 0 {
			if h := v.Values[headersAt]; !h.Null {
				kvs := h.List()
				for i := 0; i+1 < len(kvs); i += 2 {
					hdr := kgo.RecordHeader{Key: kvs[i].S}
					if !kvs[i+1].Null {
						hdr.Value = []byte(kvs[i+1].S)
					}
					r.Headers = append(r.Headers, hdr)
				}
			}
		}
		if timestampAt >= 0 {
			if ts := v.Values[timestampAt]; !ts.Null {
				r.Timestamp = time.UnixMicro(ts.I)
			}
		}
		v.Values = v.Values[:n]
		k, val, tomb, _, err := kv.Encode(&v, nil, nil)
		if err != nil {
			return fmt.Errorf("table '%s': %w", t.Name, err)
		}
		if kv.HasKey() {
			r.Key = k
		}
		r.Value = val
		if tomb {
			r.Value = nil
		}
		return nil
	}, opts...)
	if f.upsert {
		sink = rowbuf.DropUpdateBefore(sink)
	}
	var wopts []weir.OperatorOption
	if par > 0 {
		wopts = append(wopts, weir.Parallelism(int(par)))
	}
	return &connector.Sink{Sink: sink, Accepts: kv.Accepts, ExactlyOnce: guarantee == kafka.ExactlyOnce, Options: wopts}, nil
}
