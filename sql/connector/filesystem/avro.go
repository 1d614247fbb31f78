package filesystem

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/internal/s3fs"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/format/avro"
	"github.com/weirstream/weir/sql/types"
)

// 'format' = 'avro' on the filesystem connector is Flink's bulk format of
// Avro object-container files (sql/format/avro's OCFWriter and
// OCFReader): the sink writes a part file per checkpoint (and partition
// and subtask) through connector/file's Bulk, named part-...avro; the
// source reads each file as a split, resolving the file's writer schema
// against the table's, and checkpoints the offset of the block it is in
// and the records of the block read.

func avroOptions(o *connector.Options, sink bool) avro.FileOptions {
	return avro.ReadFileOptions(&format.Scoped{O: o, Prefix: "avro."}, sink)
}

// createAvroSource is CreateSource for 'format' = 'avro'.
func createAvroSource(t *connector.Table, o *connector.Options, path string, part *partitioning) (*connector.Source, error) {
	opt := avroOptions(o, false)
	if err := o.Err(); err != nil {
		return nil, err
	}
	cols := part.dataSchema(t.Schema)
	s, err := avro.FileSchema(cols, opt)
	if err != nil {
		return nil, fmt.Errorf("table '%s': 'format' = 'avro': %w", t.Name, err)
	}
	if err := checkPath(t, path); err != nil {
		return nil, err
	}
	src := &avroSource{table: t.Name, path: path, schema: t.Schema, part: part, decs: avro.NewFileDecoders(cols, s)}
	return &connector.Source{Source: src, Bounded: true, Changelog: types.InsertOnly, Options: t.Settings.SourceOptions()}, nil
}

// createAvroSink is CreateSink for 'format' = 'avro'.
func createAvroSink(t *connector.Table, o *connector.Options, path string, roll int64, more ...file.SinkOption) (*connector.Sink, error) {
	opt := avroOptions(o, true)
	part := partitionOptions(t, o)
	if err := o.Err(); err != nil {
		return nil, err
	}
	if err := checkSinkPath(t, path); err != nil {
		return nil, err
	}
	// the schema is checked now: a column without a mapping fails the
	// statement, not the job
	cols := part.dataSchema(t.Schema)
	s, err := avro.FileSchema(cols, opt)
	if err != nil {
		return nil, fmt.Errorf("table '%s': 'format' = 'avro': %w", t.Name, err)
	}
	enc, err := avro.NewRowEncoder(s, cols)
	if err != nil {
		return nil, fmt.Errorf("table '%s': 'format' = 'avro': %w", t.Name, err)
	}
	var data []int // nil: every column
	if part != nil {
		data = part.data
	}
	sopts := []file.SinkOption{
		file.Bulk(file.BulkFactory[types.Row](func(w io.Writer, _ string) (file.BulkWriter[types.Row], error) {
			ow, err := avro.NewOCFWriter(w, enc, opt.Codec)
			if err != nil {
				return nil, err
			}
			return &avroWriter{w: ow, data: data, vals: make([]types.Value, len(data))}, nil
		})),
		file.Suffix(".avro"),
		file.RollSize(roll),
	}
	sopts = append(sopts, more...)
	if part != nil {
		sopts = append(sopts, file.PartitionBy(part.dir))
		sopts = append(sopts, part.commit...)
	}
	sink := file.ExactlyOnce[types.Row](path, sopts...)
	return &connector.Sink{Sink: sink, Accepts: types.InsertOnly, ExactlyOnce: true}, nil
}

// avroWriter is the BulkWriter of an Avro part file.
type avroWriter struct {
	w    *avro.OCFWriter
	data []int // the columns written (a partitioned table's), nil: all
	vals []types.Value
}

func (w *avroWriter) Write(r types.Row) error {
	if w.data == nil {
		return w.w.Write(r.Values)
	}
	// the partition columns are in the directory names only
	for i, c := range w.data {
		w.vals[i] = r.Values[c]
	}
	err := w.w.Write(w.vals)
	clear(w.vals)
	return err
}

