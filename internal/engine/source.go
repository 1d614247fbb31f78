package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/weirstream/weir/internal/watermark"
)

// Source is an input of a job, split into independent splits (partitions,
// files) in the spirit of Flink's FLIP-27: the job enumerates the splits
// once, assigns them to source subtasks (split i to subtask i mod p) and
// opens one reader per split. Watermarks are generated per split and
// combined by minimum, so one slow split holds the watermark back, as it
// must.
type Source[T any] interface {
	// Splits enumerates the splits. It is called once, when the job starts.
	Splits(ctx context.Context) ([]Split, error)
	// Open returns a reader of one split.
	Open(ctx context.Context, split Split) (SplitReader[T], error)
}

// Split is one independently readable part of a source.
type Split interface {
	// ID identifies the split stably across runs (used by checkpoints).
	ID() string
}

// SplitReader reads the records of one split.
type SplitReader[T any] interface {
	// Read fills dst with up to len(dst) records and returns how many. At
	// the end of a bounded split it returns io.EOF (with or without records).
	// A reader of an unbounded split that has nothing to return may wait a
	// little (up to ~10ms), then return 0, nil, so the job can flush its
	// buffers and notice cancellation.
	Read(ctx context.Context, dst []T) (int, error)
	// Close releases the reader.
	Close() error
}

// SkipCounter is implemented by readers that skip malformed records when
// told to; the job exposes the count as weir_bad_records_skipped_total.
type SkipCounter interface {
	Skipped() int64
}

// WatermarkStrategy says where a record's event time comes from and how the
// source derives watermarks from event times.
type WatermarkStrategy[T any] struct {
	kind     watermark.Kind
	delay    int64
	ts       func(T) time.Time
	tsErr    func(T) (time.Time, error) // instead of ts: the OrBad strategies
	idleness int64                      // ms; 0: splits never count as idle
}

// WithIdleness marks a split idle when it has produced no record for d of
// processing time: its watermark stops holding back the subtask's, so one
// quiet partition cannot stall the job (Flink's withIdleness). When the
// split produces again it rejoins the minimum once its own watermark has
// caught up; until then its events may be late.
func (ws WatermarkStrategy[T]) WithIdleness(d time.Duration) WatermarkStrategy[T] {
	ws.idleness = d.Milliseconds()
	return ws
}

// BoundedOutOfOrderness assigns event times with ts and emits, per split,
// the watermark max event time seen - d - 1ms (Flink's definition): events
// may arrive up to d later than a later-stamped event without being late.
func BoundedOutOfOrderness[T any](d time.Duration, ts func(T) time.Time) WatermarkStrategy[T] {
	return WatermarkStrategy[T]{kind: watermark.Bounded, delay: d.Milliseconds(), ts: ts}
}

// MonotonousTimestamps is for sources whose event times never decrease
// within a split: the watermark is the max event time seen - 1ms.
func MonotonousTimestamps[T any](ts func(T) time.Time) WatermarkStrategy[T] {
	return WatermarkStrategy[T]{kind: watermark.Bounded, delay: 0, ts: ts}
}

// BoundedOutOfOrdernessOrBad is BoundedOutOfOrderness with a timestamp
// function that may refuse a record, when its time cannot be read (a
// string field to parse, a value out of range): the record is then a bad
// record of its source, handled by the source's OnBadRecord policy as one
// its reader could not decode. Fail (the default) fails the job with the
// error, naming the source and split; Skip drops it and counts it in
// weir_bad_records_skipped_total; DeadLetter sends a BadRecord whose Raw
// is the record as JSON (or as fmt's %+v when it has no JSON) and whose
// Position is empty (the reader had already decoded it). A refused record
// does not move the watermark. Kafka Streams' FailOnInvalidTimestamp and
// LogAndSkipOnInvalidTimestamp extractors do the same for its records.
func BoundedOutOfOrdernessOrBad[T any](d time.Duration, ts func(T) (time.Time, error)) WatermarkStrategy[T] {
	return WatermarkStrategy[T]{kind: watermark.Bounded, delay: d.Milliseconds(), tsErr: ts}
}

// MonotonousTimestampsOrBad is MonotonousTimestamps with a timestamp
// function that may refuse a record, as BoundedOutOfOrdernessOrBad.
func MonotonousTimestampsOrBad[T any](ts func(T) (time.Time, error)) WatermarkStrategy[T] {
	return WatermarkStrategy[T]{kind: watermark.Bounded, delay: 0, tsErr: ts}
}

// NoWatermarks stamps each record with its ingestion time (the wall clock
// when the source read it) and never advances the watermark until the input
// ends: event-time windows then fire only at the end of a bounded input.
func NoWatermarks[T any]() WatermarkStrategy[T] {
	return WatermarkStrategy[T]{kind: watermark.None}
}

// FromSource adds a source to the job. The source runs at the job's
// parallelism (or Parallelism(n)), capped by its number of splits.
func FromSource[T any](j *Job, name string, src Source[T], ws WatermarkStrategy[T], opts ...SourceOption) *Stream[T] {
	rest, bad := sourceOptions(opts)
	cfg := j.opConfig(rest)
	if cfg.name == "" {
		cfg.name = name
	}
	out, n := newStream[T](j, "source", cfg)
	n.impl = src
	var splits []Split
	n.splits = func(ctx context.Context) (int, error) {
		var err error
		splits, err = src.Splits(ctx)
		if err != nil {
			return 0, err
		}
		if len(splits) == 0 {
			return 0, errors.New("source has no splits")
		}
		n.splitIDs = n.splitIDs[:0]
		for _, sp := range splits {
			n.splitIDs = append(n.splitIDs, sp.ID())
		}
		return len(splits), nil
	}
	n.run = func(st *subtask, o any) error {
		var mine []Split
		for i, s := range splits {
			if i%n.parallelism == st.index {
				mine = append(mine, s)
			}
		}
		return runSource(st, n, src, mine, ws, o.(consumer[T]), bad.kind)
	}
	if bad.kind == sideBad {
		dl := BadRecords(out)
		if bad.sink != nil {
			To(dl, bad.sink, Name(cfg.name+"-dead-letters"))
		}
	}
	return out
}

