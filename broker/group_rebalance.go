package broker

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupState is the state of a classic group, as Kafka names them.
type groupState int8

// The states of a classic group. A group is Empty without members;
// PreparingRebalance while it waits for its members to (re)join;
// CompletingRebalance while it waits for the leader's assignment;
// Stable once the assignment is handed out; Dead once deleted.
const (
	groupEmpty groupState = iota
	groupPreparingRebalance
	groupCompletingRebalance
	groupStable
	groupDead
)

// String returns Kafka's name of the state.
func (s groupState) String() string {
	switch s {
	case groupEmpty:
		return "Empty"
	case groupPreparingRebalance:
		return "PreparingRebalance"
	case groupCompletingRebalance:
		return "CompletingRebalance"
	case groupStable:
		return "Stable"
	case groupDead:
		return "Dead"
	}
	return "Unknown"
}

// groupWaiter is a parked JoinGroup or SyncGroup: the answer goes to ch
// (buffered, so answering never blocks), built for the request's version.
type groupWaiter struct {
	version int16
	ch      chan kmsg.Response
}

// newGroupWaiter returns a waiter for a request of version v.
func newGroupWaiter(v int16) *groupWaiter {
	return &groupWaiter{version: v, ch: make(chan kmsg.Response, 1)}
}

// classicMember is a member of a classic group.
type classicMember struct {
	id                   string
	instanceID           *string // group.instance.id of a static member
	clientID, clientHost string
	rebalanceTimeout     time.Duration
	sessionTimeout       time.Duration
	protocolType         string
	// protocols are the member's protocols in its order of preference,
	// names unique.
	protocols  []kmsg.JoinGroupRequestProtocol
	assignment []byte
	// join and sync are the member's parked JoinGroup and SyncGroup.
	join, sync *groupWaiter
	// isNew: the member has not completed a join yet; it may be dropped
	// while it waits in JoinGroup (groupNewMemberJoinTimeout).
	isNew bool
	// expires is when the member's session ends without a heartbeat;
	// zero when no expiry is scheduled.
	expires time.Time
	seq     uint64 // join order
}

// classicGroup is a consumer group of the classic protocol, and the
// offsets committed for it.
type classicGroup struct {
	name       string
	state      groupState
	prev       groupState // the state before the current one
	stateSince time.Time
	// protocolType is the type of the group's protocols ("consumer" for
	// consumers); protocol the protocol selected for the generation
	// ("" when none).
	protocolType string
	protocol     string
	generation   int32
	leader       string
	members      map[string]*classicMember
	// pending holds the member ids handed out with MEMBER_ID_REQUIRED,
	// until when the member may join with them.
	pending map[string]time.Time
	// static maps the instance ids of static members to their member ids.
	static map[string]string
	// support counts, per protocol name, the members that support it.
	support map[string]int
	// awaitingJoin counts the members with a parked JoinGroup.
	awaitingJoin int
	// joinAt is when the join phase (PreparingRebalance) completes at the
	// latest; zero when not scheduled.
	joinAt time.Time
	// initial: joinAt is the initial rebalance delay of a group that was
	// Empty, extended while new members join (initialDelay is the current
	// delay, initialRemaining what is left of the rebalance timeout).
	initial                        bool
	newMemberAdded                 bool
	initialDelay, initialRemaining time.Duration
	// pendingSync holds the members that got the join response of the
	// generation but have not sent SyncGroup; they are removed at syncAt.
	pendingSync map[string]struct{}
	syncAt      time.Time
	offsets     map[groupTP]groupOffset
}

// groupMillis converts milliseconds of the protocol to a duration.
func groupMillis(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

// newClassicGroup returns an Empty group.
func newClassicGroup(name string, now time.Time) *classicGroup {
	return &classicGroup{
		name:        name,
		stateSince:  now,
		members:     make(map[string]*classicMember),
		pending:     make(map[string]time.Time),
		static:      make(map[string]string),
		support:     make(map[string]int),
		pendingSync: make(map[string]struct{}),
		offsets:     make(map[groupTP]groupOffset),
	}
}

// getOrCreateLocked returns the group name, created Empty if missing.
func (g *groups) getOrCreateLocked(name string, now time.Time) *classicGroup {
	cg := g.byName[name]
	if cg == nil {
		cg = newClassicGroup(name, now)
		g.byName[name] = cg
	}
	return cg
}

// transition moves the group to state s.
func (cg *classicGroup) transition(s groupState, now time.Time) {
	cg.prev, cg.state, cg.stateSince = cg.state, s, now
}

// sortedMembers returns the members in join order.
func (cg *classicGroup) sortedMembers() []*classicMember {
	ms := make([]*classicMember, 0, len(cg.members))
	for _, m := range cg.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *classicMember) int { return cmp.Compare(a.seq, b.seq) })
	return ms
}

