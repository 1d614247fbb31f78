package rowbuf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

// Decoded is the rows of one record: the record type of the sources of
// connectors that decode record by record inside another connector's
// source (connector/log, connector/kafka), which Flatten turns into a
// source of rows.
type Decoded struct {
	Rows []types.Row
	// Skipped: the record was malformed and the format's options skip it.
	Skipped bool
}

// Decode decodes data with dec into a Decoded: a format.SkipError gives a
// skipped record, another error is returned for the source to report with
// the record's position.
func Decode(dec format.Decoder, data []byte) (Decoded, error) {
	rows, err := dec.Decode(data, nil)
	if err != nil {
		var skip *format.SkipError
		if errors.As(err, &skip) {
			return Decoded{Skipped: true}, nil
		}
		return Decoded{}, err
	}
	return Decoded{Rows: rows}, nil
}

// Flatten returns a source of the rows of src's records. A checkpoint
// between the rows of one record (debezium-json gives two for an update)
// keeps the rows not yet emitted in the position, with src's position
// after the record, so that a restore neither loses nor repeats them.
// Readers pass on bad-record handlers and checkpoint notifications to
// src's readers, and count the records the format skipped.
func Flatten(src weir.RestorableSource[Decoded]) weir.RestorableSource[types.Row] {
	return &flat{src: src}
}

type flat struct {
	src weir.RestorableSource[Decoded]
}

// Unwrap gives the source of records underneath (kafka.Unwrapper: group
// mode looks through f to the Kafka source).
func (f *flat) Unwrap() any { return f.src }

func (f *flat) Splits(ctx context.Context) ([]weir.Split, error) { return f.src.Splits(ctx) }

func (f *flat) Open(ctx context.Context, sp weir.Split) (weir.SplitReader[types.Row], error) {
	r, err := f.src.Open(ctx, sp)
	if err != nil {
		return nil, err
	}
	return newFlatReader(r)
}

func (f *flat) OpenAt(ctx context.Context, sp weir.Split, pos []byte) (weir.SplitReader[types.Row], error) {
	inner, pending, skipped, err := decodeFlatPos(pos)
	if err != nil {
		return nil, fmt.Errorf("split %s: %w", sp.ID(), err)
	}
	r, err := f.src.OpenAt(ctx, sp, inner)
	if err != nil {
		return nil, err
	}
	fr, err := newFlatReader(r)
	if err != nil {
		return nil, err
	}
	fr.pending, fr.skipped = pending, skipped
	return fr, nil
}

func newFlatReader(r weir.SplitReader[Decoded]) (*flatReader, error) {
	cr, ok := r.(weir.CheckpointedReader[Decoded])
	if !ok {
		r.Close()
		return nil, errors.New("rowbuf: the inner reader is not checkpointed")
	}
	return &flatReader{r: cr}, nil
}

// maxRowsPerRecord is the most rows a format decodes from one record:
// debezium-json gives two for an update (-U and +U), the others one. A
// format giving more would still be correct in one process (Position keeps
// the rows over) but not across a commit in group mode.
const maxRowsPerRecord = 2

type flatReader struct {
	r       weir.CheckpointedReader[Decoded]
	recs    []Decoded
	pending []types.Row
	next    int
	skipped int64
	eof     bool
	err     error
}

var (
	_ weir.CheckpointedReader[types.Row] = (*flatReader)(nil)
	_ weir.BadRecordReporter             = (*flatReader)(nil)
	_ weir.SkipCounter                   = (*flatReader)(nil)
	_ weir.CheckpointListener            = (*flatReader)(nil)
)

