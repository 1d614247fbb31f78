package parquet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	pq "github.com/parquet-go/parquet-go"

	"github.com/weirstream/weir/internal/s3fs"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

// parsePartition parses a partition directory's value as Flink writes it
// (the default partition name is NULL).
func parsePartition(s string, t types.Type) (types.Value, error) {
	if s == DefaultPartitionName {
		return types.NullValue, nil
	}
	dec, err := format.TextDecoder(t)
	if err != nil {
		return types.Value{}, err
	}
	var v types.Value
	err = dec([]byte(s), &v)
	return v, err
}

// DefaultPartitionName is the directory value of a NULL partition column
// (Flink's 'partition.default-name').
const DefaultPartitionName = "__DEFAULT_PARTITION__"

// FileReader reads the rows of one Parquet file as rows of a table:
// values by name, converted to the table's types, columns the file does
// not hold taken from the file's Hive-style partition directories
// ("dt=2026-12-01/"). Only the leaf columns of the targets are decoded.
type FileReader struct {
	path    string
	f       readAtCloser
	file    *pq.File
	targets []target
	cursors []cursor
	names   []string
	runs    [][]pq.Value
	scratch [][]pq.Value
	flat    bool // every target a flat leaf column (or a constant)

	groups []pq.RowGroup // the row groups read: the file's, or Restrict's
	base   int           // the index in the file of groups[0]
	rg     int           // current row group (in groups)
	row    int64         // rows of the current row group read
	rows   int64         // rows of the current row group
	total  int64         // rows read from the file before the current row group
	err    error
}

type target struct {
	n *rnode      // nil: c
	c types.Value // a partition value, or zero (Col -1)
}

// OpenFile opens the Parquet file at path to read targets of a table of
// schema; partitions are the key=value pairs of the file's partition
// directories (unescaped), the values of columns the file does not hold.
// It checks the file's schema against the table's: a column missing (and
// not a partition directory) or of a type that cannot be read is a
// *SchemaError.
func OpenFile(path string, partitions map[string]string, schema types.Schema, targets []Target, opts *Options) (r *FileReader, err error) {
	// parquet-go panics on some corrupt files (slice bounds of a damaged
	// footer or page): an error naming the file, not a crashed job
	defer func() {
		if p := recover(); p != nil {
			if r != nil {
				r.Close()
			}
			r, err = nil, &ReadError{Path: path, RowGroup: -1, Err: fmt.Errorf("corrupt file: %v", p)}
		}
	}()
	return openFile(path, partitions, schema, targets, opts)
}

func openFile(path string, partitions map[string]string, schema types.Schema, targets []Target, opts *Options) (*FileReader, error) {
	if opts == nil {
		opts = DefaultOptions()
	}
	f, size, fopts, err := open(path)
	if err != nil {
		return nil, err
	}
	done := false
	defer func() {
		if !done { // an error, or a panic of parquet-go
			f.Close()
		}
	}()
	pf, err := pq.OpenFile(f, size, append(fopts, pq.SkipBloomFilters(true))...)
	if err != nil {
		return nil, &ReadError{Path: path, RowGroup: -1, Err: fmt.Errorf("not a valid Parquet file (%d bytes): %w", size, err)}
	}
	r := &FileReader{path: path, f: f, file: pf, flat: true, groups: pf.RowGroups()}
	p := &planner{file: pf.Schema(), opts: opts}
	for _, tg := range targets {
		if tg.Col < 0 {
			r.targets = append(r.targets, target{})
			continue
		}
		col := schema[tg.Col]
		n := pf.Schema().Fields()
		var fn pq.Node
		for _, x := range n {
			if x.Name() == col.Name {
				fn = x
			}
		}
		if fn == nil {
			s, ok := partitions[col.Name]
			if !ok || tg.Field >= 0 {
				return nil, &ReadError{Path: path, RowGroup: -1, Err: &SchemaError{col.Name, errors.New("missing from the file (and not a partition directory of it)")}}
			}
			v, err := parsePartition(s, col.Type)
			if err != nil {
				return nil, &ReadError{Path: path, RowGroup: -1, Err: &SchemaError{col.Name, fmt.Errorf("partition value %q: %w", s, err)}}
			}
			r.targets = append(r.targets, target{c: v})
			continue
		}
		var rn *rnode
		if tg.Field >= 0 {
			fld := col.Type.Fields[tg.Field]
			ff := field(fn, fld.Name)
			if ff == nil || fn.Leaf() {
				return nil, &ReadError{Path: path, RowGroup: -1, Err: &SchemaError{col.Name + "." + fld.Name, errors.New("missing from the file")}}
			}
			def := 0
			if fn.Optional() {
				def = 1
			}
			rn, err = p.plan(ff, []string{col.Name, fld.Name}, fld.Type, def, 0)
			// the ROW's own NULL reads as a NULL field: its definition
			// level is below the field's
		} else {
			rn, err = p.plan(fn, []string{col.Name}, col.Type, 0, 0)
		}
		if err != nil {
			return nil, &ReadError{Path: path, RowGroup: -1, Err: err}
		}
		if rn.kind != leafNode {
			r.flat = false
		}
		r.targets = append(r.targets, target{n: rn})
	}
	r.names = p.names
	r.cursors = make([]cursor, len(p.cursors))
	for i, c := range p.cursors {
		lc := pf.Schema().Columns()[c]
		l, _ := pf.Schema().Lookup(lc...)
		r.cursors[i] = cursor{col: c, maxRep: l.MaxRepetitionLevel}
		if l.MaxRepetitionLevel > 0 {
			r.flat = false
		}
	}
	r.runs = make([][]pq.Value, len(r.cursors))
	r.scratch = make([][]pq.Value, len(r.cursors))
	r.rg = -1
	done = true
	return r, nil
}

