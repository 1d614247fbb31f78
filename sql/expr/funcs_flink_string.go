package expr

// Flink's string functions beyond funcs.go's (see funcs_flink_scalar.go).
// Positions and lengths count characters (runes; Java counts UTF-16
// units, which differ only beyond the Basic Multilingual Plane), and
// regular expressions are Go's RE2, as elsewhere in weir.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

func (c *Compiler) stringCall(e *parser.Call, xs []Expr) (Expr, bool, error) {
	x, err := func() (Expr, error) {
		switch e.Name {
		case "BTRIM":
			if err := wantArgs(e, xs, 1, 2); err != nil {
				return Expr{}, err
			}
			if err := stringArgs(e, xs, 0, 1); err != nil {
				return Expr{}, err
			}
			if len(xs) == 1 {
				return strFn1(xs, types.StringType, func(a0 types.Value) types.Value { return types.StringValue(strings.Trim(a0.S, " ")) }), nil
			}
			return strFn(xs, types.StringType, func(a []types.Value) types.Value { return types.StringValue(strings.Trim(a[0].S, a[1].S)) }), nil
		case "REPEAT":
			if err := wantArgs(e, xs, 2, 2); err != nil {
				return Expr{}, err
			}
			if err := stringArgs(e, xs, 0); err != nil {
				return Expr{}, err
			}
			if err := intArgs(e, xs, 1); err != nil {
				return Expr{}, err
			}
			return strFn(xs, types.StringType, func(a []types.Value) types.Value {
				if a[1].I <= 0 || a[0].S == "" {
					return types.StringValue("")
				}
				if a[1].I > types.MaxLength/int64(len(a[0].S)) {
					panic(runtimeError("REPEAT's result would be longer than a STRING"))
				}
				return types.StringValue(strings.Repeat(a[0].S, int(a[1].I)))
			}), nil
		case "OVERLAY":
			if err := wantArgs(e, xs, 3, 4); err != nil {
				return Expr{}, err
			}
			if err := stringArgs(e, xs, 0, 1); err != nil {
				return Expr{}, err
			}
			if err := intArgs(e, xs, 2, 3); err != nil {
				return Expr{}, err
			}
			return strFn(xs, types.StringType, func(a []types.Value) types.Value {
				n := int64(-1)
				if len(a) == 4 {
					n = a[3].I
				}
				return types.StringValue(overlay(a[0].S, a[1].S, a[2].I, n))
			}), nil
		case "STARTSWITH", "ENDSWITH":
			if err := wantArgs(e, xs, 2, 2); err != nil {
				return Expr{}, err
			}
			if isBytes(xs[0].Type) != isBytes(xs[1].Type) && xs[0].Type.Kind != types.Null && xs[1].Type.Kind != types.Null {
				return Expr{}, ErrAt(e, "%s needs two strings or two byte strings, not %s and %s", e.Name, xs[0].Type, xs[1].Type)
			}
			if !isBytes(xs[0].Type) && !isBytes(xs[1].Type) {
				if err := stringArgs(e, xs, 0, 1); err != nil {
					return Expr{}, err
				}
			}
			has := strings.HasPrefix
			if e.Name == "ENDSWITH" {
				has = strings.HasSuffix
			}
			return strFn(xs, types.BooleanType, func(a []types.Value) types.Value { return types.BoolValue(has(a[0].S, a[1].S)) }), nil
		case "REGEXP_COUNT", "REGEXP_INSTR", "REGEXP_SUBSTR", "REGEXP_EXTRACT_ALL":
			return regexpCall(e, xs)
		case "TRANSLATE":
			return translateCall(e, xs)
		case "LPAD", "RPAD":
			if err := wantArgs(e, xs, 3, 3); err != nil {
				return Expr{}, err
			}
			if err := stringArgs(e, xs, 0, 2); err != nil {
				return Expr{}, err
			}
			if err := intArgs(e, xs, 1); err != nil {
				return Expr{}, err
			}
			left := e.Name == "LPAD"
			return strFn(xs, types.StringType, func(a []types.Value) types.Value {
				if a[1].I < 0 || a[2].S == "" {
					return types.NullValue
				}
				if a[1].I > types.MaxLength {
					panic(runtimeError(e.Name + "'s length is longer than a STRING"))
				}
				return types.StringValue(pad(a[0].S, int(a[1].I), a[2].S, left))
			}).nullable(), nil
		case "FROM_BASE64":
			if err := wantArgs(e, xs, 1, 1); err != nil {
				return Expr{}, err
			}
			if err := bytesOrStringArg(e, xs, 0); err != nil {
				return Expr{}, err
			}
			return strFn1(xs, types.StringType, func(a0 types.Value) types.Value {
				// Java's decoder takes the padding but does not need it
				b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(a0.S, "="))
				if err != nil {
					panic(runtimeError("FROM_BASE64: '" + a0.S + "' is not Base64"))
				}
				return types.StringValue(string(b))
			}), nil
		case "TO_BASE64":
			if err := wantArgs(e, xs, 1, 1); err != nil {
				return Expr{}, err
			}
			if err := bytesOrStringArg(e, xs, 0); err != nil {
				return Expr{}, err
			}
			return strFn1(xs, types.StringType, func(a0 types.Value) types.Value {
				return types.StringValue(base64.StdEncoding.EncodeToString([]byte(a0.S)))
			}), nil
		case "ASCII":
			if err := oneStringArg(e, xs); err != nil {
				return Expr{}, err
			}
			// Flink's: the first byte of the UTF-8 encoding, as a Java byte
			return strFn1(xs, types.IntType, func(a0 types.Value) types.Value {
				if a0.S == "" {
					return types.IntValue(0)
				}
				return types.IntValue(int64(int8(a0.S[0])))
			}), nil
		case "CHR":
			if err := wantArgs(e, xs, 1, 1); err != nil {
				return Expr{}, err
			}
			if err := intArgs(e, xs, 0); err != nil {
				return Expr{}, err
			}
			// Flink's: the character of the low byte (ISO-8859-1), "" below 0
			return strFn1(xs, types.StringType, func(a0 types.Value) types.Value {
				if a0.I < 0 {
					return types.StringValue("")
				}
				return types.StringValue(string(rune(a0.I & 0xFF)))
			}), nil
		case "DECODE", "ENCODE":
			if err := wantArgs(e, xs, 2, 2); err != nil {
				return Expr{}, err
			}
			if err := bytesOrStringArg(e, xs, 0); err != nil {
				return Expr{}, err
			}
			if err := stringArgs(e, xs, 1); err != nil {
				return Expr{}, err
			}
			t, conv := types.StringType, decodeCharset
			if e.Name == "ENCODE" {
				t, conv = types.BytesType, encodeCharset
			}
			if xs[1].Const {
				if cs := xs[1].Eval(nil); !cs.Null {
					if _, ok := conv("", cs.S); !ok {
						return Expr{}, ErrAt(e.Args[1], "%s: unsupported charset '%s' (US-ASCII, ISO-8859-1, UTF-8, UTF-16BE, UTF-16LE, UTF-16)", e.Name, cs.S)
					}
				}
			}
			return strFn(xs, t, func(a []types.Value) types.Value {
				s, ok := conv(a[0].S, a[1].S)
				if !ok {
					panic(runtimeError(e.Name + ": unsupported charset '" + a[1].S + "'"))
				}
				return types.StringValue(s)
			}), nil
		case "INSTR":
			if err := wantArgs(e, xs, 2, 2); err != nil {
				return Expr{}, err
			}
			if err := stringArgs(e, xs, 0, 1); err != nil {
				return Expr{}, err
			}
			return strFn(xs, types.IntType, func(a []types.Value) types.Value {
				i := strings.Index(a[0].S, a[1].S)
				if i < 0 {
					return types.IntValue(0)
				}
				return types.IntValue(int64(utf8.RuneCountInString(a[0].S[:i]) + 1))
			}), nil
		case "LEFT", "RIGHT":
			if err := wantArgs(e, xs, 2, 2); err != nil {
				return Expr{}, err
			}
			if err := stringArgs(e, xs, 0); err != nil {
				return Expr{}, err
			}
			if err := intArgs(e, xs, 1); err != nil {
				return Expr{}, err
			}
			left := e.Name == "LEFT"
			return strFn(xs, types.StringType, func(a []types.Value) types.Value {
				s, n := a[0].S, a[1].I
				if n <= 0 {
					return types.StringValue("")
				}
				count := int64(utf8.RuneCountInString(s))
				if n >= count {
					return a[0]
				}
				if left {
					return types.StringValue(s[:runeOffset(s, int(n))])
				}
				return types.StringValue(s[runeOffset(s, int(count-n)):])
			}), nil
		case "URL_DECODE":
			if err := oneStringArg(e, xs); err != nil {
				return Expr{}, err
			}
			return strFn1(xs, types.StringType, func(a0 types.Value) types.Value {
				s, err := url.QueryUnescape(a0.S)
				if err != nil {
					return types.NullValue
				}
				return types.StringValue(s)
			}).nullable(), nil
		case "URL_ENCODE":
			if err := oneStringArg(e, xs); err != nil {
				return Expr{}, err
			}
			return strFn1(xs, types.StringType, func(a0 types.Value) types.Value { return types.StringValue(urlEncode(a0.S)) }), nil
		case "PARSE_URL":
			if err := wantArgs(e, xs, 2, 3); err != nil {
				return Expr{}, err
			}
			if err := stringArgs(e, xs, 0, 1, 2); err != nil {
				return Expr{}, err
			}
			return strFn(xs, types.StringType, func(a []types.Value) types.Value {
				key := ""
				if len(a) == 3 {
					key = a[2].S
				}
				s, ok := parseURL(a[0].S, a[1].S, key, len(a) == 3)
				if !ok {
					return types.NullValue
				}
				return types.StringValue(s)
			}).nullable(), nil
		case "REVERSE":
			if err := oneStringArg(e, xs); err != nil {
				return Expr{}, err
			}
			return strFn1(xs, types.StringType, func(a0 types.Value) types.Value {
				rs := []rune(a0.S)
				for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
					rs[i], rs[j] = rs[j], rs[i]
				}
				return types.StringValue(string(rs))
			}), nil
		case "STR_TO_MAP":
			return strToMapCall(e, xs)
		case "JSON_QUOTE":
			if err := oneStringArg(e, xs); err != nil {
				return Expr{}, err
			}
			return strFn1(xs, types.StringType, func(a0 types.Value) types.Value { return types.StringValue(jsonQuote(a0.S)) }), nil
		case "JSON_UNQUOTE":
			if err := oneStringArg(e, xs); err != nil {
				return Expr{}, err
			}
			return strFn1(xs, types.StringType, func(a0 types.Value) types.Value {
				s := a0.S
				if len(s) < 2 || s[0] != '"' || !json.Valid([]byte(s)) {
					return a0 // not a JSON string: as it is
				}
				var out string
				_ = json.Unmarshal([]byte(s), &out)
				return types.StringValue(out)
			}), nil
		case "ELT":
			return eltCall(e, xs)
		case "SPLIT":
			if err := wantArgs(e, xs, 2, 2); err != nil {
				return Expr{}, err
			}
			if err := stringArgs(e, xs, 0, 1); err != nil {
				return Expr{}, err
			}
			return strFn(xs, types.ArrayOf(types.StringType), func(a []types.Value) types.Value {
				s, d := a[0].S, a[1].S
				if s == "" {
					return types.ListValue([]types.Value{})
				}
				var out []types.Value
				if d == "" {
					out = make([]types.Value, 0, len(s))
					for _, r := range s {
						out = append(out, types.StringValue(string(r)))
					}
					return types.ListValue(out)
				}
				out = make([]types.Value, 0, strings.Count(s, d)+1)
				for {
					i := strings.Index(s, d)
					if i < 0 {
						break
					}
					out = append(out, types.StringValue(s[:i]))
					s = s[i+len(d):]
				}
				return types.ListValue(append(out, types.StringValue(s)))
			}), nil
		case "IS_ALPHA", "IS_DECIMAL", "IS_DIGIT":
			if err := wantArgs(e, xs, 1, 1); err != nil {
				return Expr{}, err
			}
			return isClassCall(e.Name, xs[0]), nil
		case "PRINTF":
			return printfCall(e, xs)
		}
		return Expr{}, errNotMine
	}()
	if err == errNotMine {
		return Expr{}, false, nil
	}
	return x, true, err
}

