package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "github.com/weirstream/weir/connector/log"
	"github.com/weirstream/weir/internal/testing/poll"
)

// streamTestBatch is a Kafka batch of n records of size bytes of random
// values (the first byte of each is tag, the next its index).
func streamTestBatch(rng *rand.Rand, tag byte, n, size int) ([]byte, [][]byte) {
	recs := make([]wlog.Record, n)
	vals := make([][]byte, n)
	for i := range recs {
		v := make([]byte, size)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		v[0], v[1] = tag, byte(i)
		vals[i] = v
		recs[i] = wlog.Record{Timestamp: 1000 + int64(i), Value: v}
	}
	raw := kbTestKmsgRecords(recs, 1000)
	rb := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(n - 1), FirstTimestamp: 1000,
		MaxTimestamp: 1000 + int64(n-1), ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(n), Records: raw, Length: int32(49 + len(raw))}
	return kbTestReseal(rb.AppendTo(nil)), vals
}

// segmentBytes is the size of partition p of topic's first segment in
// dir (0 if it has none yet).
func segmentBytes(dir, topic string, p int) int64 {
	fi, err := os.Stat(filepath.Join(dir, topic, fmt.Sprint(p), fmt.Sprintf("%020d.log", 0)))
	if err != nil {
		return 0
	}
	return fi.Size()
}

// TestProduceStreamsLargeRequests: a produce request larger than
// streamProduceMin has its partitions appended as they arrive, before
// the rest of the request has (the first partition's segment grows while
// the test holds back the rest), and published only when the request is
// answered (its records are not visible to a fetch before); every record
// is in the log once, in every produce version the broker serves (the
// framing differs from version 9 on).
func TestProduceStreamsLargeRequests(t *testing.T) {
	for _, version := range []int16{3, 7, 8, 9, 11} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			dir := t.TempDir()
			b := startBroker(t, dir)
			defer b.Close()
			cl := newClient(t, b)
			createTopic(t, cl, "a", 3, nil)
			createTopic(t, cl, "b", 2, nil)
			rng := rand.New(rand.NewPCG(uint64(version), 1))
			req := kmsg.NewPtrProduceRequest()
			req.SetVersion(version)
			req.Acks, req.TimeoutMillis = -1, 10000
			want := map[string][][]byte{}
			var firstRecords []byte
			for ti, topic := range []string{"a", "b"} {
				rt := kmsg.NewProduceRequestTopic()
				rt.Topic = topic
				for p := range 3 - ti {
					n := 100 + 20*p
					batch, vals := streamTestBatch(rng, byte(10*ti+p), n, 1500)
					if firstRecords == nil {
						firstRecords = batch
					}
					rp := kmsg.NewProduceRequestTopicPartition()
					rp.Partition, rp.Records = int32(p), batch
					rt.Partitions = append(rt.Partitions, rp)
					want[fmt.Sprintf("%s/%d", topic, p)] = vals
				}
				req.Topics = append(req.Topics, rt)
			}
			wire := kmsg.NewRequestFormatter(kmsg.FormatterClientID("stream-test")).AppendRequest(nil, req, 7)
			if len(wire) < streamProduceMin {
				t.Fatalf("request of %d bytes: want one that streams (%d)", len(wire), streamProduceMin)
			}
			// Hold back what follows the first partition (its records,
			// and from version 9 its tagged fields' count).
			split := bytes.Index(wire, firstRecords) + len(firstRecords)
			if req.IsFlexible() {
				split++
			}
			c, err := net.Dial("tcp", b.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write(wire[:split]); err != nil {
				t.Fatal(err)
			}
			if !poll.Poll(30*time.Second, func() bool { return segmentBytes(dir, "a", 0) >= int64(len(firstRecords)) }) {
				t.Fatalf("a/0's segment has %d bytes while the rest of the request is held back: want its batch (%d bytes) appended already",
					segmentBytes(dir, "a", 0), len(firstRecords))
			}
			// Appended, not yet published: a fetch's high watermark is 0.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			lo := kmsg.NewPtrListOffsetsRequest()
			lt := kmsg.NewListOffsetsRequestTopic()
			lt.Topic = "a"
			lp := kmsg.NewListOffsetsRequestTopicPartition()
			lp.Partition, lp.Timestamp = 0, -1
			lt.Partitions = append(lt.Partitions, lp)
			lo.Topics = append(lo.Topics, lt)
			lr, err := lo.RequestWith(ctx, cl)
			if err != nil || lr.Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("list offsets: %v %+v", err, lr)
			}
			if got := lr.Topics[0].Partitions[0].Offset; got != 0 {
				t.Fatalf("a/0's latest offset is %d before the request is answered: want 0 (published only when durable and answered)", got)
			}
			if _, err := c.Write(wire[split:]); err != nil {
				t.Fatal(err)
			}
			resp := readProduceResponse(t, c, version)
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if rp.ErrorCode != 0 || rp.BaseOffset != 0 {
						t.Fatalf("%s/%d: code %d base offset %d, want 0 and 0", rt.Topic, rp.Partition, rp.ErrorCode, rp.BaseOffset)
					}
				}
			}
			for key, vals := range want {
				var topic string
				var p int32
				fmt.Sscanf(key, "%1s/%d", &topic, &p)
				part, _ := b.topics.partition(topic, p, false)
				if _, next, err := part.offsets(); err != nil || next != int64(len(vals)) {
					t.Fatalf("%s ends at %d (%v), want %d: every record once", key, next, err, len(vals))
				}
			}
			got := map[string][][]byte{}
			for _, topic := range []string{"a", "b"} {
				n := 0
				for key, vals := range want {
					if key[0] == topic[0] {
						n += len(vals)
					}
				}
				for _, r := range consumeAll(t, b, topic, n, kgo.FetchMaxBytes(64<<20)) {
					key := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
					got[key] = append(got[key], r.Value)
				}
			}
			for key, vals := range want {
				if len(got[key]) != len(vals) {
					t.Fatalf("%s: consumed %d records, want %d", key, len(got[key]), len(vals))
				}
				for i := range vals {
					if !bytes.Equal(got[key][i], vals[i]) {
						t.Fatalf("%s: record %d differs", key, i)
					}
				}
			}
		})
	}
}

