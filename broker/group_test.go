package broker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The tests drive the coordinator with kmsg requests and a fake clock:
// time moves only by groupHarness.advance, and tick is called by hand.
// JoinGroup and SyncGroup block, so they run in goroutines; the tests wait
// for a request to be parked (a condition on the coordinator's state) or
// for its answer, with a real-time deadline that only bounds a hang.

const (
	testSession   = 10 * time.Second
	testRebalance = 20 * time.Second
	testWait      = 10 * time.Second // real time; only for a hung test
)

// groupTestClock is a fake clock.
type groupTestClock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's time.
func (c *groupTestClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// groupHarness is a coordinator under test, on a directory of its own.
type groupHarness struct {
	t     *testing.T
	dir   string
	clk   *groupTestClock
	delay time.Duration
	g     *groups
}

// newGroupHarness opens a coordinator with the initial rebalance delay
// delay.
func newGroupHarness(t *testing.T, delay time.Duration) *groupHarness {
	t.Helper()
	h := &groupHarness{t: t, dir: t.TempDir(), delay: delay,
		clk: &groupTestClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}}
	h.open()
	t.Cleanup(func() { h.g.close() })
	return h
}

// open opens the coordinator on the harness's directory.
func (h *groupHarness) open() {
	h.t.Helper()
	g, err := openGroups(groupConfig{
		DataDir: h.dir, Now: h.clk.Now, InitialRebalanceDelay: h.delay,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.g = g
}

// reopen closes the coordinator and opens it again on the same directory,
// as a restarted broker does.
func (h *groupHarness) reopen() {
	h.t.Helper()
	if err := h.g.close(); err != nil {
		h.t.Fatal(err)
	}
	h.open()
}

// advance moves the clock by d and ticks.
func (h *groupHarness) advance(d time.Duration) {
	h.clk.mu.Lock()
	h.clk.now = h.clk.now.Add(d)
	now := h.clk.now
	h.clk.mu.Unlock()
	h.g.tick(now)
}

// ctx is the context of a request from client id client.
func (h *groupHarness) ctx(client string) context.Context {
	return withGroupClient(h.t.Context(), client, "/127.0.0.1")
}

// do serves a request that must not block.
func (h *groupHarness) do(req kmsg.Request) kmsg.Response {
	h.t.Helper()
	ch := h.async("client", req)
	select {
	case r := <-ch:
		return r
	case <-time.After(testWait):
		h.t.Fatalf("%s blocked", kmsg.NameForKey(req.Key()))
	}
	return nil
}

// async serves a request in a goroutine; its answer comes on the channel.
func (h *groupHarness) async(client string, req kmsg.Request) <-chan kmsg.Response {
	ch := make(chan kmsg.Response, 1)
	ctx := h.ctx(client)
	go func() { ch <- h.g.handle(ctx, req) }()
	return ch
}

// await returns the answer on ch.
func await[T kmsg.Response](t *testing.T, ch <-chan kmsg.Response) T {
	t.Helper()
	select {
	case r := <-ch:
		v, ok := r.(T)
		if !ok {
			t.Fatalf("answer %T (%v), want %T", r, r, *new(T))
		}
		return v
	case <-time.After(testWait):
		t.Fatalf("no answer for %T", *new(T))
	}
	panic("unreachable")
}

// notAnswered fails if ch has an answer.
func notAnswered(t *testing.T, ch <-chan kmsg.Response, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s answered while it should wait: %+v", what, r)
	default:
	}
}

// waitFor waits until cond holds of the group (nil if it does not exist).
func (h *groupHarness) waitFor(group, what string, cond func(cg *classicGroup) bool) {
	h.t.Helper()
	deadline := time.Now().Add(testWait)
	for {
		h.g.mu.Lock()
		ok := cond(h.g.byName[group])
		h.g.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

// waitJoinParked waits until member id waits in JoinGroup.
func (h *groupHarness) waitJoinParked(group, id string) {
	h.t.Helper()
	h.waitFor(group, "JoinGroup of "+id+" parked", func(cg *classicGroup) bool {
		return cg != nil && cg.members[id] != nil && cg.members[id].join != nil
	})
}

// waitSyncParked waits until member id waits in SyncGroup.
func (h *groupHarness) waitSyncParked(group, id string) {
	h.t.Helper()
	h.waitFor(group, "SyncGroup of "+id+" parked", func(cg *classicGroup) bool {
		return cg != nil && cg.members[id] != nil && cg.members[id].sync != nil
	})
}

// state returns the group's state (Dead if it does not exist).
func (h *groupHarness) state(group string) groupState {
	h.g.mu.Lock()
	defer h.g.mu.Unlock()
	if cg := h.g.byName[group]; cg != nil {
		return cg.state
	}
	return groupDead
}

// groupTestMeta is consumer protocol metadata subscribing to topics, with
// the protocol's name as user data (so that tests see whose metadata of
// which protocol went where).
func groupTestMeta(protocol string, topics ...string) []byte {
	m := kmsg.ConsumerMemberMetadata{Topics: topics, UserData: []byte(protocol)}
	return m.AppendTo(nil)
}

// joinReq is a JoinGroup v9 of a consumer subscribed to topic "t", with
// the protocols protos (default "range").
func joinReq(group, member string, protos ...string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 9
	r.Group = group
	r.MemberID = member
	r.SessionTimeoutMillis = int32(testSession.Milliseconds())
	r.RebalanceTimeoutMillis = int32(testRebalance.Milliseconds())
	r.ProtocolType = "consumer"
	if len(protos) == 0 {
		protos = []string{"range"}
	}
	for _, p := range protos {
		r.Protocols = append(r.Protocols, kmsg.JoinGroupRequestProtocol{Name: p, Metadata: groupTestMeta(p, "t")})
	}
	return r
}

// staticJoinReq is joinReq of a static member with instance id inst.
func staticJoinReq(group, member, inst string) *kmsg.JoinGroupRequest {
	r := joinReq(group, member)
	r.InstanceID = kmsg.StringPtr(inst)
	return r
}

// syncReq is a SyncGroup v5; the leader passes the assignments.
func syncReq(group, member string, gen int32, asg map[string][]byte) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 5
	r.Group = group
	r.MemberID = member
	r.Generation = gen
	r.ProtocolType = kmsg.StringPtr("consumer")
	for id, a := range asg {
		r.GroupAssignment = append(r.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: a})
	}
	return r
}

// memberIDRequired sends the first JoinGroup of a dynamic member and
// returns the member id MEMBER_ID_REQUIRED gives it.
func (h *groupHarness) memberIDRequired(group, client string) string {
	h.t.Helper()
	resp := await[*kmsg.JoinGroupResponse](h.t, h.async(client, joinReq(group, "")))
	if resp.ErrorCode != kerr.MemberIDRequired.Code || resp.MemberID == "" {
		h.t.Fatalf("first join: error %d member %q, want MEMBER_ID_REQUIRED and an id", resp.ErrorCode, resp.MemberID)
	}
	return resp.MemberID
}

// heartbeat sends a Heartbeat v4 and returns its error code.
func (h *groupHarness) heartbeat(group, member string, gen int32) int16 {
	h.t.Helper()
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = 4
	r.Group = group
	r.MemberID = member
	r.Generation = gen
	return h.do(r).(*kmsg.HeartbeatResponse).ErrorCode
}

// groupTestClientOf returns the client id that a member id starts with
// (the id is the client id, '-' and a UUID).
func groupTestClientOf(id string) string {
	return id[:max(0, len(id)-37)]
}

// joinAll joins the members ids (which MEMBER_ID_REQUIRED gave, or that
// are members) in this order and returns their join responses.
func (h *groupHarness) joinAll(group string, ids []string) []*kmsg.JoinGroupResponse {
	h.t.Helper()
	chs := make([]<-chan kmsg.Response, len(ids))
	for i, id := range ids {
		chs[i] = h.async(groupTestClientOf(id), joinReq(group, id))
		if i < len(ids)-1 {
			h.waitJoinParked(group, id)
		}
	}
	resps := make([]*kmsg.JoinGroupResponse, len(ids))
	for i := range ids {
		resps[i] = await[*kmsg.JoinGroupResponse](h.t, chs[i])
		if resps[i].ErrorCode != 0 {
			h.t.Fatalf("join of %s: error %d", ids[i], resps[i].ErrorCode)
		}
	}
	return resps
}

// syncAll syncs the members at generation gen (followers first, parked,
// then the leader with the assignment "asg-"+id for each) and returns
// the assignment each got.
func (h *groupHarness) syncAll(group string, gen int32, leader string, ids []string) map[string]string {
	h.t.Helper()
	chs := map[string]<-chan kmsg.Response{}
	asg := map[string][]byte{}
	for _, id := range ids {
		asg[id] = []byte("asg-" + id)
		if id != leader {
			chs[id] = h.async("c", syncReq(group, id, gen, nil))
			h.waitSyncParked(group, id)
		}
	}
	chs[leader] = h.async("c", syncReq(group, leader, gen, asg))
	got := map[string]string{}
	for id, ch := range chs {
		r := await[*kmsg.SyncGroupResponse](h.t, ch)
		if r.ErrorCode != 0 {
			h.t.Fatalf("sync of %s: error %d", id, r.ErrorCode)
		}
		got[id] = string(r.MemberAssignment)
	}
	return got
}

// stable forms group with n dynamic members in one generation and returns
// their ids (the leader first) and the generation.
func (h *groupHarness) stable(group string, n int) ([]string, int32) {
	h.t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = h.memberIDRequired(group, fmt.Sprintf("client-%d", i))
	}
	resps := h.joinAll(group, ids)
	gen := resps[0].Generation
	for i, r := range resps {
		if r.Generation != gen || r.LeaderID != ids[0] {
			h.t.Fatalf("member %d joined generation %d with leader %s, want %d and %s", i, r.Generation, r.LeaderID, gen, ids[0])
		}
	}
	got := h.syncAll(group, gen, ids[0], ids)
	for _, id := range ids {
		if got[id] != "asg-"+id {
			h.t.Fatalf("member %s got assignment %q, want %q", id, got[id], "asg-"+id)
		}
	}
	if st := h.state(group); st != groupStable {
		h.t.Fatalf("group %s is %v after the sync, want Stable", group, st)
	}
	return ids, gen
}

