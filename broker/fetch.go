package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "github.com/weirstream/weir/connector/log"
)

// cursor is a connection's reader of one partition, kept between fetches
// so that a consumer reading on does not seek again. What it has read and
// not sent comes first: ahead (whole Kafka batches, from aheadAt on),
// then pending (records, read from batches the log does not keep in
// Kafka's form, or that a fetch's byte limit ended inside).
type cursor struct {
	r       *wlog.Reader
	pending []wlog.Record
	// buf holds the batches of the last answer for this partition, reused
	// by the next fetch (the connection writes an answer before it reads
	// the next request).
	buf []byte
	// ahead holds Kafka batches read ahead after the last fetch, the
	// first of them holding offset aheadAt; spare is the buffer the next
	// read-ahead fills (the one before buf).
	ahead, spare []byte
	aheadAt      int64
	// done is closed when the read-ahead started after the last fetch
	// is done (nil if none ran); aheadErr is its error.
	done     chan struct{}
	aheadErr error
}

// wait waits for the read-ahead, if one runs.
func (cu *cursor) wait() {
	if cu.done != nil {
		<-cu.done
		cu.done = nil
	}
}

// readAhead reads, in the background, what the consumer will fetch next
// (up to about limit bytes, below hwm), so that its next fetch finds it
// read: a client keeps one fetch in flight per broker, and the broker
// would otherwise idle while it decodes the last answer.
func (cu *cursor) readAhead(limit int, hwm int64) {
	if len(cu.pending) > 0 || len(cu.ahead) > 0 || cu.r.Next() >= hwm {
		return
	}
	cu.aheadAt = cu.r.Next()
	buf := cu.spare[:0]
	cu.spare = nil
	if cap(buf) < limit {
		buf = make([]byte, 0, limit)
	}
	cu.done = make(chan struct{})
	go func() {
		defer close(cu.done)
		defer func() { cu.ahead = buf }()
		size := 0
		for size < limit && cu.r.Next() < hwm {
			if len(cu.pending) > 0 {
				// Records: go on with records, which follow the batches.
				recs, err := cu.r.Read(context.Background(), fetchReadMax)
				if errors.Is(err, io.EOF) {
					return
				}
				if err != nil {
					cu.aheadErr = err
					return
				}
				for i := range recs {
					size += recordSize(&recs[i])
				}
				cu.pending = append(cu.pending, recs...)
				continue
			}
			res, err := cu.r.ReadKafka(buf, limit-size, size == 0, hwm, fetchReadMax)
			buf = res.Buf
			if errors.Is(err, io.EOF) || res.Full {
				return
			}
			if err != nil {
				cu.aheadErr = err
				return
			}
			size = len(buf)
			for i := range res.Records {
				size += recordSize(&res.Records[i])
			}
			cu.pending = res.Records
		}
	}()
}

func (cu *cursor) position() int64 {
	if len(cu.ahead) > 0 {
		return cu.aheadAt
	}
	if len(cu.pending) > 0 {
		return cu.pending[0].Offset
	}
	return cu.r.Next()
}

func (c *conn) closeCursors() {
	for k, cu := range c.cursors {
		cu.wait()
		cu.r.Close()
		delete(c.cursors, k)
	}
}

// emptyRecords is a partition's record set with nothing in it.
var emptyRecords = []byte{}

// fetchReadMax is the number of records one read of a partition asks for.
const fetchReadMax = 512

// pollEvery is how often a waiting fetch looks for records appended by
// another process (appends through the broker wake it at once).
const pollEvery = 100 * time.Millisecond

