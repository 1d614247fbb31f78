package kafka_test

import (
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	wlog "github.com/weirstream/weir/connector/log"
	"github.com/weirstream/weir/internal/testing/crashtest"
)

func crashKills() int { return crashtest.Kills(20) }

// TestKafkaKillAndRestart is the real crash test: this process hosts the
// Kafka cluster (kfake, on loopback); a job process reads from it and
// writes to it through the exactly-once sink, and is killed with SIGKILL
// at random moments and started again on the same checkpoint directory
// until it completes. The read_committed output must equal that of a run
// without failures, record for record. Rounds on fresh output topics go on
// until WEIR_CRASH_KILLS kills (default 20) have happened.
func TestKafkaKillAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	_, addrs := newCluster(t, seedTopics(3, "ref"))
	kafkaKillAndRestart(t, addrs, crashKills())
}

// kafkaKillAndRestart is TestKafkaKillAndRestart on the cluster at addrs
// (which has topic ref, 3 partitions), until n kills.
func kafkaKillAndRestart(t *testing.T, addrs []string, n int) {
	bin := crashtest.Build(t, "./internal/crashjob")
	evs := events(30000, 40)
	// The input is a topic of the embedded log, as in the issue's
	// "log -> keyed windows -> Kafka exactly-once sink".
	logDir := t.TempDir()
	fillLog(t, logDir, "in", 4, evs)
	args := func(root, out string) []string {
		return []string{"--brokers", strings.Join(addrs, ","), "--in", "in", "--log-dir", logDir, "--out", out, "--txn-prefix", out,
			"--checkpoint-dir", filepath.Join(root, "ck"), "--interval", "50ms", "--pace", "40"}
	}
	// The failure-free run, which must match the model too.
	if out, err := exec.Command(bin, args(t.TempDir(), "ref")...).CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	want := committedValues(t, addrs, "ref")
	sameOutput(t, "failure-free run", want, windowCounts(evs))

	rng := rand.New(rand.NewPCG(crashtest.Seed(t), 2))
	kills, rounds := 0, 0
	deadline := time.Now().Add(4 * time.Minute)
	for kills < n {
		rounds++
		root, topic := t.TempDir(), "out"+strconv.Itoa(rounds)
		createTopic(t, addrs, topic, 3)
		pace := crashtest.Pacer{Progress: func() int64 { return crashtest.CommittedCheckpoint(filepath.Join(root, "ck")) }}
		for attempt := 0; ; attempt++ {
			if time.Now().After(deadline) {
				t.Fatalf("out of time after %d kills", kills)
			}
			// The moment of the kill (not a wait for a result).
			killed, _, stderr, err := crashtest.Attempt(exec.Command(bin, args(root, topic)...), pace.Window(time.Duration(100+rng.IntN(500))*time.Millisecond))
			if killed {
				pace.Killed()
				kills++
				continue
			}
			if err != nil {
				t.Fatalf("round %d attempt %d failed: %v\n%s", rounds, attempt, err, stderr)
			}
			break // completed
		}
		sameOutput(t, "round "+strconv.Itoa(rounds)+" after "+strconv.Itoa(kills)+" kills", committedValues(t, addrs, topic), want)
	}
	t.Logf("%d kills over %d rounds; each round's read_committed output equals the failure-free run's %d records", kills, rounds, len(want))
}

// fillLog writes evs round robin into the partitions of a new topic of the
// embedded log in dir.
func fillLog(t *testing.T, dir, topic string, parts int, evs []event) {
	t.Helper()
	tp, err := wlog.CreateTopic(dir, topic, wlog.TopicConfig{Partitions: parts})
	if err != nil {
		t.Fatal(err)
	}
	for p := range parts {
		w, err := tp.OpenWriter(p)
		if err != nil {
			t.Fatal(err)
		}
		var recs []wlog.Record
		for i := p; i < len(evs); i += parts {
			recs = append(recs, wlog.Record{Timestamp: evs[i].TS, Key: []byte(evs[i].Key), Value: encodeEvent(evs[i])})
		}
		if _, err := w.Append(recs); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