// metadataFor returns the member's metadata of protocol.
func (m *classicMember) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// matches says whether protocols are the member's, in the same order
// with the same metadata.
func (m *classicMember) matches(protocols []kmsg.JoinGroupRequestProtocol) bool {
	ps := groupCopyProtocols(protocols)
	if len(ps) != len(m.protocols) {
		return false
	}
	for i := range ps {
		if ps[i].Name != m.protocols[i].Name || !bytes.Equal(ps[i].Metadata, m.protocols[i].Metadata) {
			return false
		}
	}
	return true
}

// satisfiedHeartbeat says whether the member may outlive its session
// deadline: a member waiting in JoinGroup or SyncGroup needs no
// heartbeat, unless it is new (it may have gone away while it waited).
func (m *classicMember) satisfiedHeartbeat() bool {
	return !m.isNew && (m.join != nil || m.sync != nil)
}

// groupCopyProtocols copies the protocols of a request, keeping the first
// of duplicate names, so that nothing aliases the request's buffers.
func groupCopyProtocols(ps []kmsg.JoinGroupRequestProtocol) []kmsg.JoinGroupRequestProtocol {
	out := make([]kmsg.JoinGroupRequestProtocol, 0, len(ps))
	for _, p := range ps {
		if slices.ContainsFunc(out, func(q kmsg.JoinGroupRequestProtocol) bool { return q.Name == p.Name }) {
			continue
		}
		out = append(out, kmsg.JoinGroupRequestProtocol{Name: p.Name, Metadata: bytes.Clone(p.Metadata)})
	}
	return out
}

// addSupport counts the member's protocols in (d 1) or out (d -1) of the
// group's support.
func (cg *classicGroup) addSupport(m *classicMember, d int) {
	for _, p := range m.protocols {
		cg.support[p.Name] += d
		if cg.support[p.Name] <= 0 {
			delete(cg.support, p.Name)
		}
	}
}

// supportsProtocols says whether a member of protocolType with protocols
// may join: the first member needs a type and a protocol; later ones the
// group's type and a protocol that every member supports.
func (cg *classicGroup) supportsProtocols(protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	if len(cg.members) == 0 {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != cg.protocolType {
		return false
	}
	for _, p := range protocols {
		if cg.support[p.Name] == len(cg.members) {
			return true
		}
	}
	return false
}

// selectProtocol returns the protocol of the next generation: of the
// protocols every member supports, the one most members prefer (each
// votes for its first such protocol; ties go to the smaller name).
func (cg *classicGroup) selectProtocol() string {
	votes := make(map[string]int)
	for _, m := range cg.members {
		for _, p := range m.protocols {
			if cg.support[p.Name] == len(cg.members) {
				votes[p.Name]++
				break
			}
		}
	}
	best, bestVotes := "", 0
	for name, v := range votes {
		if v > bestVotes || v == bestVotes && name < best {
			best, bestVotes = name, v
		}
	}
	return best
}

// rebalanceTimeout is the largest rebalance timeout of the members.
func (cg *classicGroup) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range cg.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// allJoined says whether every member waits in JoinGroup and no member
// id handed out by MEMBER_ID_REQUIRED is outstanding.
func (cg *classicGroup) allJoined() bool {
	return cg.awaitingJoin == len(cg.members) && len(cg.pending) == 0
}

// validateMember checks that memberID is a member (for a static member,
// the one instanceID maps to): 0, UNKNOWN_MEMBER_ID or
// FENCED_INSTANCE_ID.
func (cg *classicGroup) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		id, ok := cg.static[*instanceID]
		switch {
		case !ok:
			return kerr.UnknownMemberID.Code
		case id != memberID:
			return kerr.FencedInstanceID.Code
		}
	}
	if cg.members[memberID] == nil {
		return kerr.UnknownMemberID.Code
	}
	return 0
}

// add adds m to the group, parked in JoinGroup on w if w is not nil. The
// first member sets the protocol type and becomes the leader.
func (cg *classicGroup) add(m *classicMember, w *groupWaiter) {
	if len(cg.members) == 0 {
		cg.protocolType = m.protocolType
	}
	cg.members[m.id] = m
	cg.addSupport(m, 1)
	if cg.leader == "" {
		cg.leader = m.id
	}
	if m.instanceID != nil {
		cg.static[*m.instanceID] = m.id
	}
	if w != nil {
		m.join = w
		cg.awaitingJoin++
	}
	delete(cg.pending, m.id)
}

