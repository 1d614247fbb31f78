package broker

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "github.com/weirstream/weir/connector/log"
)

// groupTP is a topic partition whose offset a group committed.
type groupTP struct {
	topic     string
	partition int32
}

// groupOffset is a committed offset.
type groupOffset struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitMs    int64 // when it was committed, ms since the epoch
}

// The records of __consumer_offsets are Kafka's: the key starts with a
// big-endian int16 version, 0 or 1 for an offset commit
// (kmsg.OffsetCommitKey: group, topic, partition; the value a
// kmsg.OffsetCommitValue), 2 for a group's metadata (kmsg.GroupMetadataKey:
// the group; the value a kmsg.GroupMetadataValue: protocol type,
// generation, protocol, leader and the members with their subscription
// and assignment). A nil value is a tombstone.
const (
	groupOffsetKeyVersion   = 1
	groupOffsetValueVersion = 3
	groupMetaKeyVersion     = 2
	groupMetaValueVersion   = 3
)

// groupOffsetKey returns the key of the offset of group for topic and
// partition.
func groupOffsetKey(group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: groupOffsetKeyVersion, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

// groupOffsetRecord returns the record of a committed offset.
func groupOffsetRecord(group, topic string, partition int32, o groupOffset, now time.Time) wlog.Record {
	v := kmsg.NewOffsetCommitValue()
	v.Version = groupOffsetValueVersion
	v.Offset = o.offset
	v.LeaderEpoch = o.leaderEpoch
	v.Metadata = o.metadata
	v.CommitTimestamp = o.commitMs
	return wlog.Record{Timestamp: now.UnixMilli(), Key: groupOffsetKey(group, topic, partition), Value: v.AppendTo(nil)}
}

// groupOffsetTombstone returns the record that deletes a committed offset.
func groupOffsetTombstone(group, topic string, partition int32, now time.Time) wlog.Record {
	return wlog.Record{Timestamp: now.UnixMilli(), Key: groupOffsetKey(group, topic, partition)}
}

// groupMetaKey returns the key of the metadata of group.
func groupMetaKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: groupMetaKeyVersion, Group: group}
	return k.AppendTo(nil)
}

// metadataRecords returns the record of the group's metadata (in a
// one-record slice, for appendLocked): its generation and, unless it is
// Empty, its protocol, leader and members with their assignments.
func (cg *classicGroup) metadataRecords(now time.Time) []wlog.Record {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupMetaValueVersion
	v.ProtocolType = cg.protocolType
	v.Generation = cg.generation
	v.CurrentStateTimestamp = now.UnixMilli()
	if len(cg.members) > 0 {
		v.Protocol = kmsg.StringPtr(cg.protocol)
		v.Leader = kmsg.StringPtr(cg.leader)
		for _, m := range cg.sortedMembers() {
			vm := kmsg.NewGroupMetadataValueMember()
			vm.MemberID = m.id
			vm.InstanceID = m.instanceID
			vm.ClientID = m.clientID
			vm.ClientHost = m.clientHost
			vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout.Milliseconds())
			vm.SessionTimeoutMillis = int32(m.sessionTimeout.Milliseconds())
			vm.Subscription = m.metadataFor(cg.protocol)
			vm.Assignment = m.assignment
			v.Members = append(v.Members, vm)
		}
	}
	return []wlog.Record{{Timestamp: now.UnixMilli(), Key: groupMetaKey(cg.name), Value: v.AppendTo(nil)}}
}

