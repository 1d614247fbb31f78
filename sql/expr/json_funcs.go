package expr

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// The SQL/JSON functions as Flink runs them (its SqlJsonUtils, Calcite's
// JSON functions over Jayway's JsonPath and Jackson):
//
//   - A path is '[lax|strict] $...'; without a mode it is strict, as in
//     Flink (its regular expression falls back to STRICT). Strict mode
//     makes a path that does not match an error, which the ON ERROR clause
//     handles; lax mode makes it an empty result (ON EMPTY), and invalid
//     JSON text empty too. A malformed path is an error of every row (ON
//     ERROR), as Flink reads it per row; path features weir lacks (see
//     json_path.go: functions with arguments, some filter operators) are
//     planning errors.
//   - A path with a wildcard, an index list or a slice matches a list,
//     which is never a scalar: JSON_VALUE of one is empty (lax) or an error
//     (strict), JSON_QUERY gives the list as an array, and JSON_EXISTS is
//     TRUE even for an empty list (Jayway returns one). A path that ends on
//     a JSON null matches nothing: JSON_EXISTS is FALSE, JSON_VALUE and
//     JSON_QUERY are empty.
//   - JSON_VALUE of an object or an array is empty in lax mode and an error
//     in strict mode (so NULL under the default NULL ON EMPTY NULL ON
//     ERROR). RETURNING converts the scalar as a CAST of its text would
//     (a number to an integer type truncates toward zero); one that does
//     not convert (out of range, not a number) is an error for ON ERROR. A
//     DEFAULT that does not convert falls through to ON ERROR from ON EMPTY
//     and fails the job from ON ERROR.
//   - JSON_QUERY of a scalar is empty (lax) or an error (strict) unless a
//     wrapper makes it an array.
//   - JSON text out of JSON_QUERY, JSON_STRING and the constructors is
//     Jackson's as Flink configures it: compact, object members sorted by
//     key, strings escaped only where JSON needs it; numbers as Java's
//     BigDecimal prints them (1.0E+10); DECIMAL values with trailing zeros
//     stripped (Jackson's JsonNodeFactory: 2.50 is 2.5, 100 is 1E+2);
//     TIMESTAMP as ISO-8601 ("1990-06-02T13:37:42.001", with a Z for
//     TIMESTAMP_LTZ), bytes as base64, ROW and MAP as objects.
//   - A JSON_OBJECT or JSON_ARRAY call as a value of a JSON_OBJECT,
//     JSON_ARRAY, JSON_STRING or JSON aggregate goes in as JSON, not as a
//     string (Flink's JsonGenerateUtils does so for these two calls only:
//     JSON_QUERY's result, a string, is quoted).
//   - x IS JSON of a NULL x is FALSE (IS NOT JSON TRUE), as Flink's
//     documentation says (Flink 2.x changed it to NULL).
//   - JSON text with content after its value ('{} x') is not JSON (Jackson
//     ignores what follows the first value); nesting is bounded at 10000.

// jsonObject is a JSON object with its members in document order (a
// wildcard visits them in that order, as Jackson's LinkedHashMap does); a
// repeated key keeps its first place and its last value.
type jsonObject struct {
	keys []string
	vals []any
	idx  map[string]int // once the object has many members
}

func (o *jsonObject) get(k string) (any, bool) {
	if o.idx != nil {
		i, ok := o.idx[k]
		if !ok {
			return nil, false
		}
		return o.vals[i], true
	}
	for i, key := range o.keys {
		if key == k {
			return o.vals[i], true
		}
	}
	return nil, false
}

func (o *jsonObject) set(k string, v any) {
	if o.idx != nil {
		if i, ok := o.idx[k]; ok {
			o.vals[i] = v
			return
		}
	} else {
		for i, key := range o.keys {
			if key == k {
				o.vals[i] = v
				return
			}
		}
	}
	o.keys = append(o.keys, k)
	o.vals = append(o.vals, v)
	switch {
	case o.idx != nil:
		o.idx[k] = len(o.keys) - 1
	case len(o.keys) > 16:
		o.idx = make(map[string]int, 2*len(o.keys))
		for i, key := range o.keys {
			o.idx[key] = i
		}
	}
}