// remove removes member id (or the pending member id) from the group. A
// parked JoinGroup or SyncGroup of the member gets UNKNOWN_MEMBER_ID. If
// it led the group, the next member in join order leads.
func (cg *classicGroup) remove(id string) {
	if m := cg.members[id]; m != nil {
		if m.join != nil {
			cg.replyJoinError(m, kerr.UnknownMemberID.Code, "")
		}
		if m.sync != nil {
			cg.replySyncError(m, kerr.UnknownMemberID.Code)
		}
		cg.addSupport(m, -1)
		delete(cg.members, id)
		if m.instanceID != nil && cg.static[*m.instanceID] == id {
			delete(cg.static, *m.instanceID)
		}
	}
	if cg.leader == id {
		cg.leader = ""
		if ms := cg.sortedMembers(); len(ms) > 0 {
			cg.leader = ms[0].id
		}
	}
	delete(cg.pending, id)
	delete(cg.pendingSync, id)
}

// updateMember replaces the member's protocols and timeouts with those of
// req and parks it in JoinGroup on w. A JoinGroup the member still had
// parked gets REBALANCE_IN_PROGRESS (its client sent a new one).
func (cg *classicGroup) updateMember(m *classicMember, req *kmsg.JoinGroupRequest, w *groupWaiter) {
	cg.addSupport(m, -1)
	m.protocols = groupCopyProtocols(req.Protocols)
	cg.addSupport(m, 1)
	m.protocolType = req.ProtocolType
	m.sessionTimeout = groupMillis(req.SessionTimeoutMillis)
	m.rebalanceTimeout = groupMillis(req.RebalanceTimeoutMillis)
	if req.RebalanceTimeoutMillis <= 0 { // v0 has none: the session timeout
		m.rebalanceTimeout = m.sessionTimeout
	}
	if m.join != nil {
		cg.replyJoinError(m, kerr.RebalanceInProgress.Code, m.id)
	}
	m.join = w
	cg.awaitingJoin++
}

// joinResponse is the successful JoinGroup answer to m for the current
// generation, of version v; the leader gets the members and their
// metadata.
func (cg *classicGroup) joinResponse(m *classicMember, v int16) *kmsg.JoinGroupResponse {
	resp := &kmsg.JoinGroupResponse{Version: v}
	resp.Default()
	resp.Generation = cg.generation
	resp.ProtocolType = kmsg.StringPtr(cg.protocolType)
	resp.Protocol = kmsg.StringPtr(cg.protocol)
	resp.LeaderID = cg.leader
	resp.MemberID = m.id
	if m.id == cg.leader {
		ms := cg.sortedMembers()
		resp.Members = make([]kmsg.JoinGroupResponseMember, 0, len(ms))
		for _, o := range ms {
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID = o.id
			jm.InstanceID = o.instanceID
			jm.ProtocolMetadata = o.metadataFor(cg.protocol)
			resp.Members = append(resp.Members, jm)
		}
	}
	return resp
}

// replyJoin answers the member's parked JoinGroup with resp.
func (cg *classicGroup) replyJoin(m *classicMember, resp *kmsg.JoinGroupResponse) {
	w := m.join
	m.join = nil
	cg.awaitingJoin--
	w.ch <- resp
}

// replyJoinError answers the member's parked JoinGroup with error code
// and member id memberID.
func (cg *classicGroup) replyJoinError(m *classicMember, code int16, memberID string) {
	resp := &kmsg.JoinGroupResponse{Version: m.join.version}
	resp.Default()
	resp.ErrorCode = code
	resp.MemberID = memberID
	cg.replyJoin(m, resp)
}

// replySync answers the member's parked SyncGroup with its assignment.
func (cg *classicGroup) replySync(m *classicMember) {
	resp := &kmsg.SyncGroupResponse{Version: m.sync.version}
	resp.Default()
	resp.ProtocolType = kmsg.StringPtr(cg.protocolType)
	resp.Protocol = kmsg.StringPtr(cg.protocol)
	resp.MemberAssignment = m.assignment
	w := m.sync
	m.sync = nil
	w.ch <- resp
}

// replySyncError answers the member's parked SyncGroup with error code.
func (cg *classicGroup) replySyncError(m *classicMember, code int16) {
	resp := &kmsg.SyncGroupResponse{Version: m.sync.version}
	resp.Default()
	resp.ErrorCode = code
	w := m.sync
	m.sync = nil
	w.ch <- resp
}

// resetAssignments drops the members' assignments and answers parked
// SyncGroups with error code (a rebalance began before the leader's
// assignment, or storing it failed).
func (cg *classicGroup) resetAssignments(code int16, now time.Time) {
	for _, m := range cg.members {
		m.assignment = nil
		if m.sync != nil {
			cg.replySyncError(m, code)
			m.expires = now.Add(m.sessionTimeout)
		}
	}
}

// clearPendingSync forgets the members that still owe a SyncGroup.
func (cg *classicGroup) clearPendingSync() {
	clear(cg.pendingSync)
	cg.syncAt = time.Time{}
}

