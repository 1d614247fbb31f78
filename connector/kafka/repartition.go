package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir/internal/group"
)

// Repartition topics (group mode, docs/scale-out.md): a KeyBy of a
// group-mode job crosses processes through the topic
// "<app id>-<operator uid>-repartition", which the runner creates with N
// partitions (RepartitionPartitions on the upstream source; by default the
// number of partitions of the source's topics). The root package cuts the
// hash edge in two (exchange.go there): its writer side produces, through
// OpenExchange, each record to partition kg*N/maxParallelism into the
// process's open transaction, and watermark markers; its reader side is a
// Source of this package over the topic: the group subscribes to it with the
// input topics, so its partitions are assigned across the processes like
// theirs, read read_committed, held at barriers, their positions committed
// in the transaction with the input offsets.
//
// Watermarks: each upstream task (a partition of the upstream source's
// topics, whichever process reads it) writes its watermark as a marker
// record (header markerHeader = the task, value the watermark, 8 bytes big
// endian) into every partition at every commit interval, and +inf when its
// bounded input ends. The reader of a partition keeps the latest watermark
// per task, and its watermark is the minimum over them once it has seen as
// many tasks as the upstream topics have partitions (until then: none).
// The per-task watermarks are committed as the metadata of the partition's
// offset, in the same transaction, so a reader that takes the partition
// over continues from them rather than waiting for tasks that have ended.

// markerHeader is the header key of a watermark marker.
const markerHeader = "weir-watermark"

// RepartitionKeyGroups returns the key groups [start, end) that go to
// partition p of a repartition topic of n partitions: the key groups kg
// with kg*n/maxParallelism == p.
func RepartitionKeyGroups(p, n, maxParallelism int) (start, end int) {
	start = (p*maxParallelism + n - 1) / n
	end = ((p+1)*maxParallelism + n - 1) / n
	return start, end
}

// RepartitionTopic is the name of the repartition topic of the keyed
// operator with the given uid: "<app id>-<uid>-repartition", with every
// character Kafka does not allow in a topic name replaced by '_'.
func RepartitionTopic(appID, uid string) string {
	return topicSafe(appID + "-" + uid + "-repartition")
}

func topicSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, s)
}

// exchangeConfig is what a source over a repartition topic needs beyond a
// source's configuration.
type exchangeConfig struct {
	tasks int  // upstream tasks a reader waits for
	ends  bool // the job's input is bounded: a partition with no owner here ends at once
}