// sorted returns the member positions in key order (Jackson's
// ORDER_MAP_ENTRIES_BY_KEYS, as Flink writes JSON).
func (o *jsonObject) sorted() []int {
	order := make([]int, len(o.keys))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return o.keys[order[a]] < o.keys[order[b]] })
	return order
}

// maxJSONDepth is how deep JSON text may nest (encoding/json's bound).
const maxJSONDepth = 10000

// parseJSON reads JSON text into nil (null), bool, json.Number, string,
// []any and *jsonObject values. Numbers keep their text, so big integers
// and decimals stay exact. encoding/json checks the text (json.Valid, and
// its error for the message); the tree is then read from the valid text.
func parseJSON(s string) (any, error) {
	if !json.Valid([]byte(s)) {
		var v any
		err := json.Unmarshal([]byte(s), &v)
		if err == nil || strings.TrimSpace(s) == "" {
			err = errors.New("unexpected end of JSON input")
		}
		return nil, err
	}
	r := jsonReader{s: s}
	return r.value(), nil
}

// jsonReader reads a valid JSON text (json.Valid has checked it).
type jsonReader struct {
	s string
	i int
}

func (r *jsonReader) space() {
	for r.i < len(r.s) {
		switch r.s[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

func (r *jsonReader) value() any {
	r.space()
	switch c := r.s[r.i]; c {
	case '{':
		r.i++
		o := &jsonObject{}
		r.space()
		if r.s[r.i] == '}' {
			r.i++
			return o
		}
		for {
			r.space()
			k := r.str()
			r.space()
			r.i++ // ':'
			o.set(k, r.value())
			r.space()
			r.i++ // ',' or '}'
			if r.s[r.i-1] == '}' {
				return o
			}
		}
	case '[':
		r.i++
		a := []any{}
		r.space()
		if r.s[r.i] == ']' {
			r.i++
			return a
		}
		for {
			a = append(a, r.value())
			r.space()
			r.i++ // ',' or ']'
			if r.s[r.i-1] == ']' {
				return a
			}
		}
	case '"':
		return r.str()
	case 't':
		r.i += 4
		return true
	case 'f':
		r.i += 5
		return false
	case 'n':
		r.i += 4
		return nil
	}
	j := r.i
	for j < len(r.s) && strings.IndexByte("+-0123456789.eE", r.s[j]) >= 0 {
		j++
	}
	n := json.Number(r.s[r.i:j])
	r.i = j
	return n
}

// str reads a string at its opening quote: a slice of the text when it
// has no escapes, else what encoding/json makes of it.
func (r *jsonReader) str() string {
	start := r.i + 1
	j := start
	escaped := false
	for r.s[j] != '"' {
		if r.s[j] == '\\' {
			escaped = true
			j++
		}
		j++
	}
	r.i = j + 1
	if !escaped {
		return r.s[start:j]
	}
	var out string
	_ = json.Unmarshal([]byte(r.s[start-1:j+1]), &out) // valid: json.Valid said so
	return out
}

func isJSONScalar(v any) bool {
	switch v.(type) {
	case []any, *jsonObject:
		return false
	}
	return true
}

// jsonText writes a parsed JSON value as Flink does.
func jsonText(v any) string { return string(appendJSON(nil, v)) }

func appendJSON(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, v)
	case json.Number:
		return append(b, canonicalJSONNumber(string(v))...)
	case jsonDouble:
		return append(b, formatDouble(float64(v))...)
	case string:
		return appendJSONString(b, v)
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, e)
		}
		return append(b, ']')
	case *jsonObject:
		b = append(b, '{')
		for i, j := range v.sorted() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, v.keys[j])
			b = append(b, ':')
			b = appendJSON(b, v.vals[j])
		}
		return append(b, '}')
	}
	return b
}

// appendJSONString writes s as a JSON string, escaping as Jackson does:
// the quote, the backslash and control characters (short forms where JSON
// has them); other characters as they are.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// canonicalJSONNumber is a JSON number as Flink prints what Jackson read:
// an integer as it is (Integer, Long, BigInteger), one with a fraction or
// an exponent as a BigDecimal (Flink's parser reads those as BigDecimal).
func canonicalJSONNumber(t string) string {
	if !strings.ContainsAny(t, ".eE") {
		if t == "-0" {
			return "0"
		}
		return t
	}
	neg := strings.HasPrefix(t, "-")
	mant, expText, hasExp := strings.Cut(strings.TrimLeft(t, "+-"), "e")
	if !hasExp {
		mant, expText, hasExp = strings.Cut(mant, "E")
	}
	exp := 0
	if hasExp {
		var err error
		if exp, err = strconv.Atoi(expText); err != nil || exp > 1e8 || exp < -1e8 {
			return t
		}
	}
	whole, frac, _ := strings.Cut(mant, ".")
	return formatBigDecimal(neg, strings.TrimLeft(whole+frac, "0"), len(frac)-exp)
}

