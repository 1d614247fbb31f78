package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/weirstream/weir/internal/group"
)

// Group mode (weir.AppID, docs/scale-out.md): every process of an
// application joins the consumer group named by the app id; the group's
// balancer spreads the partitions of the job's input topics over them; each
// process runs the job locally over the partitions it owns, through one
// GroupTransactSession: the sources read from the session's client, the
// sinks produce into its open transaction, and every commit interval the
// offsets the sources reached at a checkpoint barrier are committed in the
// same transaction (KIP-447: fenced by the group's generation).
//
// The commit protocol rides on weir's checkpoints. At a barrier a reader
// gives its position and then holds: it reads nothing more until the
// runner has committed the transaction. When the checkpoint is complete
// every operator has passed the barrier, so everything the job wrote for
// the records before it is in the transaction; the readers report the
// positions (NotifyCheckpointComplete), and when every reader of the
// process has, the runner marks them, ends the transaction with a commit,
// begins the next and releases the readers.

// groupMode is the group.Runner that Kafka sources offer (GroupRunner):
// the engine hands it a job started with weir.AppID.
type groupMode struct{}

// Run implements group.Runner.
func (groupMode) Run(ctx context.Context, job group.Job) error { return runGroup(ctx, job) }

// OpenExchange implements group.Runner.
func (groupMode) OpenExchange(ctx context.Context, topic string) (group.ExchangeWriter, error) {
	return openExchange(ctx, topic)
}

// InstanceEnv names the environment variable that gives a process of a
// group a stable instance id: its transactional id is "<app id>-<instance
// id>", so a process started again with the same instance id fences its
// dead predecessor's open transaction at once, instead of read_committed
// consumers waiting for the transaction timeout. Without it the instance
// id is random (host name and random bytes).
const InstanceEnv = "WEIR_INSTANCE_ID"

// groupSource is what group mode needs of a Kafka source.
type groupSource interface {
	groupConfig() *sourceConfig
	groupTopics() []string
}

// groupSink is what group mode needs of a Kafka sink.
type groupSink interface {
	groupConfig() *sinkConfig
}

// Unwrapper is a source or sink that works through another one, given by
// Unwrap: a Kafka source or sink of this package wrapped to decode its
// records into something else (the SQL connector's rows). Group mode
// looks through it to the Kafka source or sink underneath; the wrapper
// must pass contexts, splits, readers' positions and checkpoint
// notifications through unchanged.
type Unwrapper interface {
	Unwrap() any
}

// unwrap follows Unwrapper to the innermost source or sink.
func unwrap(s any) any { return group.Unwrap(s) }

// GroupRunner implements group.RunnerSource: a job of Kafka sources runs
// in group mode (weir.AppID) through this package.
func (s *source[T]) GroupRunner() group.Runner { return groupMode{} }

func (s *source[T]) groupConfig() *sourceConfig { return &s.cfg }
func (s *source[T]) groupTopics() []string      { return s.topics }
func (s *sink[T]) groupConfig() *sinkConfig     { return &s.cfg }

// groupTxnTimeout is the transaction timeout of a group's processes: the
// coordinator aborts the open transaction of a process that died (without
// a stable instance id to fence it) after it.
const groupTxnTimeout = time.Minute

// errReassigned ends a local run whose assignment changed.
var errReassigned = errors.New("kafka: group assignment changed")

type runKey struct{}

// runFrom returns the local run of a group-mode job that ctx belongs to.
func runFrom(ctx context.Context) *localRun {
	lr, _ := ctx.Value(runKey{}).(*localRun)
	return lr
}

type groupRunner struct {
	job     group.Job
	log     *slog.Logger
	client  *clientConfig
	topics  []string
	rtopics []string // repartition topics (repartition.go)
	start   StartAt
	bounded bool
	sess    *kgo.GroupTransactSession
	cl      *kgo.Client
	adm     *kadm.Client

	changed chan struct{} // 1-buffered: the assignment changed
	mu      struct {
		sync.Mutex
		assigned map[tp]bool
	}
	// ends are the end offsets of a bounded input, listed when the
	// process started.
	ends map[tp]int64
	// keyed are the job's keyed operators and their changelogs
	// (changelog.go); member is this process's name in the group.
	keyed  []keyedOp
	member string
	// onChangelogBehind, in tests, is called when a restore waits for a
	// changelog partition's last commit.
	onChangelogBehind func(topic string, partition int32)
}

