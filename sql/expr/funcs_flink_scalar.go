package expr

// Flink's scalar built-in functions beyond funcs.go's (issue 39): the
// math, hash and conversion functions here, the string functions in
// funcs_flink_string.go, the temporal ones in funcs_flink_time.go. They
// compile as funcs.go's do: the arguments' types are checked and the
// result typed at planning, and the closure of a call does no per-row
// type switch.

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"github.com/google/uuid"
	"math"
	randv2 "math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// moreScalarNames are the functions of the funcs_flink_*.go files.
var moreScalarNames = []string{
	"LOG2", "LOG", "SIN", "SINH", "COS", "TAN", "TANH", "COT", "ASIN", "ACOS", "ATAN", "ATAN2", "COSH",
	"DEGREES", "RADIANS", "PI", "E", "RAND", "RAND_INTEGER", "UUID", "BIN", "HEX", "UNHEX", "TRUNCATE",
	"PRINTF", "MD5", "SHA1", "SHA224", "SHA256", "SHA384", "SHA512", "SHA2", "TYPEOF",
	"BTRIM", "REPEAT", "OVERLAY", "STARTSWITH", "ENDSWITH", "REGEXP_COUNT", "REGEXP_EXTRACT_ALL",
	"REGEXP_INSTR", "REGEXP_SUBSTR", "TRANSLATE", "LPAD", "RPAD", "FROM_BASE64", "TO_BASE64", "ASCII",
	"CHR", "DECODE", "ENCODE", "INSTR", "LEFT", "RIGHT", "URL_DECODE", "URL_ENCODE", "PARSE_URL",
	"REVERSE", "STR_TO_MAP", "JSON_QUOTE", "JSON_UNQUOTE", "ELT", "SPLIT", "IS_ALPHA", "IS_DECIMAL",
	"IS_DIGIT", "CURRENT_DATE", "CURRENT_TIME", "LOCALTIME", "CURRENT_WATERMARK", "QUARTER", "WEEK", "DAYOFYEAR", "DAYOFWEEK", "OVERLAPS",
	"TIMESTAMPADD", "TIMESTAMPDIFF", "CONVERT_TZ",
	"CURRENT_DATABASE", // bound by the planner (it knows the session's database)
}

func init() { ScalarFunctions = append(ScalarFunctions, moreScalarNames...) }

// moreCall compiles a call of a function of the funcs_flink_*.go files;
// ok is false when e names none of them.
func (c *Compiler) moreCall(e *parser.Call, xs []Expr) (x Expr, ok bool, err error) {
	if x, ok, err = mathCall(e, xs); ok {
		return x, ok, err
	}
	if x, ok, err = c.stringCall(e, xs); ok {
		return x, ok, err
	}
	if e.Name == "CURRENT_WATERMARK" {
		x, err := c.currentWatermark(e, xs)
		return x, true, err
	}
	return timeCall(e, xs)
}

// mathFns are the functions of one DOUBLE, as Java's Math computes them.
var mathFns = map[string]func(float64) float64{
	"LOG2": func(x float64) float64 { return math.Log(x) / math.Ln2 },
	"SIN":  math.Sin, "SINH": math.Sinh, "COS": math.Cos, "TAN": math.Tan, "TANH": math.Tanh,
	"COT":  func(x float64) float64 { return 1 / math.Tan(x) },
	"ASIN": math.Asin, "ACOS": math.Acos, "ATAN": math.Atan, "COSH": math.Cosh,
	"DEGREES": func(x float64) float64 { return x * (180 / math.Pi) },
	"RADIANS": func(x float64) float64 { return x * (math.Pi / 180) },
}

// numArgs checks that the arguments at idx are numbers (or NULL).
func numArgs(e *parser.Call, xs []Expr, idx ...int) error {
	for _, i := range idx {
		if i < len(xs) && !isNumOrNull(xs[i].Type) {
			return ErrAt(e.Args[i], "%s needs a number, not %s", e.Name, xs[i].Type)
		}
	}
	return nil
}