// NumRows is the number of rows of the row groups read.
func (r *FileReader) NumRows() int64 {
	var n int64
	for _, g := range r.groups {
		n += g.NumRows()
	}
	return n
}

// Restrict makes the reader read row groups first to end-1 of the file
// only (a split of the file); positions (SeekToRow, Pos) count from the
// first. It is called before reading.
func (r *FileReader) Restrict(first, end int) error {
	all := r.file.RowGroups()
	if first < 0 || end > len(all) || first >= end {
		return &ReadError{Path: r.path, RowGroup: -1, Err: fmt.Errorf("row groups %d to %d of %d", first, end-1, len(all))}
	}
	r.groups, r.base, r.rg = all[first:end], first, -1
	return nil
}

// groupIndex is the index in the file of the current row group, -1 if
// none.
func (r *FileReader) groupIndex() int {
	if r.rg < 0 || r.rg >= len(r.groups) {
		return -1
	}
	return r.base + r.rg
}

// CountRowGroups reads the footer of the Parquet file at path and returns
// its number of row groups.
func CountRowGroups(path string) (n int, err error) {
	defer func() {
		if p := recover(); p != nil {
			n, err = 0, &ReadError{Path: path, RowGroup: -1, Err: fmt.Errorf("corrupt file: %v", p)}
		}
	}()
	pf, err := readFooter(path)
	if err != nil {
		return 0, err
	}
	return len(pf.RowGroups()), nil
}

// readFooter reads the footer of the Parquet file at path (its schema and
// row groups' metadata, statistics included; not the page indexes or
// bloom filters). The file is closed again: the footer is in memory.
func readFooter(path string) (*pq.File, error) {
	f, size, fopts, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pf, err := pq.OpenFile(f, size, append(fopts, pq.SkipBloomFilters(true), pq.SkipPageIndex(true))...)
	if err != nil {
		return nil, &ReadError{Path: path, RowGroup: -1, Err: fmt.Errorf("not a valid Parquet file (%d bytes): %w", size, err)}
	}
	return pf, nil
}

// SeekToRow positions the reader before row n of the file.
func (r *FileReader) SeekToRow(n int64) (err error) {
	defer r.recover(&err)
	return r.seek(n)
}

// recover turns a panic of parquet-go on a corrupt page into an error
// naming the file and the row group.
func (r *FileReader) recover(err *error) {
	if p := recover(); p != nil {
		*err = &ReadError{Path: r.path, RowGroup: r.groupIndex(), Err: fmt.Errorf("corrupt file: %v", p)}
		r.err = *err
	}
}

