package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "github.com/weirstream/weir/connector/log"
)

// maxDecompressed bounds the records of one produced partition after
// decompression (Kafka's message.max.bytes is 1 MiB by default; this
// leaves room for compressed batches of well-compressible data).
const maxDecompressed = 64 << 20

// produce serves a produce request. The partitions' appends go on at the
// same time (their writers are independent), and their fsyncs are
// started in the connection's SyncGroup g and waited for together before
// any partition's answer is sent or its records are published to
// fetches.
//
// A large request streams (produceStream): the appends of its first
// partitions started while the rest arrived, and their results are
// taken from stream.
func (b *Broker) produce(r *kmsg.ProduceRequest, scratch *[]wlog.Record, g *wlog.SyncGroup, stream *produceStream) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	type job struct {
		topic string
		p     *kmsg.ProduceRequestTopicPartition
		rp    *kmsg.ProduceResponseTopicPartition
		part  *partition
		d     []deferral
		sj    *streamJob // started by the stream
	}
	var jobs []job
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(r.Topics))
	for ti := range r.Topics {
		t := &r.Topics[ti]
		rt := &resp.Topics[ti]
		*rt = kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		for pi := range t.Partitions {
			rp := &rt.Partitions[pi]
			*rp = newProduceResponsePartition(t.Partitions[pi].Partition)
			jobs = append(jobs, job{topic: t.Topic, p: &t.Partitions[pi], rp: rp})
		}
	}
	run := func(j *job, recs *[]wlog.Record) {
		code, msg := b.producePartition(r, j.topic, j.p, j.rp, recs, g, &j.part, &j.d)
		j.rp.ErrorCode = code
		if msg != "" {
			j.rp.ErrorMessage = &msg
		}
	}
	unstarted := 0
	for i := range jobs {
		if jobs[i].sj = stream.take(jobs[i].topic, jobs[i].p); jobs[i].sj == nil {
			unstarted++
		}
	}
	if len(jobs) == 1 && unstarted == 1 {
		run(&jobs[0], scratch)
	} else if unstarted > 0 {
		var wg sync.WaitGroup
		for i := range jobs {
			if jobs[i].sj == nil {
				wg.Go(func() {
					var recs []wlog.Record
					run(&jobs[i], &recs)
				})
			}
		}
		wg.Wait()
	}
	for i := range jobs {
		if sj := jobs[i].sj; sj != nil {
			<-sj.done
			*jobs[i].rp, jobs[i].part, jobs[i].d = sj.rp, sj.part, sj.d
		}
	}
	// Every fsync started; a failed one failed its writer, which publish
	// reports for the partitions it wrote.
	g.Wait()
	for i := range jobs {
		j := &jobs[i]
		for _, d := range j.d {
			if err := j.part.publish(d); err != nil && j.rp.ErrorCode == codeNone {
				b.log.Error("weir broker: append", "topic", j.topic, "partition", j.p.Partition, "err", err)
				msg := err.Error()
				j.rp.ErrorCode, j.rp.ErrorMessage, j.rp.BaseOffset = codeKafkaStorageError, &msg, -1
			}
		}
	}
	if r.Acks == 0 {
		return nil
	}
	return resp
}