// commitReq is an OffsetCommit v8 of one offset.
func commitReq(group, member string, gen int32, topic string, part int32, offset int64) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 8
	r.Group = group
	r.MemberID = member
	r.Generation = gen
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition = part
	p.Offset = offset
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

// commit commits one offset and returns its error code.
func (h *groupHarness) commit(group, member string, gen int32, topic string, part int32, offset int64) int16 {
	h.t.Helper()
	resp := h.do(commitReq(group, member, gen, topic, part, offset)).(*kmsg.OffsetCommitResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Topic != topic || resp.Topics[0].Partitions[0].Partition != part {
		h.t.Fatalf("commit response %+v does not match the request", resp.Topics)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// fetch returns the committed offset of group for topic/part with
// OffsetFetch v8 (-1 if none).
func (h *groupHarness) fetch(group, topic string, part int32) int64 {
	h.t.Helper()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 8
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, Partitions: []int32{part}}}
	r.Groups = append(r.Groups, rg)
	resp := h.do(r).(*kmsg.OffsetFetchResponse)
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Topics) != 1 || len(resp.Groups[0].Topics[0].Partitions) != 1 {
		h.t.Fatalf("fetch of %s %s/%d: %+v", group, topic, part, resp.Groups)
	}
	p := resp.Groups[0].Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		h.t.Fatalf("fetch of %s %s/%d: error %d", group, topic, part, p.ErrorCode)
	}
	return p.Offset
}

// describe describes one group with DescribeGroups v5.
func (h *groupHarness) describe(group string) kmsg.DescribeGroupsResponseGroup {
	h.t.Helper()
	r := kmsg.NewPtrDescribeGroupsRequest()
	r.Version = 5
	r.Groups = []string{group}
	resp := h.do(r).(*kmsg.DescribeGroupsResponse)
	if len(resp.Groups) != 1 {
		h.t.Fatalf("describe of %s: %d groups", group, len(resp.Groups))
	}
	return resp.Groups[0]
}

// TestGroupJoinSyncTwoMembers: two members join in one generation; the
// first is the leader and gets both members' metadata; the follower's
// SyncGroup waits for the leader's, and each gets its own assignment.
func TestGroupJoinSyncTwoMembers(t *testing.T) {
	h := newGroupHarness(t, 0)
	a := h.memberIDRequired("g", "client-a")
	b := h.memberIDRequired("g", "client-b")
	if !strings.HasPrefix(a, "client-a-") || a == b {
		t.Fatalf("member ids %q and %q: want distinct ids starting with the client id", a, b)
	}
	ja := h.async("client-a", joinReq("g", a))
	h.waitJoinParked("g", a)
	if st := h.state("g"); st != groupPreparingRebalance {
		t.Fatalf("state with one of two members joined: %v, want PreparingRebalance", st)
	}
	notAnswered(t, ja, "join of the first member while the second has its id")
	jb := h.async("client-b", joinReq("g", b))
	ra := await[*kmsg.JoinGroupResponse](t, ja)
	rb := await[*kmsg.JoinGroupResponse](t, jb)
	for _, r := range []*kmsg.JoinGroupResponse{ra, rb} {
		if r.ErrorCode != 0 || r.Generation != 1 || r.LeaderID != a || r.Protocol == nil || *r.Protocol != "range" ||
			r.ProtocolType == nil || *r.ProtocolType != "consumer" {
			t.Fatalf("join response %+v: want generation 1, leader %s, consumer/range", r, a)
		}
	}
	if ra.MemberID != a || rb.MemberID != b {
		t.Fatalf("member ids in the responses: %s, %s; want %s, %s", ra.MemberID, rb.MemberID, a, b)
	}
	if len(rb.Members) != 0 {
		t.Fatalf("the follower got the member list: %+v", rb.Members)
	}
	if len(ra.Members) != 2 || ra.Members[0].MemberID != a || ra.Members[1].MemberID != b ||
		string(ra.Members[1].ProtocolMetadata) != string(groupTestMeta("range", "t")) {
		t.Fatalf("leader's member list %+v: want %s and %s with their metadata", ra.Members, a, b)
	}
	if st := h.state("g"); st != groupCompletingRebalance {
		t.Fatalf("state after the join phase: %v, want CompletingRebalance", st)
	}
	if code := h.heartbeat("g", b, 1); code != 0 {
		t.Fatalf("heartbeat before the sync: error %d, want none", code)
	}

	sb := h.async("client-b", syncReq("g", b, 1, nil))
	h.waitSyncParked("g", b)
	notAnswered(t, sb, "the follower's sync before the leader's")
	sa := h.async("client-a", syncReq("g", a, 1, map[string][]byte{a: []byte("for-a"), b: []byte("for-b")}))
	if r := await[*kmsg.SyncGroupResponse](t, sa); r.ErrorCode != 0 || string(r.MemberAssignment) != "for-a" || r.Protocol == nil || *r.Protocol != "range" {
		t.Fatalf("leader's sync: %+v, want assignment for-a", r)
	}
	if r := await[*kmsg.SyncGroupResponse](t, sb); r.ErrorCode != 0 || string(r.MemberAssignment) != "for-b" {
		t.Fatalf("follower's sync: %+v, want assignment for-b", r)
	}
	if st := h.state("g"); st != groupStable {
		t.Fatalf("state after the sync: %v, want Stable", st)
	}
	// A late SyncGroup in Stable gets the member's assignment at once.
	if r := h.do(syncReq("g", b, 1, nil)).(*kmsg.SyncGroupResponse); r.ErrorCode != 0 || string(r.MemberAssignment) != "for-b" {
		t.Fatalf("sync in Stable: %+v, want for-b", r)
	}
	for _, id := range []string{a, b} {
		if code := h.heartbeat("g", id, 1); code != 0 {
			t.Fatalf("heartbeat of %s: error %d", id, code)
		}
	}
	if code := h.heartbeat("g", a, 0); code != kerr.IllegalGeneration.Code {
		t.Fatalf("heartbeat at generation 0: error %d, want ILLEGAL_GENERATION", code)
	}
	// A follower rejoining with the same metadata in Stable gets the
	// generation back without a rebalance.
	if r := await[*kmsg.JoinGroupResponse](t, h.async("client-b", joinReq("g", b))); r.ErrorCode != 0 || r.Generation != 1 || len(r.Members) != 0 {
		t.Fatalf("follower's rejoin in Stable: %+v", r)
	}
	if st := h.state("g"); st != groupStable {
		t.Fatalf("state after the follower's rejoin: %v, want Stable", st)
	}
}

