package wlog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/weirstream/weir"
)

// SourceOption configures Source.
type SourceOption interface{ applySource(*sourceConfig) }

type sourceConfig struct {
	start  StartAt
	follow time.Duration // 0: bounded, stop at the end of the log
	stop   map[int]int64 // partition -> end offset (exclusive)
}

type sourceOptionFunc func(*sourceConfig)

func (f sourceOptionFunc) applySource(c *sourceConfig) { f(c) }

// StartFrom sets where a source starts when the job has no checkpoint
// (default Earliest). A restored job continues from its checkpoint.
func StartFrom(s StartAt) SourceOption {
	return sourceOptionFunc(func(c *sourceConfig) { c.start = s })
}

// FollowLog makes the source unbounded: at the end of a partition it waits
// for new records, polling every poll, like `tail -f`.
func FollowLog(poll time.Duration) SourceOption {
	return sourceOptionFunc(func(c *sourceConfig) { c.follow = poll })
}

// StopAt bounds the source at the given offsets: partition p ends before
// offset stop[p] (a record at or past it is not read), even when
// following, which then waits until the partition reaches it. Partitions
// not in stop end as they would without StopAt.
func StopAt(stop map[int]int64) SourceOption {
	return sourceOptionFunc(func(c *sourceConfig) { c.stop = stop })
}

// Source reads a topic of the embedded log as a weir source: one split per
// partition (watermarks are generated per partition), the next offset of
// each partition kept in checkpoints, records turned into T by decode. A
// record decode cannot read fails the job with the topic, partition and
// offset. By default the source is bounded: it ends at the end of the log
// as it was when the job started reading.
func Source[T any](dataDir, topic string, decode func(Record) (T, error), opts ...SourceOption) weir.RestorableSource[T] {
	c := sourceConfig{start: Earliest()}
	for _, o := range opts {
		o.applySource(&c)
	}
	return &logSource[T]{dir: dataDir, topic: topic, decode: decode, cfg: c}
}

type logSource[T any] struct {
	dir, topic string
	decode     func(Record) (T, error)
	cfg        sourceConfig
}

type partSplit int

func (p partSplit) ID() string { return "partition-" + strconv.Itoa(int(p)) }

func (s *logSource[T]) Splits(context.Context) ([]weir.Split, error) {
	t, err := OpenTopic(s.dir, s.topic)
	if err != nil {
		return nil, err
	}
	out := make([]weir.Split, t.Config.Partitions)
	for i := range out {
		out[i] = partSplit(i)
	}
	return out, nil
}

func (s *logSource[T]) Open(ctx context.Context, sp weir.Split) (weir.SplitReader[T], error) {
	return s.open(sp, s.cfg.start)
}

// OpenAt reopens a partition at the offset a checkpoint saved.
func (s *logSource[T]) OpenAt(ctx context.Context, sp weir.Split, pos []byte) (weir.SplitReader[T], error) {
	if len(pos) != 8 {
		return nil, fmt.Errorf("wlog: bad position for %s (%d bytes)", sp.ID(), len(pos))
	}
	return s.open(sp, AtOffset(int64(binary.BigEndian.Uint64(pos))))
}

func (s *logSource[T]) open(sp weir.Split, start StartAt) (weir.SplitReader[T], error) {
	p, ok := sp.(partSplit)
	if !ok {
		return nil, fmt.Errorf("wlog: not a split of this source: %s", sp.ID())
	}
	t, err := OpenTopic(s.dir, s.topic)
	if err != nil {
		return nil, err
	}
	var ropts []ReaderOption
	if s.cfg.follow > 0 {
		ropts = append(ropts, Follow(s.cfg.follow))
	}
	r, err := t.OpenReader(int(p), start, ropts...)
	if err != nil {
		return nil, err
	}
	lr := &logReader[T]{r: r, src: s, part: int(p), follow: s.cfg.follow > 0, stop: -1}
	if o, ok := s.cfg.stop[int(p)]; ok {
		lr.stop = o
	}
	return lr, nil
}

type logReader[T any] struct {
	r       *Reader
	src     *logSource[T]
	part    int
	follow  bool
	stop    int64    // end offset (exclusive); -1: none
	pending []Record // read but not yet returned
	onBad   func(raw []byte, position string, err error)
}

// SetBadRecordHandler implements weir.BadRecordReporter: records decode
// rejects go to h with their value as the raw bytes and "topic/partition@offset"
// as their position.
func (r *logReader[T]) SetBadRecordHandler(h func(raw []byte, position string, err error)) {
	r.onBad = h
}

// Read returns up to len(dst) records. Following, it waits at most ~10ms
// for new ones, so the job can flush and take checkpoints.
func (r *logReader[T]) Read(ctx context.Context, dst []T) (int, error) {
	if len(r.pending) == 0 {
		if r.stop >= 0 && r.r.Next() >= r.stop {
			return 0, io.EOF
		}
		rctx := ctx
		if r.follow {
			var cancel context.CancelFunc
			rctx, cancel = context.WithTimeout(ctx, 10*time.Millisecond)
			defer cancel()
		}
		recs, err := r.r.Read(rctx, len(dst))
		if r.stop >= 0 {
			for len(recs) > 0 && recs[len(recs)-1].Offset >= r.stop {
				recs = recs[:len(recs)-1]
			}
		}
		r.pending = recs
		if len(recs) == 0 {
			switch {
			case errors.Is(err, io.EOF):
				return 0, io.EOF
			case r.follow && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
				return 0, nil
			case err != nil:
				return 0, err
			}
		}
	}
	n := 0
	for n < len(dst) && len(r.pending) > 0 {
		rec := r.pending[0]
		v, err := r.src.decode(rec)
		if err != nil {
			if r.onBad == nil {
				return n, fmt.Errorf("wlog: topic %q partition %d offset %d: %w", r.src.topic, r.part, rec.Offset, err)
			}
			r.onBad(rec.Value, r.src.topic+"/"+strconv.Itoa(r.part)+"@"+strconv.FormatInt(rec.Offset, 10), err)
			r.pending = r.pending[1:]
			continue
		}
		dst[n] = v
		n++
		r.pending = r.pending[1:]
	}
	return n, nil
}

// Position is the offset of the next record to return.
func (r *logReader[T]) Position() ([]byte, error) {
	next := r.r.Next()
	if len(r.pending) > 0 {
		next = r.pending[0].Offset
	}
	return binary.BigEndian.AppendUint64(nil, uint64(next)), nil
}

func (r *logReader[T]) Close() error { return r.r.Close() }
