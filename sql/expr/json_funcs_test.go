package expr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// describePath prints a parsed path for the table below.
func describePath(p *jsonPath, unsupported string) string {
	if unsupported != "" {
		return "unsupported: " + unsupported
	}
	if p.err != nil {
		return "error: " + p.err.Error()
	}
	mode := "strict"
	if p.lax {
		mode = "lax"
	}
	def := "definite"
	if !p.definite {
		def = "indefinite"
	}
	return mode + " " + p.jayway(len(p.steps)) + " " + def
}

func TestParseJSONPath(t *testing.T) {
	for spec, want := range map[string]string{
		"$":                            "strict $ definite",
		"lax $":                        "lax $ definite",
		"  STRICT \t $.a.b ":           "strict $['a']['b'] definite",
		"Lax $.a[0].b":                 "lax $['a'][0]['b'] definite",
		`$['a b']["c.d"]`:              "strict $['a b']['c.d'] definite",
		"$.['contains blank']":         "strict $['contains blank'] definite",
		`$."quoted key".x`:             "strict $['quoted key']['x'] definite",
		`$['it\'s']`:                   "strict $['it's'] definite",
		"$[ 2 ]":                       "strict $[2] definite",
		"$[-1]":                        "strict $[-1] definite",
		"$.é.ü":                        "strict $['é']['ü'] definite",
		"$.a[*]":                       "strict $['a'][*] indefinite",
		"$.*.b":                        "strict $[*]['b'] indefinite",
		"$[*]":                         "strict $[*] indefinite",
		"$[0, 2]":                      "strict $[0,2] indefinite",
		"$[1:3]":                       "strict $[1:3] indefinite",
		"$[-2:]":                       "strict $[-2:] indefinite",
		"$[:1]":                        "strict $[:1] indefinite",
		"":                             "error: invalid JSON path '': a path starts with '$'",
		"a":                            "error: invalid JSON path 'a': a path starts with '$'",
		"lax":                          "error: invalid JSON path 'lax': a path starts with '$'",
		"lax$.a":                       "error: invalid JSON path 'lax$.a': a path starts with '$'",
		"$.":                           "error: invalid JSON path '$.': a path must not end with '.'",
		"$[":                           "error: invalid JSON path '$[': an unterminated '['",
		"$[x]":                         "error: invalid JSON path '$[x]': an invalid index [x]",
		"$[1":                          "error: invalid JSON path '$[1': an unterminated '['",
		"$['a'":                        "error: invalid JSON path '$['a'': ']' expected at position 5",
		`$['a`:                         "error: invalid JSON path '$['a': an unterminated quoted key",
		"$.a b":                        "error: invalid JSON path '$.a b': unexpected ' ' at position 3",
		"$a":                           "error: invalid JSON path '$a': unexpected 'a' at position 1",
		"$..a":                         "strict $..['a'] indefinite",
		"$[?(@.a > 1)]":                "strict $[?] indefinite",
		"$.a.length()":                 "strict $['a'].length() definite",
		"$['a','b']":                   "unsupported: several keys in one bracket",
		"strict $.a[0]['b'][*][1:2].c": "strict $['a'][0]['b'][*][1:2]['c'] indefinite",
	} {
		if got := describePath(parseJSONPath(spec)); got != want {
			t.Errorf("%q: %s, want %s", spec, got, want)
		}
	}
}

// query runs a path over a document: the JSON text of the match, <none>,
// or the error.
func query(doc, path string) string {
	p, unsupported := parseJSONPath(path)
	if unsupported != "" {
		return "unsupported"
	}
	v, err := p.query(doc)
	switch {
	case err != nil:
		return "error: " + err.Error()
	case v == nil:
		return "<none>"
	}
	return jsonText(v)
}

