package planner

import (
	"fmt"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// planInsert plans INSERT INTO t [(cols)] query: the query's columns are
// cast to the sink's types, missing columns are NULL, and the sink must
// accept the query's changelog.
func (s *Session) planInsert(ins *parser.Insert) (*Statement, error) {
	if ins.Overwrite {
		return nil, parser.Errorf(ins.Pos, "INSERT OVERWRITE is not supported on streams")
	}
	td, v, _ := s.cat.lookup(ins.Table)
	if td == nil {
		if v != nil {
			return nil, parser.Errorf(ins.TablePos, "cannot INSERT INTO view '%s'", ins.Table)
		}
		return nil, parser.Errorf(ins.TablePos, "table '%s' not found (known: %s)", ins.Table, strings.Join(s.cat.names(ins.Table), ", "))
	}
	q, err := s.setPlanner().planQuery(ins.Query)
	if err != nil {
		return nil, err
	}
	// the sink's columns: the physical ones, then the persisted metadata
	// columns (not VIRTUAL), as the connector takes them; decl is each
	// one's place among the table's persisted columns in declaration
	// order, which a query without a column list gives them in
	ct := &connector.Table{Name: td.ddl.Name, Options: td.options, Settings: s.settings(), PrimaryKey: td.pk, PartitionKeys: td.partitions}
	if err := connector.CheckPartitioning(ct); err != nil {
		return nil, parser.Errorf(ins.TablePos, "%v", err)
	}
	meta, err := td.resolveMetadata(ct, true)
	if err != nil {
		return nil, err
	}
	var sinkIdx []int // td.cols indexes
	sinkIdx = append(sinkIdx, td.physical...)
	for _, m := range td.meta {
		if !m.virtual {
			sinkIdx = append(sinkIdx, m.idx)
		}
	}
	sinkCols := make([]expr.Column, len(sinkIdx))
	decl := make([]int, len(sinkIdx))
	for j, ci := range sinkIdx {
		sinkCols[j] = td.cols[ci]
		sinkCols[j].Type.TimeAttr = 0
		for _, cj := range sinkIdx {
			if cj < ci {
				decl[j]++
			}
		}
	}
	from := make([]int, len(sinkCols))
	if len(ins.Columns) == 0 {
		if len(q.sc.Cols) != len(sinkCols) {
			names := make([]string, len(sinkCols))
			for j, d := range decl {
				names[d] = sinkCols[j].Name
			}
			return nil, parser.Errorf(ins.Pos, "column types of query result and sink for '%s' do not match: the query has %d columns (%s), the sink %d (%s)",
				ins.Table, len(q.sc.Cols), strings.Join(q.sc.Schema().Names(), ", "), len(sinkCols), strings.Join(names, ", "))
		}
		copy(from, decl)
	} else {
		if len(ins.Columns) != len(q.sc.Cols) {
			return nil, parser.Errorf(ins.Pos, "INSERT INTO '%s' names %d columns but the query has %d", ins.Table, len(ins.Columns), len(q.sc.Cols))
		}
		for j := range from {
			from[j] = -1
		}
		for i, c := range ins.Columns {
			found := false
			for j, sc := range sinkCols {
				if strings.EqualFold(sc.Name, c) {
					from[j], found = i, true
				}
			}
			if !found {
				return nil, parser.Errorf(ins.Pos, "column '%s' is not a physical or persisted metadata column of '%s'", c, ins.Table)
			}
		}
	}
	fns := make([]func(types.Value) types.Value, len(sinkCols))
	identity := len(q.sc.Cols) == len(sinkCols)
	for j, sc := range sinkCols {
		if from[j] < 0 {
			if sc.Type.NotNull {
				return nil, parser.Errorf(ins.Pos, "column '%s' of '%s' is NOT NULL and not given", sc.Name, ins.Table)
			}
			identity = false
			continue
		}
		if from[j] != j {
			identity = false
		}
		qt := q.sc.Cols[from[j]].Type
		if qt.Kind == sc.Type.Kind && qt.Precision == sc.Type.Precision && qt.Scale == sc.Type.Scale {
			continue
		}
		if !expr.ImplicitCast(qt, sc.Type) {
			// as Flink: a value that does not convert implicitly (a STRING
			// into an INT column) needs a CAST in the query, which says
			// what a value that does not parse becomes
			return nil, parser.Errorf(ins.Pos, "column types of query result and sink for '%s' do not match: column '%s' is %s in the query and %s in the sink (write a CAST in the query)",
				ins.Table, sc.Name, qt, sc.Type)
		}
		fn, err := expr.CastFn(qt, sc.Type)
		if err != nil {
			return nil, parser.Errorf(ins.Pos, "column '%s' of '%s': %v", sc.Name, ins.Table, err)
		}
		fns[j] = fn
		identity = false
	}
	for _, c := range sinkCols[:len(td.physical)] {
		ct.Schema = append(ct.Schema, types.Field{Name: c.Name, Type: c.Type})
	}
	ct.Metadata = meta
	for k, m := range meta {
		// the query's value is cast to the declared type, then to the
		// connector's
		j := len(td.physical) + k
		if m.Type.Kind == sinkCols[j].Type.Kind && m.Type.Precision == sinkCols[j].Type.Precision {
			continue
		}
		fn, err := expr.CastFn(sinkCols[j].Type, m.Type)
		if err != nil {
			return nil, parser.Errorf(td.ddl.Columns[sinkIdx[j]].Pos, "metadata column '%s' of '%s': %s cannot be cast to %s, the type of metadata key '%s'", sinkCols[j].Name, td.ddl.Name, sinkCols[j].Type, m.Type, m.Key)
		}
		if prev := fns[j]; prev != nil {
			fns[j] = func(v types.Value) types.Value { return fn(prev(v)) }
		} else {
			fns[j] = fn
		}
		identity = false
	}
	sink, err := connector.CreateSink(ct)
	if err != nil {
		return nil, optionsErr(td, ins.TablePos, err)
	}
	if q.mode > sink.Accepts {
		if sink.Accepts == types.InsertOnly {
			return nil, parser.Errorf(ins.Pos, "table sink '%s' doesn't support consuming update changes which is produced by node %s", ins.Table, q.updater)
		}
	}
	root := &rel{op: fmt.Sprintf("Sink(table=[%s], fields=[%s])", td.ddl.Name, strings.Join((&expr.Scope{Cols: sinkCols}).Schema().Names(), ", ")),
		sc: &expr.Scope{Cols: sinkCols}, mode: q.mode, inputs: []*rel{q}, updater: q.updater, bounded: q.bounded}
	st := &Statement{root: root, text: parser.QueryString(ins.Query)}
	if sink.DropsUpdateBefore || sink.Accepts == types.Upsert {
		st.noUB = q
	}
	nq := len(sinkCols)
	if sink.Lends || !identity {
		// the cast, or else the sink, is done with q's rows when it returns
		st.feed = q
	}
	st.sink = func(b *builder, in *weir.Stream[types.Row]) error {
		if !identity {
			rows := ringRows(b.job)
			in = weir.FlatMapWith(in, func() func(types.Row, func(types.Row)) {
				var ring *rowRing
				if sink.Lends {
					// the sink is chained to the cast and done with its rows
					// when Write returns: lend them (lend.go)
					ring = newRowRing(nq, rows)
				}
				return func(row types.Row, emit func(types.Row)) {
					var vs []types.Value
					if ring != nil {
						vs = ring.next()
					} else {
						vs = make([]types.Value, nq)
					}
					for j, fn := range fns {
						switch {
						case from[j] < 0:
							vs[j] = types.NullValue
						case fn == nil:
							vs[j] = row.Values[from[j]]
						default:
							vs[j] = fn(row.Values[from[j]])
						}
					}
					emit(types.Row{Kind: row.Kind, Values: vs})
				}
			}, b.uid("sink-cast"))
		}
		opts := append([]weir.OperatorOption{b.uid("sink-" + td.ddl.Name)}, sink.Options...)
		weir.To(in, sink.Sink, opts...)
		return nil
	}
	root.build = func(b *builder) (*weir.Stream[types.Row], error) { return b.stream(q) }
	return st, nil
}
