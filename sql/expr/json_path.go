package expr

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A JSON path, Jayway's syntax as Flink reads it (Flink's SqlJsonUtils
// hands the path to Jayway's JsonPath). A path is compiled once per call
// site into steps; filters into closures.
//
// Beyond keys, wildcards, indexes and slices:
//
//   - The deep scan '..' applies the next step at every depth, as Jayway's
//     ScanPathToken walks the document: an object's members in document
//     order after the object itself, an array's elements after the array.
//     A key after '..' applies to the objects that have it, an index or a
//     slice to arrays, a wildcard to both, a filter to the objects (and
//     arrays) it accepts. As in Jayway, an index or slice after '..' that
//     is not the last step passes the rest of the path every element of
//     the arrays it meets ($..[0].a reads a in every element).
//   - A filter [?(...)] keeps an object that passes it, or the elements of
//     an array that pass it. Conditions: @ (the element) or $ (the
//     document) paths, literals (numbers, 'strings', "strings", true, false,
//     null, JSON lists [..] and objects {..}, /regular expressions/flags),
//     ==, !=, ===, !==, <, <=, >, >=, =~, in, nin, &&, ||, ! and
//     parentheses; a path alone is true where it finds something (a JSON
//     null too). A path that finds nothing is Jayway's "undefined": equal
//     to nothing, unequal to everything, never less or greater. == between
//     a number and a string compares as Jayway does: a number on the left
//     reads the string as a number, a string on the left compares with the
//     number's text. <, <=, >, >= compare two numbers or two strings (by
//     code point), else are false. =~ matches the whole text of a string,
//     number or boolean (Go's regexp syntax, RE2: no backreferences or
//     lookaround, unlike Java's).
//   - A function ends a path: length() and size() (the members of an
//     object or the elements of an array, else null), min(), max(),
//     avg(), sum(), stddev() (over the numbers of an array, as a double;
//     none is an error), keys() (an object's keys), first() and last()
//     (an array's ends, else null). After a path that starts with '..',
//     Jayway applies the function once, as $.fn($..path): an aggregate
//     over the numbers among the matches (and, as in Jayway, the numbers
//     of the document when it is an array), length() to the number of
//     children of the matches, keys(), first() and last() to the document.
//     Elsewhere an indefinite path gives each match's result.

type jsonStepKind uint8

const (
	stepKey      jsonStepKind = iota // .key, ['key'], ["key"], ."key"
	stepWildcard                     // .*, [*]: an object's values or an array's elements
	stepIndex                        // [n], n < 0 counting from the end
	stepIndexes                      // [n, m, ...]
	stepSlice                        // [from:to]
	stepScan                         // ..: the next step at every depth
	stepFilter                       // [?(...)]
	stepFunc                         // .length() and the others: the last step
)

type jsonStep struct {
	kind           jsonStepKind
	key            string // the key; a function's name
	idx            []int
	from, to       int
	hasFrom, hasTo bool
	filter         jsonPred
	fn             jsonFunc
}

type jsonPath struct {
	spec     string
	lax      bool
	steps    []jsonStep
	definite bool  // one match at most (no wildcard, scan, filter, index list or slice)
	scanFunc bool  // '..' first and a function last: the function over all matches
	err      error // a malformed path: evaluating it is an error
}

// jsonDouble is a number a path function computed: a Java double, as
// Jayway returns one (written as Double.toString writes it, 6.0).
type jsonDouble float64

// jsonUndefined is what a filter's path finds when it finds nothing.
type jsonUndefined struct{}

func isJSONSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// pathParser reads a path, and the filters inside it, from s.
type pathParser struct {
	s           string
	i           int
	err         error  // the first malformation found
	unsupported string // a feature weir does not evaluate
}

func (pp *pathParser) failed() bool { return pp.err != nil || pp.unsupported != "" }

func (pp *pathParser) fail(format string, args ...any) {
	if !pp.failed() {
		pp.err = fmt.Errorf(format, args...)
	}
}

func (pp *pathParser) refuse(what string) {
	if !pp.failed() {
		pp.unsupported = what
	}
}

