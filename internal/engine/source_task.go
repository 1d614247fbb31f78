package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/weirstream/weir/internal/coordinator"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// sourceTask is one source subtask: it reads its splits in turn, stamps
// event times and watermarks, takes part in checkpoints, and ends with a
// final flush. Its methods follow the concerns of the loop: opening and
// reading splits (open, read), watermarks and idleness (observe),
// dead letters (reportBadRecords, flushBad), barriers (snapshot,
// notifyComplete), pausing after a stop-with-savepoint (pause), and the
// end of the input (finalFlush).
type sourceTask[T any] struct {
	st     *subtask
	n      *node
	ctx    context.Context
	m      *metrics.Operator
	ck     *coordinator.Coordinator
	src    Source[T]
	splits []Split
	ws     WatermarkStrategy[T]
	out    consumer[T]
	bad    badKind

	// One entry per split.
	readers  []SplitReader[T]
	gens     []watermark.Generator
	done     []bool
	lastRead []int64 // processing time of each split's last record, ms
	comb     *watermark.Combiner
	active   int // splits not done

	// Malformed records: skipped and counted, or sent to the side output.
	badOut consumer[BadRecord]
	bb     *batch[BadRecord]

	size int
	b    *batch[T]
	view *batch[T] // the part of b that was filled, lent to the chain
	// What was sent last: a batch goes out when it has records, or the
	// watermark advanced, or the subtask's idleness changed.
	lastWM   int64
	lastIdle bool

	// Positions of checkpoints not yet known complete, for readers that
	// implement CheckpointListener.
	pending   []pendingPos
	listening bool
	trigger   <-chan *barrierMsg

	// Microbatch (microbatch.go): the watermark and idleness sent are
	// held for the whole epoch.
	epochs    bool
	epochWM   int64
	epochIdle bool
}

type pendingPos struct {
	id  int64
	pos [][]byte
}

// runSource is the loop of one source subtask.
func runSource[T any](st *subtask, n *node, src Source[T], splits []Split, ws WatermarkStrategy[T], out consumer[T], bad badKind) error {
	t := &sourceTask[T]{st: st, n: n, ctx: st.ctx, m: st.metrics(n), ck: st.plan.coord, src: src, splits: splits, ws: ws, out: out, bad: bad,
		lastWM: watermark.Min}
	if err := t.open(); err != nil {
		return err
	}
	if err := t.reportBadRecords(); err != nil {
		return err
	}
	t.start()
	t.startEpochs()
	for t.active > 0 {
		select {
		case b := <-t.trigger:
			if err := t.snapshot(b); err != nil {
				return err
			}
			if b.Stop {
				return t.pause()
			}
			if err := t.endEpoch(b); err != nil {
				return err
			}
		default:
		}
		if err := t.readAll(); err != nil {
			return err
		}
	}
	return t.finalFlush()
}

// open opens a reader per split, at its checkpointed position when the
// job restored one; a split that was done stays done.
func (t *sourceTask[T]) open() error {
	st, n, splits := t.st, t.n, t.splits
	restorable, _ := t.src.(RestorableSource[T])
	if t.ck != nil && restorable == nil {
		return permanent{fmt.Errorf("source %T cannot be checkpointed: it does not implement weir.RestorableSource", t.src)}
	}
	saved, _ := st.restoreMeta(n)
	t.readers = make([]SplitReader[T], len(splits))
	t.gens = make([]watermark.Generator, len(splits))
	t.comb = watermark.NewCombiner(len(splits))
	t.done = make([]bool, len(splits))
	t.active = len(splits)
	for i, s := range splits {
		t.gens[i] = watermark.NewGenerator(t.ws.kind, t.ws.delay)
		var r SplitReader[T]
		var err error
		if data, ok := saved[s.ID()]; ok {
			var ss splitState
			if err := decode(data, &ss); err != nil {
				return fmt.Errorf("restore split %s: %w", s.ID(), err)
			}
			t.gens[i].Restore(ss.MaxTS, ss.WM)
			t.comb.Update(i, ss.WM)
			if ss.Done {
				t.done[i] = true
				t.active--
				t.comb.Update(i, watermark.Max)
				continue
			}
			r, err = restorable.OpenAt(t.ctx, s, ss.Pos)
		} else {
			r, err = t.src.Open(t.ctx, s)
		}
		if err != nil {
			return fmt.Errorf("open split %s: %w", s.ID(), err)
		}
		if t.ck != nil {
			if _, ok := r.(CheckpointedReader[T]); !ok {
				r.Close()
				return permanent{fmt.Errorf("split reader %T cannot be checkpointed: it does not implement weir.CheckpointedReader", r)}
			}
		}
		t.readers[i] = r
		st.closers = append(st.closers, r.Close)
	}
	t.size = st.cfg().batchSize
	return nil
}

