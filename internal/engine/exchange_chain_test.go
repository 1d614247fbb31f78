package engine

import (
	"strconv"
	"testing"

	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// markerLog is a group.ExchangeWriter that keeps the markers written.
type markerLog struct{ marks []string }

func (m *markerLog) Write(int32, []byte, int64) error { return nil }
func (m *markerLog) Watermark(task string, wm int64) error {
	m.marks = append(m.marks, task+"="+wmString(wm))
	return nil
}

func wmString(wm int64) string {
	switch wm {
	case watermark.Min:
		return "min"
	case watermark.Max:
		return "max"
	}
	return strconv.FormatInt(wm, 10)
}

// TestChainWritersShareTheMinimum: the writers of a repartition topic
// behind a keyed operator (a chain of KeyBys) name every task of the
// first stage the run owns, and write the minimum watermark of all the
// run's writer subtasks: a subtask whose input watermark has not moved
// holds the others' markers back (its records, written after their
// markers, would otherwise be late at the reader), and +inf is written
// only once every subtask has ended.
func TestChainWritersShareTheMinimum(t *testing.T) {
	var shared sharedMin
	p := &plan{}
	tasks := []string{"x-hop-repartition/0", "x-hop-repartition/2"}
	newOut := func(slot int) (*exchangeOut[string, string], *markerLog) {
		l := &markerLog{}
		return &exchangeOut[string, string]{key: func(s string) string { return s }, hash: func(string) uint64 { return 0 }, maxP: 128, n: 4,
			enc: func(d []byte, v *string) ([]byte, error) { return append(d, *v...), nil }, w: l, tasks: tasks, wm: watermark.Min,
			m: &metrics.Operator{}, min: shared.slots(p, 2), slot: slot}, l
	}
	a, la := newOut(0)
	b, lb := newOut(1)
	wmBatch := func(wm int64) *batch[string] { bt := newBatch[string](0); bt.watermark = wm; return bt }
	if err := a.push(wmBatch(500)); err != nil {
		t.Fatal(err)
	}
	if err := a.barrier(nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := la.marks; len(got) != 2 || got[0] != "x-hop-repartition/0=min" || got[1] != "x-hop-repartition/2=min" {
		t.Fatalf("a's markers while b has no watermark: %v, want both tasks at min", got)
	}
	if err := b.push(wmBatch(300)); err != nil {
		t.Fatal(err)
	}
	la.marks = nil
	if err := a.barrier(nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := la.marks; len(got) != 2 || got[0] != "x-hop-repartition/0=300" {
		t.Fatalf("a's markers: %v, want b's 300", got)
	}
	if err := b.finish(); err != nil {
		t.Fatal(err)
	}
	if got := lb.marks; len(got) != 2 || got[0] != "x-hop-repartition/0=500" {
		t.Fatalf("b ended before a: its markers %v, want a's 500, not +inf", got)
	}
	if err := a.finish(); err != nil {
		t.Fatal(err)
	}
	if got := la.marks[len(la.marks)-1]; got != "x-hop-repartition/2=max" {
		t.Fatalf("both ended: last marker %s, want +inf", got)
	}
	// A new local run (another plan) starts from nothing.
	if w := shared.slots(&plan{}, 2)[0].Load(); w != watermark.Min {
		t.Fatalf("a new run's slot starts at %d", w)
	}
}
