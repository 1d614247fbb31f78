package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	wlog "github.com/weirstream/weir/connector/log"
)

// partition is the broker's state of one partition: its writer (opened at
// the first produce and kept), the idempotent producers' sequences, and
// the channel that wakes long polls.
type partition struct {
	b   *Broker
	t   *wlog.Topic
	p   int
	key tp

	mu sync.Mutex // serialises appends
	w  *wlog.Writer
	// hwm is the next offset while the broker holds the writer (-1
	// before); earliest the base of the oldest segment as last read
	// (refreshed when the writer opens, after a clean, and when a
	// request asks below it). Read without mu, so that a fetch does not
	// wait behind an append's fsync.
	hwm, earliest atomic.Int64
	producers     map[int64]*producerState // loaded at the first idempotent produce
	closed        bool
	lastUsed      time.Time // of the writer (cfg.Now), for releaseIdle

	// notify is closed (and replaced) after each append: fetches waiting
	// for data select on it.
	nmu    sync.Mutex
	notify chan struct{}
}

func newPartition(b *Broker, t *wlog.Topic, p int) *partition {
	part := &partition{b: b, t: t, p: p, key: tp{t.Name, int32(p)}, notify: make(chan struct{})}
	part.hwm.Store(-1)
	part.earliest.Store(-1)
	return part
}

// waitCh returns a channel closed at the next append.
func (p *partition) waitCh() <-chan struct{} {
	p.nmu.Lock()
	defer p.nmu.Unlock()
	return p.notify
}

func (p *partition) wake() {
	p.nmu.Lock()
	close(p.notify)
	p.notify = make(chan struct{})
	p.nmu.Unlock()
}

// writerLocked opens the writer if it is not open.
func (p *partition) writerLocked() (*wlog.Writer, error) {
	if p.closed {
		return nil, wlog.ErrClosed
	}
	p.lastUsed = p.b.cfg.Now()
	if p.w != nil {
		return p.w, nil
	}
	var opts []wlog.WriterOption
	if p.b.cfg.Sync != nil {
		opts = append(opts, wlog.WithSync(*p.b.cfg.Sync))
	}
	opts = append(opts, wlog.WithLogger(p.b.log))
	w, err := p.t.OpenWriter(p.p, opts...)
	if err != nil {
		return nil, err
	}
	p.w = w
	p.hwm.Store(w.NextOffset())
	if earliest, _, err := p.t.Offsets(p.p); err == nil {
		p.earliest.Store(earliest)
	}
	return w, nil
}

// idleWriter is how long a partition's writer stays open without an
// append: then the broker closes it, releasing the partition's lock, so
// that another program (weir produce, a job's log sink) may write it.
const idleWriter = 5 * time.Second

// releaseIdle closes the writer if it has been idle for idleWriter.
func (p *partition) releaseIdle(now time.Time) {
	if p.hwm.Load() < 0 {
		return // no writer (read without the lock: appends set hwm)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w == nil || now.Sub(p.lastUsed) < idleWriter {
		return
	}
	if err := p.w.Close(); err != nil {
		p.b.log.Error("weir broker: close an idle writer", "topic", p.t.Name, "partition", p.p, "err", err)
	}
	p.w = nil
	p.hwm.Store(-1)
}

// clean applies retention and compaction if the broker holds the writer.
func (p *partition) clean(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w == nil {
		return
	}
	if _, err := p.w.Clean(now); err != nil {
		p.b.log.Error("weir broker: retention and compaction", "topic", p.t.Name, "partition", p.p, "err", err)
	}
	if earliest, _, err := p.t.Offsets(p.p); err == nil {
		p.earliest.Store(earliest)
	}
}

func (p *partition) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.w == nil {
		return nil
	}
	err := p.w.Close()
	p.w = nil
	p.hwm.Store(-1)
	return err
}

// offsets returns the earliest offset and the high watermark. While the
// broker holds the writer they come from memory; otherwise (a partition
// only read, written by another process if at all) from the files.
func (p *partition) offsets() (earliest, next int64, err error) {
	if hwm, e := p.hwm.Load(), p.earliest.Load(); hwm >= 0 && e >= 0 {
		return e, hwm, nil
	}
	return p.t.Offsets(p.p)
}

// refreshEarliest rereads the earliest offset (segments may have been
// deleted by retention).
func (p *partition) refreshEarliest() (int64, error) {
	earliest, _, err := p.t.Offsets(p.p)
	if err != nil {
		return 0, err
	}
	if p.earliest.Load() >= 0 {
		p.earliest.Store(earliest)
	}
	return earliest, nil
}