// setupExchanges creates the repartition topics of the job (or checks
// those that exist) and fills in the exchanges.
func (r *groupRunner) setupExchanges(ctx context.Context) error {
	if len(r.job.Exchanges) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(r.client.kgoOpts()...)
	if err != nil {
		return fmt.Errorf("kafka: app id %q: %w", r.job.AppID, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, x := range r.job.Exchanges {
		ups := x.Upstreams
		if len(ups) == 0 {
			ups = []any{x.Upstream}
		}
		// The upstream tasks are the partitions of every sender's source
		// topics (a join's two inputs: both sides'). N is
		// RepartitionPartitions if a sender's source sets it (they must
		// agree), by default the largest sender's partition count.
		var tasks, n, def int
		for _, up := range ups {
			if ux, ok := up.(*group.Exchange); ok {
				// A chain of KeyBys: the sender is behind the keyed
				// operator of ux, whose tasks are its topic's partitions
				// (the exchanges come in topological order: ux is set up).
				if ux.Topic == "" || ux.Partitions <= 0 {
					return fmt.Errorf("kafka: app id %q: the KeyBy into %q follows keyed operator %q, whose repartition topic is not set up", r.job.AppID, x.UID, ux.UID)
				}
				tasks += ux.Partitions
				def = max(def, ux.Partitions)
				continue
			}
			gs, ok := unwrap(up).(groupSource)
			if !ok {
				return fmt.Errorf("kafka: app id %q: the KeyBy into %q follows source %T, not a Kafka source", r.job.AppID, x.UID, up)
			}
			ts := gs.groupTopics()
			var k int
			err := retry(ctx, r.client.retryTimeout, "list the partitions of "+fmt.Sprint(ts), func() error {
				d, err := adm.ListTopics(ctx, ts...)
				if err != nil {
					return err
				}
				k = 0
				for _, t := range ts {
					td, ok := d[t]
					if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
						return fmt.Errorf("%w %q (brokers %v)", ErrUnknownTopic, t, r.client.brokers)
					}
					if td.Err != nil {
						return td.Err
					}
					k += len(td.Partitions)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("kafka: app id %q: %w", r.job.AppID, err)
			}
			tasks += k
			def = max(def, k)
			if rp := gs.groupConfig().repartitionPartitions; rp > 0 {
				if n > 0 && rp != n {
					return fmt.Errorf("kafka: app id %q: the sources into %q set RepartitionPartitions %d and %d: its repartition topic has one number of partitions", r.job.AppID, x.UID, n, rp)
				}
				n = rp
			}
		}
		if n <= 0 {
			n = def
		}
		if n > x.MaxParallelism {
			// More partitions than key groups would leave some empty.
			n = x.MaxParallelism
		}
		topic := RepartitionTopic(r.job.AppID, x.UID)
		if err := createRepartition(ctx, adm, topic, n); err != nil {
			return fmt.Errorf("kafka: app id %q: repartition topic %q: %w", r.job.AppID, topic, err)
		}
		x.Topic, x.Partitions, x.Tasks = topic, n, tasks
		src := &source[group.ExchangeRecord]{topics: []string{topic}, decode: decodeExchange}
		src.cfg = sourceConfig{client: *r.client, start: Earliest(), readCommitted: true,
			exchange: &exchangeConfig{tasks: tasks, ends: r.bounded}}
		x.Source = src
		r.rtopics = append(r.rtopics, topic)
		r.log.Info("group: repartition topic", "topic", topic, "partitions", n, "upstream-tasks", tasks)
	}
	return nil
}

// createRepartition creates topic with n partitions, or checks that the
// one that exists (an earlier run, another process) has n.
func createRepartition(ctx context.Context, adm *kadm.Client, topic string, n int) error {
	resp, err := adm.CreateTopic(ctx, int32(n), -1, nil, topic)
	if err == nil && resp.Err == nil {
		return nil
	}
	if err == nil {
		err = resp.Err
	}
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create with %d partitions: %w", n, err)
	}
	d, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return err
	}
	td, ok := d[topic]
	if !ok || td.Err != nil {
		return fmt.Errorf("exists but cannot be described: %v", td.Err)
	}
	if got := len(td.Partitions); got != n {
		return fmt.Errorf("has %d partitions, the job wants %d (RepartitionPartitions on the upstream source; changing it needs a new app id, as the key groups of each partition would change)", got, n)
	}
	return nil
}

func decodeExchange(r *kgo.Record) (group.ExchangeRecord, error) {
	return group.ExchangeRecord{Value: r.Value, TS: r.Timestamp.UnixMilli(), Partition: r.Partition, Offset: r.Offset}, nil
}

// exchangePartitioner partitions the records of repartition topics by
// their Partition field (the writer chose it by key group) and every other
// record as the client would by default (the sinks' records: by key).
type exchangePartitioner struct {
	manual map[string]bool
	def    kgo.Partitioner
}

func (p exchangePartitioner) ForTopic(t string) kgo.TopicPartitioner {
	if p.manual[t] {
		return kgo.ManualPartitioner().ForTopic(t)
	}
	return p.def.ForTopic(t)
}

func (r *groupRunner) partitioner() kgo.Opt {
	m := map[string]bool{}
	for _, t := range r.rtopics {
		m[t] = true
	}
	for _, op := range r.job.Keyed {
		m[ChangelogTopic(r.job.AppID, op.UID)] = true
	}
	// franz-go's default partitioner.
	return kgo.RecordPartitioner(exchangePartitioner{manual: m, def: kgo.UniformBytesPartitioner(64<<10, true, true, nil)})
}

// exchangeWriter is group.ExchangeWriter for one writer subtask of a local
// run.
type exchangeWriter struct {
	lr      *localRun
	topic   string
	n       int32
	pool    sync.Pool
	promise func(*kgo.Record, error)
	ended   map[string]bool // upstream tasks whose +inf was written
}

func openExchange(ctx context.Context, topic string) (group.ExchangeWriter, error) {
	lr := runFrom(ctx)
	if lr == nil {
		return nil, errors.New("kafka: a repartition topic outside a group-mode run")
	}
	var n int
	for _, x := range lr.r.job.Exchanges {
		if x.Topic == topic {
			n = x.Partitions
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("kafka: repartition topic %q is not one of the job's", topic)
	}
	w := &exchangeWriter{lr: lr, topic: topic, n: int32(n), ended: map[string]bool{}}
	w.pool.New = func() any { return new(kgo.Record) }
	w.promise = func(rec *kgo.Record, err error) {
		if err != nil {
			lr.fail(fmt.Errorf("kafka: produce to repartition topic %q partition %d: %w", rec.Topic, rec.Partition, err))
		}
		w.pool.Put(rec)
	}
	return w, nil
}

func (w *exchangeWriter) produce(partition int32, value []byte, ts int64, task string) error {
	if err := w.lr.failed(); err != nil {
		return err
	}
	if task == "" && w.lr.committing.Load() {
		return fmt.Errorf("kafka: repartition topic %q: internal error: a record written while the group's transaction commits", w.topic)
	}
	rec := w.pool.Get().(*kgo.Record)
	*rec = kgo.Record{Key: rec.Key[:0], Value: append(rec.Value[:0], value...), Headers: rec.Headers[:0],
		Topic: w.topic, Partition: partition}
	if ts != math.MinInt64 {
		rec.Timestamp = time.UnixMilli(ts)
	}
	if task != "" {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: markerHeader, Value: []byte(task)})
	}
	// The runner ends the transaction, after the local job may have
	// ended: records must not fail because the job's context did.
	w.lr.r.cl.Produce(context.Background(), rec, w.promise)
	return nil
}

