package engine

import (
	"github.com/weirstream/weir/internal/group"
	"github.com/weirstream/weir/internal/metrics"
)

// groupStatus passes what the Kafka connector's group runner reports of
// this process's assignment to the job's metrics registry, which the
// metrics endpoint and the dashboard read: the connector and the
// dashboard never import each other.
type groupStatus struct{ j *Job }

var _ group.Status = groupStatus{}

// newGroupStatus marks the job's registry as in group mode.
func (j *Job) newGroupStatus() group.Status {
	j.metrics.Group.Start(j.cfg.appID)
	return groupStatus{j}
}

func (s groupStatus) Assigned(member string, generation int32, parts []group.Partition) {
	s.j.metrics.Group.Assign(member, generation, convertGroupParts(parts), s.j.cfg.clock())
}

func (s groupStatus) Committed(parts []group.Partition) {
	s.j.metrics.Group.Commit(convertGroupParts(parts))
}

func convertGroupParts(parts []group.Partition) []metrics.GroupPartition {
	out := make([]metrics.GroupPartition, len(parts))
	for i, p := range parts {
		out[i] = metrics.GroupPartition{Topic: p.Topic, Partition: p.Partition, Committed: p.Committed, End: p.End}
	}
	return out
}
