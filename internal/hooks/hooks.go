// Package hooks holds what the root package offers only to weir's own
// programs and tests (the CLI, the crash-test jobs): a checkpoint hook and
// a describer of operator state, and the runner of jobs in group mode
// (set by the Kafka connector). Package weir sets the functions in its
// init, so they are there whenever weir is linked in, and the root API
// does not export them.
//
// The package imports nothing from this module.
package hooks

import (
	"context"
	"log/slog"
	"time"
)

// Stage names a point in the completion of a checkpoint.
type Stage string

// The stages a checkpoint hook reports, in order.
const (
	// StageStateFile: one more state file is written (reported per file):
	// the checkpoint is half written.
	StageStateFile Stage = "state-file"
	// StageFilesWritten: every state file is written; the metadata is not,
	// so the checkpoint is not complete yet.
	StageFilesWritten Stage = "files-written"
	// StageComplete: the metadata is written; sinks have pre-committed but
	// not committed.
	StageComplete Stage = "complete"
	// StageCommitted: the sinks committed the checkpoint's output.
	StageCommitted Stage = "committed"
)

// CheckpointHook returns a weir.Option (assert it: this package cannot
// name the type) that calls fn at each stage of every checkpoint, from the
// coordinator's goroutine. It exists for crash tests (kill the process
// between pre-commit and commit); fn must be quick.
var CheckpointHook func(fn func(stage Stage, id int64)) any

// FirstCheckpointAfter returns a weir.Option (assert it) that makes the
// first periodic checkpoint of each execution attempt due d after its
// start (at most one interval), instead of at a random time in [0,
// interval] (coordinator.RandomFirstDelay). It exists for tests that must
// see no periodic checkpoint (an interval of an hour, checkpoints asked
// for through Job.Checkpoint) or a fixed phase.
var FirstCheckpointAfter func(d time.Duration) any

// DescribeOperatorState describes the non-keyed part of one state file of
// a checkpoint, for `weir checkpoints inspect`: for a source, each split's
// position and watermark. It returns nil for data it cannot read.
var DescribeOperatorState func(data []byte) []string

// GroupJob is a job run in group mode (weir.AppID): one job over several
// processes that share its Kafka input through a consumer group named by
// AppID (docs/scale-out.md). The root package describes the job; the
// Kafka connector runs it.
type GroupJob struct {
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
	// from the keyed state in the run's GroupLocal (the runner puts in ctx
	// what its sources and sinks read), taking a checkpoint every
	// Interval into a temporary directory. It returns when the job ends,
	// fails or ctx ends.
	RunLocal func(ctx context.Context) error
	// Status, if set, is told what the process owns (group_status.go).
	Status GroupStatus
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

// GroupLocal is what the group runner gives one local run, through the
// run's context (WithGroupLocal).
type GroupLocal struct {
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

type groupLocalKey struct{}

// WithGroupLocal returns ctx carrying g.
func WithGroupLocal(ctx context.Context, g *GroupLocal) context.Context {
	return context.WithValue(ctx, groupLocalKey{}, g)
}

// GroupLocalFrom returns the GroupLocal of ctx, or nil.
func GroupLocalFrom(ctx context.Context) *GroupLocal {
	g, _ := ctx.Value(groupLocalKey{}).(*GroupLocal)
	return g
}

// GroupRun runs a job in group mode. The Kafka connector sets it in its
// init (as database/sql drivers register); it is nil when the connector is
// not linked in.
var GroupRun func(ctx context.Context, g GroupJob) error

// Exchange is a hash edge (KeyBy) of a group-mode job that crosses
// processes through a repartition topic (docs/scale-out.md): the root
// package describes it and rewrites the edge into a writer of the topic and
// a reader of it; GroupRun creates the topic and fills in the rest before
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
	// "<its topic>/<partition>"; it comes earlier in GroupJob.Exchanges.
	Upstreams []any
	// MaxParallelism is the job's number of key groups: key group kg goes
	// to partition kg*Partitions/MaxParallelism.
	MaxParallelism int

	// Set by GroupRun.
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

// OpenExchange returns the writer of a repartition topic for the local
// run of ctx. Set by the Kafka connector in its init.
var OpenExchange func(ctx context.Context, topic string) (ExchangeWriter, error)