// formatBigDecimal is Java's BigDecimal.toString of the unscaled value
// whose digits (without leading zeros; "" for zero) are given, with scale:
// plain unless the scale is negative or the number small (scientific
// notation, 1E+2, 1.5E-8).
func formatBigDecimal(neg bool, digits string, scale int) string {
	if digits == "" {
		digits, neg = "0", false
	}
	sign := ""
	if neg {
		sign = "-"
	}
	if scale == 0 {
		return sign + digits
	}
	adjusted := len(digits) - 1 - scale
	if scale > 0 && adjusted >= -6 {
		if len(digits) > scale {
			return sign + digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
		}
		return sign + "0." + strings.Repeat("0", scale-len(digits)) + digits
	}
	m := digits[:1]
	if len(digits) > 1 {
		m += "." + digits[1:]
	}
	e := "E"
	if adjusted >= 0 {
		e += "+"
	}
	return sign + m + e + strconv.Itoa(adjusted)
}

// jsonScalarText is the text of a JSON scalar as JSON_VALUE returns it
// (Java's String.valueOf of what Jackson read): a string's characters, a
// number's canonical form, true or false.
func jsonScalarText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return canonicalJSONNumber(string(v))
	case jsonDouble:
		return formatDouble(float64(v))
	case bool:
		return strconv.FormatBool(v)
	}
	return jsonText(v)
}

// The compiler's side.

// jsonWriteFn appends the JSON of a value (null for NULL).
type jsonWriteFn func(b []byte, v types.Value) []byte

func writeNull(b []byte, v types.Value) []byte { return append(b, "null"...) }

