package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// GroupDescription is what `weir group describe` shows of the processes
// of a group-mode job (weir.AppID): the group's state, its members (one
// per process, named "<app id>-<instance id>") with the input partitions
// each owns, and per partition the offset committed with the last
// transaction and the lag behind the partition's end; and the last
// restore of keyed state from the changelog topics by each process that
// committed since (docs/scale-out.md, "State that moves").
type GroupDescription struct {
	AppID      string
	State      string // Empty, Stable, PreparingRebalance, ... ("Dead": no such group)
	Balancer   string
	Members    []GroupMember
	Partitions []GroupPartition
	Restores   []GroupRestore
}

// GroupRestore is what a process restored from one changelog topic when
// its local job last started (process start or reassignment), as the
// process recorded it in the metadata of the offsets it committed.
type GroupRestore struct {
	Member    string // ClientID of the process
	Changelog string
	KeyGroups int64
	Bytes     int64
	At        time.Time     // when the restore began
	Took      time.Duration // the whole restore, every changelog
}

// GroupMember is one process of the group.
type GroupMember struct {
	ClientID string // "<app id>-<instance id>"
	Host     string
	Assigned []string // "topic/partition"
}

// GroupPartition is one input partition of the group.
type GroupPartition struct {
	Topic     string
	Partition int32
	Owner     string // ClientID of the member that owns it; "" when none
	Committed int64  // -1: nothing committed yet
	End       int64
	Lag       int64 // -1: unknown
}

// DescribeGroup describes the group of app id appID on the cluster at
// brokers.
func DescribeGroup(ctx context.Context, brokers []string, appID string, opts ...ClientOption) (*GroupDescription, error) {
	c := sourceConfig{client: defaultClientConfig(brokers)}
	for _, o := range opts {
		o.applySource(&c)
	}
	if err := c.client.validate("group describe"); err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(c.client.kgoOpts()...)
	if err != nil {
		return nil, fmt.Errorf("kafka: group describe: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var lags kadm.DescribedGroupLags
	err = retry(ctx, c.client.retryTimeout, "describe group "+appID, func() error {
		var err error
		lags, err = adm.Lag(ctx, appID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("kafka: describe group %q: %w", appID, err)
	}
	l, ok := lags[appID]
	if !ok {
		return nil, fmt.Errorf("kafka: describe group %q: no answer for the group", appID)
	}
	if err := l.Error(); err != nil {
		return nil, fmt.Errorf("kafka: describe group %q: %w", appID, err)
	}
	d := &GroupDescription{AppID: appID, State: l.State, Balancer: l.Protocol}
	owner := map[tp]string{}
	for _, m := range l.Members {
		gm := GroupMember{ClientID: m.ClientID, Host: m.ClientHost}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				for _, p := range t.Partitions {
					gm.Assigned = append(gm.Assigned, fmt.Sprintf("%s/%d", t.Topic, p))
					owner[tp{t.Topic, p}] = m.ClientID
				}
			}
		}
		slices.Sort(gm.Assigned)
		d.Members = append(d.Members, gm)
	}
	seen := map[string]bool{}
	for _, ml := range l.Lag.Sorted() {
		if md := ml.Commit.Metadata; md != "" && !seen[md] {
			seen[md] = true
			var n restoreNote
			if json.Unmarshal([]byte(md), &n) == nil && n.Member != "" {
				for _, rs := range n.Restores {
					d.Restores = append(d.Restores, GroupRestore{Member: n.Member, Changelog: rs.Changelog, KeyGroups: rs.KeyGroups, Bytes: rs.Bytes,
						At: time.UnixMilli(n.AtMillis), Took: time.Duration(n.TookMs) * time.Millisecond})
				}
			}
		}
		gp := GroupPartition{Topic: ml.Topic, Partition: ml.Partition, Owner: owner[tp{ml.Topic, ml.Partition}],
			Committed: ml.Commit.At, End: ml.End.Offset, Lag: ml.Lag}
		if ml.Commit.At < 0 {
			gp.Committed = -1
		}
		d.Partitions = append(d.Partitions, gp)
	}
	return d, nil
}

// WriteText writes d as `weir group describe` prints it.
func (d *GroupDescription) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "group %s: %s, %d member(s), balancer %s\n\n", d.AppID, d.State, len(d.Members), d.Balancer)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tHOST\tPARTITIONS")
	for _, m := range d.Members {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", m.ClientID, m.Host, strings.Join(m.Assigned, " "))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tOWNER\tCOMMITTED\tEND\tLAG")
	for _, p := range d.Partitions {
		committed, lag, owner := fmt.Sprint(p.Committed), fmt.Sprint(p.Lag), p.Owner
		if p.Committed < 0 {
			committed = "-"
		}
		if p.Lag < 0 {
			lag = "-"
		}
		if owner == "" {
			owner = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\n", p.Topic, p.Partition, owner, committed, p.End, lag)
	}
	if len(d.Restores) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "RESTORED BY\tCHANGELOG\tKEY GROUPS\tBYTES\tAT\tTOOK")
		for _, r := range d.Restores {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", r.Member, r.Changelog, r.KeyGroups, r.Bytes, r.At.UTC().Format(time.RFC3339), r.Took)
		}
	}
	return tw.Flush()
}