func (r *FileReader) seek(n int64) error {
	var before int64
	for i, rg := range r.groups {
		if n < before+rg.NumRows() || i == len(r.groups)-1 {
			if err := r.openGroup(i, n-before); err != nil {
				return err
			}
			r.total = before
			return nil
		}
		before += rg.NumRows()
	}
	r.rg, r.total = len(r.groups), before
	return nil
}

// Pos is the number of rows read.
func (r *FileReader) Pos() int64 {
	if r.rg < 0 {
		return 0
	}
	if r.rg >= len(r.groups) {
		return r.total // the end: total counts every row group
	}
	return r.total + r.row
}

func (r *FileReader) openGroup(i int, row int64) error {
	rg := r.groups[i]
	r.rg, r.row, r.rows = i, row, rg.NumRows()
	for c := range r.cursors {
		if err := r.cursors[c].open(rg, row); err != nil {
			return r.readError(c, err)
		}
	}
	return nil
}

func (r *FileReader) readError(c int, err error) error {
	col := ""
	if c >= 0 && c < len(r.names) {
		col = r.names[c]
	}
	return &ReadError{Path: r.path, RowGroup: r.groupIndex(), Column: col, Err: err}
}

// Read reads up to len(dst) rows, each with one value per target; it
// returns io.EOF after the last row.
func (r *FileReader) Read(ctx context.Context, dst []types.Row) (n int, err error) {
	defer r.recover(&err)
	return r.read(ctx, dst)
}

func (r *FileReader) read(ctx context.Context, dst []types.Row) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.rg < 0 {
		if err := r.seek(0); err != nil {
			r.err = err
			return 0, err
		}
	}
	values := make([]types.Value, len(dst)*len(r.targets))
	n := 0
	for n < len(dst) {
		if r.rg >= len(r.groups) {
			return n, io.EOF
		}
		if r.row >= r.rows {
			r.total += r.rows
			if r.rg+1 >= len(r.groups) {
				r.rg++
				return n, io.EOF
			}
			if err := ctx.Err(); err != nil {
				return n, err
			}
			if err := r.openGroup(r.rg+1, 0); err != nil {
				r.err = err
				return n, err
			}
			continue
		}
		vs := values[n*len(r.targets) : (n+1)*len(r.targets) : (n+1)*len(r.targets)]
		if err := r.readRow(vs); err != nil {
			r.err = err
			return n, err
		}
		dst[n] = types.Row{Kind: types.Insert, Values: vs}
		r.row++
		n++
	}
	return n, nil
}

func (r *FileReader) readRow(vs []types.Value) error {
	if r.flat {
		for i, t := range r.targets {
			if t.n == nil {
				vs[i] = t.c
				continue
			}
			c := &r.cursors[t.n.cursor]
			v, err := c.next()
			if err != nil {
				return r.readError(t.n.cursor, err)
			}
			if t.n.optional && v.DefinitionLevel() < t.n.def {
				vs[i] = types.NullValue
				continue
			}
			x, err := t.n.conv(v)
			if err != nil {
				return r.readError(t.n.cursor, err)
			}
			vs[i] = x
		}
		return nil
	}
	for c := range r.cursors {
		run, err := r.cursors[c].run(r.runs[c][:0])
		if err != nil {
			return r.readError(c, err)
		}
		r.runs[c] = run
	}
	for i, t := range r.targets {
		if t.n == nil {
			vs[i] = t.c
			continue
		}
		v, err := t.n.build(r.runs, r.scratch)
		if err != nil {
			return r.readError(t.n.first, err)
		}
		vs[i] = v
	}
	return nil
}

// Close closes the file.
func (r *FileReader) Close() error {
	for i := range r.cursors {
		r.cursors[i].close()
	}
	return r.f.Close()
}

// readAtCloser is an open file: local, or an object read by ranges.
type readAtCloser interface {
	io.ReaderAt
	io.Closer
}

type objectFile struct{ *s3fs.ReaderAt }

func (objectFile) Close() error { return nil }

