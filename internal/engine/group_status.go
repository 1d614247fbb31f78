package weir

import (
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/metrics"
)

// groupStatus passes what the Kafka connector's group runner reports of
// this process's assignment to the job's metrics registry, which the
// metrics endpoint and the dashboard read: the connector and the
// dashboard never import each other.
type groupStatus struct{ j *Job }

var _ hooks.GroupStatus = groupStatus{}

// newGroupStatus marks the job's registry as in group mode.
func (j *Job) newGroupStatus() hooks.GroupStatus {
	j.metrics.Group.Start(j.cfg.appID)
	return groupStatus{j}
}

func (s groupStatus) Assigned(member string, generation int32, parts []hooks.GroupPartition) {
	s.j.metrics.Group.Assign(member, generation, convertGroupParts(parts), s.j.cfg.clock())
}

func (s groupStatus) Committed(parts []hooks.GroupPartition) {
	s.j.metrics.Group.Commit(convertGroupParts(parts))
}

func convertGroupParts(parts []hooks.GroupPartition) []metrics.GroupPartition {
	out := make([]metrics.GroupPartition, len(parts))
	for i, p := range parts {
		out[i] = metrics.GroupPartition{Topic: p.Topic, Partition: p.Partition, Committed: p.Committed, End: p.End}
	}
	return out
}
