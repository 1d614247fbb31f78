package engine

import (
	"fmt"

	"github.com/weirstream/weir/internal/keygroup"
)

// Stream is a stream of records of type T in a job under construction.
type Stream[T any] struct {
	job  *Job
	node *node
}

// Job returns the job the stream belongs to.
func (s *Stream[T]) Job() *Job { return s.job }

// KeyedStream is a stream partitioned by a key: every record with the same
// key goes to the same subtask of the next operator, which keeps state per
// key. Build one with KeyBy.
type KeyedStream[K comparable, T any] struct {
	src  *Stream[T]
	key  func(T) K
	hash func(K) uint64
}

// newStream makes the node of a one-input operator and its output stream.
func newStream[OUT any](j *Job, kind string, cfg config) (*Stream[OUT], *node) {
	n := j.addNode(cfg.name, kind, cfg.parallelism, cfg)
	n.tee = newTee[OUT]
	return &Stream[OUT]{job: j, node: n}, n
}

// Map applies fn to every record. It is chained to its input (same
// goroutine, plain function calls) unless Parallelism gives it another
// parallelism.
func Map[T, U any](s *Stream[T], fn func(T) U, opts ...OperatorOption) *Stream[U] {
	cfg := s.job.opConfig(opts)
	out, n := newStream[U](s.job, "map", cfg)
	connect(s, n, forward)
	n.build = func(st *subtask, o any) ([]any, error) {
		return []any{consumer[T](&mapOp[T, U]{fn: fn, out: o.(consumer[U]), ob: newBatch[U](0), m: st.metrics(n)})}, nil
	}
	return out
}

// Filter keeps the records for which fn returns true.
func Filter[T any](s *Stream[T], fn func(T) bool, opts ...OperatorOption) *Stream[T] {
	cfg := s.job.opConfig(opts)
	out, n := newStream[T](s.job, "filter", cfg)
	connect(s, n, forward)
	n.build = func(st *subtask, o any) ([]any, error) {
		return []any{consumer[T](&filterOp[T]{fn: fn, out: o.(consumer[T]), ob: newBatch[T](st.cfg().batchSize), m: st.metrics(n)})}, nil
	}
	return out
}

// FlatMap calls fn for every record; fn emits zero or more records through
// emit. Emitted records keep the input record's timestamp.
func FlatMap[T, U any](s *Stream[T], fn func(v T, emit func(U)), opts ...OperatorOption) *Stream[U] {
	return flatMapNode(s, opts, func(op *flatMapOp[T, U]) { op.fn = fn })
}

// flatMapNode adds a flatMapOp over s, which set fills in per subtask
// (its function, and its flush or close if any).
func flatMapNode[T, U any](s *Stream[T], opts []OperatorOption, set func(op *flatMapOp[T, U])) *Stream[U] {
	cfg := s.job.opConfig(opts)
	out, n := newStream[U](s.job, "flatmap", cfg)
	connect(s, n, forward)
	n.build = func(st *subtask, o any) ([]any, error) {
		op := &flatMapOp[T, U]{out: o.(consumer[U]), ob: newBatch[U](st.cfg().batchSize), size: st.cfg().batchSize, m: st.metrics(n)}
		set(op)
		op.emit = op.add
		return []any{consumer[T](op)}, nil
	}
	return out
}

// KeyBy partitions s by key. It is not an operator of its own: the next
// operator (Window, Process) receives its input over a hash-partitioned edge,
// by key group (see package keygroup). K must be a type with a stable hash:
// strings, numbers, and arrays and structs of them.
func KeyBy[T any, K comparable](s *Stream[T], key func(T) K) *KeyedStream[K, T] {
	h, err := keygroup.Hasher[K]()
	if err != nil {
		s.job.fail(fmt.Errorf("weir: KeyBy: %w", err))
	}
	return &KeyedStream[K, T]{src: s, key: key, hash: h}
}