// intArgs checks that the arguments at idx are integers (or NULL).
func intArgs(e *parser.Call, xs []Expr, idx ...int) error {
	for _, i := range idx {
		if i < len(xs) && !xs[i].Type.IsInteger() && xs[i].Type.Kind != types.Null {
			return ErrAt(e.Args[i], "%s needs an integer, not %s", e.Name, xs[i].Type)
		}
	}
	return nil
}

// nonDeterministic is x evaluated on every row: never folded at planning.
func nonDeterministic(t types.Type, eval EvalFn) Expr {
	return Expr{Type: t, Col: -1, Eval: eval}
}

func mathCall(e *parser.Call, xs []Expr) (Expr, bool, error) {
	x, err := func() (Expr, error) {
		switch e.Name {
		case "LOG2", "SIN", "SINH", "COS", "TAN", "TANH", "COT", "ASIN", "ACOS", "ATAN", "COSH", "DEGREES", "RADIANS":
			if err := wantArgs(e, xs, 1, 1); err != nil {
				return Expr{}, err
			}
			if err := numArgs(e, xs, 0); err != nil {
				return Expr{}, err
			}
			return floatFn1(xs[0], mathFns[e.Name]), nil
		case "LOG":
			// LOG(x) is LN(x); LOG(b, x) the logarithm of x to the base b
			if err := wantArgs(e, xs, 1, 2); err != nil {
				return Expr{}, err
			}
			if err := numArgs(e, xs, 0, 1); err != nil {
				return Expr{}, err
			}
			if len(xs) == 1 {
				return floatFn1(xs[0], math.Log), nil
			}
			return floatFn2(xs, func(b, x float64) float64 { return math.Log(x) / math.Log(b) }), nil
		case "ATAN2":
			if err := wantArgs(e, xs, 2, 2); err != nil {
				return Expr{}, err
			}
			if err := numArgs(e, xs, 0, 1); err != nil {
				return Expr{}, err
			}
			return floatFn2(xs, math.Atan2), nil
		case "PI", "E":
			if err := wantArgs(e, xs, 0, 0); err != nil {
				return Expr{}, err
			}
			v := math.Pi
			if e.Name == "E" {
				v = math.E
			}
			return konst(types.FloatValue(v), types.Type{Kind: types.Double, NotNull: true}, false), nil
		case "RAND", "RAND_INTEGER":
			return randCall(e, xs)
		case "UUID":
			if err := wantArgs(e, xs, 0, 0); err != nil {
				return Expr{}, err
			}
			return nonDeterministic(types.Type{Kind: types.Varchar, Length: types.MaxLength, NotNull: true}, func([]types.Value) types.Value {
				return types.StringValue(uuid.NewString())
			}), nil
		case "BIN":
			if err := wantArgs(e, xs, 1, 1); err != nil {
				return Expr{}, err
			}
			if err := intArgs(e, xs, 0); err != nil {
				return Expr{}, err
			}
			// Java's Long.toBinaryString: a negative number in two's complement
			return strFn1(xs, types.StringType, func(a0 types.Value) types.Value {
				return types.StringValue(strconv.FormatUint(uint64(a0.I), 2))
			}), nil
		case "HEX":
			if err := wantArgs(e, xs, 1, 1); err != nil {
				return Expr{}, err
			}
			if xs[0].Type.IsInteger() {
				return strFn1(xs, types.StringType, func(a0 types.Value) types.Value {
					return types.StringValue(strings.ToUpper(strconv.FormatUint(uint64(a0.I), 16)))
				}), nil
			}
			if !isBytes(xs[0].Type) {
				if err := stringArgs(e, xs, 0); err != nil {
					return Expr{}, err
				}
			}
			return strFn1(xs, types.StringType, func(a0 types.Value) types.Value {
				return types.StringValue(strings.ToUpper(hex.EncodeToString([]byte(a0.S))))
			}), nil
		case "UNHEX":
			if err := oneStringArg(e, xs); err != nil {
				return Expr{}, err
			}
			return strFn1(xs, types.BytesType, func(a0 types.Value) types.Value {
				b, ok := unhex(a0.S)
				if !ok {
					return types.NullValue
				}
				return types.StringValue(string(b))
			}).nullable(), nil
		case "TRUNCATE":
			return truncateCall(e, xs)
		case "MD5", "SHA1", "SHA224", "SHA256", "SHA384", "SHA512":
			if err := oneStringArg(e, xs); err != nil {
				return Expr{}, err
			}
			h := hashFns[e.Name]
			return strFn1(xs, types.StringType, func(a0 types.Value) types.Value { return types.StringValue(h(a0.S)) }), nil
		case "SHA2":
			if err := wantArgs(e, xs, 2, 2); err != nil {
				return Expr{}, err
			}
			if err := stringArgs(e, xs, 0); err != nil {
				return Expr{}, err
			}
			if err := intArgs(e, xs, 1); err != nil {
				return Expr{}, err
			}
			if xs[1].Const {
				bits := xs[1].Eval(nil)
				if bits.Null {
					return konst(types.NullValue, types.StringType, false), nil
				}
				h := hashFns["SHA"+strconv.FormatInt(bits.I, 10)]
				if h == nil || bits.I == 1 {
					return Expr{}, ErrAt(e.Args[1], "SHA2's hash length must be 224, 256, 384 or 512, not %d", bits.I)
				}
				return strFn1(xs[:1], types.StringType, func(a0 types.Value) types.Value { return types.StringValue(h(a0.S)) }), nil
			}
			return strFn(xs, types.StringType, func(a []types.Value) types.Value {
				h := hashFns["SHA"+strconv.FormatInt(a[1].I, 10)]
				if h == nil || a[1].I == 1 {
					panic(runtimeError("SHA2's hash length must be 224, 256, 384 or 512, not " + strconv.FormatInt(a[1].I, 10)))
				}
				return types.StringValue(h(a[0].S))
			}), nil
		case "TYPEOF":
			// the argument's type as weir infers it, a constant: the argument
			// is not evaluated
			if err := wantArgs(e, xs, 1, 2); err != nil {
				return Expr{}, err
			}
			if len(xs) == 2 && (xs[1].Type.Kind != types.Boolean || !xs[1].Const) {
				return Expr{}, ErrAt(e.Args[1], "TYPEOF's force_serializable must be a BOOLEAN literal")
			}
			t := xs[0].Type
			return konst(types.StringValue(t.String()), types.Type{Kind: types.Varchar, Length: types.MaxLength, NotNull: true}, false), nil
		}
		return Expr{}, errNotMine
	}()
	if err == errNotMine {
		return Expr{}, false, nil
	}
	return x, true, err
}

