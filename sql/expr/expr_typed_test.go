package expr

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// typedScope is the row the typed-evaluation tests compile against.
func typedScope() *Scope {
	ts := types.Timestamp3
	return &Scope{Cols: []Column{
		{Name: "a", Type: types.BigIntType}, {Name: "b", Type: types.IntType}, {Name: "c", Type: types.BooleanType},
		{Name: "d", Type: types.BooleanType}, {Name: "ts", Type: ts}, {Name: "n", Type: types.Type{Kind: types.BigInt, NotNull: true}},
		{Name: "s", Type: types.StringType}, {Name: "u", Type: types.StringType},
	}}
}

// typedExprs are expressions whose typed forms (expr_typed.go) are
// checked against the generic evaluation: comparisons of every operator
// against columns and constants (the NULL constant too), three-valued
// AND/OR/NOT nested, integer arithmetic with its division by zero, CASE
// (the integer switch and the searched form), BETWEEN and IN.
var typedExprs = []string{
	"a = 2", "a <> b", "a < 5", "b >= a", "a <= -3", "a > b", "2 = a", "a >= 0", "b < a", "a <> 1",
	"c = d", "ts > TIMESTAMP '1970-01-01 00:00:00.002'", "ts <= ts",
	"a = CAST(NULL AS BIGINT)", "a < CAST(NULL AS INT)",
	"MOD(a, 3) = 0 AND b = 2", "MOD(a, 123) = 0", "c AND d", "c OR d", "NOT c", "NOT (c AND a = 1)",
	"c OR a > 2 OR d", "NOT (c OR d) AND (a = 1 OR b = 1)", "(c AND NOT d) OR (a < b AND d)",
	"c AND TRUE", "d OR FALSE", "c AND CAST(NULL AS BOOLEAN)", "c OR CAST(NULL AS BOOLEAN)",
	"NOT CAST(NULL AS BOOLEAN) OR c",
	"a + b * 2 - 7", "a / 3", "a % 4", "a - 5", "a * -2", "a / b", "MOD(a, b)", "a + n", "n * n = a",
	"a BETWEEN b AND 5", "a NOT BETWEEN -1 AND 1", "a IN (1, 2, 3)", "a NOT IN (1, 2)", "a IN (1, CAST(NULL AS BIGINT))",
	"CASE WHEN a = 0 THEN b WHEN a = 1 THEN a ELSE 9 END", "CASE WHEN c THEN 1 WHEN a > 0 THEN 2 END",
	"CASE WHEN a = 0 THEN ts WHEN a = 1 THEN ts END", "CASE a WHEN 1 THEN 'one' WHEN 2 THEN 'two' ELSE 'many' END",
	"a = 1 AND 1 / b = 0", "b = 0 OR 10 / b > 1",
	"s = 'x'", "s <> 'x'", "s < 'y'", "s >= 'x'", "s = u", "s > u", "'x' = s", "s IN ('x', 'z')",
	"s = CAST(NULL AS STRING)", "s LIKE 'x%'", "s NOT LIKE '%z'", "s IS NULL", "s IS NOT NULL",
	"a IS NULL", "a IS NOT NULL", "(a + 1) IS NULL", "c IS NOT NULL AND s = 'y'", "NOT (s LIKE 'y%') OR a IS NULL",
	// q14's CASE over HOUR (timestamps of -4..4 µs: the hours of the day
	// before and after the epoch), MINUTE, SECOND, EXTRACT of a date
	"HOUR(ts) >= 8", "HOUR(ts) = 23 OR HOUR(ts) = 0", "MINUTE(ts) + SECOND(ts) * 100", "EXTRACT(DAY FROM ts)",
	"CASE WHEN HOUR(ts) >= 8 AND HOUR(ts) <= 18 THEN 'dayTime' WHEN HOUR(ts) <= 6 OR HOUR(ts) >= 20 THEN 'nightTime' ELSE 'otherTime' END",
}

// TestTypedExtract: HOUR, MINUTE, SECOND and EXTRACT of a column have the
// typed integer form, so that comparisons of them (q14's CASE) run typed.
func TestTypedExtract(t *testing.T) {
	for _, text := range []string{"HOUR(ts)", "MINUTE(ts)", "SECOND(ts)", "EXTRACT(YEAR FROM ts)"} {
		e, err := parser.ParseExpr(text)
		if err != nil {
			t.Fatal(err)
		}
		x, err := (&Compiler{Scope: typedScope()}).Compile(e)
		if err != nil {
			t.Fatal(err)
		}
		if x.ival == nil {
			t.Errorf("%s has no typed form", text)
		}
	}
}

