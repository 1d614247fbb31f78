package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
)

type sinkConfig struct {
	client     clientConfig
	topic      string
	guarantee  Guarantee
	txnPrefix  string
	txnTimeout time.Duration
}

// Sink writes records to Kafka with the given delivery guarantee (default
// AtLeastOnce; see DeliveryGuarantee). serialize fills in the record of one
// value: Key, Value, Headers, Timestamp (left zero, the producer stamps the
// time of producing), Topic (left empty, DefaultTopic's). Records are
// partitioned by key hash (franz-go's default, compatible with the Java
// client's). The record serialize gets is recycled from an earlier one once
// the broker acknowledged it: Key, Value and Headers are empty but may have
// capacity, so appending to them (r.Value = append(r.Value, ...)) serializes
// without allocating. Either always append or always assign new slices:
// appending to a slice you assigned earlier and still use would overwrite it.
//
// # Exactly once
//
// With ExactlyOnce, the sink is Flink's two-phase-commit KafkaSink. Each
// sink subtask writes into a Kafka transaction with transactional id
// "<prefix>-<subtask>-<n>", where n is one more than the id of the
// checkpoint that pre-committed the subtask's previous transaction (the
// restored checkpoint's id after a restart). At a checkpoint barrier the
// writer flushes the transaction and hands its id, producer id and epoch to
// the checkpoint, leaving it open; when the checkpoint is complete, the
// committer commits it with an EndTxn request of its own (any process can:
// a restarted job commits what its restored checkpoint holds). A new
// transaction, with the next id, starts with the next record, so that
// initialising it cannot abort a transaction that waits for its commit.
// Commit is idempotent: committing a committed transaction again succeeds.
// When a job restarts, each writer's Recover aborts the transactions its
// subtask left open with an n above the restored checkpoint (writer 0 also
// those of subtasks beyond the current parallelism), found with
// ListTransactions (Kafka 3.0+; the principal needs DESCRIBE on the
// transactional ids). Consumers must read with isolation level
// read_committed to see each record once; transactions stay open between
// checkpoints, so those consumers lag by up to a checkpoint interval.
//
// Without checkpointing, a bounded job commits one transaction per subtask
// at the end of its input.
func Sink[T any](brokers []string, serialize func(v T, r *kgo.Record) error, opts ...SinkOption) weir.CommittingSink[T] {
	c := sinkConfig{client: defaultClientConfig(brokers), guarantee: AtLeastOnce, txnTimeout: 15 * time.Minute}
	for _, o := range opts {
		o.applySink(&c)
	}
	return &sink[T]{cfg: c, serialize: serialize}
}

type sink[T any] struct {
	cfg       sinkConfig
	serialize func(T, *kgo.Record) error
}

func (s *sink[T]) validate() error {
	if err := s.cfg.client.validate("sink"); err != nil {
		return err
	}
	if s.serialize == nil {
		return errors.New("kafka: sink: nil serialize function")
	}
	switch s.cfg.guarantee {
	case None, AtLeastOnce:
	case ExactlyOnce:
		if s.cfg.txnPrefix == "" {
			return errors.New("kafka: sink: ExactlyOnce needs a TransactionalIDPrefix")
		}
		if s.cfg.txnTimeout < time.Second {
			return fmt.Errorf("kafka: sink: transaction timeout %v is below 1s", s.cfg.txnTimeout)
		}
	default:
		return fmt.Errorf("kafka: sink: unknown delivery guarantee %v", s.cfg.guarantee)
	}
	return nil
}

// Committer implements weir.CommittingSink.
func (s *sink[T]) Committer() weir.Committer { return &committer{cfg: &s.cfg} }

