package kafka

import (
	"context"

	"github.com/weirstream/weir"
)

// FlushWriter waits until what w was given reached the brokers (tests
// simulate a crash after it).
func FlushWriter[T any](ctx context.Context, w weir.SinkWriter[T]) error {
	return w.(*writer[T]).cl.Flush(ctx)
}
