package planner

import (
	"fmt"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// planValues plans a VALUES list: constant rows, cast to their columns'
// common types, read from a bounded slice source.
func (p *planner) planValues(q *parser.Values) (*rel, error) {
	ec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: &expr.Scope{}, What: "VALUES"}
	var rows [][]expr.Expr
	for _, r := range q.Rows {
		var row []expr.Expr
		for _, e := range r {
			ce, err := ec.Compile(e)
			if err != nil {
				return nil, err
			}
			if !ce.Const {
				return nil, expr.ErrAt(e, "VALUES needs constant expressions")
			}
			row = append(row, ce)
		}
		if len(rows) > 0 && len(row) != len(rows[0]) {
			return nil, parser.Errorf(q.Pos, "VALUES rows have different numbers of columns")
		}
		rows = append(rows, row)
	}
	n := len(rows[0])
	sc := &expr.Scope{}
	for i := 0; i < n; i++ {
		ts := make([]types.Type, len(rows))
		for j := range rows {
			ts[j] = rows[j][i].Type
		}
		t, ok := expr.CommonType(ts)
		if !ok {
			return nil, parser.Errorf(q.Pos, "VALUES column %d has incompatible types", i+1)
		}
		sc.Cols = append(sc.Cols, expr.Column{Name: fmt.Sprintf("EXPR$%d", i), Type: t})
	}
	data := make([]types.Row, len(rows))
	for j, row := range rows {
		vs := make([]types.Value, n)
		for i, ce := range row {
			c, err := expr.Cast(ce, sc.Cols[i].Type, q.Rows[j][i])
			if err != nil {
				return nil, err
			}
			vs[i] = c.Eval(nil)
		}
		data[j] = types.Row{Values: vs}
	}
	return &rel{op: fmt.Sprintf("Values(tuples=%d)", len(data)), sc: sc, bounded: true,
		build: func(b *builder) (*weir.Stream[types.Row], error) {
			return weir.FromSource(b.job, "values", weir.SliceSource(data), weir.NoWatermarks[types.Row](), b.uid("values")), nil
		}}, nil
}
