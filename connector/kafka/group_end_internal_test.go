package kafka

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupReaderEndWaitsForACommit is the regression test of a loss of
// records in group mode (TestGroupStatefulRepartition lost the last batch
// of one input partition once in eighteen runs): a reader that read its
// partition's last records marked the end offset for the next commit at
// once, before those records had gone down the job to the repartition
// topics. When the other readers had already reported at a completed
// checkpoint, that commit could carry the end offset without the records,
// which then went into the next transaction; a process that died before
// that one committed lost them for good (the partition was committed to
// its end). A reader holding at a barrier whose transaction had already
// begun to commit (a stale hold) read past its barrier in just this way.
//
// The end offset must commit like any other position: reported at a
// checkpoint completed after the last records, and the reader ends (EOF)
// only once that transaction committed.
func TestGroupReaderEndWaitsForACommit(t *testing.T) {
	ctx := context.Background()
	p1, p3 := tp{"in", 1}, tp{"in", 3}
	lr := newLocalRun(&groupRunner{client: &clientConfig{}}, []tp{p1, p3}, map[tp]int64{p1: 0, p3: 3072})
	src := &source[string]{decode: func(rec *kgo.Record) (string, error) { return string(rec.Value), nil }}
	open := func(p tp, end int64, offs ...int64) *reader[string] {
		r := &reader[string]{src: src, c: lr.cons, ps: lr.open(p), end: end, lr: lr}
		for _, o := range offs {
			r.work = append(r.work, &kgo.Record{Topic: p.topic, Partition: p.partition, Offset: o, Value: []byte("v")})
		}
		lr.cons.mu.Lock()
		r.ps.next = offs[len(offs)-1] + 1
		lr.cons.mu.Unlock()
		return r
	}
	r1 := open(p1, 100, 0, 1)
	r3 := open(p3, 3074, 3072, 3073)
	dst := make([]string, 8)
	if n, err := r1.Read(ctx, dst); n != 2 || err != nil {
		t.Fatalf("r1: read %d, %v", n, err)
	}
	commitRequested := func() bool {
		select {
		case <-lr.commitReq:
			return true
		default:
			return false
		}
	}

	// Barrier C: r3's subtask takes it while the transaction of the
	// checkpoint before commits (r3 holds for that one: a stale hold,
	// released at once); r1's subtask takes it after that commit.
	pos3, _ := r3.Position()
	lr.release()
	pos1, _ := r1.Position()
	if err := r1.NotifyCheckpointComplete(ctx, 3, pos1); err != nil {
		t.Fatal(err)
	}
	// Checkpoint C's notification reaches r3 after it read on: its
	// position moved, it does not report.
	n, err := r3.Read(ctx, dst)
	if n != 2 {
		t.Fatalf("r3: read %d records, want its last 2 (err %v)", n, err)
	}
	if err := r3.NotifyCheckpointComplete(ctx, 3, pos3); err != nil {
		t.Fatal(err)
	}
	if commitRequested() {
		if marks, _ := lr.marks(); marks["in"][3].Offset == 3074 {
			t.Fatalf("a commit of partition 3 at its end 3074 was requested before its last records passed a barrier (marks %v)", marks)
		}
	}
	if errors.Is(err, io.EOF) {
		t.Fatal("r3 ended (EOF) before its end offset was committed")
	}

	// Barrier D, after r3's last records: both report, the commit
	// carries the end, and only after it does r3 end.
	pos3, _ = r3.Position()
	pos1, _ = r1.Position()
	if err := r1.NotifyCheckpointComplete(ctx, 4, pos1); err != nil {
		t.Fatal(err)
	}
	if err := r3.NotifyCheckpointComplete(ctx, 4, pos3); err != nil {
		t.Fatal(err)
	}
	if !commitRequested() {
		t.Fatal("no commit requested after every reader reported checkpoint 4")
	}
	marks, _ := lr.marks()
	if got := marks["in"][3].Offset; got != 3074 {
		t.Fatalf("partition 3 committed at %d, want its end 3074 (marks %v)", got, marks)
	}
	if n, err := r3.Read(ctx, dst); n != 0 || err != nil {
		t.Fatalf("r3 read %d, %v while its end's transaction commits; want 0, nil", n, err)
	}
	lr.release()
	if n, err := r3.Read(ctx, dst); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("r3 read %d, %v after its end was committed; want 0, EOF", n, err)
	}
}
