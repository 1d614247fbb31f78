package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/ckstore"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/coordinator"
	"github.com/weirstream/weir/internal/group"
	"github.com/weirstream/weir/internal/metrics"
)

// defaultCommitInterval is the commit interval of a group-mode job without
// Checkpointing (Kafka Streams' default under exactly-once).
const defaultCommitInterval = 100 * time.Millisecond

// findGroupRunner returns the group runner of the job's first source that
// offers one, looking through wrappers (group.Unwrap).
func (j *Job) findGroupRunner() group.Runner {
	for _, n := range j.nodes {
		if n.run == nil {
			continue
		}
		if rs, ok := group.Unwrap(n.impl).(group.RunnerSource); ok {
			return rs.GroupRunner()
		}
	}
	return nil
}

// runGroup hands the job to the group runner of its sources.
func (j *Job) runGroup(ctx context.Context) error {
	id := j.cfg.appID
	if strings.TrimSpace(id) == "" || strings.ContainsAny(id, "/\\ \t\n") {
		return fmt.Errorf("weir: app id %q: must be non-empty, without spaces or slashes", id)
	}
	j.groupRunner = j.findGroupRunner()
	if j.groupRunner == nil {
		return errors.New("weir: AppID: group mode needs the Kafka connector: its sources (github.com/weirstream/weir/connector/kafka) run the job over a consumer group, and this job has none")
	}
	if j.cfg.restoreFrom != "" {
		return errors.New("weir: AppID: a group-mode job keeps its progress in Kafka; RestoreFrom does not apply")
	}
	g := group.Job{AppID: id, Interval: j.cfg.ckInterval, Logger: j.cfg.logger}
	if g.Interval <= 0 {
		g.Interval = defaultCommitInterval
		j.cfg.ckInterval = g.Interval
	}
	xs, err := j.rewriteExchanges()
	if err != nil {
		return err
	}
	g.Exchanges = xs
	for _, n := range j.nodes {
		if n.impl == nil || n.exchangeOf != nil {
			continue
		}
		if n.run != nil {
			g.Sources = append(g.Sources, n.impl)
		} else {
			g.Sinks = append(g.Sinks, n.impl)
		}
	}
	// Each local run compiles the graph again, over other splits: it
	// starts from the parallelism the job was given, not from what the
	// last run's splits capped it to.
	j.groupPar = make([]int, len(j.nodes))
	j.groupPart = map[*edge]partitioning{}
	for i, n := range j.nodes {
		j.groupPar[i] = n.parallelism
		for _, e := range n.inputs {
			j.groupPart[e] = e.part
		}
	}
	for _, n := range j.nodes {
		for _, e := range n.inputs {
			if e.part != hashed {
				continue
			}
			// A keyed operator: its state moves between processes through
			// a changelog topic, partitioned as the repartition topic
			// that feeds it (its exchange), so a process owns the key
			// groups of the repartition partitions it is assigned.
			if (j.cfg.incremental || j.cfg.changelog) && j.cfg.stateBackend == "pebble" {
				return fmt.Errorf("weir: AppID: operator %q is keyed: group mode writes keyed state to changelog topics by key group, which IncrementalCheckpoints and StateChangelog do not produce", n.name)
			}
			op := group.KeyedOp{UID: n.uid, Name: n.name}
			for _, s := range j.upstreamSources(n) {
				if s.exchangeOf != nil {
					op.Exchange = s.exchangeOf
				}
			}
			g.Keyed = append(g.Keyed, op)
			break
		}
	}
	g.MaxParallelism = j.cfg.maxParallelism
	g.RunLocal = j.runLocal
	g.Status = j.newGroupStatus()
	return j.groupRunner.Run(ctx, g)
}

// runLocal runs one attempt of the job, from empty state or from the keyed
// state the group runner read from the changelogs, checkpointing into a
// temporary directory: in group mode the checkpoints are the commit
// points of the Kafka transactions, and progress lives in Kafka (the
// group's committed offsets), not in the directory.
func (j *Job) runLocal(ctx context.Context, gl *group.Local) error {
	for i, n := range j.nodes {
		n.parallelism = j.groupPar[i]
		for _, e := range n.inputs {
			e.part = j.groupPart[e]
		}
	}
	dir, err := os.MkdirTemp("", "weir-group-")
	if err != nil {
		return fmt.Errorf("weir: group mode: %w", err)
	}
	defer os.RemoveAll(dir)
	cfg := j.ckConfig()
	cfg.Dir, cfg.RestoreFrom, cfg.StartFresh = dir, "", true
	var restored *restoredState
	if gl != nil {
		cfg.OnPersist = func(id int64, snaps []*coordinator.TaskSnapshot) error {
			return gl.Persist(id, keyedStates(snaps))
		}
		restored = restoredFromChangelogs(gl)
		if restored != nil {
			j.cfg.logger.Info("restoring keyed state", "from", gl.From, "key-groups", gl.KeyGroups, "bytes", gl.Bytes)
			j.metrics.Checkpoints.SetRestored(metrics.RestoreRecord{Path: gl.From, Time: time.Now()})
		}
		j.metrics.Checkpoints.RestoredKeyGroups.Add(gl.KeyGroups)
		j.metrics.Checkpoints.RestoredBytes.Add(gl.Bytes)
	}
	store, err := ckstore.Open(cfg)
	if err != nil {
		return err
	}
	err = j.execute(ctx, store, restored)
	if p, ok := err.(permanent); ok {
		return p.error
	}
	return err
}

// upstreamSources returns the source nodes upstream of n.
func (j *Job) upstreamSources(n *node) []*node {
	seen := map[*node]bool{}
	var out []*node
	var walk func(m *node)
	walk = func(m *node) {
		if seen[m] {
			return
		}
		seen[m] = true
		if m.run != nil {
			out = append(out, m)
		}
		for _, e := range m.inputs {
			walk(e.from)
		}
	}
	walk(n)
	return out
}

// keyedStates picks the keyed state (state files with key groups) out of
// a checkpoint's snapshots.
func keyedStates(snaps []*coordinator.TaskSnapshot) []group.KeyedState {
	var out []group.KeyedState
	for _, s := range snaps {
		for _, st := range s.States {
			if st.Groups != nil {
				out = append(out, group.KeyedState{UID: st.UID, Watermark: st.Watermark, Groups: st.Groups})
			}
		}
	}
	return out
}

// restoredFromChangelogs turns the keyed state the group runner read from
// the changelog topics into state files for the restore-by-key-group path
// of checkpoints (restoreKeyed): one per operator and changelog
// partition, with no subtask of its own (Parallelism 0), so that each
// operator subtask takes the key groups in its range and the minimum
// watermark of the partitions it takes groups from.
func restoredFromChangelogs(gl *group.Local) *restoredState {
	if len(gl.Restore) == 0 {
		return nil
	}
	r := &restoredState{Path: gl.From, Ops: map[string][]codec.StateFile{}}
	for _, ks := range gl.Restore {
		r.Ops[ks.UID] = append(r.Ops[ks.UID], codec.StateFile{UID: ks.UID, Name: ks.UID, Subtask: -1, Watermark: ks.Watermark, Groups: ks.Groups})
	}
	return r
}
