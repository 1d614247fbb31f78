// Package group is the contract between weir's engine and a runner of
// jobs in group mode (weir.AppID, docs/scale-out.md): one job over several
// processes that share its input through a consumer group. The engine
// describes the job (Job) and runs it locally when told to; a Runner (the
// Kafka connector's) owns membership, transactions, repartition and
// changelog topics. A job finds its Runner through its sources
// (RunnerSource): no package-level hooks.
//
// The package imports nothing from this module.
package group

import (
	"context"
	"log/slog"
	"time"
)

// Runner runs jobs in group mode. The Kafka connector's sources offer one.
type Runner interface {
	// Run runs job until ctx ends, the job fails, or (a bounded job)
	// every partition of the input has been committed to its end.
	Run(ctx context.Context, job Job) error
	// OpenExchange returns the writer of a repartition topic for the
	// local run of ctx (a context the runner handed to Job.RunLocal, or
	// one derived from it).
	OpenExchange(ctx context.Context, topic string) (ExchangeWriter, error)
}

// RunnerSource is a source that can run the job it belongs to in group
// mode: the engine asks the job's sources (looking through wrappers, see
// Unwrap) for their Runner.
type RunnerSource interface {
	GroupRunner() Runner
}

// Unwrap follows Unwrap() any methods from s to the innermost source or
// sink: a wrapper that decodes another connector's records (the SQL
// connector's rows) passes contexts, splits, positions and checkpoint
// notifications through, so group mode looks through it.
func Unwrap(s any) any {
	for range 8 { // a bound, not a depth anyone needs
		u, ok := s.(interface{ Unwrap() any })
		if !ok {
			break
		}
		s = u.Unwrap()
	}
	return s
}

// Job is a job run in group mode (weir.AppID): one job over several
// processes that share its Kafka input through a consumer group named by
// AppID (docs/scale-out.md). The engine describes the job; the
// Kafka connector runs it.
type Job struct {
	AppID string
	// Sources and Sinks are the job's weir.Source and weir.Sink values, in
	// the order they were added.
	Sources []any
	Sinks   []any
	// Interval is the commit interval: a checkpoint of the local job, and
	// a Kafka transaction, per interval.
	Interval time.Duration
	Logger   *slog.Logger
	// RunLocal runs the job once in this process, from empty state or
	// from the keyed state in local (nil: empty state; the runner puts in
	// ctx what its sources and sinks read), taking a checkpoint every
	// Interval into a temporary directory. It returns when the job ends,
	// fails or ctx ends.
	RunLocal func(ctx context.Context, local *Local) error
	// Status, if set, is told what the process owns.
	Status Status
	// Exchanges are the job's hash edges, each through a repartition
	// topic.
	Exchanges []*Exchange
	// Keyed are the job's keyed stateful operators (those behind a hash
	// edge): their state moves between processes through changelog
	// topics.
	Keyed []KeyedOp
	// MaxParallelism is the job's number of key groups.
	MaxParallelism int
}

// KeyedOp is a keyed stateful operator of a group-mode job.
type KeyedOp struct {
	UID, Name string
	// Exchange is the repartition topic that feeds the operator: its
	// partitions decide which key groups a process owns.
	Exchange *Exchange
}

// KeyedState is the keyed state of one operator: key group -> the key
// group's snapshot, as the job's checkpoints hold it (the Groups of a
// state file), with the operator's watermark.
type KeyedState struct {
	UID       string
	Watermark int64
	Groups    map[int][]byte
}

// Local is what the group runner gives one local run (Job.RunLocal).
type Local struct {
	// Restore is the keyed state the run starts from (read from the
	// changelog topics); From names where it came from, for errors.
	Restore []KeyedState
	From    string
	// KeyGroups and Bytes count what Restore holds, for the metrics.
	KeyGroups, Bytes int64
	// Persist is called with the keyed state of every completed
	// checkpoint of the run (every operator subtask's, from the
	// checkpoint coordinator's goroutine) before the checkpoint counts
	// as complete: the runner writes it into the open transaction.
	Persist func(id int64, states []KeyedState) error
}

// Exchange is a hash edge (KeyBy) of a group-mode job that crosses
// processes through a repartition topic (docs/scale-out.md): the engine
// describes it and rewrites the edge into a writer of the topic and a
// reader of it; Runner.Run creates the topic and fills in the rest before
// the first local run.
type Exchange struct {
	// UID is the keyed operator's uid: the topic is
	// "<app id>-<uid>-repartition".
	UID string
	// Upstream is the weir.Source whose splits are the upstream tasks:
	// each of them writes its watermark into every partition of the
	// topic, and a reader waits for all of them.
	Upstream any
	// Upstreams are the sources of every sender (Upstream is the first).
	// A KeyBy behind a Union (a two-input keyed operator: a join keys the
	// union of its tagged inputs; nested unions are flattened into their
	// branches) has one sender per branch, all writing
	// into the one topic; their upstream tasks are named
	// "<branch>:<split>", and a reader waits for every branch's. An
	// upstream that is an *Exchange (a KeyBy behind a keyed operator: a
	// chain of KeyBys) has that exchange's partitions as its tasks, named
	// "<its topic>/<partition>"; it comes earlier in Job.Exchanges.
	Upstreams []any
	// MaxParallelism is the job's number of key groups: key group kg goes
	// to partition kg*Partitions/MaxParallelism.
	MaxParallelism int

	// Set by Runner.Run.
	Topic      string
	Partitions int
	// Tasks is how many upstream tasks a reader of a partition expects
	// watermarks from (the partitions of the upstream topics, summed over
	// Upstreams).
	Tasks int
	// Source is a weir.RestorableSource[ExchangeRecord] reading the
	// partitions of Topic this process owns, in the local run of ctx.
	Source any
}

// ExchangeRecord is a record read from a repartition topic: the value as
// the writer encoded it (the bytes belong to the Kafka client's record and
// must be decoded before the next Read), and its event time.
type ExchangeRecord struct {
	Value     []byte
	TS        int64
	Partition int32
	Offset    int64
}

// ExchangeWriter writes one subtask's records into a repartition topic,
// in the open transaction of the local run it was opened in.
type ExchangeWriter interface {
	// Write produces one record (value is copied) with event time ts to
	// the partition.
	Write(partition int32, value []byte, ts int64) error
	// Watermark writes the watermark of an upstream task (a split ID of
	// the upstream source) into every partition of the topic.
	Watermark(task string, wm int64) error
}

// Partition is one input partition a process of a group-mode job
// owns, as the group runner reports it.
type Partition struct {
	Topic     string
	Partition int32
	// Committed is the partition's committed offset as of this process's
	// last transaction; End its end (last stable offset) as the last
	// fetch saw it. -1: not known (yet).
	Committed, End int64
}

// Status receives the group runner's view of this process's
// membership, for the job's metrics and dashboard (what tasks a process
// owns: issue 15). The engine hands one in Job.Status; the
// runner calls it from the group's callbacks and its commit loop, so its
// methods must be quick and safe from any goroutine.
type Status interface {
	// Assigned reports the partitions the process owns after a rebalance
	// changed them (the whole set, possibly empty), with the member id and
	// generation the group gave it.
	Assigned(member string, generation int32, parts []Partition)
	// Committed reports, after a transaction committed, every partition
	// of the local run: Committed is the offset committed as of it (the
	// run's start for a partition that has not moved), End as last
	// fetched (-1: not yet).
	Committed(parts []Partition)
}
