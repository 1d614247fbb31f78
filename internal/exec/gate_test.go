package exec

import (
	"testing"
	"time"
)

func TestGateBlocksChannelsForAlignment(t *testing.T) {
	done := make(chan struct{})
	g := NewGate(2, 4, done)
	if _, err := g.Send(0, Message{Kind: Barrier}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Send(0, Message{Kind: Data, Batch: "after-barrier"}); err != nil {
		t.Fatal(err)
	}
	m, ok := g.TryNext()
	if !ok || m.Kind != Barrier || m.Channel != 0 {
		t.Fatalf("got %+v, want the barrier of channel 0", m)
	}
	g.Block(0)
	if m, ok := g.TryNext(); ok {
		t.Fatalf("blocked channel 0 was read: %+v", m)
	}
	if _, err := g.Send(1, Message{Kind: Data, Batch: "before-barrier"}); err != nil {
		t.Fatal(err)
	}
	m, ok, err := g.Next(time.Second)
	if err != nil || !ok || m.Batch != "before-barrier" {
		t.Fatalf("got %+v %v %v, want channel 1's data", m, ok, err)
	}
	g.UnblockAll()
	m, ok, err = g.Next(time.Second)
	if err != nil || !ok || m.Batch != "after-barrier" {
		t.Fatalf("got %+v, want channel 0's data after unblocking", m)
	}
	close(done)
	if _, _, err := g.Next(0); err != ErrCancelled {
		t.Fatalf("Next after cancel: %v", err)
	}
}