// handleJoin serves JoinGroup: it parks the request until the join phase
// completes, except when the answer is known at once.
func (g *groups) handleJoin(ctx context.Context, req *kmsg.JoinGroupRequest) kmsg.Response {
	cl := groupClientFrom(ctx)
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		resp.MemberID = req.MemberID
		return resp
	}
	resp, w := g.joinLocked(req, cl, g.cfg.Now())
	g.mu.Unlock()
	if w == nil {
		return resp
	}
	return g.wait(ctx, w)
}

// joinLocked serves a JoinGroup: either an answer now, or a waiter that
// gets it when the join phase completes.
func (g *groups) joinLocked(req *kmsg.JoinGroupRequest, cl groupClient, now time.Time) (kmsg.Response, *groupWaiter) {
	fail := func(code int16, memberID string) (kmsg.Response, *groupWaiter) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = code
		resp.MemberID = memberID
		return resp, nil
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID.Code, req.MemberID)
	}
	if st := groupMillis(req.SessionTimeoutMillis); st < g.cfg.MinSessionTimeout || st > g.cfg.MaxSessionTimeout {
		return fail(kerr.InvalidSessionTimeout.Code, req.MemberID)
	}
	cg := g.byName[req.Group]
	if cg == nil {
		if req.MemberID != "" {
			return fail(kerr.UnknownMemberID.Code, req.MemberID)
		}
		if req.ProtocolType == "" || len(req.Protocols) == 0 {
			return fail(kerr.InconsistentGroupProtocol.Code, req.MemberID)
		}
		cg = g.getOrCreateLocked(req.Group, now)
	}
	if !cg.supportsProtocols(req.ProtocolType, req.Protocols) {
		return fail(kerr.InconsistentGroupProtocol.Code, req.MemberID)
	}
	if req.MemberID == "" {
		id := groupNewMemberID(cl.id, req.InstanceID)
		if req.InstanceID != nil {
			if old, ok := cg.static[*req.InstanceID]; ok {
				return nil, g.replaceStaticLocked(cg, old, id, req, cl, now)
			}
			return nil, g.addMemberLocked(cg, id, req, cl, now)
		}
		if req.Version >= 4 {
			// The member must come back with this id (KIP-394), so that a
			// client that timed out and retries does not leave members
			// behind.
			cg.pending[id] = now.Add(groupMillis(req.SessionTimeoutMillis))
			resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
			resp.ErrorCode = kerr.MemberIDRequired.Code
			resp.MemberID = id
			return resp, nil
		}
		return nil, g.addMemberLocked(cg, id, req, cl, now)
	}
	if _, ok := cg.pending[req.MemberID]; ok {
		if req.InstanceID != nil {
			// Pending ids are for dynamic members: start over.
			delete(cg.pending, req.MemberID)
			return fail(kerr.UnknownMemberID.Code, req.MemberID)
		}
		return nil, g.addMemberLocked(cg, req.MemberID, req, cl, now)
	}
	if code := cg.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return fail(code, req.MemberID)
	}
	m := cg.members[req.MemberID]
	switch cg.state {
	case groupPreparingRebalance:
		return nil, g.updateMemberLocked(cg, m, req, now, "member joins during PreparingRebalance")
	case groupCompletingRebalance:
		if m.matches(req.Protocols) {
			// The member missed the join response: answer it again.
			return cg.joinResponse(m, req.Version), nil
		}
		return nil, g.updateMemberLocked(cg, m, req, now, "member changed its metadata during CompletingRebalance")
	case groupStable:
		if m.id == cg.leader {
			// The leader rejoins to rebalance for what the members'
			// metadata does not show (such as new partitions).
			return nil, g.updateMemberLocked(cg, m, req, now, "the leader rejoins")
		}
		if !m.matches(req.Protocols) {
			return nil, g.updateMemberLocked(cg, m, req, now, "member changed its metadata")
		}
		resp := cg.joinResponse(m, req.Version)
		resp.Members = nil
		return resp, nil
	}
	return fail(kerr.UnknownMemberID.Code, req.MemberID)
}

// newMember returns a member from its JoinGroup.
func (g *groups) newMember(id string, req *kmsg.JoinGroupRequest, cl groupClient) *classicMember {
	g.seq++
	m := &classicMember{
		id:               id,
		clientID:         cl.id,
		clientHost:       cl.host,
		protocolType:     req.ProtocolType,
		protocols:        groupCopyProtocols(req.Protocols),
		sessionTimeout:   groupMillis(req.SessionTimeoutMillis),
		rebalanceTimeout: groupMillis(req.RebalanceTimeoutMillis),
		seq:              g.seq,
	}
	if req.RebalanceTimeoutMillis <= 0 {
		m.rebalanceTimeout = m.sessionTimeout
	}
	if req.InstanceID != nil {
		m.instanceID = kmsg.StringPtr(*req.InstanceID)
	}
	return m
}