// bytesOrStringArg checks that argument i is a string or bytes (other
// types are cast to a string, as stringArgs does).
func bytesOrStringArg(e *parser.Call, xs []Expr, i int) error {
	if isBytes(xs[i].Type) {
		return nil
	}
	return stringArgs(e, xs, i)
}

// runeOffset is the byte offset of s's n-th character (len(s) past its
// end).
func runeOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// overlay is Flink's OVERLAY(s PLACING r FROM start FOR n) (n < 0: r's
// length): s unchanged when start is outside it; the rest after the
// replaced part only when it is not empty and n > 0.
func overlay(s, r string, start, n int64) string {
	count := int64(utf8.RuneCountInString(s))
	if n < 0 {
		n = int64(utf8.RuneCountInString(r))
	}
	if start <= 0 || start > count {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:runeOffset(s, int(start-1))])
	b.WriteString(r)
	if start+n <= count && n > 0 {
		b.WriteString(s[runeOffset(s, int(start-1+n)):])
	}
	return b.String()
}

// pad is Flink's LPAD and RPAD: s padded with p to n characters, or cut
// to its first n.
func pad(s string, n int, p string, left bool) string {
	rs := []rune(s)
	if len(rs) >= n {
		return string(rs[:n])
	}
	pr := []rune(p)
	out := make([]rune, 0, n)
	fill := func(k int) {
		for i := 0; i < k; i++ {
			out = append(out, pr[i%len(pr)])
		}
	}
	if left {
		fill(n - len(rs))
		out = append(out, rs...)
	} else {
		out = append(out, rs...)
		fill(n - len(rs))
	}
	return string(out)
}

