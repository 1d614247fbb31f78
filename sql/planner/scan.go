package planner

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// optionsErr is the error of a connector for table td used at pos: where
// the options are wrong, at the first wrong option in the table's WITH
// clause (or at its CREATE TABLE for a missing one), naming the use;
// otherwise at the use. Flink checks options where a table is used too,
// and names no place at all.
func optionsErr(td *tableDef, pos parser.Pos, err error) error {
	var oe *connector.OptionsError
	if !errors.As(err, &oe) {
		return parser.Errorf(pos, "%v", err)
	}
	at := td.ddl.Pos
	if keys := oe.Keys(); len(keys) > 0 {
		for _, o := range td.ddl.Options {
			if o.Key == keys[0] {
				at = o.Pos
				break
			}
		}
	}
	if at == pos {
		return parser.Errorf(pos, "%v", err)
	}
	return parser.Errorf(at, "%v (the table is used at %v)", err, pos)
}

// sourceRel plans a read of a table: the connector's source, the
// watermark strategy of its WATERMARK clause and a Calc that appends the
// computed columns.
func (p *planner) sourceRel(td *tableDef, pos parser.Pos) (*rel, error) {
	ct := &connector.Table{Name: td.ddl.Name, Options: td.options, Settings: p.s.settings()}
	for _, pi := range td.physical {
		ct.Schema = append(ct.Schema, types.Field{Name: td.cols[pi].Name, Type: td.cols[pi].Type.Nullable()})
		ct.Schema[len(ct.Schema)-1].Type.NotNull = td.cols[pi].Type.NotNull
		ct.Schema[len(ct.Schema)-1].Type.TimeAttr = types.NoTimeAttr
	}
	ct.PrimaryKey, ct.PartitionKeys = td.pk, td.partitions
	meta, err := td.resolveMetadata(ct, false)
	if err != nil {
		return nil, err
	}
	ct.Metadata = meta
	src, err := connector.CreateSource(ct)
	if err != nil {
		return nil, optionsErr(td, pos, err)
	}
	sc := &expr.Scope{Cols: append([]expr.Column(nil), td.cols...)}
	// the source's rows: the physical columns, then the metadata columns
	// (of the connector's types; CAST to the declared ones where they
	// differ, as Flink's planner does)
	phys, rawSc := &expr.Scope{}, &expr.Scope{}
	for _, pi := range td.physical {
		phys.Cols = append(phys.Cols, td.cols[pi])
		rawSc.Cols = append(rawSc.Cols, td.cols[pi])
	}
	for k, m := range td.meta {
		phys.Cols = append(phys.Cols, td.cols[m.idx])
		c := td.cols[m.idx]
		c.Type = meta[k].Type
		rawSc.Cols = append(rawSc.Cols, c)
	}
	ec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: phys}
	if len(meta) > 0 {
		rc := &expr.Compiler{Scope: rawSc}
		ec.Cols = make([]expr.Expr, len(rawSc.Cols))
		for j := range rawSc.Cols {
			ec.Cols[j] = rc.Column(j)
			if j < len(td.physical) {
				continue
			}
			m := td.meta[j-len(td.physical)]
			from, to := rawSc.Cols[j].Type, td.cols[m.idx].Type
			to.TimeAttr = types.NoTimeAttr
			if from.Kind == to.Kind && from.Precision == to.Precision && from.Scale == to.Scale {
				continue
			}
			col := td.ddl.Columns[m.idx]
			if _, err := expr.CastFn(from, to); err != nil {
				return nil, parser.Errorf(col.Pos, "metadata column '%s' of '%s': metadata key '%s' is %s, which cannot be cast to %s", col.Name, td.ddl.Name, m.key, from, to)
			}
			if ec.Cols[j], err = expr.Cast(ec.Cols[j], to, &parser.Ident{Pos: col.Pos, Parts: []string{col.Name}}); err != nil {
				return nil, err
			}
		}
	}
	var push *expr.PushLayout
	if src.Project != nil && !p.cfg.DisablePushdown && len(meta) == 0 {
		// the connector projects: the scan's rows hold what is read
		push = &expr.PushLayout{Table: td.ddl.Name}
		ec.Cols = make([]expr.Expr, len(phys.Cols))
		for j, c := range phys.Cols {
			ec.Cols[j] = push.ColRef(j, c.Type)
		}
	}
	// computed columns over the physical row
	type comp struct {
		idx int
		ce  expr.Expr
	}
	var comps []comp
	for _, cc := range td.computed {
		ce, err := ec.Compile(cc.expr)
		if err != nil {
			return nil, err
		}
		if push != nil {
			// computed once per row as the scan reads it
			ce = push.ComputedRef(ce)
		}
		comps = append(comps, comp{cc.idx, ce})
	}
	// where each output column comes from: physical index, or -1
	physAt := make([]int, len(td.cols))
	for i := range physAt {
		physAt[i] = -1
	}
	for j, pi := range td.physical {
		physAt[pi] = j
	}
	for k, m := range td.meta {
		physAt[m.idx] = len(td.physical) + k
	}
	var tsFn func(types.Row) time.Time
	var rowtime expr.Expr
	if td.rowtime >= 0 {
		if j := physAt[td.rowtime]; j >= 0 {
			rowtime = ec.Column(j)
		} else {
			for _, c := range comps {
				if c.idx == td.rowtime {
					rowtime = c.ce
				}
			}
		}
		ev := expr.IntOf(rowtime) // a TIMESTAMP: its int64 (expr/expr_typed.go)
		tsFn = func(r types.Row) time.Time {
			us, ok := ev(r.Values)
			if !ok {
				return time.UnixMicro(0)
			}
			return time.UnixMicro(us)
		}
	}
	mode := src.Changelog
	op := fmt.Sprintf("TableSourceScan(table=[%s], fields=[%s])", td.ddl.Name, strings.Join(phys.Schema().Names(), ", "))
	if len(meta) > 0 {
		keys := make([]string, len(meta))
		for k, m := range meta {
			keys[k] = m.Key
		}
		op = fmt.Sprintf("%s, metadata=[%s]", op, strings.Join(keys, ", "))
	}
	if td.rowtime >= 0 {
		op = fmt.Sprintf("%s, watermark=[%s - %s]", op, td.cols[td.rowtime].Name, td.delay)
	}
	delay := td.delay
	raw := &rel{op: op, sc: phys, mode: mode, bounded: src.Bounded,
		build: func(b *builder) (*weir.Stream[types.Row], error) {
			ws := weir.NoWatermarks[types.Row]()
			if tsFn != nil {
				ws = weir.BoundedOutOfOrderness(delay, tsFn)
			}
			opts := append([]weir.SourceOption{b.uid("source-" + td.ddl.Name)}, src.Options...)
			source := src.Source
			if push != nil {
				// the Calcs over the scan have registered what they read
				if tsFn != nil {
					if err := push.RegisterDeps(&rowtime); err != nil {
						return nil, err
					}
				}
				push.Frozen = true
				var err error
				var fill func([]types.Value)
				if len(push.Comps) > 0 {
					fill = push.Fill
				}
				if source, err = src.Project(push.Paths, fill); err != nil {
					return nil, err
				}
				if readers := push.Filters(); src.Prune != nil && len(readers) > 0 {
					source = src.Prune(source, readers)
				}
			}
			return weir.FromSource(b.job, td.ddl.Name, source, ws, opts...), nil
		}, traits: traits{push: push}}
	if mode != types.InsertOnly {
		raw.updater = op
	}
	r := raw
	if len(comps) > 0 || push != nil || len(meta) > 0 {
		// the computed columns are a Calc over the physical row, which the
		// Calcs of the query (a view's projection and filter) fuse with
		pr := &projection{}
		var names []string
		for i, c := range td.cols {
			pr.names = append(pr.names, c.Name)
			var x expr.Expr
			if j := physAt[i]; j >= 0 {
				x = ec.Column(j)
			} else {
				for _, cc := range comps {
					if cc.idx == i {
						x = cc.ce
					}
				}
				x.Col = -1
				names = append(names, c.Name)
			}
			x.Type = c.Type
			pr.exprs = append(pr.exprs, x)
		}
		r = calcRel(raw, nil, pr, "Calc(computed=["+strings.Join(names, ", ")+"])")
	}
	r.sc = sc
	for _, k := range td.pk {
		r.pk = append(r.pk, td.physical[k])
	}
	if mode == types.Upsert {
		n, err := normalizeRel(r, td)
		if n != nil {
			n.pk = r.pk
		}
		return n, err
	}
	return r, nil
}

// resolveMetadata returns the metadata columns a source reads (write
// false: all of them) or a sink writes (the persisted ones, not VIRTUAL),
// with the connector's types, or an error at the column whose key the
// connector does not have.
func (td *tableDef) resolveMetadata(ct *connector.Table, write bool) ([]connector.MetadataColumn, error) {
	var keys, names []string
	var at []parser.Pos
	for _, m := range td.meta {
		if write && m.virtual {
			continue
		}
		col := td.ddl.Columns[m.idx]
		keys, names, at = append(keys, m.key), append(names, col.Name), append(at, col.Pos)
	}
	out, err := connector.ResolveMetadata(ct, keys, names, write)
	if ke := (*connector.MetadataKeyError)(nil); errors.As(err, &ke) {
		return nil, parser.Errorf(at[ke.Index], "%v", err)
	} else if err != nil {
		return nil, parser.Errorf(td.ddl.Pos, "%v", err)
	}
	return out, nil
}
