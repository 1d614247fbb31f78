package expr

import (
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// LAG(x [, offset [, default]]) OVER (...), as Flink's streaming
// LagAggFunction: an aggregate of the OVER window (whose frame is the
// default, RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) that keeps
// the last offset+1 values of x, NULLs included; its value is the oldest
// of them once there are offset+1, else the default (NULL unless given).
// As in Flink, rows of the same time are peers: they are all accumulated
// before any is emitted, so they see the same LAG. It never retracts
// (Flink: "LAG Function with retraction is not supported in stream
// mode"), and is planned only in an OVER aggregation.
//
// The accumulator is two slots: the buffered values, and the default of
// the latest row when the default is not a constant (the argument is then
// the pair (x, default)).

const aggLag AggKind = iota + 130

// compileLag compiles LAG's arguments.
func compileLag(a *AggCall, c *parser.Call, ec *Compiler) (*AggCall, bool, error) {
	if c.Star || c.Distinct || c.Filter != nil || c.Nulls != "" || len(c.Args) < 1 || len(c.Args) > 3 {
		return nil, true, ErrAt(c, "LAG takes an expression and optionally an offset and a default: LAG(x [, offset [, default]])")
	}
	if a.Retract {
		return nil, true, ErrAt(c, "LAG Function with retraction is not supported in stream mode")
	}
	xs, err := ec.compileAll(c.Args...)
	if err != nil {
		return nil, true, err
	}
	x := xs[0]
	a.Kind, a.Arg, a.ArgT, a.ArgCol = aggLag, x.Eval, x.Type, x.Col
	a.respectNulls = true
	a.OutT = x.Type.Nullable()
	a.OutT.TimeAttr = 0
	a.lagOffset = 1
	if len(xs) > 1 {
		o := xs[1]
		if !o.Const || !o.Type.IsInteger() {
			return nil, true, ErrAt(c.Args[1], "LAG's offset must be a constant integer")
		}
		v := o.Eval(nil)
		if v.Null || v.I < 0 {
			return nil, true, ErrAt(c.Args[1], "LAG's offset must not be negative or NULL")
		}
		a.lagOffset = int(v.I)
	}
	a.lagDefault = types.NullValue
	if len(xs) > 2 {
		d, err := Cast(xs[2], a.OutT, c.Args[2])
		if err != nil {
			return nil, true, err
		}
		if d.Const {
			a.lagDefault = d.Eval(nil)
		} else {
			// the latest row's default goes with its value
			val, def := x.Eval, d.Eval
			a.lagPair = true
			a.ArgCol = -1
			a.Arg = func(r []types.Value) types.Value {
				return types.ListValue([]types.Value{val(r), def(r)})
			}
		}
	}
	return a, true, nil
}

// accumulateLag buffers v (a pair with its default when lagPair).
func (a *AggCall) accumulateLag(acc []types.Value, v types.Value) {
	s := a.slot
	if a.lagPair {
		p := v.List()
		v, acc[s+1] = p[0], p[1]
	}
	l := append(acc[s].List(), v)
	if len(l) > a.lagOffset+1 {
		// drop the oldest in place: the buffer keeps its array
		copy(l, l[1:])
		l[len(l)-1] = types.Value{}
		l = l[:len(l)-1]
	}
	acc[s] = types.ListValue(l)
}

// resultLag is the value offset rows back, or the default.
func (a *AggCall) resultLag(acc []types.Value) types.Value {
	l := acc[a.slot].List()
	if len(l) < a.lagOffset+1 {
		if a.lagPair {
			return acc[a.slot+1]
		}
		return a.lagDefault
	}
	return l[0]
}