// TestGroupInitialRebalanceDelay: the first rebalance of an Empty group
// waits the initial delay, and another delay while new members join;
// clients without member ids (JoinGroup v3) join at once.
func TestGroupInitialRebalanceDelay(t *testing.T) {
	h := newGroupHarness(t, 3*time.Second)
	ra := joinReq("g", "")
	ra.Version = 3
	ja := h.async("a", ra)
	h.waitFor("g", "the first member parked", func(cg *classicGroup) bool { return cg != nil && cg.awaitingJoin == 1 })
	h.advance(2 * time.Second)
	rb := joinReq("g", "")
	rb.Version = 3
	jb := h.async("b", rb)
	h.waitFor("g", "the second member parked", func(cg *classicGroup) bool { return cg != nil && cg.awaitingJoin == 2 })
	h.advance(time.Second) // the first delay ends, but a member joined during it
	if st := h.state("g"); st != groupPreparingRebalance {
		t.Fatalf("state after the first delay with a new member: %v, want PreparingRebalance", st)
	}
	notAnswered(t, ja, "join during the extended delay")
	h.advance(2 * time.Second)
	if st := h.state("g"); st != groupPreparingRebalance {
		t.Fatalf("state before the extended delay ends: %v, want PreparingRebalance", st)
	}
	h.advance(time.Second)
	a := await[*kmsg.JoinGroupResponse](t, ja)
	b := await[*kmsg.JoinGroupResponse](t, jb)
	if a.ErrorCode != 0 || b.ErrorCode != 0 || a.Generation != 1 || b.Generation != 1 || a.LeaderID != a.MemberID || b.LeaderID != a.MemberID || len(a.Members) != 2 {
		t.Fatalf("joins after the delay: %+v and %+v; want both in generation 1 led by the first", a, b)
	}
}

// TestGroupThirdMemberRebalances: a third member's join starts a
// rebalance; the others' heartbeats say REBALANCE_IN_PROGRESS, they
// rejoin, and all three are in the next generation.
func TestGroupThirdMemberRebalances(t *testing.T) {
	h := newGroupHarness(t, 0)
	ids, gen := h.stable("g", 2)
	a, b := ids[0], ids[1]
	c := h.memberIDRequired("g", "client-c")
	if st := h.state("g"); st != groupStable {
		t.Fatalf("a member id alone changed the state to %v", st)
	}
	jc := h.async("client-c", joinReq("g", c))
	h.waitJoinParked("g", c)
	if st := h.state("g"); st != groupPreparingRebalance {
		t.Fatalf("state after a new member joined: %v, want PreparingRebalance", st)
	}
	for _, id := range ids {
		if code := h.heartbeat("g", id, gen); code != kerr.RebalanceInProgress.Code {
			t.Fatalf("heartbeat of %s during the rebalance: error %d, want REBALANCE_IN_PROGRESS", id, code)
		}
	}
	if r := h.do(syncReq("g", b, gen, nil)).(*kmsg.SyncGroupResponse); r.ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("sync during the rebalance: error %d, want REBALANCE_IN_PROGRESS", r.ErrorCode)
	}
	notAnswered(t, jc, "the new member's join before the others rejoined")
	resps := h.joinAll("g", []string{b, a})
	rc := await[*kmsg.JoinGroupResponse](t, jc)
	for _, r := range append(resps, rc) {
		if r.Generation != gen+1 || r.LeaderID != a {
			t.Fatalf("rejoin: generation %d leader %s, want %d and %s", r.Generation, r.LeaderID, gen+1, a)
		}
	}
	if len(resps[1].Members) != 3 {
		t.Fatalf("the leader got %d members, want 3", len(resps[1].Members))
	}
	got := h.syncAll("g", gen+1, a, []string{a, b, c})
	if got[c] != "asg-"+c || got[b] != "asg-"+b {
		t.Fatalf("assignments after the rebalance: %v", got)
	}
	if code := h.heartbeat("g", c, gen+1); code != 0 {
		t.Fatalf("heartbeat of the new member: error %d", code)
	}
	if code := h.heartbeat("g", a, gen); code != kerr.IllegalGeneration.Code {
		t.Fatalf("heartbeat at the old generation: error %d, want ILLEGAL_GENERATION", code)
	}
}

// TestGroupSessionTimeout: a member that stops heartbeating is removed
// when its session times out, and the survivor rebalances alone.
func TestGroupSessionTimeout(t *testing.T) {
	h := newGroupHarness(t, 0)
	ids, gen := h.stable("g", 2)
	a, b := ids[0], ids[1]
	h.advance(6 * time.Second)
	if code := h.heartbeat("g", a, gen); code != 0 {
		t.Fatalf("heartbeat: error %d", code)
	}
	h.advance(3 * time.Second) // 9s since b's last sign of life
	if st := h.state("g"); st != groupStable {
		t.Fatalf("state before the session timeout: %v, want Stable", st)
	}
	h.advance(time.Second) // 10s
	if st := h.state("g"); st != groupPreparingRebalance {
		t.Fatalf("state after b's session timed out: %v, want PreparingRebalance", st)
	}
	if code := h.heartbeat("g", b, gen); code != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat of the expired member: error %d, want UNKNOWN_MEMBER_ID", code)
	}
	if code := h.heartbeat("g", a, gen); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat of the survivor: error %d, want REBALANCE_IN_PROGRESS", code)
	}
	r := h.joinAll("g", []string{a})[0]
	if r.Generation != gen+1 || r.LeaderID != a || len(r.Members) != 1 || r.Members[0].MemberID != a {
		t.Fatalf("survivor's rejoin: %+v, want generation %d with itself alone", r, gen+1)
	}
	if got := h.syncAll("g", gen+1, a, []string{a}); got[a] != "asg-"+a {
		t.Fatalf("survivor's assignment %q", got[a])
	}
	// The survivor, heartbeating, outlives any number of session timeouts.
	for range 5 {
		h.advance(8 * time.Second)
		if code := h.heartbeat("g", a, gen+1); code != 0 {
			t.Fatalf("heartbeat: error %d", code)
		}
	}
	if st := h.state("g"); st != groupStable {
		t.Fatalf("state of a heartbeating group: %v", st)
	}
}