func (c *conn) fetch(r *kmsg.FetchRequest) kmsg.Response {
	b := c.b
	resp := r.ResponseKind().(*kmsg.FetchResponse)
	resp.SessionID = 0 // no fetch sessions: every fetch is a full one
	maxBytes := int(r.MaxBytes)
	if r.Version < 3 || maxBytes <= 0 {
		maxBytes = 50 << 20
	}
	deadline := time.Now().Add(time.Duration(r.MaxWaitMillis) * time.Millisecond)
	type slot struct {
		rp   *kmsg.FetchResponseTopicPartition
		part *partition
		req  *kmsg.FetchRequestTopicPartition
	}
	var slots []slot
	for ti := range r.Topics {
		t := &r.Topics[ti]
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.FetchResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
	}
	for ti := range r.Topics {
		t := &r.Topics[ti]
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			rp := &resp.Topics[ti].Partitions[pi]
			*rp = kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
			// Empty, not null: librdkafka refuses a null record set.
			rp.RecordBatches = emptyRecords
			part, code := b.topics.partition(t.Topic, p.Partition, false)
			if code != codeNone {
				rp.ErrorCode = code
				continue
			}
			slots = append(slots, slot{rp: rp, part: part, req: p})
		}
	}
	total := 0
	for {
		var waits []<-chan struct{}
		var cands []slot
		sum := 0
		for _, s := range slots {
			if s.rp.ErrorCode != codeNone || (len(s.rp.RecordBatches) > 0) {
				continue
			}
			waits = append(waits, s.part.waitCh())
			cands = append(cands, s)
			sum += partitionLimit(s.req)
		}
		if len(cands) > 1 && sum <= maxBytes-total {
			// Every partition's limit fits in what the answer may still
			// take: read and encode them at the same time.
			var wg sync.WaitGroup
			ns := make([]int, len(cands))
			for i, s := range cands {
				wg.Add(1)
				go func() {
					defer wg.Done()
					n, code := c.fetchPartition(s.part, s.req, s.rp, maxBytes, false)
					s.rp.ErrorCode = code
					ns[i] = n
				}()
			}
			wg.Wait()
			for _, n := range ns {
				total += n
			}
		} else {
			for _, s := range cands {
				if total >= maxBytes && total > 0 {
					continue
				}
				n, code := c.fetchPartition(s.part, s.req, s.rp, maxBytes-total, total == 0)
				s.rp.ErrorCode = code
				total += n
			}
		}
		if total >= int(r.MinBytes) && total > 0 || !time.Now().Before(deadline) || len(waits) == 0 {
			break
		}
		// Wait for an append to one of the partitions, another process's
		// append (polled), the deadline, or the connection's end.
		wait := min(time.Until(deadline), pollEvery)
		if !waitAny(c.ctx, waits, wait) && c.ctx.Err() != nil {
			return nil
		}
	}
	return resp
}

// waitAny waits up to d for one of chs to close; false if ctx ended.
func waitAny(ctx context.Context, chs []<-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	done := make(chan struct{})
	defer close(done)
	woke := make(chan struct{}, 1)
	for _, ch := range chs[:min(len(chs), 16)] {
		go func(ch <-chan struct{}) {
			select {
			case <-ch:
				select {
				case woke <- struct{}{}:
				default:
				}
			case <-done:
			}
		}(ch)
	}
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	case <-woke:
	}
	return true
}

