package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
)

type sourceConfig struct {
	client        clientConfig
	start         StartAt
	group         string
	bounded       bool
	readCommitted bool
	skipBad       bool
	// repartitionPartitions: RepartitionPartitions (group mode).
	repartitionPartitions int
	// exchange is set on the source of a repartition topic (group mode,
	// repartition.go).
	exchange *exchangeConfig
}

// DecodeError is a record the decode function rejected.
type DecodeError struct {
	Topic     string
	Partition int32
	Offset    int64
	Err       error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("kafka: decode topic %q partition %d offset %d: %v", e.Topic, e.Partition, e.Offset, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// ErrUnknownTopic is wrapped by the error of a source whose topic does not
// exist.
var ErrUnknownTopic = errors.New("kafka: unknown topic")

// Source reads topics as a weir source with a split per topic-partition
// (so watermarks are generated per partition), the next offset of each
// partition kept in the job's checkpoints, and records turned into T by
// decode. decode must not keep the record (the source may reuse nothing of
// it today, but the record belongs to the client). A record decode rejects
// fails the job with its topic, partition and offset (a *DecodeError), or is
// skipped and counted with SkipBadRecords.
//
// Partitions are enumerated when the job (or a restarted attempt of it)
// starts; partitions added later are not read. A topic that does not exist
// fails the job with an error naming it (wrapping ErrUnknownTopic). Without
// a checkpoint, each partition starts where StartFrom says (default
// Earliest()). The source is unbounded unless Bounded is given. With Group,
// the offsets of each completed checkpoint are committed to that consumer
// group, for monitoring only: the job restores its own checkpoints.
//
// One franz-go client per source and process fetches for all the source's
// partitions and hands each partition's records to its reader.
func Source[T any](brokers []string, topics []string, decode func(*kgo.Record) (T, error), opts ...SourceOption) weir.RestorableSource[T] {
	c := sourceConfig{client: defaultClientConfig(brokers), start: Earliest()}
	for _, o := range opts {
		o.applySource(&c)
	}
	return &source[T]{cfg: c, topics: slices.Clone(topics), decode: decode}
}

type source[T any] struct {
	cfg    sourceConfig
	topics []string
	decode func(*kgo.Record) (T, error)

	mu struct {
		sync.Mutex
		c    *consumer // shared by the open readers; nil when none is open
		refs int
	}
}

// split is one topic-partition, with the offsets resolved when the splits
// were enumerated.
type split struct {
	topic     string
	partition int32
	start     int64 // where to start without a checkpoint
	end       int64 // bounded: stop before this offset; -1 unbounded
}

func (s *split) ID() string { return s.topic + "/" + strconv.Itoa(int(s.partition)) }

func (s *source[T]) newAdmin() (*kgo.Client, *kadm.Client, error) {
	cl, err := kgo.NewClient(s.cfg.client.kgoOpts()...)
	if err != nil {
		return nil, nil, fmt.Errorf("kafka: source client: %w", err)
	}
	return cl, kadm.NewClient(cl), nil
}

// Splits implements weir.Source: it lists the partitions of the topics and
// resolves their start (and, bounded, end) offsets.
func (s *source[T]) Splits(ctx context.Context) ([]weir.Split, error) {
	if err := s.cfg.client.validate("source"); err != nil {
		return nil, err
	}
	if len(s.topics) == 0 {
		return nil, errors.New("kafka: source: no topics")
	}
	if s.decode == nil {
		return nil, errors.New("kafka: source: nil decode function")
	}
	if s.cfg.start.kind == startCommitted && s.cfg.group == "" {
		return nil, errors.New("kafka: source: StartFrom(Committed(...)) needs a Group")
	}
	if lr := runFrom(ctx); lr != nil {
		// Group mode: the partitions this process owns.
		var splits []weir.Split
		for _, sp := range lr.splits(s.topics, s.cfg.bounded) {
			splits = append(splits, sp)
		}
		if len(splits) == 0 {
			// None of this source's partitions is ours: a split that
			// never has records (and holds the watermark back, as
			// input not seen yet must).
			splits = append(splits, &split{topic: s.topics[0], partition: -1, end: -1})
		}
		return splits, nil
	}
	cl, adm, err := s.newAdmin()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var splits []weir.Split
	err = retry(ctx, s.cfg.client.retryTimeout, "list the partitions of "+fmt.Sprint(s.topics), func() error {
		splits, err = s.splits(ctx, adm)
		return err
	})
	return splits, err
}

func (s *source[T]) splits(ctx context.Context, adm *kadm.Client) ([]weir.Split, error) {
	details, err := adm.ListTopics(ctx, s.topics...)
	if err != nil {
		return nil, err
	}
	var out []*split
	for _, t := range s.topics {
		d, ok := details[t]
		if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("%w %q (brokers %v)", ErrUnknownTopic, t, s.cfg.client.brokers)
		}
		if d.Err != nil {
			return nil, fmt.Errorf("kafka: metadata of topic %q: %w", t, d.Err)
		}
		for _, p := range d.Partitions.Numbers() {
			out = append(out, &split{topic: t, partition: p, end: -1})
		}
	}
	// Offsets, one request per kind for all partitions.
	lookup := func(l kadm.ListedOffsets, what string, sp *split) (int64, error) {
		o, ok := l.Lookup(sp.topic, sp.partition)
		if !ok {
			return 0, fmt.Errorf("kafka: no %s offset for topic %q partition %d", what, sp.topic, sp.partition)
		}
		if o.Err != nil {
			return 0, fmt.Errorf("kafka: %s offset of topic %q partition %d: %w", what, sp.topic, sp.partition, o.Err)
		}
		return o.Offset, nil
	}
	listEnd := adm.ListEndOffsets
	if s.cfg.readCommitted {
		listEnd = adm.ListCommittedOffsets
	}
	var ends, starts kadm.ListedOffsets
	needEnd := s.cfg.bounded || s.cfg.start.kind != startEarliest
	if needEnd {
		if ends, err = listEnd(ctx, s.topics...); err != nil {
			return nil, err
		}
	}
	if starts, err = adm.ListStartOffsets(ctx, s.topics...); err != nil {
		return nil, err
	}
	var committed kadm.OffsetResponses
	var after kadm.ListedOffsets
	start := s.cfg.start
	if start.kind == startCommitted {
		if committed, err = adm.FetchOffsets(ctx, s.cfg.group); errors.Is(err, kerr.GroupIDNotFound) {
			committed, err = kadm.OffsetResponses{}, nil // no commits yet
		}
		if err != nil {
			return nil, fmt.Errorf("kafka: committed offsets of group %q: %w", s.cfg.group, err)
		}
		start = *start.fallback
	}
	if start.kind == startTime {
		if after, err = adm.ListOffsetsAfterMilli(ctx, start.millis, s.topics...); err != nil {
			return nil, err
		}
	}
	splits := make([]weir.Split, len(out))
	for i, sp := range out {
		first, err := lookup(starts, "start", sp)
		if err != nil {
			return nil, err
		}
		if needEnd {
			if sp.end, err = lookup(ends, "end", sp); err != nil {
				return nil, err
			}
		}
		switch start.kind {
		case startEarliest:
			sp.start = first
		case startLatest:
			sp.start = sp.end
		case startTime:
			o, err := lookup(after, "time", sp)
			if err != nil {
				return nil, err
			}
			if o < 0 {
				o = sp.end
			}
			sp.start = o
		}
		if committed != nil {
			if o, ok := committed.Lookup(sp.topic, sp.partition); ok && o.Err == nil && o.At >= 0 {
				sp.start = max(o.At, first)
			}
		}
		if !s.cfg.bounded {
			sp.end = -1
		}
		splits[i] = sp
	}
	return splits, nil
}

// retry runs f until it succeeds, fails with an error that retrying cannot
// fix, ctx ends, or timeout passes; with backoff from 100ms to 2s. The
// franz-go client retries requests itself; this covers a cluster that is not
// reachable at all yet.
func retry(ctx context.Context, timeout time.Duration, what string, f func() error) error {
	deadline := time.Now().Add(timeout)
	backoff := 100 * time.Millisecond
	for {
		err := f()
		if err == nil || !retriable(err) || ctx.Err() != nil {
			return err
		}
		if time.Now().Add(backoff).After(deadline) {
			return fmt.Errorf("kafka: %s: giving up after %v: %w", what, timeout, err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// retriable says whether an error may go away by itself: the cluster is
// unreachable, or a broker answered with a retriable Kafka error.
func retriable(err error) bool {
	var ke *kerr.Error
	switch {
	case errors.Is(err, ErrUnknownTopic), errors.Is(err, context.Canceled):
		return false
	case errors.As(err, &ke):
		return ke.Retriable
	}
	// Dial and I/O errors, "unable to dial", request timeouts.
	return true
}

// Open implements weir.Source.
func (s *source[T]) Open(ctx context.Context, sp weir.Split) (weir.SplitReader[T], error) {
	p, ok := sp.(*split)
	if !ok {
		return nil, fmt.Errorf("kafka: not a split of this source: %s", sp.ID())
	}
	if lr := runFrom(ctx); lr != nil {
		return s.openGroup(lr, p)
	}
	return s.open(p, p.start)
}

// OpenAt implements weir.RestorableSource: pos is the offset of the next
// record to read.
func (s *source[T]) OpenAt(ctx context.Context, sp weir.Split, pos []byte) (weir.SplitReader[T], error) {
	p, ok := sp.(*split)
	if !ok {
		return nil, fmt.Errorf("kafka: not a split of this source: %s", sp.ID())
	}
	off, err := decodePosition(pos)
	if err != nil {
		return nil, fmt.Errorf("kafka: topic %q partition %d: %w", p.topic, p.partition, err)
	}
	if lr := runFrom(ctx); lr != nil {
		return s.openGroup(lr, p) // a local run never restores: it starts at the committed offsets
	}
	return s.open(p, off)
}

func decodePosition(pos []byte) (int64, error) {
	if len(pos) != 8 {
		return 0, fmt.Errorf("malformed position (%d bytes, want 8)", len(pos))
	}
	off := int64(binary.BigEndian.Uint64(pos))
	if off < 0 {
		return 0, fmt.Errorf("malformed position: offset %d", off)
	}
	return off, nil
}

func (s *source[T]) open(sp *split, at int64) (weir.SplitReader[T], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.c == nil {
		c, err := newConsumer(&s.cfg)
		if err != nil {
			return nil, err
		}
		s.mu.c = c
	}
	s.mu.refs++
	ps := s.mu.c.add(sp.topic, sp.partition, at)
	r := &reader[T]{src: s, c: s.mu.c, ps: ps, end: sp.end}
	if sp.end >= 0 && at >= sp.end {
		r.done = true
	}
	return r, nil
}

func (s *source[T]) release(c *consumer, ps *partState) {
	c.remove(ps)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.refs--
	if s.mu.refs == 0 && s.mu.c == c {
		s.mu.c = nil
		c.close()
	}
}

// consumer is one franz-go client fetching the partitions of a source's
// open readers. Any reader whose partition has nothing buffered polls it;
// records are handed out by partition. A partition with a full buffer is
// paused until its reader takes the records, so that a reader that is slow
// (its subtask is backpressured) does not make the others buffer without
// bound.
type consumer struct {
	cl  *kgo.Client
	adm *kadm.Client
	cfg *sourceConfig

	// shared: the client is a group-mode session's, whose partitions the
	// group assigns (add, remove and close leave the client alone).
	shared bool

	// pollMu makes polls one at a time: the client hands out each
	// partition's records in order, and two pollers dispatching at once
	// could append a later batch before an earlier one (which would then
	// look like records already handed out).
	pollMu sync.Mutex

	mu struct {
		sync.Mutex
		parts map[tp]*partState
		err   error // sticky: the client failed
	}
}

type tp struct {
	topic     string
	partition int32
}

// partState is one partition's buffer, shared by the poller (any reader)
// and the partition's reader; guarded by consumer.mu.
type partState struct {
	tp
	next   int64         // offset after the last buffered record
	buf    []*kgo.Record // fetched, not yet taken by the reader
	paused bool
	err    error // a fetch error of this partition
	// end is the partition's end (last stable offset under read
	// committed, else the high watermark) as the last fetch saw it.
	end      int64
	endKnown bool
}

// pauseAt is how many buffered records pause a partition's fetching.
const pauseAt = 4096

func newConsumer(cfg *sourceConfig) (*consumer, error) {
	opts := append(cfg.client.kgoOpts(),
		kgo.KeepControlRecords(), // to move positions past transaction markers
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if cfg.readCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: source client: %w", err)
	}
	c := &consumer{cl: cl, adm: kadm.NewClient(cl), cfg: cfg}
	c.mu.parts = map[tp]*partState{}
	return c, nil
}

func (c *consumer) add(topic string, partition int32, at int64) *partState {
	ps := &partState{tp: tp{topic, partition}, next: at}
	c.mu.Lock()
	c.mu.parts[ps.tp] = ps
	c.mu.Unlock()
	c.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(at)}})
	return ps
}

func (c *consumer) remove(ps *partState) {
	c.mu.Lock()
	delete(c.mu.parts, ps.tp)
	c.mu.Unlock()
	if c.shared {
		return
	}
	c.cl.RemoveConsumePartitions(map[string][]int32{ps.topic: {ps.partition}})
}

func (c *consumer) close() {
	if !c.shared {
		c.cl.Close()
	}
}

// poll fetches once, waiting at most wait, and hands the records out.
func (c *consumer) poll(ctx context.Context, wait time.Duration) error {
	c.pollMu.Lock()
	defer c.pollMu.Unlock()
	pctx, cancel := context.WithTimeout(ctx, wait)
	fs := c.cl.PollRecords(pctx, 4*pauseAt)
	cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	var pause map[string][]int32
	for i := range fs {
		for j := range fs[i].Topics {
			t := &fs[i].Topics[j]
			for k := range t.Partitions {
				p := &t.Partitions[k]
				ps := c.mu.parts[tp{t.Topic, p.Partition}]
				if p.Err != nil {
					if err := fetchError(t.Topic, p.Partition, p.Err); err != nil {
						if ps == nil {
							c.mu.err = err
						} else {
							ps.err = err
						}
					}
				}
				if ps == nil {
					continue // removed meanwhile
				}
				if e := fetchEnd(p); e >= 0 {
					ps.end, ps.endKnown = e, true
				}
				for _, r := range p.Records {
					// Records before the position were handed out before
					// a pause dropped and refetched them.
					if r.Offset < ps.next {
						continue
					}
					ps.buf = append(ps.buf, r)
					ps.next = r.Offset + 1
				}
				if len(ps.buf) >= pauseAt && !ps.paused {
					ps.paused = true
					if pause == nil {
						pause = map[string][]int32{}
					}
					pause[ps.topic] = append(pause[ps.topic], ps.partition)
				}
			}
		}
	}
	if pause != nil {
		c.cl.PauseFetchPartitions(pause)
	}
	return c.mu.err
}

// fetchError turns a fetch error into the error that fails the reader, or
// nil for errors the client retries by itself.
func fetchError(topic string, partition int32, err error) error {
	var dl *kgo.ErrDataLoss
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return nil
	case errors.Is(err, kgo.ErrClientClosed):
		return fmt.Errorf("kafka: topic %q partition %d: %w", topic, partition, err)
	case errors.As(err, &dl):
		return fmt.Errorf("kafka: topic %q partition %d: records lost: consumed to offset %d, the broker reset to %d (retention or unclean leader election)",
			topic, partition, dl.ConsumedTo, dl.ResetTo)
	case !retriable(err):
		return fmt.Errorf("kafka: fetch topic %q partition %d: %w", topic, partition, err)
	}
	return nil
}

// take moves the partition's buffered records into work (whose backing
// array it recycles) and resumes the partition if it was paused.
func (c *consumer) take(ps *partState, work []*kgo.Record) ([]*kgo.Record, error) {
	c.mu.Lock()
	work = append(work[:0], ps.buf...)
	clear(ps.buf)
	ps.buf = ps.buf[:0]
	resume := ps.paused
	ps.paused = false
	err := ps.err
	if err == nil {
		err = c.mu.err
	}
	c.mu.Unlock()
	if resume {
		c.cl.ResumeFetchPartitions(map[string][]int32{ps.topic: {ps.partition}})
	}
	return work, err
}

// reader reads one partition. Its methods are called from one goroutine
// (the source subtask's); pollers of other subtasks fill its buffer.
type reader[T any] struct {
	src     *source[T]
	c       *consumer
	ps      *partState
	end     int64 // -1: unbounded
	work    []*kgo.Record
	i       int // next record of work to return
	skipped int64
	done    bool
	closed  bool
	onBad   func(raw []byte, position string, err error)

	// Group mode: the local run, and while the reader holds after a
	// barrier, the channel closed when the transaction committed.
	lr   *localRun
	held <-chan struct{}
	// atEnd: (group mode) the reader returned its last records; it ends
	// (io.EOF) once a transaction carrying its end position committed.
	// endReported: that position was reported at a completed checkpoint
	// after the last records (the transaction is held's).
	atEnd, endReported bool
	// wms is the watermark of a repartition partition (group mode).
	wms *wmTracker
}

// Watermark is the watermark of a repartition partition's reader (the
// minimum over its upstream tasks' markers), or none (math.MinInt64).
func (r *reader[T]) Watermark() int64 {
	if r.wms == nil {
		return math.MinInt64
	}
	return r.wms.wm
}

// SetBadRecordHandler implements weir.BadRecordReporter: records decode
// rejects go to h, with their value as the raw bytes and
// "topic/partition@offset" as their position (weir.OnBadRecord).
func (r *reader[T]) SetBadRecordHandler(h func(raw []byte, position string, err error)) { r.onBad = h }

var (
	_ weir.CheckpointedReader[int] = (*reader[int])(nil)
	_ weir.CheckpointListener      = (*reader[int])(nil)
	_ weir.SkipCounter             = (*reader[int])(nil)
	_ weir.BadRecordReporter       = (*reader[int])(nil)
)

// Read implements weir.SplitReader.
func (r *reader[T]) Read(ctx context.Context, dst []T) (int, error) {
	if r.done {
		return 0, io.EOF
	}
	if r.held != nil && !r.waitRelease(ctx) {
		return 0, nil
	}
	if r.atEnd {
		return r.endGroup(ctx)
	}
	if r.i == len(r.work) {
		if err := r.refill(ctx); err != nil {
			return 0, err
		}
	}
	n, end := 0, false
	for n < len(dst) && r.i < len(r.work) {
		rec := r.work[r.i]
		if r.end >= 0 && rec.Offset >= r.end {
			end = true
			break
		}
		if rec.Attrs.IsControl() {
			r.i++
			continue
		}
		if r.wms != nil {
			task, wm, ok, err := marker(rec)
			if err != nil {
				return n, &DecodeError{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Err: err}
			}
			if ok {
				r.i++
				if r.wms.observe(task, wm) {
					if r.wms.wm == math.MaxInt64 {
						// Every upstream task has ended: nothing
						// more comes.
						end = true
						break
					}
					if n > 0 {
						// The records returned come before the
						// watermark moves.
						break
					}
				}
				continue
			}
		}
		v, err := r.src.decode(rec)
		if err != nil {
			if r.onBad != nil {
				r.onBad(rec.Value, rec.Topic+"/"+strconv.Itoa(int(rec.Partition))+"@"+strconv.FormatInt(rec.Offset, 10), err)
				r.i++
				continue
			}
			if r.src.cfg.skipBad {
				r.skipped++
				r.i++
				continue
			}
			return n, &DecodeError{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Err: err}
		}
		dst[n] = v
		n++
		r.work[r.i] = nil
		r.i++
	}
	switch {
	case !end && (r.end < 0 || r.position() < r.end):
		return n, nil
	case r.lr != nil:
		// Group mode: the records just read have not gone down the job
		// yet, so the end position cannot be committed now (a commit the
		// other readers are ready for would carry it without them, and
		// they would go into the next transaction, lost for good if the
		// process died before that one committed). It commits like any
		// other position: reported at a checkpoint completed after these
		// records; the reader ends after that commit (endGroup).
		r.atEnd = true
		return n, nil
	default:
		r.done = true
		return n, io.EOF
	}
}

// endGroup is Read of a group-mode reader that returned its last records:
// io.EOF once its end position was committed (reported, then released),
// until then nothing, waiting a little so the source task can pass the
// barrier that commits it.
func (r *reader[T]) endGroup(ctx context.Context) (int, error) {
	if r.endReported {
		r.done = true
		r.lr.ended(r.ps.tp, r.position())
		return 0, io.EOF
	}
	return pause(ctx)
}

// refill takes the partition's buffered records, polling first if there
// are none.
func (r *reader[T]) refill(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var err error
	r.i = 0
	if r.work, err = r.c.take(r.ps, r.work); err != nil || len(r.work) > 0 {
		return err
	}
	// Nothing buffered: poll for every partition, waiting at most ~10ms
	// so the job can flush, checkpoint and notice cancellation.
	if err := r.c.poll(ctx, 10*time.Millisecond); err != nil {
		return err
	}
	r.work, err = r.c.take(r.ps, r.work)
	return err
}

// position is the offset of the next record Read returns.
func (r *reader[T]) position() int64 {
	if r.i < len(r.work) {
		return r.work[r.i].Offset
	}
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	if len(r.ps.buf) > 0 {
		return r.ps.buf[0].Offset
	}
	return r.ps.next
}

// Position implements weir.CheckpointedReader: 8 bytes, big endian, the
// offset of the next record to read.
func (r *reader[T]) Position() ([]byte, error) {
	if r.lr != nil {
		// Group mode: the barrier is a commit point; read nothing more
		// until the transaction holding what came before it commits.
		r.held = r.lr.hold()
	}
	return binary.BigEndian.AppendUint64(nil, uint64(r.position())), nil
}

// Skipped implements weir.SkipCounter.
func (r *reader[T]) Skipped() int64 { return r.skipped }

// NotifyCheckpointComplete implements weir.CheckpointListener: it commits
// the checkpointed offset of the reader's partition to the source's
// consumer group (if it has one), for monitoring.
func (r *reader[T]) NotifyCheckpointComplete(ctx context.Context, checkpointID int64, position []byte) error {
	if r.lr != nil {
		off, err := decodePosition(position)
		if err != nil {
			return fmt.Errorf("kafka: checkpoint %d, topic %q partition %d: %w", checkpointID, r.ps.topic, r.ps.partition, err)
		}
		// Only a reader that holds for the open transaction reports, and
		// only the checkpoint of the barrier it holds at (it read nothing
		// since): a notification of an older checkpoint, delivered late,
		// does not cover what the reader read after that one's barrier.
		if r.held == nil || off != r.position() {
			return nil
		}
		select {
		case <-r.held:
			return nil // released: the next barrier is the next commit point
		default:
		}
		if r.wms != nil {
			// The per-task watermarks go with the offset: what a
			// reader that takes the partition over starts from.
			r.lr.setMeta(r.ps.tp, r.wms.encode())
		}
		r.lr.report(r.ps.tp, off)
		if r.atEnd {
			r.endReported = true
		}
		return nil
	}
	if r.src.cfg.group == "" {
		return nil
	}
	off, err := decodePosition(position)
	if err != nil {
		return fmt.Errorf("kafka: checkpoint %d, topic %q partition %d: %w", checkpointID, r.ps.topic, r.ps.partition, err)
	}
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: r.ps.topic, Partition: r.ps.partition, At: off, LeaderEpoch: -1,
		Metadata: "weir checkpoint " + strconv.FormatInt(checkpointID, 10)})
	resp, err := r.c.adm.CommitOffsets(ctx, r.src.cfg.group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("kafka: commit offset %d of topic %q partition %d to group %q (checkpoint %d): %w",
			off, r.ps.topic, r.ps.partition, r.src.cfg.group, checkpointID, err)
	}
	return nil
}