// runGroup runs a job in group mode until ctx ends, the job fails, or (a
// bounded job) every partition of the input has been committed to its end.
func runGroup(ctx context.Context, job group.Job) error {
	r := &groupRunner{job: job, log: job.Logger, changed: make(chan struct{}, 1)}
	r.mu.assigned = map[tp]bool{}
	var readCommitted []bool
	for _, s := range job.Sources {
		gs, ok := unwrap(s).(groupSource)
		if !ok {
			return fmt.Errorf("kafka: app id %q: source %T is not a Kafka source: group mode shares only Kafka input between processes", job.AppID, s)
		}
		c := gs.groupConfig()
		if err := c.client.validate("source"); err != nil {
			return err
		}
		if r.client == nil {
			r.client, r.start, r.bounded = &c.client, c.start, c.bounded
		} else if !slices.Equal(c.client.brokers, r.client.brokers) {
			return fmt.Errorf("kafka: app id %q: sources on different clusters (%v, %v): group mode needs one", job.AppID, r.client.brokers, c.client.brokers)
		} else if c.bounded != r.bounded {
			return fmt.Errorf("kafka: app id %q: bounded and unbounded sources: group mode needs all of one kind", job.AppID)
		}
		readCommitted = append(readCommitted, c.readCommitted)
		for _, t := range gs.groupTopics() {
			if slices.Contains(r.topics, t) {
				return fmt.Errorf("kafka: app id %q: topic %q is read by two sources", job.AppID, t)
			}
			r.topics = append(r.topics, t)
		}
	}
	if r.client == nil {
		return fmt.Errorf("kafka: app id %q: the job has no Kafka source", job.AppID)
	}
	for _, s := range job.Sinks {
		if gs, ok := unwrap(s).(groupSink); ok && !slices.Equal(gs.groupConfig().client.brokers, r.client.brokers) {
			return fmt.Errorf("kafka: app id %q: a sink writes to another cluster (%v) than the sources read (%v): it cannot join their transactions",
				job.AppID, gs.groupConfig().client.brokers, r.client.brokers)
		}
	}
	if err := r.setupExchanges(ctx); err != nil {
		return err
	}
	instance := os.Getenv(InstanceEnv)
	if instance == "" {
		host, _ := os.Hostname()
		var b [4]byte
		rand.Read(b[:])
		instance = host + "-" + hex.EncodeToString(b[:])
	}
	txnID := job.AppID + "-" + instance
	base := *r.client
	base.extra = nil
	if base.clientID == "weir" {
		// The member's name in `weir group describe`.
		base.clientID = txnID
	}
	opts := append(base.kgoOpts(),
		kgo.ConsumerGroup(job.AppID),
		kgo.ConsumeTopics(append(slices.Clone(r.topics), r.rtopics...)...),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(groupTxnTimeout),
		// Input written by transactional producers (another weir group's
		// output) is read committed; the positions skip the markers.
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.AutoCommitMarks(),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.ConsumeResetOffset(resetOffset(r.start)),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { r.assign(m, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { r.assign(m, false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { r.assign(m, false) }),
	)
	opts = append(opts, r.client.extra...)
	if len(r.rtopics) > 0 || len(job.Keyed) > 0 {
		// Repartition and changelog records name their partition (the
		// key group's); the sinks' records keep franz-go's default
		// partitioner. One option: a second RecordPartitioner would
		// replace the first.
		opts = append(opts, r.partitioner())
	}
	r.member = base.clientID
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return fmt.Errorf("kafka: app id %q: %w", job.AppID, err)
	}
	r.sess, r.cl, r.adm = sess, sess.Client(), kadm.NewClient(sess.Client())
	defer sess.Close() // leaves the group: the others take the partitions at once
	r.log.Info("group mode", "app-id", job.AppID, "transactional-id", txnID, "topics", r.topics, "repartition-topics", r.rtopics)
	// Fence first: initialising the producer id aborts the open
	// transaction a dead predecessor with this instance id left. franz-go
	// does it lazily, at the first produce, which comes after the stable
	// fetch of the committed offsets in runOnce: a transaction that had
	// committed offsets when its process died would hold that fetch (every
	// member's) until the transaction timeout.
	if _, _, err := r.cl.ProducerID(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("kafka: app id %q: initialise transactional id %q: %w", job.AppID, txnID, err)
	}
	err = r.setupChangelogs(ctx)
	if err == nil && r.bounded {
		err = r.listEnds(ctx)
	}
	if err == nil {
		err = r.loop(ctx)
	}
	if ctx.Err() != nil {
		// Asked to stop (SIGTERM in the CLI): a clean stop, whether it
		// came while joining the group, waiting for partitions or running.
		return nil
	}
	return err
}

func resetOffset(s StartAt) kgo.Offset {
	if s.kind == startCommitted {
		s = *s.fallback
	}
	switch s.kind {
	case startLatest:
		return kgo.NewOffset().AtEnd()
	case startTime:
		return kgo.NewOffset().AfterMilli(s.millis)
	}
	return kgo.NewOffset().AtStart()
}

// assign follows the group's callbacks (cooperative: added or removed
// partitions) and signals the runner.
func (r *groupRunner) assign(m map[string][]int32, add bool) {
	r.mu.Lock()
	for t, ps := range m {
		for _, p := range ps {
			if add {
				r.mu.assigned[tp{t, p}] = true
			} else {
				delete(r.mu.assigned, tp{t, p})
			}
		}
	}
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *groupRunner) assignment() []tp {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]tp, 0, len(r.mu.assigned))
	for k := range r.mu.assigned {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b tp) int {
		if a.topic != b.topic {
			if a.topic < b.topic {
				return -1
			}
			return 1
		}
		return int(a.partition - b.partition)
	})
	return out
}

