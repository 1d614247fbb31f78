package wlog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ProducerSeq is the sequence number of a batch appended by an identified
// producer (AppendAs): ordered by Epoch, then Checkpoint, then Index. The
// exactly-once Sink fills it with its epoch, checkpoint id and batch
// index; other producers (weir's Kafka-protocol broker) may give the
// fields meanings of their own, as long as they keep the order.
type ProducerSeq struct {
	Epoch      uint64
	Checkpoint int64
	Index      uint32
}

// MaxProducerName is the longest producer id AppendAs takes.
const MaxProducerName = 255

// AppendAs is Append for a batch that carries producer's id and seq in its
// producer section (see record.go), so that ScanProducers finds it again
// after a restart. Readers see the records as any others.
func (w *Writer) AppendAs(recs []Record, producer string, seq ProducerSeq) (int64, error) {
	if producer == "" || len(producer) > MaxProducerName {
		return 0, fmt.Errorf("wlog: producer id of %d bytes: want 1 to %d", len(producer), MaxProducerName)
	}
	prod := appendProducerSection(nil, producer, prodSeq{epoch: seq.Epoch, ckpt: seq.Checkpoint, idx: seq.Index})
	return w.appendRecords(recs, prod)
}

// ScanProducers calls fn, in offset order, for every batch of partition p
// that carries a producer section (AppendAs, or the exactly-once Sink's
// commits), with the batch's first and last offsets. producer aliases a
// buffer that the next call reuses. It reads only complete batches whose
// CRC matches; damage that valid data follows is an error (a
// *CorruptError), as for a writer's recovery.
func (t *Topic) ScanProducers(p int, fn func(producer []byte, seq ProducerSeq, first, last int64)) error {
	if err := t.checkPartition(p); err != nil {
		return err
	}
	dir := t.partDir(p)
	bases, err := listSegments(dir)
	if err != nil {
		return err
	}
	var buf []byte
	next := int64(0)
	for _, base := range bases {
		f, err := os.Open(logPath(dir, base))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted by retention meanwhile
		}
		if err != nil {
			return err
		}
		next = max(next, base)
		for pos := int64(0); ; {
			h, b, err := batchAt(f, pos, buf)
			buf = b
			if err != nil {
				derr := damageError(f, dir, base, pos, next, err)
				f.Close()
				if derr != nil {
					return derr
				}
				break
			}
			if _, prod, seq, err := producerSection(b); err == nil && prod != nil {
				fn(prod, ProducerSeq{Epoch: seq.epoch, Checkpoint: seq.ckpt, Index: seq.idx}, h.baseOffset, h.lastOffset)
			}
			pos += h.size()
			next = h.lastOffset + 1
		}
	}
	return nil
}

// Offsets returns partition p's earliest offset (the base of its oldest
// segment) and the offset the next record will get, read from the files
// (cheap: the scan starts at the last index entry). It takes no lock.
func (t *Topic) Offsets(p int) (earliest, next int64, err error) {
	if err := t.checkPartition(p); err != nil {
		return 0, 0, err
	}
	dir := t.partDir(p)
	bases, err := listSegments(dir)
	if err != nil || len(bases) == 0 {
		return 0, 0, err
	}
	res, err := tailOf(t.Name, p, dir, bases[len(bases)-1])
	if err != nil {
		return 0, 0, err
	}
	return bases[0], res.nextOffset, nil
}