// errNotMine tells moreCall's parts that a name is not theirs.
var errNotMine = parser.Errorf(parser.Pos{}, "not mine")

// hashFns are the digests of MD5 and the SHA functions, in lower-case hex
// as Flink's.
var hashFns = map[string]func(s string) string{
	"MD5":    func(s string) string { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) },
	"SHA1":   func(s string) string { h := sha1.Sum([]byte(s)); return hex.EncodeToString(h[:]) },
	"SHA224": func(s string) string { h := sha256.Sum224([]byte(s)); return hex.EncodeToString(h[:]) },
	"SHA256": func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) },
	"SHA384": func(s string) string { h := sha512.Sum384([]byte(s)); return hex.EncodeToString(h[:]) },
	"SHA512": func(s string) string { h := sha512.Sum512([]byte(s)); return hex.EncodeToString(h[:]) },
}

// unhex decodes hexadecimal digits as Flink's UNHEX: an odd number of
// digits is read as if a 0 led them; false for a character that is no
// hexadecimal digit.
func unhex(s string) ([]byte, bool) {
	if len(s)%2 == 1 {
		s = "0" + s
	}
	b, err := hex.DecodeString(s)
	return b, err == nil
}

// javaRandom is java.util.Random: the same seed gives the same sequence
// as Flink's RAND(seed) and RAND_INTEGER(seed, n). It is safe for
// concurrent use (the subtasks of an operator share a compiled call).
type javaRandom struct{ seed atomic.Int64 }