// open opens a local file, or an s3:// object (read by ranged requests
// of at least 1 MiB, so that a column chunk costs few requests).
func open(path string) (readAtCloser, int64, []pq.FileOption, error) {
	if s3fs.IsURL(path) {
		obj, err := s3fs.FromEnv()
		if err != nil {
			return nil, 0, nil, err
		}
		ra, err := obj.OpenReaderAt(path)
		if err != nil {
			return nil, 0, nil, err
		}
		return objectFile{ra}, ra.Size(), []pq.FileOption{pq.ReadBufferSize(1 << 20)}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, nil, err
	}
	return f, fi.Size(), nil, nil
}

// PruneRowGroups reads the footer of the Parquet file at path and says,
// for each row group, whether a row of it may satisfy one of readers
// (connector.Source.Prune): false when, for every reader, one of its
// predicates cannot hold for any value between the row group's minimum
// and maximum of the column (its statistics), or for the file's
// partition value of the column (partitions, as OpenFile takes them; a
// NULL satisfies none). Columns without statistics, and those whose
// statistics order is not the query's (floating point, where NaN is
// outside the statistics; INT96; BOOLEAN; nested or repeated fields),
// never prune. Without readers every row group is kept.
func PruneRowGroups(path string, partitions map[string]string, schema types.Schema, readers [][]connector.Predicate, opts *Options) (keep []bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			keep, err = nil, &ReadError{Path: path, RowGroup: -1, Err: fmt.Errorf("corrupt file: %v", p)}
		}
	}()
	if opts == nil {
		opts = DefaultOptions()
	}
	pf, err := readFooter(path)
	if err != nil {
		return nil, err
	}
	groups := pf.RowGroups()
	keep = make([]bool, len(groups))
	if len(readers) == 0 {
		for g := range keep {
			keep[g] = true // nothing to prune by
		}
		return keep, nil
	}
	// admits[c][g]: may column c of row group g satisfy a predicate (nil:
	// the column cannot prune)
	type colStats struct {
		constant *types.Value // a partition value
		leaf     int
		read     leafReader
	}
	cols := map[int]*colStats{}
	pl := &planner{file: pf.Schema(), opts: opts}
	for _, r := range readers {
		for _, p := range r {
			if _, seen := cols[p.Col]; seen || p.Col < 0 || p.Col >= len(schema) {
				continue
			}
			cols[p.Col] = nil
			col := schema[p.Col]
			var fn pq.Node
			for _, x := range pf.Schema().Fields() {
				if x.Name() == col.Name {
					fn = x
				}
			}
			if fn == nil {
				if s, ok := partitions[col.Name]; ok {
					if v, err := parsePartition(s, col.Type); err == nil {
						cols[p.Col] = &colStats{constant: &v}
					}
				}
				continue
			}
			if !fn.Leaf() || fn.Repeated() {
				continue
			}
			switch fn.Type().Kind() {
			case pq.Float, pq.Double, pq.Int96, pq.Boolean:
				continue
			}
			lc, ok := pf.Schema().Lookup(col.Name)
			if !ok {
				continue
			}
			read, err := pl.leaf(fn, col.Type)
			if err != nil {
				continue // (OpenFile says why)
			}
			cols[p.Col] = &colStats{leaf: lc.ColumnIndex, read: read}
		}
	}
	admits := func(g int, p connector.Predicate) bool {
		cs := cols[p.Col]
		if cs == nil {
			return true
		}
		if cs.constant != nil {
			return !cs.constant.Null && p.Admits(*cs.constant, *cs.constant)
		}
		chunks := groups[g].ColumnChunks()
		if cs.leaf >= len(chunks) {
			return true
		}
		fc, ok := chunks[cs.leaf].(*pq.FileColumnChunk)
		if !ok {
			return true
		}
		lo, hi, ok := fc.Bounds()
		if !ok {
			// no statistics: only a chunk of NULLs alone is known
			return !(fc.NumValues() > 0 && fc.NullCount() == fc.NumValues())
		}
		l, err1 := cs.read(lo)
		h, err2 := cs.read(hi)
		if err1 != nil || err2 != nil {
			return true
		}
		return p.Admits(l, h)
	}
	for g := range groups {
		for _, r := range readers {
			all := true
			for _, p := range r {
				if !admits(g, p) {
					all = false
					break
				}
			}
			if all {
				keep[g] = true
				break
			}
		}
	}
	return keep, nil
}