// jsonWriter returns how a value of type t is written as JSON, as Flink's
// JsonGenerateUtils converts it (see the top of this file).
func jsonWriter(t types.Type) (jsonWriteFn, error) {
	var w jsonWriteFn
	switch t.Kind {
	case types.Null:
		return writeNull, nil
	case types.Boolean:
		w = func(b []byte, v types.Value) []byte { return strconv.AppendBool(b, v.Bool()) }
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt:
		w = func(b []byte, v types.Value) []byte { return strconv.AppendInt(b, v.I, 10) }
	case types.Float, types.Double:
		float := t.Kind == types.Float
		w = func(b []byte, v types.Value) []byte {
			f := v.Float()
			if float {
				f = float64(float32(f)) // Jackson's FloatNode widens the float
			}
			if math.IsNaN(f) || math.IsInf(f, 0) {
				panic(runtimeError(fmt.Sprintf("JSON has no number %s", formatDouble(f))))
			}
			// Jackson writes the double as a BigDecimal of its Java text
			return append(b, canonicalJSONNumber(formatDouble(f))...)
		}
	case types.Decimal:
		w = func(b []byte, v types.Value) []byte {
			u := decBig(v, t)
			if u.Sign() == 0 {
				return append(b, '0')
			}
			scale := t.Scale
			q, r := new(big.Int), new(big.Int)
			for {
				q.QuoRem(u, bigTen, r)
				if r.Sign() != 0 {
					break
				}
				u.Set(q)
				scale--
			}
			return append(b, formatBigDecimal(u.Sign() < 0, new(big.Int).Abs(u).String(), scale)...)
		}
	case types.Char, types.Varchar:
		w = func(b []byte, v types.Value) []byte { return appendJSONString(b, v.S) }
	case types.Binary, types.Varbinary:
		w = func(b []byte, v types.Value) []byte {
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, []byte(v.S))
			return append(b, '"')
		}
	case types.Timestamp, types.TimestampLTZ:
		zone := ""
		if t.Kind == types.TimestampLTZ {
			zone = "Z"
		}
		w = func(b []byte, v types.Value) []byte {
			tm := microsToTime(v.I)
			b = append(b, '"')
			b = tm.AppendFormat(b, "2006-01-02T15:04:05")
			if us := tm.Nanosecond() / 1000; us != 0 {
				frac := strings.TrimRight(fmt.Sprintf("%06d", us), "0")
				b = append(append(b, '.'), frac...)
			}
			b = append(b, zone...)
			return append(b, '"')
		}
	case types.Array:
		elem, err := jsonWriter(*t.Elem)
		if err != nil {
			return nil, err
		}
		w = func(b []byte, v types.Value) []byte {
			b = append(b, '[')
			for i, e := range v.List() {
				if i > 0 {
					b = append(b, ',')
				}
				b = elem(b, e)
			}
			return append(b, ']')
		}
	case types.Structured:
		fields := make([]jsonWriteFn, len(t.Fields))
		order := make([]int, len(t.Fields))
		for i, f := range t.Fields {
			var err error
			if fields[i], err = jsonWriter(f.Type); err != nil {
				return nil, err
			}
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return t.Fields[order[a]].Name < t.Fields[order[b]].Name })
		w = func(b []byte, v types.Value) []byte {
			l := v.List()
			b = append(b, '{')
			for n, i := range order {
				if n > 0 {
					b = append(b, ',')
				}
				b = appendJSONString(b, t.Fields[i].Name)
				b = append(b, ':')
				if i < len(l) {
					b = fields[i](b, l[i])
				} else {
					b = append(b, "null"...)
				}
			}
			return append(b, '}')
		}
	case types.Map:
		if !t.Key.IsString() {
			return nil, fmt.Errorf("a MAP with %s keys cannot be converted to JSON: the keys must be strings", *t.Key)
		}
		val, err := jsonWriter(*t.Elem)
		if err != nil {
			return nil, err
		}
		w = func(b []byte, v types.Value) []byte {
			l := v.List()
			var entries []jsonEntry
			for i := 0; i+1 < len(l); i += 2 {
				if l[i].Null {
					panic(runtimeError(fmt.Sprintf("a MAP key at index %d is NULL: JSON has no NULL keys", i/2)))
				}
				entries = append(entries, jsonEntry{key: l[i].S, val: string(val(nil, l[i+1]))})
			}
			return appendJSONEntries(b, entries)
		}
	default:
		return nil, fmt.Errorf("a value of type %s cannot be converted to JSON", t)
	}
	return func(b []byte, v types.Value) []byte {
		if v.Null {
			return append(b, "null"...)
		}
		return w(b, v)
	}, nil
}

// jsonEntry is a member of an object being built: its key and JSON text.
type jsonEntry struct{ key, val string }

// appendJSONEntries writes an object of the entries: sorted by key, a key
// given twice taking its last value (Jackson's ObjectNode.set).
func appendJSONEntries(b []byte, entries []jsonEntry) []byte {
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].key < entries[j].key })
	b = append(b, '{')
	n := 0
	for i, e := range entries {
		if i+1 < len(entries) && entries[i+1].key == e.key {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = appendJSONString(b, e.key)
		b = append(b, ':')
		b = append(b, e.val...)
	}
	return append(b, '}')
}

// isJSONConstructor says whether the argument is a JSON_OBJECT or
// JSON_ARRAY call, whose result another constructor takes as JSON.
func isJSONConstructor(arg parser.Expr) bool {
	c, ok := arg.(*parser.Call)
	return ok && (c.Name == "JSON_OBJECT" || c.Name == "JSON_ARRAY")
}

// jsonArgWriter is the writer of a constructor's value argument: the JSON
// text itself for a nested constructor, else by its type.
func jsonArgWriter(arg parser.Expr, x Expr) (jsonWriteFn, error) {
	if isJSONConstructor(arg) && x.Type.IsString() {
		return func(b []byte, v types.Value) []byte {
			if v.Null {
				return append(b, "null"...)
			}
			return append(b, v.S...)
		}, nil
	}
	w, err := jsonWriter(x.Type)
	if err != nil {
		return nil, ErrAt(arg, "%v", err)
	}
	return w, nil
}

// jsonClause is the clause the parser put at argument i (a string
// literal, see parser.jsonArgs).
func jsonClause(e *parser.Call, xs []Expr, i int) (string, error) {
	if i >= len(xs) || !xs[i].Const || !xs[i].Type.IsString() {
		return "", ErrAt(e, "%s: malformed call (its clauses are missing)", e.Name)
	}
	return xs[i].Eval(nil).S, nil
}