func (pp *pathParser) space() {
	for pp.i < len(pp.s) && isJSONSpace(pp.s[pp.i]) {
		pp.i++
	}
}

// parseJSONPath reads a path with its mode. A malformed path is returned
// with err set (Flink finds it when it evaluates); unsupported names a
// feature of Jayway's paths that weir does not evaluate.
func parseJSONPath(spec string) (p *jsonPath, unsupported string) {
	p = &jsonPath{spec: spec}
	path := spec
	// Flink's '^\s*(strict|lax)\s+(.+)$'; anything else is a strict path
	rest := strings.TrimLeft(spec, " \t\n\v\f\r")
	for _, m := range []string{"strict", "lax"} {
		if len(rest) > len(m)+1 && strings.EqualFold(rest[:len(m)], m) && isJSONSpace(rest[len(m)]) {
			p.lax = m == "lax"
			path = rest[len(m):]
			break
		}
	}
	pp := &pathParser{s: strings.Trim(path, " \t\n\v\f\r")}
	if pp.s == "" || pp.s[0] != '$' {
		pp.fail("a path starts with '$'")
	} else {
		pp.i = 1
		p.steps = pp.steps(false)
		if !pp.failed() && pp.i < len(pp.s) {
			pp.fail("unexpected '%c' at position %d", pp.s[pp.i], pp.i)
		}
	}
	if pp.unsupported != "" {
		return p, pp.unsupported
	}
	if pp.err != nil {
		p.err = fmt.Errorf("invalid JSON path '%s': %v", spec, pp.err)
		return p, ""
	}
	p.finish()
	return p, ""
}

// finish works out whether the path is definite, as Jayway's isDefinite.
func (p *jsonPath) finish() {
	p.definite = true
	for _, st := range p.steps {
		if st.kind != stepKey && st.kind != stepIndex && st.kind != stepFunc {
			p.definite = false
		}
	}
	n := len(p.steps)
	if n > 1 && p.steps[0].kind == stepScan && p.steps[n-1].kind == stepFunc {
		// Jayway's $..path.fn() is $.fn($..path): one value
		p.scanFunc, p.definite = true, true
	}
}

// stopsPath reports whether c ends a path inside a filter (Jayway stops
// at a blank, a relational operator's character or a closing
// parenthesis; weir at && and || too).
func stopsPath(c byte) bool {
	return isJSONSpace(c) || strings.IndexByte(")<>=~!&|,", c) >= 0
}

// steps reads the steps after '$' or '@' up to the end of the text, or in
// a filter (inFilter) up to what ends the path there.
func (pp *pathParser) steps(inFilter bool) []jsonStep {
	s := pp.s
	var steps []jsonStep
	for pp.i < len(s) && !pp.failed() {
		if len(steps) > 0 && steps[len(steps)-1].kind == stepFunc {
			if inFilter && stopsPath(s[pp.i]) {
				break
			}
			pp.refuse("a path step after a function")
			break
		}
		switch c := s[pp.i]; {
		case c == '.':
			pp.i++
			scan := pp.i < len(s) && s[pp.i] == '.'
			if scan {
				pp.i++
				steps = append(steps, jsonStep{kind: stepScan})
			}
			if pp.i >= len(s) || inFilter && stopsPath(s[pp.i]) {
				if scan {
					pp.fail("a path must not end with '..'")
				} else {
					pp.fail("a path must not end with '.'")
				}
				return steps
			}
			switch c := s[pp.i]; {
			case c == '*':
				steps = append(steps, jsonStep{kind: stepWildcard})
				pp.i++
			case c == '[':
				// $.['key'], $..[0]: the bracket follows
			case c == '"':
				key, n, ok := readQuoted(s[pp.i:])
				if !ok {
					pp.fail("an unterminated quoted key")
					return steps
				}
				steps = append(steps, jsonStep{kind: stepKey, key: key})
				pp.i += n
			default:
				j := pp.i
				for j < len(s) && s[j] != '.' && s[j] != '[' && !isJSONSpace(s[j]) && s[j] != '(' && !(inFilter && stopsPath(s[j])) {
					j++
				}
				if j == pp.i {
					pp.fail("a key is missing at position %d", pp.i)
					return steps
				}
				name := s[pp.i:j]
				pp.i = j
				if j < len(s) && s[j] == '(' {
					steps = append(steps, pp.function(name))
					continue
				}
				steps = append(steps, jsonStep{kind: stepKey, key: name})
			}
		case c == '[':
			steps = append(steps, pp.bracket())
		case inFilter:
			return steps
		default:
			pp.fail("unexpected '%c' at position %d", c, pp.i)
		}
	}
	return steps
}

