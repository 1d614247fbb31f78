package avro_test

import (
	"testing"

	"github.com/weirstream/weir/format/avro"
)

type benchRec struct {
	ID       int64   `avro:"id"`
	UserID   int64   `avro:"user_id"`
	Name     string  `avro:"name"`
	Email    string  `avro:"email"`
	Price    float64 `avro:"price"`
	Qty      int32   `avro:"qty"`
	Active   bool    `avro:"active"`
	TS       int64   `avro:"ts"`
	Category string  `avro:"category"`
	Score    float32 `avro:"score"`
}

const benchSchema = `{"type":"record","name":"r","fields":[
	{"name":"id","type":"long"},{"name":"user_id","type":"long"},{"name":"name","type":"string"},
	{"name":"email","type":"string"},{"name":"price","type":"double"},{"name":"qty","type":"int"},
	{"name":"active","type":"boolean"},{"name":"ts","type":"long"},{"name":"category","type":"string"},
	{"name":"score","type":"float"}]}`

var benchValue = benchRec{ID: 123456789, UserID: 42, Name: "Alice Example", Email: "alice@example.com", Price: 19.99,
	Qty: 3, Active: true, TS: 1_700_000_000_123, Category: "books", Score: 4.5}

// go test -run - -bench . -benchmem -cpu 1 ./format/avro
func BenchmarkCodecDecode(b *testing.B) {
	c, err := avro.NewCodec[benchRec](benchSchema)
	if err != nil {
		b.Fatal(err)
	}
	data, err := c.Encode(benchValue)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for range b.N {
		if _, err := c.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkCodecEncode(b *testing.B) {
	c, err := avro.NewCodec[benchRec](benchSchema)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for range b.N {
		if _, err := c.Encode(benchValue); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