// jsonCall compiles the SQL/JSON scalar functions and IS [NOT] JSON; xs
// are e's arguments compiled, clauses included.
func (c *Compiler) jsonCall(e *parser.Call, xs []Expr) (Expr, error) {
	// a runtime error names the place of the call, unless the call is
	// constant (folding at planning places it)
	where := e.Name + ": "
	if !allKonst(xs) {
		where = e.Pos.String() + ": " + where
	}
	fail := func(err error) { panic(runtimeError(where + err.Error())) }
	switch e.Name {
	case "IS JSON", "IS NOT JSON":
		return jsonIs(e, xs)
	case "JSON_STRING":
		if err := wantArgs(e, xs, 1, 1); err != nil {
			return Expr{}, err
		}
		w, err := jsonArgWriter(e.Args[0], xs[0])
		if err != nil {
			return Expr{}, err
		}
		f := xs[0].Eval
		return Expr{Type: types.Type{Kind: types.Varchar, Length: types.MaxLength, NotNull: xs[0].Type.NotNull}, Const: xs[0].Const, Col: -1,
			Eval: func(r []types.Value) types.Value {
				v := f(r)
				if v.Null {
					return types.NullValue
				}
				return types.StringValue(string(w(nil, v)))
			}}, nil
	case "JSON_OBJECT", "JSON_ARRAY":
		return jsonConstructor(e, xs, fail)
	}
	if len(xs) < 2 {
		return Expr{}, ErrAt(e, "%s takes a JSON text and a path", e.Name)
	}
	if err := stringArgs(e, xs, 0); err != nil {
		return Expr{}, err
	}
	if !xs[1].Const || !xs[1].Type.IsString() || xs[1].Eval(nil).Null {
		return Expr{}, ErrAt(e.Args[1], "the path of %s must be a string literal", e.Name)
	}
	pv := xs[1].Eval(nil)
	path, unsupported := parseJSONPath(pv.S)
	if unsupported != "" {
		return Expr{}, ErrAt(e.Args[1], "JSON path '%s': %s is not supported yet", pv.S, unsupported)
	}
	f := xs[0].Eval
	konst := allKonst(xs)
	switch e.Name {
	case "JSON_EXISTS":
		onError, err := jsonClause(e, xs, 2)
		if err != nil {
			return Expr{}, err
		}
		return Expr{Type: types.BooleanType, Const: konst, Col: -1, Eval: func(r []types.Value) types.Value {
			v := f(r)
			if v.Null {
				return types.NullValue
			}
			obj, err := path.query(v.S)
			if err == nil {
				return types.BoolValue(obj != nil)
			}
			switch onError {
			case "TRUE":
				return types.BoolValue(true)
			case "UNKNOWN":
				return types.NullValue
			case "ERROR":
				fail(err)
			}
			return types.BoolValue(false)
		}}, nil
	case "JSON_VALUE":
		return c.jsonValue(e, xs, path, fail)
	case "JSON_QUERY":
		var cl [3]string
		for i := range cl {
			var err error
			if cl[i], err = jsonClause(e, xs, 2+i); err != nil {
				return Expr{}, err
			}
		}
		wrapper, onEmpty, onError := cl[0], cl[1], cl[2]
		ret, array, err := jsonQueryReturning(e, xs)
		if err != nil {
			return Expr{}, err
		}
		emptyArray, emptyObject := types.StringValue("[]"), types.StringValue("{}")
		if array {
			emptyArray = types.ListValue([]types.Value{})
			for i, mode := range []string{onEmpty, onError} {
				if mode == "EMPTY OBJECT" {
					return Expr{}, ErrAt(e.Args[3+i], "JSON_QUERY: EMPTY OBJECT ON %s is not allowed with RETURNING %s", []string{"EMPTY", "ERROR"}[i], ret)
				}
			}
		}
		behave := func(mode string, err error) types.Value {
			switch mode {
			case "ERROR":
				fail(err)
			case "EMPTY ARRAY":
				return emptyArray
			case "EMPTY OBJECT":
				return emptyObject
			}
			return types.NullValue
		}
		errEmpty := errors.New("Empty result of JSON_QUERY function is not allowed")
		return Expr{Type: ret, Const: konst, Col: -1, Eval: func(r []types.Value) types.Value {
			v := f(r)
			if v.Null {
				return types.NullValue
			}
			obj, err := path.query(v.S)
			if err != nil {
				return behave(onError, err)
			}
			if obj == nil {
				return behave(onEmpty, errEmpty)
			}
			switch _, list := obj.([]any); {
			case wrapper == "WITH UNCONDITIONAL ARRAY", wrapper == "WITH CONDITIONAL ARRAY" && !list:
				obj = []any{obj}
			}
			if isJSONScalar(obj) {
				if path.lax {
					return behave(onEmpty, errEmpty)
				}
				return behave(onError, fmt.Errorf("Strict jsonpath mode requires array or object value, and the actual value is: '%s'", jsonScalarText(obj)))
			}
			if array {
				list, ok := obj.([]any)
				if !ok {
					return behave(onError, fmt.Errorf("RETURNING %s needs an array, and the actual value is: '%s'", ret, jsonText(obj)))
				}
				return jsonStringArray(list)
			}
			return types.StringValue(jsonText(obj))
		}}, nil
	}
	return Expr{}, ErrAt(e, "no function named %s", e.Name)
}

