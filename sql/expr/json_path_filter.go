package expr

import (
	"encoding/json"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// Filters of JSON paths, [?(...)], compiled into closures once per path
// (see json_path.go for what they accept and how they compare).

// jsonPred is a compiled filter: whether item passes, in the document
// root ($ in the filter).
type jsonPred func(item, root any) bool

func never(item, root any) bool { return false }

// filterOperand is one side of a filter's comparison.
type filterOperand struct {
	// value is the operand's JSON value at the item: a literal, a
	// *regexp.Regexp, or what a path finds (jsonUndefined when nothing).
	value func(item, root any) any
	// exists is set for a path: whether it finds something.
	exists jsonPred
}

// orExpr reads a || b || ...
func (pp *pathParser) orExpr() jsonPred {
	l := pp.andExpr()
	for !pp.failed() {
		pp.space()
		if !strings.HasPrefix(pp.s[pp.i:], "||") {
			break
		}
		pp.i += 2
		r := pp.andExpr()
		a, b := l, r
		l = func(it, root any) bool { return a(it, root) || b(it, root) }
	}
	return l
}

// andExpr reads a && b && ...
func (pp *pathParser) andExpr() jsonPred {
	l := pp.unaryExpr()
	for !pp.failed() {
		pp.space()
		if !strings.HasPrefix(pp.s[pp.i:], "&&") {
			break
		}
		pp.i += 2
		r := pp.unaryExpr()
		a, b := l, r
		l = func(it, root any) bool { return a(it, root) && b(it, root) }
	}
	return l
}

// unaryExpr reads !x, (x) or a comparison.
func (pp *pathParser) unaryExpr() jsonPred {
	pp.space()
	if pp.failed() || pp.i >= len(pp.s) {
		pp.fail("a filter condition is missing at position %d", pp.i)
		return never
	}
	switch pp.s[pp.i] {
	case '!':
		pp.i++
		x := pp.unaryExpr()
		return func(it, root any) bool { return !x(it, root) }
	case '(':
		pp.i++
		x := pp.orExpr()
		pp.space()
		if !pp.failed() && (pp.i >= len(pp.s) || pp.s[pp.i] != ')') {
			pp.fail("')' expected at position %d", pp.i)
		}
		pp.i++
		return x
	}
	return pp.relation()
}

// relation reads operand [operator operand]; a path alone is true where
// it finds something.
func (pp *pathParser) relation() jsonPred {
	at := pp.i
	l := pp.operand()
	if pp.failed() {
		return never
	}
	pp.space()
	op := pp.operator()
	if pp.failed() {
		return never
	}
	if op == "" {
		if l.exists == nil {
			pp.fail("a comparison is missing after the value at position %d", at)
			return never
		}
		return l.exists
	}
	r := pp.operand()
	if pp.failed() {
		return never
	}
	lv, rv := l.value, r.value
	switch op {
	case "==":
		return func(it, root any) bool { return filterEqual(lv(it, root), rv(it, root)) }
	case "!=":
		return func(it, root any) bool { return !filterEqual(lv(it, root), rv(it, root)) }
	case "===":
		return func(it, root any) bool { return filterSameKindEqual(lv(it, root), rv(it, root)) }
	case "!==":
		return func(it, root any) bool { return !filterSameKindEqual(lv(it, root), rv(it, root)) }
	case "<", "<=", ">", ">=":
		return func(it, root any) bool {
			c, ok := filterCompare(lv(it, root), rv(it, root))
			if !ok {
				return false
			}
			switch op {
			case "<":
				return c < 0
			case "<=":
				return c <= 0
			case ">":
				return c > 0
			}
			return c >= 0
		}
	case "=~":
		return func(it, root any) bool { return filterMatch(lv(it, root), rv(it, root)) }
	case "in":
		return func(it, root any) bool { return filterIn(lv(it, root), rv(it, root)) }
	case "nin":
		return func(it, root any) bool { return !filterIn(lv(it, root), rv(it, root)) }
	}
	pp.refuse("the filter operator " + op)
	return never
}

// operator reads a comparison operator: "" when none follows.
func (pp *pathParser) operator() string {
	rest := pp.s[pp.i:]
	for _, op := range []string{"===", "!==", "==", "!=", "<=", ">=", "=~", "<", ">"} {
		if strings.HasPrefix(rest, op) {
			pp.i += len(op)
			return op
		}
	}
	j := 0
	for j < len(rest) && (rest[j] >= 'a' && rest[j] <= 'z' || rest[j] >= 'A' && rest[j] <= 'Z') {
		j++
	}
	if j == 0 {
		return ""
	}
	word := strings.ToLower(rest[:j])
	pp.i += j
	switch word {
	case "in", "nin":
		return word
	case "subsetof", "anyof", "noneof", "size", "empty", "contains", "all", "matches", "type", "exists":
		pp.refuse("the filter operator " + word)
	default:
		pp.fail("unknown filter operator '%s' at position %d", rest[:j], pp.i-j)
	}
	return ""
}

// operand reads a path (@..., $...), a regular expression or a literal.
func (pp *pathParser) operand() filterOperand {
	pp.space()
	if pp.i >= len(pp.s) {
		pp.fail("a value is missing at position %d", pp.i)
		return filterOperand{}
	}
	switch c := pp.s[pp.i]; c {
	case '@', '$':
		pp.i++
		sub := &jsonPath{steps: pp.steps(true)}
		if pp.failed() {
			return filterOperand{}
		}
		sub.finish()
		fromRoot := c == '$'
		find := func(it, root any) (any, bool) {
			start := it
			if fromRoot {
				start = root
			}
			v, err := sub.eval(start, root)
			if err != nil {
				return jsonUndefined{}, false
			}
			if l, ok := v.([]any); ok && !sub.definite {
				return l, len(l) > 0
			}
			return v, true
		}
		return filterOperand{
			value:  func(it, root any) any { v, _ := find(it, root); return v },
			exists: func(it, root any) bool { _, ok := find(it, root); return ok },
		}
	case '/':
		re := pp.regex()
		return filterOperand{value: func(any, any) any { return re }}
	}
	v := pp.literal()
	return filterOperand{value: func(any, any) any { return v }}
}

// regex reads /pattern/flags: matched against the whole text, as Java's
// Matcher.matches.
func (pp *pathParser) regex() *regexp.Regexp {
	s := pp.s
	start := pp.i + 1
	j := start
	for j < len(s) && s[j] != '/' {
		if s[j] == '\\' {
			j++
		}
		j++
	}
	if j >= len(s) {
		pp.fail("an unterminated regular expression at position %d", pp.i)
		return nil
	}
	pat := s[start:j]
	j++
	flags := ""
	for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z') {
		switch s[j] {
		case 'i', 'm', 's':
			flags += string(s[j])
		default:
			pp.refuse("the regular expression flag " + string(s[j]))
		}
		j++
	}
	pp.i = j
	expr := `\A(?:` + pat + `)\z`
	if flags != "" {
		expr = "(?" + flags + ")" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		pp.fail("invalid regular expression /%s/: %v", pat, err)
		return nil
	}
	return re
}