// TestProduceStreamRefusedRequest: a large produce request whose end is
// malformed closes the connection (as any malformed request does); the
// partitions it streamed before are in the log and published, as an
// earlier request's would be (the producer, never answered, retries).
func TestProduceStreamRefusedRequest(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir)
	defer b.Close()
	cl := newClient(t, b)
	createTopic(t, cl, "a", 2, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(11)
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "a"
	first, _ := streamTestBatch(rng, 1, 400, 1500)
	second, _ := streamTestBatch(rng, 2, 100, 1500)
	for p, batch := range [][]byte{first, second} {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = int32(p), batch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	wire := kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)
	// The second partition's records claim more bytes than the request
	// has: kmsg's parse refuses it.
	i := bytes.Index(wire, second)
	wire = append(wire[:i-3], 0xff, 0xff, 0xff, 0x0f)
	binary.BigEndian.PutUint32(wire, uint32(len(wire)-4))
	c, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(wire); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := c.Read(make([]byte, 8)); err == nil {
		t.Fatalf("read %d bytes of an answer to a malformed request: want the connection closed", n)
	}
	part, _ := b.topics.partition("a", 0, false)
	if !poll.Poll(30*time.Second, func() bool { _, next, err := part.offsets(); return err == nil && next == 400 }) {
		_, next, err := part.offsets()
		t.Fatalf("a/0 ends at %d (%v): want the 400 records streamed before the malformed part, published", next, err)
	}
}

// readProduceResponse reads one produce answer of version from c.
func readProduceResponse(t *testing.T, c net.Conn, version int16) *kmsg.ProduceResponse {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		t.Fatal(err)
	}
	body = body[4:] // correlation id
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(version)
	if resp.IsFlexible() {
		body = body[1:] // no tagged fields in the header
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	return resp
}
