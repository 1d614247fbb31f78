package broker

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "github.com/weirstream/weir/connector/log"
)

// Kafka error codes the broker answers with.
const (
	codeNone                      int16 = 0
	codeOffsetOutOfRange          int16 = 1
	codeCorruptMessage            int16 = 2
	codeUnknownTopicOrPartition   int16 = 3
	codeNotLeaderForPartition     int16 = 6
	codeRequestTimedOut           int16 = 7
	codeMessageTooLarge           int16 = 10
	codeInvalidTopic              int16 = 17
	codeRecordListTooLarge        int16 = 18
	codeInvalidRequiredAcks       int16 = 21
	codeIllegalGeneration         int16 = 22
	codeUnsupportedSASLMechanism  int16 = 33
	codeIllegalSASLState          int16 = 34
	codeUnsupportedVersion        int16 = 35
	codeTopicAlreadyExists        int16 = 36
	codeInvalidPartitions         int16 = 37
	codeInvalidReplicationFactor  int16 = 38
	codeInvalidConfig             int16 = 40
	codeInvalidRequest            int16 = 42
	codeUnsupportedForMessageFmt  int16 = 43
	codeOutOfOrderSequence        int16 = 45
	codeDuplicateSequence         int16 = 46
	codeInvalidProducerEpoch      int16 = 47
	codeInvalidTxnState           int16 = 48
	codeInvalidProducerIDMapping  int16 = 49
	codeInvalidTransactionTimeout int16 = 50
	codeConcurrentTransactions    int16 = 51
	codeSASLAuthenticationFailed  int16 = 58
	codeUnknownProducerID         int16 = 59
	codeKafkaStorageError         int16 = 56
	codeInvalidRecord             int16 = 87
	codeProducerFenced            int16 = 90
	codeUnknownServerError        int16 = -1
)

// tp names a partition.
type tp struct {
	topic string
	part  int32
}

// topicSet is the topics the broker has opened, each with its
// partitions' state.
type topicSet struct {
	b  *Broker
	mu sync.Mutex
	m  map[string]*topicState
}

type topicState struct {
	t     *wlog.Topic
	parts []*partition
}

func newTopicSet(b *Broker) *topicSet { return &topicSet{b: b, m: map[string]*topicState{}} }

// get returns the open topic name, opening it if it exists in the
// directory (written there by another weir program, say). It returns nil
// for a topic that does not exist.
func (s *topicSet) get(name string) (*topicState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ts := s.m[name]; ts != nil {
		return ts, nil
	}
	t, err := wlog.OpenTopic(s.b.cfg.DataDir, name)
	if errors.Is(err, wlog.ErrNoTopic) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s.addLocked(t), nil
}

func (s *topicSet) addLocked(t *wlog.Topic) *topicState {
	ts := &topicState{t: t, parts: make([]*partition, t.Config.Partitions)}
	for i := range ts.parts {
		ts.parts[i] = newPartition(s.b, t, i)
	}
	s.m[t.Name] = ts
	return ts
}

// partition returns partition p of topic, or a Kafka error code.
func (s *topicSet) partition(topic string, p int32, autoCreate bool) (*partition, int16) {
	ts, err := s.get(topic)
	if err != nil {
		s.b.log.Error("weir broker: open topic", "topic", topic, "err", err)
		return nil, codeKafkaStorageError
	}
	if ts == nil && autoCreate && s.b.cfg.AutoCreateTopics {
		if code, _ := s.create(topic, wlog.TopicConfig{Partitions: s.b.cfg.DefaultPartitions}, false); code != codeNone && code != codeTopicAlreadyExists {
			return nil, code
		}
		if ts, err = s.get(topic); err != nil {
			return nil, codeKafkaStorageError
		}
	}
	if ts == nil || p < 0 || int(p) >= len(ts.parts) {
		return nil, codeUnknownTopicOrPartition
	}
	return ts.parts[p], codeNone
}