// reportBadRecords routes the readers' malformed records: skipped and
// counted, or, with a side output, sent on as dead letters.
func (t *sourceTask[T]) reportBadRecords() error {
	st, n, m := t.st, t.n, t.m
	if n.side != nil {
		t.bad = sideBad
		lo, err := st.plan.output(n.side, st)
		if err != nil {
			return err
		}
		t.badOut, t.bb = &passOp[BadRecord]{out: lo.(consumer[BadRecord]), m: st.metrics(n.side)}, newBatch[BadRecord](t.size)
	}
	if t.bad == failBad {
		return nil
	}
	for i, r := range t.readers {
		if r == nil {
			continue
		}
		rep, ok := r.(BadRecordReporter)
		if !ok && t.ws.tsErr != nil {
			// The policy is for the records the timestamp function
			// refuses; the reader fails on what it cannot decode.
			continue
		}
		if !ok {
			return permanent{fmt.Errorf("OnBadRecord(Skip) and OnBadRecord(DeadLetter) need split readers that implement weir.BadRecordReporter; %T does not", r)}
		}
		split := t.splits[i].ID()
		if t.bad == skipBad {
			rep.SetBadRecordHandler(func([]byte, string, error) { m.BadRecordsSkipped.Add(1) })
			continue
		}
		rep.SetBadRecordHandler(func(raw []byte, pos string, err error) {
			m.DeadLetters.Add(1)
			now := st.now()
			t.bb.add(BadRecord{Source: n.name, Split: split, Position: pos, Raw: bytes.Clone(raw), Err: err.Error(),
				Time: time.UnixMilli(now).UTC()}, now, t.outWM())
		})
	}
	return nil
}

// flushBad sends the dead letters of the last read on.
func (t *sourceTask[T]) flushBad() error {
	if t.bb == nil || len(t.bb.data) == 0 {
		return nil
	}
	t.bb.watermark = t.outWM()
	err := t.badOut.push(t.bb)
	t.bb.reset()
	return err
}

// start prepares the loop: the batch, the idleness clocks, the listeners
// of completed checkpoints and the trigger of barriers.
func (t *sourceTask[T]) start() {
	size := t.size
	t.b = newBatch[T](size)
	t.b.data = t.b.data[:size]
	t.b.ts = t.b.ts[:size]
	t.b.wm = t.b.wm[:size]
	t.view = &batch[T]{}
	t.lastRead = make([]int64, len(t.splits))
	if t.ws.idleness > 0 {
		now := t.st.now()
		for i := range t.lastRead {
			t.lastRead[i] = now
		}
	}
	for _, r := range t.readers {
		if _, ok := r.(CheckpointListener); ok {
			t.listening = true
		}
	}
	if t.ck != nil {
		t.trigger = t.ck.Trigger(t.n.id, t.st.index)
	}
}

// readAll reads once from every split that is not done, sends what it
// read on, and then does the subtask's periodic work.
func (t *sourceTask[T]) readAll() error {
	progressed := false
	for s := range t.readers {
		if t.done[s] {
			continue
		}
		k, eof, err := t.read(s)
		if err != nil {
			return err
		}
		progressed = progressed || k > 0
		if k, err = t.observe(s, k, eof); err != nil {
			return err
		}
		if err := t.emit(k); err != nil {
			return err
		}
	}
	if len(t.pending) > 0 {
		t.notifyComplete()
	}
	if err := t.st.tick(time.Now().UnixNano()); err != nil {
		return err
	}
	if !progressed {
		if err := t.ctx.Err(); err != nil {
			return context.Cause(t.ctx)
		}
		for _, r := range t.readers {
			if sc, ok := r.(SkipCounter); ok && t.bad == failBad {
				t.m.BadRecordsSkipped.Store(sc.Skipped())
			}
		}
	}
	return nil
}

// read reads a batch of split s into t.b: k records, and whether the
// split ended.
func (t *sourceTask[T]) read(s int) (k int, eof bool, err error) {
	k, err = t.readers[s].Read(t.ctx, t.b.data[:t.size])
	if ferr := t.flushBad(); ferr != nil {
		return 0, false, ferr
	}
	eof = errors.Is(err, io.EOF)
	if err != nil && !eof {
		if t.ctx.Err() != nil {
			return 0, false, context.Cause(t.ctx)
		}
		return 0, false, fmt.Errorf("split %s: %w", t.splits[s].ID(), err)
	}
	return k, eof, nil
}

