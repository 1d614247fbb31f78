package engine

import (
	"time"

	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// winOut is the output side that every window operator shares: the batch
// of results, the side output of late events, and the watermark already
// forwarded downstream.
type winOut[K comparable, T, R any] struct {
	out       consumer[R]
	ob        *batch[R]
	batchSize int
	m         *metrics.Operator
	late      consumer[LateEvent[K, T]] // nil unless LateEvents asked for it
	lb        *batch[LateEvent[K, T]]
	sentWM    int64
	idle      bool
}

func newWinOut[K comparable, T, R any](st *subtask, n *node, o any) (winOut[K, T, R], error) {
	size := st.cfg().batchSize
	w := winOut[K, T, R]{out: o.(consumer[R]), ob: newBatch[R](size), batchSize: size, m: st.metrics(n), sentWM: watermark.Min}
	if n.side != nil {
		lo, err := st.plan.output(n.side, st)
		if err != nil {
			return w, err
		}
		w.late = &passOp[LateEvent[K, T]]{out: lo.(consumer[LateEvent[K, T]]), m: st.metrics(n.side)}
		w.lb = newBatch[LateEvent[K, T]](size)
	}
	return w, nil
}

// emit pushes the results downstream with final watermark wm.
func (o *winOut[K, T, R]) emit(wm int64) error {
	o.ob.watermark = wm
	o.ob.idle = o.idle
	o.sentWM = wm
	o.m.RecordsOut.Add(int64(len(o.ob.data)))
	err := o.out.push(o.ob)
	o.ob.reset()
	return err
}

// add appends a result and pushes the batch when it is full.
func (o *winOut[K, T, R]) add(r R, ts, wm int64) error {
	o.ob.add(r, ts, wm)
	return o.pushFull(wm)
}

// pushFull pushes the results when the batch is full (after add, or after
// a result written in place with ob.put).
func (o *winOut[K, T, R]) pushFull(wm int64) error {
	if len(o.ob.data) >= o.batchSize {
		return o.emit(wm)
	}
	return nil
}

// dropLate counts a late event and, if asked for, sends it to the side
// output with the window it missed.
func (o *winOut[K, T, R]) dropLate(r *keyed[K, T], ts, start, end, wm int64) {
	o.m.LateDropped.Add(1)
	if o.lb == nil {
		return
	}
	o.lb.add(LateEvent[K, T]{
		Key: r.key, Value: r.val, Timestamp: time.UnixMilli(ts).UTC(),
		Window:    WindowInfo{time.UnixMilli(start).UTC(), time.UnixMilli(end).UTC()},
		Watermark: time.UnixMilli(wm).UTC(),
	}, ts, wm)
}

// endBatch forwards, after an input batch, the late events and results it
// produced and the watermark wm if it advanced.
func (o *winOut[K, T, R]) endBatch(wm int64, idle bool) error {
	o.idle = idle
	if o.lb != nil && (len(o.lb.data) > 0 || wm > o.lb.watermark) {
		if err := o.pushLate(wm); err != nil {
			return err
		}
	}
	if len(o.ob.data) > 0 || wm > o.sentWM {
		return o.emit(wm)
	}
	return nil
}

// flush pushes, in the middle of an input batch, the late events and the
// results produced so far, with wm (the watermark before the current
// record) as their final watermark, in endBatch's order.
func (o *winOut[K, T, R]) flush(wm int64) error {
	if o.lb != nil && len(o.lb.data) > 0 {
		if err := o.pushLate(wm); err != nil {
			return err
		}
	}
	if len(o.ob.data) > 0 {
		return o.emit(wm)
	}
	return nil
}

// pushLate pushes the late events with final watermark wm.
func (o *winOut[K, T, R]) pushLate(wm int64) error {
	o.lb.watermark = wm
	err := o.late.push(o.lb)
	o.lb.reset()
	return err
}

// forwardBarrier passes a checkpoint barrier to the side output and the
// results.
func (o *winOut[K, T, R]) forwardBarrier(b *barrierMsg, s *taskSnapshot) error {
	if o.late != nil {
		if err := forwardBarrier(o.late, b, s); err != nil {
			return err
		}
	}
	return forwardBarrier(o.out, b, s)
}

func (o *winOut[K, T, R]) finish() error {
	if o.late != nil {
		if err := o.late.finish(); err != nil {
			return err
		}
	}
	return o.out.finish()
}