// loop runs the local job on each assignment until ctx ends, the job
// fails, or a bounded input is done.
func (r *groupRunner) loop(ctx context.Context) error {
	for {
		// Drain the signal first: this run starts on the assignment read
		// after it, and a change after that signals again.
		select {
		case <-r.changed:
		default:
		}
		parts := r.assignment()
		r.noteAssignment(parts)
		if len(parts) == 0 {
			if r.bounded {
				done, err := r.groupDone(ctx)
				if err != nil || done {
					return err
				}
			}
			if err := r.idle(ctx); err != nil {
				return err
			}
			continue
		}
		finished, err := r.runOnce(ctx, parts)
		if err != nil || ctx.Err() != nil {
			return err // a stop (ctx ended) is made clean by runGroup
		}
		if finished {
			// A bounded local job read its partitions to their ends
			// and committed: done when every partition of the input
			// is; otherwise wait for the assignment to change.
			done, err := r.groupDone(ctx)
			if err != nil || done {
				return err
			}
			if err := r.waitChange(ctx); err != nil {
				if errors.Is(err, errGroupDone) {
					return nil
				}
				return err
			}
		}
	}
}

// idle waits for an assignment while keeping the client polling (that is
// how franz-go joins the group and heartbeats the join).
func (r *groupRunner) idle(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	fs := r.cl.PollRecords(pctx, 1)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := fs.Err0(); errors.Is(err, kgo.ErrClientClosed) {
		return err
	}
	// Records polled without a reader are dropped: the next run sets the
	// partitions' offsets to the committed ones again.
	return nil
}

