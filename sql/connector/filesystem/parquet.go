package filesystem

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/format/parquet"
	"github.com/weirstream/weir/sql/types"
)

// parquetSource reads a table's Parquet files: each file a split, the
// columns of targets only.
type parquetSource struct {
	table   string
	path    string
	schema  types.Schema
	targets []parquet.Target
	fill    func([]types.Value)
	opts    *parquet.Options
	null    string // 'partition.default-name'
	// readers are the query's filters (prune): row groups and files that
	// none of them admits are not read.
	readers [][]connector.Predicate
}

func newParquetSource(t *connector.Table, path string, opts *parquet.Options, null string) *parquetSource {
	ts := make([]parquet.Target, len(t.Schema))
	for i := range ts {
		ts[i] = parquet.Target{Col: i, Field: -1}
	}
	return &parquetSource{table: t.Name, path: path, schema: t.Schema, targets: ts, opts: opts, null: null}
}

// project implements connector.Source.Project: only the leaf columns of
// paths are decoded.
func (s *parquetSource) project(paths []connector.Path, fill func([]types.Value)) (weir.Source[types.Row], error) {
	p := *s
	p.targets = make([]parquet.Target, len(paths))
	for i, x := range paths {
		p.targets[i] = parquet.Target{Col: x.Col, Field: x.Field}
	}
	p.fill = fill
	return &p, nil
}

// prune implements connector.Source.Prune: Splits leaves out the row
// groups (and files) whose statistics or partition values no reader's
// filter admits.
func (s *parquetSource) prune(src weir.Source[types.Row], readers [][]connector.Predicate) weir.Source[types.Row] {
	ps, ok := src.(*parquetSource)
	if !ok {
		return src
	}
	p := *ps
	p.readers = readers
	return &p
}

var _ weir.RestorableSource[types.Row] = (*parquetSource)(nil)

// pqSplit is a split of a Parquet table: a file, or one row group of a
// file of several (as Flink splits files, so that the subtasks share a
// large file).
type pqSplit struct {
	path string
	rg   int // -1: the whole file
}

func (s pqSplit) ID() string {
	if s.rg < 0 {
		return s.path
	}
	return s.path + "#" + strconv.Itoa(s.rg)
}

// Splits implements weir.Source: it reads the footer of every file.
func (s *parquetSource) Splits(context.Context) ([]weir.Split, error) {
	files, err := listSplits(s.table, s.path)
	if err != nil {
		return nil, err
	}
	var out []weir.Split
	for _, f := range files {
		path := f.ID()
		keep, err := parquet.PruneRowGroups(path, s.partitions(path), s.schema, s.readers, s.opts)
		if err != nil {
			return nil, fmt.Errorf("table '%s': %w", s.table, err)
		}
		if len(keep) <= 1 {
			if len(keep) == 0 || keep[0] {
				out = append(out, pqSplit{path, -1})
			}
			continue
		}
		for g, k := range keep {
			if k {
				out = append(out, pqSplit{path, g})
			}
		}
	}
	return out, nil
}

func asSplit(sp weir.Split) (pqSplit, error) {
	if p, ok := sp.(pqSplit); ok {
		return p, nil
	}
	return pqSplit{}, fmt.Errorf("not a split of a Parquet table: %s", sp.ID())
}

// Open implements weir.Source.
func (s *parquetSource) Open(_ context.Context, sp weir.Split) (weir.SplitReader[types.Row], error) {
	p, err := asSplit(sp)
	if err != nil {
		return nil, err
	}
	return s.open(p, 0)
}

