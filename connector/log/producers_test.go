package wlog_test

import (
	"testing"

	wlog "github.com/weirstream/weir/connector/log"
)

// TestAppendAsScanProducers: batches appended with a producer identity
// are found again, with their offsets, by ScanProducers (also from a new
// writer, as after a restart); plain batches are not; readers see all.
func TestAppendAsScanProducers(t *testing.T) {
	dir := t.TempDir()
	topic, err := wlog.CreateTopic(dir, "t", wlog.TopicConfig{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	w, err := topic.OpenWriter(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append([]wlog.Record{{Value: []byte("plain")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendAs([]wlog.Record{{Value: []byte("a")}, {Value: []byte("b")}}, "p1", wlog.ProducerSeq{Epoch: 2, Checkpoint: 7, Index: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendAs(nil, "", wlog.ProducerSeq{}); err == nil {
		t.Fatal("an empty producer id was taken")
	}
	w.Close()
	type seen struct {
		producer    string
		seq         wlog.ProducerSeq
		first, last int64
	}
	var got []seen
	if err := topic.ScanProducers(0, func(p []byte, seq wlog.ProducerSeq, first, last int64) {
		got = append(got, seen{string(p), seq, first, last})
	}); err != nil {
		t.Fatal(err)
	}
	want := seen{"p1", wlog.ProducerSeq{Epoch: 2, Checkpoint: 7, Index: 3}, 1, 2}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("scan: %+v, want [%+v]", got, want)
	}
	earliest, next, err := topic.Offsets(0)
	if err != nil || earliest != 0 || next != 3 {
		t.Fatalf("offsets %d..%d (%v), want 0..3", earliest, next, err)
	}
}
