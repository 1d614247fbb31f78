package broker

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "github.com/weirstream/weir/connector/log"
)

// txnTopic is where the transaction coordinator keeps its state, as
// Kafka's __transaction_state: one compacted partition, a JSON record per
// transactional id, the latest one wins.
const txnTopic = "__transaction_state"

// Transactions (KIP-98, KIP-447) over a log that holds only committed
// data. A transactional producer's batches are staged in the broker's
// memory, not appended; EndTxn(commit) makes them durable in a staging
// file, records PrepareCommit, appends each staged batch to its partition
// with the producer section "txn/PID" and the sequence (epoch, commit
// number, batch index), commits the transaction's consumer offsets, and
// records CompleteCommit. After a crash between PrepareCommit and
// CompleteCommit the broker finishes the commit at start, skipping the
// batches a partition already holds (its last sequence for the producer),
// so each batch is appended once. EndTxn(abort) drops the staged batches.
// So readers never see an aborted or open transaction, with or without
// read_committed; the last stable offset is the high watermark, no abort
// markers are needed, and no control records are written (a committed
// transaction leaves no offset gap, unlike Kafka's commit marker).
//
// A transaction still open when the broker stops is aborted when it
// starts again, and its epoch bumped, as Kafka's coordinator does when a
// transaction times out: the producer is fenced and starts over.

type txnPhase string

const (
	txnEmpty          txnPhase = "empty"
	txnOngoing        txnPhase = "ongoing"
	txnPrepareCommit  txnPhase = "prepare_commit"
	txnCompleteCommit txnPhase = "complete_commit"
	txnCompleteAbort  txnPhase = "complete_abort"
)

// txnRecord is the durable state of one transactional id.
type txnRecord struct {
	PID       int64                        `json:"pid"`
	Epoch     int16                        `json:"epoch"`
	TimeoutMs int64                        `json:"timeout_ms"`
	Phase     txnPhase                     `json:"phase"`
	Commits   int64                        `json:"commits"` // the number of the last commit
	Offsets   map[string][]committedOffset `json:"offsets,omitempty"`
	// LastAborted is set when the coordinator aborted the transaction by
	// itself (timeout, restart) and bumped the epoch: the producer's
	// abort with the epoch before is then answered as done.
	LastAborted bool `json:"last_aborted,omitempty"`
}

// txn is one transactional id's state in memory.
type txn struct {
	id      string
	rec     txnRecord
	started time.Time
	parts   map[tp]*txnPart
	order   []tp // partitions in the order they were added
	groups  map[string]bool
	offsets map[string][]committedOffset
	bytes   int
}

// txnPart is what a transaction staged for one partition.
type txnPart struct {
	part    *partition
	batches []stagedBatch
}

type stagedBatch struct {
	first, last int32
	recs        []wlog.Record
}

// maxTxnBytes bounds the records one transaction may stage in memory.
const maxTxnBytes = 256 << 20

// txnCoordinator is the transaction coordinator.
type txnCoordinator struct {
	b     *Broker
	mu    sync.Mutex
	w     *wlog.Writer
	txns  map[string]*txn
	dir   string // staging files
	pidTx map[int64]*txn
}

func openTxns(b *Broker) (*txnCoordinator, error) {
	c := &txnCoordinator{b: b, txns: map[string]*txn{}, pidTx: map[int64]*txn{},
		dir: filepath.Join(b.cfg.DataDir, stateDir, "txn")}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, err
	}
	t, err := wlog.OpenTopic(b.cfg.DataDir, txnTopic)
	if errors.Is(err, wlog.ErrNoTopic) {
		t, err = wlog.CreateTopic(b.cfg.DataDir, txnTopic, wlog.TopicConfig{Partitions: 1, Compact: true})
	}
	if err != nil {
		return nil, err
	}
	r, err := t.OpenReader(0, wlog.Earliest())
	if err != nil {
		return nil, err
	}
	for {
		recs, err := r.Read(context.Background(), 1024)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			r.Close()
			return nil, err
		}
		for _, rec := range recs {
			id := string(rec.Key)
			if rec.Value == nil {
				delete(c.txns, id)
				continue
			}
			var tr txnRecord
			if err := json.Unmarshal(rec.Value, &tr); err != nil {
				r.Close()
				return nil, fmt.Errorf("%s offset %d: %w", txnTopic, rec.Offset, err)
			}
			c.txns[id] = &txn{id: id, rec: tr}
		}
	}
	r.Close()
	if c.w, err = t.OpenWriter(0); err != nil {
		return nil, err
	}
	for _, tx := range c.txns {
		c.pidTx[tx.rec.PID] = tx
		switch tx.rec.Phase {
		case txnPrepareCommit:
			if err := c.recoverCommit(tx); err != nil {
				c.w.Close()
				return nil, fmt.Errorf("finish the commit of transaction %q: %w", tx.id, err)
			}
		case txnOngoing:
			b.log.Warn("weir broker: aborting a transaction left open at the last stop", "transactional_id", tx.id)
			tx.rec.Phase, tx.rec.Epoch, tx.rec.LastAborted = txnCompleteAbort, tx.rec.Epoch+1, true
			if err := c.persist(tx); err != nil {
				c.w.Close()
				return nil, err
			}
		}
	}
	return c, nil
}

