package broker

import (
	"context"
	"errors"
	"fmt"
	"github.com/google/uuid"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "github.com/weirstream/weir/connector/log"
)

// This file is the consumer group coordinator of the broker: Kafka's
// classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup),
// the offset APIs (OffsetCommit, OffsetFetch, OffsetDelete) and the group
// admin APIs (DescribeGroups, ListGroups, DeleteGroups), with the
// semantics of Kafka's GroupCoordinator, so that Java, librdkafka and
// franz-go consumers work unchanged. The rebalance state machine is in
// group_rebalance.go, the offset APIs and the __consumer_offsets records
// in group_offsets.go, the admin APIs in group_admin.go.
//
// All state is guarded by one mutex. JoinGroup and SyncGroup park the
// request on a waiter (a buffered channel) and wait for it outside the
// mutex. The coordinator has no timers and never reads the wall clock:
// requests take the time from groupConfig.Now, and tick expires sessions
// and completes rebalances whose deadline passed.
//
// Committed offsets and each group's metadata (generation, protocol,
// leader, members and their assignments) are records of the wlog topic
// __consumer_offsets in the broker's directory, in Kafka's own key and
// value formats, appended with an fsync before the response and replayed
// at open.

// groupConfig configures the coordinator.
type groupConfig struct {
	// DataDir is the broker's log directory: committed offsets are kept
	// durably in the wlog topic "__consumer_offsets" in it (created if
	// missing: 1 partition, Compact: true), appended with SyncEveryBatch
	// before the response, and replayed at open (the latest record per key
	// wins; a tombstone deletes).
	DataDir string
	// Now is the coordinator's clock.
	Now func() time.Time
	// Logger receives the coordinator's log lines (slog.Default() if nil).
	Logger *slog.Logger
	// InitialRebalanceDelay is Kafka's group.initial.rebalance.delay.ms:
	// how long the first rebalance of an Empty group waits for more
	// members; 0 means no delay.
	InitialRebalanceDelay time.Duration
	// MinSessionTimeout and MaxSessionTimeout are Kafka's
	// group.min.session.timeout.ms and group.max.session.timeout.ms
	// (6s and 30m when zero).
	MinSessionTimeout, MaxSessionTimeout time.Duration
}

// committedOffset is an offset committed for a partition, as a committed
// transaction hands it to commitOffsets.
type committedOffset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    *string
}

// Limits and defaults of the coordinator, Kafka's unless said otherwise.
const (
	// groupOffsetsTopic is the wlog topic that holds committed offsets and
	// group metadata.
	groupOffsetsTopic = "__consumer_offsets"
	// groupDefaultMinSession and groupDefaultMaxSession are the defaults of
	// group.min.session.timeout.ms and group.max.session.timeout.ms.
	groupDefaultMinSession = 6 * time.Second
	groupDefaultMaxSession = 30 * time.Minute
	// groupNewMemberJoinTimeout bounds how long a new member may wait in
	// JoinGroup before it is dropped (it may have gone away meanwhile).
	groupNewMemberJoinTimeout = 5 * time.Minute
	// groupMaxMetadataBytes is offset.metadata.max.bytes.
	groupMaxMetadataBytes = 4096
	// groupReplayBatch is how many records open reads at a time.
	groupReplayBatch = 1024
)

// groups is the group coordinator. Its methods are safe for concurrent
// use.
type groups struct {
	cfg groupConfig
	// pendingTxn, set by the broker, returns the partitions of group whose
	// offsets an open transaction has committed (TxnOffsetCommit): an
	// OffsetFetch that requires stable offsets gets UNSTABLE_OFFSET_COMMIT
	// for them (KIP-447). It is called without the coordinator's lock.
	pendingTxn func(group string) map[groupTP]bool
	log        *slog.Logger
	topic      *wlog.Topic
	// done is closed by close: parked JoinGroup and SyncGroup requests
	// return nil.
	done chan struct{}

	mu sync.Mutex
	// w appends to __consumer_offsets; nil after a failed append, until
	// the next append reopens it (a failed writer refuses appends).
	w      *wlog.Writer
	closed bool
	byName map[string]*classicGroup
	// seq numbers members in the order they joined: the leader is chosen
	// and members are listed in that order.
	seq uint64
}