// TestGroupLeave: a member leaving (LeaveGroup v5, a batch) triggers a
// rebalance; unknown members in the batch get UNKNOWN_MEMBER_ID; the last
// member leaving (v0) empties the group at the next generation.
func TestGroupLeave(t *testing.T) {
	h := newGroupHarness(t, 0)
	ids, gen := h.stable("g", 2)
	a, b := ids[0], ids[1]
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 5
	lr.Group = "g"
	lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: b}, {MemberID: "nobody"}}
	resp := h.do(lr).(*kmsg.LeaveGroupResponse)
	if resp.ErrorCode != 0 || len(resp.Members) != 2 || resp.Members[0].ErrorCode != 0 || resp.Members[0].MemberID != b ||
		resp.Members[1].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave: %+v, want b gone and nobody UNKNOWN_MEMBER_ID", resp)
	}
	if code := h.heartbeat("g", a, gen); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat after a leave: error %d, want REBALANCE_IN_PROGRESS", code)
	}
	r := h.joinAll("g", []string{a})[0]
	if r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("rejoin after the leave: %+v", r)
	}
	h.syncAll("g", gen+1, a, []string{a})

	lr0 := kmsg.NewPtrLeaveGroupRequest()
	lr0.Version = 0
	lr0.Group = "g"
	lr0.MemberID = a
	if resp := h.do(lr0).(*kmsg.LeaveGroupResponse); resp.ErrorCode != 0 {
		t.Fatalf("leave v0: error %d", resp.ErrorCode)
	}
	if st := h.state("g"); st != groupEmpty {
		t.Fatalf("state after the last member left: %v, want Empty", st)
	}
	h.g.mu.Lock()
	g2 := h.g.byName["g"].generation
	h.g.mu.Unlock()
	if g2 != gen+2 {
		t.Fatalf("generation of the emptied group: %d, want %d", g2, gen+2)
	}
	if resp := h.do(lr0).(*kmsg.LeaveGroupResponse); resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("second leave v0: error %d, want UNKNOWN_MEMBER_ID", resp.ErrorCode)
	}
}

// TestGroupRebalanceTimeout: a member that heartbeats but does not rejoin
// is left out of the next generation once the rebalance timeout passes.
func TestGroupRebalanceTimeout(t *testing.T) {
	h := newGroupHarness(t, 0)
	ids, gen := h.stable("g", 2)
	a, b := ids[0], ids[1]
	ja := h.async("a", joinReq("g", a)) // the leader rejoins: a rebalance
	h.waitJoinParked("g", a)
	for range 2 {
		h.advance(9 * time.Second)
		if code := h.heartbeat("g", b, gen); code != kerr.RebalanceInProgress.Code {
			t.Fatalf("heartbeat of the member that does not rejoin: error %d", code)
		}
	}
	notAnswered(t, ja, "join before the rebalance timeout")
	h.advance(2 * time.Second) // 20s: the rebalance timeout
	r := await[*kmsg.JoinGroupResponse](t, ja)
	if r.ErrorCode != 0 || r.Generation != gen+1 || len(r.Members) != 1 || r.Members[0].MemberID != a {
		t.Fatalf("join after the rebalance timeout: %+v, want generation %d with a alone", r, gen+1)
	}
	if code := h.heartbeat("g", b, gen); code != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat of the member left out: error %d, want UNKNOWN_MEMBER_ID", code)
	}
}

// TestGroupLeaderNeverSyncs: members that do not send SyncGroup within the
// rebalance timeout are removed, and followers waiting for the leader's
// assignment are told to rejoin.
func TestGroupLeaderNeverSyncs(t *testing.T) {
	h := newGroupHarness(t, 0)
	a := h.memberIDRequired("g", "a")
	b := h.memberIDRequired("g", "b")
	h.joinAll("g", []string{a, b})
	sb := h.async("b", syncReq("g", b, 1, nil))
	h.waitSyncParked("g", b)
	for range 2 {
		h.advance(9 * time.Second)
		if code := h.heartbeat("g", a, 1); code != 0 {
			t.Fatalf("heartbeat of the leader in CompletingRebalance: error %d", code)
		}
	}
	notAnswered(t, sb, "follower's sync before the sync timeout")
	h.advance(2 * time.Second)
	if r := await[*kmsg.SyncGroupResponse](t, sb); r.ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("follower's sync after the leader was dropped: error %d, want REBALANCE_IN_PROGRESS", r.ErrorCode)
	}
	if code := h.heartbeat("g", a, 1); code != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat of the leader that never synced: error %d, want UNKNOWN_MEMBER_ID", code)
	}
	r := h.joinAll("g", []string{b})[0]
	if r.Generation != 2 || r.LeaderID != b {
		t.Fatalf("follower's rejoin: %+v, want generation 2 led by itself", r)
	}
}

// TestGroupUnusedMemberID: a member id handed out by MEMBER_ID_REQUIRED
// and never used stops holding up the join phase after a session timeout.
func TestGroupUnusedMemberID(t *testing.T) {
	h := newGroupHarness(t, 0)
	a := h.memberIDRequired("g", "a")
	h.memberIDRequired("g", "b") // never comes back
	ja := h.async("a", joinReq("g", a))
	h.waitJoinParked("g", a)
	h.advance(9 * time.Second)
	notAnswered(t, ja, "join while another member id is outstanding")
	h.advance(time.Second)
	if r := await[*kmsg.JoinGroupResponse](t, ja); r.ErrorCode != 0 || r.Generation != 1 || len(r.Members) != 1 {
		t.Fatalf("join after the unused id expired: %+v", r)
	}
}

// TestGroupOffsetsDurable: committed offsets (simple commits and members'
// commits, latest per partition) and a Stable group's members and
// assignments survive closing and reopening the coordinator.
func TestGroupOffsetsDurable(t *testing.T) {
	h := newGroupHarness(t, 0)
	// A simple (standalone) commit, v8, of several partitions.
	cr := kmsg.NewPtrOffsetCommitRequest()
	cr.Version = 8
	cr.Group = "simple"
	for _, p := range []struct {
		topic  string
		part   int32
		offset int64
		epoch  int32
		meta   *string
	}{{"t1", 0, 10, 2, kmsg.StringPtr("m0")}, {"t1", 1, 20, -1, nil}, {"t2", 0, 5, 3, kmsg.StringPtr("")}} {
		ct := kmsg.NewOffsetCommitRequestTopic()
		ct.Topic = p.topic
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset, cp.LeaderEpoch, cp.Metadata = p.part, p.offset, p.epoch, p.meta
		ct.Partitions = append(ct.Partitions, cp)
		cr.Topics = append(cr.Topics, ct)
	}
	for _, rt := range h.do(cr).(*kmsg.OffsetCommitResponse).Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("simple commit of %s/%d: error %d", rt.Topic, rp.Partition, rp.ErrorCode)
			}
		}
	}
	if code := h.commit("simple", "", -1, "t1", 0, 11); code != 0 { // replaces 10
		t.Fatalf("second simple commit: error %d", code)
	}
	ids, gen := h.stable("members", 2)
	if code := h.commit("members", ids[1], gen, "t1", 0, 100); code != 0 {
		t.Fatalf("member's commit: error %d", code)
	}

	check := func(when string) {
		t.Helper()
		// v8: two groups, one asking for partitions, the other for all.
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version = 8
		g1 := kmsg.NewOffsetFetchRequestGroup()
		g1.Group = "simple"
		g1.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t1", Partitions: []int32{0, 1, 7}}, {Topic: "nope", Partitions: []int32{0}}}
		g2 := kmsg.NewOffsetFetchRequestGroup()
		g2.Group = "members"
		r.Groups = []kmsg.OffsetFetchRequestGroup{g1, g2}
		resp := h.do(r).(*kmsg.OffsetFetchResponse)
		if len(resp.Groups) != 2 {
			t.Fatalf("%s: fetch of two groups: %d groups", when, len(resp.Groups))
		}
		s := resp.Groups[0]
		type po struct {
			off   int64
			epoch int32
			meta  string
		}
		var got []po
		for _, tt := range s.Topics {
			for _, p := range tt.Partitions {
				meta := "<nil>"
				if p.Metadata != nil {
					meta = *p.Metadata
				}
				got = append(got, po{p.Offset, p.LeaderEpoch, meta})
			}
		}
		want := []po{{11, -1, ""}, {20, -1, ""}, {-1, -1, ""}, {-1, -1, ""}}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: offsets of simple: %+v, want %+v", when, got, want)
		}
		m := resp.Groups[1]
		if m.ErrorCode != 0 || len(m.Topics) != 1 || m.Topics[0].Topic != "t1" || len(m.Topics[0].Partitions) != 1 || m.Topics[0].Partitions[0].Offset != 100 {
			t.Fatalf("%s: all offsets of members: %+v, want t1/0 at 100", when, m.Topics)
		}
		// v5: one group, all topics.
		r5 := kmsg.NewPtrOffsetFetchRequest()
		r5.Version = 5
		r5.Group = "simple"
		resp5 := h.do(r5).(*kmsg.OffsetFetchResponse)
		var all []string
		for _, tt := range resp5.Topics {
			for _, p := range tt.Partitions {
				all = append(all, fmt.Sprintf("%s/%d=%d@%d:%s", tt.Topic, p.Partition, p.Offset, p.LeaderEpoch, *p.Metadata))
			}
		}
		if want := []string{"t1/0=11@-1:", "t1/1=20@-1:", "t2/0=5@3:"}; resp5.ErrorCode != 0 || !slices.Equal(all, want) {
			t.Fatalf("%s: v5 fetch of all offsets of simple: %v, want %v", when, all, want)
		}
	}
	check("before the restart")
	h.reopen()
	check("after the restart")

	// The Stable group came back with its members, generation and
	// assignments: its members carry on without a rebalance.
	if st := h.state("members"); st != groupStable {
		t.Fatalf("restored group is %v, want Stable", st)
	}
	for _, id := range ids {
		if code := h.heartbeat("members", id, gen); code != 0 {
			t.Fatalf("heartbeat of %s after the restart: error %d", id, code)
		}
	}
	if code := h.commit("members", ids[0], gen, "t1", 0, 101); code != 0 {
		t.Fatalf("commit after the restart: error %d", code)
	}
	d := h.describe("members")
	if d.State != "Stable" || d.Protocol != "range" || len(d.Members) != 2 || string(d.Members[1].MemberAssignment) != "asg-"+ids[1] {
		t.Fatalf("restored group described as %+v", d)
	}
	// Restored members that never come back expire.
	h.advance(testSession)
	if code := h.heartbeat("members", ids[0], gen); code != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat after the restored sessions expired: error %d, want UNKNOWN_MEMBER_ID", code)
	}
}