func (c *txnCoordinator) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w != nil {
		c.w.Close()
		c.w = nil
	}
}

// persist appends tx's state durably.
func (c *txnCoordinator) persist(tx *txn) error {
	v, err := json.Marshal(tx.rec)
	if err != nil {
		return err
	}
	_, err = c.w.Append([]wlog.Record{{Key: []byte(tx.id), Value: v}})
	return err
}

// tick aborts the transactions open longer than their timeout, bumping
// the epoch so that the producer is fenced (as Kafka does).
func (c *txnCoordinator) tick(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tx := range c.txns {
		if tx.rec.Phase != txnOngoing || now.Sub(tx.started) < time.Duration(tx.rec.TimeoutMs)*time.Millisecond {
			continue
		}
		c.b.log.Warn("weir broker: transaction timed out, aborting it", "transactional_id", tx.id, "timeout_ms", tx.rec.TimeoutMs)
		c.dropStaged(tx)
		tx.rec.Phase, tx.rec.LastAborted = txnCompleteAbort, true
		tx.rec.Epoch++
		if err := c.persist(tx); err != nil {
			c.b.log.Error("weir broker: record a timed-out transaction", "transactional_id", tx.id, "err", err)
		}
	}
}

func (c *txnCoordinator) dropStaged(tx *txn) {
	tx.parts, tx.order, tx.groups, tx.offsets, tx.bytes = nil, nil, nil, nil, 0
}

// initProducerID gives a transactional id its producer id and a new
// epoch, fencing the producers with older epochs, and aborts a
// transaction the id left open.
func (c *txnCoordinator) initProducerID(r *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	timeout := time.Duration(r.TransactionTimeoutMillis) * time.Millisecond
	if r.TransactionTimeoutMillis <= 0 || timeout > c.b.cfg.TransactionTimeoutMax {
		resp.ErrorCode = codeInvalidTransactionTimeout
		return resp
	}
	id := *r.TransactionalID
	c.mu.Lock()
	defer c.mu.Unlock()
	tx := c.txns[id]
	if tx == nil {
		pid, err := c.b.pids.next()
		if err != nil {
			resp.ErrorCode = codeKafkaStorageError
			return resp
		}
		tx = &txn{id: id, rec: txnRecord{PID: pid, Epoch: -1}}
	} else if r.ProducerID >= 0 && (r.ProducerID != tx.rec.PID || r.ProducerEpoch != tx.rec.Epoch) &&
		!(r.ProducerID == tx.rec.PID && r.ProducerEpoch == tx.rec.Epoch-1 && tx.rec.LastAborted) {
		// KIP-360: a producer that names its id and epoch must be the
		// current one.
		resp.ErrorCode = codeProducerFenced
		return resp
	}
	if tx.rec.Phase == txnOngoing {
		c.b.log.Info("weir broker: aborting the open transaction of a new producer instance", "transactional_id", id)
		c.dropStaged(tx)
	}
	tx.rec.Epoch++
	if tx.rec.Epoch == 32767 {
		pid, err := c.b.pids.next()
		if err != nil {
			resp.ErrorCode = codeKafkaStorageError
			return resp
		}
		delete(c.pidTx, tx.rec.PID)
		tx.rec.PID, tx.rec.Epoch = pid, 0
	}
	tx.rec.Phase, tx.rec.TimeoutMs, tx.rec.LastAborted, tx.rec.Offsets = txnEmpty, timeout.Milliseconds(), false, nil
	if err := c.persist(tx); err != nil {
		c.b.log.Error("weir broker: record a producer id", "transactional_id", id, "err", err)
		resp.ErrorCode = codeKafkaStorageError
		return resp
	}
	c.txns[id] = tx
	c.pidTx[tx.rec.PID] = tx
	resp.ProducerID, resp.ProducerEpoch = tx.rec.PID, tx.rec.Epoch
	return resp
}