// patternOf is how a regular-expression function gets its pattern: a
// constant compiled once at planning (a pattern Go cannot compile is a
// planning error), or a row's, compiled when it changes.
func patternOf(e *parser.Call, x Expr) (func(p string) (literalRegexp, error), error) {
	if x.Const {
		v := x.Eval(nil)
		if v.Null {
			return func(string) (literalRegexp, error) { return literalRegexp{}, nil }, nil
		}
		re, err := compileLiteral(v.S) // regexp_literal.go
		if err != nil {
			return nil, ErrAt(e.Args[1], "invalid regular expression: %v", err)
		}
		return func(string) (literalRegexp, error) { return re, nil }, nil
	}
	type compiled struct {
		pat string
		re  literalRegexp
		err error
	}
	var last atomic.Pointer[compiled]
	return func(p string) (literalRegexp, error) {
		if c := last.Load(); c != nil && c.pat == p {
			return c.re, c.err
		}
		re, err := newLiteralRegexp(p)
		last.Store(&compiled{pat: p, re: re, err: err})
		return re, err
	}, nil
}

// regexpCall is REGEXP_COUNT, REGEXP_INSTR, REGEXP_SUBSTR and
// REGEXP_EXTRACT_ALL. A row's pattern that does not compile gives NULL
// (REGEXP_EXTRACT_ALL: fails the job), as Flink's.
func regexpCall(e *parser.Call, xs []Expr) (Expr, error) {
	hi := 2
	if e.Name == "REGEXP_EXTRACT_ALL" {
		hi = 3
	}
	if err := wantArgs(e, xs, 2, hi); err != nil {
		return Expr{}, err
	}
	if err := stringArgs(e, xs, 0, 1); err != nil {
		return Expr{}, err
	}
	if err := intArgs(e, xs, 2); err != nil {
		return Expr{}, err
	}
	reOf, err := patternOf(e, xs[1])
	if err != nil {
		return Expr{}, err
	}
	switch e.Name {
	case "REGEXP_COUNT":
		return strFn(xs, types.IntType, func(a []types.Value) types.Value {
			re, err := reOf(a[1].S)
			if err != nil {
				return types.NullValue
			}
			return types.IntValue(int64(len(re.FindAllStringIndex(a[0].S, -1))))
		}).nullable(), nil
	case "REGEXP_INSTR":
		return strFn(xs, types.IntType, func(a []types.Value) types.Value {
			re, err := reOf(a[1].S)
			if err != nil {
				return types.NullValue
			}
			m := re.FindStringIndex(a[0].S)
			if m == nil {
				return types.IntValue(0)
			}
			return types.IntValue(int64(utf8.RuneCountInString(a[0].S[:m[0]]) + 1))
		}).nullable(), nil
	case "REGEXP_SUBSTR":
		return strFn(xs, types.StringType, func(a []types.Value) types.Value {
			re, err := reOf(a[1].S)
			if err != nil {
				return types.NullValue
			}
			m := re.FindStringIndex(a[0].S)
			if m == nil {
				return types.NullValue
			}
			return types.StringValue(a[0].S[m[0]:m[1]])
		}).nullable(), nil
	}
	// REGEXP_EXTRACT_ALL(s, regex[, group]): group 1 when left out
	if len(xs) == 2 {
		xs = append(xs, konst(types.IntValue(1), types.Type{Kind: types.Int, NotNull: true}, false))
	}
	return strFn(xs, types.ArrayOf(types.StringType), func(a []types.Value) types.Value {
		re, err := reOf(a[1].S)
		if err != nil {
			panic(runtimeError("REGEXP_EXTRACT_ALL: invalid regular expression: " + err.Error()))
		}
		g := a[2].I
		if g < 0 || g > int64(re.NumSubexp()) {
			panic(runtimeError(fmt.Sprintf("REGEXP_EXTRACT_ALL: extract group index %d is out of range [0, %d]", g, re.NumSubexp())))
		}
		ms := re.FindAllStringSubmatchIndex(a[0].S, -1)
		out := make([]types.Value, len(ms))
		for i, m := range ms {
			if m[2*g] < 0 {
				out[i] = types.NullValue
				continue
			}
			out[i] = types.StringValue(a[0].S[m[2*g]:m[2*g+1]])
		}
		return types.ListValue(out)
	}), nil
}