// observe stamps the k records just read from split s with event times
// and watermarks, and updates the split's watermark, its idleness (on the
// job's clock: idle once it read nothing for the strategy's idleness), and
// its end. It returns how many records are left: a timestamp function
// that may fail (BoundedOutOfOrdernessOrBad) takes the refused ones out.
func (t *sourceTask[T]) observe(s, k int, eof bool) (int, error) {
	comb, ws := t.comb, t.ws
	if k > 0 {
		if comb.Idle(s) {
			comb.SetIdle(s, false)
		}
		if ws.tsErr != nil {
			var err error
			k, err = t.stampOrBad(s, k)
			if ferr := t.flushBad(); err == nil {
				err = ferr
			}
			if err != nil {
				return 0, err
			}
		} else {
			stamp(&t.b.header, t.b.data[:k], &t.gens[s], comb.Current(), comb.Others(s), ws, t.st)
		}
		t.holdWM(k)
		comb.Update(s, t.gens[s].Current())
		if ws.idleness > 0 {
			t.lastRead[s] = t.st.now()
		}
	} else if ws.idleness > 0 && !eof && !comb.Idle(s) && t.st.now()-t.lastRead[s] >= ws.idleness {
		comb.SetIdle(s, true)
	}
	if rw, ok := t.readers[s].(readerWatermark); ok {
		// A reader that knows its split's watermark (a repartition
		// topic's, from its upstream tasks' markers) sets it: after the
		// records just read, which it returned before the marker that
		// moved it.
		if w := rw.Watermark(); w > t.gens[s].Current() {
			t.gens[s].Restore(t.gens[s].MaxTimestamp(), w)
			comb.Update(s, w)
		}
	}
	if eof {
		t.done[s] = true
		t.active--
		comb.End(s)
		if sc, ok := t.readers[s].(SkipCounter); ok && t.bad == failBad {
			t.m.BadRecordsSkipped.Store(sc.Skipped())
		}
	}
	return k, nil
}

// stampOrBad is stamp for a timestamp function that may refuse a record
// (the OrBad strategies), over the k records just read from split s: the
// refused ones go to badTimestamp and the others move up in place; it
// returns how many are left. stamp's loop stays free of the error path.
func (t *sourceTask[T]) stampOrBad(s, k int) (int, error) {
	data, ts, wm := t.b.data[:k], t.b.ts[:k], t.b.wm[:k]
	cur, others := t.comb.Current(), t.comb.Others(s)
	// The generator in a local variable, as in stamp: its fields stay in
	// registers.
	g, tsf := t.gens[s], t.ws.tsErr
	defer func() { t.gens[s] = g }()
	n := 0
	for i := range data {
		at, err := tsf(data[i])
		if err != nil {
			if err := t.badTimestamp(s, data[i], err); err != nil {
				return n, err
			}
			continue
		}
		wm[n] = watermark.At(cur, g.Current(), others)
		ms := at.UnixMilli()
		ts[n] = ms
		g.OnEvent(ms)
		data[n] = data[i]
		n++
	}
	return n, nil
}

// badTimestamp handles a record of split s whose timestamp function
// refused it, under the source's bad-record policy.
func (t *sourceTask[T]) badTimestamp(s int, v T, err error) error {
	split := t.splits[s].ID()
	if t.bad == skipBad {
		t.m.BadRecordsSkipped.Add(1)
		return nil
	}
	raw, jerr := json.Marshal(v)
	if jerr != nil {
		raw = fmt.Appendf(nil, "%+v", v)
	}
	switch t.bad {
	case sideBad:
		t.m.DeadLetters.Add(1)
		now := t.st.now()
		t.bb.add(BadRecord{Source: t.n.name, Split: split, Raw: raw, Err: "timestamp: " + err.Error(),
			Time: time.UnixMilli(now).UTC()}, now, t.outWM())
		return nil
	}
	if len(raw) > 256 {
		raw = append(raw[:256:256], "..."...)
	}
	return fmt.Errorf("split %s: the timestamp of record %s: %w", split, raw, err)
}

