package metrics

import (
	"testing"
	"time"
)

// The ring keeps the newest HistorySize records in order, fills size and
// alignment per record, and copies what it returns.
func TestCheckpointHistory(t *testing.T) {
	var c Checkpoints
	if len(c.History()) != 0 {
		t.Fatal("history of a new job is not empty")
	}
	if _, ok := c.Restored(); ok {
		t.Fatal("a new job restored something")
	}
	t0 := time.UnixMilli(1_000_000)
	total := HistorySize + 5
	for i := 1; i <= total; i++ {
		c.AlignmentNanos.Add(int64(i) * int64(time.Millisecond))
		c.LastSizeBytes.Store(int64(100 * i))
		st := Completed
		if i%3 == 0 {
			st = Failed
		}
		c.Record(CheckpointRecord{ID: int64(i), Status: st, Trigger: t0.Add(time.Duration(i) * time.Second),
			End: t0.Add(time.Duration(i)*time.Second + time.Duration(i)*time.Millisecond)})
	}
	h := c.History()
	if len(h) != HistorySize {
		t.Fatalf("%d records, want %d", len(h), HistorySize)
	}
	for k, r := range h {
		id := int64(total - HistorySize + 1 + k)
		if r.ID != id {
			t.Fatalf("record %d: id %d, want %d (oldest first)", k, r.ID, id)
		}
		if r.Alignment != time.Duration(id)*time.Millisecond {
			t.Errorf("checkpoint %d: alignment %v, want %v", id, r.Alignment, time.Duration(id)*time.Millisecond)
		}
		if r.Duration() != time.Duration(id)*time.Millisecond {
			t.Errorf("checkpoint %d: duration %v", id, r.Duration())
		}
		wantSize := 100 * id
		if r.Status == Failed {
			wantSize = 0
		}
		if r.SizeBytes != wantSize {
			t.Errorf("checkpoint %d (%s): size %d, want %d", id, r.Status, r.SizeBytes, wantSize)
		}
	}
	h[0].ID = -1
	if c.History()[0].ID == -1 {
		t.Fatal("History shares its slice with the ring")
	}
	c.SetRestored(RestoreRecord{ID: 7, Path: "/ck/chk-7", Time: t0})
	if r, ok := c.Restored(); !ok || r.ID != 7 || r.Path != "/ck/chk-7" {
		t.Fatalf("Restored: %+v, %v", r, ok)
	}
}
