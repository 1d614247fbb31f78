package metrics

import (
	"sync"
	"time"
)

// HistorySize is how many finished checkpoints Checkpoints.History keeps:
// enough for a dashboard's timeline, bounded so that a job running for
// months holds no more than a few KB of it.
const HistorySize = 64

// Status of a finished checkpoint in the history (Flink's names).
const (
	Completed = "COMPLETED"
	Failed    = "FAILED"
	// Aborted: not complete within the checkpoint timeout.
	Aborted = "ABORTED"
)

// CheckpointRecord is one finished checkpoint or savepoint.
type CheckpointRecord struct {
	ID        int64
	Status    string // Completed, Failed or Aborted
	Savepoint bool
	// Trigger is when the coordinator sent the barriers, End when it
	// finished with the checkpoint (the coordinator's clock).
	Trigger, End time.Time
	// SizeBytes is the size of a completed checkpoint's files (filled by
	// Record from LastSizeBytes; 0 for savepoints and unfinished ones).
	SizeBytes int64
	// Alignment is the time tasks held input channels back aligning
	// barriers since the previous record (filled by Record): with one
	// checkpoint in flight at a time, that is this checkpoint's.
	Alignment time.Duration
}

// Duration is trigger to end.
func (r CheckpointRecord) Duration() time.Duration { return r.End.Sub(r.Trigger) }

// RestoreRecord is the checkpoint or savepoint a job attempt started from.
type RestoreRecord struct {
	ID   int64
	Path string
	Time time.Time
}

// history is the bounded ring behind Checkpoints.History.
type history struct {
	mu struct {
		sync.Mutex
		ring      [HistorySize]CheckpointRecord
		n         int   // records ever added
		alignSeen int64 // AlignmentNanos at the previous record
		restored  *RestoreRecord
	}
}

// Record adds a finished checkpoint to the history, the oldest record
// making room. It fills SizeBytes (completed checkpoints: LastSizeBytes,
// which the checkpoint store sets before the coordinator records) and
// Alignment. Called by the coordinator once per checkpoint, off the
// records' hot path.
func (c *Checkpoints) Record(r CheckpointRecord) {
	align := c.AlignmentNanos.Load()
	if r.Status == Completed && !r.Savepoint {
		r.SizeBytes = c.LastSizeBytes.Load()
	}
	h := &c.history
	h.mu.Lock()
	defer h.mu.Unlock()
	r.Alignment = time.Duration(max(0, align-h.mu.alignSeen))
	h.mu.alignSeen = align
	h.mu.ring[h.mu.n%HistorySize] = r
	h.mu.n++
}

// History returns the recorded checkpoints, oldest first (at most
// HistorySize).
func (c *Checkpoints) History() []CheckpointRecord {
	h := &c.history
	h.mu.Lock()
	defer h.mu.Unlock()
	k := min(h.mu.n, HistorySize)
	out := make([]CheckpointRecord, 0, k)
	for i := h.mu.n - k; i < h.mu.n; i++ {
		out = append(out, h.mu.ring[i%HistorySize])
	}
	return out
}

// SetRestored notes the checkpoint or savepoint an attempt restored.
func (c *Checkpoints) SetRestored(r RestoreRecord) {
	h := &c.history
	h.mu.Lock()
	h.mu.restored = &r
	h.mu.Unlock()
}

// Restored is the last restore noted by SetRestored.
func (c *Checkpoints) Restored() (RestoreRecord, bool) {
	h := &c.history
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.restored == nil {
		return RestoreRecord{}, false
	}
	return *h.mu.restored, true
}