func (w *avroWriter) Finish() error { return w.w.Close() }

// avroSource reads a table's Avro object-container files, a split each.
type avroSource struct {
	table  string
	path   string
	schema types.Schema
	part   *partitioning // nil: not partitioned
	decs   *avro.FileDecoders
}

var _ weir.RestorableSource[types.Row] = (*avroSource)(nil)

// Splits implements weir.Source: the files.
func (s *avroSource) Splits(context.Context) ([]weir.Split, error) {
	return listSplits(s.table, s.path)
}

// Open implements weir.Source.
func (s *avroSource) Open(_ context.Context, sp weir.Split) (weir.SplitReader[types.Row], error) {
	return s.open(sp.ID(), 0, 0)
}

// OpenAt implements weir.RestorableSource: the position is the offset of
// a block and the records of it read.
func (s *avroSource) OpenAt(_ context.Context, sp weir.Split, b []byte) (weir.SplitReader[types.Row], error) {
	if len(b) < 3 || b[0] != 3 {
		return nil, fmt.Errorf("table '%s': %s: invalid checkpointed position (%d bytes)", s.table, sp.ID(), len(b))
	}
	block, k := binary.Uvarint(b[1:])
	if k <= 0 {
		return nil, fmt.Errorf("table '%s': %s: invalid checkpointed position", s.table, sp.ID())
	}
	taken, j := binary.Uvarint(b[1+k:])
	if j <= 0 {
		return nil, fmt.Errorf("table '%s': %s: invalid checkpointed position", s.table, sp.ID())
	}
	return s.open(sp.ID(), int64(block), int64(taken))
}

func (s *avroSource) open(path string, block, taken int64) (_ *avroReader, err error) {
	fail := func(err error) error { return fmt.Errorf("table '%s': avro file %s: %w", s.table, path, err) }
	var f io.ReadCloser
	var obj *s3fs.FS
	if s3fs.IsURL(path) {
		if obj, err = s3fs.FromEnv(); err != nil {
			return nil, fail(err)
		}
		f, err = obj.OpenFrom(path, 0)
	} else {
		f, err = os.Open(path)
	}
	if err != nil {
		return nil, fail(err)
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	or, err := s.decs.Open(f)
	if err != nil {
		return nil, fail(err)
	}
	if block > 0 {
		// Restore: read the file from the block's offset on.
		if obj != nil {
			f.Close()
			if f, err = obj.OpenFrom(path, block); err != nil {
				return nil, fail(err)
			}
		} else if _, err = f.(*os.File).Seek(block, io.SeekStart); err != nil {
			return nil, fail(err)
		}
		if err = or.Restore(f, block, taken); err != nil {
			return nil, fail(fmt.Errorf("restoring the checkpointed position: %w", err))
		}
	}
	if s.part != nil {
		vs, perr := s.part.values(s.path, path, s.schema)
		if perr != nil {
			err = fmt.Errorf("table '%s': %w", s.table, perr)
			return nil, err
		}
		or.Widen(len(s.schema), s.part.data, s.part.keys, vs)
	}
	return &avroReader{table: s.table, path: path, f: f, r: or}, nil
}

type avroReader struct {
	table, path string
	f           io.Closer
	r           *avro.OCFReader
}

var _ weir.CheckpointedReader[types.Row] = (*avroReader)(nil)

// Read implements weir.SplitReader.
func (r *avroReader) Read(ctx context.Context, dst []types.Row) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	n, err := r.r.Read(dst)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("table '%s': avro file %s: %w", r.table, r.path, err)
	}
	return n, err
}

// Position implements weir.CheckpointedReader.
func (r *avroReader) Position() ([]byte, error) {
	block, taken := r.r.Position()
	b := binary.AppendUvarint([]byte{3}, uint64(block))
	return binary.AppendUvarint(b, uint64(taken)), nil
}

// Close implements weir.SplitReader.
func (r *avroReader) Close() error {
	r.r.Close()
	return r.f.Close()
}