const (
	jrMult = 0x5DEECE66D
	jrAdd  = 0xB
	jrMask = 1<<48 - 1
)

func newJavaRandom(seed int64) *javaRandom {
	r := &javaRandom{}
	r.seed.Store((seed ^ jrMult) & jrMask)
	return r
}

func (r *javaRandom) next(bits uint) int32 {
	for {
		old := r.seed.Load()
		nx := (old*jrMult + jrAdd) & jrMask
		if r.seed.CompareAndSwap(old, nx) {
			return int32(uint64(nx) >> (48 - bits))
		}
	}
}

func (r *javaRandom) nextDouble() float64 {
	return float64(int64(r.next(26))<<27+int64(r.next(27))) * (1.0 / (1 << 53))
}

// nextInt is Random.nextInt(bound), bound > 0.
func (r *javaRandom) nextInt(bound int32) int32 {
	v := r.next(31)
	m := bound - 1
	if bound&m == 0 {
		return int32((int64(bound) * int64(v)) >> 31)
	}
	for u := v; ; u = r.next(31) {
		v = u % bound
		if u-v+m >= 0 {
			return v
		}
	}
}

// randCall is RAND([seed]) and RAND_INTEGER([seed, ]bound). With a seed
// (a constant, as Flink evaluates it once), a call's numbers are
// java.util.Random's sequence of that seed; without, they are random.
func randCall(e *parser.Call, xs []Expr) (Expr, error) {
	lo, hi := 0, 1
	if e.Name == "RAND_INTEGER" {
		lo, hi = 1, 2
	}
	if err := wantArgs(e, xs, lo, hi); err != nil {
		return Expr{}, err
	}
	if err := intArgs(e, xs, 0, 1); err != nil {
		return Expr{}, err
	}
	var jr *javaRandom
	seedNull := false
	if len(xs) == hi {
		if !xs[0].Const {
			return Expr{}, ErrAt(e.Args[0], "%s's seed must be a constant", e.Name)
		}
		s := xs[0].Eval(nil)
		seedNull = s.Null
		jr = newJavaRandom(s.I)
		xs = xs[1:]
	}
	if e.Name == "RAND" {
		t := types.Type{Kind: types.Double, NotNull: jr == nil}
		if seedNull {
			return konst(types.NullValue, t, false), nil
		}
		if jr == nil {
			return nonDeterministic(t, func([]types.Value) types.Value { return types.FloatValue(randv2.Float64()) }), nil
		}
		return nonDeterministic(t, func([]types.Value) types.Value { return types.FloatValue(jr.nextDouble()) }), nil
	}
	t := types.Type{Kind: types.Int, NotNull: jr == nil && xs[0].Type.NotNull}
	if seedNull {
		return konst(types.NullValue, t, false), nil
	}
	f := xs[0].Eval
	return nonDeterministic(t, func(r []types.Value) types.Value {
		b := f(r)
		if b.Null {
			return b
		}
		if b.I <= 0 || b.I > math.MaxInt32 {
			panic(runtimeError("RAND_INTEGER's bound must be a positive INT, not " + strconv.FormatInt(b.I, 10)))
		}
		if jr == nil {
			return types.IntValue(int64(randv2.Int32N(int32(b.I))))
		}
		return types.IntValue(int64(jr.nextInt(int32(b.I))))
	}), nil
}

