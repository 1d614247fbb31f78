package sql

import (
	"fmt"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// strictCast compiles CAST(x AS t) as Flink runs it: a string that does
// not convert fails the job, naming the value, the type and the place of
// the CAST in the statement (TRY_CAST, compiled by castExpr, gives NULL
// instead). A constant that does not convert is a planning error.
func strictCast(x cexpr, e *parser.Cast) (cexpr, error) {
	ce, err := castExpr(x, e.Type, e)
	if err != nil || !x.t.IsString() || e.Type.IsString() {
		return ce, err
	}
	fn, _ := castFn(x.t, e.Type)
	fail := func(v types.Value) string {
		return fmt.Sprintf("%s: CAST('%s' AS %s) failed: the value is not a valid %s (TRY_CAST gives NULL instead)", e.Pos, v.S, e.Type, e.Type)
	}
	if x.konst {
		v := x.eval(nil)
		if out := fn(v); out.Null && !v.Null {
			return cexpr{}, parser.Errorf(e.Pos, "CAST('%s' AS %s) fails: the value is not a valid %s (TRY_CAST gives NULL instead)", v.S, e.Type, e.Type)
		}
		return ce, nil
	}
	f := x.eval
	ce.ival, ce.pred, ce.filt = nil, nil, nil // eval is replaced
	ce.eval = func(r []types.Value) types.Value {
		v := f(r)
		out := fn(v)
		if out.Null && !v.Null {
			panic(runtimeError(fail(v)))
		}
		return out
	}
	return ce, nil
}
