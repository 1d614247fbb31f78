package engine

// FlatMapWith is FlatMap with a function per subtask: newFn is called once
// for each subtask when the job starts, so the function it returns may keep
// state of its own (a buffer it reuses) without locks, as ProcessWith does
// for keyed functions. The state is not checkpointed.
func FlatMapWith[T, U any](s *Stream[T], newFn func() func(v T, emit func(U)), opts ...OperatorOption) *Stream[U] {
	cfg := s.job.opConfig(opts)
	out, n := newStream[U](s.job, "flatmap", cfg)
	connect(s, n, forward)
	n.build = func(st *subtask, o any) ([]any, error) {
		op := &flatMapOp[T, U]{fn: newFn(), out: o.(consumer[U]), ob: newBatch[U](st.cfg().batchSize), size: st.cfg().batchSize, m: st.metrics(n)}
		op.emit = op.add
		return []any{consumer[T](op)}, nil
	}
	return out
}