// TestTypedEvaluationMatchesGeneric compiles each expression twice, with
// its typed forms and without (Compiler.GenericOnly), and evaluates both,
// and the typed forms' own entry points (ival, pred, filt), over random rows
// with NULLs and small values (so that equalities and division by zero
// happen): the same value or NULL, the same failure.
func TestTypedEvaluationMatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	rows := make([][]types.Value, 3000)
	for i := range rows {
		r := make([]types.Value, 8)
		for j := range r {
			switch {
			case j != 5 && rng.IntN(5) == 0:
				r[j] = types.NullValue
			case j >= 6:
				r[j] = types.StringValue([]string{"", "x", "xy", "y", "z"}[rng.IntN(5)])
			case j == 2 || j == 3:
				r[j] = types.BoolValue(rng.IntN(2) == 0)
			default:
				r[j] = types.IntValue(rng.Int64N(9) - 4)
			}
		}
		rows[i] = r
	}
	typedSeen := 0
	for _, text := range typedExprs {
		e, err := parser.ParseExpr(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		fast, err := (&Compiler{Scope: typedScope()}).Compile(e)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		slow, err := (&Compiler{Scope: typedScope(), GenericOnly: true}).Compile(e)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if slow.ival != nil || slow.pred != nil || slow.filt != nil {
			t.Fatalf("%s: the generic compilation has typed forms", text)
		}
		if fast.ival != nil || fast.pred != nil || fast.filt != nil {
			typedSeen++
		}
		for _, r := range rows {
			want, wantPanic := evalCatch(slow.Eval, r)
			got, gotPanic := evalCatch(fast.Eval, r)
			if wantPanic != gotPanic || !got.Equal(want) {
				t.Fatalf("%s on %v: typed %v (failure %q), generic %v (failure %q)", text, r, got, gotPanic, want, wantPanic)
			}
			if fast.ival != nil {
				i, ok, p := intCatch(fast.ival, r)
				if p != wantPanic || (wantPanic == "" && (ok == want.Null || (ok && i != want.I))) {
					t.Fatalf("%s on %v: ival %d, %v (failure %q), generic %v", text, r, i, ok, p, want)
				}
			}
			if fast.pred != nil {
				v, p := evalCatch(evalOfPred(fast.pred), r)
				if p != wantPanic || !v.Equal(want) {
					t.Fatalf("%s on %v: pred %v (failure %q), generic %v", text, r, v, p, want)
				}
			}
			if fast.Type.Kind == types.Boolean {
				keep, p := filterCatch(FilterOf(fast), r)
				if p != wantPanic || (wantPanic == "" && keep != (!want.Null && want.Bool())) {
					t.Fatalf("%s on %v: filter keeps %v (failure %q), generic %v", text, r, keep, p, want)
				}
			}
		}
	}
	if typedSeen < len(typedExprs)*3/4 {
		t.Fatalf("only %d of %d expressions have typed forms: the test checks little", typedSeen, len(typedExprs))
	}
}

func evalCatch(f EvalFn, r []types.Value) (v types.Value, failure string) {
	defer func() {
		if x := recover(); x != nil {
			failure = fmt.Sprint(x)
		}
	}()
	return f(r), ""
}

func intCatch(f IntFn, r []types.Value) (i int64, ok bool, failure string) {
	defer func() {
		if x := recover(); x != nil {
			failure = fmt.Sprint(x)
		}
	}()
	i, ok = f(r)
	return i, ok, ""
}

func filterCatch(f FilterFn, r []types.Value) (keep bool, failure string) {
	defer func() {
		if x := recover(); x != nil {
			failure = fmt.Sprint(x)
		}
	}()
	return f(r), ""
}

// TestTypedFilterTruthTable: WHERE keeps a row only when its condition is
// TRUE; AND, OR and NOT over TRUE, FALSE and NULL in every combination, on
// the typed filter path the Calc runs.
func TestTypedFilterTruthTable(t *testing.T) {
	vals := []types.Value{types.BoolValue(true), types.BoolValue(false), types.NullValue}
	sc := &Scope{Cols: []Column{{Name: "p", Type: types.BooleanType}, {Name: "q", Type: types.BooleanType}}}
	and := func(a, b tri) tri {
		switch {
		case a == triFalse || b == triFalse:
			return triFalse
		case a == triNull || b == triNull:
			return triNull
		}
		return triTrue
	}
	or := func(a, b tri) tri {
		switch {
		case a == triTrue || b == triTrue:
			return triTrue
		case a == triNull || b == triNull:
			return triNull
		}
		return triFalse
	}
	not := func(a tri) tri {
		if a == triNull {
			return a
		}
		return 1 - a
	}
	for _, c := range []struct {
		text string
		want func(p, q tri) tri
	}{
		{"p AND q", and}, {"p OR q", or}, {"NOT p", func(p, _ tri) tri { return not(p) }},
		{"NOT (p AND q)", func(p, q tri) tri { return not(and(p, q)) }},
		{"NOT p OR q", func(p, q tri) tri { return or(not(p), q) }},
		{"p AND NOT q", func(p, q tri) tri { return and(p, not(q)) }},
	} {
		e, _ := parser.ParseExpr(c.text)
		x, err := (&Compiler{Scope: sc}).Compile(e)
		if err != nil {
			t.Fatal(err)
		}
		f := FilterOf(x)
		for _, p := range vals {
			for _, q := range vals {
				r := []types.Value{p, q}
				want := c.want(truth(p), truth(q))
				if got := truth(x.Eval(r)); got != want {
					t.Fatalf("%s with p=%v q=%v is %d, want %d", c.text, p, q, got, want)
				}
				if keep := f(r); keep != (want == triTrue) {
					t.Fatalf("WHERE %s with p=%v q=%v keeps %v", c.text, p, q, keep)
				}
			}
		}
	}
}