// waitChange waits for the assignment to change (a bounded process that
// is done with its partitions, while others are not).
func (r *groupRunner) waitChange(ctx context.Context) error {
	for {
		select {
		case <-r.changed:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if done, err := r.groupDone(ctx); err != nil || done {
			if err == nil {
				return errGroupDone
			}
			return err
		}
		if err := r.idle(ctx); err != nil {
			return err
		}
	}
}

var errGroupDone = errors.New("group done")

// runOnce runs the local job over parts from their committed offsets
// until the assignment changes (nil), the job fails, or a bounded job
// ends (finished, after its last commit).
func (r *groupRunner) runOnce(ctx context.Context, parts []tp) (finished bool, err error) {
	starts, meta, err := r.committed(ctx, parts)
	if err != nil {
		return false, err
	}
	// The client fetches from the committed offsets too, whatever an
	// earlier run left in its buffers; paused partitions fetch again.
	resume := map[string][]int32{}
	set := map[string]map[int32]kgo.EpochOffset{}
	for _, p := range parts {
		resume[p.topic] = append(resume[p.topic], p.partition)
		if set[p.topic] == nil {
			set[p.topic] = map[int32]kgo.EpochOffset{}
		}
		set[p.topic][p.partition] = kgo.EpochOffset{Epoch: -1, Offset: starts[p]}
	}
	r.cl.ResumeFetchPartitions(resume)
	r.cl.SetOffsets(set)
	lr := newLocalRun(r, parts, starts)
	lr.startMeta = meta
	// The keyed state of the owned key groups, from the changelogs, read
	// after the committed offsets are stable (the transaction that
	// committed them wrote the state that goes with them).
	cr, err := r.newChangelogRun(ctx, lr, parts)
	if err != nil {
		if ctx.Err() != nil {
			return false, nil
		}
		return false, fmt.Errorf("kafka: app id %q: restore keyed state: %w", r.job.AppID, err)
	}
	lr.note = cr.note
	if err := r.sess.Begin(); err != nil {
		return false, fmt.Errorf("kafka: app id %q: begin transaction: %w", r.job.AppID, err)
	}
	r.log.Info("group: starting the local job", "partitions", len(parts))
	lctx, cancel := context.WithCancelCause(context.WithValue(ctx, runKey{}, lr))
	defer cancel(nil)
	errc := make(chan error, 1)
	go func() { errc <- r.job.RunLocal(lctx, cr.local) }()
	stop := func(cause error) error {
		cancel(cause)
		return <-errc
	}
	for {
		select {
		case <-lr.commitReq:
			ok, err := r.commit(ctx, lr, false)
			if err != nil {
				stop(err)
				r.abort(ctx)
				return false, err
			}
			if !ok {
				// A rebalance aborted the transaction: start again on
				// the new assignment from the committed offsets.
				stop(errReassigned)
				return false, nil
			}
		case <-r.changed:
			stop(errReassigned)
			r.abort(ctx)
			return false, nil
		case err := <-errc:
			if err != nil {
				r.abort(ctx)
				if ctx.Err() != nil {
					return false, nil
				}
				return false, fmt.Errorf("kafka: app id %q: local job: %w", r.job.AppID, err)
			}
			// The local job ended (bounded input): its last records
			// are in the transaction; commit them with the end
			// offsets.
			ok, err := r.commit(ctx, lr, true)
			if err != nil {
				r.abort(ctx)
				return false, err
			}
			return ok, nil
		case <-ctx.Done():
			stop(ctx.Err())
			r.abort(context.WithoutCancel(ctx))
			return false, nil
		}
	}
}

// commit commits the open transaction with the positions the readers
// reported, and begins the next one. ok is false when the group aborted
// it (the assignment changed since it began).
func (r *groupRunner) commit(ctx context.Context, lr *localRun, final bool) (ok bool, err error) {
	if err := lr.failed(); err != nil {
		return false, err
	}
	if !final && !lr.ready() {
		// A stale request: a reader reported again after the request
		// that the last commit answered.
		return true, nil
	}
	// Watermark markers wait for the commit (a source subtask whose
	// readers all ended holds no more, and still passes barriers).
	lr.txnMu.Lock()
	defer lr.txnMu.Unlock()
	lr.committing.Store(true)
	marks, metas := lr.marks()
	if len(marks) > 0 {
		r.cl.MarkCommitOffsets(marks)
	}
	r.log.Debug("group: commit", "final", final, "offsets", marks)
	// The session would commit every polled offset (franz-go's
	// UncommittedOffsets includes the "dirty" ones, fetched but not yet
	// processed past a barrier): the commit carries exactly the marks.
	committed, err := r.sess.End(kgo.PreTxnCommitFnContext(ctx, func(req *kmsg.TxnOffsetCommitRequest) error {
		// The repartition partitions' metadata are their per-task
		// watermarks; the others carry the last restore of this process,
		// for `weir group describe`.
		onlyMarks(req, marks, lr.changelogEnds(marks, metas), lr.note)
		return nil
	}), kgo.TryCommit)
	if err != nil {
		return false, fmt.Errorf("kafka: app id %q: commit transaction: %w", r.job.AppID, err)
	}
	if err := lr.failed(); err != nil {
		return false, err
	}
	if !committed {
		r.log.Info("group: transaction aborted by a rebalance")
		return false, nil
	}
	r.noteCommit(lr, marks)
	if final {
		return true, nil // the next run begins its own
	}
	if err := r.sess.Begin(); err != nil {
		return false, fmt.Errorf("kafka: app id %q: begin transaction: %w", r.job.AppID, err)
	}
	lr.committing.Store(false)
	lr.release()
	return true, nil
}

// abort ends the open transaction without committing (best effort: the
// coordinator aborts it at the transaction timeout otherwise, and a
// process started with the same instance id fences it).
func (r *groupRunner) abort(ctx context.Context) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := r.sess.End(actx, kgo.TryAbort); err != nil {
		r.log.Warn("group: abort transaction", "err", err)
	}
}