// function reads a function's parentheses after its name.
func (pp *pathParser) function(name string) jsonStep {
	s := pp.s
	end := strings.IndexByte(s[pp.i:], ')')
	if end < 0 {
		pp.fail("an unterminated '(' after %s", name)
		return jsonStep{}
	}
	args := strings.TrimSpace(s[pp.i+1 : pp.i+end])
	pp.i += end + 1
	fn, ok := jsonFuncs[name]
	switch {
	case !ok:
		pp.fail("function with name: %s does not exist", name)
	case args != "":
		pp.refuse("functions with arguments such as " + name + "(" + args + ")")
	}
	return jsonStep{kind: stepFunc, key: name, fn: fn}
}

// bracket reads [*], ['key'], [n], [n,m], [a:b] or [?(filter)].
func (pp *pathParser) bracket() jsonStep {
	s := pp.s
	pp.i++
	pp.space()
	if pp.i >= len(s) {
		pp.fail("an unterminated '['")
		return jsonStep{}
	}
	var st jsonStep
	switch c := s[pp.i]; {
	case c == '?':
		pp.i++
		pp.space()
		if pp.i >= len(s) || s[pp.i] != '(' {
			pp.refuse("filters without parentheses [?]")
			return st
		}
		pp.i++
		st = jsonStep{kind: stepFilter, filter: pp.orExpr()}
		pp.space()
		if !pp.failed() && (pp.i >= len(s) || s[pp.i] != ')') {
			pp.fail("')' expected at position %d", pp.i)
		}
		pp.i++
	case c == '(':
		pp.refuse("script expressions [(...)]")
		return st
	case c == '*':
		st.kind = stepWildcard
		pp.i++
	case c == '\'' || c == '"':
		key, n, ok := readQuoted(s[pp.i:])
		if !ok {
			pp.fail("an unterminated quoted key")
			return st
		}
		st = jsonStep{kind: stepKey, key: key}
		pp.i += n
		pp.space()
		if pp.i < len(s) && s[pp.i] == ',' {
			pp.refuse("several keys in one bracket")
			return st
		}
	default:
		k := strings.IndexByte(s[pp.i:], ']')
		if k < 0 {
			pp.fail("an unterminated '['")
			return st
		}
		var ok bool
		if st, ok = parseIndexes(s[pp.i : pp.i+k]); !ok {
			pp.fail("an invalid index [%s]", s[pp.i:pp.i+k])
			return st
		}
		pp.i += k
	}
	pp.space()
	if !pp.failed() && (pp.i >= len(s) || s[pp.i] != ']') {
		pp.fail("']' expected at position %d", pp.i)
	}
	pp.i++
	return st
}

// readQuoted reads a key quoted with s[0] (' or "), a backslash escaping
// the next character; n is the length read.
func readQuoted(s string) (key string, n int, ok bool) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case q:
			return b.String(), i + 1, true
		default:
			b.WriteByte(s[i])
		}
	}
	return "", 0, false
}