// addMemberLocked adds a new member, parked in JoinGroup, and starts or
// advances the rebalance.
func (g *groups) addMemberLocked(cg *classicGroup, id string, req *kmsg.JoinGroupRequest, cl groupClient, now time.Time) *groupWaiter {
	m := g.newMember(id, req, cl)
	m.isNew = true
	if cg.state == groupPreparingRebalance && cg.prev == groupEmpty {
		cg.newMemberAdded = true // extends the initial delay
	}
	w := newGroupWaiter(req.Version)
	cg.add(m, w)
	m.expires = now.Add(groupNewMemberJoinTimeout)
	g.maybePrepareRebalanceLocked(cg, now, "new member joins")
	return w
}

// updateMemberLocked parks a known member in JoinGroup with its new
// metadata and starts or advances the rebalance.
func (g *groups) updateMemberLocked(cg *classicGroup, m *classicMember, req *kmsg.JoinGroupRequest, now time.Time, reason string) *groupWaiter {
	w := newGroupWaiter(req.Version)
	cg.updateMember(m, req, w)
	g.maybePrepareRebalanceLocked(cg, now, reason)
	return w
}

// replaceStaticLocked serves the JoinGroup, without a member id, of a
// static member whose instance id has member oldID (KIP-345): the new
// member newID takes its place and assignment, and oldID is fenced (its
// parked requests and later ones get FENCED_INSTANCE_ID). A Stable group
// does not rebalance unless the selected protocol would change.
func (g *groups) replaceStaticLocked(cg *classicGroup, oldID, newID string, req *kmsg.JoinGroupRequest, cl groupClient, now time.Time) *groupWaiter {
	old := cg.members[oldID]
	if old == nil { // not expected: the mapping outlived its member
		delete(cg.static, *req.InstanceID)
		return g.addMemberLocked(cg, newID, req, cl, now)
	}
	if old.join != nil {
		cg.replyJoinError(old, kerr.FencedInstanceID.Code, oldID)
	}
	if old.sync != nil {
		cg.replySyncError(old, kerr.FencedInstanceID.Code)
	}
	m := &classicMember{
		id:               newID,
		instanceID:       old.instanceID,
		clientID:         cl.id,
		clientHost:       cl.host,
		rebalanceTimeout: old.rebalanceTimeout,
		sessionTimeout:   old.sessionTimeout,
		protocolType:     old.protocolType,
		protocols:        old.protocols,
		assignment:       old.assignment,
		seq:              old.seq,
	}
	delete(cg.members, oldID)
	cg.members[newID] = m
	cg.static[*req.InstanceID] = newID
	if cg.leader == oldID {
		cg.leader = newID
	}
	if _, ok := cg.pendingSync[oldID]; ok {
		delete(cg.pendingSync, oldID)
		cg.pendingSync[newID] = struct{}{}
	}
	w := newGroupWaiter(req.Version)
	cg.updateMember(m, req, w)
	m.expires = now.Add(m.sessionTimeout)
	g.log.Info("broker: group coordinator: static member replaced", "group", cg.name, "instance_id", *req.InstanceID,
		"old_member", oldID, "member", newID, "state", cg.state.String())
	switch cg.state {
	case groupStable:
		if cg.selectProtocol() == cg.protocol {
			if err := g.appendLocked(cg.metadataRecords(now)); err != nil {
				g.log.Error("broker: group coordinator: storing the replaced static member failed", "group", cg.name, "err", err)
			}
			resp := cg.joinResponse(m, w.version)
			// The leader keeps the assignment it made (KIP-814).
			resp.SkipAssignment = m.id == cg.leader
			cg.replyJoin(m, resp)
			return w
		}
		g.maybePrepareRebalanceLocked(cg, now, "static member rejoins with a change of protocol")
	case groupCompletingRebalance:
		// The leader may have assigned to the old member id: rebalance.
		g.prepareRebalanceLocked(cg, now, "static member rejoins during CompletingRebalance")
	case groupPreparingRebalance:
		g.maybeCompleteJoinPhaseLocked(cg, now)
	default:
		g.maybePrepareRebalanceLocked(cg, now, "static member rejoins")
	}
	return w
}

// maybePrepareRebalanceLocked starts a rebalance if the group can start
// one, or else completes the join phase if every member has joined.
func (g *groups) maybePrepareRebalanceLocked(cg *classicGroup, now time.Time, reason string) {
	switch cg.state {
	case groupEmpty, groupStable, groupCompletingRebalance:
		g.prepareRebalanceLocked(cg, now, reason)
	default:
		g.maybeCompleteJoinPhaseLocked(cg, now)
	}
}