// replay reads __consumer_offsets from its start and rebuilds the groups:
// their committed offsets, and from their last metadata record their
// generation and (a group that had members) their members, leader and
// assignments, so that the members carry on where they were; each member
// gets a full session from now to heartbeat again.
func (g *groups) replay() error {
	r, err := g.topic.OpenReader(0, wlog.Earliest())
	if err != nil {
		return fmt.Errorf("broker: group coordinator: read %s in %s: %w", groupOffsetsTopic, g.cfg.DataDir, err)
	}
	defer r.Close()
	metas := make(map[string]*kmsg.GroupMetadataValue)
	var nrecs, skipped int
	for {
		recs, err := r.Read(context.Background(), groupReplayBatch)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("broker: group coordinator: read %s in %s at offset %d: %w", groupOffsetsTopic, g.cfg.DataDir, r.Next(), err)
		}
		for i := range recs {
			nrecs++
			if err := g.replayRecord(&recs[i], metas); err != nil {
				skipped++
				g.log.Warn("broker: group coordinator: skipping a record of __consumer_offsets", "offset", recs[i].Offset, "err", err)
			}
		}
	}
	now := g.cfg.Now()
	for name, v := range metas {
		g.getOrCreateLocked(name, now).restore(g, v, now)
	}
	var noffsets int
	for name, cg := range g.byName {
		if len(cg.offsets) == 0 && metas[name] == nil {
			delete(g.byName, name) // every record of it was deleted
			continue
		}
		noffsets += len(cg.offsets)
	}
	g.log.Info("broker: group coordinator: loaded __consumer_offsets", "dir", g.cfg.DataDir, "records", nrecs,
		"skipped", skipped, "groups", len(g.byName), "offsets", noffsets)
	return nil
}

// replayRecord applies one record of __consumer_offsets: offsets to the
// groups, group metadata to metas (the latest per group).
func (g *groups) replayRecord(rec *wlog.Record, metas map[string]*kmsg.GroupMetadataValue) error {
	if len(rec.Key) < 2 {
		return fmt.Errorf("key of %d bytes", len(rec.Key))
	}
	switch v := int16(binary.BigEndian.Uint16(rec.Key)); v {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(rec.Key); err != nil {
			return fmt.Errorf("offset commit key: %w", err)
		}
		tp := groupTP{k.Topic, k.Partition}
		if rec.Value == nil {
			if cg := g.byName[k.Group]; cg != nil {
				delete(cg.offsets, tp)
			}
			return nil
		}
		var val kmsg.OffsetCommitValue
		if err := val.ReadFrom(rec.Value); err != nil {
			return fmt.Errorf("offset commit value of group %q, %s/%d: %w", k.Group, k.Topic, k.Partition, err)
		}
		o := groupOffset{offset: val.Offset, leaderEpoch: val.LeaderEpoch, metadata: val.Metadata, commitMs: val.CommitTimestamp}
		if val.Version < 3 {
			o.leaderEpoch = -1
		}
		g.getOrCreateLocked(k.Group, time.UnixMilli(rec.Timestamp)).offsets[tp] = o
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(rec.Key); err != nil {
			return fmt.Errorf("group metadata key: %w", err)
		}
		if rec.Value == nil {
			delete(metas, k.Group)
			return nil
		}
		val := new(kmsg.GroupMetadataValue)
		if err := val.ReadFrom(rec.Value); err != nil {
			return fmt.Errorf("group metadata value of group %q: %w", k.Group, err)
		}
		metas[k.Group] = val
	default:
		return fmt.Errorf("key version %d", v)
	}
	return nil
}

// restore sets the group from its last metadata record: Empty at its
// generation, or Stable with its members, each of which has a session
// from now.
func (cg *classicGroup) restore(g *groups, v *kmsg.GroupMetadataValue, now time.Time) {
	cg.generation = v.Generation
	cg.protocolType = v.ProtocolType
	cg.state, cg.prev, cg.stateSince = groupEmpty, groupEmpty, now
	if len(v.Members) == 0 || v.Protocol == nil {
		return
	}
	cg.protocol = *v.Protocol
	for _, vm := range v.Members {
		g.seq++
		m := &classicMember{
			id:               vm.MemberID,
			clientID:         vm.ClientID,
			clientHost:       vm.ClientHost,
			rebalanceTimeout: groupMillis(vm.RebalanceTimeoutMillis),
			sessionTimeout:   groupMillis(vm.SessionTimeoutMillis),
			protocolType:     v.ProtocolType,
			protocols:        []kmsg.JoinGroupRequestProtocol{{Name: cg.protocol, Metadata: bytes.Clone(vm.Subscription)}},
			assignment:       bytes.Clone(vm.Assignment),
			seq:              g.seq,
		}
		if m.rebalanceTimeout <= 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		m.expires = now.Add(m.sessionTimeout)
		if vm.InstanceID != nil {
			m.instanceID = kmsg.StringPtr(*vm.InstanceID)
			cg.static[*vm.InstanceID] = m.id
		}
		cg.members[m.id] = m
		cg.addSupport(m, 1)
	}
	if v.Leader != nil && cg.members[*v.Leader] != nil {
		cg.leader = *v.Leader
	} else {
		cg.leader = cg.sortedMembers()[0].id
	}
	cg.state = groupStable
}