// truncateCall is TRUNCATE(x[, digits]): x cut toward zero to digits
// places after the point (before it when negative), typed as Flink's
// (ROUND's type: DECIMAL(1 + p - s + d, d) for a DECIMAL(p, s)).
func truncateCall(e *parser.Call, xs []Expr) (Expr, error) {
	if err := wantArgs(e, xs, 1, 2); err != nil {
		return Expr{}, err
	}
	if err := numArgs(e, xs, 0); err != nil {
		return Expr{}, err
	}
	if err := intArgs(e, xs, 1); err != nil {
		return Expr{}, err
	}
	d := 0
	x := xs[0]
	if len(xs) == 2 {
		if !xs[1].Const {
			return Expr{}, ErrAt(e.Args[1], "TRUNCATE's digits must be a constant")
		}
		v := xs[1].Eval(nil)
		if v.Null {
			return konst(types.NullValue, x.Type.Nullable(), false), nil
		}
		d = int(max(min(v.I, 100), -100))
	}
	f := x.Eval
	t := x.Type
	t.TimeAttr = 0
	switch {
	case t.Kind == types.Null:
		return x, nil
	case t.IsInteger():
		if d >= 0 {
			return x, nil
		}
		if -d > 18 {
			return Expr{Type: t, Const: x.Const, Col: -1, Eval: func(r []types.Value) types.Value {
				if v := f(r); v.Null {
					return v
				}
				return types.IntValue(0)
			}}, nil
		}
		p := pow10[-d]
		return Expr{Type: t, Const: x.Const, Col: -1, Eval: func(r []types.Value) types.Value {
			v := f(r)
			if v.Null {
				return v
			}
			return types.IntValue(v.I / p * p)
		}}, nil
	case t.Kind == types.Float || t.Kind == types.Double:
		bits := 64
		if t.Kind == types.Float {
			bits = 32
		}
		return Expr{Type: t, Const: x.Const, Col: -1, Eval: func(r []types.Value) types.Value {
			v := f(r)
			if v.Null {
				return v
			}
			return types.FloatValue(truncateFloat(v.Float(), d, bits))
		}}, nil
	}
	// DECIMAL(p, s)
	p, s := t.Precision, t.Scale
	if d >= s {
		return x, nil
	}
	out := types.DecimalType(min(maxPrecision, 1+p-s), 0)
	if d > 0 {
		out = types.DecimalType(1+p-s+d, d)
	}
	out.NotNull = t.NotNull
	cut := s - d // digits dropped
	back := max(-d, 0)
	if !t.BigDecimal() && cut <= 18 && back <= 18 {
		div, mul := pow10[cut], pow10[back]
		return Expr{Type: out, Const: x.Const, Col: -1, Eval: func(r []types.Value) types.Value {
			v := f(r)
			if v.Null {
				return v
			}
			return decResult64(v.I/div*mul, out)
		}}, nil
	}
	div, mul := bigPow10(cut), bigPow10(back)
	return Expr{Type: out, Const: x.Const, Col: -1, Eval: func(r []types.Value) types.Value {
		v := f(r)
		if v.Null {
			return v
		}
		u := decBig(v, t)
		u.Quo(u, div)
		return decValue(u.Mul(u, mul), out)
	}}, nil
}

// truncateFloat cuts f to d decimal places as Flink does, through the
// shortest decimal that reads back as f (Java's BigDecimal.valueOf).
func truncateFloat(f float64, d, bits int) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return f
	}
	s := strconv.FormatFloat(f, 'e', -1, bits)
	mant, exp, _ := strings.Cut(s, "e")
	neg := strings.HasPrefix(mant, "-")
	digits := strings.Replace(strings.TrimPrefix(mant, "-"), ".", "", 1)
	e, _ := strconv.Atoi(exp)
	// the value is 0.digits * 10^(e+1); keep the digits before place d
	keep := e + 1 + d
	if keep <= 0 {
		return 0
	}
	if keep < len(digits) {
		digits = digits[:keep]
	}
	out, _ := strconv.ParseFloat("0."+digits+"e"+strconv.Itoa(e+1), bits)
	if neg {
		out = -out
	}
	return out
}