// fetchPartition fills rp with the records of part from the requested
// offset, at most budget bytes (but at least one batch if first, as Kafka
// does, so a record larger than the limit is not stuck), and returns the
// bytes added.
func (c *conn) fetchPartition(part *partition, req *kmsg.FetchRequestTopicPartition, rp *kmsg.FetchResponseTopicPartition, budget int, first bool) (int, int16) {
	earliest, hwm, err := part.offsets()
	if err != nil {
		c.b.log.Error("weir broker: fetch offsets", "topic", part.t.Name, "partition", part.p, "err", err)
		return 0, codeKafkaStorageError
	}
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = hwm, hwm, earliest
	off := req.FetchOffset
	if off < earliest {
		// Retention may have moved the start since it was read.
		if earliest, err = part.refreshEarliest(); err != nil {
			return 0, codeKafkaStorageError
		}
		rp.LogStartOffset = earliest
	}
	if off < earliest || off > hwm {
		return 0, codeOffsetOutOfRange
	}
	if off == hwm {
		return 0, codeNone
	}
	limit := min(partitionLimit(req), budget)
	c.cmu.Lock()
	cu := c.cursors[part.key]
	if cu != nil {
		cu.wait()
	}
	c.cmu.Unlock()
	if cu != nil && (cu.aheadErr != nil || cu.position() != off) {
		// Elsewhere: start again there (keeping the buffers).
		if err := cu.reopen(part, off); err != nil {
			c.b.log.Error("weir broker: open a reader", "topic", part.t.Name, "partition", part.p, "offset", off, "err", err)
			c.dropCursor(part.key)
			return 0, codeKafkaStorageError
		}
	}
	if cu == nil {
		r, err := part.t.OpenReader(part.p, wlog.AtOffset(off))
		if err != nil {
			c.b.log.Error("weir broker: open a reader", "topic", part.t.Name, "partition", part.p, "offset", off, "err", err)
			return 0, codeKafkaStorageError
		}
		cu = &cursor{r: r}
		c.cmu.Lock()
		c.cursors[part.key] = cu
		c.cmu.Unlock()
	}
	out := cu.buf[:0]
	if cu.ahead != nil && len(cu.ahead) == 0 {
		cu.spare, cu.ahead = cu.ahead, nil // the read-ahead found no batch
	}
	if len(cu.ahead) > 0 {
		// The batches read ahead come first, if they fit (or are one
		// batch, which a first partition may send whatever its size);
		// if not, they are read again within this fetch's limit.
		fits := len(cu.ahead) <= limit || first && kbatchLogOverhead+int(binary.BigEndian.Uint32(cu.ahead[8:])) == len(cu.ahead)
		if fits {
			cu.spare, out, cu.ahead = out, cu.ahead, nil
		} else if err := cu.reopen(part, off); err != nil {
			c.b.log.Error("weir broker: open a reader", "topic", part.t.Name, "partition", part.p, "offset", off, "err", err)
			c.dropCursor(part.key)
			return 0, codeKafkaStorageError
		}
	}
	if cap(out) < limit {
		// (keeping the batches read ahead: the reader is past them)
		out = append(make([]byte, 0, limit), out...)
	}
	for {
		if len(cu.pending) > 0 {
			// Take the records that fit, and only below the high watermark
			// read above: a reader sees a batch as soon as it is written,
			// before it is fsynced and acknowledged, and a record above the
			// watermark a consumer was told would make its next fetch out of
			// range.
			n, size := 0, 0
			for n < len(cu.pending) && cu.pending[n].Offset < hwm {
				rs := recordSize(&cu.pending[n])
				if len(out)+size+rs+batchOverhead > limit && (n > 0 || len(out) > 0 || !first) {
					break
				}
				size += rs
				n++
			}
			if n == 0 {
				break
			}
			out = appendFetchBatch(out, cu.pending[:n])
			cu.pending = cu.pending[n:]
			if len(cu.pending) > 0 {
				break
			}
		}
		if cu.r.Next() >= hwm || len(out) >= limit {
			break
		}
		// Batches the log keeps in Kafka's form are copied as they are;
		// the records of others are encoded above.
		res, err := cu.r.ReadKafka(out, limit-len(out), first && len(out) == 0, hwm, fetchReadMax)
		out = res.Buf
		if errors.Is(err, io.EOF) || res.Full {
			break
		}
		if err != nil {
			c.b.log.Error("weir broker: read", "topic", part.t.Name, "partition", part.p, "err", err)
			c.dropCursor(part.key)
			if len(out) > 0 {
				break
			}
			return 0, codeKafkaStorageError
		}
		cu.pending = res.Records
	}
	cu.buf = out
	rp.RecordBatches = out
	if len(out) > 0 {
		cu.readAhead(limit, hwm)
	}
	return len(out), codeNone
}

// dropCursor closes and forgets the cursor of a partition.
func (c *conn) dropCursor(key tp) {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	if cu := c.cursors[key]; cu != nil {
		cu.r.Close()
		delete(c.cursors, key)
	}
}

// reopen starts the cursor's reader again at off, dropping what it read
// (and keeping its buffers).
func (cu *cursor) reopen(part *partition, off int64) error {
	cu.r.Close()
	cu.pending, cu.aheadErr = nil, nil
	if cu.ahead != nil {
		cu.spare, cu.ahead = cu.ahead[:0], nil
	}
	r, err := part.t.OpenReader(part.p, wlog.AtOffset(off))
	if err != nil {
		return err
	}
	cu.r = r
	return nil
}

// partitionLimit is a fetch's byte limit for one partition.
func partitionLimit(req *kmsg.FetchRequestTopicPartition) int {
	if req.PartitionMaxBytes <= 0 {
		return 1 << 20
	}
	return int(req.PartitionMaxBytes)
}

// batchOverhead is the size of a RecordBatch's header.
const batchOverhead = 61

// recordSize is an upper bound of the encoded size of a record in a batch.
func recordSize(r *wlog.Record) int {
	n := 5 + 1 + 10 + 5 + 5 + len(r.Key) + 5 + len(r.Value) + 5
	for _, h := range r.Headers {
		n += 10 + len(h.Key) + len(h.Value)
	}
	return n
}
