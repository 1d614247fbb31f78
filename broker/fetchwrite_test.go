package broker

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchAnswerEncoding: the writev layout of a fetch answer has the
// bytes kmsg encodes, in every version served, and it declines answers
// with fields it does not write.
func TestFetchAnswerEncoding(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var fa fetchAnswer
	for v := int16(4); v <= 12; v++ {
		for trial := range 20 {
			r := kmsg.NewPtrFetchResponse()
			r.Version = v
			r.ThrottleMillis, r.ErrorCode, r.SessionID = rng.Int32N(100), int16(rng.IntN(3)), rng.Int32()
			for ti := range rng.IntN(4) {
				rt := kmsg.NewFetchResponseTopic()
				rt.Topic = fmt.Sprintf("topic-%d-%d", ti, rng.IntN(1000))
				for pi := range rng.IntN(5) {
					rp := kmsg.NewFetchResponseTopicPartition()
					rp.Partition, rp.ErrorCode = int32(pi), int16(rng.IntN(2))
					rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = rng.Int64N(1e9), rng.Int64N(1e9), rng.Int64N(1e6)
					switch rng.IntN(3) {
					case 0:
						rp.RecordBatches = nil
					case 1:
						rp.RecordBatches = []byte{}
					default:
						rp.RecordBatches = make([]byte, rng.IntN(300))
						for i := range rp.RecordBatches {
							rp.RecordBatches[i] = byte(rng.Uint32())
						}
					}
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
			corr := rng.Int32()
			flexHeader := v >= 12
			want := binary.BigEndian.AppendUint32(nil, 0)
			want = binary.BigEndian.AppendUint32(want, uint32(corr))
			if flexHeader {
				want = append(want, 0)
			}
			want = r.AppendTo(want)
			binary.BigEndian.PutUint32(want, uint32(len(want)-4))
			if !fa.encode(r, corr, flexHeader) {
				t.Fatalf("v%d: declined", v)
			}
			if got := bytes.Join(fa.bufs, nil); !bytes.Equal(got, want) {
				t.Fatalf("v%d trial %d: %d bytes differ from kmsg's %d:\n%x\n%x", v, trial, len(got), len(want), got, want)
			}
			// Written through a connection, the same bytes.
			c1, c2 := net.Pipe()
			done := make(chan []byte)
			go func() {
				buf := make([]byte, len(want))
				n := 0
				for n < len(buf) {
					m, err := c2.Read(buf[n:])
					if err != nil {
						break
					}
					n += m
				}
				done <- buf[:n]
			}()
			if err := fa.writeTo(c1); err != nil {
				t.Fatal(err)
			}
			if got := <-done; !bytes.Equal(got, want) {
				t.Fatalf("v%d: written bytes differ", v)
			}
			c1.Close()
			c2.Close()
		}
	}
	r := kmsg.NewPtrFetchResponse()
	r.Version = 11
	rt := kmsg.NewFetchResponseTopic()
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 1}}
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	if fa.encode(r, 1, false) {
		t.Fatal("an answer with aborted transactions laid out")
	}
}