// validateCommitLocked checks an offset commit of memberID at generation
// to cg (nil if the group does not exist), as Kafka's classic group does:
// generation < 0 commits to an Empty or unknown group without a member
// check; otherwise the member must be known at the group's generation,
// and not in CompletingRebalance. A transactional commit (txn) without a
// member id and generation is not tied to the group's members.
func (g *groups) validateCommitLocked(cg *classicGroup, memberID string, instanceID *string, generation int32, txn bool) int16 {
	if cg == nil {
		if generation < 0 {
			return 0
		}
		return kerr.IllegalGeneration.Code
	}
	if generation < 0 && cg.state == groupEmpty {
		return 0
	}
	if generation >= 0 || memberID != "" || instanceID != nil {
		if code := cg.validateMember(memberID, instanceID); code != 0 {
			return code
		}
		if generation != cg.generation {
			return kerr.IllegalGeneration.Code
		}
	} else if !txn && cg.state != groupEmpty {
		return kerr.UnknownMemberID.Code
	}
	if cg.state == groupCompletingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// handleOffsetCommit serves OffsetCommit: the offsets are stored durably
// before the response.
func (g *groups) handleOffsetCommit(req *kmsg.OffsetCommitRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	resp.Topics = make([]kmsg.OffsetCommitResponseTopic, 0, len(req.Topics))
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		rt.TopicID = t.TopicID
		rt.Partitions = make([]kmsg.OffsetCommitResponseTopicPartition, 0, len(t.Partitions))
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	setAll := func(code int16) kmsg.Response {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode = code
			}
		}
		return resp
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return setAll(kerr.CoordinatorNotAvailable.Code)
	}
	now := g.cfg.Now()
	cg := g.byName[req.Group]
	if code := g.validateCommitLocked(cg, req.MemberID, req.InstanceID, req.Generation, false); code != 0 {
		return setAll(code)
	}
	type commit struct {
		tp     groupTP
		o      groupOffset
		ti, pi int
	}
	var commits []commit
	var recs []wlog.Record
	for ti, t := range req.Topics {
		for pi, p := range t.Partitions {
			rp := &resp.Topics[ti].Partitions[pi]
			switch {
			case t.Topic == "" && req.Version >= 10:
				rp.ErrorCode = kerr.UnknownTopicID.Code // no topic ids here: the server offers v9 at most
			case t.Topic == "" || p.Partition < 0:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.Metadata != nil && len(*p.Metadata) > groupMaxMetadataBytes:
				rp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
			default:
				o := groupOffset{offset: p.Offset, leaderEpoch: p.LeaderEpoch, commitMs: now.UnixMilli()}
				if p.Metadata != nil {
					o.metadata = *p.Metadata
				}
				commits = append(commits, commit{groupTP{t.Topic, p.Partition}, o, ti, pi})
				recs = append(recs, groupOffsetRecord(req.Group, t.Topic, p.Partition, o, now))
			}
		}
	}
	if len(commits) == 0 {
		return resp
	}
	if err := g.appendLocked(recs); err != nil {
		g.log.Error("broker: group coordinator: storing committed offsets failed", "group", req.Group, "err", err)
		for _, c := range commits {
			resp.Topics[c.ti].Partitions[c.pi].ErrorCode = kerr.CoordinatorNotAvailable.Code
		}
		return resp
	}
	if cg == nil {
		cg = g.getOrCreateLocked(req.Group, now)
	}
	for _, c := range commits {
		cg.offsets[c.tp] = c.o
	}
	if m := cg.members[req.MemberID]; m != nil && req.Generation >= 0 {
		m.expires = now.Add(m.sessionTimeout) // a commit shows the member is alive
	}
	return resp
}

