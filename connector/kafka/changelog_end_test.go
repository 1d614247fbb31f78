package kafka_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/weirstream/weir/connector/kafka"
)

// checkChangelogEnds checks what group appID committed for the
// repartition topic of the keyed operator uid: the offsets of partitions
// whose changelog partition a commit wrote carry its end (";cl=N" after the
// watermarks), which a restore waits for; the changelog's last stable
// offset is at or past it.
func checkChangelogEnds(t *testing.T, addrs []string, appID, uid string) {
	t.Helper()
	adm := newAdmin(t, addrs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(ctx, appID)
	if err != nil {
		t.Fatal(err)
	}
	changelog := kafka.ChangelogTopic(appID, uid)
	lso, err := adm.ListCommittedOffsets(ctx, changelog)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic != appID+"-"+uid+"-repartition" {
			return
		}
		_, v, ok := strings.Cut(o.Metadata, ";cl=")
		if !ok {
			return
		}
		end, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Errorf("partition %d: metadata %q", o.Partition, o.Metadata)
			return
		}
		found++
		if l, ok := lso.Lookup(changelog, o.Partition); !ok || l.Offset < end {
			t.Errorf("changelog %s partition %d: last stable offset %v below the committed end %d", changelog, o.Partition, l.Offset, end)
		}
	})
	// Only the partitions whose changelog partition the LAST commit wrote
	// carry an end (a later commit that writes nothing there commits its
	// offset without one, which is safe: the transaction that wrote the
	// changelog ended before it). Which partitions those are depends on
	// when the commits fell, so none may carry one; that the restore waits
	// for the end is TestChangelogRestoreWaitsForTheCommit's.
	t.Logf("%d committed offsets of %s's repartition topic carry its changelog's end", found, uid)
}