func TestJSONPathQuery(t *testing.T) {
	doc := `{"b":1,"a":{"x":[10,20,{"y":null}],"s":"é\u00fc\ud83d\ude00"},"n":null,"arr":[0,1,2,3]}`
	for _, c := range []struct{ doc, path, want string }{
		{doc, "$", `{"a":{"s":"éü😀","x":[10,20,{"y":null}]},"arr":[0,1,2,3],"b":1,"n":null}`},
		{doc, "$.a.s", `"éü😀"`},
		{doc, "$.a.x[1]", "20"},
		{doc, "$.a.x[-1].y", "<none>"}, // a JSON null matches nothing
		{doc, "$.n", "<none>"},
		{doc, "$.a.x[5]", "error: No results for path: $['a']['x'][5]"},
		{doc, "lax $.a.x[5]", "<none>"},
		{doc, "$.missing", "error: No results for path: $['missing']"},
		{doc, "$.missing.deeper", "error: Missing property in path $['missing']"},
		{doc, "lax $.missing.deeper", "<none>"},
		{doc, "$.b.c", "error: Expected to find an object with property ['c'] in path $['b'] but found a number"},
		{doc, "$.b[0]", "error: Filter: [0] can only be applied to arrays, found a number"},
		{doc, "$.n.c", "error: Expected to find an object with property ['c'] in path $['n'] but found null"},
		// wildcards: object values in document order, arrays in order;
		// after a wildcard what does not apply is skipped
		{doc, "$.*", `[1,{"s":"éü😀","x":[10,20,{"y":null}]},null,[0,1,2,3]]`},
		{doc, "$.a.x[*]", `[10,20,{"y":null}]`},
		{doc, "$.a.x[*].y", `[null]`},
		{doc, "$.*.x", `[[10,20,{"y":null}]]`},
		{doc, "$.missing[*]", "error: Missing property in path $['missing']"},
		{doc, "lax $.missing[*]", "[]"},
		{doc, "$.b[*]", "[]"},
		{doc, "$.arr[1:3]", "[1,2]"},
		{doc, "$.arr[-2:]", "[2,3]"},
		{doc, "$.arr[:1]", "[0]"},
		{doc, "$.arr[2:9]", "[2,3]"},
		{doc, "$.arr[0,2,9]", "[0,2]"},
		{doc, "$.arr[0,2].z", "[]"},
		{doc, "$.b[0,1]", "error: Filter: [0,1] can only be applied to arrays, found a number"},
		// big numbers stay exact; decimals print as Java's BigDecimal
		{`{"n":123456789012345678901234567890}`, "$.n", "123456789012345678901234567890"},
		{`{"n":-0}`, "$.n", "0"},
		{`{"n":[1.50,1e3,1.5E-3,-2.5e-8,0.0000001,123.456e2,0e5,-0.0]}`, "$.n", "[1.50,1E+3,0.0015,-2.5E-8,1E-7,12345.6,0E+5,0.0]"},
		// escapes, unicode, control characters
		{`{"s":"a\"b\\c\/d\n\t\u0001\u001f\u007f"}`, "$.s", `"a\"b\\c/d\n\t\u0001\u001F` + "\u007f" + `"`},
		{`{"ключ":"значение"}`, "$['ключ']", `"значение"`},
		// a repeated key keeps its first place and its last value
		{`{"a":1,"b":2,"a":3}`, "$.*", "[3,2]"},
		// invalid JSON: an error in strict mode, nothing in lax mode
		{`{"a":`, "$.a", "error: invalid JSON: unexpected end of JSON input"},
		{`{"a":1} x`, "$.a", "error: invalid JSON: invalid character 'x' after top-level value"},
		{`{"a":1}{}`, "$.a", "error: invalid JSON: invalid character '{' after top-level value"},
		{`{"a":1,}`, "$.a", "error: invalid JSON: invalid character '}' looking for beginning of object key string"},
		{`{'a':1}`, "lax $.a", "<none>"},
		{``, "$", "error: invalid JSON: unexpected end of JSON input"},
		{`null`, "lax $", "error: json can not be null"},
		{`"x"`, "$", `"x"`},
		{`[1,2]`, "$.", "error: invalid JSON path '$.': a path must not end with '.'"},
	} {
		if got := query(c.doc, c.path); got != c.want {
			t.Errorf("%s over %s: %s, want %s", c.path, c.doc, got, c.want)
		}
	}
}