// Write implements group.ExchangeWriter.
func (w *exchangeWriter) Write(partition int32, value []byte, ts int64) error {
	if partition < 0 || partition >= w.n {
		return fmt.Errorf("kafka: repartition topic %q: partition %d of %d", w.topic, partition, w.n)
	}
	return w.produce(partition, value, ts, "")
}

// Watermark implements group.ExchangeWriter. A split of no partition (a
// source with none here) is no upstream task.
func (w *exchangeWriter) Watermark(task string, wm int64) error {
	if strings.HasSuffix(task, "/-1") {
		return nil
	}
	if w.ended[task] {
		return nil // +inf was written: nothing follows
	}
	w.lr.txnMu.RLock()
	defer w.lr.txnMu.RUnlock()
	v := binary.BigEndian.AppendUint64(nil, uint64(wm))
	for p := range w.n {
		if err := w.produce(p, v, math.MinInt64, task); err != nil {
			return err
		}
	}
	if wm == math.MaxInt64 {
		w.ended[task] = true
	}
	return nil
}

// wmTracker is the watermark of one repartition partition: the latest
// watermark of each upstream task, and their minimum once every expected
// task has been seen.
type wmTracker struct {
	tasks int
	seen  map[string]int64
	wm    int64
}

func newTracker(tasks int, meta string) *wmTracker {
	t := &wmTracker{tasks: tasks, seen: map[string]int64{}, wm: math.MinInt64}
	t.restore(meta)
	t.recompute()
	return t
}

// observe takes a marker; it says whether the watermark advanced.
func (t *wmTracker) observe(task string, wm int64) bool {
	if old, ok := t.seen[task]; !ok || wm > old {
		t.seen[task] = wm
	}
	return t.recompute()
}

func (t *wmTracker) recompute() bool {
	if len(t.seen) < t.tasks || len(t.seen) == 0 {
		return false
	}
	m := int64(math.MaxInt64)
	for _, w := range t.seen {
		m = min(m, w)
	}
	if m > t.wm {
		t.wm = m
		return true
	}
	return false
}

// metaPrefix starts the offset metadata of a repartition partition.
const metaPrefix = "weir-wm1:"

// encode is the tracker as offset metadata: "weir-wm1:" and
// task=watermark pairs, comma separated, sorted by task.
func (t *wmTracker) encode() string {
	keys := make([]string, 0, len(t.seen))
	for k := range t.seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(metaPrefix)
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(t.seen[k], 10))
	}
	return b.String()
}

// restore reads what encode wrote; anything else (no commit yet, another
// tool's metadata) leaves the tracker empty: it waits for the markers.
func (t *wmTracker) restore(meta string) {
	rest, ok := strings.CutPrefix(meta, metaPrefix)
	rest, _, _ = strings.Cut(rest, clEndSep) // the changelog's end, not a task
	if !ok || rest == "" {
		return
	}
	for _, kv := range strings.Split(rest, ",") {
		i := strings.LastIndexByte(kv, '=')
		if i < 0 {
			continue
		}
		w, err := strconv.ParseInt(kv[i+1:], 10, 64)
		if err != nil {
			continue
		}
		t.seen[kv[:i]] = w
	}
}

// marker reads a watermark marker record: its task and watermark, ok
// false for a data record.
func marker(rec *kgo.Record) (task string, wm int64, ok bool, err error) {
	for _, h := range rec.Headers {
		if h.Key == markerHeader {
			if len(rec.Value) != 8 {
				return "", 0, true, fmt.Errorf("malformed watermark marker (%d bytes, want 8)", len(rec.Value))
			}
			return string(h.Value), int64(binary.BigEndian.Uint64(rec.Value)), true, nil
		}
	}
	return "", 0, false, nil
}

// rtopic says whether p is a partition of a repartition topic.
func (r *groupRunner) rtopic(p tp) bool { return slices.Contains(r.rtopics, p.topic) }

// exchangesDone says, for a bounded job whose input is committed to its
// end, whether the repartition topics are done too: every partition's
// reader committed with every upstream task at +inf (the offset
// metadata). Its offset alone cannot say it: the transaction marker after
// the last record is past any reader's position.
func (r *groupRunner) exchangesDone(resp kadm.OffsetResponses) bool {
	for _, x := range r.job.Exchanges {
		for p := range int32(x.Partitions) {
			o, ok := resp.Lookup(x.Topic, p)
			if !ok || o.Err != nil || newTracker(x.Tasks, o.Metadata).wm != math.MaxInt64 {
				return false
			}
		}
	}
	return true
}