// stamp assigns event times and the per-record watermark column for the
// records just read from one split: before each record, the subtask's
// combined watermark is max(cur, min(split's watermark, others)), where cur
// is the combined watermark before the batch and others the minimum over the
// subtask's other active splits.
func stamp[T any](h *header, data []T, g *watermark.Generator, cur, others int64, ws WatermarkStrategy[T], st *subtask) {
	ts, wm := h.ts[:len(data)], h.wm[:len(data)]
	if ws.ts == nil {
		now := st.now()
		for i := range data {
			ts[i] = now
			wm[i] = watermark.At(cur, g.Current(), others)
			g.OnEvent(now)
		}
		return
	}
	// The generator in a local variable: its fields stay in registers
	// rather than being stored and reloaded around the writes to ts and wm,
	// which the compiler cannot tell apart from *g.
	lg, tsf := *g, ws.ts
	for i := range data {
		wm[i] = watermark.At(cur, lg.Current(), others)
		t := tsf(data[i]).UnixMilli()
		ts[i] = t
		lg.OnEvent(t)
	}
	*g = lg
}

// SliceSource is a bounded source of one split that emits items in order.
func SliceSource[T any](items []T) Source[T] { return &sliceSource[T]{items: items} }

type sliceSource[T any] struct{ items []T }

type indexSplit int

func (s indexSplit) ID() string { return strconv.Itoa(int(s)) }

func (s *sliceSource[T]) Splits(context.Context) ([]Split, error) {
	return []Split{indexSplit(0)}, nil
}

func (s *sliceSource[T]) Open(context.Context, Split) (SplitReader[T], error) {
	return &sliceReader[T]{items: s.items}, nil
}

type sliceReader[T any] struct {
	items []T
	pos   int
}

func (r *sliceReader[T]) Read(_ context.Context, dst []T) (int, error) {
	n := copy(dst, r.items[r.pos:])
	r.pos += n
	if r.pos == len(r.items) {
		return n, io.EOF
	}
	return n, nil
}

func (r *sliceReader[T]) Close() error { return nil }

// CheckpointedReader is a SplitReader whose position can be saved in a
// checkpoint. Sources used in a checkpointed job must have such readers and
// implement RestorableSource.
type CheckpointedReader[T any] interface {
	SplitReader[T]
	// Position encodes where the next Read continues.
	Position() ([]byte, error)
}

// CheckpointListener is implemented by split readers that want to know
// when a checkpoint holding their position has completed, as Flink's
// CheckpointListener. position is what the reader's Position returned for
// that checkpoint. The call is made from the reader's task between reads,
// after the checkpoint's metadata is durable; it is a notification only
// (a Kafka source commits offsets to its group for monitoring): a returned
// error is logged and counted, it does not fail the job, and a
// notification may be skipped (a later one covers it).
type CheckpointListener interface {
	NotifyCheckpointComplete(ctx context.Context, checkpointID int64, position []byte) error
}

// RestorableSource is a Source whose splits can be reopened where a
// checkpoint left them.
type RestorableSource[T any] interface {
	Source[T]
	// OpenAt opens split at a position its reader's Position returned.
	OpenAt(ctx context.Context, split Split, pos []byte) (SplitReader[T], error)
}

// splitState is what a checkpoint keeps per split.
type splitState struct {
	Pos   []byte
	MaxTS int64
	WM    int64
	Done  bool
}

func (s *sliceSource[T]) OpenAt(_ context.Context, _ Split, pos []byte) (SplitReader[T], error) {
	var i int
	if err := decode(pos, &i); err != nil {
		return nil, err
	}
	if i < 0 || i > len(s.items) {
		return nil, fmt.Errorf("weir: slice source position %d out of range [0, %d]", i, len(s.items))
	}
	return &sliceReader[T]{items: s.items, pos: i}, nil
}

func (r *sliceReader[T]) Position() ([]byte, error) { return encode(r.pos) }

// ClockCorrected is a timestamp assigner for events that buffer on a device
// (a phone offline for a day) and carry three times: when the event
// happened and when it was sent, both by the device's clock, and when it was
// received, by the server's clock. The device clock may be wrong; receive -
// send estimates its offset (ignoring network delay, which is small next to
// a wrong clock), and the event time is corrected by it:
//
//	event + (received - sent)
//
// Use it as the timestamp function of a watermark strategy:
//
//	weir.BoundedOutOfOrderness(time.Minute, weir.ClockCorrected(
//		func(e Tap) time.Time { return e.DeviceTime },
//		func(e Tap) time.Time { return e.SentAt },
//		func(e Tap) time.Time { return e.ReceivedAt }))
func ClockCorrected[T any](event, sent, received func(T) time.Time) func(T) time.Time {
	return func(v T) time.Time {
		return event(v).Add(received(v).Sub(sent(v)))
	}
}