// translateCall is TRANSLATE(s, from, to): each character of s that is
// in from replaced by the character at its place in to, or dropped when
// to is shorter; as Flink's, a NULL or empty from leaves s as it is, and
// a NULL to drops every character of from.
func translateCall(e *parser.Call, xs []Expr) (Expr, error) {
	if err := wantArgs(e, xs, 3, 3); err != nil {
		return Expr{}, err
	}
	if err := stringArgs(e, xs, 0, 1, 2); err != nil {
		return Expr{}, err
	}
	f, g, h := xs[0].Eval, xs[1].Eval, xs[2].Eval
	return Expr{Type: types.Type{Kind: types.Varchar, Length: types.MaxLength, NotNull: xs[0].Type.NotNull}, Const: allKonst(xs), Col: -1,
		Eval: func(r []types.Value) types.Value {
			s, from := f(r), g(r)
			if s.Null || from.Null || s.S == "" || from.S == "" {
				return s
			}
			to := h(r).S // "" when NULL
			var b strings.Builder
			b.Grow(len(s.S))
		chars:
			for _, c := range s.S {
				j := 0
				for _, fc := range from.S {
					if fc == c {
						if k := runeOffset(to, j); k < len(to) {
							tc, _ := utf8.DecodeRuneInString(to[k:])
							b.WriteRune(tc)
						}
						continue chars
					}
					j++
				}
				b.WriteRune(c)
			}
			return types.StringValue(b.String())
		}}, nil
}

