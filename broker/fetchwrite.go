package broker

import (
	"encoding/binary"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchAnswer is a Fetch answer laid out for writev(2): the fields are
// encoded into meta, and the partitions' record batches, which are most of
// the answer, are written from the cursors' buffers where they are, not
// copied into one buffer first (net.Buffers).
type fetchAnswer struct {
	meta []byte
	// cuts are the positions in meta after which the record batches
	// recs[i] go.
	cuts []int
	recs [][]byte
	bufs net.Buffers
}

// encode lays out the answer to the request corr with the response header
// (v1, with its empty tagged fields, if flexibleHeader) and r. It reports
// false, and lays out nothing, for an answer with fields this broker never
// sets (aborted transactions, tagged fields), which kmsg encodes instead.
func (a *fetchAnswer) encode(r *kmsg.FetchResponse, corr int32, flexibleHeader bool) bool {
	v := r.Version
	if v < 4 || v > 12 || len(r.Brokers) > 0 || r.UnknownTags.Len() > 0 {
		return false
	}
	flex := v >= 12
	for i := range r.Topics {
		t := &r.Topics[i]
		if t.UnknownTags.Len() > 0 {
			return false
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if p.AbortedTransactions != nil || p.UnknownTags.Len() > 0 ||
				p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1 || p.DivergingEpoch.UnknownTags.Len() > 0 ||
				p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1 || p.CurrentLeader.UnknownTags.Len() > 0 ||
				p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1 || p.SnapshotID.UnknownTags.Len() > 0 {
				return false
			}
		}
	}
	m := append(a.meta[:0], 0, 0, 0, 0) // the size, set below
	m = binary.BigEndian.AppendUint32(m, uint32(corr))
	if flexibleHeader {
		m = append(m, 0)
	}
	a.cuts, a.recs = a.cuts[:0], a.recs[:0]
	total := 0
	m = binary.BigEndian.AppendUint32(m, uint32(r.ThrottleMillis))
	if v >= 7 {
		m = binary.BigEndian.AppendUint16(m, uint16(r.ErrorCode))
		m = binary.BigEndian.AppendUint32(m, uint32(r.SessionID))
	}
	m = appendArrayLen(m, len(r.Topics), flex)
	for i := range r.Topics {
		t := &r.Topics[i]
		if flex {
			m = binary.AppendUvarint(m, uint64(len(t.Topic))+1)
		} else {
			m = binary.BigEndian.AppendUint16(m, uint16(len(t.Topic)))
		}
		m = append(m, t.Topic...)
		m = appendArrayLen(m, len(t.Partitions), flex)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			m = binary.BigEndian.AppendUint32(m, uint32(p.Partition))
			m = binary.BigEndian.AppendUint16(m, uint16(p.ErrorCode))
			m = binary.BigEndian.AppendUint64(m, uint64(p.HighWatermark))
			m = binary.BigEndian.AppendUint64(m, uint64(p.LastStableOffset))
			if v >= 5 {
				m = binary.BigEndian.AppendUint64(m, uint64(p.LogStartOffset))
			}
			// Aborted transactions: null.
			if flex {
				m = append(m, 0)
			} else {
				m = binary.BigEndian.AppendUint32(m, 0xffffffff)
			}
			if v >= 11 {
				m = binary.BigEndian.AppendUint32(m, uint32(p.PreferredReadReplica))
			}
			switch {
			case p.RecordBatches == nil && flex:
				m = append(m, 0)
			case p.RecordBatches == nil:
				m = binary.BigEndian.AppendUint32(m, 0xffffffff)
			case flex:
				m = binary.AppendUvarint(m, uint64(len(p.RecordBatches))+1)
			default:
				m = binary.BigEndian.AppendUint32(m, uint32(len(p.RecordBatches)))
			}
			if len(p.RecordBatches) > 0 {
				a.cuts = append(a.cuts, len(m))
				a.recs = append(a.recs, p.RecordBatches)
				total += len(p.RecordBatches)
			}
			if flex {
				m = append(m, 0) // the partition's tagged fields
			}
		}
		if flex {
			m = append(m, 0) // the topic's tagged fields
		}
	}
	if flex {
		m = append(m, 0) // the answer's tagged fields
	}
	binary.BigEndian.PutUint32(m, uint32(len(m)+total-4))
	a.meta = m
	a.bufs = a.bufs[:0]
	at := 0
	for i, cut := range a.cuts {
		if cut > at {
			a.bufs = append(a.bufs, m[at:cut])
		}
		a.bufs = append(a.bufs, a.recs[i])
		at = cut
	}
	if at < len(m) {
		a.bufs = append(a.bufs, m[at:])
	}
	return true
}

// writeTo writes the answer laid out by encode, with one writev(2) where
// w is a TCP connection.
func (a *fetchAnswer) writeTo(w net.Conn) error {
	bufs := a.bufs // WriteTo consumes the slice, not its array
	_, err := bufs.WriteTo(w)
	clear(a.recs) // do not keep the cursors' buffers alive
	clear(a.bufs)
	return err
}

// appendArrayLen appends an array's length: an int32, or in a flexible
// version an unsigned varint of the length plus one.
func appendArrayLen(dst []byte, n int, flex bool) []byte {
	if flex {
		return binary.AppendUvarint(dst, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(dst, uint32(n))
}
