package expr

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// Function is a user-defined function: a *ScalarFunction, a
// *TableFunction or an *AggregateFunction. A session registers it under a name (Go programs)
// or a CREATE FUNCTION statement binds a name to one registered under a
// class name (RegisterClass).
type Function interface{ isFunction() }

// ScalarFunction is a user-defined scalar function, as Flink's
// ScalarFunction: a value of one row's arguments.
//
// Its signature is Args and Returns (Variadic: the last of Args repeats),
// or Infer, which sees the call's argument types: arguments are cast to
// the parameter types as Flink casts them implicitly (a call whose
// arguments do not cast is a planning error naming the function).
type ScalarFunction struct {
	Args     []types.Type
	Variadic bool
	Returns  types.Type
	// Infer, when set, replaces Args and Returns: the parameter types to
	// cast the call's arguments to (one per argument) and the result
	// type, or an error for arguments the function does not take.
	Infer func(args []types.Type) (params []types.Type, result types.Type, err error)
	// Eval computes the function of one row's argument values (typed as
	// the parameters: see types.Value). It must not keep args. An error
	// fails the job with the function's name and the arguments, as an
	// exception thrown by a Java UDF fails a Flink job.
	Eval func(args []types.Value) (types.Value, error)
	// CallOnNull makes Eval see NULL arguments; by default a NULL
	// argument makes the result NULL without a call.
	CallOnNull bool
	// NonDeterministic marks a function whose result is not a function of
	// its arguments (Flink's isDeterministic false): a call with constant
	// arguments is not folded when the query is planned.
	NonDeterministic bool
}

// AggregateFunction is a user-defined aggregate function, as Flink's
// AggregateFunction: an accumulator per group (or window), a types.Value
// so that it is kept in state and checkpoints, updated by each input row.
//
// Accumulate and Result are required. Retract is needed to aggregate an
// updating input (a planning error names the function otherwise), Merge
// for session windows.
type AggregateFunction struct {
	Args    []types.Type
	Returns types.Type
	// Create returns a new, empty accumulator (nil: types.NullValue).
	Create func() types.Value
	// Accumulate adds one row's argument values to acc and returns the
	// new accumulator. It may change acc's list in place.
	Accumulate func(acc types.Value, args []types.Value) (types.Value, error)
	// Retract takes a row back from acc (a -U or -D of the input).
	Retract func(acc types.Value, args []types.Value) (types.Value, error)
	// Merge folds other into acc (session windows merging).
	Merge func(acc, other types.Value) (types.Value, error)
	// Result is the aggregate's value of acc.
	Result func(acc types.Value) (types.Value, error)
	// CallOnNull makes Accumulate and Retract see rows whose arguments are
	// NULL; by default such rows are skipped, as the built-in aggregates
	// skip NULL.
	CallOnNull bool
}

// TableFunction is a user-defined table function, as Flink's
// TableFunction: zero or more rows per call, joined to the row of the
// left side that called it (FROM t, LATERAL TABLE(f(t.x)) AS r(a, b), or
// LEFT JOIN LATERAL TABLE(...) ON TRUE to keep rows without any).
type TableFunction struct {
	Args     []types.Type
	Variadic bool
	// Columns are the columns of the rows (AS r(a, b) renames them).
	Columns types.Schema
	// Infer, when set, replaces Args and Columns, as ScalarFunction's.
	Infer func(args []types.Type) (params []types.Type, columns types.Schema, err error)
	// Eval calls emit for each row of the call's result (emit copies the
	// row). An error fails the job, as ScalarFunction's.
	Eval func(args []types.Value, emit func(row []types.Value)) error
	// CallOnNull makes Eval see NULL arguments; by default a NULL
	// argument gives no rows without a call.
	CallOnNull bool
}

func (*ScalarFunction) isFunction()    {}
func (*AggregateFunction) isFunction() {}
func (*TableFunction) isFunction()     {}

var classes struct {
	sync.RWMutex
	m map[string]Function
}

// RegisterClass binds a class name (Flink's Java UDF, as CREATE FUNCTION
// names it) to a function written in Go, so that a Flink SQL file whose
// UDF has a Go twin runs unchanged. It panics if the name is taken, as
// registering twice is a program's bug.
func RegisterClass(class string, f Function) {
	classes.Lock()
	defer classes.Unlock()
	if classes.m == nil {
		classes.m = map[string]Function{}
	}
	if _, dup := classes.m[class]; dup {
		panic("sql: class " + class + " registered twice")
	}
	classes.m[class] = f
}

// LookupClass returns the function registered under class.
func LookupClass(class string) (Function, bool) {
	classes.RLock()
	defer classes.RUnlock()
	f, ok := classes.m[class]
	return f, ok
}

