package engine

import (
	"context"

	"github.com/weirstream/weir/internal/codec"
)

// encode and decode are the state codec of operator metadata and state
// files (internal/codec: gob, so user types need exported fields or a
// GobEncoder/BinaryMarshaler, and state files in their binary format).
func encode(v any) ([]byte, error) { return codec.Marshal(v) }

func decode(data []byte, v any) error { return codec.Unmarshal(data, v) }

// noCtx is for Close calls that must run even though the job's context is
// cancelled.
var noCtx = context.Background()