// prepareRebalanceLocked moves the group to PreparingRebalance: parked
// SyncGroups get REBALANCE_IN_PROGRESS, and the join phase ends when every
// member has joined or at the rebalance timeout; for a group that was
// Empty, after the initial rebalance delay.
func (g *groups) prepareRebalanceLocked(cg *classicGroup, now time.Time, reason string) {
	if cg.state == groupCompletingRebalance {
		cg.resetAssignments(kerr.RebalanceInProgress.Code, now)
	}
	cg.clearPendingSync()
	initial := cg.state == groupEmpty
	cg.transition(groupPreparingRebalance, now)
	g.log.Info("broker: group coordinator: preparing to rebalance group", "group", cg.name,
		"generation", cg.generation, "members", len(cg.members), "reason", reason)
	if initial && g.cfg.InitialRebalanceDelay > 0 {
		cg.initial = true
		cg.newMemberAdded = false
		cg.initialDelay = g.cfg.InitialRebalanceDelay
		cg.initialRemaining = max(cg.rebalanceTimeout()-cg.initialDelay, 0)
		cg.joinAt = now.Add(cg.initialDelay)
		return
	}
	cg.initial = false
	if cg.allJoined() {
		g.completeJoinLocked(cg, now)
		return
	}
	cg.joinAt = now.Add(cg.rebalanceTimeout())
}

// maybeCompleteJoinPhaseLocked completes the join phase if every member
// has joined (not before the initial delay is over).
func (g *groups) maybeCompleteJoinPhaseLocked(cg *classicGroup, now time.Time) {
	if cg.state == groupPreparingRebalance && cg.allJoined() && !cg.initial {
		g.completeJoinLocked(cg, now)
	}
}

// initialDelayPassedLocked ends an initial rebalance delay: it waits
// another delay if new members joined meanwhile and the rebalance timeout
// leaves time, and completes the join phase otherwise.
func (g *groups) initialDelayPassedLocked(cg *classicGroup, now time.Time) {
	if cg.newMemberAdded && cg.initialRemaining > 0 {
		cg.newMemberAdded = false
		delay := min(g.cfg.InitialRebalanceDelay, cg.initialRemaining)
		cg.initialRemaining = max(cg.initialRemaining-cg.initialDelay, 0)
		cg.initialDelay = delay
		cg.joinAt = now.Add(delay)
		return
	}
	g.completeJoinLocked(cg, now)
}

// completeJoinLocked ends the join phase: dynamic members that did not
// rejoin are removed, the generation is incremented, a protocol selected
// and every parked JoinGroup answered (the leader with the members); the
// group waits for the leader's SyncGroup. A group left without members is
// Empty.
func (g *groups) completeJoinLocked(cg *classicGroup, now time.Time) {
	if cg.state != groupPreparingRebalance {
		return
	}
	for _, m := range cg.sortedMembers() {
		if m.join == nil && m.instanceID == nil {
			g.log.Info("broker: group coordinator: removing member that did not rejoin", "group", cg.name, "member", m.id)
			cg.remove(m.id)
		}
	}
	cg.joinAt = time.Time{}
	cg.initial = false
	if len(cg.members) > 0 && !cg.electJoinedLeader() {
		// Only static members that did not rejoin are left: wait for them
		// (their sessions expire meanwhile if they are gone).
		cg.joinAt = now.Add(cg.rebalanceTimeout())
		return
	}
	cg.generation++
	if cg.generation <= 0 {
		cg.generation = 1
	}
	cg.clearPendingSync()
	if len(cg.members) == 0 {
		cg.protocol = ""
		cg.leader = ""
		cg.transition(groupEmpty, now)
		g.log.Info("broker: group coordinator: group is empty", "group", cg.name, "generation", cg.generation)
		if err := g.appendLocked(cg.metadataRecords(now)); err != nil {
			g.log.Error("broker: group coordinator: storing the empty group failed", "group", cg.name, "err", err)
		}
		return
	}
	cg.protocol = cg.selectProtocol()
	cg.transition(groupCompletingRebalance, now)
	g.log.Info("broker: group coordinator: group completed its join phase", "group", cg.name, "generation", cg.generation,
		"members", len(cg.members), "leader", cg.leader, "protocol", cg.protocol)
	for _, m := range cg.sortedMembers() {
		if m.join != nil {
			cg.replyJoin(m, cg.joinResponse(m, m.join.version))
		}
		m.expires = now.Add(m.sessionTimeout)
		m.isNew = false
		cg.pendingSync[m.id] = struct{}{}
	}
	cg.syncAt = now.Add(cg.rebalanceTimeout())
}

// electJoinedLeader makes a member that rejoined the leader if the leader
// did not: false if no member rejoined.
func (cg *classicGroup) electJoinedLeader() bool {
	if l := cg.members[cg.leader]; l != nil && l.join != nil {
		return true
	}
	for _, m := range cg.sortedMembers() {
		if m.join != nil {
			cg.leader = m.id
			return true
		}
	}
	return false
}

