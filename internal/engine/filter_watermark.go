package engine

import (
	"github.com/weirstream/weir/internal/metrics"
)

// FilterWatermarkWith is Filter with a function per subtask (newFn is
// called once per subtask when the job starts, so the function may keep
// state of its own without locks) that is also given each record's event
// time and the watermark the operator had received before the record, both
// in Unix milliseconds (math.MinInt64 before the first watermark).
//
// The function's state is not checkpointed: after a restore it starts
// empty, so it must only be a hint that makes the filter drop records it
// can prove useless, never something results depend on. The SQL planner
// uses it to drop, before a join's state, rows that provably can never
// join (sql/planner/join_maxprune.go): the watermark tells it which rows an
// event-time window downstream of the same source has certainly counted.
func FilterWatermarkWith[T any](s *Stream[T], newFn func() func(v T, ts, wm int64) bool, opts ...OperatorOption) *Stream[T] {
	cfg := s.job.opConfig(opts)
	out, n := newStream[T](s.job, "filter", cfg)
	connect(s, n, forward)
	n.build = func(st *subtask, o any) ([]any, error) {
		return []any{consumer[T](&filterWMOp[T]{fn: newFn(), out: o.(consumer[T]), ob: newBatch[T](st.cfg().batchSize), m: st.metrics(n)})}, nil
	}
	return out
}

type filterWMOp[T any] struct {
	fn  func(T, int64, int64) bool
	out consumer[T]
	ob  *batch[T]
	m   *metrics.Operator
}

func (op *filterWMOp[T]) push(b *batch[T]) error {
	op.m.RecordsIn.Add(int64(len(b.data)))
	ob := op.ob
	for i := range b.data {
		if op.fn(b.data[i], b.ts[i], b.wm[i]) {
			ob.add(b.data[i], b.ts[i], b.wm[i])
		}
	}
	ob.watermark, ob.idle = b.watermark, b.idle
	op.m.RecordsOut.Add(int64(len(ob.data)))
	err := op.out.push(ob)
	ob.reset()
	return err
}

func (op *filterWMOp[T]) finish() error { return op.out.finish() }

func (op *filterWMOp[T]) barrier(b *barrierMsg, s *taskSnapshot) error {
	return forwardBarrier(op.out, b, s)
}