// parseIndexes reads n, n,m,... or from:to.
func parseIndexes(s string) (jsonStep, bool) {
	atoi := func(t string) (int, bool) {
		n, err := strconv.Atoi(strings.TrimSpace(t))
		return n, err == nil
	}
	if from, to, ok := strings.Cut(s, ":"); ok {
		st := jsonStep{kind: stepSlice}
		if strings.TrimSpace(from) != "" {
			if st.from, ok = atoi(from); !ok {
				return st, false
			}
			st.hasFrom = true
		}
		if strings.TrimSpace(to) != "" {
			if st.to, ok = atoi(to); !ok {
				return st, false
			}
			st.hasTo = true
		}
		return st, true
	}
	parts := strings.Split(s, ",")
	st := jsonStep{kind: stepIndex}
	if len(parts) > 1 {
		st.kind = stepIndexes
	}
	for _, part := range parts {
		n, ok := atoi(part)
		if !ok {
			return st, false
		}
		st.idx = append(st.idx, n)
	}
	return st, true
}

// fragment prints a step as Jayway does in its messages.
func (st *jsonStep) fragment() string {
	switch st.kind {
	case stepKey:
		return "['" + st.key + "']"
	case stepWildcard:
		return "[*]"
	case stepIndex, stepIndexes:
		var b strings.Builder
		b.WriteByte('[')
		for i, n := range st.idx {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(n))
		}
		b.WriteByte(']')
		return b.String()
	case stepSlice:
		var b strings.Builder
		b.WriteByte('[')
		if st.hasFrom {
			b.WriteString(strconv.Itoa(st.from))
		}
		b.WriteByte(':')
		if st.hasTo {
			b.WriteString(strconv.Itoa(st.to))
		}
		b.WriteByte(']')
		return b.String()
	case stepScan:
		return ".."
	case stepFilter:
		return "[?]"
	}
	return "." + st.key + "()"
}

// jayway prints the path as Jayway does in its messages: $['a'][0][*].
func (p *jsonPath) jayway(upto int) string {
	var b strings.Builder
	b.WriteByte('$')
	for i := range p.steps[:upto] {
		b.WriteString(p.steps[i].fragment())
	}
	return b.String()
}

// query evaluates the path over the JSON text s as Flink's
// jsonApiCommonSyntax does: the value matched (nil for no match, or a JSON
// null; a list of the matches for an indefinite path), or an error for
// ON ERROR.
func (p *jsonPath) query(s string) (any, error) {
	doc, err := parseJSON(s)
	if err != nil {
		if p.lax {
			return nil, nil
		}
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if doc == nil {
		return nil, errors.New("json can not be null") // Jayway refuses a null document
	}
	if p.err != nil {
		return nil, p.err
	}
	v, err := p.eval(doc, doc)
	if err != nil && p.lax {
		// Jayway's SUPPRESS_EXCEPTIONS, as Flink runs lax paths
		return nil, nil
	}
	return v, err
}

// eval evaluates the path at v, in the document root: the match of a
// definite path (nil for none; an error in strict mode) or the list of
// the matches.
func (p *jsonPath) eval(v, root any) (any, error) {
	r := pathRun{p: p, root: root, end: len(p.steps)}
	if p.scanFunc {
		r.end--
		if err := r.collect(v, 0, false); err != nil {
			return nil, err
		}
		st := &p.steps[r.end]
		return st.fn.overMatches(st.key, v, r.out)
	}
	if err := r.collect(v, 0, true); err != nil {
		return nil, err
	}
	if !p.definite {
		if r.out == nil {
			r.out = []any{}
		}
		return r.out, nil
	}
	if len(r.out) == 0 {
		if p.lax {
			return nil, nil
		}
		return nil, fmt.Errorf("No results for path: %s", p.jayway(len(p.steps)))
	}
	return r.out[0], nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case *jsonObject:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	}
	return "a number"
}

// pathRun is one evaluation of a path: the document's root (filters read
// it as $), the matches so far, and the number of steps to apply.
type pathRun struct {
	p    *jsonPath
	root any
	end  int
	out  []any
}