// lookupLocked returns the transaction of id if pid and epoch are its
// current producer's, or the error code.
func (c *txnCoordinator) lookupLocked(id string, pid int64, epoch int16) (*txn, int16) {
	tx := c.txns[id]
	switch {
	case tx == nil || tx.rec.PID != pid:
		return nil, codeInvalidProducerIDMapping
	case epoch != tx.rec.Epoch:
		return tx, codeProducerFenced
	}
	return tx, codeNone
}

// beginLocked moves tx to Ongoing (durably) if it is not.
func (c *txnCoordinator) beginLocked(tx *txn) int16 {
	switch tx.rec.Phase {
	case txnOngoing:
		return codeNone
	case txnPrepareCommit:
		return codeConcurrentTransactions
	}
	tx.rec.Phase, tx.rec.LastAborted, tx.rec.Offsets = txnOngoing, false, nil
	tx.started = c.b.cfg.Now()
	tx.parts, tx.order, tx.groups, tx.offsets = map[tp]*txnPart{}, nil, map[string]bool{}, map[string][]committedOffset{}
	if err := c.persist(tx); err != nil {
		c.b.log.Error("weir broker: record a transaction", "transactional_id", tx.id, "err", err)
		return codeKafkaStorageError
	}
	return codeNone
}

func (c *txnCoordinator) handle(ctx context.Context, req kmsg.Request) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.AddPartitionsToTxnRequest:
		return c.addPartitions(r)
	case *kmsg.AddOffsetsToTxnRequest:
		resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		c.mu.Lock()
		defer c.mu.Unlock()
		tx, code := c.lookupLocked(r.TransactionalID, r.ProducerID, r.ProducerEpoch)
		if code == codeNone {
			code = c.beginLocked(tx)
		}
		if code == codeNone {
			tx.groups[r.Group] = true
		}
		resp.ErrorCode = code
		return resp
	case *kmsg.TxnOffsetCommitRequest:
		return c.txnOffsetCommit(r)
	case *kmsg.EndTxnRequest:
		resp := r.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = c.endTxn(r)
		return resp
	case *kmsg.ListTransactionsRequest:
		return c.list(r)
	case *kmsg.DescribeTransactionsRequest:
		return c.describe(r)
	}
	return nil
}

// kafkaState is Kafka's name of a transaction's state.
func (p txnPhase) kafkaState() string {
	switch p {
	case txnOngoing:
		return "Ongoing"
	case txnPrepareCommit:
		return "PrepareCommit"
	case txnCompleteCommit:
		return "CompleteCommit"
	case txnCompleteAbort:
		return "CompleteAbort"
	}
	return "Empty"
}

