package wlog

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
)

// syncGroupWriters opens n partitions' writers of a new topic.
func syncGroupWriters(t *testing.T, n int, cfg TopicConfig) (*Topic, []*Writer) {
	t.Helper()
	cfg.Partitions = n
	topic, err := CreateTopic(t.TempDir(), "g", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ws := make([]*Writer, n)
	for p := range ws {
		if ws[p], err = topic.OpenWriter(p, WithLogger(quietLogger())); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws[p].Close() })
	}
	return topic, ws
}

// synced reports whether w's active segment is recorded durable to its
// end (the recovery point is at its end and nothing is dirty).
func syncedState(w *Writer) (dirty bool, rpPos, pos int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.dirty, w.mu.rpPos, w.mu.pos
}

// TestSyncGroup: appends given a group leave their fsync to it (the
// recovery point stays behind until Wait), and after Wait every writer's
// segment is recorded durable to its end and reads back whole, with the
// kernel's asynchronous fsync and with the goroutine fallback, also when
// several goroutines append in one round and a segment rolls before the
// group's Wait.
func TestSyncGroup(t *testing.T) {
	for _, mode := range []string{"aio", "goroutines"} {
		t.Run(mode, func(t *testing.T) {
			tp, ws := syncGroupWriters(t, 4, TopicConfig{SegmentBytes: 4 << 10})
			var g SyncGroup
			defer g.Close()
			g.noAIO = mode == "goroutines"
			var want [4][]Record
			for round := range 6 {
				var wg sync.WaitGroup
				for p, w := range ws {
					wg.Go(func() {
						recs := kafkaRecs(100*round+10*p, 1+round%3)
						if _, err := w.AppendKafkaTo(&g, kafkaBatch(recs), "", ProducerSeq{}); err != nil {
							t.Error(err)
						}
						want[p] = append(want[p], recs...)
					})
				}
				wg.Wait()
				for p, w := range ws {
					if dirty, rp, pos := syncedState(w); !dirty || rp >= pos {
						t.Fatalf("round %d, partition %d: before Wait dirty %v, recovery point %d of %d: want the fsync left to the group", round, p, dirty, rp, pos)
					}
				}
				if round == 3 {
					if err := ws[1].Roll(); err != nil { // syncs the segment itself
						t.Fatal(err)
					}
				}
				if err := g.Wait(); err != nil {
					t.Fatal(err)
				}
				for p, w := range ws {
					if dirty, rp, pos := syncedState(w); dirty || rp != pos {
						t.Fatalf("round %d, partition %d: after Wait dirty %v, recovery point %d of %d: want durable to the end", round, p, dirty, rp, pos)
					}
				}
			}
			if mode == "aio" && g.aio == nil && !g.noAIO {
				t.Fatal("no kernel context after the rounds")
			}
			for p, w := range ws {
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				var offs []Record
				for i := range want[p] {
					r := want[p][i]
					r.Offset = int64(i)
					offs = append(offs, r)
				}
				sameRecords(t, readPartition(t, tp, p, Earliest()), offs)
			}
		})
	}
}

// TestSyncGroupFailedFsync: a failed fsync started by a group fails its
// writer (as a failed fsync in an append does): Wait names the
// partition, the writer's Err says so and it refuses appends; the other
// writers of the group are durable.
func TestSyncGroupFailedFsync(t *testing.T) {
	_, ws := syncGroupWriters(t, 2, TopicConfig{})
	var g SyncGroup
	g.noAIO = true
	bad := ws[1]
	badFile := bad.mu.f
	groupFdatasync = func(f *os.File) error {
		if f == badFile {
			return errors.New("injected EIO")
		}
		return fdatasyncHeld(f)
	}
	defer func() { groupFdatasync = fdatasyncHeld }()
	for _, w := range ws {
		if _, err := w.AppendKafkaTo(&g, kafkaBatch(kafkaRecs(0, 3)), "", ProducerSeq{}); err != nil {
			t.Fatal(err)
		}
	}
	err := g.Wait()
	if err == nil || !strings.Contains(err.Error(), "partition 1 of g") || !strings.Contains(err.Error(), "injected EIO") {
		t.Fatalf("Wait: %v, want partition 1's fsync error", err)
	}
	if ws[0].Err() != nil {
		t.Fatalf("partition 0: %v, want it usable", ws[0].Err())
	}
	if dirty, rp, pos := syncedState(ws[0]); dirty || rp != pos {
		t.Fatalf("partition 0: dirty %v, recovery point %d of %d: want durable", dirty, rp, pos)
	}
	if bad.Err() == nil {
		t.Fatal("partition 1 usable after its fsync failed")
	}
	if _, err := bad.AppendKafkaTo(&g, kafkaBatch(kafkaRecs(3, 1)), "", ProducerSeq{}); err == nil {
		t.Fatal("partition 1 took an append after its fsync failed")
	}
}

// TestSyncGroupMoreThanItsRing: a round with more fsyncs than the kernel
// context has room for (the kernel rounds a small context up to a page
// of events, about 127: 300 partitions) sends the rest to goroutines; it
// does not wait for room that only its own Wait would make (it hung so).
func TestSyncGroupMoreThanItsRing(t *testing.T) {
	defer func(n int) { aioEvents = n }(aioEvents)
	aioEvents = 2
	_, ws := syncGroupWriters(t, 300, TopicConfig{})
	var g SyncGroup
	defer g.Close()
	for round := range 2 {
		for _, w := range ws {
			if _, err := w.AppendKafkaTo(&g, kafkaBatch(kafkaRecs(round, 2)), "", ProducerSeq{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		for p, w := range ws {
			if dirty, rp, pos := syncedState(w); dirty || rp != pos {
				t.Fatalf("round %d, partition %d: dirty %v, recovery point %d of %d: want durable", round, p, dirty, rp, pos)
			}
		}
	}
}