// groupFetchTopic is a topic whose offsets OffsetFetch asks for.
type groupFetchTopic struct {
	topic      string
	id         [16]byte
	partitions []int32
}

// fetchLocked returns the committed offsets of group for topics, or all
// of them if all is set. A partition without a committed offset (or a
// group that does not exist) has offset -1, as in Kafka.
func (g *groups) fetchLocked(group string, all bool, topics []groupFetchTopic, version int16) kmsg.OffsetFetchResponseGroup {
	rg := kmsg.NewOffsetFetchResponseGroup()
	rg.Group = group
	cg := g.byName[group]
	if all {
		if cg == nil {
			return rg
		}
		tps := make([]groupTP, 0, len(cg.offsets))
		for tp := range cg.offsets {
			tps = append(tps, tp)
		}
		slices.SortFunc(tps, func(a, b groupTP) int {
			return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
		})
		for _, tp := range tps {
			if len(rg.Topics) == 0 || rg.Topics[len(rg.Topics)-1].Topic != tp.topic {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic = tp.topic
				rg.Topics = append(rg.Topics, rt)
			}
			rt := &rg.Topics[len(rg.Topics)-1]
			o := cg.offsets[tp]
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition = tp.partition
			rp.Offset = o.offset
			rp.LeaderEpoch = o.leaderEpoch
			rp.Metadata = kmsg.StringPtr(o.metadata)
			rt.Partitions = append(rt.Partitions, rp)
		}
		return rg
	}
	rg.Topics = make([]kmsg.OffsetFetchResponseGroupTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.topic
		rt.TopicID = t.id
		rt.Partitions = make([]kmsg.OffsetFetchResponseGroupTopicPartition, 0, len(t.partitions))
		for _, p := range t.partitions {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition = p
			rp.Offset = -1
			rp.LeaderEpoch = -1
			rp.Metadata = kmsg.StringPtr("")
			if t.topic == "" && version >= 10 {
				rp.ErrorCode = kerr.UnknownTopicID.Code
			} else if cg != nil {
				if o, ok := cg.offsets[groupTP{t.topic, p}]; ok {
					rp.Offset = o.offset
					rp.LeaderEpoch = o.leaderEpoch
					rp.Metadata = kmsg.StringPtr(o.metadata)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		rg.Topics = append(rg.Topics, rt)
	}
	return rg
}

// handleOffsetFetch serves OffsetFetch: one group before v8, several from
// v8 on. With RequireStable, a partition whose offset an open transaction
// has committed gets UNSTABLE_OFFSET_COMMIT (the client retries).
func (g *groups) handleOffsetFetch(req *kmsg.OffsetFetchRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	var unstable map[string]map[groupTP]bool
	if req.RequireStable && g.pendingTxn != nil {
		unstable = map[string]map[groupTP]bool{}
		if req.Version <= 7 {
			unstable[req.Group] = g.pendingTxn(req.Group)
		}
		for _, rq := range req.Groups {
			unstable[rq.Group] = g.pendingTxn(rq.Group)
		}
		defer markUnstable(resp, req.Group, unstable)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if req.Version <= 7 {
		topics := make([]groupFetchTopic, 0, len(req.Topics))
		for _, t := range req.Topics {
			topics = append(topics, groupFetchTopic{topic: t.Topic, partitions: t.Partitions})
		}
		if g.closed {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			for _, t := range req.Topics { // v0 and v1 have only per-partition errors
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition = p
					rp.Offset = -1
					rp.ErrorCode = kerr.CoordinatorNotAvailable.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		}
		rg := g.fetchLocked(req.Group, req.Topics == nil, topics, req.Version)
		resp.ErrorCode = rg.ErrorCode
		resp.Topics = make([]kmsg.OffsetFetchResponseTopic, 0, len(rg.Topics))
		for _, t := range rg.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			rt.Partitions = make([]kmsg.OffsetFetchResponseTopicPartition, 0, len(t.Partitions))
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition = p.Partition
				rp.Offset = p.Offset
				rp.LeaderEpoch = p.LeaderEpoch
				rp.Metadata = p.Metadata
				rp.ErrorCode = p.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	resp.Groups = make([]kmsg.OffsetFetchResponseGroup, 0, len(req.Groups))
	for _, rq := range req.Groups {
		if g.closed {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = rq.Group
			rg.ErrorCode = kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		topics := make([]groupFetchTopic, 0, len(rq.Topics))
		for _, t := range rq.Topics {
			topics = append(topics, groupFetchTopic{topic: t.Topic, id: t.TopicID, partitions: t.Partitions})
		}
		resp.Groups = append(resp.Groups, g.fetchLocked(rq.Group, rq.Topics == nil, topics, req.Version))
	}
	return resp
}

// markUnstable sets UNSTABLE_OFFSET_COMMIT on the partitions of resp that
// unstable lists for their group.
func markUnstable(resp *kmsg.OffsetFetchResponse, group string, unstable map[string]map[groupTP]bool) {
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			if unstable[group][groupTP{t.Topic, t.Partitions[j].Partition}] && t.Partitions[j].ErrorCode == 0 {
				t.Partitions[j].ErrorCode = kerr.UnstableOffsetCommit.Code
			}
		}
	}
	for k := range resp.Groups {
		rg := &resp.Groups[k]
		for i := range rg.Topics {
			t := &rg.Topics[i]
			for j := range t.Partitions {
				if unstable[rg.Group][groupTP{t.Topic, t.Partitions[j].Partition}] && t.Partitions[j].ErrorCode == 0 {
					t.Partitions[j].ErrorCode = kerr.UnstableOffsetCommit.Code
				}
			}
		}
	}
}

// subscribedTopics returns the topics the members of a "consumer" group
// subscribe to, from their metadata of the selected protocol; nil if they
// are unknown (another protocol type, or metadata that does not decode).
func (cg *classicGroup) subscribedTopics() map[string]bool {
	if cg.protocolType != "consumer" || cg.protocol == "" {
		return nil
	}
	topics := make(map[string]bool)
	for _, m := range cg.members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadataFor(cg.protocol)); err != nil {
			return nil
		}
		for _, t := range md.Topics {
			topics[t] = true
		}
	}
	return topics
}

// handleOffsetDelete serves OffsetDelete: the offsets of an Empty group,
// or of topics a consumer group does not subscribe to, are deleted.
func (g *groups) handleOffsetDelete(req *kmsg.OffsetDeleteRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	cg := g.byName[req.Group]
	if cg == nil {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	var subscribed map[string]bool
	if cg.state != groupEmpty {
		if cg.protocolType != "consumer" {
			resp.ErrorCode = kerr.NonEmptyGroup.Code
			return resp
		}
		subscribed = cg.subscribedTopics()
	}
	now := g.cfg.Now()
	var recs []wlog.Record
	gone := make(map[groupTP]bool)
	resp.Topics = make([]kmsg.OffsetDeleteResponseTopic, 0, len(req.Topics))
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			tp := groupTP{t.Topic, p.Partition}
			if subscribed[t.Topic] {
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			} else if _, ok := cg.offsets[tp]; ok && !gone[tp] {
				recs = append(recs, groupOffsetTombstone(cg.name, tp.topic, tp.partition, now))
				gone[tp] = true
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if err := g.appendLocked(recs); err != nil {
		g.log.Error("broker: group coordinator: deleting offsets failed", "group", cg.name, "err", err)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		resp.Topics = nil
		return resp
	}
	for tp := range gone {
		delete(cg.offsets, tp)
	}
	return resp
}