// openGroups opens the coordinator: it creates __consumer_offsets in
// cfg.DataDir if missing, takes its writer and replays it.
func openGroups(cfg groupConfig) (*groups, error) {
	if cfg.Now == nil {
		return nil, errors.New("broker: group coordinator: no clock (groupConfig.Now)")
	}
	if cfg.DataDir == "" {
		return nil, errors.New("broker: group coordinator: no data directory (groupConfig.DataDir)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MinSessionTimeout <= 0 {
		cfg.MinSessionTimeout = groupDefaultMinSession
	}
	if cfg.MaxSessionTimeout <= 0 {
		cfg.MaxSessionTimeout = groupDefaultMaxSession
	}
	if cfg.MaxSessionTimeout < cfg.MinSessionTimeout {
		return nil, fmt.Errorf("broker: group coordinator: max session timeout %v is below the min %v", cfg.MaxSessionTimeout, cfg.MinSessionTimeout)
	}
	if cfg.InitialRebalanceDelay < 0 {
		cfg.InitialRebalanceDelay = 0
	}
	t, err := wlog.OpenTopic(cfg.DataDir, groupOffsetsTopic)
	if errors.Is(err, wlog.ErrNoTopic) {
		t, err = wlog.CreateTopic(cfg.DataDir, groupOffsetsTopic, wlog.TopicConfig{Partitions: 1, Compact: true})
		if errors.Is(err, wlog.ErrTopicExists) {
			t, err = wlog.OpenTopic(cfg.DataDir, groupOffsetsTopic)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("broker: group coordinator: open topic %s in %s: %w", groupOffsetsTopic, cfg.DataDir, err)
	}
	g := &groups{
		cfg:    cfg,
		log:    cfg.Logger.With("component", "group-coordinator"),
		topic:  t,
		done:   make(chan struct{}),
		byName: make(map[string]*classicGroup),
	}
	// The writer first: it takes the partition's lock (one coordinator per
	// directory) and truncates a torn tail before the replay reads it.
	if err := g.openWriter(); err != nil {
		return nil, err
	}
	if err := g.replay(); err != nil {
		g.w.Close()
		return nil, err
	}
	if st, err := g.w.Clean(cfg.Now()); err != nil {
		g.log.Warn("broker: group coordinator: compacting __consumer_offsets failed", "dir", cfg.DataDir, "err", err)
	} else if st.CompactedSegments > 0 || st.DeletedSegments > 0 {
		g.log.Info("broker: group coordinator: compacted __consumer_offsets", "segments_compacted", st.CompactedSegments,
			"segments_deleted", st.DeletedSegments, "records_removed", st.RemovedRecords)
	}
	return g, nil
}

// openWriter opens the writer of __consumer_offsets.
func (g *groups) openWriter() error {
	w, err := g.topic.OpenWriter(0, wlog.WithSync(wlog.SyncEveryBatch()), wlog.WithLogger(g.cfg.Logger), wlog.WithClock(g.cfg.Now))
	if err != nil {
		return fmt.Errorf("broker: group coordinator: open writer of %s in %s: %w", groupOffsetsTopic, g.cfg.DataDir, err)
	}
	g.w = w
	return nil
}

// close closes the coordinator: parked JoinGroup and SyncGroup requests
// return nil, later requests get COORDINATOR_NOT_AVAILABLE, and the
// writer of __consumer_offsets is closed.
func (g *groups) close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	close(g.done)
	w := g.w
	g.w = nil
	g.mu.Unlock()
	if w == nil {
		return nil
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("broker: group coordinator: close writer of %s in %s: %w", groupOffsetsTopic, g.cfg.DataDir, err)
	}
	return nil
}

// appendLocked appends recs to __consumer_offsets as one batch, fsynced.
// g.mu must be held, so that the log's order of records is the order of
// the changes in memory.
func (g *groups) appendLocked(recs []wlog.Record) error {
	if len(recs) == 0 {
		return nil
	}
	if g.w == nil {
		if g.closed {
			return errors.New("broker: group coordinator: closed")
		}
		if err := g.openWriter(); err != nil {
			return err
		}
	}
	if _, err := g.w.Append(recs); err != nil {
		// The writer refuses appends after a failed write: reopen it (which
		// recovers the tail) at the next append.
		g.w.Close()
		g.w = nil
		return fmt.Errorf("broker: group coordinator: append %d records to %s in %s: %w", len(recs), groupOffsetsTopic, g.cfg.DataDir, err)
	}
	return nil
}

// groupClientKey is the context key of a groupClient.
type groupClientKey struct{}

// groupClient identifies the connection a request came on: Kafka shows
// the client id and host of each member in DescribeGroups, and member
// ids start with the client id.
type groupClient struct {
	id, host string
}

// withGroupClient returns ctx carrying the client id (of the request
// header) and the host of the connection, for handle.
func withGroupClient(ctx context.Context, clientID, host string) context.Context {
	return context.WithValue(ctx, groupClientKey{}, groupClient{id: clientID, host: host})
}

// groupClientFrom returns the client withGroupClient put in ctx (empty if
// none).
func groupClientFrom(ctx context.Context) groupClient {
	c, _ := ctx.Value(groupClientKey{}).(groupClient)
	return c
}

// groupNewMemberID returns a new member id, Kafka's way: the instance id
// (static members) or the client id, '-' and a random UUID.
func groupNewMemberID(clientID string, instanceID *string) string {
	prefix := clientID
	if instanceID != nil {
		prefix = *instanceID
	}
	return prefix + "-" + uuid.NewString()
}

// handle serves one request whose key is 8 OffsetCommit, 9 OffsetFetch,
// 11 JoinGroup, 12 Heartbeat, 13 LeaveGroup, 14 SyncGroup, 15
// DescribeGroups, 16 ListGroups, 42 DeleteGroups or 47 OffsetDelete, at
// the version set on req; the response is kmsg's response kind for req,
// of the same version. JoinGroup and SyncGroup may block until the
// rebalance gives their answer; if ctx is done first (the connection
// closed) or the coordinator closes, handle returns nil. Other keys get
// nil and a log line. The client id and host shown for members come from
// ctx (withGroupClient).
func (g *groups) handle(ctx context.Context, req kmsg.Request) kmsg.Response {
	if req == nil {
		g.log.Warn("broker: group coordinator: nil request")
		return nil
	}
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		return g.handleJoin(ctx, r)
	case *kmsg.SyncGroupRequest:
		return g.handleSync(ctx, r)
	case *kmsg.HeartbeatRequest:
		return g.handleHeartbeat(r)
	case *kmsg.LeaveGroupRequest:
		return g.handleLeave(r)
	case *kmsg.OffsetCommitRequest:
		return g.handleOffsetCommit(r)
	case *kmsg.OffsetFetchRequest:
		return g.handleOffsetFetch(r)
	case *kmsg.OffsetDeleteRequest:
		return g.handleOffsetDelete(r)
	case *kmsg.DescribeGroupsRequest:
		return g.handleDescribe(r)
	case *kmsg.ListGroupsRequest:
		return g.handleList(r)
	case *kmsg.DeleteGroupsRequest:
		return g.handleDelete(r)
	}
	g.log.Warn("broker: group coordinator: request it does not serve", "key", req.Key(), "api", kmsg.NameForKey(req.Key()), "version", req.GetVersion())
	return nil
}

