package broker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	wlog "github.com/weirstream/weir/connector/log"
	"github.com/weirstream/weir/internal/testing/poll"
)

// TestIdleWriterReleased: once a partition has had no produce for
// idleWriter, the broker lets its writer go, so another program of weir
// can append to the same topic; a consumer of the broker reads both, and
// the broker writes again afterwards.
func TestIdleWriterReleased(t *testing.T) {
	dir := t.TempDir()
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC).UnixNano())
	b, err := Start(context.Background(), Config{DataDir: dir, Listen: "127.0.0.1:0", InitialRebalanceDelay: -1,
		Now: func() time.Time { return time.Unix(0, now.Load()) }, TickEvery: 10 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl := newClient(t, b)
	createTopic(t, cl, "shared", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "shared", Value: []byte("from kafka 1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	topic, err := wlog.OpenTopic(dir, "shared")
	if err != nil {
		t.Fatal(err)
	}
	if w, err := topic.OpenWriter(0); err == nil {
		w.Close()
		t.Fatal("the broker's writer was not holding the partition")
	} else if !errors.Is(err, wlog.ErrLocked) {
		t.Fatal(err)
	}
	now.Add(int64(idleWriter + time.Second))
	var w *wlog.Writer
	poll.WaitFor(t, "the broker to let its idle writer go", 30*time.Second, func() bool {
		if w, err = topic.OpenWriter(0); err != nil && !errors.Is(err, wlog.ErrLocked) {
			t.Fatal(err)
		}
		return w != nil
	})
	if _, err := w.Append([]wlog.Record{{Value: []byte("from weir")}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "shared", Value: []byte("from kafka 2")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	recs := consumeAll(t, b, "shared", 3)
	want := []string{"from kafka 1", "from weir", "from kafka 2"}
	for i, r := range recs {
		if string(r.Value) != want[i] || r.Offset != int64(i) {
			t.Fatalf("record %d: %q at %d, want %q at %d", i, r.Value, r.Offset, want[i], i)
		}
	}
}
