package rowbuf

import (
	"context"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/types"
)

// DropUpdateBefore wraps a two-phase-commit sink so that its writers never
// see -U rows: an upsert sink (upsert-kafka) writes the +U that follows.
func DropUpdateBefore(s weir.CommittingSink[types.Row]) weir.CommittingSink[types.Row] {
	return &dropUB{s: s}
}

type dropUB struct {
	s weir.CommittingSink[types.Row]
}

// Unwrap gives the sink underneath (kafka.Unwrapper: group mode looks
// through d to the Kafka sink).
func (d *dropUB) Unwrap() any { return d.s }

func (d *dropUB) Committer() weir.Committer { return d.s.Committer() }

func (d *dropUB) OpenWriter(ctx context.Context, subtask, parallelism int) (weir.SinkWriter[types.Row], error) {
	w, err := d.s.OpenWriter(ctx, subtask, parallelism)
	if err != nil {
		return nil, err
	}
	return &dropUBWriter{w: w.(weir.CommittingWriter[types.Row])}, nil
}

type dropUBWriter struct {
	w   weir.CommittingWriter[types.Row]
	buf []types.Row
}

func (w *dropUBWriter) Write(ctx context.Context, rows []types.Row) error {
	keep := rows
	for i := range rows {
		if rows[i].Kind == types.UpdateBefore {
			// Copy the others out (the first -U found: rare).
			w.buf = append(w.buf[:0], rows[:i]...)
			for _, r := range rows[i+1:] {
				if r.Kind != types.UpdateBefore {
					w.buf = append(w.buf, r)
				}
			}
			keep = w.buf
			break
		}
	}
	if len(keep) == 0 {
		return nil
	}
	err := w.w.Write(ctx, keep)
	clear(w.buf)
	return err
}

func (w *dropUBWriter) PreCommit(ctx context.Context, id int64) ([]byte, error) {
	return w.w.PreCommit(ctx, id)
}

func (w *dropUBWriter) Recover(ctx context.Context, restoredID int64) error {
	return w.w.Recover(ctx, restoredID)
}

func (w *dropUBWriter) Close(ctx context.Context) error { return w.w.Close(ctx) }