// create creates a topic. It returns a Kafka error code and message.
func (s *topicSet) create(name string, cfg wlog.TopicConfig, validateOnly bool) (int16, string) {
	if name == "" || len(name) > wlog.MaxTopicName || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "-") {
		return codeInvalidTopic, fmt.Sprintf("invalid topic name %q", name)
	}
	if ts, _ := s.get(name); ts != nil {
		return codeTopicAlreadyExists, fmt.Sprintf("topic %q exists", name)
	}
	if validateOnly {
		if cfg.Partitions < 1 || cfg.Partitions > wlog.MaxPartitions {
			return codeInvalidPartitions, fmt.Sprintf("%d partitions: want 1 to %d", cfg.Partitions, wlog.MaxPartitions)
		}
		return codeNone, ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := wlog.CreateTopic(s.b.cfg.DataDir, name, cfg)
	switch {
	case errors.Is(err, wlog.ErrTopicExists):
		return codeTopicAlreadyExists, err.Error()
	case err != nil && (cfg.Partitions < 1 || cfg.Partitions > wlog.MaxPartitions):
		return codeInvalidPartitions, err.Error()
	case err != nil && strings.Contains(err.Error(), "topic name"):
		return codeInvalidTopic, err.Error()
	case err != nil:
		return codeInvalidConfig, err.Error()
	}
	s.addLocked(t)
	s.b.log.Info("weir broker: created topic", "topic", name, "partitions", cfg.Partitions)
	return codeNone, ""
}

// remove deletes a topic: its writers are closed first.
func (s *topicSet) remove(name string) (int16, string) {
	s.mu.Lock()
	ts := s.m[name]
	delete(s.m, name)
	s.mu.Unlock()
	if ts != nil {
		for _, p := range ts.parts {
			p.close()
		}
	}
	err := wlog.DeleteTopic(s.b.cfg.DataDir, name)
	switch {
	case errors.Is(err, wlog.ErrNoTopic):
		return codeUnknownTopicOrPartition, err.Error()
	case err != nil:
		return codeUnknownServerError, err.Error()
	}
	s.b.log.Info("weir broker: deleted topic", "topic", name)
	return codeNone, ""
}

// names lists the topics in the directory.
func (s *topicSet) names() ([]string, error) { return wlog.ListTopics(s.b.cfg.DataDir) }