// TestGroupGenerationSurvivesRestart: an emptied group keeps its
// generation across a restart, so generations never go back.
func TestGroupGenerationSurvivesRestart(t *testing.T) {
	h := newGroupHarness(t, 0)
	ids, gen := h.stable("g", 1)
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 3
	lr.Group = "g"
	lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: ids[0]}}
	h.do(lr)
	if st := h.state("g"); st != groupEmpty {
		t.Fatalf("state after the leave: %v", st)
	}
	h.reopen()
	if st := h.state("g"); st != groupEmpty {
		t.Fatalf("state after the restart: %v, want Empty", st)
	}
	id := h.memberIDRequired("g", "c")
	if r := h.joinAll("g", []string{id})[0]; r.Generation != gen+2 {
		t.Fatalf("generation after the restart: %d, want %d", r.Generation, gen+2)
	}
}

// TestGroupDeleteGroups: only Empty groups are deleted, with their
// offsets, durably; others get NON_EMPTY_GROUP or GROUP_ID_NOT_FOUND.
func TestGroupDeleteGroups(t *testing.T) {
	h := newGroupHarness(t, 0)
	h.stable("busy", 1)
	if code := h.commit("idle", "", -1, "t", 0, 42); code != 0 {
		t.Fatalf("commit: error %d", code)
	}
	if code := h.commit("idle", "", -1, "t", 1, 43); code != 0 {
		t.Fatalf("commit: error %d", code)
	}
	if code := h.commit("other", "", -1, "t", 0, 7); code != 0 {
		t.Fatalf("commit: error %d", code)
	}
	r := kmsg.NewPtrDeleteGroupsRequest()
	r.Version = 2
	r.Groups = []string{"busy", "nosuch", "idle"}
	resp := h.do(r).(*kmsg.DeleteGroupsResponse)
	codes := map[string]int16{}
	for _, rg := range resp.Groups {
		codes[rg.Group] = rg.ErrorCode
	}
	want := map[string]int16{"busy": kerr.NonEmptyGroup.Code, "nosuch": kerr.GroupIDNotFound.Code, "idle": 0}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Fatalf("delete: %v, want %v", codes, want)
	}
	check := func(when string) {
		t.Helper()
		if off := h.fetch("idle", "t", 0); off != -1 {
			t.Fatalf("%s: offset of the deleted group: %d, want -1", when, off)
		}
		if off := h.fetch("other", "t", 0); off != 7 {
			t.Fatalf("%s: offset of another group: %d, want 7", when, off)
		}
		if d := h.describe("idle"); d.State != "Dead" {
			t.Fatalf("%s: deleted group described as %s", when, d.State)
		}
		if st := h.state("busy"); st != groupStable && st != groupPreparingRebalance {
			t.Fatalf("%s: the non-empty group is %v", when, st)
		}
	}
	check("after the delete")
	h.reopen()
	check("after the restart")
	if resp := h.do(r).(*kmsg.DeleteGroupsResponse); resp.Groups[2].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("deleting the deleted group again: error %d, want GROUP_ID_NOT_FOUND", resp.Groups[2].ErrorCode)
	}
}

// TestGroupListDescribe: ListGroups with and without filters, and
// DescribeGroups of Stable, Empty, rebalancing and unknown groups.
func TestGroupListDescribe(t *testing.T) {
	h := newGroupHarness(t, 0)
	ids, gen := h.stable("a", 2)
	if code := h.commit("b", "", -1, "t", 0, 1); code != 0 {
		t.Fatalf("commit: error %d", code)
	}
	list := func(version int16, states, types []string) []string {
		t.Helper()
		r := kmsg.NewPtrListGroupsRequest()
		r.Version = version
		r.StatesFilter = states
		r.TypesFilter = types
		resp := h.do(r).(*kmsg.ListGroupsResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("list: error %d", resp.ErrorCode)
		}
		var out []string
		for _, g := range resp.Groups {
			out = append(out, g.Group+":"+g.GroupState+":"+g.ProtocolType+":"+g.GroupType)
		}
		return out
	}
	if got, want := list(5, nil, nil), []string{"a:Stable:consumer:classic", "b:Empty::classic"}; !slices.Equal(got, want) {
		t.Fatalf("list: %v, want %v", got, want)
	}
	if got, want := list(4, []string{"stable"}, nil), []string{"a:Stable:consumer:"}; !slices.Equal(got, want) {
		t.Fatalf("list of Stable groups: %v, want %v", got, want)
	}
	if got := list(5, nil, []string{"consumer"}); len(got) != 0 {
		t.Fatalf("list of KIP-848 groups: %v, want none", got)
	}

	r := kmsg.NewPtrDescribeGroupsRequest()
	r.Version = 5
	r.Groups = []string{"a", "b", "zz"}
	r.IncludeAuthorizedOperations = true
	resp := h.do(r).(*kmsg.DescribeGroupsResponse)
	if len(resp.Groups) != 3 {
		t.Fatalf("describe of 3 groups: %d", len(resp.Groups))
	}
	da, db, dz := resp.Groups[0], resp.Groups[1], resp.Groups[2]
	if da.ErrorCode != 0 || da.State != "Stable" || da.ProtocolType != "consumer" || da.Protocol != "range" || len(da.Members) != 2 ||
		da.AuthorizedOperations != groupAllOperations {
		t.Fatalf("describe of a: %+v", da)
	}
	for i, m := range da.Members {
		if m.MemberID != ids[i] || m.ClientID != fmt.Sprintf("client-%d", i) || m.ClientHost != "/127.0.0.1" ||
			string(m.ProtocolMetadata) != string(groupTestMeta("range", "t")) || string(m.MemberAssignment) != "asg-"+ids[i] {
			t.Fatalf("member %d of a: %+v", i, m)
		}
	}
	if db.ErrorCode != 0 || db.State != "Empty" || len(db.Members) != 0 {
		t.Fatalf("describe of b: %+v", db)
	}
	if dz.ErrorCode != 0 || dz.State != "Dead" {
		t.Fatalf("describe v5 of an unknown group: %+v, want Dead without error", dz)
	}
	r.Version = 6
	r.Groups = []string{"zz"}
	if d := h.do(r).(*kmsg.DescribeGroupsResponse).Groups[0]; d.ErrorCode != kerr.GroupIDNotFound.Code || d.State != "Dead" {
		t.Fatalf("describe v6 of an unknown group: %+v, want GROUP_ID_NOT_FOUND", d)
	}

	// During a rebalance: no protocol, metadata or assignments.
	ja := h.async("a", joinReq("a", ids[0]))
	h.waitJoinParked("a", ids[0])
	d := h.describe("a")
	if d.State != "PreparingRebalance" || d.Protocol != "" || len(d.Members) != 2 || d.Members[0].MemberAssignment != nil || d.Members[0].ProtocolMetadata != nil {
		t.Fatalf("describe during a rebalance: %+v", d)
	}
	if got, want := list(4, []string{"PreparingRebalance", "Empty"}, nil), []string{"a:PreparingRebalance:consumer:", "b:Empty::"}; !slices.Equal(got, want) {
		t.Fatalf("list v4 of rebalancing and empty groups: %v, want %v", got, want)
	}
	h.heartbeat("a", ids[1], gen)
	h.joinAll("a", []string{ids[1]})
	await[*kmsg.JoinGroupResponse](t, ja)
}