// decodeCharset reads bytes b in a charset, as Java's String(bytes,
// charset) (malformed input replaced); false for a charset weir does not
// know.
func decodeCharset(b, charset string) (string, bool) {
	switch strings.ToUpper(charset) {
	case "UTF-8", "UTF8":
		return strings.ToValidUTF8(b, "\uFFFD"), true
	case "US-ASCII", "ASCII":
		return strings.Map(func(r rune) rune {
			if r >= utf8.RuneSelf {
				return '\uFFFD'
			}
			return r
		}, latin1(b)), true
	case "ISO-8859-1", "LATIN1":
		return latin1(b), true
	case "UTF-16BE", "UTF-16LE", "UTF-16":
		le := strings.ToUpper(charset) == "UTF-16LE"
		if strings.ToUpper(charset) == "UTF-16" && len(b) >= 2 {
			switch {
			case b[0] == 0xFE && b[1] == 0xFF:
				b = b[2:]
			case b[0] == 0xFF && b[1] == 0xFE:
				b, le = b[2:], true
			}
		}
		u := make([]uint16, 0, len(b)/2)
		for i := 0; i+1 < len(b); i += 2 {
			if le {
				u = append(u, uint16(b[i])|uint16(b[i+1])<<8)
			} else {
				u = append(u, uint16(b[i])<<8|uint16(b[i+1]))
			}
		}
		s := string(utf16.Decode(u))
		if len(b)%2 == 1 {
			s += "\uFFFD"
		}
		return s, true
	}
	return "", false
}

func latin1(b string) string {
	rs := make([]rune, len(b))
	for i := 0; i < len(b); i++ {
		rs[i] = rune(b[i])
	}
	return string(rs)
}

// encodeCharset writes s in a charset, as Java's String.getBytes (a
// character the charset lacks written as '?').
func encodeCharset(s, charset string) (string, bool) {
	switch strings.ToUpper(charset) {
	case "UTF-8", "UTF8":
		return s, true
	case "US-ASCII", "ASCII", "ISO-8859-1", "LATIN1":
		limit := rune(0xFF)
		if u := strings.ToUpper(charset); u == "US-ASCII" || u == "ASCII" {
			limit = 0x7F
		}
		b := make([]byte, 0, len(s))
		for _, r := range s {
			if r > limit {
				r = '?'
			}
			b = append(b, byte(r))
		}
		return string(b), true
	case "UTF-16BE", "UTF-16LE", "UTF-16":
		u := utf16.Encode([]rune(s))
		b := make([]byte, 0, 2*len(u)+2)
		le := strings.ToUpper(charset) == "UTF-16LE"
		if strings.ToUpper(charset) == "UTF-16" {
			b = append(b, 0xFE, 0xFF)
		}
		for _, c := range u {
			if le {
				b = append(b, byte(c), byte(c>>8))
			} else {
				b = append(b, byte(c>>8), byte(c))
			}
		}
		return string(b), true
	}
	return "", false
}

// urlEncode is Java's URLEncoder.encode in UTF-8: letters, digits and
// ".-*_" as they are, a space as "+", other bytes as %XX.
func urlEncode(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '*', c == '_':
			b.WriteByte(c)
		case c == ' ':
			b.WriteByte('+')
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xF])
		}
	}
	return b.String()
}

// javaURLProtocols are the protocols Java's URL parses (another is a
// MalformedURLException: NULL).
var javaURLProtocols = map[string]bool{"http": true, "https": true, "ftp": true, "file": true, "jar": true, "mailto": true}

// parseURL is Flink's PARSE_URL: a part of a URL as Java's URL gives it
// (HOST, PATH, QUERY, REF, PROTOCOL, FILE, AUTHORITY, USERINFO), or with
// a key the value of that query parameter (part QUERY only); false for
// NULL.
func parseURL(s, part, key string, withKey bool) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || !javaURLProtocols[u.Scheme] {
		return "", false
	}
	hasQuery := u.RawQuery != "" || u.ForceQuery
	if withKey {
		if part != "QUERY" || !hasQuery {
			return "", false
		}
		for _, kv := range strings.Split(u.RawQuery, "&") {
			if k, v, ok := strings.Cut(kv, "="); ok && k == key {
				return v, true
			}
		}
		return "", false
	}
	switch part {
	case "HOST":
		return u.Hostname(), true
	case "PATH":
		return u.EscapedPath(), true
	case "QUERY":
		return u.RawQuery, hasQuery
	case "REF":
		return u.EscapedFragment(), strings.Contains(s, "#")
	case "PROTOCOL":
		return u.Scheme, true
	case "FILE":
		if hasQuery {
			return u.EscapedPath() + "?" + u.RawQuery, true
		}
		return u.EscapedPath(), true
	case "AUTHORITY":
		if u.User != nil {
			return u.User.String() + "@" + u.Host, true
		}
		return u.Host, u.Host != "" || u.Opaque == ""
	case "USERINFO":
		if u.User == nil {
			return "", false
		}
		return u.User.String(), true
	}
	return "", false
}