func (b *Broker) producePartition(r *kmsg.ProduceRequest, topic string, p *kmsg.ProduceRequestTopicPartition, rp *kmsg.ProduceResponseTopicPartition, recs *[]wlog.Record, g *wlog.SyncGroup, partOut **partition, ds *[]deferral) (int16, string) {
	if r.Acks != 0 && r.Acks != 1 && r.Acks != -1 {
		return codeInvalidRequiredAcks, fmt.Sprintf("acks %d: want 0, 1 or -1", r.Acks)
	}
	if isInternal(topic) {
		return codeInvalidTopic, "the broker's internal topics are written by the broker only"
	}
	part, code := b.topics.partition(topic, p.Partition, true)
	if code != codeNone {
		return code, ""
	}
	*partOut = part
	batches, rs, err := decodeProduce(p.Records, (*recs)[:0], maxDecompressed)
	*recs = rs
	if err != nil {
		b.log.Warn("weir broker: refused a produced batch", "topic", topic, "partition", p.Partition, "err", err)
		switch {
		case errors.Is(err, errUnsupportedMagic):
			return codeUnsupportedForMessageFmt, err.Error()
		case errors.Is(err, errUnsupportedCompression):
			return codeUnsupportedForMessageFmt, err.Error()
		default:
			return codeCorruptMessage, err.Error()
		}
	}
	first := int64(-1)
	for i := range batches {
		pb := &batches[i]
		if pb.Control {
			return codeInvalidRecord, "control batches are written by the broker, not by producers"
		}
		if pb.Transactional {
			if code, msg := b.txns.checkProduce(r.TransactionID, pb, part.key); code != codeNone {
				return code, msg
			}
			off, code := b.txns.stage(*r.TransactionID, pb, part)
			if code != codeNone {
				return code, ""
			}
			if first < 0 {
				first = off
			}
			continue
		}
		off, d, code, err := part.appendBatch(pb, g)
		if d.w != nil {
			*ds = append(*ds, d)
		}
		if err != nil {
			b.log.Error("weir broker: append", "topic", topic, "partition", p.Partition, "err", err)
			return code, err.Error()
		}
		if code != codeNone {
			return code, ""
		}
		if first < 0 {
			first = off
		}
	}
	rp.BaseOffset = first
	if earliest, _, err := part.offsets(); err == nil {
		rp.LogStartOffset = earliest
	}
	return codeNone, ""
}

func (b *Broker) initProducerID(r *kmsg.InitProducerIDRequest) kmsg.Response {
	if r.TransactionalID != nil {
		return b.txns.initProducerID(r)
	}
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	if r.ProducerID >= 0 {
		// KIP-360: an idempotent producer bumping its epoch after an
		// error keeps its id.
		if r.ProducerEpoch == 32767 {
			pid, err := b.pids.next()
			if err != nil {
				resp.ErrorCode = codeKafkaStorageError
				return resp
			}
			resp.ProducerID, resp.ProducerEpoch = pid, 0
			return resp
		}
		resp.ProducerID, resp.ProducerEpoch = r.ProducerID, r.ProducerEpoch+1
		return resp
	}
	pid, err := b.pids.next()
	if err != nil {
		b.log.Error("weir broker: allocate a producer id", "err", err)
		resp.ErrorCode = codeKafkaStorageError
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = pid, 0
	return resp
}

// pidAllocator hands out producer ids that are never reused, across
// restarts too: it reserves blocks of ids in a file, fsynced before the
// first id of a block is given out (as Kafka's controller allocates
// blocks of producer ids).
type pidAllocator struct {
	mu          sync.Mutex
	path        string
	nextID, end int64
}

const pidBlock = 1000

func openPIDs(dir string) (*pidAllocator, error) {
	a := &pidAllocator{path: filepath.Join(dir, "producer-ids")}
	b, err := os.ReadFile(a.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("broker: %w", err)
	case len(b) != 8:
		return nil, fmt.Errorf("broker: %s: %d bytes, want 8 (the end of the last block of producer ids)", a.path, len(b))
	default:
		a.nextID = int64(binary.BigEndian.Uint64(b))
		a.end = a.nextID
	}
	return a, nil
}

func (a *pidAllocator) next() (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.nextID == a.end {
		end := a.end + pidBlock
		tmp := a.path + ".tmp"
		f, err := os.Create(tmp)
		if err != nil {
			return 0, err
		}
		_, err = f.Write(binary.BigEndian.AppendUint64(nil, uint64(end)))
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, a.path)
		}
		if err != nil {
			return 0, fmt.Errorf("reserve producer ids: %w", err)
		}
		syncDir(filepath.Dir(a.path))
		a.end = end
	}
	id := a.nextID
	a.nextID++
	return id, nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

func newProduceResponsePartition(p int32) kmsg.ProduceResponseTopicPartition {
	rp := kmsg.NewProduceResponseTopicPartition()
	rp.Partition = p
	rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
	return rp
}