// TestGroupOffsetCommitChecks: commits with a stale generation get
// ILLEGAL_GENERATION, unknown members UNKNOWN_MEMBER_ID, simple commits
// to a group with members UNKNOWN_MEMBER_ID, commits during
// CompletingRebalance REBALANCE_IN_PROGRESS; only accepted ones are stored.
func TestGroupOffsetCommitChecks(t *testing.T) {
	h := newGroupHarness(t, 0)
	ids, gen := h.stable("g", 2)
	a, b := ids[0], ids[1]
	if code := h.commit("g", a, gen, "t", 0, 1); code != 0 {
		t.Fatalf("commit at the current generation: error %d", code)
	}
	c := h.memberIDRequired("g", "c")
	jc := h.async("c", joinReq("g", c))
	h.waitJoinParked("g", c)
	if code := h.commit("g", a, gen, "t", 0, 2); code != 0 {
		t.Fatalf("commit during PreparingRebalance at the current generation: error %d", code)
	}
	resps := h.joinAll("g", []string{a, b})
	await[*kmsg.JoinGroupResponse](t, jc)
	gen2 := resps[0].Generation
	if code := h.commit("g", a, gen2, "t", 0, 3); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("commit during CompletingRebalance: error %d, want REBALANCE_IN_PROGRESS", code)
	}
	h.syncAll("g", gen2, a, []string{a, b, c})
	for _, tc := range []struct {
		name   string
		member string
		gen    int32
		want   int16
	}{
		{"stale generation", a, gen, kerr.IllegalGeneration.Code},
		{"unknown member", "nobody", gen2, kerr.UnknownMemberID.Code},
		{"simple commit to a group with members", "", -1, kerr.UnknownMemberID.Code},
		{"current generation", c, gen2, 0},
	} {
		if code := h.commit("g", tc.member, tc.gen, "t", 0, 10+int64(tc.gen)); code != tc.want {
			t.Errorf("%s: error %d, want %d", tc.name, code, tc.want)
		}
	}
	if off := h.fetch("g", "t", 0); off != 10+int64(gen2) {
		t.Fatalf("committed offset %d, want %d (only accepted commits count)", off, 10+int64(gen2))
	}
	if code := h.commit("unknown", "m", 3, "t", 0, 1); code != kerr.IllegalGeneration.Code {
		t.Fatalf("commit at a generation to an unknown group: error %d, want ILLEGAL_GENERATION", code)
	}
	if off := h.fetch("unknown", "t", 0); off != -1 {
		t.Fatalf("offset of the unknown group: %d", off)
	}
	big := commitReq("g", c, gen2, "t", 1, 5)
	big.Topics[0].Partitions[0].Metadata = kmsg.StringPtr(strings.Repeat("x", groupMaxMetadataBytes+1))
	if code := h.do(big).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.OffsetMetadataTooLarge.Code {
		t.Fatalf("commit with too much metadata: error %d, want OFFSET_METADATA_TOO_LARGE", code)
	}
	// OffsetCommit v2 (no leader epoch): a simple commit to a new group.
	old := commitReq("v2", "", -1, "t", 0, 77)
	old.Version = 2
	if code := h.do(old).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 || h.fetch("v2", "t", 0) != 77 {
		t.Fatalf("commit v2: error %d", code)
	}
}

