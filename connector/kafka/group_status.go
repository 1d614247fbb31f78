package kafka

import (
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir/internal/group"
)

// What a process of a group-mode job owns, for the job's metrics and
// dashboard (group.Status): the runner reports its assignment each
// time its loop reads it and at every commit (which also refreshes the
// generation, which a rebalance that moves nothing of this process's
// changes without a callback), and the offsets each commit carried.

// noteAssignment reports parts, the assignment the runner works on, with
// the member id and generation the client has now. Called from the
// runner's goroutine.
func (r *groupRunner) noteAssignment(parts []tp) {
	if r.job.Status == nil {
		return
	}
	member, gen := r.cl.GroupMetadata()
	out := make([]group.Partition, len(parts))
	for i, p := range parts {
		out[i] = group.Partition{Topic: p.topic, Partition: p.partition, Committed: -1, End: -1}
	}
	r.job.Status.Assigned(member, gen, out)
}

// noteCommit reports a committed transaction: per partition of the run,
// its mark, or where the run started (the offset committed before it)
// when it has not moved, with the end its last fetch saw.
func (r *groupRunner) noteCommit(lr *localRun, marks map[string]map[int32]kgo.EpochOffset) {
	if r.job.Status == nil {
		return
	}
	r.noteAssignment(r.assignment())
	out := make([]group.Partition, 0, len(lr.starts))
	lr.cons.mu.Lock()
	for p, at := range lr.starts {
		if m, ok := marks[p.topic][p.partition]; ok {
			at = m.Offset
		}
		gp := group.Partition{Topic: p.topic, Partition: p.partition, Committed: at, End: -1}
		if ps := lr.cons.mu.parts[p]; ps != nil && ps.endKnown {
			gp.End = ps.end
		}
		out = append(out, gp)
	}
	lr.cons.mu.Unlock()
	r.job.Status.Committed(out)
}

// fetchEnd is the end of a fetched partition a reader can reach: the last
// stable offset when the fetch gives one (group mode reads committed),
// else the high watermark; -1 for a failed fetch.
func fetchEnd(p *kgo.FetchPartition) int64 {
	if p.Err != nil {
		return -1
	}
	if p.LastStableOffset >= 0 {
		return p.LastStableOffset
	}
	return p.HighWatermark
}
