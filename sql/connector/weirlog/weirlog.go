// Package weirlog is the SQL connector 'weir-log': a table stored in a
// topic of weir's embedded log (connector/log), with the options of
// Flink's Kafka connector where they apply.
//
// Options: 'topic' (required; the topic must exist: `weir log create`),
// 'path' (the log's data directory; default the job's log directory),
// the record formats as the kafka connector's ('format' or 'value.format',
// 'key.format' with 'key.fields', 'value.fields-include'),
// 'scan.startup.mode' = 'earliest-offset' (default), 'latest-offset' or
// 'timestamp' (with 'scan.startup.timestamp-millis'), 'scan.bounded.mode'
// = 'unbounded' (default: the source follows the log) or 'latest-offset'
// (the source ends at the end of the log as it is when the job starts),
// and for a sink 'sink.producer-id' (default "sql-" and the table's
// name): the name under which the sink stages its output, stable across
// restarts and used by one sink only.
//
// The source has a split per partition, restorable; a record that does
// not decode fails the job naming the topic, partition and offset, or
// goes to the job's bad-record policy. The sink is exactly once (the log's
// staged, idempotent commit at checkpoints) and accepts what its value
// format accepts.
package weirlog

import (
	"regexp"
	"time"

	wlog "github.com/weirstream/weir/connector/log"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/connector/internal/rowbuf"
	"github.com/weirstream/weir/sql/types"
)

func init() { connector.Register(Factory{}) }

// Factory is the 'weir-log' connector.
type Factory struct{}

// Identifier implements connector.Factory.
func (Factory) Identifier() string { return "weir-log" }

// pollInterval is how often a following source looks for new records.
const pollInterval = 20 * time.Millisecond

func dataDir(o *connector.Options, t *connector.Table) string {
	dir := o.String("path", t.Settings.LogDir)
	if dir == "" {
		o.Errorf("missing required option 'path' (the log's data directory; the job sets no default)")
	}
	return dir
}

// CreateSource implements connector.SourceFactory.
func (Factory) CreateSource(t *connector.Table) (*connector.Source, error) {
	o := connector.NewOptions(t)
	topic := o.Required("topic")
	dir := dataDir(o, t)
	kv := rowbuf.NewKV(o, t, false, true, false)
	var opts []wlog.SourceOption
	switch o.Enum("scan.startup.mode", "earliest-offset", "earliest-offset", "latest-offset", "timestamp") {
	case "latest-offset":
		opts = append(opts, wlog.StartFrom(wlog.Latest()))
	case "timestamp":
		ms := o.Int("scan.startup.timestamp-millis", -1)
		if ms < 0 {
			o.Errorf("'scan.startup.mode' = 'timestamp' needs 'scan.startup.timestamp-millis'")
		}
		opts = append(opts, wlog.StartFrom(wlog.AtTimestamp(ms)))
	}
	bounded := o.Enum("scan.bounded.mode", "unbounded", "unbounded", "latest-offset") == "latest-offset"
	if !bounded {
		opts = append(opts, wlog.FollowLog(pollInterval))
	}
	if err := o.Err(); err != nil {
		return nil, err
	}
	src := wlog.Source(dir, topic, func(r wlog.Record) (rowbuf.Decoded, error) {
		var key []byte
		if kv.HasKey() {
			key = r.Key
		}
		return kv.Decode(key, r.Value)
	}, opts...)
	return &connector.Source{Source: rowbuf.Flatten(src), Bounded: bounded, Changelog: kv.Mode, Options: t.Settings.SourceOptions()}, nil
}

var producerChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// CreateSink implements connector.SinkFactory.
func (Factory) CreateSink(t *connector.Table) (*connector.Sink, error) {
	o := connector.NewOptions(t)
	topic := o.Required("topic")
	dir := dataDir(o, t)
	kv := rowbuf.NewKV(o, t, false, false, true)
	producer := o.String("sink.producer-id", "sql-"+producerChars.ReplaceAllString(t.Name, "_"))
	if err := o.Err(); err != nil {
		return nil, err
	}
	sink := wlog.Sink(dir, topic, producer, func(v types.Row, r *wlog.Record) error {
		k, val, tomb, _, err := kv.Encode(&v, r.Key, r.Value)
		if err != nil {
			return err
		}
		if kv.HasKey() {
			r.Key = k
		} else {
			r.Key = nil
		}
		r.Value = val
		if tomb {
			r.Value = nil
		}
		return nil
	})
	return &connector.Sink{Sink: sink, Accepts: kv.Accepts, ExactlyOnce: true}, nil
}