// TestGroupStaticMembership: a static member rejoining without a member id
// replaces its previous incarnation without a rebalance; the old member id
// is fenced (FENCED_INSTANCE_ID), including a JoinGroup it had parked.
func TestGroupStaticMembership(t *testing.T) {
	h := newGroupHarness(t, 3*time.Second)
	j1 := h.async("p1", staticJoinReq("g", "", "i1"))
	h.waitFor("g", "first static member parked", func(cg *classicGroup) bool { return cg != nil && cg.awaitingJoin == 1 })
	j2 := h.async("p2", staticJoinReq("g", "", "i2"))
	h.waitFor("g", "second static member parked", func(cg *classicGroup) bool { return cg != nil && cg.awaitingJoin == 2 })
	h.advance(3 * time.Second)
	h.advance(3 * time.Second)
	r1 := await[*kmsg.JoinGroupResponse](t, j1)
	r2 := await[*kmsg.JoinGroupResponse](t, j2)
	s1, s2 := r1.MemberID, r2.MemberID
	if r1.ErrorCode != 0 || r2.ErrorCode != 0 || !strings.HasPrefix(s1, "i1-") || !strings.HasPrefix(s2, "i2-") || r1.LeaderID != s1 || r1.Generation != 1 {
		t.Fatalf("static joins: %+v, %+v", r1, r2)
	}
	if len(r1.Members) != 2 || r1.Members[1].InstanceID == nil || *r1.Members[1].InstanceID != "i2" {
		t.Fatalf("leader's member list lacks the instance ids: %+v", r1.Members)
	}
	h.syncAll("g", 1, s1, []string{s1, s2})

	// i2 restarts: a new member id, the same generation, no rebalance.
	r := await[*kmsg.JoinGroupResponse](t, h.async("p2b", staticJoinReq("g", "", "i2")))
	s2b := r.MemberID
	if r.ErrorCode != 0 || s2b == s2 || !strings.HasPrefix(s2b, "i2-") || r.Generation != 1 || r.LeaderID != s1 || len(r.Members) != 0 || r.SkipAssignment {
		t.Fatalf("static rejoin: %+v", r)
	}
	if st := h.state("g"); st != groupStable {
		t.Fatalf("state after a static member's restart: %v, want Stable", st)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version = 4
	hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = "g", s2, 1, kmsg.StringPtr("i2")
	if code := h.do(hb).(*kmsg.HeartbeatResponse).ErrorCode; code != kerr.FencedInstanceID.Code {
		t.Fatalf("heartbeat of the old incarnation: error %d, want FENCED_INSTANCE_ID", code)
	}
	cr := commitReq("g", s2, 1, "t", 0, 9)
	cr.InstanceID = kmsg.StringPtr("i2")
	if code := h.do(cr).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.FencedInstanceID.Code {
		t.Fatalf("commit of the old incarnation: error %d, want FENCED_INSTANCE_ID", code)
	}
	for _, tc := range []struct {
		name   string
		member string
		inst   *string
		gen    int32
		want   int16
	}{
		{"old incarnation", s2, kmsg.StringPtr("i2"), 1, kerr.FencedInstanceID.Code},
		{"new incarnation", s2b, kmsg.StringPtr("i2"), 1, 0},
		{"stale generation", s2b, kmsg.StringPtr("i2"), 0, kerr.IllegalGeneration.Code},
		{"unknown member", "x", nil, 1, kerr.UnknownMemberID.Code},
		{"unknown instance", "x", kmsg.StringPtr("i9"), 1, kerr.UnknownMemberID.Code},
		{"no member check", "", nil, -1, 0},
	} {
		if code := h.g.validateMember("g", tc.member, tc.inst, tc.gen); code != tc.want {
			t.Errorf("validateMember, %s: %d, want %d", tc.name, code, tc.want)
		}
	}
	sr := syncReq("g", s2b, 1, nil)
	sr.InstanceID = kmsg.StringPtr("i2")
	if r := h.do(sr).(*kmsg.SyncGroupResponse); r.ErrorCode != 0 || string(r.MemberAssignment) != "asg-"+s2 {
		t.Fatalf("the new incarnation's sync: %+v, want the old one's assignment", r)
	}

	// The leader restarts: it keeps leading and is told to skip the
	// assignment.
	r = await[*kmsg.JoinGroupResponse](t, h.async("p1b", staticJoinReq("g", "", "i1")))
	s1b := r.MemberID
	if r.ErrorCode != 0 || r.LeaderID != s1b || !r.SkipAssignment || len(r.Members) != 2 {
		t.Fatalf("static leader's rejoin: %+v", r)
	}

	// A JoinGroup parked by an incarnation being replaced is fenced: the
	// leader rejoins (a rebalance, waiting for i2), then i1 restarts.
	jl := h.async("p1b", staticJoinReq("g", s1b, "i1"))
	h.waitJoinParked("g", s1b)
	jn := h.async("p1c", staticJoinReq("g", "", "i1"))
	if r := await[*kmsg.JoinGroupResponse](t, jl); r.ErrorCode != kerr.FencedInstanceID.Code {
		t.Fatalf("parked join of the replaced incarnation: %+v, want FENCED_INSTANCE_ID", r)
	}
	h.waitFor("g", "the new incarnation parked", func(cg *classicGroup) bool {
		return cg != nil && cg.members[s1b] == nil && cg.awaitingJoin == 1
	})
	notAnswered(t, jn, "the new incarnation's join before i2 rejoined")
	r2 = await[*kmsg.JoinGroupResponse](t, h.async("p2b", staticJoinReq("g", s2b, "i2")))
	rn := await[*kmsg.JoinGroupResponse](t, jn)
	if r2.ErrorCode != 0 || rn.ErrorCode != 0 || rn.Generation != 2 || rn.LeaderID != rn.MemberID || len(rn.Members) != 2 || r2.LeaderID != rn.MemberID {
		t.Fatalf("joins after the replacement: %+v and %+v, want generation 2 led by the new incarnation", rn, r2)
	}
}

// TestGroupStaticFencesParkedSync: a SyncGroup parked by a static member
// gets FENCED_INSTANCE_ID when a new incarnation of the instance joins,
// which (during CompletingRebalance) starts a rebalance; an admin's
// LeaveGroup by instance id removes the member.
func TestGroupStaticFencesParkedSync(t *testing.T) {
	h := newGroupHarness(t, 0)
	d := h.memberIDRequired("g", "d")
	h.syncAll("g", h.joinAll("g", []string{d})[0].Generation, d, []string{d})
	js := h.async("s", staticJoinReq("g", "", "i1"))
	h.waitFor("g", "the static member parked", func(cg *classicGroup) bool { return cg != nil && cg.awaitingJoin == 1 })
	h.joinAll("g", []string{d})
	rs := await[*kmsg.JoinGroupResponse](t, js)
	s, gen := rs.MemberID, rs.Generation
	if rs.ErrorCode != 0 || gen != 2 || rs.LeaderID != d {
		t.Fatalf("static join: %+v, want generation 2 led by %s", rs, d)
	}
	ss := syncReq("g", s, gen, nil)
	ss.InstanceID = kmsg.StringPtr("i1")
	parked := h.async("s", ss)
	h.waitSyncParked("g", s)
	nj := h.async("s2", staticJoinReq("g", "", "i1"))
	if r := await[*kmsg.SyncGroupResponse](t, parked); r.ErrorCode != kerr.FencedInstanceID.Code {
		t.Fatalf("parked sync of the replaced incarnation: error %d, want FENCED_INSTANCE_ID", r.ErrorCode)
	}
	if code := h.heartbeat("g", d, gen); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("leader's heartbeat after the replacement: error %d, want REBALANCE_IN_PROGRESS", code)
	}
	h.joinAll("g", []string{d})
	rn := await[*kmsg.JoinGroupResponse](t, nj)
	if rn.ErrorCode != 0 || rn.Generation != gen+1 || rn.MemberID == s {
		t.Fatalf("new incarnation's join: %+v, want generation %d", rn, gen+1)
	}
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 4
	lr.Group = "g"
	lr.Members = []kmsg.LeaveGroupRequestMember{{InstanceID: kmsg.StringPtr("i1")}}
	if resp := h.do(lr).(*kmsg.LeaveGroupResponse); resp.Members[0].ErrorCode != 0 {
		t.Fatalf("leave by instance id: error %d", resp.Members[0].ErrorCode)
	}
	if code := h.g.validateMember("g", rn.MemberID, kmsg.StringPtr("i1"), gen+1); code != kerr.UnknownMemberID.Code {
		t.Fatalf("validateMember of the instance that left: %d, want UNKNOWN_MEMBER_ID", code)
	}
	if code := h.heartbeat("g", d, gen+1); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat after the static member left: error %d, want REBALANCE_IN_PROGRESS", code)
	}
}

// TestGroupOffsetDelete: OffsetDelete removes offsets of topics the group
// does not subscribe to (GROUP_SUBSCRIBED_TO_TOPIC for the others),
// durably; a non-consumer group with members gets NON_EMPTY_GROUP.
func TestGroupOffsetDelete(t *testing.T) {
	h := newGroupHarness(t, 0)
	ids, gen := h.stable("g", 1) // subscribed to "t"
	for _, topic := range []string{"t", "u"} {
		if code := h.commit("g", ids[0], gen, topic, 0, 5); code != 0 {
			t.Fatalf("commit: error %d", code)
		}
	}
	del := func(group string, topics ...string) *kmsg.OffsetDeleteResponse {
		r := kmsg.NewPtrOffsetDeleteRequest()
		r.Group = group
		for _, topic := range topics {
			r.Topics = append(r.Topics, kmsg.OffsetDeleteRequestTopic{Topic: topic, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}})
		}
		return h.do(r).(*kmsg.OffsetDeleteResponse)
	}
	resp := del("g", "t", "u")
	if resp.ErrorCode != 0 || len(resp.Topics) != 2 || resp.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code ||
		resp.Topics[1].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset delete: %+v, want t subscribed and u deleted", resp)
	}
	if resp := del("nosuch", "u"); resp.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("offset delete of an unknown group: error %d", resp.ErrorCode)
	}
	h.reopen()
	if off := h.fetch("g", "u", 0); off != -1 {
		t.Fatalf("deleted offset after the restart: %d", off)
	}
	if off := h.fetch("g", "t", 0); off != 5 {
		t.Fatalf("kept offset after the restart: %d", off)
	}

	jr := joinReq("conn", "")
	jr.Version = 0
	jr.ProtocolType = "connect"
	if r := await[*kmsg.JoinGroupResponse](t, h.async("w", jr)); r.ErrorCode != 0 {
		t.Fatalf("join v0: error %d", r.ErrorCode)
	}
	if resp := del("conn", "u"); resp.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("offset delete of a connect group with members: error %d, want NON_EMPTY_GROUP", resp.ErrorCode)
	}
}