// collect appends the matches of steps[i:end] in v. upstream says the
// steps before i are all definite: there (in strict mode) a step that
// cannot apply is an error, as in Jayway; after a wildcard it is skipped.
// A missing key at the end, or an index out of bounds, matches nothing.
func (r *pathRun) collect(v any, i int, upstream bool) error {
	p := r.p
	if i == r.end {
		r.out = append(r.out, v)
		return nil
	}
	st := &p.steps[i]
	strict := !p.lax && upstream
	switch st.kind {
	case stepKey:
		o, ok := v.(*jsonObject)
		if !ok {
			if strict {
				return fmt.Errorf("Expected to find an object with property ['%s'] in path %s but found %s", st.key, p.jayway(i), jsonKind(v))
			}
			return nil
		}
		x, ok := o.get(st.key)
		if !ok {
			if strict && i < r.end-1 {
				return fmt.Errorf("Missing property in path %s", p.jayway(i+1))
			}
			return nil
		}
		return r.collect(x, i+1, upstream)
	case stepWildcard:
		switch x := v.(type) {
		case *jsonObject:
			for _, e := range x.vals {
				if err := r.collect(e, i+1, false); err != nil {
					return err
				}
			}
		case []any:
			for _, e := range x {
				if err := r.collect(e, i+1, false); err != nil {
					return err
				}
			}
		}
		return nil
	case stepScan:
		return r.scan(v, i+1)
	case stepFilter:
		switch x := v.(type) {
		case *jsonObject:
			if st.filter(x, r.root) {
				return r.collect(x, i+1, false)
			}
		case []any:
			for _, e := range x {
				if st.filter(e, r.root) {
					if err := r.collect(e, i+1, false); err != nil {
						return err
					}
				}
			}
		default:
			if strict {
				return fmt.Errorf("Filter: [?] can not be applied to primitives. Current context is: %s", jsonText(v))
			}
		}
		return nil
	case stepFunc:
		res, err := st.fn.apply(st.key, v)
		if err != nil {
			return err
		}
		return r.collect(res, i+1, upstream)
	}
	a, ok := v.([]any)
	if !ok {
		if strict {
			return fmt.Errorf("Filter: %s can only be applied to arrays, found %s", st.fragment(), jsonKind(v))
		}
		return nil
	}
	down := upstream && st.kind == stepIndex
	visit := func(j int) error {
		if j < 0 {
			j += len(a)
		}
		if j < 0 || j >= len(a) {
			return nil
		}
		return r.collect(a[j], i+1, down)
	}
	if st.kind == stepSlice {
		from, to := 0, len(a)
		if st.hasFrom {
			from = st.from
			if from < 0 {
				from = max(0, len(a)+from)
			}
		}
		if st.hasTo {
			to = st.to
			if to < 0 {
				to = len(a) + to
			}
		}
		for j := from; j < min(to, len(a)); j++ {
			if err := visit(j); err != nil {
				return err
			}
		}
		return nil
	}
	for _, j := range st.idx {
		if err := visit(j); err != nil {
			return err
		}
	}
	return nil
}