// OpenWriter implements weir.Sink. Its writers are weir.CommittingWriters.
func (s *sink[T]) OpenWriter(ctx context.Context, subtask, parallelism int) (weir.SinkWriter[T], error) {
	if lr := runFrom(ctx); lr != nil {
		return s.openGroupWriter(lr, subtask)
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	w := &writer[T]{s: s, subtask: subtask, parallelism: parallelism}
	w.pool.New = func() any { return new(kgo.Record) }
	w.promise = w.onAck
	if s.cfg.guarantee != ExactlyOnce {
		cl, err := kgo.NewClient(s.producerOpts("")...)
		if err != nil {
			return nil, fmt.Errorf("kafka: sink subtask %d: %w", subtask, err)
		}
		w.cl = cl
	}
	return w, nil
}

func (s *sink[T]) producerOpts(txnID string) []kgo.Opt {
	opts := s.cfg.client.kgoOpts()
	if s.cfg.topic != "" {
		opts = append(opts, kgo.DefaultProduceTopic(s.cfg.topic))
	}
	if txnID != "" {
		opts = append(opts, kgo.TransactionalID(txnID), kgo.TransactionTimeout(s.cfg.txnTimeout))
	}
	return opts
}

// writer is the writer of one sink subtask. Write, PreCommit, Recover and
// Close are called from the subtask's goroutine; onAck from the client's.
type writer[T any] struct {
	s                    *sink[T]
	subtask, parallelism int

	cl      *kgo.Client // ExactlyOnce: the open transaction's, nil between transactions
	txnID   string
	nextTxn int64 // n of the next transaction's id
	pool    sync.Pool
	promise func(*kgo.Record, error)

	errMu  sync.Mutex
	err    error // first failed record
	closed bool
}

var _ weir.CommittingWriter[int] = (*writer[int])(nil)

func (w *writer[T]) onAck(r *kgo.Record, err error) {
	if err != nil {
		w.errMu.Lock()
		if w.err == nil {
			w.err = fmt.Errorf("kafka: produce to topic %q partition %d (sink subtask %d): %w", r.Topic, r.Partition, w.subtask, err)
		}
		w.errMu.Unlock()
	}
	w.pool.Put(r)
}

func (w *writer[T]) failed() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}

// Write implements weir.SinkWriter.
func (w *writer[T]) Write(ctx context.Context, items []T) error {
	if w.closed {
		return errors.New("kafka: sink writer used after Close")
	}
	if err := w.failed(); err != nil {
		return err
	}
	if w.cl == nil {
		if err := w.begin(); err != nil {
			return err
		}
	}
	for i := range items {
		r := w.pool.Get().(*kgo.Record)
		*r = kgo.Record{Key: r.Key[:0], Value: r.Value[:0], Headers: r.Headers[:0]}
		if err := w.s.serialize(items[i], r); err != nil {
			w.pool.Put(r)
			return fmt.Errorf("kafka: serialize a record (sink subtask %d): %w", w.subtask, err)
		}
		if r.Topic == "" && w.s.cfg.topic == "" {
			w.pool.Put(r)
			return fmt.Errorf("kafka: sink subtask %d: a record without a topic, and no DefaultTopic", w.subtask)
		}
		// Produce blocks while the client buffers its maximum of records
		// (backpressure) and fails the record through onAck.
		w.cl.Produce(ctx, r, w.promise)
	}
	return nil
}

// begin starts the next transaction with a client of its own.
func (w *writer[T]) begin() error {
	w.txnID = txnID(w.s.cfg.txnPrefix, w.subtask, w.nextTxn)
	cl, err := kgo.NewClient(w.s.producerOpts(w.txnID)...)
	if err != nil {
		return fmt.Errorf("kafka: sink subtask %d, transaction %s: %w", w.subtask, w.txnID, err)
	}
	if err := cl.BeginTransaction(); err != nil {
		cl.Close()
		return fmt.Errorf("kafka: sink subtask %d: begin transaction %s: %w", w.subtask, w.txnID, err)
	}
	w.cl = cl
	return nil
}

func txnID(prefix string, subtask int, n int64) string {
	return prefix + "-" + strconv.Itoa(subtask) + "-" + strconv.FormatInt(n, 10)
}

// committable is what an ExactlyOnce PreCommit stages: an open transaction,
// flushed.
type committable struct {
	TxnID      string `json:"txn"`
	ProducerID int64  `json:"pid"`
	Epoch      int16  `json:"epoch"`
}

// PreCommit implements weir.CommittingWriter: None does nothing,
// AtLeastOnce flushes, ExactlyOnce flushes the open transaction and returns
// it as the committable.
func (w *writer[T]) PreCommit(ctx context.Context, checkpointID int64) ([]byte, error) {
	if w.closed {
		return nil, errors.New("kafka: sink writer used after Close")
	}
	if err := w.failed(); err != nil {
		return nil, err
	}
	switch w.s.cfg.guarantee {
	case None:
		return nil, nil
	case AtLeastOnce:
		if err := w.cl.Flush(ctx); err != nil {
			return nil, fmt.Errorf("kafka: sink subtask %d: flush for checkpoint %d: %w", w.subtask, checkpointID, err)
		}
		return nil, w.failed()
	}
	if w.cl == nil {
		// Nothing written since the previous transaction.
		w.nextTxn = checkpointID + 1
		return nil, nil
	}
	if err := w.cl.Flush(ctx); err != nil {
		return nil, fmt.Errorf("kafka: sink subtask %d: flush transaction %s for checkpoint %d: %w", w.subtask, w.txnID, checkpointID, err)
	}
	if err := w.failed(); err != nil {
		return nil, err
	}
	pid, epoch, err := w.cl.ProducerID(ctx)
	if err != nil {
		return nil, fmt.Errorf("kafka: sink subtask %d: producer id of transaction %s: %w", w.subtask, w.txnID, err)
	}
	data, err := json.Marshal(committable{TxnID: w.txnID, ProducerID: pid, Epoch: epoch})
	if err != nil {
		return nil, err
	}
	// Closing the client leaves the flushed transaction open on the
	// broker, for the committer.
	w.cl.Close()
	w.cl, w.txnID = nil, ""
	w.nextTxn = checkpointID + 1
	return data, nil
}

