package wlog

import (
	"context"
	"testing"
)

// A live reader can read a batch while its writer is still writing it (a
// short batch), and classify what it read only after the writer finished
// that batch and wrote the next one. A valid batch then follows the
// position, which alone looked like damage in the middle of the segment
// (a *CorruptError, "not a torn tail"): weir demo adclicks failed so in a
// run of the test command (TestDemoSameResultsAtAnyParallelism: "corrupt
// data ... at byte 0 (offset 0), before a valid batch at byte 89558
// (offset 4096)"). The
// classification must look at the batch again: complete now, it was
// being written.
func TestReaderShortBatchFinishedMeanwhile(t *testing.T) {
	tp := newTopic(t, TopicConfig{})
	w := openWriter(t, tp)
	defer w.Close()
	appendN(t, w, 0, 20, 10) // two batches of 10
	r, err := tp.OpenReader(0, Earliest())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	recs, err := r.Read(context.Background(), 100)
	if err != nil || len(recs) != 20 {
		t.Fatalf("read %d records, %v", len(recs), err)
	}
	// What the reader would do had its read of the first batch been
	// short: classify position 0 of the segment, whose file now holds both
	// batches whole.
	if err := r.damaged(0, errShort); err != nil {
		t.Fatalf("a batch completed after a short read taken for damage: %v", err)
	}
}
