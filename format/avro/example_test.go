package avro_test

import (
	"fmt"

	"github.com/weirstream/weir/format/avro"
)

type Click struct {
	User string `avro:"user"`
	Page string `avro:"page"`
	Ms   int64  `avro:"ms"`
}

type ClickV2 struct {
	User     string `avro:"user"`
	Page     string `avro:"page"`
	Ms       int64  `avro:"ms"`
	Referrer string `avro:"referrer"`
}

// A producer's newer schema (a field added with a default) read by a job
// that still has the old one, and the other way round.
func Example() {
	v1, err := avro.NewCodec[Click](`{"type":"record","name":"Click","fields":[
		{"name":"user","type":"string"},{"name":"page","type":"string"},{"name":"ms","type":"long"}]}`)
	if err != nil {
		panic(err)
	}
	v2, err := avro.NewCodec[ClickV2](`{"type":"record","name":"Click","fields":[
		{"name":"user","type":"string"},{"name":"page","type":"string"},{"name":"ms","type":"long"},
		{"name":"referrer","type":"string","default":"direct"}]}`)
	if err != nil {
		panic(err)
	}

	data, _ := v2.Encode(ClickV2{User: "ann", Page: "/home", Ms: 42, Referrer: "ad"})
	old, err := avro.NewResolver[Click](v1.Schema()).Decode(v2.Schema(), data)
	fmt.Printf("%+v %v\n", old, err)

	data, _ = v1.Encode(Click{User: "bob", Page: "/cart", Ms: 7})
	newer, err := avro.NewResolver[ClickV2](v2.Schema()).Decode(v1.Schema(), data)
	fmt.Printf("%+v %v\n", newer, err)
	// Output:
	// {User:ann Page:/home Ms:42} <nil>
	// {User:bob Page:/cart Ms:7 Referrer:direct} <nil>
}
