package expr

import (
	"fmt"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// strictCast compiles CAST(x AS t) as Flink runs it: a string that does
// not convert fails the job, naming the value, the type and the place of
// the CAST in the statement (TRY_CAST, compiled by Cast, gives NULL
// instead). A constant that does not convert is a planning error.
func strictCast(x Expr, e *parser.Cast) (Expr, error) {
	ce, err := Cast(x, e.Type, e)
	if err != nil || !x.Type.IsString() || e.Type.IsString() {
		return ce, err
	}
	fn, _ := CastFn(x.Type, e.Type)
	fail := func(v types.Value) string {
		return fmt.Sprintf("%s: CAST('%s' AS %s) failed: the value is not a valid %s (TRY_CAST gives NULL instead)", e.Pos, v.S, e.Type, e.Type)
	}
	if x.Const {
		v := x.Eval(nil)
		if out := fn(v); out.Null && !v.Null {
			return Expr{}, parser.Errorf(e.Pos, "CAST('%s' AS %s) fails: the value is not a valid %s (TRY_CAST gives NULL instead)", v.S, e.Type, e.Type)
		}
		return ce, nil
	}
	f := x.Eval
	ce.ival, ce.pred, ce.filt, ce.dec, ce.fold = nil, nil, nil, nil, nil // eval is replaced
	ce.Eval = func(r []types.Value) types.Value {
		v := f(r)
		out := fn(v)
		if out.Null && !v.Null {
			panic(runtimeError(fail(v)))
		}
		return out
	}
	return ce, nil
}
