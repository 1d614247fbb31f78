package nexmark_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/nexmark"
)

func bidOn(auction, bidder, price, at int64, channel string) nexmark.Event {
	e := bid(auction, bidder, price, at)
	e.Bid.Channel = channel
	return e
}

// q13 with the suite's side input: MOD(auction, 10000) = key; a negative
// remainder has no side row.
func TestQ13(t *testing.T) {
	check(t, "q13", []nexmark.Event{bid(10_000, 7, 5, 0), bid(123_456, 8, 6, 1), bid(-3, 9, 7, 2), auction(1, 10, 0, 1)},
		`{"auction":10000,"bidder":7,"price":5,"datetime":`+itoa(t0)+`,"value":"0"}`,
		`{"auction":123456,"bidder":8,"price":6,"datetime":`+itoa(t0+1)+`,"value":"3456"}`)
}

// gatedSource is a bounded source of one split that returns nothing until
// open is closed.
type gatedSource[T any] struct {
	items []T
	open  chan struct{}
}

func (s *gatedSource[T]) Splits(context.Context) ([]weir.Split, error) {
	return []weir.Split{oneSplit{}}, nil
}

func (s *gatedSource[T]) Open(context.Context, weir.Split) (weir.SplitReader[T], error) {
	return &gatedReader[T]{s: s}, nil
}

type gatedReader[T any] struct {
	s    *gatedSource[T]
	done bool
}

func (r *gatedReader[T]) Read(ctx context.Context, dst []T) (int, error) {
	select {
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	case <-time.After(2 * time.Millisecond):
		return 0, nil
	case <-r.s.open:
	}
	n := copy(dst, r.s.items)
	r.s.items = r.s.items[n:]
	if len(r.s.items) == 0 {
		return n, io.EOF
	}
	return n, nil
}

func (r *gatedReader[T]) Close() error { return nil }

// q13 joins a bid only once the side input has ended: bids that are all
// read (their source ended too) before the first side row arrives wait,
// and are joined when the side input ends.
func TestQ13BidsWaitForTheSideInput(t *testing.T) {
	for _, p := range []int{1, 2} {
		side := &gatedSource[nexmark.SideInputRow]{items: []nexmark.SideInputRow{{1, "one"}, {2, "two"}, {1, "uno"}}, open: make(chan struct{})}
		job := weir.NewJob("q13-wait", weir.Parallelism(p))
		events := []nexmark.Event{bid(10_001, 7, 5, 0), bid(2, 8, 6, 1), bid(3, 9, 7, 2)}
		log := &rowLog{}
		nexmark.Emit(nexmark.Q13(nexmark.Events(job, weir.SliceSource(events)), nexmark.SideInputStream(job, side)), log.output())
		done := make(chan error, 1)
		go func() { done <- job.Run(t.Context()) }()
		// The join has taken every bid (it counts a batch as it takes it,
		// and takes the side rows, released next, after).
		waitFor(t, done, "the bids at the join", func() bool {
			return job.Metrics().Sum(func(o *weir.OperatorMetrics) int64 {
				if o.Name == "q13-join" {
					return o.RecordsIn
				}
				return 0
			}) == int64(len(events))
		})
		close(side.open)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		want := []string{
			`{"auction":10001,"bidder":7,"price":5,"datetime":` + itoa(t0) + `,"value":"one"}`,
			`{"auction":10001,"bidder":7,"price":5,"datetime":` + itoa(t0) + `,"value":"uno"}`,
			`{"auction":2,"bidder":8,"price":6,"datetime":` + itoa(t0+1) + `,"value":"two"}`,
		}
		slices.Sort(want)
		if got := log.snapshot(); !slices.Equal(got, want) {
			t.Errorf("parallelism %d: rows %q\nwant %q", p, got, want)
		}
	}
}

// q13's side input from a CSV file (Flink's side_input.txt format) read
// with connector/file; a bad line fails the job saying where.
func TestQ13SideInputFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "side.csv")
	if err := os.WriteFile(good, []byte("0,0\n5,five\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(path string) ([]string, error) {
		job := weir.NewJob("q13-file")
		log := &rowLog{}
		side := nexmark.SideInputStream(job, file.CSV([]string{path}, nexmark.ParseSideInput))
		nexmark.Emit(nexmark.Q13(nexmark.Events(job, weir.SliceSource([]nexmark.Event{bid(20_005, 1, 2, 0), bid(7, 1, 2, 0)})), side), log.output())
		err := job.Run(t.Context())
		return log.snapshot(), err
	}
	got, err := run(good)
	if want := `{"auction":20005,"bidder":1,"price":2,"datetime":` + itoa(t0) + `,"value":"five"}`; err != nil || len(got) != 1 || got[0] != want {
		t.Errorf("rows %q, %v; want %s", got, err, want)
	}
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("0,0\nx,y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run(bad); err == nil || !strings.Contains(err.Error(), "bad.csv:2") || !strings.Contains(err.Error(), `key "x"`) {
		t.Errorf("bad side input line: %v", err)
	}
}