// removeMemberAndUpdateLocked removes a member whose session expired and
// rebalances (or completes the join phase if it was the one missing).
func (g *groups) removeMemberAndUpdateLocked(cg *classicGroup, m *classicMember, now time.Time, reason string) {
	cg.remove(m.id)
	switch cg.state {
	case groupStable, groupCompletingRebalance:
		g.maybePrepareRebalanceLocked(cg, now, reason)
	case groupPreparingRebalance:
		if cg.allJoined() {
			g.completeJoinLocked(cg, now)
		}
	}
}

// tickGroupLocked expires what of the group is due at now.
func (g *groups) tickGroupLocked(cg *classicGroup, now time.Time) {
	for id, at := range cg.pending {
		if !now.Before(at) {
			delete(cg.pending, id)
			g.log.Info("broker: group coordinator: member id never used, dropped", "group", cg.name, "member", id)
			g.maybeCompleteJoinPhaseLocked(cg, now)
		}
	}
	var expired []*classicMember
	for _, m := range cg.members {
		if !m.expires.IsZero() && !now.Before(m.expires) {
			expired = append(expired, m)
		}
	}
	slices.SortFunc(expired, func(a, b *classicMember) int { return cmp.Compare(a.seq, b.seq) })
	for _, m := range expired {
		if cg.members[m.id] != m || m.expires.IsZero() || now.Before(m.expires) {
			continue // removed or renewed by an earlier expiry
		}
		if m.satisfiedHeartbeat() {
			m.expires = time.Time{} // set again when its request is answered
			continue
		}
		g.log.Info("broker: group coordinator: member session expired, removing it", "group", cg.name, "member", m.id,
			"generation", cg.generation, "new", m.isNew)
		g.removeMemberAndUpdateLocked(cg, m, now, "member "+m.id+" expired")
	}
	if cg.state == groupPreparingRebalance && !cg.joinAt.IsZero() && !now.Before(cg.joinAt) {
		if cg.initial {
			g.initialDelayPassedLocked(cg, now)
		} else {
			g.completeJoinLocked(cg, now)
		}
	}
	if (cg.state == groupCompletingRebalance || cg.state == groupStable) && !cg.syncAt.IsZero() && !now.Before(cg.syncAt) {
		cg.syncAt = time.Time{}
		if len(cg.pendingSync) > 0 {
			ids := make([]string, 0, len(cg.pendingSync))
			for id := range cg.pendingSync {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			g.log.Info("broker: group coordinator: removing members that did not sync in time", "group", cg.name,
				"generation", cg.generation, "members", ids)
			for _, id := range ids {
				cg.remove(id)
			}
			g.maybePrepareRebalanceLocked(cg, now, "members did not sync in time")
		}
	}
}

// handleSync serves SyncGroup: the leader's request hands out the
// assignment; the others wait for it.
func (g *groups) handleSync(ctx context.Context, req *kmsg.SyncGroupRequest) kmsg.Response {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	resp, w := g.syncLocked(req, g.cfg.Now())
	g.mu.Unlock()
	if w == nil {
		return resp
	}
	return g.wait(ctx, w)
}

// groupProtocolInconsistent says whether a protocol (type or name) of a
// request, if given, differs from the group's, if it has one.
func groupProtocolInconsistent(req *string, cur string) bool {
	return req != nil && cur != "" && *req != cur
}

// syncLocked serves a SyncGroup: either an answer now, or a waiter that
// gets the assignment when the leader sends it.
func (g *groups) syncLocked(req *kmsg.SyncGroupRequest, now time.Time) (kmsg.Response, *groupWaiter) {
	fail := func(code int16) (kmsg.Response, *groupWaiter) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = code
		return resp, nil
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID.Code)
	}
	cg := g.byName[req.Group]
	if cg == nil {
		return fail(kerr.UnknownMemberID.Code)
	}
	if code := cg.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return fail(code)
	}
	if req.Generation != cg.generation {
		return fail(kerr.IllegalGeneration.Code)
	}
	if groupProtocolInconsistent(req.ProtocolType, cg.protocolType) || groupProtocolInconsistent(req.Protocol, cg.protocol) {
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	m := cg.members[req.MemberID]
	switch cg.state {
	case groupPreparingRebalance:
		return fail(kerr.RebalanceInProgress.Code)
	case groupCompletingRebalance:
		if m.sync != nil {
			cg.replySyncError(m, kerr.RebalanceInProgress.Code) // superseded by this one
		}
		w := newGroupWaiter(req.Version)
		m.sync = w
		delete(cg.pendingSync, m.id)
		if m.id == cg.leader {
			g.completeSyncLocked(cg, req.GroupAssignment, now)
		}
		return nil, w
	case groupStable:
		delete(cg.pendingSync, m.id)
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ProtocolType = kmsg.StringPtr(cg.protocolType)
		resp.Protocol = kmsg.StringPtr(cg.protocol)
		resp.MemberAssignment = m.assignment
		return resp, nil
	}
	return fail(kerr.UnknownMemberID.Code)
}