// jsonQueryReturning is the type of JSON_QUERY: STRING, or its RETURNING
// clause (the sixth argument, see parser.jsonArgs), which Flink allows to
// be a string type or ARRAY<STRING> (array true).
func jsonQueryReturning(e *parser.Call, xs []Expr) (t types.Type, array bool, err error) {
	switch len(xs) {
	case 5:
		return types.StringType, false, nil
	case 6:
	default:
		return types.Type{}, false, ErrAt(e, "JSON_QUERY: malformed call (its clauses are missing)")
	}
	t = xs[5].Type.Nullable()
	t.TimeAttr = 0
	switch {
	case t.IsString():
		return t, false, nil
	case t.Kind == types.Array && t.Elem != nil && t.Elem.IsString():
		return t, true, nil
	}
	return types.Type{}, false, ErrAt(e.Args[5], "RETURNING %s is not supported in JSON_QUERY (STRING or ARRAY<STRING> are)", t)
}

// jsonStringArray is JSON_QUERY's ARRAY<STRING> of a JSON array, as
// Flink's SqlJsonUtils makes it: a scalar element as JSON_VALUE gives it
// (a string without its quotes), an array or object element as JSON text,
// a JSON null a NULL element.
func jsonStringArray(list []any) types.Value {
	out := make([]types.Value, len(list))
	for i, el := range list {
		switch {
		case el == nil:
			out[i] = types.NullValue
		case isJSONScalar(el):
			out[i] = types.StringValue(strings.Clone(jsonScalarText(el)))
		default:
			out[i] = types.StringValue(jsonText(el))
		}
	}
	return types.ListValue(out)
}

// jsonValue compiles JSON_VALUE(json, path, CAST(NULL AS returning),
// emptyMode, emptyDefault, errorMode, errorDefault).
func (c *Compiler) jsonValue(e *parser.Call, xs []Expr, path *jsonPath, fail func(error)) (Expr, error) {
	if len(xs) != 7 {
		return Expr{}, ErrAt(e, "JSON_VALUE: malformed call (its clauses are missing)")
	}
	emptyMode, err := jsonClause(e, xs, 3)
	if err != nil {
		return Expr{}, err
	}
	errorMode, err := jsonClause(e, xs, 5)
	if err != nil {
		return Expr{}, err
	}
	ret := xs[2].Type.Nullable()
	ret.TimeAttr = 0
	conv, err := jsonScalarConverter(ret)
	if err != nil {
		return Expr{}, ErrAt(e.Args[2], "%v", err)
	}
	emptyDef, err := jsonDefault(e.Args[4], xs[4], ret)
	if err != nil {
		return Expr{}, err
	}
	errorDef, err := jsonDefault(e.Args[6], xs[6], ret)
	if err != nil {
		return Expr{}, err
	}
	f := xs[0].Eval
	return Expr{Type: ret, Const: allKonst(xs), Col: -1, Eval: func(r []types.Value) types.Value {
		v := f(r)
		if v.Null {
			return types.NullValue
		}
		obj, failure := path.query(v.S)
		if failure == nil {
			switch {
			case obj == nil || path.lax && !isJSONScalar(obj):
				switch emptyMode {
				case "ERROR":
					fail(errors.New("Empty result of JSON_VALUE function is not allowed"))
				case "DEFAULT":
					d, ok := emptyDef(r)
					if ok {
						return d
					}
					failure = fmt.Errorf("the DEFAULT ... ON EMPTY is not a %s", ret)
				default:
					return types.NullValue
				}
			case !isJSONScalar(obj):
				failure = fmt.Errorf("Strict jsonpath mode requires scalar value, and the actual value is: '%s'", jsonText(obj))
			default:
				out, ok := conv(obj)
				if ok {
					return out
				}
				failure = fmt.Errorf("Cannot cast %s '%s' to %s", jsonKind(obj), jsonScalarText(obj), ret)
			}
		}
		switch errorMode {
		case "ERROR":
			fail(failure)
		case "DEFAULT":
			d, ok := errorDef(r)
			if !ok {
				fail(fmt.Errorf("the DEFAULT ... ON ERROR is not a %s (after: %v)", ret, failure))
			}
			return d
		}
		return types.NullValue
	}}, nil
}

