package metrics

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Group is what a process of a group-mode job (weir.AppID) owns: its
// member id and generation in the application's consumer group and the
// input partitions assigned to it, with the offset it last committed for
// each. The Kafka connector's group runner updates it (through
// group.Status and the engine); the metrics and the dashboard
// read it. The zero value is a job not in group mode: nothing to show.
type Group struct {
	mu         sync.Mutex
	on         bool
	appID      string
	member     string
	generation int32
	rebalances int64
	parts      map[groupKey]*GroupPartition
}

type groupKey struct {
	topic     string
	partition int32
}

// GroupPartition is one owned partition.
type GroupPartition struct {
	Topic     string
	Partition int32
	// Assigned is when this process got the partition (this time).
	Assigned time.Time
	// Committed is the offset the process committed with its last
	// transaction, End the partition's end offset as last fetched; -1
	// when not known yet.
	Committed, End int64
}

// Lag is End - Committed, or -1 when either is unknown.
func (p GroupPartition) Lag() int64 {
	if p.Committed < 0 || p.End < 0 {
		return -1
	}
	return max(0, p.End-p.Committed)
}

// GroupSnapshot is a copy of Group's state.
type GroupSnapshot struct {
	AppID      string
	Member     string
	Generation int32
	// Rebalances counts the rebalances this process saw (a new generation
	// or a changed assignment).
	Rebalances int64
	// Partitions are sorted by topic and partition.
	Partitions []GroupPartition
}

// Start marks the job as run in group mode under appID, before it has
// an assignment.
func (g *Group) Start(appID string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.on, g.appID, g.generation = true, appID, -1
	if g.parts == nil {
		g.parts = map[groupKey]*GroupPartition{}
	}
}

// Assign sets the owned partitions (the whole set; their offsets are
// Commit's) as the group runner sees them, which it reports again and
// again: a partition kept keeps its assignment time and offsets, a new
// one is stamped now, with offsets unknown, and a report
// that changes the generation or the set counts as a rebalance.
func (g *Group) Assign(member string, generation int32, parts []GroupPartition, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.on = true
	changed := generation != g.generation || len(parts) != len(g.parts)
	next := make(map[groupKey]*GroupPartition, len(parts))
	for _, p := range parts {
		k := groupKey{p.Topic, p.Partition}
		if old := g.parts[k]; old != nil {
			next[k] = old
			continue
		}
		changed = true
		next[k] = &GroupPartition{Topic: p.Topic, Partition: p.Partition, Assigned: now, Committed: -1, End: -1}
	}
	if changed && generation >= 0 {
		g.rebalances++
	}
	g.member, g.generation, g.parts = member, generation, next
}

// Commit records the offsets a transaction committed (and the ends last
// fetched) for partitions the process owns.
func (g *Group) Commit(parts []GroupPartition) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range parts {
		if o := g.parts[groupKey{p.Topic, p.Partition}]; o != nil {
			o.Committed = p.Committed
			if p.End >= 0 {
				o.End = p.End
			}
		}
	}
}

// Snapshot copies the state; ok is false when the job is not in group
// mode.
func (g *Group) Snapshot() (s GroupSnapshot, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.on {
		return s, false
	}
	s = GroupSnapshot{AppID: g.appID, Member: g.member, Generation: g.generation, Rebalances: g.rebalances,
		Partitions: make([]GroupPartition, 0, len(g.parts))}
	for _, p := range g.parts {
		s.Partitions = append(s.Partitions, *p)
	}
	slices.SortFunc(s.Partitions, func(a, b GroupPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return s, true
}

var (
	groupLabels   = []string{"job", "topic", "partition"}
	descGrpInfo   = prometheus.NewDesc("weir_group_member_info", "This process's membership of its group-mode job's consumer group (value 1).", []string{"job", "app_id", "member_id"}, nil)
	descGrpGen    = prometheus.NewDesc("weir_group_generation", "Generation of the consumer group this process last got an assignment in (-1: none yet).", ckLabels, nil)
	descGrpReb    = prometheus.NewDesc("weir_group_rebalances_total", "Rebalances of the consumer group this process has seen (its generation or its assignment changed).", ckLabels, nil)
	descGrpOwned  = prometheus.NewDesc("weir_group_owned_partitions", "Input partitions this process owns (value 1 per owned partition).", groupLabels, nil)
	descGrpSince  = prometheus.NewDesc("weir_group_partition_assigned_timestamp_seconds", "When this process got the partition, Unix time.", groupLabels, nil)
	descGrpCommit = prometheus.NewDesc("weir_group_committed_offset", "Offset this process committed for the partition with its last transaction (absent before its first).", groupLabels, nil)
	descGrpLag    = prometheus.NewDesc("weir_group_lag_records", "The partition's end offset, as last fetched, minus the committed offset (absent until both are known).", groupLabels, nil)
)

func describeGroup(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descGrpInfo, descGrpGen, descGrpReb, descGrpOwned, descGrpSince, descGrpCommit, descGrpLag} {
		ch <- d
	}
}

// collectGroup sends the group metrics of a group-mode job (none
// otherwise).
func (r *Registry) collectGroup(ch chan<- prometheus.Metric) {
	s, ok := r.Group.Snapshot()
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(descGrpInfo, prometheus.GaugeValue, 1, r.Job, s.AppID, s.Member)
	ch <- prometheus.MustNewConstMetric(descGrpGen, prometheus.GaugeValue, float64(s.Generation), r.Job)
	ch <- prometheus.MustNewConstMetric(descGrpReb, prometheus.CounterValue, float64(s.Rebalances), r.Job)
	for _, p := range s.Partitions {
		lv := []string{r.Job, p.Topic, strconv.Itoa(int(p.Partition))}
		ch <- prometheus.MustNewConstMetric(descGrpOwned, prometheus.GaugeValue, 1, lv...)
		ch <- prometheus.MustNewConstMetric(descGrpSince, prometheus.GaugeValue, float64(p.Assigned.UnixNano())/1e9, lv...)
		if p.Committed >= 0 {
			ch <- prometheus.MustNewConstMetric(descGrpCommit, prometheus.GaugeValue, float64(p.Committed), lv...)
		}
		if lag := p.Lag(); lag >= 0 {
			ch <- prometheus.MustNewConstMetric(descGrpLag, prometheus.GaugeValue, float64(lag), lv...)
		}
	}
}