// committed returns where each partition continues: its offset committed
// to the group (waiting for pending transactional commits, KIP-447), or,
// where there is none, the source's start.
func (r *groupRunner) committed(ctx context.Context, parts []tp) (map[tp]int64, map[tp]string, error) {
	out := make(map[tp]int64, len(parts))
	meta := map[tp]string{}
	// A process killed between committing its offsets into its
	// transaction and ending it leaves them unstable until the
	// coordinator aborts the transaction (or a process with its instance
	// id fences it): wait past the transaction timeout.
	wait := max(r.client.retryTimeout, groupTxnTimeout+15*time.Second)
	err := retry(ctx, wait, "fetch the committed offsets of group "+r.job.AppID, func() error {
		resp, err := r.adm.FetchOffsets(kadm.RequireStable(ctx), r.job.AppID)
		if err != nil {
			return err
		}
		var missing []tp
		for _, p := range parts {
			o, ok := resp.Lookup(p.topic, p.partition)
			if ok && o.Err != nil {
				return o.Err
			}
			if ok && o.At >= 0 {
				out[p] = o.At
				meta[p] = o.Metadata
			} else {
				missing = append(missing, p)
			}
		}
		return r.resolveStarts(ctx, missing, out)
	})
	return out, meta, err
}

// resolveStarts fills in the start offsets of partitions without a
// committed offset, as the source's StartFrom says.
func (r *groupRunner) resolveStarts(ctx context.Context, parts []tp, out map[tp]int64) error {
	// A repartition topic is read from its start.
	var rparts []tp
	parts = slices.DeleteFunc(slices.Clone(parts), func(p tp) bool {
		if r.rtopic(p) {
			rparts = append(rparts, p)
			return true
		}
		return false
	})
	if len(rparts) > 0 {
		l, err := r.adm.ListStartOffsets(ctx, r.rtopics...)
		if err != nil {
			return err
		}
		for _, p := range rparts {
			o, ok := l.Lookup(p.topic, p.partition)
			if !ok {
				return fmt.Errorf("kafka: no start offset for topic %q partition %d", p.topic, p.partition)
			}
			if o.Err != nil {
				return o.Err
			}
			out[p] = o.Offset
		}
	}
	if len(parts) == 0 {
		return nil
	}
	start := r.start
	if start.kind == startCommitted {
		start = *start.fallback
	}
	var l kadm.ListedOffsets
	var err error
	switch start.kind {
	case startLatest:
		l, err = r.adm.ListCommittedOffsets(ctx, r.topics...)
	case startTime:
		l, err = r.adm.ListOffsetsAfterMilli(ctx, start.millis, r.topics...)
	default:
		l, err = r.adm.ListStartOffsets(ctx, r.topics...)
	}
	if err != nil {
		return err
	}
	for _, p := range parts {
		o, ok := l.Lookup(p.topic, p.partition)
		if !ok {
			return fmt.Errorf("kafka: no start offset for topic %q partition %d", p.topic, p.partition)
		}
		if o.Err != nil {
			return o.Err
		}
		at := o.Offset
		if at < 0 { // AtTime past the last record
			e, err := r.adm.ListCommittedOffsets(ctx, p.topic)
			if err != nil {
				return err
			}
			eo, _ := e.Lookup(p.topic, p.partition)
			at = eo.Offset
		}
		out[p] = at
	}
	return nil
}