// jsonDefault converts a DEFAULT of JSON_VALUE to the RETURNING type:
// false when it does not convert. A BOOLEAN default as a STRING is 'true'
// or 'false', as Flink's String.valueOf of it.
func jsonDefault(arg parser.Expr, x Expr, ret types.Type) (func(r []types.Value) (types.Value, bool), error) {
	f := x.Eval
	if ret.IsString() && x.Type.Kind == types.Boolean {
		return func(r []types.Value) (types.Value, bool) {
			v := f(r)
			if v.Null {
				return v, true
			}
			return types.StringValue(strconv.FormatBool(v.Bool())), true
		}, nil
	}
	fn, err := CastFn(x.Type, ret)
	if err != nil {
		return nil, ErrAt(arg, "the DEFAULT of JSON_VALUE: %v", err)
	}
	return func(r []types.Value) (types.Value, bool) {
		v := f(r)
		if v.Null {
			return v, true
		}
		out := fn(v)
		return out, !out.Null
	}, nil
}

// jsonScalarConverter converts a JSON scalar to JSON_VALUE's RETURNING
// type: false when it does not convert.
func jsonScalarConverter(t types.Type) (func(v any) (types.Value, bool), error) {
	if t.IsString() {
		return func(v any) (types.Value, bool) {
			// a copy: a slice of the text would keep the whole document
			return types.StringValue(strings.Clone(jsonScalarText(v))), true
		}, nil
	}
	switch t.Kind {
	case types.Array, types.Map, types.Structured, types.Multiset, types.Null, types.Interval:
		return nil, fmt.Errorf("RETURNING %s is not supported in JSON_VALUE (it returns scalars)", t)
	}
	fromText, err := CastFn(types.StringType, t)
	if err != nil {
		return nil, fmt.Errorf("RETURNING %s is not supported in JSON_VALUE", t)
	}
	bits := 64 - int(wrapShift(t.Kind))
	return func(v any) (types.Value, bool) {
		switch x := v.(type) {
		case bool:
			if t.Kind == types.Boolean {
				return types.BoolValue(x), true
			}
		case json.Number:
			if t.IsInteger() {
				return jsonInteger(string(x), bits)
			}
		case jsonDouble:
			if t.IsInteger() {
				return jsonInteger(formatDouble(float64(x)), bits)
			}
		}
		text := jsonScalarText(v)
		if t.Kind == types.Decimal && hugeExponent(text) {
			return types.NullValue, false // beyond DECIMAL(38), and costly to read
		}
		out := fromText(types.StringValue(text))
		return out, !out.Null
	}, nil
}

// hugeExponent reports a number whose exponent is beyond any SQL type (a
// big.Rat of it would be enormous).
func hugeExponent(t string) bool {
	i := strings.IndexAny(t, "eE")
	if i < 0 {
		return false
	}
	e, err := strconv.Atoi(t[i+1:])
	return err != nil || e > 400 || e < -400
}