// strToMapCall is STR_TO_MAP(s[, pairDelimiter, keyValueDelimiter]): the
// delimiters (',' and '=' by default) are regular expressions, as Java's
// String.split reads them; a later value of a key replaces the earlier.
func strToMapCall(e *parser.Call, xs []Expr) (Expr, error) {
	if len(xs) != 1 && len(xs) != 3 {
		return Expr{}, ErrAt(e, "STR_TO_MAP takes 1 or 3 arguments, got %d", len(xs))
	}
	if err := stringArgs(e, xs, 0, 1, 2); err != nil {
		return Expr{}, err
	}
	if len(xs) == 1 {
		s := types.Type{Kind: types.Varchar, Length: types.MaxLength, NotNull: true}
		xs = append(xs, konst(types.StringValue(","), s, false), konst(types.StringValue("="), s, false))
	}
	e2 := &parser.Call{Pos: e.Pos, Name: e.Name, Args: []parser.Expr{e, e}}
	if len(e.Args) == 3 {
		e2.Args = e.Args[1:]
	}
	pairs, err := patternOf(e2, xs[1])
	if err != nil {
		return Expr{}, err
	}
	e2.Args = []parser.Expr{e, e}
	if len(e.Args) == 3 {
		e2.Args = []parser.Expr{e, e.Args[2]}
	}
	kvs, err := patternOf(e2, xs[2])
	if err != nil {
		return Expr{}, err
	}
	return strFn(xs, types.MapOf(types.StringType, types.StringType), func(a []types.Value) types.Value {
		pre, err1 := pairs(a[1].S)
		kre, err2 := kvs(a[2].S)
		if err1 != nil || err2 != nil {
			panic(runtimeError("STR_TO_MAP: invalid delimiter"))
		}
		var out []types.Value
		if a[0].S == "" {
			return types.ListValue([]types.Value{})
		}
		ps := pre.Split(a[0].S, -1)
		for len(ps) > 0 && ps[len(ps)-1] == "" {
			ps = ps[:len(ps)-1] // Java's split drops the trailing empty strings
		}
	pairs:
		for _, p := range ps {
			kv := kre.Split(p, 2)
			k, v := types.StringValue(kv[0]), types.NullValue
			if len(kv) == 2 {
				v = types.StringValue(kv[1])
			}
			for j := 0; j < len(out); j += 2 {
				if out[j].S == k.S {
					out[j+1] = v
					continue pairs
				}
			}
			out = append(out, k, v)
		}
		if out == nil {
			out = []types.Value{}
		}
		return types.ListValue(out)
	}), nil
}

