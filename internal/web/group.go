package web

import (
	"time"

	"github.com/weirstream/weir/internal/metrics"
)

// GroupJSON is the "group" member of GET /v1/job for a job run in group
// mode (weir.AppID, --app-id): this process's membership of the
// application's consumer group and the input partitions it owns. Absent
// for other jobs.
type GroupJSON struct {
	AppID      string `json:"app_id"`
	MemberID   string `json:"member_id"`
	Generation int32  `json:"generation"` // -1 before the first assignment
	Rebalances int64  `json:"rebalances"`
	// Partitions are sorted by topic and partition.
	Partitions []GroupPartitionJSON `json:"partitions"`
}

// GroupPartitionJSON is one owned partition. Committed is the offset
// committed as of this process's last transaction, End the partition's
// end as last fetched, Lag the difference: null until known.
type GroupPartitionJSON struct {
	Topic        string    `json:"topic"`
	Partition    int32     `json:"partition"`
	AssignedTime time.Time `json:"assigned_time"`
	Committed    *int64    `json:"committed"`
	End          *int64    `json:"end"`
	Lag          *int64    `json:"lag"`
}

// group builds the "group" member, nil when the job is not in group mode.
func (s *Server) group() *GroupJSON {
	g, ok := s.cfg.Registry.Group.Snapshot()
	if !ok {
		return nil
	}
	out := &GroupJSON{AppID: g.AppID, MemberID: g.Member, Generation: g.Generation, Rebalances: g.Rebalances,
		Partitions: make([]GroupPartitionJSON, len(g.Partitions))}
	known := func(v int64) *int64 {
		if v < 0 {
			return nil
		}
		return &v
	}
	for i, p := range g.Partitions {
		out.Partitions[i] = GroupPartitionJSON{Topic: p.Topic, Partition: p.Partition, AssignedTime: p.Assigned,
			Committed: known(p.Committed), End: known(p.End), Lag: known(p.Lag())}
	}
	return out
}

// groupOf is the group part of the dashboard's first render.
func groupOf(reg *metrics.Registry) *metrics.GroupSnapshot {
	g, ok := reg.Group.Snapshot()
	if !ok {
		return nil
	}
	return &g
}