// emit sends the k records read on with the combined watermark, or just
// the watermark or idleness when they changed.
func (t *sourceTask[T]) emit(k int) error {
	b, view := t.b, t.view
	b.watermark = t.outWM()
	idle := t.outIdle()
	if k == 0 && b.watermark <= t.lastWM && idle == t.lastIdle {
		return nil
	}
	view.ts, view.wm, view.data, view.watermark, view.idle = b.ts[:k], b.wm[:k], b.data[:k], b.watermark, idle
	t.m.RecordsOut.Add(int64(k))
	t.m.Watermark.Store(b.watermark)
	if err := t.out.push(view); err != nil {
		return err
	}
	t.lastWM, t.lastIdle = b.watermark, idle
	return nil
}

// notifyComplete tells the readers that implement CheckpointListener the
// positions of the newest checkpoint known complete.
func (t *sourceTask[T]) notifyComplete() {
	last := t.ck.Committed()
	k := 0
	for k < len(t.pending) && t.pending[k].id <= last {
		k++
	}
	if k == 0 {
		return
	}
	p := t.pending[k-1] // the newest complete one covers the older ones
	t.pending = append(t.pending[:0], t.pending[k:]...)
	for i, r := range t.readers {
		l, ok := r.(CheckpointListener)
		if !ok || t.done[i] || p.pos[i] == nil {
			continue
		}
		if err := l.NotifyCheckpointComplete(t.ctx, p.id, p.pos[i]); err != nil {
			t.st.cfg().logger.Warn("checkpoint-complete notification failed", "split", t.splits[i].ID(), "checkpoint", p.id, "err", err)
			t.m.NotifyErrors.Add(1)
		}
	}
}

// snapshot saves every split's position and watermark generator, then
// sends the barrier down the chain and the task's part to the
// coordinator.
func (t *sourceTask[T]) snapshot(b *barrierMsg) error {
	info := newOpInfo(t.st, t.n)
	os := info.state(t.comb.Current())
	os.Meta = map[string][]byte{}
	var positions [][]byte
	if t.listening {
		positions = make([][]byte, len(t.splits))
	}
	for i, s := range t.splits {
		ss := splitState{Done: t.done[i]}
		ss.MaxTS, ss.WM = t.gens[i].State()
		if !t.done[i] {
			pos, err := t.readers[i].(CheckpointedReader[T]).Position()
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
		t.pending = append(t.pending, pendingPos{id: b.ID, pos: positions})
	}
	snap := &taskSnapshot{ID: b.ID, Task: t.n.name, Subtask: t.st.index, States: []opState{os}}
	if t.badOut != nil {
		if err := forwardBarrier(t.badOut, b, snap); err != nil {
			return err
		}
	}
	if err := forwardBarrier(t.out, b, snap); err != nil {
		return err
	}
	return t.ck.Ack(t.ctx, snap)
}

// pause follows a stop-with-savepoint's barrier: the source reads nothing
// more, and the coordinator ends the job once the savepoint is complete.
func (t *sourceTask[T]) pause() error {
	<-t.ctx.Done()
	return context.Cause(t.ctx)
}

// finalFlush ends the input: the final watermark, and with checkpoints,
// the wait for the final checkpoint that covers everything the job
// produced (Flink's FLIP-147), then the end of the output.
func (t *sourceTask[T]) finalFlush() error {
	if t.lastWM < watermark.Max {
		view := t.view
		view.ts, view.wm, view.data, view.watermark, view.idle = nil, nil, nil, watermark.Max, false
		t.m.Watermark.Store(watermark.Max)
		if err := t.out.push(view); err != nil {
			return err
		}
	}
	if t.ck != nil {
		// Send what the output buffers hold, the last records and the
		// final watermark, now: waiting below, the task no longer ticks,
		// so its buffer timeout would not ship them before the next
		// barrier (a bounded side input would hold its consumers back
		// for up to a checkpoint interval).
		for _, f := range t.st.flushers {
			if err := f.flush(); err != nil {
				return err
			}
		}
		// The input is done, but the job is not until a final checkpoint
		// covers everything it produced: wait for it.
		if err := t.ck.SourceFinished(t.ctx); err != nil {
			return err
		}
		for {
			select {
			case <-t.ctx.Done():
				return context.Cause(t.ctx)
			case b := <-t.trigger:
				if err := t.snapshot(b); err != nil {
					return err
				}
				if b.Final {
					return t.finish()
				}
				if b.Stop {
					return t.pause()
				}
			}
		}
	}
	return t.finish()
}

// finish ends the dead letters' output and the source's.
func (t *sourceTask[T]) finish() error {
	if t.badOut != nil {
		if err := t.badOut.finish(); err != nil {
			return err
		}
	}
	return t.out.finish()
}