// jsonQuote is Flink's JSON_QUOTE: s as a JSON string, '/' and the
// characters beyond ASCII escaped too.
func jsonQuote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '/':
			b.WriteString(`\/`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r <= 127 {
				b.WriteRune(r)
				continue
			}
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04x`, u)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// eltCall is ELT(index, e1, e2, ...): the index-th of the expressions
// (from 1), NULL when the index is NULL or out of range.
func eltCall(e *parser.Call, xs []Expr) (Expr, error) {
	if len(xs) < 2 {
		return Expr{}, ErrAt(e, "ELT needs an index and at least one expression")
	}
	if err := intArgs(e, xs, 0); err != nil {
		return Expr{}, err
	}
	ts := make([]types.Type, len(xs)-1)
	for i, x := range xs[1:] {
		ts[i] = x.Type
	}
	t, ok := CommonType(ts)
	if !ok {
		return Expr{}, ErrAt(e, "ELT's expressions have no common type")
	}
	t.TimeAttr = 0
	fs := make([]EvalFn, len(xs)-1)
	for i := range fs {
		x, err := Cast(xs[i+1], t, e.Args[i+1])
		if err != nil {
			return Expr{}, err
		}
		fs[i] = x.Eval
	}
	idx := xs[0].Eval
	return Expr{Type: t.Nullable(), Const: allKonst(xs), Col: -1, Eval: func(r []types.Value) types.Value {
		i := idx(r)
		if i.Null || i.I < 1 || i.I > int64(len(fs)) {
			return types.NullValue
		}
		return fs[i.I-1](r)
	}}, nil
}

// isClassCall is IS_ALPHA, IS_DECIMAL and IS_DIGIT: TRUE for a string of
// letters, a number (or a string Java reads as one), digits (or an
// integer); FALSE for NULL and other types.
func isClassCall(name string, x Expr) Expr {
	t := x.Type
	f := x.Eval
	var test func(v types.Value) bool
	switch {
	case name == "IS_DIGIT" && t.IsInteger(), name == "IS_DECIMAL" && t.IsNumeric():
		test = func(types.Value) bool { return true }
	case !t.IsString():
		test = func(types.Value) bool { return false }
	case name == "IS_ALPHA":
		test = func(v types.Value) bool {
			return v.S != "" && strings.IndexFunc(v.S, func(r rune) bool { return !unicode.IsLetter(r) }) < 0
		}
	case name == "IS_DIGIT":
		test = func(v types.Value) bool {
			return v.S != "" && strings.IndexFunc(v.S, func(r rune) bool { return !unicode.IsDigit(r) }) < 0
		}
	default:
		test = func(v types.Value) bool { return isJavaDouble(v.S) }
	}
	return Expr{Type: types.Type{Kind: types.Boolean, NotNull: true}, Const: x.Const, Col: -1, Eval: func(r []types.Value) types.Value {
		v := f(r)
		return types.BoolValue(!v.Null && test(v))
	}}
}

// isJavaDouble reports whether Java's Double.parseDouble reads s: a
// decimal number around white space, with an optional sign, exponent and
// f/d suffix, or NaN or Infinity (hexadecimal ones are not recognised).
func isJavaDouble(s string) bool {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if s == "NaN" || s == "Infinity" {
		return true
	}
	if n := len(s); n > 0 && strings.IndexByte("fFdD", s[n-1]) >= 0 {
		s = s[:n-1]
	}
	digits := func() int {
		n := 0
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		s = s[n:]
		return n
	}
	n := digits()
	if s != "" && s[0] == '.' {
		s = s[1:]
		n += digits()
	}
	if n == 0 {
		return false
	}
	if s != "" && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s != "" && (s[0] == '+' || s[0] == '-') {
			s = s[1:]
		}
		if digits() == 0 {
			return false
		}
	}
	return s == ""
}

// printfSpec is one piece of a PRINTF format: literal text, or a
// conversion of an argument (arg: its index, from 0) as a Go verb.
type printfSpec struct {
	lit  string
	conv byte   // 0 for literal text
	verb string // the Go directive, "%-5d"
	arg  int
	prec int // -1 when none
	left bool
	w    int
}

// parsePrintf reads a Java format string: %[index$][flags][width][.precision]conversion,
// the conversions b B s S c C d o x X e E f % n.
func parsePrintf(f string) ([]printfSpec, error) {
	var out []printfSpec
	next := 0
	for len(f) > 0 {
		i := strings.IndexByte(f, '%')
		if i < 0 {
			out = append(out, printfSpec{lit: f})
			break
		}
		if i > 0 {
			out = append(out, printfSpec{lit: f[:i]})
		}
		f = f[i+1:]
		j := 0
		for j < len(f) && f[j] >= '0' && f[j] <= '9' {
			j++
		}
		arg := -1
		if j > 0 && j < len(f) && f[j] == '$' {
			n, _ := strconv.Atoi(f[:j])
			if n < 1 {
				return nil, fmt.Errorf("illegal format argument index in '%%%s'", f[:j+1])
			}
			arg = n - 1
			f = f[j+1:]
		}
		j = 0
		for j < len(f) && strings.IndexByte("-#+ 0,(<", f[j]) >= 0 {
			j++
		}
		flags := f[:j]
		if strings.ContainsAny(flags, ",(<") {
			return nil, fmt.Errorf("the format flags ',', '(' and '<' are not supported")
		}
		f = f[j:]
		j = 0
		for j < len(f) && f[j] >= '0' && f[j] <= '9' {
			j++
		}
		width := f[:j]
		f = f[j:]
		prec := ""
		if len(f) > 0 && f[0] == '.' {
			j = 1
			for j < len(f) && f[j] >= '0' && f[j] <= '9' {
				j++
			}
			prec = f[:j]
			f = f[j:]
		}
		if len(f) == 0 {
			return nil, fmt.Errorf("the format ends in an incomplete conversion")
		}
		conv := f[0]
		f = f[1:]
		switch conv {
		case '%':
			out = append(out, printfSpec{lit: "%"})
			continue
		case 'n':
			out = append(out, printfSpec{lit: "\n"})
			continue
		case 'b', 'B', 's', 'S', 'c', 'C', 'd', 'o', 'x', 'X', 'e', 'E', 'f':
		default:
			return nil, fmt.Errorf("the format conversion '%c' is not supported (b s c d o x X e E f %% n are)", conv)
		}
		if arg < 0 {
			arg = next
			next++
		}
		s := printfSpec{conv: conv, arg: arg, prec: -1, left: strings.Contains(flags, "-")}
		s.w, _ = strconv.Atoi(width)
		if prec != "" {
			s.prec, _ = strconv.Atoi(prec[1:])
		}
		verb := conv
		switch conv {
		case 'B', 'S', 'C':
			verb = 's'
		case 'b', 'c':
			verb = 's'
		case 'X':
			verb = 'X'
		}
		s.verb = "%" + flags + width + prec + string(verb)
		out = append(out, s)
	}
	return out, nil
}

// printfCall is PRINTF(format, args...): the arguments formatted as
// Java's Formatter does (a NULL argument prints "null"); NULL when the
// format is NULL.
func printfCall(e *parser.Call, xs []Expr) (Expr, error) {
	if len(xs) == 0 {
		return Expr{}, ErrAt(e, "PRINTF needs a format")
	}
	if err := stringArgs(e, xs, 0); err != nil {
		return Expr{}, err
	}
	var fixed []printfSpec
	if xs[0].Const {
		if v := xs[0].Eval(nil); !v.Null {
			var err error
			if fixed, err = parsePrintf(v.S); err != nil {
				return Expr{}, ErrAt(e.Args[0], "PRINTF: %v", err)
			}
		}
	}
	ts := make([]types.Type, len(xs)-1)
	fs := make([]EvalFn, len(xs)-1)
	for i, x := range xs[1:] {
		ts[i], fs[i] = x.Type, x.Eval
	}
	format := xs[0].Eval
	return Expr{Type: types.Type{Kind: types.Varchar, Length: types.MaxLength, NotNull: xs[0].Type.NotNull}, Const: allKonst(xs), Col: -1,
		Eval: func(r []types.Value) types.Value {
			fv := format(r)
			if fv.Null {
				return fv
			}
			specs := fixed
			if specs == nil {
				var err error
				if specs, err = parsePrintf(fv.S); err != nil {
					panic(runtimeError("PRINTF: " + err.Error()))
				}
			}
			var b strings.Builder
			for _, s := range specs {
				if s.conv == 0 {
					b.WriteString(s.lit)
					continue
				}
				if s.arg >= len(fs) {
					panic(runtimeError(fmt.Sprintf("PRINTF: the format needs an argument %d, there are %d", s.arg+1, len(fs))))
				}
				if err := printfOne(&b, s, fs[s.arg](r), ts[s.arg]); err != nil {
					panic(runtimeError("PRINTF: " + err.Error()))
				}
			}
			return types.StringValue(b.String())
		}}, nil
}

// printfOne formats one argument v of type t by s.
func printfOne(b *strings.Builder, s printfSpec, v types.Value, t types.Type) error {
	upper := s.conv == 'B' || s.conv == 'S' || s.conv == 'C' || s.conv == 'X' || s.conv == 'E'
	var text string
	switch {
	case s.conv == 'b' || s.conv == 'B':
		switch {
		case v.Null:
			text = "false"
		case t.Kind == types.Boolean:
			text = strconv.FormatBool(v.Bool())
		default:
			text = "true"
		}
	case v.Null:
		text = "null"
	case s.conv == 's' || s.conv == 'S':
		if t.Kind == types.Boolean {
			text = strconv.FormatBool(v.Bool())
		} else {
			text = FormatValue(v, t)
		}
	case s.conv == 'c' || s.conv == 'C':
		if !t.IsInteger() {
			return fmt.Errorf("%%%c needs a character code, not %s", s.conv, t)
		}
		text = string(rune(v.I))
	case s.conv == 'd' || s.conv == 'o' || s.conv == 'x' || s.conv == 'X':
		if !t.IsInteger() {
			return fmt.Errorf("%%%c needs an integer, not %s", s.conv, t)
		}
		if s.conv == 'd' {
			fmt.Fprintf(b, s.verb, v.I)
			return nil
		}
		// Java prints a negative integer's two's complement in its width
		u := uint64(v.I)
		switch t.Kind {
		case types.TinyInt:
			u = uint64(uint8(v.I))
		case types.SmallInt:
			u = uint64(uint16(v.I))
		case types.Int:
			u = uint64(uint32(v.I))
		}
		fmt.Fprintf(b, s.verb, u)
		return nil
	default: // e E f
		var f float64
		switch {
		case t.Kind == types.Float || t.Kind == types.Double:
			f = v.Float()
		case t.Kind == types.Decimal:
			f = decFloat(v, t)
		default:
			return fmt.Errorf("%%%c needs a floating-point number or a decimal, not %s", s.conv, t)
		}
		switch {
		case math.IsNaN(f):
			text = "NaN"
		case math.IsInf(f, 1):
			text = "Infinity"
		case math.IsInf(f, -1):
			text = "-Infinity"
		default:
			fmt.Fprintf(b, s.verb, f)
			return nil
		}
	}
	if s.prec >= 0 && s.conv != 'e' && s.conv != 'E' && s.conv != 'f' && utf8.RuneCountInString(text) > s.prec {
		text = text[:runeOffset(text, s.prec)]
	}
	if upper {
		text = strings.ToUpper(text)
	}
	if n := utf8.RuneCountInString(text); n < s.w {
		if s.left {
			text += strings.Repeat(" ", s.w-n)
		} else {
			text = strings.Repeat(" ", s.w-n) + text
		}
	}
	b.WriteString(text)
	return nil
}

// oneStringArg checks a call of one string argument (wantArgs and
// stringArgs at once).
func oneStringArg(e *parser.Call, xs []Expr) error {
	if err := wantArgs(e, xs, 1, 1); err != nil {
		return err
	}
	return stringArgs(e, xs, 0)
}
