package engine

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/watermark"
)

// What `weir checkpoints inspect` shows of a state file.

// DescribeOperatorState describes the non-keyed part of one state file of a
// checkpoint, for `weir checkpoints inspect`: for a source, each split's
// position and watermark. It returns nil for data it cannot read.
func DescribeOperatorState(data []byte) []string {
	var st opState
	if decode(data, &st) != nil {
		return nil
	}
	var out []string
	for id, raw := range st.Meta {
		var ss splitState
		if decode(raw, &ss) != nil {
			continue
		}
		pos := fmt.Sprintf("%x", ss.Pos)
		var i int64
		if decode(ss.Pos, &i) == nil {
			pos = fmt.Sprint(i)
		}
		if ss.Done {
			pos = "end"
		}
		out = append(out, fmt.Sprintf("split %s at %s (watermark %s)", id, pos, fmtMillis(ss.WM)))
	}
	return out
}

func fmtMillis(ms int64) string {
	switch ms {
	case watermark.Min:
		return "none"
	case watermark.Max:
		return "end of input"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}