// Recover implements weir.CommittingWriter: ExactlyOnce aborts the
// transactions earlier attempts of this subtask left open.
func (w *writer[T]) Recover(ctx context.Context, restoredID int64) error {
	w.nextTxn = restoredID + 1
	if w.s.cfg.guarantee != ExactlyOnce {
		return nil
	}
	return abortLingering(ctx, &w.s.cfg, w.subtask, w.parallelism, restoredID)
}

// Close implements weir.SinkWriter. With ExactlyOnce, a transaction still
// open (the job failed, or ends without a last checkpoint) is aborted.
func (w *writer[T]) Close(ctx context.Context) error {
	if w.closed {
		return nil
	}
	w.closed = true
	if w.cl == nil {
		return nil
	}
	cl := w.cl
	w.cl = nil
	defer cl.Close()
	if w.s.cfg.guarantee == ExactlyOnce {
		// Best effort: Recover aborts it otherwise, but meanwhile it holds
		// back read_committed consumers.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := cl.AbortBufferedRecords(actx); err == nil {
			cl.EndTransaction(actx, kgo.TryAbort)
		}
		return nil
	}
	if ctx.Err() != nil {
		return nil // the job failed: what is buffered is produced again
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("kafka: sink subtask %d: flush: %w", w.subtask, err)
	}
	return w.failed()
}

// groupWriter is a sink writer of a group-mode job: it produces into the
// process's open transaction (the group runner commits it with the input
// offsets), whatever the sink's DeliveryGuarantee.
type groupWriter[T any] struct {
	s       *sink[T]
	lr      *localRun
	subtask int
	pool    sync.Pool
	promise func(*kgo.Record, error)
}

func (s *sink[T]) openGroupWriter(lr *localRun, subtask int) (weir.SinkWriter[T], error) {
	if err := s.cfg.client.validate("sink"); err != nil {
		return nil, err
	}
	if s.serialize == nil {
		return nil, errors.New("kafka: sink: nil serialize function")
	}
	w := &groupWriter[T]{s: s, lr: lr, subtask: subtask}
	w.pool.New = func() any { return new(kgo.Record) }
	w.promise = func(r *kgo.Record, err error) {
		if err != nil {
			lr.fail(fmt.Errorf("kafka: produce to topic %q partition %d (sink subtask %d): %w", r.Topic, r.Partition, subtask, err))
		}
		w.pool.Put(r)
	}
	return w, nil
}

// Write implements weir.SinkWriter.
func (w *groupWriter[T]) Write(ctx context.Context, items []T) error {
	if err := w.lr.failed(); err != nil {
		return err
	}
	// The runner ends the transaction, after the local job may have
	// ended: records must not fail because the job's context did.
	pctx := context.WithoutCancel(ctx)
	if w.lr.committing.Load() {
		// Every reader holds while the runner commits: a record now
		// would miss the transaction (or land in the next one, with
		// offsets already committed past its input).
		return fmt.Errorf("kafka: sink subtask %d: internal error: a record written while the group's transaction commits", w.subtask)
	}
	for i := range items {
		r := w.pool.Get().(*kgo.Record)
		*r = kgo.Record{Key: r.Key[:0], Value: r.Value[:0], Headers: r.Headers[:0]}
		if err := w.s.serialize(items[i], r); err != nil {
			w.pool.Put(r)
			return fmt.Errorf("kafka: serialize a record (sink subtask %d): %w", w.subtask, err)
		}
		if r.Topic == "" {
			if w.s.cfg.topic == "" {
				w.pool.Put(r)
				return fmt.Errorf("kafka: sink subtask %d: a record without a topic, and no DefaultTopic", w.subtask)
			}
			r.Topic = w.s.cfg.topic
		}
		w.lr.r.cl.Produce(pctx, r, w.promise)
	}
	return nil
}

// Close implements weir.SinkWriter: the runner flushes (and commits or
// aborts) the transaction.
func (w *groupWriter[T]) Close(context.Context) error { return nil }