// TestGroupCommitOffsetsForTxn: commitOffsets stores offsets durably, as
// OffsetCommit does, creating the group.
func TestGroupCommitOffsetsForTxn(t *testing.T) {
	h := newGroupHarness(t, 0)
	err := h.g.commitOffsets("txg", []committedOffset{
		{Topic: "t", Partition: 0, Offset: 12, LeaderEpoch: 4, Metadata: kmsg.StringPtr("tx")},
		{Topic: "t", Partition: 1, Offset: 13, LeaderEpoch: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.reopen()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 7
	r.Group = "txg"
	r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}
	resp := h.do(r).(*kmsg.OffsetFetchResponse)
	ps := resp.Topics[0].Partitions
	if resp.ErrorCode != 0 || ps[0].Offset != 12 || ps[0].LeaderEpoch != 4 || *ps[0].Metadata != "tx" || ps[1].Offset != 13 {
		t.Fatalf("offsets committed by a transaction, after a restart: %+v", ps)
	}
	if d := h.describe("txg"); d.State != "Empty" {
		t.Fatalf("group of a transaction's offsets: %s, want Empty", d.State)
	}
	h.g.close()
	if err := h.g.commitOffsets("txg", []committedOffset{{Topic: "t", Offset: 1}}); err == nil {
		t.Fatal("commitOffsets after close succeeded")
	}
	if code := h.g.validateMember("txg", "m", nil, 1); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("validateMember after close: %d, want COORDINATOR_NOT_AVAILABLE", code)
	}
}

// TestGroupProtocolsAndBadRequests: protocol selection by vote, and the
// errors of joins that cannot be accepted.
func TestGroupProtocolsAndBadRequests(t *testing.T) {
	h := newGroupHarness(t, 0)
	ids := []string{h.memberIDRequired("g", "a"), h.memberIDRequired("g", "b"), h.memberIDRequired("g", "c")}
	protos := [][]string{{"roundrobin", "range"}, {"range", "roundrobin"}, {"sticky", "roundrobin", "range"}}
	chs := make([]<-chan kmsg.Response, 3)
	for i, id := range ids {
		chs[i] = h.async("x", joinReq("g", id, protos[i]...))
		if i < 2 {
			h.waitJoinParked("g", id)
		}
	}
	leader := await[*kmsg.JoinGroupResponse](t, chs[0])
	for _, ch := range chs[1:] {
		await[*kmsg.JoinGroupResponse](t, ch)
	}
	// Candidates: roundrobin and range (sticky is c's alone); votes:
	// a roundrobin, b range, c roundrobin.
	if *leader.Protocol != "roundrobin" || len(leader.Members) != 3 || string(leader.Members[1].ProtocolMetadata) != string(groupTestMeta("roundrobin", "t")) {
		t.Fatalf("selected protocol %q, members %+v; want roundrobin and its metadata", *leader.Protocol, leader.Members)
	}
	for _, tc := range []struct {
		name string
		req  func() *kmsg.JoinGroupRequest
		want int16
	}{
		{"no common protocol", func() *kmsg.JoinGroupRequest { return joinReq("g", "", "sticky") }, kerr.InconsistentGroupProtocol.Code},
		{"another protocol type", func() *kmsg.JoinGroupRequest {
			r := joinReq("g", "")
			r.ProtocolType = "connect"
			return r
		}, kerr.InconsistentGroupProtocol.Code},
		{"no protocols in a new group", func() *kmsg.JoinGroupRequest {
			r := joinReq("new", "")
			r.Protocols = nil
			return r
		}, kerr.InconsistentGroupProtocol.Code},
		{"session timeout too short", func() *kmsg.JoinGroupRequest {
			r := joinReq("g", "")
			r.SessionTimeoutMillis = 1000
			return r
		}, kerr.InvalidSessionTimeout.Code},
		{"session timeout too long", func() *kmsg.JoinGroupRequest {
			r := joinReq("g", "")
			r.SessionTimeoutMillis = int32((31 * time.Minute).Milliseconds())
			return r
		}, kerr.InvalidSessionTimeout.Code},
		{"empty group id", func() *kmsg.JoinGroupRequest { return joinReq("", "") }, kerr.InvalidGroupID.Code},
		{"member id of an unknown group", func() *kmsg.JoinGroupRequest { return joinReq("nosuch", "m") }, kerr.UnknownMemberID.Code},
		{"unknown member id", func() *kmsg.JoinGroupRequest { return joinReq("g", "m") }, kerr.UnknownMemberID.Code},
	} {
		if r := await[*kmsg.JoinGroupResponse](t, h.async("x", tc.req())); r.ErrorCode != tc.want {
			t.Errorf("join, %s: error %d, want %d", tc.name, r.ErrorCode, tc.want)
		}
	}
	if st := h.state("new"); st != groupDead {
		t.Errorf("a refused join created its group (%v)", st)
	}
	if code := h.heartbeat("", "m", 1); code != kerr.InvalidGroupID.Code {
		t.Errorf("heartbeat without a group id: error %d", code)
	}
	if code := h.heartbeat("nosuch", "m", 1); code != kerr.UnknownMemberID.Code {
		t.Errorf("heartbeat to an unknown group: error %d", code)
	}
	if r := h.do(syncReq("nosuch", "m", 1, nil)).(*kmsg.SyncGroupResponse); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Errorf("sync to an unknown group: error %d", r.ErrorCode)
	}
	sr := syncReq("g", ids[1], leader.Generation, nil)
	sr.Protocol = kmsg.StringPtr("range")
	if r := h.do(sr).(*kmsg.SyncGroupResponse); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Errorf("sync with another protocol: error %d, want INCONSISTENT_GROUP_PROTOCOL", r.ErrorCode)
	}
	if r := h.g.handle(t.Context(), kmsg.NewPtrMetadataRequest()); r != nil {
		t.Errorf("a request the coordinator does not serve got %T", r)
	}
	if r := h.g.handle(t.Context(), nil); r != nil {
		t.Errorf("a nil request got %T", r)
	}
}

// TestGroupParkedRequestsEnd: a parked JoinGroup returns nil when its
// context ends or the coordinator closes; a closed coordinator answers
// COORDINATOR_NOT_AVAILABLE.
func TestGroupParkedRequestsEnd(t *testing.T) {
	h := newGroupHarness(t, 0)
	a := h.memberIDRequired("g", "a")
	h.memberIDRequired("g", "b") // holds up the join phase
	ctx, cancel := context.WithCancel(t.Context())
	ch := make(chan kmsg.Response, 1)
	go func() { ch <- h.g.handle(ctx, joinReq("g", a)) }()
	h.waitJoinParked("g", a)
	cancel()
	select {
	case r := <-ch:
		if r != nil {
			t.Fatalf("join whose context ended: %+v, want nil", r)
		}
	case <-time.After(testWait):
		t.Fatal("join did not return when its context ended")
	}
	// The member's join is still parked (its client may yet get the
	// answer); a new one supersedes it.
	h.g.mu.Lock()
	first := h.g.byName["g"].members[a].join
	h.g.mu.Unlock()
	ja := h.async("a", joinReq("g", a))
	h.waitFor("g", "the second join parked", func(cg *classicGroup) bool { return cg.members[a].join != first })
	if err := h.g.close(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ja:
		if r != nil {
			t.Fatalf("join when the coordinator closed: %+v, want nil", r)
		}
	case <-time.After(testWait):
		t.Fatal("join did not return when the coordinator closed")
	}
	if code := h.heartbeat("g", a, 0); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("heartbeat after close: error %d", code)
	}
	if code := h.commit("g", "", -1, "t", 0, 1); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("commit after close: error %d", code)
	}
	if r := await[*kmsg.JoinGroupResponse](t, h.async("c", joinReq("g", ""))); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("join after close: error %d", r.ErrorCode)
	}
}