// Classes lists the registered class names, sorted.
func Classes() []string {
	classes.RLock()
	defer classes.RUnlock()
	out := make([]string, 0, len(classes.m))
	for c := range classes.m {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// IsBuiltin reports whether name (upper case) is a built-in function,
// which a catalog function of that name cannot replace (Flink resolves
// the built-in first).
func IsBuiltin(name string) bool {
	if AggregateNames[name] || WindowPropNames[name] {
		return true
	}
	for _, f := range ScalarFunctions {
		if f == name {
			return true
		}
	}
	return false
}

// IsAggregate reports whether name (upper case) is an aggregate function:
// a built-in one or a user-defined one of funcs.
func IsAggregate(name string, funcs map[string]Function) bool {
	if AggregateNames[name] {
		return true
	}
	_, ok := funcs[name].(*AggregateFunction)
	return ok
}

// argsPool holds the argument slices of user-function calls: Eval may be
// shared by the subtasks of an operator, and a slice per call would be an
// allocation per row.
var argsPool = sync.Pool{New: func() any { s := make([]types.Value, 0, 8); return &s }}

// callArgs evaluates a call's arguments on row r into a slice of
// argsPool; ok is false (and there is nothing to give back) when one is
// NULL and the function does not take NULL. releaseArgs gives it back.
func callArgs(fs []EvalFn, r []types.Value, callOnNull bool) (*[]types.Value, bool) {
	p := argsPool.Get().(*[]types.Value)
	a := (*p)[:0]
	for _, g := range fs {
		v := g(r)
		if v.Null && !callOnNull {
			*p = a[:0]
			argsPool.Put(p)
			return nil, false
		}
		a = append(a, v)
	}
	*p = a
	return p, true
}

func releaseArgs(p *[]types.Value) {
	clear(*p)
	*p = (*p)[:0]
	argsPool.Put(p)
}

// castParams casts the call's arguments to the function's parameters.
func castParams(e *parser.Call, name string, xs []Expr, params []types.Type, variadic bool) error {
	n := len(params)
	if (!variadic && len(xs) != n) || (variadic && len(xs) < n-1) {
		want := fmt.Sprint(n)
		if variadic {
			want = fmt.Sprintf("at least %d", n-1)
		}
		return ErrAt(e, "function %s takes %s argument(s), got %d", name, want, len(xs))
	}
	for i := range xs {
		p := params[min(i, n-1)]
		if sameType(xs[i].Type, p) {
			continue
		}
		x, err := Cast(xs[i], p, e.Args[i])
		if err != nil || !implicitCast(xs[i].Type, p) {
			return ErrAt(e.Args[i], "function %s takes %s as argument %d, not %s", name, p, i+1, xs[i].Type)
		}
		xs[i] = x
	}
	return nil
}

// implicitCast reports whether an argument of type from is cast to a
// parameter of type to without a CAST: NULL to anything, within the
// numbers, the strings, the timestamps; DATE to a timestamp.
func implicitCast(from, to types.Type) bool {
	switch {
	case from.Kind == types.Null:
		return true
	case from.IsNumeric():
		return to.IsNumeric()
	case from.IsString():
		return to.IsString()
	case isBytes(from):
		return isBytes(to)
	case isTimestamp(from), from.Kind == types.Date:
		return isTimestamp(to) || to.Kind == from.Kind
	}
	return from.Kind == to.Kind
}

// ImplicitCast reports whether a value of type from converts to type to
// without a CAST, as Flink's implicit casts allow (an INSERT's query
// column into its sink's column): NULL to anything, within the numbers,
// the strings, the byte strings, the timestamps (a DATE to a timestamp
// too), and a type to its own kind (composites convert field by field).
func ImplicitCast(from, to types.Type) bool { return implicitCast(from, to) }

func sameType(a, b types.Type) bool {
	a.NotNull, b.NotNull, a.TimeAttr, b.TimeAttr = false, false, 0, 0
	return a.String() == b.String()
}

func argTypes(xs []Expr) []types.Type {
	ts := make([]types.Type, len(xs))
	for i, x := range xs {
		ts[i] = x.Type
	}
	return ts
}

// udfError fails the row's evaluation: the job fails with the function's
// name and the arguments it was called with.
func udfError(name string, args []types.Value, ts []types.Type, err error) runtimeError {
	parts := make([]string, len(args))
	for i, a := range args {
		t := ts[min(i, len(ts)-1)]
		parts[i] = FormatValue(a, t)
		if t.IsString() && !a.Null {
			parts[i] = "'" + strings.ReplaceAll(a.S, "'", "''") + "'"
		}
	}
	return runtimeError(fmt.Sprintf("function %s(%s) failed: %v", name, strings.Join(parts, ", "), err))
}

// scalarCall compiles a call of a user-defined scalar function.
func (c *Compiler) scalarCall(e *parser.Call, name string, f *ScalarFunction) (Expr, error) {
	xs, err := c.args(e)
	if err != nil {
		return Expr{}, err
	}
	params, res, variadic := f.Args, f.Returns, f.Variadic
	if f.Infer != nil {
		if params, res, err = f.Infer(argTypes(xs)); err != nil {
			return Expr{}, ErrAt(e, "function %s: %v", name, err)
		}
		variadic = false
	}
	if err := castParams(e, name, xs, params, variadic); err != nil {
		return Expr{}, err
	}
	if f.Eval == nil {
		return Expr{}, ErrAt(e, "function %s has no Eval", name)
	}
	fs := make([]EvalFn, len(xs))
	for i, x := range xs {
		fs[i] = x.Eval
	}
	eval, callOnNull := f.Eval, f.CallOnNull
	res.TimeAttr = 0
	out := Expr{Type: res, Col: -1, Const: allKonst(xs) && !f.NonDeterministic, Eval: func(r []types.Value) types.Value {
		p, ok := callArgs(fs, r, callOnNull)
		if !ok {
			return types.NullValue
		}
		v, err := eval(*p)
		if err != nil {
			panic(udfError(name, *p, params, err))
		}
		releaseArgs(p)
		return v
	}}
	return out, nil
}

// compileUserAgg compiles a call of a user-defined aggregate function.
func compileUserAgg(a *AggCall, c *parser.Call, ec *Compiler, f *AggregateFunction) (*AggCall, error) {
	name := strings.ToLower(c.Name)
	switch {
	case c.Star:
		return nil, ErrAt(c, "%s(*) is not allowed", name)
	case f.Accumulate == nil || f.Result == nil:
		return nil, ErrAt(c, "aggregate function %s needs Accumulate and Result", name)
	case a.Retract && f.Retract == nil:
		return nil, ErrAt(c, "aggregate function %s cannot aggregate an updating input: it has no Retract (Flink's retract method)", name)
	}
	xs, err := ec.compileAll(c.Args...)
	if err != nil {
		return nil, err
	}
	if err := castParams(c, name, xs, f.Args, false); err != nil {
		return nil, err
	}
	a.Kind, a.udf, a.uName, a.uTs = aggUser, f, name, f.Args
	a.OutT = f.Returns
	a.OutT.TimeAttr = 0
	a.uArgs = make([]EvalFn, len(xs))
	for i, x := range xs {
		a.uArgs[i] = x.Eval
	}
	if len(xs) == 1 {
		a.Arg, a.ArgT, a.ArgCol = xs[0].Eval, xs[0].Type, xs[0].Col
	}
	return a, nil
}

func (a *AggCall) userCreate() types.Value {
	if a.udf.Create == nil {
		return types.NullValue
	}
	return a.udf.Create()
}

// userSlot is where a user aggregate's accumulator is (after the
// multiset of distinct argument rows with DISTINCT).
func (a *AggCall) userSlot() int {
	if a.Distinct {
		return a.slot + 1
	}
	return a.slot
}

var cmpStrings = func(x, y types.Value) int { return strings.Compare(x.S, y.S) }

// userAdd adds (sign 1) or retracts (sign -1) one row; with DISTINCT, a
// row whose arguments are already in the multiset only counts there.
func (a *AggCall) userAdd(acc []types.Value, in []types.Value, sign int64) {
	p, ok := callArgs(a.uArgs, in, a.udf.CallOnNull)
	if !ok {
		return
	}
	defer releaseArgs(p)
	args := *p
	if a.Distinct {
		var first bool
		acc[a.slot], first = multisetAdd(acc[a.slot], types.StringValue(types.Key(args)), sign, cmpStrings)
		if !first {
			return
		}
	}
	fn := a.udf.Accumulate
	if sign < 0 {
		fn = a.udf.Retract
		if fn == nil {
			panic(runtimeError(fmt.Sprintf("aggregate function %s cannot take a row back: it has no Retract", a.uName)))
		}
	}
	s := a.userSlot()
	out, err := fn(acc[s], args)
	if err != nil {
		panic(udfError(a.uName, args, a.uTs, err))
	}
	acc[s] = out
}

func (a *AggCall) userMerge(dst, src types.Value) types.Value {
	if a.udf.Merge == nil {
		panic(runtimeError(fmt.Sprintf("aggregate function %s cannot merge session windows: it has no Merge", a.uName)))
	}
	out, err := a.udf.Merge(dst, src)
	if err != nil {
		panic(runtimeError(fmt.Sprintf("aggregate function %s: Merge failed: %v", a.uName, err)))
	}
	return out
}

func (a *AggCall) userResult(acc types.Value) types.Value {
	v, err := a.udf.Result(acc)
	if err != nil {
		panic(runtimeError(fmt.Sprintf("aggregate function %s: Result failed: %v", a.uName, err)))
	}
	return v
}

// TableCall is a compiled call of a table function: Eval runs it on a row
// of the left side, calling emit per result row.
type TableCall struct {
	Columns types.Schema
	Eval    func(row []types.Value, emit func([]types.Value))
}

// CompileTableCall compiles name(args) in FROM ... LATERAL TABLE(...) or
// UNNEST(x) against the left side's scope.
func (c *Compiler) CompileTableCall(at parser.Expr, name string, args []parser.Expr) (*TableCall, error) {
	if name == "UNNEST" {
		return c.unnest(at, args)
	}
	f, ok := c.Funcs[name].(*TableFunction)
	if !ok {
		if _, other := c.Funcs[name]; other {
			return nil, ErrAt(at, "function %s is not a table function", strings.ToLower(name))
		}
		return nil, ErrAt(at, "no table function named %s", strings.ToLower(name))
	}
	lname := strings.ToLower(name)
	xs, err := c.compileAll(args...)
	if err != nil {
		return nil, err
	}
	call := &parser.Call{Pos: at.ExprPos(), Name: name, Args: args}
	params, cols, variadic := f.Args, f.Columns, f.Variadic
	if f.Infer != nil {
		if params, cols, err = f.Infer(argTypes(xs)); err != nil {
			return nil, ErrAt(at, "function %s: %v", lname, err)
		}
		variadic = false
	}
	if err := castParams(call, lname, xs, params, variadic); err != nil {
		return nil, err
	}
	if f.Eval == nil || len(cols) == 0 {
		return nil, ErrAt(at, "table function %s needs Eval and Columns", lname)
	}
	fs := make([]EvalFn, len(xs))
	for i, x := range xs {
		fs[i] = x.Eval
	}
	eval, callOnNull := f.Eval, f.CallOnNull
	return &TableCall{Columns: cols, Eval: func(row []types.Value, emit func([]types.Value)) {
		p, ok := callArgs(fs, row, callOnNull)
		if !ok {
			return
		}
		if err := eval(*p, emit); err != nil {
			panic(udfError(lname, *p, params, err))
		}
		releaseArgs(p)
	}}, nil
}

// unnest is UNNEST(x): an array's elements (a ROW element's fields as
// columns), a multiset's, or a map's entries as (key, value) rows; NULL or
// empty gives no rows.
func (c *Compiler) unnest(at parser.Expr, args []parser.Expr) (*TableCall, error) {
	if len(args) != 1 {
		return nil, ErrAt(at, "UNNEST takes one array, multiset or map")
	}
	x, err := c.Compile(args[0])
	if err != nil {
		return nil, err
	}
	f := x.Eval
	switch x.Type.Kind {
	case types.Array, types.Multiset:
		et := *x.Type.Elem
		if et.Kind == types.Structured {
			cols := make(types.Schema, len(et.Fields))
			for i, fd := range et.Fields {
				cols[i] = types.Field{Name: fd.Name, Type: fd.Type.Nullable()}
			}
			return &TableCall{Columns: cols, Eval: func(row []types.Value, emit func([]types.Value)) {
				v := f(row)
				if v.Null {
					return
				}
				for _, e := range v.List() {
					if e.Null {
						nulls := make([]types.Value, len(cols))
						for i := range nulls {
							nulls[i] = types.NullValue
						}
						emit(nulls)
						continue
					}
					emit(e.List())
				}
			}}, nil
		}
		cols := types.Schema{{Name: "f0", Type: et}}
		return &TableCall{Columns: cols, Eval: func(row []types.Value, emit func([]types.Value)) {
			v := f(row)
			if v.Null {
				return
			}
			var one [1]types.Value
			for _, e := range v.List() {
				one[0] = e
				emit(one[:])
			}
		}}, nil
	case types.Map:
		cols := types.Schema{{Name: "f0", Type: *x.Type.Key}, {Name: "f1", Type: *x.Type.Elem}}
		return &TableCall{Columns: cols, Eval: func(row []types.Value, emit func([]types.Value)) {
			v := f(row)
			if v.Null {
				return
			}
			l := v.List()
			for i := 0; i+1 < len(l); i += 2 {
				emit(l[i : i+2])
			}
		}}, nil
	}
	return nil, ErrAt(args[0], "UNNEST needs an array, multiset or map, not %s", x.Type)
}