// literal reads a number, a string in ' or ", true, false, null, or a
// JSON list or object (whose strings may be in ' too, as Jayway's
// permissive parser reads them).
func (pp *pathParser) literal() any {
	pp.space()
	s := pp.s
	if pp.i >= len(s) {
		pp.fail("a value is missing at position %d", pp.i)
		return nil
	}
	switch c := s[pp.i]; {
	case c == '\'' || c == '"':
		return pp.stringLiteral()
	case c == '-' || c >= '0' && c <= '9':
		j := pp.i + 1
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || strings.IndexByte(".eE-+", s[j]) >= 0) {
			j++
		}
		text := s[pp.i:j]
		if _, err := strconv.ParseFloat(text, 64); err != nil && !strings.Contains(err.Error(), "range") {
			pp.fail("an invalid number %s at position %d", text, pp.i)
			return nil
		}
		pp.i = j
		return json.Number(text)
	case c == '[':
		pp.i++
		list := []any{}
		pp.space()
		if pp.i < len(s) && s[pp.i] == ']' {
			pp.i++
			return list
		}
		for !pp.failed() {
			list = append(list, pp.literal())
			pp.space()
			if pp.i < len(s) && s[pp.i] == ',' {
				pp.i++
				continue
			}
			if pp.i < len(s) && s[pp.i] == ']' {
				pp.i++
				break
			}
			pp.fail("',' or ']' expected at position %d", pp.i)
		}
		return list
	case c == '{':
		pp.i++
		obj := &jsonObject{}
		pp.space()
		if pp.i < len(s) && s[pp.i] == '}' {
			pp.i++
			return obj
		}
		for !pp.failed() {
			pp.space()
			if pp.i >= len(s) || s[pp.i] != '\'' && s[pp.i] != '"' {
				pp.fail("a quoted key expected at position %d", pp.i)
				break
			}
			k := pp.stringLiteral()
			pp.space()
			if pp.i >= len(s) || s[pp.i] != ':' {
				pp.fail("':' expected at position %d", pp.i)
				break
			}
			pp.i++
			obj.set(k, pp.literal())
			pp.space()
			if pp.i < len(s) && s[pp.i] == ',' {
				pp.i++
				continue
			}
			if pp.i < len(s) && s[pp.i] == '}' {
				pp.i++
				break
			}
			pp.fail("',' or '}' expected at position %d", pp.i)
		}
		return obj
	}
	for _, w := range []struct {
		text string
		v    any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if strings.HasPrefix(s[pp.i:], w.text) {
			pp.i += len(w.text)
			return w.v
		}
	}
	pp.fail("unexpected '%c' in a filter at position %d", s[pp.i], pp.i)
	return nil
}