// offsetForTime returns the offset and timestamp of the first record, in
// offset order, whose timestamp is at or after ts; -1, -1 if none.
func (p *partition) offsetForTime(ts int64) (int64, int64, error) {
	r, err := p.t.OpenReader(p.p, wlog.AtTimestamp(ts))
	if err != nil {
		return 0, 0, err
	}
	defer r.Close()
	recs, err := r.Read(context.Background(), 1)
	if errors.Is(err, io.EOF) {
		return -1, -1, nil
	}
	if err != nil {
		return 0, 0, err
	}
	return recs[0].Offset, recs[0].Timestamp, nil
}

// producerState is what the partition knows of one idempotent producer:
// its epoch and its last batches (Kafka keeps five: a producer has at most
// five requests in flight).
type producerState struct {
	epoch   int16
	batches []seqBatch // oldest first, at most maxProducerBatches
}

type seqBatch struct {
	first, last int32 // sequence numbers
	offset      int64 // base offset
}

const maxProducerBatches = 5

// producerName is the producer id a Kafka producer's batches carry in the
// log: its sequences survive a restart (ScanProducers).
func producerName(pid int64) string { return "kafka/" + strconv.FormatInt(pid, 10) }

// loadProducersLocked reads the producers' last batches from the log, once.
func (p *partition) loadProducersLocked() error {
	if p.producers != nil {
		return nil
	}
	m := map[int64]*producerState{}
	err := p.t.ScanProducers(p.p, func(prod []byte, seq wlog.ProducerSeq, first, last int64) {
		s := string(prod)
		if len(s) < 7 || s[:6] != "kafka/" {
			return
		}
		pid, err := strconv.ParseInt(s[6:], 10, 64)
		if err != nil {
			return
		}
		st := m[pid]
		epoch := int16(seq.Epoch)
		if st == nil || st.epoch != epoch {
			st = &producerState{epoch: epoch}
			m[pid] = st
		}
		st.push(seqBatch{first: int32(seq.Checkpoint), last: int32(seq.Index), offset: first})
	})
	if err != nil {
		return err
	}
	p.producers = m
	return nil
}

func (s *producerState) push(b seqBatch) {
	if len(s.batches) == maxProducerBatches {
		copy(s.batches, s.batches[1:])
		s.batches = s.batches[:maxProducerBatches-1]
	}
	s.batches = append(s.batches, b)
}

// appendBatch appends one produced batch, checking an idempotent
// producer's sequence as Kafka does: a batch already appended (a retry)
// is answered with its first offset and not appended again; a gap is
// OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch INVALID_PRODUCER_EPOCH.
//
// With a SyncGroup g the batch's fsync is started in g: the append is
// durable, and is published (the high watermark moved past it) by
// publish, only once g's Wait has returned. The returned deferral says
// what to publish; a batch appended without g (or a retry) is published
// here.
func (p *partition) appendBatch(pb *producedBatch, g *wlog.SyncGroup) (int64, deferral, int16, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, err := p.writerLocked()
	if err != nil {
		return -1, deferral{}, codeKafkaStorageError, err
	}
	if pb.ProducerID < 0 {
		off, err := appendProduced(w, pb, "", wlog.ProducerSeq{}, g)
		if err != nil {
			return -1, deferral{}, codeKafkaStorageError, err
		}
		return off, p.appendedLocked(w, g), codeNone, nil
	}
	if err := p.loadProducersLocked(); err != nil {
		return -1, deferral{}, codeKafkaStorageError, fmt.Errorf("read the producers of %s/%d: %w", p.t.Name, p.p, err)
	}
	first := pb.BaseSequence
	l := int64(first) + int64(pb.NumRecords) - 1
	if l > math.MaxInt32 { // sequences wrap to 0 past MaxInt32, as Kafka's do
		l -= math.MaxInt32 + 1
	}
	last := int32(l)
	st := p.producers[pb.ProducerID]
	switch {
	case st == nil:
		if first != 0 {
			// Kafka (KIP-360) accepts an unknown producer's sequence
			// only from 0: its state may have been lost to retention.
			return -1, deferral{}, codeUnknownProducerID, nil
		}
	case pb.ProducerEpoch < st.epoch:
		return -1, deferral{}, codeInvalidProducerEpoch, nil
	case pb.ProducerEpoch > st.epoch:
		if first != 0 {
			return -1, deferral{}, codeOutOfOrderSequence, nil
		}
	default:
		for _, b := range st.batches {
			if b.first == first && b.last == last {
				// A retry: already in the log. Its first attempt's
				// answer may still wait for its fsync, so this one
				// waits for the writer's next.
				return b.offset, p.retriedLocked(w, g), codeNone, nil
			}
		}
		if n := len(st.batches); n > 0 {
			want := st.batches[n-1].last + 1
			if want < 0 {
				want = 0
			}
			if first != want {
				if seqBefore(first, st.batches[0].first) {
					return -1, deferral{}, codeDuplicateSequence, nil
				}
				return -1, deferral{}, codeOutOfOrderSequence, nil
			}
		}
	}
	off, err := appendProduced(w, pb, producerName(pb.ProducerID),
		wlog.ProducerSeq{Epoch: uint64(uint16(pb.ProducerEpoch)), Checkpoint: int64(first), Index: uint32(last)}, g)
	if err != nil {
		return -1, deferral{}, codeKafkaStorageError, err
	}
	if st == nil || pb.ProducerEpoch != st.epoch {
		st = &producerState{epoch: pb.ProducerEpoch}
		p.producers[pb.ProducerID] = st
	}
	st.push(seqBatch{first: first, last: last, offset: off})
	return off, p.appendedLocked(w, g), codeNone, nil
}