// Rebalance distributes records round robin over the next operator's
// subtasks (which run at the job's parallelism unless told otherwise).
func Rebalance[T any](s *Stream[T], opts ...OperatorOption) *Stream[T] {
	return redistribute(s, "rebalance", rebalance, opts)
}

// Broadcast sends every record to every subtask of the next operator.
func Broadcast[T any](s *Stream[T], opts ...OperatorOption) *Stream[T] {
	return redistribute(s, "broadcast", broadcast, opts)
}

func redistribute[T any](s *Stream[T], kind string, part partitioning, opts []OperatorOption) *Stream[T] {
	cfg := s.job.opConfig(opts)
	if cfg.parallelism == 0 {
		cfg.parallelism = s.job.cfg.parallelism
	}
	out, n := newStream[T](s.job, kind, cfg)
	connect(s, n, part)
	n.build = func(st *subtask, o any) ([]any, error) {
		return []any{consumer[T](&passOp[T]{out: o.(consumer[T]), m: st.metrics(n)})}, nil // the edge did the work; pass records on
	}
	return out
}

// Union merges streams of the same type into one. The result's watermark is
// the minimum of the inputs' watermarks.
func Union[T any](s *Stream[T], others ...*Stream[T]) *Stream[T] {
	out, n := newStream[T](s.job, "union", config{})
	n.union = true
	for _, in := range append([]*Stream[T]{s}, others...) {
		if in.job != s.job {
			s.job.fail(fmt.Errorf("weir: Union: streams of different jobs"))
			return out
		}
		connect(in, n, forward)
	}
	n.build = func(st *subtask, o any) ([]any, error) {
		u := &passOp[T]{out: o.(consumer[T]), m: st.metrics(n)}
		ins := make([]any, len(n.inputs))
		for i := range ins {
			ins[i] = consumer[T](u)
		}
		return ins, nil
	}
	return out
}

// FlatMapWith is FlatMap with a function per subtask: newFn is called once
// for each subtask when the job starts, so the function it returns may keep
// state of its own (a buffer it reuses) without locks, as ProcessWith does
// for keyed functions. The state is not checkpointed.
// FlatMapFlushWith is FlatMapWith whose function per subtask comes with a
// flush, called after the records of each input batch, before the batch's
// watermark goes on and before any checkpoint barrier after it: a function
// that gathers a batch's records (a local pre-aggregation) emits what it
// gathered there, so nothing it holds is ever in a checkpoint. The records
// flush emits carry the timestamp and watermark of the batch's last record.
func FlatMapFlushWith[T, U any](s *Stream[T], newFn func() (fn func(v T, emit func(U)), flush func(emit func(U))), opts ...OperatorOption) *Stream[U] {
	return flatMapNode(s, opts, func(op *flatMapOp[T, U]) { op.fn, op.flush = newFn() })
}

// FlatMapWatermarkWith is FlatMapWith whose function is also given the
// watermark the operator had received before each record (Unix
// milliseconds, math.MinInt64 before the first).
func FlatMapWatermarkWith[T, U any](s *Stream[T], newFn func() func(v T, wm int64, emit func(U)), opts ...OperatorOption) *Stream[U] {
	return flatMapNode(s, opts, func(op *flatMapOp[T, U]) { op.fnWM = newFn() })
}

// FlatMapCloseWith: see weir.FlatMapCloseWith.
func FlatMapCloseWith[T, U any](s *Stream[T], newFn func() (fn func(v T, emit func(U)), close func() error), opts ...OperatorOption) *Stream[U] {
	return flatMapNode(s, opts, func(op *flatMapOp[T, U]) { op.fn, op.closeFn = newFn() })
}

// FlatMapWith: see weir.FlatMapWith.
func FlatMapWith[T, U any](s *Stream[T], newFn func() func(v T, emit func(U)), opts ...OperatorOption) *Stream[U] {
	return flatMapNode(s, opts, func(op *flatMapOp[T, U]) { op.fn = newFn() })
}
