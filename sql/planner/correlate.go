package planner

import (
	"fmt"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// planCorrelate plans a join of rows with a table function of each row,
// Flink's Correlate: FROM t, LATERAL TABLE(f(t.x)) AS r(a, b), or JOIN
// LATERAL ... ON TRUE, or LEFT JOIN LATERAL ... ON TRUE (a row the function
// gives no rows for is kept, with NULLs), and UNNEST(x) for arrays,
// multisets and maps. The function runs in the left side's operator
// chain, a FlatMap: no state, and the left side's changelog passes
// through (a retraction of a row retracts the rows its call gave, which a
// deterministic function gives again).
func (p *planner) planCorrelate(j *parser.Join, tf *parser.TableFunc) (*rel, error) {
	left, err := p.planFrom(j.Left)
	if err != nil {
		return nil, err
	}
	ec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: left.sc, What: "a table function's arguments"}
	at := &parser.Call{Pos: tf.Pos, Name: tf.Name, Args: tf.Args}
	call, err := ec.CompileTableCall(at, tf.Name, tf.Args)
	if err != nil {
		return nil, err
	}
	cols := call.Columns
	if len(tf.Columns) > 0 {
		if len(tf.Columns) != len(cols) {
			return nil, parser.Errorf(tf.Pos, "'%s' names %d columns but %s gives %d", tf.Alias, len(tf.Columns), strings.ToLower(tf.Name), len(cols))
		}
	}
	outer := false
	switch j.Kind {
	case parser.CrossJoin, parser.InnerJoin:
	case parser.LeftJoin:
		outer = true
	default:
		return nil, parser.Errorf(j.Pos, "%s JOIN with a LATERAL table function is not supported (INNER, CROSS and LEFT are)", j.Kind)
	}
	qual := tf.Alias
	if qual == "" {
		qual = strings.ToLower(tf.Name)
	}
	nl := len(left.sc.Cols)
	sc := &expr.Scope{Cols: append([]expr.Column(nil), left.sc.Cols...)}
	for i, c := range cols {
		name := c.Name
		if len(tf.Columns) > 0 {
			name = tf.Columns[i]
		}
		t := c.Type
		if outer {
			t = t.Nullable()
		}
		t.TimeAttr = 0
		sc.Cols = append(sc.Cols, expr.Column{Qual: qual, Name: name, Type: t})
	}
	// the condition: TRUE, or (not outer) a filter over the joined row
	var filter expr.FilterFn
	if j.On != nil && !isTrueLit(j.On) {
		if outer {
			return nil, expr.ErrAt(j.On, "LEFT JOIN LATERAL takes ON TRUE only (as Flink); filter the function's rows in WHERE")
		}
		fc := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: sc, What: "a join condition"}
		cond, err := fc.Compile(j.On)
		if err != nil {
			return nil, err
		}
		if cond.Type.Kind != types.Boolean {
			return nil, expr.ErrAt(j.On, "a join condition must be BOOLEAN, not %s", cond.Type)
		}
		filter = expr.FilterOf(cond)
	}
	if len(j.Using) > 0 {
		return nil, parser.Errorf(j.Pos, "JOIN LATERAL ... USING is not supported; use ON TRUE")
	}
	kind := "INNER"
	if outer {
		kind = "LEFT"
	}
	op := fmt.Sprintf("Correlate(invocation=[%s], joinType=[%s])", parser.TableString(tf), kind)
	r := &rel{op: op, sc: sc, mode: left.mode, inputs: []*rel{left}, bounded: left.bounded, updater: left.updater}
	nf := len(cols)
	eval := call.Eval
	r.build = func(bd *builder) (*weir.Stream[types.Row], error) {
		in, err := bd.stream(left)
		if err != nil {
			return nil, err
		}
		return weir.FlatMapWith(in, func() func(types.Row, func(types.Row)) {
			return func(row types.Row, emit func(types.Row)) {
				n := 0
				eval(row.Values, func(vs []types.Value) {
					out := make([]types.Value, nl+nf)
					copy(out, row.Values)
					copy(out[nl:], vs)
					if filter != nil && !filter(out) {
						return
					}
					n++
					emit(types.Row{Kind: row.Kind, Values: out})
				})
				if n == 0 && outer {
					out := make([]types.Value, nl+nf)
					copy(out, row.Values)
					for i := nl; i < len(out); i++ {
						out[i] = types.NullValue
					}
					emit(types.Row{Kind: row.Kind, Values: out})
				}
			}
		}, bd.uid("correlate")), nil
	}
	return r, nil
}

func isTrueLit(e parser.Expr) bool {
	l, ok := e.(*parser.Literal)
	return ok && l.Kind == parser.BoolLit && strings.EqualFold(l.Text, "TRUE")
}
