package planner

import (
	"sort"
	"strings"
	"testing"

	_ "github.com/weirstream/weir/sql/connector/builtin"
)

// maxPruneNexmarkDDL is the Nexmark source (a projecting scan) and a bid
// view whose WHERE drops most high prices, so that a filter that let the
// rows the view drops raise a window's maximum would drop the bids that
// equal the window's real MAX.
const maxPruneNexmarkDDL = `
CREATE TABLE datagen (
  event_type INT,
  bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
          ` + "`dateTime`" + ` TIMESTAMP(3), extra VARCHAR>,
  ts AS bid.` + "`dateTime`" + `,
  WATERMARK FOR ts AS ts - INTERVAL '4' SECOND
) WITH ('connector' = 'nexmark', 'first-event.rate' = '200', 'next-event.rate' = '200',
  'events.num' = '30000');
CREATE VIEW b AS SELECT bid.auction AS auction, bid.price AS price, bid.url AS url, ts
FROM datagen WHERE event_type = 2 AND (bid.price < 2000 OR MOD(bid.price, 5) = 0);
`

// runMaxPruneNexmark runs maxPruneQuery over the view above at parallelism
// p with the filter off, after the Calc, or below it; it returns the rows
// and the rows the MaxPrune operators read.
func runMaxPruneNexmark(t *testing.T, p int, prune, below bool) (out []string, read int64) {
	t.Helper()
	s := NewSession(Parallelism(p))
	s.plan = Config{DisableMaxPrune: !prune, DisableMaxPruneBelowCalc: !below}
	if _, err := s.Exec(maxPruneNexmarkDDL); err != nil {
		t.Fatal(err)
	}
	out, job, _ := runQuery(t, s, strings.Replace(maxPruneQuery, "SELECT B.auction, B.price, B.ts", "SELECT B.auction, B.price, B.url, B.ts", 1), false)
	for _, m := range job.Metrics().Operators {
		if strings.Contains(m.Name, "MaxPrune") {
			read += m.RecordsIn
		}
	}
	sort.Strings(out)
	return out, read
}

// TestMaxPruneBelowCalcSameRows: over a projecting scan the filter runs
// below the view's Calc, on the scan's rows (every event: persons and
// auctions too, which it must drop as the Calc's WHERE does, without
// counting them), and gives the rows of the plan without the filter and
// of the filter after the Calc. Were the view's WHERE not applied first,
// the high prices it drops would raise the windows' maxima and the bids
// equal to a window's MAX would be dropped; were the price or time read
// from the wrong slot of the scan's row, rows would differ or be missing.
func TestMaxPruneBelowCalcSameRows(t *testing.T) {
	for _, p := range []int{1, 2} {
		plain, _ := runMaxPruneNexmark(t, p, false, false)
		after, afterRead := runMaxPruneNexmark(t, p, true, false)
		below, belowRead := runMaxPruneNexmark(t, p, true, true)
		if len(plain) < 3 {
			t.Fatalf("p%d: %d rows without the filter: too few to compare", p, len(plain))
		}
		if strings.Join(after, "\n") != strings.Join(plain, "\n") {
			t.Errorf("p%d: filter after the Calc: %d rows, without it %d", p, len(after), len(plain))
		}
		if strings.Join(below, "\n") != strings.Join(plain, "\n") {
			t.Errorf("p%d: filter below the Calc: %d rows, without it %d:\nbelow:\n%s\nwithout:\n%s",
				p, len(below), len(plain), strings.Join(below, "\n"), strings.Join(plain, "\n"))
		}
		// below the Calc the filter reads every event; after it, the bids
		// the view keeps
		if afterRead == 0 || belowRead <= afterRead {
			t.Errorf("p%d: the filter read %d rows below the Calc, %d after it: not planned below the Calc", p, belowRead, afterRead)
		}
		t.Logf("p%d: %d rows; the filter read %d events below the Calc, %d bids after it", p, len(plain), belowRead, afterRead)
	}
}