// listEnds lists the end (last stable) offsets of a bounded input.
func (r *groupRunner) listEnds(ctx context.Context) error {
	return retry(ctx, r.client.retryTimeout, "list the end offsets of "+fmt.Sprint(r.topics), func() error {
		l, err := r.adm.ListCommittedOffsets(ctx, r.topics...)
		if err != nil {
			return err
		}
		ends := map[tp]int64{}
		for t, ps := range l {
			if !slices.Contains(r.topics, t) {
				continue
			}
			for p, o := range ps {
				if o.Err != nil {
					return fmt.Errorf("kafka: end offset of topic %q partition %d: %w", t, p, o.Err)
				}
				ends[tp{t, p}] = o.Offset
			}
		}
		for _, t := range r.topics {
			if _, ok := l[t]; !ok {
				return fmt.Errorf("%w %q (brokers %v)", ErrUnknownTopic, t, r.client.brokers)
			}
		}
		r.ends = ends
		r.log.Debug("group: end offsets of the bounded input", "ends", ends)
		return nil
	})
}

// groupDone says whether the group has committed every partition of a
// bounded input to (at least) the end this process listed.
func (r *groupRunner) groupDone(ctx context.Context) (bool, error) {
	resp, err := r.adm.FetchOffsets(kadm.RequireStable(ctx), r.job.AppID)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return false, nil // nothing committed yet
	}
	if err != nil {
		return false, fmt.Errorf("kafka: app id %q: committed offsets: %w", r.job.AppID, err)
	}
	for p, end := range r.ends {
		if end == 0 {
			continue
		}
		o, ok := resp.Lookup(p.topic, p.partition)
		if !ok || o.Err != nil || o.At < end {
			return false, nil
		}
	}
	return r.exchangesDone(resp), nil
}

// localRun is one run of the local job over a fixed assignment.
type localRun struct {
	r      *groupRunner
	starts map[tp]int64
	cons   *consumer
	// startMeta is the metadata committed with the starts (a repartition
	// partition's per-task watermarks).
	startMeta map[tp]string

	commitReq chan struct{} // 1-buffered: every reader reported
	// note is the JSON restoreNote committed as the input offsets'
	// metadata ("" without keyed operators).
	note       string
	committing atomic.Bool  // between End and the release of the readers
	txnMu      sync.RWMutex // held by commit; markers (repartition.go) take it shared

	mu struct {
		sync.Mutex
		readers  map[tp]*groupReader // open and not at their end
		reported map[tp]int64        // position at the held barrier, per open reader
		ended    map[tp]int64        // readers whose end position was committed: that position
		meta     map[tp]string       // metadata to commit with a position (repartition partitions)
		clEnd    map[tp]int64        // changelog partitions the open transaction wrote, by feed partition (changelog.go; made by wroteChangelog)
		release  chan struct{}       // closed when the held barrier's transaction committed
		err      error               // a record failed to be produced
	}
}

// groupReader is the part of a reader the local run keeps.
type groupReader struct{ tp }

func newLocalRun(r *groupRunner, parts []tp, starts map[tp]int64) *localRun {
	lr := &localRun{r: r, starts: starts, commitReq: make(chan struct{}, 1)}
	lr.mu.readers = map[tp]*groupReader{}
	lr.mu.reported = map[tp]int64{}
	lr.mu.ended = map[tp]int64{}
	lr.mu.meta = map[tp]string{}
	lr.mu.release = make(chan struct{})
	cfg := &sourceConfig{client: *r.client}
	lr.cons = &consumer{cl: r.cl, adm: r.adm, cfg: cfg, shared: true}
	lr.cons.mu.parts = map[tp]*partState{}
	for _, p := range parts {
		lr.cons.mu.parts[p] = &partState{tp: p, next: starts[p]}
	}
	return lr
}

// splits are the partitions of topics this run owns.
func (lr *localRun) splits(topics []string, bounded bool) []*split {
	var out []*split
	for p, at := range lr.starts {
		if !slices.Contains(topics, p.topic) {
			continue
		}
		sp := &split{topic: p.topic, partition: p.partition, start: at, end: -1}
		if bounded {
			sp.end = lr.r.ends[p]
		}
		out = append(out, sp)
	}
	slices.SortFunc(out, func(a, b *split) int {
		if a.topic != b.topic {
			if a.topic < b.topic {
				return -1
			}
			return 1
		}
		return int(a.partition - b.partition)
	})
	return out
}

func (lr *localRun) open(p tp) *partState {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	lr.cons.mu.Lock()
	ps := lr.cons.mu.parts[p]
	lr.cons.mu.Unlock()
	if ps != nil {
		lr.mu.readers[p] = &groupReader{p}
	}
	return ps
}

