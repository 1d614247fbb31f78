package weir

import (
	"bytes"
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
	idleness int64 // ms; 0: splits never count as idle
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

// NoWatermarks stamps each record with its ingestion time (the wall clock
// when the source read it) and never advances the watermark until the input
// ends: event-time windows then fire only at the end of a bounded input.
func NoWatermarks[T any]() WatermarkStrategy[T] {
	return WatermarkStrategy[T]{kind: watermark.None}
}

// FromSource adds a source to the job. The source runs at the job's
// parallelism (or Parallelism(n)), capped by its number of splits.
func FromSource[T any](j *Job, name string, src Source[T], ws WatermarkStrategy[T], opts ...Option) *Stream[T] {
	cfg := j.opConfig("FromSource", scopeOp|scopeSource, opts)
	if cfg.name == "" {
		cfg.name = name
	}
	bad := Fail
	for _, o := range opts {
		if b, ok := o.(badRecordOption); ok {
			bad = b.policy
		}
	}
	out, n := newStream[T](j, "source", cfg)
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

// runSource is the loop of one source subtask.
func runSource[T any](st *subtask, n *node, src Source[T], splits []Split, ws WatermarkStrategy[T], out consumer[T], bad badKind) error {
	ctx := st.ctx
	m := st.metrics(n)
	ck := st.plan.coord
	restorable, _ := src.(RestorableSource[T])
	if ck != nil && restorable == nil {
		return permanent{fmt.Errorf("source %T cannot be checkpointed: it does not implement weir.RestorableSource", src)}
	}
	saved, _ := st.restoreMeta(n)
	readers := make([]SplitReader[T], len(splits))
	gens := make([]watermark.Generator, len(splits))
	comb := watermark.NewCombiner(len(splits))
	done := make([]bool, len(splits))
	active := len(splits)
	for i, s := range splits {
		gens[i] = watermark.NewGenerator(ws.kind, ws.delay)
		var r SplitReader[T]
		var err error
		if data, ok := saved[s.ID()]; ok {
			var ss splitState
			if err := decode(data, &ss); err != nil {
				return fmt.Errorf("restore split %s: %w", s.ID(), err)
			}
			gens[i].Restore(ss.MaxTS, ss.WM)
			comb.Update(i, ss.WM)
			if ss.Done {
				done[i] = true
				active--
				comb.Update(i, watermark.Max)
				continue
			}
			r, err = restorable.OpenAt(ctx, s, ss.Pos)
		} else {
			r, err = src.Open(ctx, s)
		}
		if err != nil {
			return fmt.Errorf("open split %s: %w", s.ID(), err)
		}
		if ck != nil {
			if _, ok := r.(CheckpointedReader[T]); !ok {
				r.Close()
				return permanent{fmt.Errorf("split reader %T cannot be checkpointed: it does not implement weir.CheckpointedReader", r)}
			}
		}
		readers[i] = r
		st.closers = append(st.closers, r.Close)
	}
	size := st.cfg().batchSize
	// Malformed records: skipped and counted, or sent to the side output.
	var badOut consumer[BadRecord]
	var bb *batch[BadRecord]
	if n.side != nil {
		bad = sideBad
		lo, err := st.plan.output(n.side, st)
		if err != nil {
			return err
		}
		badOut, bb = &passOp[BadRecord]{out: lo.(consumer[BadRecord]), m: st.metrics(n.side)}, newBatch[BadRecord](size)
	}
	if bad != failBad {
		for i, r := range readers {
			if r == nil {
				continue
			}
			rep, ok := r.(BadRecordReporter)
			if !ok {
				return permanent{fmt.Errorf("OnBadRecord(Skip) and OnBadRecord(DeadLetter) need split readers that implement weir.BadRecordReporter; %T does not", r)}
			}
			split := splits[i].ID()
			if bad == skipBad {
				rep.SetBadRecordHandler(func([]byte, string, error) { m.BadRecordsSkipped.Add(1) })
				continue
			}
			rep.SetBadRecordHandler(func(raw []byte, pos string, err error) {
				m.DeadLetters.Add(1)
				now := st.now()
				bb.add(BadRecord{Source: n.name, Split: split, Position: pos, Raw: bytes.Clone(raw), Err: err.Error(),
					Time: time.UnixMilli(now).UTC()}, now, comb.Current())
			})
		}
	}
	// flushBad sends the dead letters of the last read on.
	flushBad := func() error {
		if bb == nil || len(bb.data) == 0 {
			return nil
		}
		bb.watermark = comb.Current()
		err := badOut.push(bb)
		bb.reset()
		return err
	}
	finish := func() error {
		if badOut != nil {
			if err := badOut.finish(); err != nil {
				return err
			}
		}
		return out.finish()
	}
	b := newBatch[T](size)
	b.data = b.data[:size]
	b.ts = b.ts[:size]
	b.wm = b.wm[:size]
	lastRead := make([]int64, len(splits)) // processing time of each split's last record, ms
	if ws.idleness > 0 {
		now := st.now()
		for i := range lastRead {
			lastRead[i] = now
		}
	}
	lastWM, lastIdle := int64(watermark.Min), false
	// Positions of checkpoints not yet known complete, for readers that
	// implement CheckpointListener.
	type pendingPos struct {
		id  int64
		pos [][]byte
	}
	var pending []pendingPos
	listening := false
	for _, r := range readers {
		if _, ok := r.(CheckpointListener); ok {
			listening = true
		}
	}
	notify := func() {
		last := ck.committed.Load()
		k := 0
		for k < len(pending) && pending[k].id <= last {
			k++
		}
		if k == 0 {
			return
		}
		p := pending[k-1] // the newest complete one covers the older ones
		pending = append(pending[:0], pending[k:]...)
		for i, r := range readers {
			l, ok := r.(CheckpointListener)
			if !ok || done[i] || p.pos[i] == nil {
				continue
			}
			if err := l.NotifyCheckpointComplete(ctx, p.id, p.pos[i]); err != nil {
				ck.log.Warn("checkpoint-complete notification failed", "split", splits[i].ID(), "checkpoint", p.id, "err", err)
				m.NotifyErrors.Add(1)
			}
		}
	}
	// snapshot saves every split's position and watermark generator, then
	// sends the barrier down the chain and the task's part to the
	// coordinator.
	snapshot := func(b *barrierMsg) error {
		info := newOpInfo(st, n)
		os := info.state(comb.Current())
		os.Meta = map[string][]byte{}
		var positions [][]byte
		if listening {
			positions = make([][]byte, len(splits))
		}
		for i, s := range splits {
			ss := splitState{Done: done[i]}
			ss.MaxTS, ss.WM = gens[i].State()
			if !done[i] {
				pos, err := readers[i].(CheckpointedReader[T]).Position()
				if err != nil {
					return fmt.Errorf("position of split %s: %w", s.ID(), err)
				}
				ss.Pos = pos
				if positions != nil {
					positions[i] = pos
				}
			}
			data, err := encode(ss)
			if err != nil {
				return err
			}
			os.Meta[s.ID()] = data
		}
		if positions != nil {
			pending = append(pending, pendingPos{id: b.id, pos: positions})
		}
		snap := &taskSnapshot{id: b.id, task: n.name, subtask: st.index, states: []opState{os}}
		if badOut != nil {
			if err := forwardBarrier(badOut, b, snap); err != nil {
				return err
			}
		}
		if err := forwardBarrier(out, b, snap); err != nil {
			return err
		}
		return ck.ack(ctx, snap)
	}
	var trigger <-chan *barrierMsg
	if ck != nil {
		trigger = ck.triggers[n.id][st.index]
	}
	view := &batch[T]{} // the part of b that was filled, lent to the chain
	for active > 0 {
		select {
		case b := <-trigger:
			if err := snapshot(b); err != nil {
				return err
			}
			if b.stop {
				// Stop-with-savepoint: read nothing more; the coordinator
				// ends the job once the savepoint is complete.
				<-ctx.Done()
				return context.Cause(ctx)
			}
		default:
		}
		progressed := false
		for s, r := range readers {
			if done[s] {
				continue
			}
			k, err := r.Read(ctx, b.data[:size])
			if ferr := flushBad(); ferr != nil {
				return ferr
			}
			eof := errors.Is(err, io.EOF)
			if err != nil && !eof {
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
				return fmt.Errorf("split %s: %w", splits[s].ID(), err)
			}
			if k > 0 {
				progressed = true
				if comb.Idle(s) {
					comb.SetIdle(s, false)
				}
				stamp(&b.header, b.data[:k], &gens[s], comb.Current(), comb.Others(s), ws, st)
				comb.Update(s, gens[s].Current())
				if ws.idleness > 0 {
					lastRead[s] = st.now()
				}
			} else if ws.idleness > 0 && !eof && !comb.Idle(s) && st.now()-lastRead[s] >= ws.idleness {
				comb.SetIdle(s, true)
			}
			if eof {
				done[s] = true
				active--
				comb.Update(s, watermark.Max)
				if sc, ok := r.(SkipCounter); ok && bad == failBad {
					m.BadRecordsSkipped.Store(sc.Skipped())
				}
			}
			b.watermark = comb.Current()
			idle := comb.AllIdle()
			if k > 0 || b.watermark > lastWM || idle != lastIdle {
				view.ts, view.wm, view.data, view.watermark, view.idle = b.ts[:k], b.wm[:k], b.data[:k], b.watermark, idle
				m.RecordsOut.Add(int64(k))
				m.Watermark.Store(b.watermark)
				if err := out.push(view); err != nil {
					return err
				}
				lastWM, lastIdle = b.watermark, idle
			}
		}
		if len(pending) > 0 {
			notify()
		}
		now := time.Now().UnixNano()
		if err := st.tick(now); err != nil {
			return err
		}
		if !progressed {
			if err := ctx.Err(); err != nil {
				return context.Cause(ctx)
			}
			for _, r := range readers {
				if sc, ok := r.(SkipCounter); ok && bad == failBad {
					m.BadRecordsSkipped.Store(sc.Skipped())
				}
			}
		}
	}
	if lastWM < watermark.Max {
		view.ts, view.wm, view.data, view.watermark, view.idle = nil, nil, nil, watermark.Max, false
		m.Watermark.Store(watermark.Max)
		if err := out.push(view); err != nil {
			return err
		}
	}
	if ck != nil {
		// Send what the output buffers hold, the last records and the
		// final watermark, now: waiting below, the task no longer ticks,
		// so its buffer timeout would not ship them before the next
		// barrier (a bounded side input would hold its consumers back
		// for up to a checkpoint interval).
		for _, f := range st.flushers {
			if err := f.flush(); err != nil {
				return err
			}
		}
		// The input is done, but the job is not until a final checkpoint
		// covers everything it produced (Flink's FLIP-147): wait for it.
		if err := ck.sourceFinished(ctx); err != nil {
			return err
		}
		for {
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case b := <-trigger:
				if err := snapshot(b); err != nil {
					return err
				}
				if b.final {
					return finish()
				}
				if b.stop {
					<-ctx.Done()
					return context.Cause(ctx)
				}
			}
		}
	}
	return finish()
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
	for i := range data {
		wm[i] = watermark.At(cur, g.Current(), others)
		t := ws.ts(data[i]).UnixMilli()
		ts[i] = t
		g.OnEvent(t)
	}
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