// stringLiteral reads a string quoted with ' or ", with Java's escapes.
func (pp *pathParser) stringLiteral() string {
	s := pp.s
	q := s[pp.i]
	var b strings.Builder
	for j := pp.i + 1; j < len(s); j++ {
		c := s[j]
		if c == q {
			pp.i = j + 1
			return b.String()
		}
		if c != '\\' || j+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		j++
		switch e := s[j]; e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if j+4 < len(s) {
				if n, err := strconv.ParseUint(s[j+1:j+5], 16, 16); err == nil {
					b.WriteRune(rune(n))
					j += 4
					continue
				}
			}
			b.WriteByte(e)
		default:
			b.WriteByte(e)
		}
	}
	pp.fail("an unterminated string at position %d", pp.i)
	return ""
}

// filterNumber is the text of a JSON number (false for another value).
func filterNumber(v any) (string, bool) {
	switch x := v.(type) {
	case json.Number:
		return string(x), true
	case jsonDouble:
		return formatDouble(float64(x)), true
	}
	return "", false
}

// compareNumbers compares two numbers' texts exactly (as Java's
// BigDecimal.compareTo); false when one does not read as a number.
func compareNumbers(a, b string) (int, bool) {
	if x, err := strconv.ParseInt(a, 10, 64); err == nil {
		if y, err := strconv.ParseInt(b, 10, 64); err == nil {
			switch {
			case x < y:
				return -1, true
			case x > y:
				return 1, true
			}
			return 0, true
		}
	}
	if hugeExponent(a) || hugeExponent(b) {
		return 0, false
	}
	x, _, err := big.ParseFloat(a, 10, 256, big.ToNearestEven)
	if err != nil {
		return 0, false
	}
	y, _, err := big.ParseFloat(b, 10, 256, big.ToNearestEven)
	if err != nil {
		return 0, false
	}
	return x.Cmp(y), true
}

// filterEqual is Jayway's == between two values of a filter.
func filterEqual(l, r any) bool {
	if ln, ok := filterNumber(l); ok {
		switch x := r.(type) {
		case string:
			// a number on the left reads the string as a number
			c, ok := compareNumbers(ln, strings.TrimSpace(x))
			return ok && c == 0
		default:
			rn, ok := filterNumber(r)
			if !ok {
				return false
			}
			c, ok := compareNumbers(ln, rn)
			return ok && c == 0
		}
	}
	switch x := l.(type) {
	case jsonUndefined:
		return false
	case nil:
		return r == nil
	case bool:
		y, ok := r.(bool)
		return ok && x == y
	case string:
		if rn, ok := filterNumber(r); ok {
			// a string on the left compares with the number's text
			return x == canonicalJSONNumber(rn)
		}
		y, ok := r.(string)
		return ok && x == y
	case []any:
		y, ok := r.([]any)
		return ok && jsonText(x) == jsonText(y)
	case *jsonObject:
		y, ok := r.(*jsonObject)
		return ok && jsonText(x) == jsonText(y)
	}
	return false
}

// filterSameKindEqual is Jayway's ===: == between values of one kind.
func filterSameKindEqual(l, r any) bool {
	_, ln := filterNumber(l)
	_, rn := filterNumber(r)
	_, ls := l.(string)
	_, rs := r.(string)
	if ln != rn || ls != rs {
		return false
	}
	return filterEqual(l, r)
}

// filterCompare orders two numbers or two strings; false for others.
func filterCompare(l, r any) (int, bool) {
	if ln, ok := filterNumber(l); ok {
		if rn, ok := filterNumber(r); ok {
			return compareNumbers(ln, rn)
		}
		return 0, false
	}
	x, ok := l.(string)
	if !ok {
		return 0, false
	}
	y, ok := r.(string)
	if !ok {
		return 0, false
	}
	return strings.Compare(x, y), true
}

// filterMatch is Jayway's =~: one side a regular expression, matched
// against the other's text (a string's, a number's or a boolean's; ""
// for others).
func filterMatch(l, r any) bool {
	re, lre := l.(*regexp.Regexp)
	rre, rok := r.(*regexp.Regexp)
	if lre == rok {
		return false
	}
	v := r
	if rok {
		re, v = rre, l
	}
	if re == nil {
		return false
	}
	text := ""
	switch x := v.(type) {
	case string:
		text = x
	case bool:
		text = strconv.FormatBool(x)
	default:
		if n, ok := filterNumber(v); ok {
			text = canonicalJSONNumber(n)
		}
	}
	return re.MatchString(text)
}

// filterIn is Jayway's in: whether the list r holds a value equal to l.
func filterIn(l, r any) bool {
	list, ok := r.([]any)
	if !ok {
		return false
	}
	for _, e := range list {
		if filterEqual(l, e) {
			return true
		}
	}
	return false
}