// IS JSON checks with json.Valid; it must agree with the parser.
func TestIsJSONAgreesWithParser(t *testing.T) {
	for _, s := range []string{`1`, ` [1, {"a": [true, null]}] `, `"\ud83d\ude00"`, `{}`, `{"a":1,}`, `[1 2]`, `{"a" 1}`,
		`tru`, `01`, `1.`, `-`, `1e`, `"\x"`, "\"a\tb\"", `{} {}`, `[`, ``, `  `, `nul`, `{"a":{"b":[]}}`} {
		_, err := parseJSON(s)
		if (err == nil) != json.Valid([]byte(s)) || (err == nil) != isJSONKind(s, "VALUE") {
			t.Errorf("%q: parse error %v, json.Valid %v", s, err, json.Valid([]byte(s)))
		}
	}
	deep := strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1)
	if _, err := parseJSON(deep); err == nil {
		t.Errorf("%d nested arrays parsed", maxJSONDepth+1)
	}
	ok := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	if v, err := parseJSON(ok); err != nil || jsonText(v) != ok {
		t.Errorf("100 nested arrays: %v %v", jsonText(v), err)
	}
}

// evalJSON compiles a SQL expression over a STRING column j and evaluates
// it on j: the printed value, or the runtime error.
func evalJSON(t *testing.T, sql string, j types.Value) (out string) {
	t.Helper()
	e, err := parser.ParseExpr(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	c := &Compiler{Scope: &Scope{Cols: []Column{{Name: "j", Type: types.StringType}}}}
	x, err := c.Compile(e)
	if err != nil {
		return "planning error: " + err.Error()
	}
	defer func() {
		if r := recover(); r != nil {
			re, ok := r.(runtimeError)
			if !ok {
				panic(r)
			}
			out = "runtime error: " + strings.TrimPrefix(re.Error(), "sql: line 1, column 1: ")
		}
	}()
	return FormatValue(x.Eval([]types.Value{j}), x.Type)
}

func TestJSONFunctionsOnRows(t *testing.T) {
	str := types.StringValue
	malformed := str(`{"a":`)
	for _, c := range []struct {
		sql  string
		j    types.Value
		want string
	}{
		// unicode and escapes in and out
		{`JSON_VALUE(j, '$.a')`, str(`{"a":"\u00e9\ud83d\ude00 \"q\" \\"}`), `é😀 "q" \`},
		{`JSON_QUERY(j, '$' WITH WRAPPER)`, str(`"é\n"`), `["é\n"]`},
		{`JSON_STRING(j)`, str("a\"b\\c\n\u0002é"), `"a\"b\\c\n\u0002é"`},
		// big numbers
		{`JSON_VALUE(j, '$.a' RETURNING BIGINT)`, str(`{"a": 9223372036854775807}`), "9223372036854775807"},
		{`JSON_VALUE(j, '$.a' RETURNING BIGINT)`, str(`{"a": 9223372036854775808}`), "NULL"},
		{`JSON_VALUE(j, '$.a' RETURNING BIGINT)`, str(`{"a": -9.9e2}`), "-990"},
		{`JSON_VALUE(j, '$.a' RETURNING BIGINT)`, str(`{"a": 1e999999}`), "NULL"},
		{`JSON_VALUE(j, '$.a' RETURNING TINYINT)`, str(`{"a": -128.9}`), "-128"},
		{`JSON_VALUE(j, '$.a' RETURNING TINYINT DEFAULT 1 ON ERROR)`, str(`{"a": 128}`), "1"},
		{`JSON_VALUE(j, '$.a' RETURNING DECIMAL(38, 0))`, str(`{"a": 12345678901234567890123456789}`), "12345678901234567890123456789"},
		{`JSON_VALUE(j, '$.a' RETURNING DECIMAL(10, 2))`, str(`{"a": "1.005"}`), "1.01"},
		{`JSON_VALUE(j, '$.a' RETURNING DECIMAL(10, 2))`, str(`{"a": 1e999999}`), "NULL"},
		{`JSON_VALUE(j, '$.a' RETURNING DOUBLE)`, str(`{"a": 1e308}`), "1.0E308"},
		{`JSON_VALUE(j, '$.a' RETURNING DOUBLE)`, str(`{"a": 1e309}`), "NULL"},
		{`JSON_VALUE(j, '$.a')`, str(`{"a": 1e400}`), "1E+400"},
		{`JSON_VALUE(j, '$.a' RETURNING BOOLEAN)`, str(`{"a": "TRUE"}`), "TRUE"},
		{`JSON_VALUE(j, '$.a' RETURNING BOOLEAN)`, str(`{"a": "maybe"}`), "NULL"},
		{`JSON_VALUE(j, '$.a' RETURNING DATE)`, str(`{"a": "2024-02-29"}`), "2024-02-29"},
		{`JSON_VALUE(j, '$.a' RETURNING TIMESTAMP(3))`, str(`{"a": "2024-02-29 10:11:12.5"}`), "2024-02-29 10:11:12.500"},
		// malformed JSON: NULL, or what ON ERROR says; empty in lax mode
		{`JSON_VALUE(j, '$.a')`, malformed, "NULL"},
		{`JSON_VALUE(j, '$.a' ERROR ON ERROR)`, malformed, "runtime error: JSON_VALUE: invalid JSON: unexpected end of JSON input"},
		{`JSON_VALUE(j, '$.a' DEFAULT 'd' ON ERROR)`, malformed, "d"},
		{`JSON_VALUE(j, 'lax $.a' DEFAULT 'e' ON EMPTY DEFAULT 'd' ON ERROR)`, malformed, "e"},
		{`JSON_VALUE(j, 'lax $.a' ERROR ON EMPTY)`, malformed, "runtime error: JSON_VALUE: Empty result of JSON_VALUE function is not allowed"},
		{`JSON_EXISTS(j, '$.a')`, malformed, "FALSE"},
		{`JSON_EXISTS(j, '$.a' TRUE ON ERROR)`, malformed, "TRUE"},
		{`JSON_EXISTS(j, '$.a' UNKNOWN ON ERROR)`, malformed, "NULL"},
		{`JSON_EXISTS(j, '$.a' ERROR ON ERROR)`, malformed, "runtime error: JSON_EXISTS: invalid JSON: unexpected end of JSON input"},
		{`JSON_EXISTS(j, 'lax $.a' ERROR ON ERROR)`, malformed, "FALSE"},
		{`JSON_QUERY(j, '$.a')`, malformed, "NULL"},
		{`JSON_QUERY(j, '$.a' EMPTY OBJECT ON ERROR)`, malformed, "{}"},
		{`JSON_QUERY(j, '$.a' ERROR ON ERROR)`, malformed, "runtime error: JSON_QUERY: invalid JSON: unexpected end of JSON input"},
		{`JSON_QUERY(j, 'lax $.a' EMPTY ARRAY ON EMPTY ERROR ON ERROR)`, malformed, "[]"},
		{`JSON_QUERY(j, 'lax $.a' ERROR ON EMPTY)`, malformed, "runtime error: JSON_QUERY: Empty result of JSON_QUERY function is not allowed"},
		{`j IS JSON`, malformed, "FALSE"},
		{`j IS NOT JSON`, malformed, "TRUE"},
		{`j IS JSON`, types.NullValue, "FALSE"},
		{`j IS NOT JSON ARRAY`, types.NullValue, "TRUE"},
		{`JSON_VALUE(j, '$.a')`, types.NullValue, "NULL"},
		// a malformed path is an error of every row
		{`JSON_VALUE(j, '$.' DEFAULT 'd' ON ERROR)`, str(`{}`), "d"},
		{`JSON_EXISTS(j, '$[x]' ERROR ON ERROR)`, str(`{}`), "runtime error: JSON_EXISTS: invalid JSON path '$[x]': an invalid index [x]"},
		{`JSON_EXISTS(j, 'lax $[x]')`, str(`[]`), "FALSE"},
		// a DEFAULT that does not convert falls through ON EMPTY to ON ERROR
		{`JSON_VALUE(j, 'lax $.b' RETURNING INT DEFAULT 'x' ON EMPTY DEFAULT -1 ON ERROR)`, str(`{}`), "-1"},
		{`JSON_VALUE(j, '$.b' RETURNING INT DEFAULT 'x' ON ERROR)`, str(`{}`), "runtime error: JSON_VALUE: the DEFAULT ... ON ERROR is not a INT (after: No results for path: $['b'])"},
		{`JSON_VALUE(j, '$.b' RETURNING DOUBLE DEFAULT j ON ERROR)`, str(`{}`), "runtime error: JSON_VALUE: the DEFAULT ... ON ERROR is not a DOUBLE (after: No results for path: $['b'])"},
		{`JSON_VALUE(j, '$.b' DEFAULT j ON ERROR)`, str(`{}`), "{}"},
		// constructors
		{`JSON_OBJECT('k' VALUE j)`, str(`{"a":1}`), `{"k":"{\"a\":1}"}`},
		{`JSON_OBJECT('k' VALUE JSON_OBJECT('x' VALUE j))`, str(`v`), `{"k":{"x":"v"}}`},
		{`JSON_OBJECT(j VALUE 1, 'a' VALUE 2)`, str(`b`), `{"a":2,"b":1}`},
		{`JSON_OBJECT(j VALUE 1)`, types.NullValue, "runtime error: JSON_OBJECT: a key is NULL"},
		{`JSON_ARRAY(j, j NULL ON NULL)`, types.NullValue, "[null,null]"},
		{`JSON_ARRAY(j, 1)`, types.NullValue, "[1]"},
		{`JSON_STRING(CAST(0.1 AS FLOAT))`, types.NullValue, "0.10000000149011612"},
		{`JSON_STRING(CAST(0.0001 AS DOUBLE))`, types.NullValue, "0.00010"},
		{`JSON_STRING(CAST(-12.300 AS DECIMAL(10, 3)))`, types.NullValue, "-12.3"},
		{`JSON_STRING(CAST(0 AS DECIMAL(10, 3)))`, types.NullValue, "0"},
		{`JSON_STRING(CAST(123456789012345678901234567890.5 AS DECIMAL(31, 1)))`, types.NullValue, "123456789012345678901234567890.5"},
		{`JSON_STRING(TIMESTAMP '2024-01-02 03:04:05.12')`, types.NullValue, `"2024-01-02T03:04:05.12"`},
		{`JSON_STRING(TIMESTAMP_LTZ '2024-01-02 03:04:05')`, types.NullValue, `"2024-01-02T03:04:05Z"`},
		{`JSON_STRING(CAST(j AS BYTES))`, str("Test"), `"VGVzdA=="`},
		{`JSON_STRING(CAST(1e308 AS DOUBLE) * 10)`, types.NullValue, "planning error: line 1, column 1: JSON has no number Infinity"},
		// planning errors
		{`JSON_VALUE(j, '$.a' RETURNING ROW<a INT>)`, str(`{}`), "planning error: line 1, column 31: RETURNING ROW<`a` INT> is not supported in JSON_VALUE (it returns scalars)"},
		{`JSON_VALUE(j, '$.a' RETURNING INT DEFAULT DATE '2024-01-01' ON EMPTY)`, str(`{}`), "planning error: line 1, column 43: the DEFAULT of JSON_VALUE: cannot cast DATE NOT NULL to INT"},
		{`JSON_OBJECT(1 VALUE 2)`, str(`{}`), "planning error: line 1, column 13: a key of JSON_OBJECT must be a string, not INT NOT NULL"},
		{`JSON_OBJECT(NULL VALUE 2)`, str(`{}`), "planning error: line 1, column 13: a key of JSON_OBJECT must be a string, not NULL"},
		{`JSON_STRING(MAP_KEYS_ARE_NOT_SUPPORTED)`, str(`{}`), "planning error: line 1, column 13: column 'MAP_KEYS_ARE_NOT_SUPPORTED' not found in any table (available: j)"},
		{`JSON_VALUE(j, '$.a.sum(@.b)')`, str(`{}`), "planning error: line 1, column 15: JSON path '$.a.sum(@.b)': functions with arguments such as sum(@.b) is not supported yet"},
		{`1 IS JSON`, str(`{}`), "planning error: line 1, column 3: IS JSON needs a string, not INT NOT NULL"},
	} {
		if got := evalJSON(t, c.sql, c.j); got != c.want {
			t.Errorf("%s on %s:\n got %s\nwant %s", c.sql, FormatValue(c.j, types.StringType), got, c.want)
		}
	}
}

// A runtime error of a call on a row names the place of the call.
func TestJSONRuntimeErrorPlace(t *testing.T) {
	got := evalJSON(t, `  JSON_VALUE(j, '$.a' ERROR ON ERROR)`, types.StringValue(`{}`))
	if want := "runtime error: sql: line 1, column 3: JSON_VALUE: No results for path: $['a']"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// The writers of every SQL type the constructors take.
func TestJSONWriter(t *testing.T) {
	row := types.RowOf(types.Field{Name: "z", Type: types.IntType}, types.Field{Name: "a", Type: types.ArrayOf(types.StringType)})
	m := types.MapOf(types.StringType, types.DoubleType)
	for _, c := range []struct {
		t    types.Type
		v    types.Value
		want string
	}{
		{row, types.ListValue([]types.Value{types.IntValue(1), types.ListValue([]types.Value{types.StringValue("x"), types.NullValue})}), `{"a":["x",null],"z":1}`},
		{m, types.ListValue([]types.Value{types.StringValue("b"), types.FloatValue(2), types.StringValue("a"), types.NullValue}), `{"a":null,"b":2.0}`},
		{types.ArrayOf(m), types.ListValue([]types.Value{types.NullValue}), `[null]`},
		{types.Type{Kind: types.Binary, Length: 2}, types.StringValue("\xff\x00"), `"/wA="`},
		{types.Type{Kind: types.SmallInt}, types.IntValue(-7), `-7`},
		{types.DecimalType(20, 4), types.BigDecimalValue(bigPow10(19)), `1E+15`},
		{types.DecimalType(5, 2), types.IntValue(-50), `-0.5`},
		{types.DoubleType, types.FloatValue(1e-7), `1.0E-7`},
		{types.DoubleType, types.FloatValue(-0.0), `0.0`},
		{types.DoubleType, types.FloatValue(123456789), `123456789`},
		{types.DoubleType, types.FloatValue(12345678.5), `12345678.5`},
		{types.Type{Kind: types.Float}, types.FloatValue(0.1), `0.10000000149011612`},
	} {
		w, err := jsonWriter(c.t)
		if err != nil {
			t.Fatalf("%s: %v", c.t, err)
		}
		if got := string(w(nil, c.v)); got != c.want {
			t.Errorf("%s: %s, want %s", c.t, got, c.want)
		}
	}
	for _, bad := range []types.Type{types.DateType, {Kind: types.Time}, {Kind: types.Interval}, types.MapOf(types.IntType, types.IntType), types.ArrayOf(types.DateType)} {
		if _, err := jsonWriter(bad); err == nil {
			t.Errorf("%s converted to JSON", bad)
		}
	}
	mustPanic := func(what string, fn func()) {
		defer func() {
			if _, ok := recover().(runtimeError); !ok {
				t.Errorf("%s: no runtime error", what)
			}
		}()
		fn()
	}
	w, _ := jsonWriter(m)
	mustPanic("a NULL map key", func() { w(nil, types.ListValue([]types.Value{types.NullValue, types.FloatValue(1)})) })
	d, _ := jsonWriter(types.DoubleType)
	mustPanic("NaN", func() { d(nil, types.FloatValue(math.NaN())) })
}

func TestFormatBigDecimal(t *testing.T) {
	for in, want := range map[string]string{
		"1.50": "1.50", "1e3": "1E+3", "1.5E-3": "0.0015", "-0": "0", "-0.0": "0.0", "1e-7": "1E-7",
		"0.0000001": "1E-7", "0.000001": "0.000001", "123.456e2": "12345.6", "0e5": "0E+5", "12": "12",
		"-1.23E+20": "-1.23E+20", "5e-1": "0.5", "1e99999999999": "1e99999999999",
	} {
		if got := canonicalJSONNumber(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// The calls print back as they were written, and that prints the same.
func TestJSONCallsRoundTrip(t *testing.T) {
	for _, s := range []string{
		`JSON_VALUE(j, '$.a' RETURNING DECIMAL(10, 2) NULL ON EMPTY ERROR ON ERROR)`,
		`JSON_VALUE(j, '$.a' RETURNING STRING DEFAULT 'x' ON ERROR)`,
		`JSON_QUERY(j, 'lax $[*]' WITH UNCONDITIONAL WRAPPER NULL ON EMPTY EMPTY OBJECT ON ERROR)`,
		`JSON_OBJECT(KEY 'a' VALUE JSON_OBJECT(), 'b' VALUE JSON_ARRAY(JSON_ARRAY() NULL ON NULL) NULL ON NULL)`,
		`JSON_ARRAYAGG(JSON_OBJECT(KEY 'k' VALUE j) NULL ON NULL)`,
		`NOT j IS NOT JSON SCALAR`,
	} {
		e, err := parser.ParseExpr(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		printed := parser.ExprString(e)
		e2, err := parser.ParseExpr(printed)
		if err != nil {
			t.Fatalf("%s printed as %s: %v", s, printed, err)
		}
		if again := parser.ExprString(e2); again != printed {
			t.Errorf("%s printed as %s, then as %s", s, printed, again)
		}
	}
}

// The aggregates: arrival order, retraction of the earliest occurrence,
// merging (window slices), duplicate keys.
func TestJSONAggregates(t *testing.T) {
	sc := &Scope{Cols: []Column{{Name: "k", Type: types.StringType}, {Name: "v", Type: types.IntType}}}
	compile := func(sql string) *AggCall {
		e, err := parser.ParseExpr(sql)
		if err != nil {
			t.Fatal(err)
		}
		a, err := CompileAgg(e.(*parser.Call), &Compiler{Scope: sc}, true)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return a
	}
	arr, arrNull, obj := compile(`JSON_ARRAYAGG(v)`), compile(`JSON_ARRAYAGG(v NULL ON NULL)`), compile(`JSON_OBJECTAGG(k VALUE v)`)
	l := NewAggLayout(0, []*AggCall{arr, arrNull, obj})
	row := func(k string, v types.Value) []types.Value { return []types.Value{types.StringValue(k), v} }
	result := func(acc []types.Value) string {
		var out []string
		for _, c := range l.Calls {
			out = append(out, l.Result(acc, c).S)
		}
		return strings.Join(out, " ")
	}
	acc := l.Create(nil)
	l.Accumulate(acc, row("b", types.IntValue(2)), 1)
	l.Accumulate(acc, row("a", types.IntValue(1)), 1)
	l.Accumulate(acc, row("c", types.NullValue), 1)
	if got, want := result(acc), `[2,1] [2,1,null] {"a":1,"b":2,"c":null}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	l.Accumulate(acc, row("b", types.IntValue(2)), -1)
	l.Accumulate(acc, row("c", types.NullValue), -1)
	l.Accumulate(acc, row("x", types.IntValue(9)), -1) // not there
	if got, want := result(acc), `[1] [1] {"a":1}`; got != want {
		t.Errorf("after retractions: got %s, want %s", got, want)
	}
	other := l.Create(nil)
	l.Accumulate(other, row("d", types.IntValue(4)), 1)
	l.Merge(acc, other)
	if got, want := result(acc), `[1,4] [1,4] {"a":1,"d":4}`; got != want {
		t.Errorf("merged: got %s, want %s", got, want)
	}
	for name, fn := range map[string]func(){
		"a repeated key":           func() { l.Accumulate(acc, row("a", types.IntValue(5)), 1) },
		"a repeated key in merges": func() { l.Merge(acc, other) },
		"a NULL key":               func() { l.Accumulate(acc, []types.Value{types.NullValue, types.IntValue(1)}, 1) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("%s: no error", name)
				} else if _, ok := r.(runtimeError); !ok {
					panic(r)
				} else if name != "a NULL key" && !strings.Contains(fmt.Sprint(r), "duplicate keys are not allowed") {
					t.Errorf("%s: %v", name, r)
				}
			}()
			fn()
		}()
	}
	empty := l.Create(nil)
	if got, want := result(empty), `[] [] {}`; got != want {
		t.Errorf("empty: got %s, want %s", got, want)
	}
	if _, err := CompileAgg(&parser.Call{Name: "JSON_ARRAYAGG", Distinct: true, Args: []parser.Expr{&parser.Literal{Kind: parser.StringLit, Text: "ABSENT"}, &parser.Ident{Parts: []string{"v"}}}}, &Compiler{Scope: sc}, false); err == nil {
		t.Error("JSON_ARRAYAGG(DISTINCT v) compiled")
	}
	if _, err := CompileAgg(mustCall(t, `JSON_OBJECTAGG(v VALUE k)`), &Compiler{Scope: sc}, false); err == nil {
		t.Error("an INT key compiled")
	}
}

func mustCall(t *testing.T, s string) *parser.Call {
	e, err := parser.ParseExpr(s)
	if err != nil {
		t.Fatal(err)
	}
	return e.(*parser.Call)
}

// parseJSONTokens reads JSON text with encoding/json's tokens: the
// reference the reader of valid text is tested against.
func parseJSONTokens(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	type frame struct {
		obj  *jsonObject
		arr  []any
		key  string
		keyd bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v any
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				f := &frame{arr: []any{}}
				if d == '{' {
					f.obj = &jsonObject{}
				}
				stack = append(stack, f)
				continue
			}
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if v = f.arr; f.obj != nil {
				v = f.obj
			}
		} else {
			v = tok
			if n := len(stack); n > 0 && stack[n-1].obj != nil && !stack[n-1].keyd {
				stack[n-1].key, stack[n-1].keyd = tok.(string), true
				continue
			}
		}
		if len(stack) == 0 {
			if _, err := dec.Token(); err != io.EOF {
				return nil, errors.New("content after the value")
			}
			return v, nil
		}
		if f := stack[len(stack)-1]; f.obj != nil {
			f.obj.set(f.key, v)
			f.keyd = false
		} else {
			f.arr = append(f.arr, v)
		}
	}
}