// scan applies steps[i:] at v and at every depth below it, as Jayway's
// ScanPathToken walks: an object or array the step applies to first, then
// its members or elements, in order.
func (r *pathRun) scan(v any, i int) error {
	st := &r.p.steps[i]
	switch x := v.(type) {
	case *jsonObject:
		if r.scanApplies(st, x) {
			if err := r.collect(x, i, false); err != nil {
				return err
			}
		}
		for _, e := range x.vals {
			if err := r.scan(e, i); err != nil {
				return err
			}
		}
	case []any:
		if r.scanApplies(st, x) {
			if i == r.end-1 {
				if err := r.collect(x, i, false); err != nil {
					return err
				}
			} else {
				// Jayway passes the rest of the path each element, whatever
				// the step was (an index too)
				for _, e := range x {
					if err := r.collect(e, i+1, false); err != nil {
						return err
					}
				}
			}
		}
		for _, e := range x {
			if err := r.scan(e, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// scanApplies is Jayway's scan predicate: whether the step after '..'
// applies to the object or array v.
func (r *pathRun) scanApplies(st *jsonStep, v any) bool {
	switch st.kind {
	case stepKey:
		o, ok := v.(*jsonObject)
		if !ok {
			return false
		}
		_, ok = o.get(st.key)
		return ok
	case stepIndex, stepIndexes, stepSlice:
		_, ok := v.([]any)
		return ok
	case stepWildcard:
		return true
	case stepFilter:
		return st.filter(v, r.root)
	}
	return false
}

// Path functions.

type jsonFunc uint8

const (
	fnLength jsonFunc = iota
	fnMin
	fnMax
	fnAvg
	fnSum
	fnStddev
	fnKeys
	fnFirst
	fnLast
)

// jsonFuncs are Jayway's functions weir evaluates, by name.
var jsonFuncs = map[string]jsonFunc{
	"length": fnLength, "size": fnLength, "min": fnMin, "max": fnMax, "avg": fnAvg,
	"sum": fnSum, "stddev": fnStddev, "keys": fnKeys, "first": fnFirst, "last": fnLast,
}

// errEmptyAggregation is Jayway's error for an aggregate of no numbers.
var errEmptyAggregation = errors.New("Aggregation function attempted to calculate value using empty array")

// apply computes the function over v (nil where Jayway returns null).
func (fn jsonFunc) apply(name string, v any) (any, error) {
	switch fn {
	case fnLength:
		switch x := v.(type) {
		case []any:
			return json.Number(strconv.Itoa(len(x))), nil
		case *jsonObject:
			return json.Number(strconv.Itoa(len(x.vals))), nil
		}
		return nil, nil
	case fnKeys:
		o, ok := v.(*jsonObject)
		if !ok {
			return nil, nil
		}
		keys := make([]any, 0, len(o.keys))
		for _, k := range o.keys {
			keys = append(keys, k)
		}
		return keys, nil
	case fnFirst, fnLast:
		a, ok := v.([]any)
		if !ok || len(a) == 0 {
			return nil, nil
		}
		if fn == fnFirst {
			return a[0], nil
		}
		return a[len(a)-1], nil
	}
	var agg jsonAggregate
	if a, ok := v.([]any); ok {
		agg.addAll(a)
	}
	return agg.value(fn)
}

// overMatches computes the function for $..path.fn(), Jayway's
// $.fn($..path): root is the document, matches what $..path found.
func (fn jsonFunc) overMatches(name string, root any, matches []any) (any, error) {
	switch fn {
	case fnLength:
		// Jayway appends a wildcard to the parameter's path: the children
		// of the matches, counted
		n := 0
		for _, m := range matches {
			switch x := m.(type) {
			case []any:
				n += len(x)
			case *jsonObject:
				n += len(x.vals)
			}
		}
		return json.Number(strconv.Itoa(n)), nil
	case fnKeys, fnFirst, fnLast:
		// these ignore the parameter: the document's
		return fn.apply(name, root)
	}
	var agg jsonAggregate
	if a, ok := root.([]any); ok {
		agg.addAll(a)
	}
	agg.addAll(matches)
	return agg.value(fn)
}

// jsonAggregate accumulates the numbers of Jayway's aggregate functions,
// as Java doubles.
type jsonAggregate struct {
	n, sum, sumSq, min, max float64
}

func (a *jsonAggregate) addAll(vs []any) {
	for _, v := range vs {
		f, ok := jsonFloat(v)
		if !ok {
			continue
		}
		if a.n == 0 || f < a.min {
			a.min = f
		}
		if a.n == 0 || f > a.max {
			a.max = f
		}
		a.n++
		a.sum += f
		a.sumSq += f * f
	}
}

func (a *jsonAggregate) value(fn jsonFunc) (any, error) {
	if a.n == 0 {
		return nil, errEmptyAggregation
	}
	switch fn {
	case fnMin:
		return jsonDouble(a.min), nil
	case fnMax:
		return jsonDouble(a.max), nil
	case fnAvg:
		return jsonDouble(a.sum / a.n), nil
	case fnSum:
		return jsonDouble(a.sum), nil
	}
	return jsonDouble(math.Sqrt(a.sumSq/a.n - a.sum*a.sum/a.n/a.n)), nil
}

// jsonFloat is a JSON number's double value (Java's doubleValue).
func jsonFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, false
		}
		return f, true
	case jsonDouble:
		return float64(x), true
	}
	return 0, false
}