// hold is called at a barrier: it returns the channel closed when the
// transaction holding the records before the barrier has committed.
func (lr *localRun) hold() <-chan struct{} {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.mu.release
}

// report is a reader's position at a completed checkpoint.
func (lr *localRun) report(p tp, pos int64) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if _, ok := lr.mu.readers[p]; !ok {
		return
	}
	lr.mu.reported[p] = pos
	lr.maybeCommitLocked()
}

// ended is a reader that closed (pos -1), or whose end position pos was
// committed: a reader at its end reports that position at a completed
// checkpoint like any other, and ends after the commit (reader.endGroup),
// never before its last records passed a barrier. The commits no longer
// wait for it; later ones carry pos again, with the metadata of the
// changelog partitions they wrote for it.
func (lr *localRun) ended(p tp, pos int64) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if _, ok := lr.mu.readers[p]; !ok {
		return
	}
	delete(lr.mu.readers, p)
	delete(lr.mu.reported, p)
	if pos >= 0 {
		lr.mu.ended[p] = pos
	}
	if len(lr.mu.reported) > 0 {
		lr.maybeCommitLocked()
	}
}

// ready says whether every open reader holds at a commit point.
func (lr *localRun) ready() bool {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return len(lr.mu.reported) > 0 && len(lr.mu.reported) >= len(lr.mu.readers)
}

func (lr *localRun) maybeCommitLocked() {
	if len(lr.mu.reported) < len(lr.mu.readers) {
		return
	}
	select {
	case lr.commitReq <- struct{}{}:
	default:
	}
}

// marks are the offsets to commit, where they moved past the run's start:
// the reported positions (each at a barrier of a completed checkpoint:
// the records before it are in the transaction), and those of the readers
// whose end an earlier commit carried. metas are the metadata to commit
// with them.
func (lr *localRun) marks() (map[string]map[int32]kgo.EpochOffset, map[tp]string) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	out := map[string]map[int32]kgo.EpochOffset{}
	metas := map[tp]string{}
	add := func(p tp, pos int64) {
		// A partition that has not moved is committed again when its
		// changelog partition was written: its metadata says how far.
		if _, wrote := lr.mu.clEnd[p]; pos <= lr.starts[p] && !wrote {
			return
		}
		if out[p.topic] == nil {
			out[p.topic] = map[int32]kgo.EpochOffset{}
		}
		out[p.topic][p.partition] = kgo.EpochOffset{Epoch: -1, Offset: pos}
		if m, ok := lr.mu.meta[p]; ok {
			metas[p] = m
		}
	}
	for p, pos := range lr.mu.reported {
		add(p, pos)
	}
	for p, pos := range lr.mu.ended {
		add(p, pos)
	}
	return out, metas
}

// setMeta sets the metadata to commit with partition p's next position.
func (lr *localRun) setMeta(p tp, meta string) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	lr.mu.meta[p] = meta
}

// release lets the held readers go on after a commit.
func (lr *localRun) release() {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	close(lr.mu.release)
	lr.mu.release = make(chan struct{})
	clear(lr.mu.reported)
}

func (lr *localRun) fail(err error) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.mu.err == nil {
		lr.mu.err = err
	}
}

func (lr *localRun) failed() error {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.mu.err
}

// onlyMarks rewrites a transactional offset commit to commit exactly the
// marked offsets: a partition without a mark is left out, a marked one
// gets its mark (never more than what was fetched: a mark is a position
// of a reader, which only reads fetched records).
func onlyMarks(req *kmsg.TxnOffsetCommitRequest, marks map[string]map[int32]kgo.EpochOffset, metas map[tp]string, note string) {
	topics := req.Topics[:0]
	for _, t := range req.Topics {
		ps := t.Partitions[:0]
		for _, p := range t.Partitions {
			m, ok := marks[t.Topic][p.Partition]
			if !ok {
				continue
			}
			p.Offset, p.LeaderEpoch = m.Offset, m.Epoch
			if md, ok := metas[tp{t.Topic, p.Partition}]; ok {
				p.Metadata = &md
			} else if note != "" {
				p.Metadata = &note
			}
			ps = append(ps, p)
		}
		if len(ps) > 0 {
			t.Partitions = ps
			topics = append(topics, t)
		}
	}
	req.Topics = topics
}