var kafkaTxnStates = []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func (c *txnCoordinator) list(r *kmsg.ListTransactionsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.ListTransactionsResponse)
	for _, f := range r.StateFilters {
		if !slices.Contains(kafkaTxnStates, f) {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, f)
		}
	}
	now := c.b.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, tx := range c.txns {
		state := tx.rec.Phase.kafkaState()
		if len(r.StateFilters) > 0 && !slices.Contains(r.StateFilters, state) {
			continue
		}
		if len(r.ProducerIDFilters) > 0 && !slices.Contains(r.ProducerIDFilters, tx.rec.PID) {
			continue
		}
		if r.DurationFilterMillis > 0 && (tx.rec.Phase != txnOngoing || now.Sub(tx.started).Milliseconds() < r.DurationFilterMillis) {
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = id, tx.rec.PID, state
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}

func (c *txnCoordinator) describe(r *kmsg.DescribeTransactionsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range r.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		tx := c.txns[id]
		if tx == nil {
			st.ErrorCode = 105 // TRANSACTIONAL_ID_NOT_FOUND
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		st.State, st.TimeoutMillis = tx.rec.Phase.kafkaState(), int32(tx.rec.TimeoutMs)
		st.ProducerID, st.ProducerEpoch, st.StartTimestamp = tx.rec.PID, tx.rec.Epoch, -1
		if tx.rec.Phase == txnOngoing {
			st.StartTimestamp = tx.started.UnixMilli()
			byTopic := map[string]int{}
			for _, k := range tx.order {
				i, ok := byTopic[k.topic]
				if !ok {
					i = len(st.Topics)
					byTopic[k.topic] = i
					t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
					t.Topic = k.topic
					st.Topics = append(st.Topics, t)
				}
				st.Topics[i].Partitions = append(st.Topics[i].Partitions, k.part)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}

func (c *txnCoordinator) addPartitions(r *kmsg.AddPartitionsToTxnRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	tx, code := c.lookupLocked(r.TransactionalID, r.ProducerID, r.ProducerEpoch)
	if code == codeNone {
		code = c.beginLocked(tx)
	}
	for _, t := range r.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			if code == codeNone {
				part, pcode := c.b.topics.partition(t.Topic, p, false)
				rp.ErrorCode = pcode
				if pcode == codeNone && tx.parts[part.key] == nil {
					tx.parts[part.key] = &txnPart{part: part}
					tx.order = append(tx.order, part.key)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// checkProduce checks a transactional batch before it is staged.
func (c *txnCoordinator) checkProduce(txnID *string, pb *producedBatch, key tp) (int16, string) {
	if txnID == nil {
		return codeInvalidTxnState, "a transactional batch in a produce request without a transactional id"
	}
	return codeNone, ""
}

// stage keeps a transactional batch until EndTxn. A retried batch (the
// same sequences as one staged) is accepted once.
func (c *txnCoordinator) stage(txnID string, pb *producedBatch, part *partition) (int64, int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tx := c.txns[txnID]
	if tx == nil || tx.rec.PID != pb.ProducerID {
		return -1, codeInvalidProducerIDMapping
	}
	if pb.ProducerEpoch != tx.rec.Epoch {
		return -1, codeInvalidProducerEpoch
	}
	tpart := tx.parts[part.key]
	if tx.rec.Phase != txnOngoing || tpart == nil {
		return -1, codeInvalidTxnState
	}
	first := pb.BaseSequence
	last := int32((int64(first) + int64(pb.NumRecords) - 1) & 0x7fffffff)
	if n := len(tpart.batches); n > 0 {
		for _, sb := range tpart.batches[max(0, n-maxProducerBatches):] {
			if sb.first == first && sb.last == last {
				return -1, codeNone // a retry
			}
		}
		if want := int32((int64(tpart.batches[n-1].last) + 1) & 0x7fffffff); first != want {
			return -1, codeOutOfOrderSequence
		}
	}
	// The records alias the request: copy them, their bytes into one
	// buffer (not an allocation per key and value).
	size, nh := 0, 0
	for _, r := range pb.Records {
		size += len(r.Key) + len(r.Value)
		nh += len(r.Headers)
		for _, h := range r.Headers {
			size += len(h.Value)
		}
	}
	arena := make([]byte, 0, size)
	keep := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		arena = append(arena, b...)
		return arena[len(arena)-len(b) : len(arena) : len(arena)]
	}
	recs := make([]wlog.Record, len(pb.Records))
	hs := make([]wlog.Header, 0, nh)
	for i, r := range pb.Records {
		recs[i] = wlog.Record{Timestamp: r.Timestamp, Key: keep(r.Key), Value: keep(r.Value)}
		if len(r.Headers) > 0 {
			start := len(hs)
			for _, h := range r.Headers {
				hs = append(hs, wlog.Header{Key: h.Key, Value: keep(h.Value)})
			}
			recs[i].Headers = hs[start:len(hs):len(hs)]
		}
	}
	if tx.bytes+size > maxTxnBytes {
		return -1, codeRecordListTooLarge
	}
	tx.bytes += size
	tpart.batches = append(tpart.batches, stagedBatch{first: first, last: last, recs: recs})
	return -1, codeNone
}

// pendingOffsets returns the partitions of group whose offsets an open
// transaction has committed.
func (c *txnCoordinator) pendingOffsets(group string) map[groupTP]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	var m map[groupTP]bool
	for _, tx := range c.txns {
		if tx.rec.Phase != txnOngoing {
			continue
		}
		for _, o := range tx.offsets[group] {
			if m == nil {
				m = map[groupTP]bool{}
			}
			m[groupTP{o.Topic, o.Partition}] = true
		}
	}
	return m
}

func (c *txnCoordinator) txnOffsetCommit(r *kmsg.TxnOffsetCommitRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	c.mu.Lock()
	tx, code := c.lookupLocked(r.TransactionalID, r.ProducerID, r.ProducerEpoch)
	if code == codeNone && (tx.rec.Phase != txnOngoing || !tx.groups[r.Group]) {
		code = codeInvalidTxnState
	}
	c.mu.Unlock()
	if code == codeNone && r.Version >= 3 {
		// KIP-447: only a current member of the group may commit.
		code = c.b.groups.validateMember(r.Group, r.MemberID, r.InstanceID, r.Generation)
	}
	var offs []committedOffset
	for _, t := range r.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
			offs = append(offs, committedOffset{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if code == codeNone {
		c.mu.Lock()
		if tx.rec.Phase == txnOngoing {
			tx.offsets[r.Group] = append(tx.offsets[r.Group], offs...)
		}
		c.mu.Unlock()
	}
	return resp
}

func (c *txnCoordinator) endTxn(r *kmsg.EndTxnRequest) int16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	tx := c.txns[r.TransactionalID]
	if tx == nil || tx.rec.PID != r.ProducerID {
		return codeInvalidProducerIDMapping
	}
	if r.ProducerEpoch != tx.rec.Epoch {
		if !r.Commit && tx.rec.LastAborted && r.ProducerEpoch == tx.rec.Epoch-1 {
			return codeNone // the coordinator aborted it already
		}
		return codeProducerFenced
	}
	switch tx.rec.Phase {
	case txnCompleteCommit:
		if r.Commit {
			return codeNone // a retry
		}
		return codeInvalidTxnState
	case txnCompleteAbort:
		if !r.Commit {
			return codeNone
		}
		return codeInvalidTxnState
	case txnOngoing:
	default:
		return codeInvalidTxnState
	}
	if !r.Commit {
		c.dropStaged(tx)
		tx.rec.Phase = txnCompleteAbort
		if err := c.persist(tx); err != nil {
			c.b.log.Error("weir broker: record an abort", "transactional_id", tx.id, "err", err)
			return codeKafkaStorageError
		}
		return codeNone
	}
	if err := c.commit(tx); err != nil {
		c.b.log.Error("weir broker: commit a transaction", "transactional_id", tx.id, "err", err)
		return codeKafkaStorageError
	}
	return codeNone
}

// stagePath is the staging file of transactional id's commit.
func (c *txnCoordinator) stagePath(tx *txn) string {
	return filepath.Join(c.dir, strconv.FormatInt(tx.rec.PID, 10)+".stage")
}

// commit makes tx's batches and offsets durable and visible (see the
// package comment on transactions).
func (c *txnCoordinator) commit(tx *txn) error {
	tx.rec.Commits++
	tx.rec.Offsets = tx.offsets
	// 1. The staged batches, durable in a file.
	var buf []byte
	for _, k := range tx.order {
		tp := tx.parts[k]
		for _, sb := range tp.batches {
			buf = binary.BigEndian.AppendUint16(buf, uint16(len(k.topic)))
			buf = append(buf, k.topic...)
			buf = binary.BigEndian.AppendUint32(buf, uint32(k.part))
			start := len(buf)
			buf = append(buf, 0, 0, 0, 0)
			for i := range sb.recs {
				sb.recs[i].Offset = int64(i) // offsets are given at the append
			}
			buf = appendFetchBatch(buf, sb.recs)
			binary.BigEndian.PutUint32(buf[start:], uint32(len(buf)-start-4))
		}
	}
	buf = binary.BigEndian.AppendUint32(buf, crc32.Checksum(buf, crc32.MakeTable(crc32.Castagnoli)))
	path := c.stagePath(tx)
	if err := writeFileSync(path, buf); err != nil {
		return err
	}
	// 2. PrepareCommit: from here on the commit happens, after a crash too.
	tx.rec.Phase = txnPrepareCommit
	if err := c.persist(tx); err != nil {
		return err
	}
	return c.finishCommit(tx, false)
}

// finishCommit appends the staged batches of a prepared commit (skipping
// those a partition holds already when recovering), commits its offsets
// and records CompleteCommit.
func (c *txnCoordinator) finishCommit(tx *txn, recovering bool) error {
	b, err := os.ReadFile(c.stagePath(tx))
	if err != nil {
		return err
	}
	if len(b) < 4 || crc32.Checksum(b[:len(b)-4], crc32.MakeTable(crc32.Castagnoli)) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return fmt.Errorf("staging file %s: bad checksum", c.stagePath(tx))
	}
	b = b[:len(b)-4]
	producer := "txn/" + strconv.FormatInt(tx.rec.PID, 10)
	lastSeen := map[tp]wlog.ProducerSeq{}
	idx := uint32(0)
	var recs []wlog.Record
	for len(b) > 0 {
		if len(b) < 2 {
			return fmt.Errorf("staging file %s: truncated", c.stagePath(tx))
		}
		n := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+n+8 {
			return fmt.Errorf("staging file %s: truncated", c.stagePath(tx))
		}
		k := tp{topic: string(b[2 : 2+n]), part: int32(binary.BigEndian.Uint32(b[2+n:]))}
		l := int(binary.BigEndian.Uint32(b[6+n:]))
		b = b[10+n:]
		if len(b) < l {
			return fmt.Errorf("staging file %s: truncated", c.stagePath(tx))
		}
		batches, rs, err := decodeProduce(b[:l], recs[:0], maxDecompressed)
		recs = rs
		if err != nil {
			return fmt.Errorf("staging file %s: %w", c.stagePath(tx), err)
		}
		b = b[l:]
		idx++
		part, code := c.b.topics.partition(k.topic, k.part, false)
		if code != codeNone {
			c.b.log.Error("weir broker: a committed transaction's partition is gone; its records are dropped", "topic", k.topic, "partition", k.part, "transactional_id", tx.id)
			continue
		}
		seq := wlog.ProducerSeq{Epoch: uint64(uint16(tx.rec.Epoch)), Checkpoint: tx.rec.Commits, Index: idx}
		if recovering {
			last, ok := lastSeen[k]
			if !ok {
				if last, err = lastProducerSeq(part, producer); err != nil {
					return err
				}
				lastSeen[k] = last
			}
			if !seqLess(last, seq) {
				continue // appended before the crash
			}
		}
		for _, pb := range batches {
			if err := part.appendCommitted(pb.Records, producer, seq); err != nil {
				return err
			}
		}
	}
	for g, offs := range tx.rec.Offsets {
		if err := c.b.groups.commitOffsets(g, offs); err != nil {
			return err
		}
	}
	tx.rec.Phase, tx.rec.Offsets = txnCompleteCommit, nil
	c.dropStaged(tx)
	if err := c.persist(tx); err != nil {
		return err
	}
	os.Remove(c.stagePath(tx))
	return nil
}

func (c *txnCoordinator) recoverCommit(tx *txn) error {
	c.b.log.Info("weir broker: finishing a transaction's commit interrupted at the last stop", "transactional_id", tx.id)
	return c.finishCommit(tx, true)
}

func seqLess(a, b wlog.ProducerSeq) bool {
	if a.Epoch != b.Epoch {
		return a.Epoch < b.Epoch
	}
	if a.Checkpoint != b.Checkpoint {
		return a.Checkpoint < b.Checkpoint
	}
	return a.Index < b.Index
}

// lastProducerSeq is the sequence of producer's last batch in part.
func lastProducerSeq(part *partition, producer string) (wlog.ProducerSeq, error) {
	var last wlog.ProducerSeq
	err := part.t.ScanProducers(part.p, func(p []byte, seq wlog.ProducerSeq, _, _ int64) {
		if string(p) == producer && seqLess(last, seq) {
			last = seq
		}
	})
	return last, err
}

func writeFileSync(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		syncDir(filepath.Dir(path))
	}
	return err
}
