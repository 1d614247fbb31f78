package kafka_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
)

// TestMain builds each program the tests start (internal/groupjob,
// internal/crashjob) once for all of them (kafkatest.Build), from the
// start when the whole package runs.
func TestMain(m *testing.M) {
	os.Exit(kafkatest.Main(m, "./internal/groupjob", "./internal/crashjob"))
}

// jobGroup is a group of internal/groupjob processes (kafkatest.Group)
// with app id app on the cluster at addrs: each member is started with
// args after the flags every group test gives (a session timeout of
// 1.5 s, so that a killed member's partitions move soon, and -v, whose
// log a failing test shows).
func jobGroup(t *testing.T, addrs []string, app string, args ...string) *kafkatest.Group {
	t.Helper()
	return jobGroupOf(t, addrs, app, func(string) []string { return args })
}

// jobGroupOf is jobGroup with arguments that depend on the member.
func jobGroupOf(t *testing.T, addrs []string, app string, args func(name string) []string) *kafkatest.Group {
	t.Helper()
	bin := groupJobBin(t)
	return kafkatest.NewGroup(t, bin, nil, func(name string) []string {
		return append([]string{"--brokers", strings.Join(addrs, ","), "--app-id", app, "--session-timeout", "1500ms", "-v"}, args(name)...)
	})
}

// reference runs internal/groupjob as one process (no app id), bounded,
// with args (its --in, --out, --keyed), and returns its committed output,
// sorted: what a group's output must equal.
func reference(t *testing.T, addrs []string, out string, args ...string) []string {
	t.Helper()
	kafkatest.Run(t, groupJobBin(t), append([]string{"--brokers", strings.Join(addrs, ","), "--out", out, "--bounded"}, args...)...)
	return committedValues(t, addrs, out)
}

// outputCount counts the committed records of topic whose value starts
// with prefix.
func outputCount(t *testing.T, addrs []string, topic, prefix string) func() int {
	return func() int {
		n := 0
		for _, v := range committedValues(t, addrs, topic) {
			if strings.HasPrefix(v, prefix) {
				n++
			}
		}
		return n
	}
}

// ownersOf are the members (client ids) that own a partition of topic in
// group app, nil if the group cannot be described yet.
func ownersOf(addrs []string, app, topic string) map[string]bool {
	d, err := kafka.DescribeGroup(context.Background(), addrs, app)
	if err != nil {
		return nil
	}
	owners := map[string]bool{}
	for _, p := range d.Partitions {
		if p.Topic == topic && p.Owner != "" {
			owners[p.Owner] = true
		}
	}
	return owners
}

// describeGroup describes group app and logs it.
func describeGroup(t *testing.T, addrs []string, app string) *kafka.GroupDescription {
	t.Helper()
	d, err := kafka.DescribeGroup(context.Background(), addrs, app)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	d.WriteText(&sb)
	t.Logf("\n%s", sb.String())
	return d
}

// restoredSome reports whether describe shows a restore of key groups
// from a changelog of app (which one depends on when the input was read
// to its end: the note rides on the input offsets).
func restoredSome(d *kafka.GroupDescription, app string) bool {
	for _, r := range d.Restores {
		if strings.HasPrefix(r.Changelog, app+"-") && r.KeyGroups > 0 {
			return true
		}
	}
	return false
}

// victimIf is name if the moment of the kill has come, else "" (a
// kafkatest.KillMidRun's Victim).
func victimIf(now bool, name string) string {
	if now {
		return name
	}
	return ""
}

// processCluster skips the test in -short mode (it starts processes), and
// starts the cluster of a multi-process group test with opts (its
// topics): members ask for a session timeout of 1.5 s (jobGroup), which
// kfake allows with a floor of 1 s.
func processCluster(t *testing.T, opts ...kfake.Opt) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts processes")
	}
	_, addrs := newCluster(t, append(opts, kfake.GroupMinSessionTimeout(time.Second))...)
	return addrs
}

// waitEveryMemberOwns waits for group app to be stable with n members,
// each owning a partition of every one of topics.
func waitEveryMemberOwns(g *kafkatest.Group, addrs []string, app string, n int, topics ...string) {
	g.WaitFor(fmt.Sprintf("%d members owning a partition of each of %v", n, topics), time.Minute, func() bool {
		d, err := kafka.DescribeGroup(context.Background(), addrs, app)
		if err != nil || d.State != "Stable" || len(d.Members) != n {
			return false
		}
		for _, m := range d.Members {
			for _, topic := range topics {
				if !slices.ContainsFunc(m.Assigned, func(p string) bool { return strings.HasPrefix(p, topic+"/") }) {
					return false
				}
			}
		}
		return true
	})
}

// waitCommittedTo waits for group app to have committed the offsets of
// the given partitions of topic at n (read through: what the test
// wrote there before).
func waitCommittedTo(g *kafkatest.Group, addrs []string, app, what string, n int64, topic string, partitions ...int32) {
	g.WaitFor(what, time.Minute, func() bool {
		d, err := kafka.DescribeGroup(context.Background(), addrs, app)
		if err != nil {
			return false
		}
		done := 0
		for _, p := range d.Partitions {
			if p.Topic == topic && slices.Contains(partitions, p.Partition) && p.Committed == n {
				done++
			}
		}
		return done == len(partitions)
	})
}