// jsonInteger converts a JSON number to an integer of the given bits,
// truncating a fraction toward zero; false when out of range.
func jsonInteger(t string, bits int) (types.Value, bool) {
	n, err := strconv.ParseInt(t, 10, bits)
	if err == nil {
		return types.IntValue(n), true
	}
	if !strings.ContainsAny(t, ".eE") || hugeExponent(t) {
		return types.NullValue, false
	}
	r, ok := new(big.Rat).SetString(t)
	if !ok {
		return types.NullValue, false
	}
	q := new(big.Int).Quo(r.Num(), r.Denom())
	if !q.IsInt64() {
		return types.NullValue, false
	}
	n = q.Int64()
	if lim := int64(1) << (bits - 1); bits < 64 && (n < -lim || n >= lim) {
		return types.NullValue, false
	}
	return types.IntValue(n), true
}

// jsonIs compiles x IS [NOT] JSON [VALUE | SCALAR | ARRAY | OBJECT].
func jsonIs(e *parser.Call, xs []Expr) (Expr, error) {
	kind, err := jsonClause(e, xs, 1)
	if err != nil || len(xs) != 2 {
		return Expr{}, ErrAt(e, "%s: malformed predicate", e.Name)
	}
	if !xs[0].Type.IsString() && xs[0].Type.Kind != types.Null {
		return Expr{}, ErrAt(e, "%s needs a string, not %s", e.Name, xs[0].Type)
	}
	not := e.Name == "IS NOT JSON"
	f := xs[0].Eval
	return Expr{Type: types.Type{Kind: types.Boolean, NotNull: true}, Const: xs[0].Const, Col: -1, Eval: func(r []types.Value) types.Value {
		v := f(r)
		if v.Null {
			return types.BoolValue(not)
		}
		return types.BoolValue(isJSONKind(v.S, kind) != not)
	}}, nil
}

// isJSONKind says whether s is JSON text of the kind (VALUE: any).
func isJSONKind(s, kind string) bool {
	if !json.Valid([]byte(s)) {
		return false
	}
	t := strings.TrimLeft(s, " \t\n\r")
	switch kind {
	case "OBJECT":
		return t[0] == '{'
	case "ARRAY":
		return t[0] == '['
	case "SCALAR":
		return t[0] != '{' && t[0] != '['
	}
	return true
}

// jsonConstructor compiles JSON_OBJECT(onNull, key, value, ...) and
// JSON_ARRAY(onNull, value, ...).
func jsonConstructor(e *parser.Call, xs []Expr, fail func(error)) (Expr, error) {
	onNull, err := jsonClause(e, xs, 0)
	if err != nil {
		return Expr{}, err
	}
	absent := onNull == "ABSENT"
	object := e.Name == "JSON_OBJECT"
	if object && len(xs)%2 != 1 {
		return Expr{}, ErrAt(e, "JSON_OBJECT takes KEY ... VALUE ... pairs")
	}
	var keys, vals []EvalFn
	var writers []jsonWriteFn
	for i := 1; i < len(xs); i++ {
		if object && i%2 == 1 {
			k := xs[i]
			if !k.Type.IsString() {
				return Expr{}, ErrAt(e.Args[i], "a key of JSON_OBJECT must be a string, not %s", k.Type)
			}
			if k.Const && k.Eval(nil).Null {
				return Expr{}, ErrAt(e.Args[i], "a key of JSON_OBJECT must not be NULL")
			}
			keys = append(keys, k.Eval)
			continue
		}
		w, err := jsonArgWriter(e.Args[i], xs[i])
		if err != nil {
			return Expr{}, err
		}
		vals, writers = append(vals, xs[i].Eval), append(writers, w)
	}
	out := Expr{Type: types.Type{Kind: types.Varchar, Length: types.MaxLength, NotNull: true}, Const: allKonst(xs), Col: -1}
	if !object {
		out.Eval = func(r []types.Value) types.Value {
			b := []byte{'['}
			n := 0
			for i, f := range vals {
				v := f(r)
				if v.Null && absent {
					continue
				}
				if n > 0 {
					b = append(b, ',')
				}
				n++
				b = writers[i](b, v)
			}
			return types.StringValue(string(append(b, ']')))
		}
		return out, nil
	}
	out.Eval = func(r []types.Value) types.Value {
		entries := make([]jsonEntry, 0, len(keys))
		for i, kf := range keys {
			k := kf(r)
			if k.Null {
				fail(errors.New("a key is NULL"))
			}
			v := vals[i](r)
			if v.Null && absent {
				continue
			}
			entries = append(entries, jsonEntry{key: k.S, val: string(writers[i](nil, v))})
		}
		return types.StringValue(string(appendJSONEntries(nil, entries)))
	}
	return out, nil
}