// wait waits for the answer to a parked JoinGroup or SyncGroup: nil if
// ctx is done or the coordinator closes first.
func (g *groups) wait(ctx context.Context, w *groupWaiter) kmsg.Response {
	select {
	case r := <-w.ch:
		return r
	case <-ctx.Done():
		return nil
	case <-g.done:
		// An answer given just before closing is still an answer.
		select {
		case r := <-w.ch:
			return r
		default:
			return nil
		}
	}
}

// tick expires what is due at now: members whose session timed out,
// member ids handed out by MEMBER_ID_REQUIRED and never used, join phases
// whose rebalance timeout or initial delay passed, and members that did
// not send SyncGroup within the rebalance timeout. The server calls it
// every 100 ms or so with cfg.Now().
func (g *groups) tick(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	for _, cg := range g.byName {
		g.tickGroupLocked(cg, now)
	}
}

// validateMember checks, for a transactional offset commit (KIP-447),
// that memberID (with instanceID for a static member) is a member of
// group at generation: it returns 0 or the Kafka error code
// (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID,
// REBALANCE_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE). memberID "" with
// generation -1 (and no instance id) asks for no member check: 0.
func (g *groups) validateMember(group, memberID string, instanceID *string, generation int32) int16 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return kerr.CoordinatorNotAvailable.Code
	}
	if memberID == "" && generation < 0 && instanceID == nil {
		return 0
	}
	return g.validateCommitLocked(g.byName[group], memberID, instanceID, generation, true)
}

// commitOffsets commits offs for group durably, with the records an
// OffsetCommit writes, for a committed transaction; the group is created
// if it does not exist.
func (g *groups) commitOffsets(group string, offs []committedOffset) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return fmt.Errorf("broker: group coordinator: commit offsets of group %q: closed", group)
	}
	if len(offs) == 0 {
		return nil
	}
	now := g.cfg.Now()
	recs := make([]wlog.Record, 0, len(offs))
	vals := make([]groupOffset, 0, len(offs))
	for _, o := range offs {
		v := groupOffset{offset: o.Offset, leaderEpoch: o.LeaderEpoch, commitMs: now.UnixMilli()}
		if o.Metadata != nil {
			v.metadata = *o.Metadata
		}
		vals = append(vals, v)
		recs = append(recs, groupOffsetRecord(group, o.Topic, o.Partition, v, now))
	}
	if err := g.appendLocked(recs); err != nil {
		return fmt.Errorf("broker: group coordinator: commit offsets of group %q: %w", group, err)
	}
	cg := g.getOrCreateLocked(group, now)
	for i, o := range offs {
		cg.offsets[groupTP{o.Topic, o.Partition}] = vals[i]
	}
	return nil
}
