package sql_test

import (
	"testing"

	"github.com/weirstream/weir/sql/nexmarksql"
)

// TestQ12AllocatesLittle: Nexmark q12's job file (a processing-time
// TUMBLE per bidder into a blackhole table) allocates far less than an
// object per event: the window is keyed by the bidder itself, not by its
// encoding (a string per bid), and the Calc before it makes its rows out
// of slabs, as the window copies what it keeps (lend.go). It allocated
// 2.08 objects per event before either.
func TestQ12AllocatesLittle(t *testing.T) {
	const events = 100_000
	text, err := nexmarksql.Job("q12")
	if err != nil {
		t.Fatal(err)
	}
	job, err := nexmarkSession(t, events, 1).Plan(text)
	if err != nil {
		t.Fatal(err)
	}
	if a := allocsPerEvent(t, job, events); a > 0.5 {
		t.Errorf("q12's job file: %.2f allocations per event, want < 0.5", a)
	}
}