// Close implements weir.SplitReader.
func (r *reader[T]) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.lr != nil {
		r.lr.ended(r.ps.tp, -1)
		r.c.remove(r.ps)
		return nil
	}
	r.src.release(r.c, r.ps)
	return nil
}

// openGroup opens a reader of a partition this process owns in group mode,
// on the session's client, at the committed offset the run started from.
func (s *source[T]) openGroup(lr *localRun, sp *split) (weir.SplitReader[T], error) {
	if sp.partition < 0 {
		return &noPartitionReader[T]{bounded: s.cfg.bounded || (s.cfg.exchange != nil && s.cfg.exchange.ends)}, nil
	}
	ps := lr.open(sp.tp())
	if ps == nil {
		return nil, fmt.Errorf("kafka: topic %q partition %d is not assigned to this process", sp.topic, sp.partition)
	}
	r := &reader[T]{src: s, c: lr.cons, ps: ps, end: sp.end, lr: lr}
	if s.cfg.exchange != nil {
		r.wms = newTracker(s.cfg.exchange.tasks, lr.startMeta[sp.tp()])
		if r.wms.wm == math.MaxInt64 {
			r.done = true
			lr.ended(ps.tp, -1)
		}
	}
	// Where the run starts, not ps.next: another reader's poll may have
	// buffered this partition's records (and moved next) already.
	if sp.end >= 0 && lr.starts[ps.tp] >= sp.end {
		r.done = true
		lr.ended(ps.tp, -1)
	}
	return r, nil
}

func (s *split) tp() tp { return tp{s.topic, s.partition} }

// waitRelease waits a little (up to ~10ms) for the transaction the reader
// holds for to commit, and says whether it has.
func (r *reader[T]) waitRelease(ctx context.Context) bool {
	t := time.NewTimer(10 * time.Millisecond)
	defer t.Stop()
	select {
	case <-r.held:
		r.held = nil
		return true
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}

// pause is a Read that has nothing yet: it waits a little (~10ms, or
// until ctx ends) so the source task does not spin, and can still pass
// barriers and notice cancellation between reads.
func pause(ctx context.Context) (int, error) {
	t := time.NewTimer(10 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return 0, nil
}

// noPartitionReader stands for a source of which this process owns no
// partition in group mode: it never has records.
type noPartitionReader[T any] struct{ bounded bool }

func (r *noPartitionReader[T]) Read(ctx context.Context, dst []T) (int, error) {
	if r.bounded {
		return 0, io.EOF
	}
	return pause(ctx)
}

func (r *noPartitionReader[T]) Position() ([]byte, error) { return make([]byte, 8), nil }
func (r *noPartitionReader[T]) Close() error              { return nil }