func (r *flatReader) Read(ctx context.Context, dst []types.Row) (int, error) {
	n := 0
	for n < len(dst) {
		if r.next < len(r.pending) {
			k := copy(dst[n:], r.pending[r.next:])
			clear(r.pending[r.next : r.next+k])
			r.next += k
			n += k
			continue
		}
		r.pending, r.next = r.pending[:0], 0
		if r.err != nil {
			if n > 0 {
				return n, nil
			}
			return 0, r.err
		}
		if r.eof {
			return n, io.EOF
		}
		// A record gives at most maxRowsPerRecord rows. Read only the
		// records whose rows fit whole, so that a Read leaves no row of a
		// record over whenever dst has room for a whole record: group mode
		// (docs/scale-out.md) commits the Kafka offset after the records
		// read, not this reader's Position, and a row left over at that
		// commit would be lost if the process died before the next one.
		if n > 0 && len(dst)-n < maxRowsPerRecord {
			return n, nil
		}
		m := max(1, (len(dst)-n)/maxRowsPerRecord)
		if cap(r.recs) < m {
			r.recs = make([]Decoded, m)
		}
		recs := r.recs[:m]
		k, err := r.r.Read(ctx, recs)
		for i := range recs[:k] {
			if recs[i].Skipped {
				r.skipped++
			} else {
				r.pending = append(r.pending, recs[i].Rows...)
			}
			recs[i] = Decoded{}
		}
		switch {
		case err == io.EOF:
			r.eof = true
		case err != nil:
			r.err = err
		case k == 0:
			// Nothing now (an unbounded split): let the job flush.
			if len(r.pending) == 0 {
				return n, nil
			}
		}
	}
	return n, nil
}

func (r *flatReader) SetBadRecordHandler(h func(raw []byte, position string, err error)) {
	if br, ok := r.r.(weir.BadRecordReporter); ok {
		br.SetBadRecordHandler(h)
	}
}

func (r *flatReader) Skipped() int64 {
	n := r.skipped
	if sc, ok := r.r.(weir.SkipCounter); ok {
		n += sc.Skipped()
	}
	return n
}

func (r *flatReader) NotifyCheckpointComplete(ctx context.Context, id int64, pos []byte) error {
	cl, ok := r.r.(weir.CheckpointListener)
	if !ok {
		return nil
	}
	inner, _, _, err := decodeFlatPos(pos)
	if err != nil {
		return err
	}
	return cl.NotifyCheckpointComplete(ctx, id, inner)
}

// Position: the inner reader's position (after the records read), the
// rows read but not emitted, the count of skipped records.
func (r *flatReader) Position() ([]byte, error) {
	inner, err := r.r.Position()
	if err != nil {
		return nil, err
	}
	b := binary.AppendUvarint([]byte{1}, uint64(len(inner)))
	b = append(b, inner...)
	b = binary.AppendUvarint(b, uint64(r.skipped))
	rest := r.pending[r.next:]
	b = binary.AppendUvarint(b, uint64(len(rest)))
	for _, row := range rest {
		enc, err := row.MarshalBinary()
		if err != nil {
			return nil, err
		}
		b = binary.AppendUvarint(b, uint64(len(enc)))
		b = append(b, enc...)
	}
	return b, nil
}

func decodeFlatPos(b []byte) (inner []byte, pending []types.Row, skipped int64, err error) {
	bad := errors.New("invalid checkpointed position")
	if len(b) < 1 || b[0] != 1 {
		return nil, nil, 0, bad
	}
	b = b[1:]
	l, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < l {
		return nil, nil, 0, bad
	}
	inner, b = b[k:k+int(l)], b[k+int(l):]
	s, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, nil, 0, bad
	}
	b = b[k:]
	cnt, k := binary.Uvarint(b)
	if k <= 0 || cnt > uint64(len(b)) {
		return nil, nil, 0, bad
	}
	b = b[k:]
	for range cnt {
		l, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < l {
			return nil, nil, 0, bad
		}
		var row types.Row
		if err := row.UnmarshalBinary(b[k : k+int(l)]); err != nil {
			return nil, nil, 0, fmt.Errorf("invalid checkpointed position: %w", err)
		}
		pending = append(pending, row)
		b = b[k+int(l):]
	}
	return inner, pending, int64(s), nil
}

func (r *flatReader) Close() error { return r.r.Close() }