// The reader of valid text builds what encoding/json's tokens build:
// member order, repeated keys, escapes, numbers' text.
func TestJSONReaderMatchesTokens(t *testing.T) {
	for _, s := range []string{
		`{"b":1,"a":[true,false,null,{"c":"\u00e9\ud83d\ude00\n\"\\\/"}],"b":2}`,
		` [ -0 , 1.5e+3 , 1E-2 , 123456789012345678901234567890 , "" , {} , [] ] `,
		`"plain é"`, `"esc\\aped"`, `7`, `null`, `{"":{"":[[[]]]}}`,
		`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k1":0,"k18":18}`,
	} {
		want, err1 := parseJSONTokens(s)
		got, err2 := parseJSON(s)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", s, err1, err2)
		}
		if fmt.Sprintf("%#v", dump(got)) != fmt.Sprintf("%#v", dump(want)) {
			t.Errorf("%s:\n got %#v\nwant %#v", s, dump(got), dump(want))
		}
	}
}

// dump makes a tree comparable: objects as their keys and values in order.
func dump(v any) any {
	switch v := v.(type) {
	case *jsonObject:
		out := []any{"{"}
		for i, k := range v.keys {
			out = append(out, k, dump(v.vals[i]))
		}
		return out
	case []any:
		out := []any{"["}
		for _, e := range v {
			out = append(out, dump(e))
		}
		return out
	}
	return v
}