func (s *topicSet) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first error
	for _, ts := range s.m {
		for _, p := range ts.parts {
			if err := p.close(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// clean applies retention and compaction to the partitions whose writer
// the broker holds.
func (s *topicSet) clean(now time.Time) {
	for _, p := range s.allPartitions() {
		p.clean(now)
	}
}

// allPartitions returns the partitions of the open topics.
func (s *topicSet) allPartitions() []*partition {
	s.mu.Lock()
	defer s.mu.Unlock()
	var parts []*partition
	for _, ts := range s.m {
		parts = append(parts, ts.parts...)
	}
	return parts
}

// releaseIdle closes the writers idle for idleWriter.
func (s *topicSet) releaseIdle(now time.Time) {
	for _, p := range s.allPartitions() {
		p.releaseIdle(now)
	}
}

// isInternal reports the topics Kafka marks internal.
func isInternal(name string) bool {
	return name == "__consumer_offsets" || name == txnTopic
}

func (b *Broker) metadata(r *kmsg.MetadataRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	br := kmsg.NewMetadataResponseBroker()
	br.NodeID, br.Host, br.Port = 0, b.host, b.port
	resp.Brokers = []kmsg.MetadataResponseBroker{br}
	cid := "weir"
	resp.ClusterID = &cid
	resp.ControllerID = 0
	var names []string
	if r.Topics == nil {
		var err error
		if names, err = b.topics.names(); err != nil {
			b.log.Error("weir broker: list topics", "err", err)
		}
	} else {
		for _, t := range r.Topics {
			if t.Topic != nil {
				names = append(names, *t.Topic)
			}
		}
	}
	for _, name := range names {
		mt := kmsg.NewMetadataResponseTopic()
		n := name
		mt.Topic = &n
		mt.IsInternal = isInternal(name)
		ts, err := b.topics.get(name)
		if err == nil && ts == nil && r.Topics != nil && r.AllowAutoTopicCreation && b.cfg.AutoCreateTopics {
			b.topics.create(name, wlog.TopicConfig{Partitions: b.cfg.DefaultPartitions}, false)
			ts, err = b.topics.get(name)
		}
		switch {
		case err != nil:
			mt.ErrorCode = codeKafkaStorageError
		case ts == nil:
			mt.ErrorCode = codeUnknownTopicOrPartition
		default:
			for i := range ts.parts {
				mp := kmsg.NewMetadataResponseTopicPartition()
				mp.Partition, mp.Leader, mp.LeaderEpoch = int32(i), 0, 0
				mp.Replicas, mp.ISR = []int32{0}, []int32{0}
				mt.Partitions = append(mt.Partitions, mp)
			}
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}

// topicConfigFromKafka turns CreateTopics configs into a wlog.TopicConfig.
// Settings that only matter to a replicated cluster are accepted and
// ignored; others the log has no equivalent of are refused.
func topicConfigFromKafka(partitions int, configs map[string]*string) (wlog.TopicConfig, string) {
	cfg := wlog.TopicConfig{Partitions: partitions}
	for k, v := range configs {
		if v == nil {
			continue
		}
		num := func() (int64, bool) { n, err := strconv.ParseInt(*v, 10, 64); return n, err == nil }
		switch k {
		case "cleanup.policy":
			switch *v {
			case "compact":
				cfg.Compact = true
			case "delete":
			default:
				return cfg, fmt.Sprintf("cleanup.policy %q: the log has compact or delete", *v)
			}
		case "retention.ms":
			n, ok := num()
			if !ok {
				return cfg, "retention.ms: not a number"
			}
			if n > 0 {
				cfg.Retention = time.Duration(n) * time.Millisecond
			}
		case "retention.bytes":
			n, ok := num()
			if !ok {
				return cfg, "retention.bytes: not a number"
			}
			if n > 0 {
				cfg.RetentionBytes = n
			}
		case "segment.bytes":
			n, ok := num()
			if !ok {
				return cfg, "segment.bytes: not a number"
			}
			cfg.SegmentBytes = n
		case "delete.retention.ms":
			n, ok := num()
			if !ok {
				return cfg, "delete.retention.ms: not a number"
			}
			cfg.TombstoneRetention = time.Duration(n) * time.Millisecond
		case "min.insync.replicas", "unclean.leader.election.enable", "message.timestamp.type",
			"max.message.bytes", "compression.type", "segment.ms", "flush.messages", "flush.ms":
			// Accepted: one node has no replicas; the log keeps
			// CreateTime and the producer's batches as records.
		default:
			return cfg, fmt.Sprintf("config %q is not supported by weir's log (supported: cleanup.policy, retention.ms, retention.bytes, segment.bytes, delete.retention.ms)", k)
		}
	}
	return cfg, ""
}

func (b *Broker) createTopics(r *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		n := int(t.NumPartitions)
		if n == -1 {
			n = b.cfg.DefaultPartitions
		}
		configs := map[string]*string{}
		for _, c := range t.Configs {
			configs[c.Name] = c.Value
		}
		var msg string
		switch {
		case len(t.ReplicaAssignment) > 0:
			rt.ErrorCode, msg = codeInvalidRequest, "replica assignments are not supported: weir broker is one node"
		case t.ReplicationFactor != -1 && t.ReplicationFactor != 1:
			rt.ErrorCode, msg = codeInvalidReplicationFactor, fmt.Sprintf("replication factor %d: weir broker is one node (use 1 or -1)", t.ReplicationFactor)
		default:
			cfg, bad := topicConfigFromKafka(n, configs)
			if bad != "" {
				rt.ErrorCode, msg = codeInvalidConfig, bad
				break
			}
			rt.ErrorCode, msg = b.topics.create(t.Topic, cfg, r.ValidateOnly)
			if rt.ErrorCode == codeNone {
				rt.NumPartitions, rt.ReplicationFactor = int32(n), 1
				for _, c := range describeTopicConfigs(cfg) {
					rc := kmsg.NewCreateTopicsResponseTopicConfig()
					rc.Name, rc.Value, rc.Source = c.Name, c.Value, int8(c.Source)
					rt.Configs = append(rt.Configs, rc)
				}
			}
		}
		if msg != "" {
			rt.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (b *Broker) deleteTopics(r *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	names := r.TopicNames
	if r.Version >= 6 {
		names = nil
	}
	for _, t := range r.Topics {
		if t.Topic != nil {
			names = append(names, *t.Topic)
		}
	}
	for _, name := range names {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		n := name
		rt.Topic = &n
		var msg string
		if isInternal(name) {
			rt.ErrorCode, msg = codeInvalidTopic, "internal topic"
		} else {
			rt.ErrorCode, msg = b.topics.remove(name)
		}
		if msg != "" {
			rt.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// describeTopicConfigs is the Kafka view of a topic's configuration.
func describeTopicConfigs(cfg wlog.TopicConfig) []kmsg.DescribeConfigsResponseResourceConfig {
	str := func(s string) *string { return &s }
	policy := "delete"
	if cfg.Compact {
		policy = "compact"
	}
	retMs := int64(-1)
	if cfg.Retention > 0 {
		retMs = cfg.Retention.Milliseconds()
	}
	retBytes := int64(-1)
	if cfg.RetentionBytes > 0 {
		retBytes = cfg.RetentionBytes
	}
	seg := cfg.SegmentBytes
	if seg == 0 {
		seg = 64 << 20
	}
	tomb := cfg.TombstoneRetention
	if tomb == 0 {
		tomb = 24 * time.Hour
	}
	mk := func(name, v string) kmsg.DescribeConfigsResponseResourceConfig {
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.Source = name, str(v), 1 // DYNAMIC_TOPIC_CONFIG
		return c
	}
	return []kmsg.DescribeConfigsResponseResourceConfig{
		mk("cleanup.policy", policy),
		mk("retention.ms", strconv.FormatInt(retMs, 10)),
		mk("retention.bytes", strconv.FormatInt(retBytes, 10)),
		mk("segment.bytes", strconv.FormatInt(seg, 10)),
		mk("delete.retention.ms", strconv.FormatInt(tomb.Milliseconds(), 10)),
		mk("message.timestamp.type", "CreateTime"),
		mk("min.insync.replicas", "1"),
	}
}

func (b *Broker) describeConfigs(r *kmsg.DescribeConfigsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, res := range r.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		switch res.ResourceType {
		case 2: // topic
			ts, err := b.topics.get(res.ResourceName)
			switch {
			case err != nil:
				rr.ErrorCode = codeKafkaStorageError
			case ts == nil:
				rr.ErrorCode = codeUnknownTopicOrPartition
			default:
				for _, c := range describeTopicConfigs(ts.t.Config) {
					if res.ConfigNames != nil && !slices.Contains(res.ConfigNames, c.Name) {
						continue
					}
					rr.Configs = append(rr.Configs, c)
				}
			}
		case 4: // broker: nothing to show but that it exists
		default:
			rr.ErrorCode = codeInvalidRequest
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

func (b *Broker) listOffsets(r *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp, rp.Offset = -1, -1
			part, code := b.topics.partition(t.Topic, p.Partition, false)
			if code != codeNone {
				rp.ErrorCode = code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			earliest, next, err := part.offsets()
			if err != nil {
				b.log.Error("weir broker: list offsets", "topic", t.Topic, "partition", p.Partition, "err", err)
				rp.ErrorCode = codeKafkaStorageError
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			switch p.Timestamp {
			case -1: // latest (the log has no uncommitted data: also for read_committed)
				rp.Offset = next
			case -2: // earliest
				rp.Offset = earliest
			case -4, -5: // earliest local / tiered: one tier here
				rp.Offset = earliest
			default:
				if p.Timestamp < 0 {
					rp.ErrorCode = codeInvalidRequest
					break
				}
				off, ts, err := part.offsetForTime(p.Timestamp)
				if err != nil {
					b.log.Error("weir broker: list offsets by time", "topic", t.Topic, "partition", p.Partition, "err", err)
					rp.ErrorCode = codeKafkaStorageError
					break
				}
				rp.Offset, rp.Timestamp = off, ts
			}
			if r.Version == 0 {
				rp.OldStyleOffsets = []int64{rp.Offset}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

var _ = io.EOF
