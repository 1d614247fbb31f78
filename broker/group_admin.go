package broker

import (
	"cmp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "github.com/weirstream/weir/connector/log"
)

// groupAllOperations is the authorized operations of a group that
// DescribeGroups reports when asked: READ (3), DELETE (6) and DESCRIBE (8),
// all of them, since the broker has no ACLs.
const groupAllOperations = 1<<3 | 1<<6 | 1<<8

// handleDescribe serves DescribeGroups: each group's state, protocol type,
// and members; in Stable also the protocol and each member's metadata and
// assignment. A group that does not exist is Dead (with
// GROUP_ID_NOT_FOUND from v6 on).
func (g *groups) handleDescribe(req *kmsg.DescribeGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	g.mu.Lock()
	defer g.mu.Unlock()
	resp.Groups = make([]kmsg.DescribeGroupsResponseGroup, 0, len(req.Groups))
	for _, name := range req.Groups {
		d := kmsg.NewDescribeGroupsResponseGroup()
		d.Group = name
		if req.IncludeAuthorizedOperations {
			d.AuthorizedOperations = groupAllOperations
		}
		cg := g.byName[name]
		switch {
		case g.closed:
			d.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case cg == nil:
			d.State = groupDead.String()
			if req.Version >= 6 {
				d.ErrorCode = kerr.GroupIDNotFound.Code
				d.ErrorMessage = kmsg.StringPtr("group " + name + " not found")
			}
		default:
			d.State = cg.state.String()
			d.ProtocolType = cg.protocolType
			stable := cg.state == groupStable
			if stable {
				d.Protocol = cg.protocol
			}
			for _, m := range cg.sortedMembers() {
				dm := kmsg.NewDescribeGroupsResponseGroupMember()
				dm.MemberID = m.id
				dm.InstanceID = m.instanceID
				dm.ClientID = m.clientID
				dm.ClientHost = m.clientHost
				if stable {
					dm.ProtocolMetadata = m.metadataFor(cg.protocol)
					dm.MemberAssignment = m.assignment
				}
				d.Members = append(d.Members, dm)
			}
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}

// handleList serves ListGroups: every group, by name, filtered by state
// (v4+) and type (v5+; all groups are "classic"), case-insensitively.
func (g *groups) handleList(req *kmsg.ListGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	if len(req.TypesFilter) > 0 && !slices.ContainsFunc(req.TypesFilter, func(t string) bool { return strings.EqualFold(t, "classic") }) {
		return resp
	}
	names := make([]string, 0, len(g.byName))
	for name, cg := range g.byName {
		st := cg.state.String()
		if len(req.StatesFilter) > 0 && !slices.ContainsFunc(req.StatesFilter, func(s string) bool { return strings.EqualFold(s, st) }) {
			continue
		}
		names = append(names, name)
	}
	slices.SortFunc(names, cmp.Compare)
	resp.Groups = make([]kmsg.ListGroupsResponseGroup, 0, len(names))
	for _, name := range names {
		cg := g.byName[name]
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = name
		lg.ProtocolType = cg.protocolType
		lg.GroupState = cg.state.String()
		if req.Version >= 5 {
			lg.GroupType = "classic"
		}
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}

// handleDelete serves DeleteGroups: an Empty group is deleted with its
// offsets (tombstones in __consumer_offsets); a group with members gets
// NON_EMPTY_GROUP, one that does not exist GROUP_ID_NOT_FOUND.
func (g *groups) handleDelete(req *kmsg.DeleteGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	g.mu.Lock()
	defer g.mu.Unlock()
	resp.Groups = make([]kmsg.DeleteGroupsResponseGroup, 0, len(req.Groups))
	for _, name := range req.Groups {
		r := kmsg.NewDeleteGroupsResponseGroup()
		r.Group = name
		cg := g.byName[name]
		switch {
		case g.closed:
			r.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case cg == nil:
			r.ErrorCode = kerr.GroupIDNotFound.Code
		case cg.state != groupEmpty:
			r.ErrorCode = kerr.NonEmptyGroup.Code
		default:
			r.ErrorCode = g.deleteGroupLocked(cg)
		}
		if r.ErrorCode != 0 && req.Version >= 3 {
			if e, ok := kerr.ErrorForCode(r.ErrorCode).(*kerr.Error); ok {
				r.ErrorMessage = kmsg.StringPtr(e.Description)
			}
		}
		resp.Groups = append(resp.Groups, r)
	}
	return resp
}

// deleteGroupLocked deletes the Empty group cg and its offsets, durably:
// 0 or COORDINATOR_NOT_AVAILABLE if the tombstones could not be stored.
func (g *groups) deleteGroupLocked(cg *classicGroup) int16 {
	now := g.cfg.Now()
	recs := make([]wlog.Record, 0, len(cg.offsets)+1)
	for tp := range cg.offsets {
		recs = append(recs, groupOffsetTombstone(cg.name, tp.topic, tp.partition, now))
	}
	recs = append(recs, wlog.Record{Timestamp: now.UnixMilli(), Key: groupMetaKey(cg.name)})
	if err := g.appendLocked(recs); err != nil {
		g.log.Error("broker: group coordinator: deleting group failed", "group", cg.name, "err", err)
		return kerr.CoordinatorNotAvailable.Code
	}
	cg.state = groupDead
	delete(g.byName, cg.name)
	g.log.Info("broker: group coordinator: group deleted", "group", cg.name, "offsets", len(cg.offsets))
	return 0
}
