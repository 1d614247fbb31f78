package engine

import "github.com/weirstream/weir/internal/metrics"

// The stateless operators. Each counts records in and out once per batch.

type mapOp[T, U any] struct {
	fn  func(T) U
	out consumer[U]
	ob  *batch[U]
	m   *metrics.Operator
}

func (op *mapOp[T, U]) push(b *batch[T]) error {
	n := len(b.data)
	op.m.RecordsIn.Add(int64(n))
	ob := op.ob
	if cap(ob.data) < n {
		ob.data = make([]U, 0, n)
	}
	ob.data = ob.data[:n]
	for i := range b.data {
		ob.data[i] = op.fn(b.data[i])
	}
	// A map changes neither timestamps nor watermarks: share the columns.
	ob.ts, ob.wm, ob.watermark, ob.idle = b.ts, b.wm, b.watermark, b.idle
	op.m.RecordsOut.Add(int64(n))
	err := op.out.push(ob)
	clear(ob.data)
	ob.ts, ob.wm = nil, nil
	return err
}

func (op *mapOp[T, U]) finish() error { return op.out.finish() }

type filterOp[T any] struct {
	fn  func(T) bool
	out consumer[T]
	ob  *batch[T]
	m   *metrics.Operator
}

func (op *filterOp[T]) push(b *batch[T]) error {
	op.m.RecordsIn.Add(int64(len(b.data)))
	ob := op.ob
	for i := range b.data {
		if op.fn(b.data[i]) {
			ob.add(b.data[i], b.ts[i], b.wm[i])
		}
	}
	ob.watermark, ob.idle = b.watermark, b.idle
	op.m.RecordsOut.Add(int64(len(ob.data)))
	err := op.out.push(ob)
	ob.reset()
	return err
}

func (op *filterOp[T]) finish() error { return op.out.finish() }

type flatMapOp[T, U any] struct {
	fn func(T, func(U))
	// fnWM, when set, is called instead of fn with the watermark before
	// the record (FlatMapWatermarkWith)
	fnWM func(T, int64, func(U))
	// flush, when set, runs after each input batch's records, before the
	// batch goes on (FlatMapFlushWith)
	flush func(func(U))
	// closeFn, when set, runs once the input has ended, before the end
	// goes on (FlatMapCloseWith)
	closeFn func() error
	emit    func(U)
	out     consumer[U]
	ob      *batch[U]
	size    int
	ts, wm  int64
	err     error
	m       *metrics.Operator
}

// add is the emit callback: it appends to the output batch and pushes it
// when full (with the watermark before the current record as its final
// watermark).
func (op *flatMapOp[T, U]) add(v U) {
	if op.err != nil {
		return
	}
	op.ob.add(v, op.ts, op.wm)
	if len(op.ob.data) >= op.size {
		op.ob.watermark = op.wm
		op.m.RecordsOut.Add(int64(len(op.ob.data)))
		op.err = op.out.push(op.ob)
		op.ob.reset()
	}
}

func (op *flatMapOp[T, U]) push(b *batch[T]) error {
	op.m.RecordsIn.Add(int64(len(b.data)))
	for i := range b.data {
		op.ts, op.wm = b.ts[i], b.wm[i]
		if op.fnWM != nil {
			op.fnWM(b.data[i], op.wm, op.emit)
		} else {
			op.fn(b.data[i], op.emit)
		}
		if op.err != nil {
			return op.err
		}
	}
	if op.flush != nil {
		op.flush(op.emit)
		if op.err != nil {
			return op.err
		}
	}
	op.ob.watermark, op.ob.idle = b.watermark, b.idle
	op.m.RecordsOut.Add(int64(len(op.ob.data)))
	err := op.out.push(op.ob)
	op.ob.reset()
	return err
}

func (op *flatMapOp[T, U]) finish() error {
	if op.closeFn != nil {
		if err := op.closeFn(); err != nil {
			return err
		}
	}
	return op.out.finish()
}

// passOp counts the records of a node that has no operator of its own
// (Union, whose inputs the task loop has already merged with their
// watermarks; Rebalance, Broadcast, a side output) and passes them on: every node
// counts its own records out, once per record, whether its output is
// chained or goes to network writers.
type passOp[T any] struct {
	out consumer[T]
	m   *metrics.Operator
}

func (op *passOp[T]) push(b *batch[T]) error {
	op.m.RecordsIn.Add(int64(len(b.data)))
	op.m.RecordsOut.Add(int64(len(b.data)))
	return op.out.push(b)
}
func (op *passOp[T]) finish() error { return op.out.finish() }
func (op *passOp[T]) barrier(b *barrierMsg, s *taskSnapshot) error {
	return forwardBarrier(op.out, b, s)
}