// completeSyncLocked takes the leader's assignment (members it left out
// get an empty one), stores it and hands it to the members waiting in
// SyncGroup: the group is Stable.
func (g *groups) completeSyncLocked(cg *classicGroup, assignments []kmsg.SyncGroupRequestGroupAssignment, now time.Time) {
	for _, m := range cg.members {
		m.assignment = []byte{}
	}
	for _, a := range assignments {
		if m := cg.members[a.MemberID]; m != nil {
			m.assignment = bytes.Clone(a.MemberAssignment)
			if m.assignment == nil {
				m.assignment = []byte{}
			}
		}
	}
	if err := g.appendLocked(cg.metadataRecords(now)); err != nil {
		g.log.Error("broker: group coordinator: storing the group's assignment failed", "group", cg.name, "generation", cg.generation, "err", err)
		cg.resetAssignments(kerr.CoordinatorNotAvailable.Code, now)
		g.maybePrepareRebalanceLocked(cg, now, "storing the assignment failed")
		return
	}
	for _, m := range cg.sortedMembers() {
		if m.sync != nil {
			cg.replySync(m)
			m.expires = now.Add(m.sessionTimeout)
		}
	}
	cg.transition(groupStable, now)
	g.log.Info("broker: group coordinator: group is stable", "group", cg.name, "generation", cg.generation, "members", len(cg.members))
}

// handleHeartbeat serves Heartbeat: it renews the member's session and
// tells it, during a rebalance, to rejoin (REBALANCE_IN_PROGRESS).
func (g *groups) handleHeartbeat(req *kmsg.HeartbeatRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	resp.ErrorCode = g.heartbeatLocked(req, g.cfg.Now())
	return resp
}

// heartbeatLocked serves a Heartbeat and returns its error code.
func (g *groups) heartbeatLocked(req *kmsg.HeartbeatRequest, now time.Time) int16 {
	if req.Group == "" {
		return kerr.InvalidGroupID.Code
	}
	cg := g.byName[req.Group]
	if cg == nil {
		return kerr.UnknownMemberID.Code
	}
	if code := cg.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	if req.Generation != cg.generation {
		return kerr.IllegalGeneration.Code
	}
	m := cg.members[req.MemberID]
	switch cg.state {
	case groupPreparingRebalance:
		m.expires = now.Add(m.sessionTimeout)
		return kerr.RebalanceInProgress.Code
	case groupCompletingRebalance, groupStable:
		// Members heartbeat from the join response on, before they sync.
		m.expires = now.Add(m.sessionTimeout)
		return 0
	}
	return kerr.UnknownMemberID.Code
}

// handleLeave serves LeaveGroup (v3+: a batch of members, by member id or
// by instance id): the members leave and the group rebalances.
func (g *groups) handleLeave(req *kmsg.LeaveGroupRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.closed:
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	case req.Group == "":
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	cg := g.byName[req.Group]
	if cg == nil {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp
	}
	now := g.cfg.Now()
	var left []string
	for _, lm := range leaving {
		r := kmsg.NewLeaveGroupResponseMember()
		r.MemberID = lm.MemberID
		r.InstanceID = lm.InstanceID
		_, pending := cg.pending[lm.MemberID]
		switch {
		case lm.MemberID == "":
			// An admin removes a static member by its instance id.
			id, ok := "", false
			if lm.InstanceID != nil {
				id, ok = cg.static[*lm.InstanceID]
			}
			if !ok {
				r.ErrorCode = kerr.UnknownMemberID.Code
				break
			}
			cg.remove(id)
			left = append(left, id)
		case pending:
			delete(cg.pending, lm.MemberID)
			left = append(left, lm.MemberID)
		default:
			if r.ErrorCode = cg.validateMember(lm.MemberID, lm.InstanceID); r.ErrorCode == 0 {
				cg.remove(lm.MemberID)
				left = append(left, lm.MemberID)
			}
		}
		resp.Members = append(resp.Members, r)
	}
	if len(left) > 0 {
		g.log.Info("broker: group coordinator: members left", "group", cg.name, "members", left, "generation", cg.generation)
		switch cg.state {
		case groupStable, groupCompletingRebalance:
			g.maybePrepareRebalanceLocked(cg, now, "members left")
		case groupPreparingRebalance:
			g.maybeCompleteJoinPhaseLocked(cg, now)
		}
	}
	if req.Version < 3 {
		resp.ErrorCode = resp.Members[0].ErrorCode
		resp.Members = nil
	}
	return resp
}