// OpenAt implements weir.RestorableSource: the position is the count of
// rows read.
func (s *parquetSource) OpenAt(_ context.Context, sp weir.Split, b []byte) (weir.SplitReader[types.Row], error) {
	if len(b) < 2 || b[0] != 2 {
		return nil, fmt.Errorf("table '%s': %s: invalid checkpointed position (%d bytes)", s.table, sp.ID(), len(b))
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 {
		return nil, fmt.Errorf("table '%s': %s: invalid checkpointed position", s.table, sp.ID())
	}
	p, err := asSplit(sp)
	if err != nil {
		return nil, err
	}
	return s.open(p, int64(n))
}

// partitions are the partition values of a file of the table, the
// default partition name as parquet.DefaultPartitionName (NULL).
func (s *parquetSource) partitions(path string) map[string]string {
	parts := partitionValues(s.path, path)
	for k, v := range parts {
		if v == s.null {
			parts[k] = parquet.DefaultPartitionName // read as NULL
		}
	}
	return parts
}

func (s *parquetSource) open(sp pqSplit, row int64) (*parquetReader, error) {
	path := sp.path
	parts := s.partitions(path)
	fr, err := parquet.OpenFile(path, parts, s.schema, s.targets, s.opts)
	if err != nil {
		return nil, fmt.Errorf("table '%s': %w", s.table, err)
	}
	if sp.rg >= 0 {
		if err := fr.Restrict(sp.rg, sp.rg+1); err != nil {
			fr.Close()
			return nil, fmt.Errorf("table '%s': %w (it was changed)", s.table, err)
		}
	}
	if row > 0 {
		if row > fr.NumRows() {
			fr.Close()
			return nil, fmt.Errorf("table '%s': %s has %d rows, fewer than the checkpointed position %d: it was changed", s.table, sp.ID(), fr.NumRows(), row)
		}
		if err := fr.SeekToRow(row); err != nil {
			fr.Close()
			return nil, fmt.Errorf("table '%s': %w", s.table, err)
		}
	}
	return &parquetReader{table: s.table, r: fr, fill: s.fill}, nil
}

type parquetReader struct {
	table string
	r     *parquet.FileReader
	fill  func([]types.Value)
}

var _ weir.CheckpointedReader[types.Row] = (*parquetReader)(nil)

// Read implements weir.SplitReader.
func (r *parquetReader) Read(ctx context.Context, dst []types.Row) (int, error) {
	n, err := r.r.Read(ctx, dst)
	if r.fill != nil {
		for i := range dst[:n] {
			r.fill(dst[i].Values)
		}
	}
	if err != nil && err != io.EOF {
		err = fmt.Errorf("table '%s': %w", r.table, err)
	}
	return n, err
}

// Position implements weir.CheckpointedReader.
func (r *parquetReader) Position() ([]byte, error) {
	return binary.AppendUvarint([]byte{2}, uint64(r.r.Pos())), nil
}

// Close implements weir.SplitReader.
func (r *parquetReader) Close() error { return r.r.Close() }

// parquetSink is the sink of a table in Parquet files.
func parquetSink(t *connector.Table, path string, roll int64, opts *parquet.Options, part *partitioning, more ...file.SinkOption) (weir.CommittingSink[types.Row], error) {
	cols := make([]int, len(t.Schema))
	for i := range cols {
		cols[i] = i
	}
	if part != nil {
		cols = part.data
	}
	// the schema is checked now: a column without a mapping fails the
	// statement, not the job
	sub := make(types.Schema, len(cols))
	for i, c := range cols {
		sub[i] = t.Schema[c]
	}
	if _, err := parquet.Schema("weir", sub, opts); err != nil {
		return nil, fmt.Errorf("table '%s': 'format' = 'parquet': %w", t.Name, err)
	}
	sopts := []file.SinkOption{
		file.Bulk(file.BulkFactory[types.Row](func(w io.Writer, _ string) (file.BulkWriter[types.Row], error) {
			return parquet.NewWriter(w, t.Schema, cols, opts)
		})),
		file.Suffix(".parquet"),
		file.RollSize(roll),
	}
	sopts = append(sopts, more...)
	if part != nil {
		sopts = append(sopts, file.PartitionBy(part.dir))
		sopts = append(sopts, part.commit...)
	}
	return file.ExactlyOnce[types.Row](path, sopts...), nil
}