// A deferral is an append whose fsync a SyncGroup started: once the
// group's Wait has returned, publish checks the writer and moves the high
// watermark to end.
type deferral struct {
	w   *wlog.Writer // nil: nothing deferred
	end int64
}

// appendedLocked publishes an append made without g, or returns its
// deferral.
func (p *partition) appendedLocked(w *wlog.Writer, g *wlog.SyncGroup) deferral {
	end := w.NextOffset()
	if g == nil {
		p.hwm.Store(end)
		p.wake()
		return deferral{}
	}
	return deferral{w: w, end: end}
}

// retriedLocked is appendedLocked for a retried batch already in the log:
// with g, its answer waits for an fsync of the writer (Sync started in g
// by an empty append would do; the writer's Sync is simplest).
func (p *partition) retriedLocked(w *wlog.Writer, g *wlog.SyncGroup) deferral {
	if g == nil {
		return deferral{}
	}
	return deferral{w: w, end: -1}
}

// publish ends a deferred append once its SyncGroup's Wait has returned:
// if the writer failed (its fsync did), the append is not acknowledged
// (the error is returned) and not published; otherwise the high
// watermark moves to d.end. A retry's deferral (end -1) syncs the writer,
// so that its answer does not come before its first attempt's fsync.
func (p *partition) publish(d deferral) error {
	if d.w == nil {
		return nil
	}
	if d.end < 0 {
		return d.w.Sync()
	}
	if err := d.w.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w == d.w && d.end > p.hwm.Load() {
		p.hwm.Store(d.end)
		p.wake()
	}
	return nil
}

// appendProduced appends a produced batch (with the producer section of
// producer and seq, unless producer is ""). The log keeps it in Kafka's
// form (wlog's AppendKafka), so that a fetch sends its bytes without
// encoding records: an uncompressed batch as it was produced, a
// compressed one encoded uncompressed. Batches that the log would not
// keep so (LogAppendTime, a zero timestamp, which the log replaces with
// its clock's time) are appended as records.
func appendProduced(w *wlog.Writer, pb *producedBatch, producer string, seq wlog.ProducerSeq, g *wlog.SyncGroup) (int64, error) {
	if kb := kafkaForm(pb); kb != nil {
		// decodeProduce checked the batch's CRC; appendFetchBatch computed
		// the one of a decompressed batch.
		off, err := w.AppendKafkaTo(g, kb, producer, seq)
		if !errors.Is(err, wlog.ErrKafkaBatch) {
			return off, err
		}
		// Refused (offset deltas that are not 0, 1, 2, …): as records.
	}
	if producer == "" {
		return w.Append(pb.Records)
	}
	return w.AppendAs(pb.Records, producer, seq)
}

// kafkaForm returns pb as the Kafka batch to append, or nil if it is to
// be appended as records.
func kafkaForm(pb *producedBatch) []byte {
	if pb.LogAppendTime || pb.Transactional || pb.Control || len(pb.Records) == 0 {
		return nil
	}
	for i := range pb.Records {
		if pb.Records[i].Timestamp == 0 {
			return nil
		}
	}
	if pb.Raw != nil {
		// The partition leader epoch, as this broker's answers say (it is
		// not under the batch's CRC).
		binary.BigEndian.PutUint32(pb.Raw[12:], 0)
		return pb.Raw
	}
	for i := range pb.Records {
		pb.Records[i].Offset = int64(i)
	}
	return appendFetchBatch(nil, pb.Records)
}

// seqBefore reports whether sequence a comes before b (sequences wrap).
func seqBefore(a, b int32) bool { return a-b < 0 }

// appendCommitted appends the records of a committed transaction's batch
// with its producer section.
func (p *partition) appendCommitted(recs []wlog.Record, producer string, seq wlog.ProducerSeq) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, err := p.writerLocked()
	if err != nil {
		return err
	}
	if _, err := w.AppendAs(recs, producer, seq); err != nil {
		return err
	}
	p.hwm.Store(w.NextOffset())
	p.wake()
	return nil
}
