package wlog

import (
	"context"
	"io"
	"testing"
)

const benchBatch = 100

func benchRecords() []Record {
	recs := make([]Record, benchBatch)
	for i := range recs {
		// 100 bytes of key and value.
		recs[i] = Record{Timestamp: 1, Key: make([]byte, 16), Value: make([]byte, 84)}
	}
	return recs
}

func report(b *testing.B, records int) {
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(records)/s, "records/s")
	b.ReportMetric(float64(records)*100/s/1e6, "MB/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkAppend appends batches of 100 records of 100 bytes.
func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		name string
		sync SyncPolicy
	}{{"fsync=batch", SyncEveryBatch()}, {"fsync=never", SyncNever()}} {
		b.Run(bc.name, func(b *testing.B) {
			tp := newTopic(b, TopicConfig{})
			w := openWriter(b, tp, WithSync(bc.sync))
			recs := benchRecords()
			n := 0
			for b.Loop() {
				if _, err := w.Append(recs); err != nil {
					b.Fatal(err)
				}
				n += len(recs)
			}
			report(b, n)
		})
	}
}

// BenchmarkRead reads 100-byte records written in batches of 100.
func BenchmarkRead(b *testing.B) {
	tp := newTopic(b, TopicConfig{})
	w := openWriter(b, tp, WithSync(SyncNever()))
	recs := benchRecords()
	const total = 200_000
	for range total / benchBatch {
		if _, err := w.Append(recs); err != nil {
			b.Fatal(err)
		}
	}
	n := 0
	for b.Loop() {
		r, err := tp.OpenReader(0, Earliest())
		if err != nil {
			b.Fatal(err)
		}
		for {
			got, err := r.Read(context.Background(), 500)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n += len(got)
		}
		r.Close()
	}
	report(b, n)
}
