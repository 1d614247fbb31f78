package wlog_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	wlog "github.com/weirstream/weir/connector/log"
)

// pausing wraps the log source: the reader of partition 0 returns after
// `after` records nothing (0, nil, as an unbounded split with no new data
// may) until release is closed; the readers of the other partitions close
// ended when they reach the end of their partition.
type pausing struct {
	weir.RestorableSource[click]
	after   int
	release chan struct{}
	ends    sync.WaitGroup
}

func (p *pausing) Open(ctx context.Context, s weir.Split) (weir.SplitReader[click], error) {
	r, err := p.RestorableSource.Open(ctx, s)
	if err != nil {
		return nil, err
	}
	return &pausingReader{SplitReader: r, p: p, pause: s.ID() == "partition-0"}, nil
}

type pausingReader struct {
	weir.SplitReader[click]
	p     *pausing
	pause bool
	read  int
	ended bool
}

func (r *pausingReader) Read(ctx context.Context, dst []click) (int, error) {
	if r.pause && r.read >= r.p.after {
		select {
		case <-r.p.release:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Millisecond): // wait a little, as a follower does
			return 0, nil
		}
	} else if r.pause {
		dst = dst[:min(len(dst), r.p.after-r.read)]
	}
	k, err := r.SplitReader.Read(ctx, dst)
	r.read += k
	if !r.pause && !r.ended && errors.Is(err, io.EOF) {
		r.ended = true
		r.p.ends.Done()
	}
	return k, err
}

// A partition that pauses (returns no records for a while) holds the
// watermark of its source subtask, however far the other partitions get:
// none of its later records is late. The pause is deterministic: partition
// 0 is released only after partitions 1 and 2 (one sharing its subtask)
// have been read to their end.
func TestLogSourcePausedPartitionHoldsWatermark(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 3, 30000)
	src := &pausing{RestorableSource: wlog.Source(dir, "clicks", decode), after: 1000, release: make(chan struct{})}
	src.ends.Add(2)
	go func() { src.ends.Wait(); close(src.release) }()
	job := weir.NewJob("pause", weir.Parallelism(2))
	clicks := weir.FromSource(job, "clicks", weir.Source[click](src),
		weir.BoundedOutOfOrderness(time.Second, func(c click) time.Time { return time.UnixMilli(c.TS) }))
	counts := weir.Aggregate(weir.Window(weir.KeyBy(clicks, func(c click) string { return c.Ad }), weir.Tumbling(time.Second)), weir.Count[click]())
	late := weir.Collect(weir.LateEvents[click](counts))
	out := weir.Collect(counts)
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(late.Items()); n > 0 {
		l := late.Items()[0]
		t.Fatalf("%d records late, the first at %d behind watermark %d", n, l.Timestamp.UnixMilli(), l.Watermark.UnixMilli())
	}
	var total int64
	for _, r := range out.Items() {
		total += r.Value
	}
	if total != 30000 {
		t.Fatalf("counted %d of 30000 records", total)
	}
}
