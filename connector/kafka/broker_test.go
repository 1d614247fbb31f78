package kafka_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/weirstream/weir/broker"
	"github.com/weirstream/weir/internal/testing/crashtest"
)

// weirBroker starts weir's own Kafka-protocol broker (package broker,
// `weir broker`) in this process over a fresh log directory, with the
// given topics and partition counts, closed at the end of the test. The
// tests below run the kfake tests' bodies against it.
func weirBroker(t testing.TB, topics map[string]int) []string {
	t.Helper()
	b, err := broker.Start(context.Background(), broker.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0",
		InitialRebalanceDelay: -1, GroupMinSessionTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(testLogWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	addrs := []string{b.Addr()}
	for name, n := range topics {
		createTopic(t, addrs, name, int32(n))
	}
	return addrs
}

// TestGroupKillAndAddOnWeirBroker is TestGroupKillAndAdd (group mode,
// real processes, one SIGKILLed, one added) against weir broker.
func TestGroupKillAndAddOnWeirBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	groupKillAndAdd(t, weirBroker(t, map[string]int{"in": 6, "ref": 3, "out": 3}))
}

// TestKafkaKillAndRestartOnWeirBroker is TestKafkaKillAndRestart (the
// exactly-once sink's job SIGKILLed and restarted) against weir broker,
// with fewer kills (WEIR_CRASH_KILLS / 4, at least 3).
func TestKafkaKillAndRestartOnWeirBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	kafkaKillAndRestart(t, weirBroker(t, map[string]int{"ref": 3}), max(3, crashtest.Kills(20)/4))
}

// testLogWriter sends the broker's log to the test's.
type testLogWriter struct{ t testing.TB }

func (w testLogWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}