// q15: distinct bidders and auctions per price band; a bidder in two bands
// counts once in total and once in each; the bands' bounds; per UTC day.
func TestQ15(t *testing.T) {
	const day = 24 * 3_600_000
	check(t, "q15", []nexmark.Event{
		bid(1, 7, 9_999, 0), bid(1, 7, 10_000, 1), bid(2, 7, 999_999, 2), bid(2, 8, 1_000_000, 3), bid(3, 8, 9_999, day-1),
		bid(1, 7, 1, day),
	},
		`{"day":"2015-07-15","total_bids":5,"rank1_bids":2,"rank2_bids":2,"rank3_bids":1,"total_bidders":2,"rank1_bidders":2,`+
			`"rank2_bidders":1,"rank3_bidders":1,"total_auctions":3,"rank1_auctions":2,"rank2_auctions":2,"rank3_auctions":1}`,
		`{"day":"2015-07-16","total_bids":1,"rank1_bids":1,"rank2_bids":0,"rank3_bids":0,"total_bidders":1,"rank1_bidders":1,`+
			`"rank2_bidders":0,"rank3_bidders":0,"total_auctions":1,"rank1_auctions":1,"rank2_auctions":0,"rank3_auctions":0}`)
}

// q16: per channel and day, with the latest HH:mm of the group's bids
// whatever their order.
func TestQ16(t *testing.T) {
	check(t, "q16", []nexmark.Event{
		bidOn(1, 7, 5, 61_000, "a"), bidOn(1, 8, 5, 3_600_000, "a"), bidOn(1, 7, 5, 120_000, "a"), bidOn(2, 7, 20_000, 0, "b"),
	},
		`{"channel":"a","day":"2015-07-15","minute":"01:00","total_bids":3,"rank1_bids":3,"rank2_bids":0,"rank3_bids":0,`+
			`"total_bidders":2,"rank1_bidders":2,"rank2_bidders":0,"rank3_bidders":0,"total_auctions":1,"rank1_auctions":1,"rank2_auctions":0,"rank3_auctions":0}`,
		`{"channel":"b","day":"2015-07-15","minute":"00:00","total_bids":1,"rank1_bids":0,"rank2_bids":1,"rank3_bids":0,`+
			`"total_bidders":1,"rank1_bidders":0,"rank2_bidders":1,"rank3_bidders":0,"total_auctions":1,"rank1_auctions":0,"rank2_auctions":1,"rank3_auctions":0}`)
}

func bidRow(auction, bidder, price, at int64, channel string) string {
	return fmt.Sprintf(`{"auction":%d,"bidder":%d,"price":%d,"channel":%q,"url":"https://www.nexmark.com/a/b/c/item.htm?query=1&channel_id=7","datetime":%d,"extra":"x"`,
		auction, bidder, price, channel, t0+at)
}

// q18: the latest bid per (bidder, auction), whatever the arrival order;
// of bids tied on date_time the last to arrive, as Flink's deduplication
// (a lower price or a larger channel arriving last still replaces).
func TestQ18(t *testing.T) {
	check(t, "q18", []nexmark.Event{
		bidOn(1, 7, 5, 20, "a"), bidOn(1, 7, 6, 10, "a"), // the later first
		bidOn(2, 7, 5, 10, "a"), bidOn(2, 7, 9, 10, "z"), bidOn(2, 7, 9, 10, "b"), bidOn(2, 7, 3, 10, "c"),
		bidOn(1, 8, 1, 0, "a"),
	},
		bidRow(1, 7, 5, 20, "a")+"}", bidRow(2, 7, 3, 10, "c")+"}", bidRow(1, 8, 1, 0, "a")+"}")
}

// q19: the ten highest prices of each auction with their rank; a new top
// bid moves every rank below it down and pushes the tenth out; price ties
// rank the earlier bid first, then the smaller bidder.
func TestQ19(t *testing.T) {
	var events []nexmark.Event
	for p := int64(1); p <= 12; p++ {
		events = append(events, bid(1, 100+p, p*10, 100-p))
	}
	events = append(events, bid(1, 50, 120, 200), bid(1, 40, 120, 200), bid(2, 1, 5, 0), bid(1, 1, 1, 0))
	row := func(a, bidder, price, at, rank int64) string {
		return bidRow(a, bidder, price, at, "channel-1") + `,"rank_number":` + itoa(rank) + "}"
	}
	want := []string{row(1, 112, 120, 88, 1), row(1, 40, 120, 200, 2), row(1, 50, 120, 200, 3), row(2, 1, 5, 0, 1)}
	for r, p := int64(4), int64(11); r <= 10; r, p = r+1, p-1 {
		want = append(want, row(1, 100+p, p*10, 100-p, r))
	}
	check(t, "q19", events, want...)
}
