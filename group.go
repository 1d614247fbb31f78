package weir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/ckstore"
	"github.com/weirstream/weir/internal/hooks"
)

// AppID runs the job in group mode: every process started with the same
// application id (and the same job) joins one Kafka consumer group named
// by it, the partitions of the job's Kafka input topics are assigned
// across the processes, and each process runs the job over the partitions
// it owns, committing its output and input offsets in one Kafka
// transaction per commit interval (the checkpoint interval, 100ms by
// default). The job's sources must be Kafka sources, and the Kafka
// connector (github.com/weirstream/weir/connector/kafka) runs it.
//
// A KeyBy crosses processes through the repartition topic
// "<app id>-<keyed operator's uid>-repartition", which the connector
// creates (kafka.RepartitionPartitions sets its partitions; key group kg
// goes to partition kg*N/max-parallelism), written in the same
// transactions and read read_committed, with watermarks carried as
// markers per input partition. So far the KeyBy must follow one Kafka
// source through one-to-one operators (joins and chains of KeyBys are
// refused), and keyed state does not move with a rebalance: a keyed
// operator whose partitions move loses the state of their keys
// (changelogs are not built). See docs/scale-out.md for the model, its
// guarantees and its limits.
func AppID(id string) Option {
	return option{fmt.Sprintf("AppID(%q)", id), scopeJob, func(c *config) { c.appID = id }}
}

// defaultCommitInterval is the commit interval of a group-mode job without
// Checkpointing (Kafka Streams' default under exactly-once).
const defaultCommitInterval = 100 * time.Millisecond

// runGroup hands the job to the group runner of the Kafka connector.
func (j *Job) runGroup(ctx context.Context) error {
	id := j.cfg.appID
	if strings.TrimSpace(id) == "" || strings.ContainsAny(id, "/\\ \t\n") {
		return fmt.Errorf("weir: app id %q: must be non-empty, without spaces or slashes", id)
	}
	if hooks.GroupRun == nil {
		return errors.New("weir: AppID: group mode needs the Kafka connector linked in (import github.com/weirstream/weir/connector/kafka)")
	}
	if j.cfg.restoreFrom != "" {
		return errors.New("weir: AppID: a group-mode job keeps its progress in Kafka; RestoreFrom does not apply")
	}
	g := hooks.GroupJob{AppID: id, Interval: j.cfg.ckInterval, Logger: j.cfg.logger}
	if g.Interval <= 0 {
		g.Interval = defaultCommitInterval
		j.cfg.ckInterval = g.Interval
	}
	if hooks.OpenExchange == nil {
		for _, n := range j.nodes {
			for _, e := range n.inputs {
				if e.part == hashed {
					return fmt.Errorf("weir: AppID: operator %q is keyed (KeyBy): its input must cross processes through a repartition topic, and the Kafka connector linked in does not offer one", n.name)
				}
			}
		}
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
	g.RunLocal = j.runLocal
	g.Status = j.newGroupStatus()
	return hooks.GroupRun(ctx, g)
}

// runLocal runs one attempt of the job from empty state, checkpointing into
// a temporary directory: in group mode the checkpoints are the commit
// points of the Kafka transactions, and progress lives in Kafka (the
// group's committed offsets), not in the directory.
func (j *Job) runLocal(ctx context.Context) error {
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
	store, err := ckstore.Open(cfg)
	if err != nil {
		return err
	}
	err = j.execute(ctx, store, nil)
	if p, ok := err.(permanent); ok {
		return p.error
	}
	return err
}
