package planner

import (
	"errors"
	"strings"

	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/types"
)

// User-defined functions for the conformance cases (testdata/conformance/
// udf), registered under class names as a program registers the Go twins
// of its Java UDFs, so the cases CREATE FUNCTION them as Flink files do.
func init() {
	// greet(name): 'hello, ' || name; NULL gives NULL without a call
	expr.RegisterClass("weir.test.Greet", &expr.ScalarFunction{
		Args: []types.Type{types.StringType}, Returns: types.StringType,
		Eval: func(a []types.Value) (types.Value, error) {
			return types.StringValue("hello, " + a[0].S), nil
		},
	})
	// times(a, b): a * b over BIGINTs (INT arguments are cast)
	expr.RegisterClass("weir.test.Times", &expr.ScalarFunction{
		Args: []types.Type{types.BigIntType, types.BigIntType}, Returns: types.BigIntType,
		Eval: func(a []types.Value) (types.Value, error) { return types.IntValue(a[0].I * a[1].I), nil },
	})
	// nvl_len(s): the length of s, 0 for NULL (it sees NULL)
	expr.RegisterClass("weir.test.NvlLen", &expr.ScalarFunction{
		Args: []types.Type{types.StringType}, Returns: types.Type{Kind: types.Int, NotNull: true}, CallOnNull: true,
		Eval: func(a []types.Value) (types.Value, error) {
			if a[0].Null {
				return types.IntValue(0), nil
			}
			return types.IntValue(int64(len(a[0].S))), nil
		},
	})
	// join_all(s, ...): its arguments joined by '+' (variadic)
	expr.RegisterClass("weir.test.JoinAll", &expr.ScalarFunction{
		Args: []types.Type{types.StringType}, Variadic: true, Returns: types.StringType,
		Eval: func(a []types.Value) (types.Value, error) {
			parts := make([]string, len(a))
			for i, v := range a {
				parts[i] = v.S
			}
			return types.StringValue(strings.Join(parts, "+")), nil
		},
	})
	// fail_on_two(x): x, but an error for 2
	expr.RegisterClass("weir.test.FailOnTwo", &expr.ScalarFunction{
		Args: []types.Type{types.BigIntType}, Returns: types.BigIntType,
		Eval: func(a []types.Value) (types.Value, error) {
			if a[0].I == 2 {
				return types.Value{}, errors.New("two is not allowed")
			}
			return a[0], nil
		},
	})
	// split(s, sep): a row (word, length) per part of s
	expr.RegisterClass("weir.test.Split", &expr.TableFunction{
		Args:    []types.Type{types.StringType, types.StringType},
		Columns: types.Schema{{Name: "word", Type: types.StringType}, {Name: "length", Type: types.IntType}},
		Eval: func(a []types.Value, emit func([]types.Value)) error {
			if a[0].S == "" {
				return nil
			}
			for _, w := range strings.Split(a[0].S, a[1].S) {
				emit([]types.Value{types.StringValue(w), types.IntValue(int64(len(w)))})
			}
			return nil
		},
	})
	// weighted_avg(v, w): sum(v*w)/sum(w) as BIGINT, Flink's documented
	// example; the accumulator is [sum, weight]; it retracts and merges
	wavg := func(sign int64) func(acc types.Value, a []types.Value) (types.Value, error) {
		return func(acc types.Value, a []types.Value) (types.Value, error) {
			l := acc.List()
			l[0].I += sign * a[0].I * a[1].I
			l[1].I += sign * a[1].I
			return acc, nil
		}
	}
	expr.RegisterClass("weir.test.WeightedAvg", &expr.AggregateFunction{
		Args: []types.Type{types.BigIntType, types.IntType}, Returns: types.BigIntType,
		Create:     func() types.Value { return types.ListValue([]types.Value{types.IntValue(0), types.IntValue(0)}) },
		Accumulate: wavg(1), Retract: wavg(-1),
		Merge: func(acc, o types.Value) (types.Value, error) {
			l, m := acc.List(), o.List()
			l[0].I += m[0].I
			l[1].I += m[1].I
			return acc, nil
		},
		Result: func(acc types.Value) (types.Value, error) {
			l := acc.List()
			if l[1].I == 0 {
				return types.NullValue, nil
			}
			return types.IntValue(l[0].I / l[1].I), nil
		},
	})
	// concat_agg(s): the strings in arrival order joined by ','; no
	// Retract, no Merge
	expr.RegisterClass("weir.test.ConcatAgg", &expr.AggregateFunction{
		Args: []types.Type{types.StringType}, Returns: types.StringType,
		Accumulate: func(acc types.Value, a []types.Value) (types.Value, error) {
			if acc.Null || acc.S == "" {
				return types.StringValue(a[0].S), nil
			}
			return types.StringValue(acc.S + "," + a[0].S), nil
		},
		Result: func(acc types.Value) (types.Value, error) { return acc, nil },
	})
}
