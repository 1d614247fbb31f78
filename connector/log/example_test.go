package wlog_test

import (
	"context"
	"fmt"
	"io"
	"os"

	wlog "github.com/weirstream/weir/connector/log"
)

func Example() {
	dir, _ := os.MkdirTemp("", "wlog")
	defer os.RemoveAll(dir)
	topic, err := wlog.CreateTopic(dir, "clicks", wlog.TopicConfig{Partitions: 1})
	if err != nil {
		panic(err)
	}
	w, err := topic.OpenWriter(0)
	if err != nil {
		panic(err)
	}
	first, _ := w.Append([]wlog.Record{
		{Key: []byte("ad1"), Value: []byte("click 1")},
		{Key: []byte("ad2"), Value: []byte("click 2")},
	})
	w.Close()
	fmt.Println("first offset", first)

	r, err := topic.OpenReader(0, wlog.AtOffset(1))
	if err != nil {
		panic(err)
	}
	defer r.Close()
	for {
		recs, err := r.Read(context.Background(), 100)
		if err == io.EOF {
			break
		}
		for _, rec := range recs {
			fmt.Println(rec.Offset, string(rec.Key), string(rec.Value))
		}
	}
	// Output:
	// first offset 0
	// 1 ad2 click 2
}
