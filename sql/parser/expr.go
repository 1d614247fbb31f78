package parser

import (
	"strings"

	"github.com/weirstream/weir/sql/types"
)

// Operator precedence, lowest first: OR, AND, NOT, comparison and the
// predicates (IS, BETWEEN, IN, LIKE), additive (+ - ||), multiplicative
// (* / %), unary sign, postfix ([i], .field).

func (p *parser) expr() Expr {
	p.enter()
	defer p.leave()
	return p.orExpr()
}

func (p *parser) orExpr() Expr {
	l := p.andExpr()
	for p.isKw("OR") {
		t := p.next()
		l = &Binary{Pos: t.pos, Op: "OR", L: l, R: p.andExpr()}
	}
	return l
}

func (p *parser) andExpr() Expr {
	l := p.notExpr()
	for p.isKw("AND") {
		t := p.next()
		l = &Binary{Pos: t.pos, Op: "AND", L: l, R: p.notExpr()}
	}
	return l
}

func (p *parser) notExpr() Expr {
	if p.isKw("NOT") {
		t := p.next()
		p.enter()
		defer p.leave()
		return &Unary{Pos: t.pos, Op: "NOT", X: p.notExpr()}
	}
	return p.predicate()
}

func (p *parser) predicate() Expr {
	l := p.additive()
	for {
		t := p.tok()
		if t.kind == tOp {
			switch t.text {
			case "=", "<>", "!=", "<", ">", "<=", ">=":
				p.next()
				op := t.text
				if op == "!=" {
					op = "<>"
				}
				l = &Binary{Pos: t.pos, Op: op, L: l, R: p.additive()}
				continue
			}
			return l
		}
		if t.kind != tIdent {
			return l
		}
		not := false
		if p.isKw("NOT") && (p.isKwAt(1, "BETWEEN") || p.isKwAt(1, "IN") || p.isKwAt(1, "LIKE") || p.isKwAt(1, "SIMILAR")) {
			p.next()
			not = true
		}
		switch {
		case p.acceptKw("IS"):
			is := &Is{Pos: t.pos, X: l}
			is.Not = p.acceptKw("NOT")
			switch {
			case p.acceptKw("NULL"):
				is.What = "NULL"
			case p.acceptKw("TRUE"):
				is.What = "TRUE"
			case p.acceptKw("FALSE"):
				is.What = "FALSE"
			case p.acceptKw("UNKNOWN"):
				is.What = "UNKNOWN"
			case p.acceptKw("DISTINCT", "FROM"):
				is.What = "DISTINCT"
				is.From = p.additive()
			case p.acceptKw("JSON"):
				l = p.isJSON(t.pos, l, is.Not)
				continue
			default:
				p.fail("NULL, TRUE, FALSE, UNKNOWN, JSON or DISTINCT FROM")
			}
			l = is
		case p.acceptKw("BETWEEN"):
			if !p.acceptKw("ASYMMETRIC") {
				if p.isKw("SYMMETRIC") {
					p.fail("ASYMMETRIC or an expression (BETWEEN SYMMETRIC is not supported yet)")
				}
			}
			lo := p.additive()
			p.wantKw("AND")
			l = &Between{Pos: t.pos, X: l, Lo: lo, Hi: p.additive(), Not: not}
		case p.acceptKw("IN"):
			in := &In{Pos: t.pos, X: l, Not: not}
			p.wantOp("(")
			if p.isKw("SELECT") {
				q := p.query()
				p.wantOp(")")
				l = &Subquery{Pos: t.pos, Query: q, Op: "IN", X: l, Not: not}
				continue
			}
			for {
				in.List = append(in.List, p.expr())
				if p.acceptOp(")") {
					break
				}
				p.wantOp(",")
			}
			l = in
		case !not && p.isKw("OVERLAPS") && isPeriod(l):
			// (s1, e1) OVERLAPS (s2, e2): OVERLAPS(s1, e1, s2, e2)
			p.next()
			r := p.additive()
			if !isPeriod(r) {
				p.fail("a period (start, end) after OVERLAPS")
			}
			l = &Call{Pos: t.pos, Name: "OVERLAPS", Args: append(append([]Expr{}, l.(*Call).Args...), r.(*Call).Args...)}
		case p.acceptKw("LIKE"), p.acceptKw("SIMILAR", "TO"):
			lk := &Like{Pos: t.pos, X: l, Not: not, Similar: strings.EqualFold(p.toks[p.i-1].text, "TO")}
			lk.Pattern = p.additive()
			if p.acceptKw("ESCAPE") {
				lk.Escape = p.additive()
			}
			l = lk
		default:
			if not {
				p.fail("BETWEEN, IN or LIKE")
			}
			return l
		}
	}
}

// isPeriod reports whether e is a row constructor of two values, the
// operand of OVERLAPS.
func isPeriod(e Expr) bool {
	c, ok := e.(*Call)
	return ok && c.Name == "ROW" && len(c.Args) == 2
}

func (p *parser) additive() Expr {
	l := p.multiplicative()
	for p.isOp("+") || p.isOp("-") || p.isOp("||") {
		t := p.next()
		l = &Binary{Pos: t.pos, Op: t.text, L: l, R: p.multiplicative()}
	}
	return l
}

func (p *parser) multiplicative() Expr {
	l := p.unary()
	for p.isOp("*") || p.isOp("/") || p.isOp("%") {
		t := p.next()
		l = &Binary{Pos: t.pos, Op: t.text, L: l, R: p.unary()}
	}
	return l
}

func (p *parser) unary() Expr {
	if p.isOp("-") || p.isOp("+") {
		t := p.next()
		p.enter()
		defer p.leave()
		x := p.unary()
		if lit, ok := x.(*Literal); ok && lit.Kind == NumberLit && t.text == "-" {
			// a negative number literal; - -1 is 1
			text, neg := strings.CutPrefix(lit.Text, "-")
			if !neg {
				text = "-" + lit.Text
			}
			return &Literal{Pos: t.pos, Kind: NumberLit, Text: text}
		}
		return &Unary{Pos: t.pos, Op: t.text, X: x}
	}
	return p.postfix(p.primary())
}

func (p *parser) postfix(x Expr) Expr {
	for {
		t := p.tok()
		switch {
		case p.isOp("["):
			p.next()
			idx := p.expr()
			p.wantOp("]")
			x = &Index{Pos: t.pos, X: x, Index: idx}
		case p.isOp(".") && (p.peek(1).kind == tIdent || p.peek(1).kind == tQuotedIdent):
			p.next()
			name := p.next().text
			if id, ok := x.(*Ident); ok && p.isOp("(") && len(id.Parts) < MaxNameParts {
				// a qualified function call, db.f(x) or cat.db.f(x), as
				// Flink has them: Call.Name is the joined name, upper case
				x = p.maybeCall(token{kind: tIdent, text: JoinName(append(id.Parts, name)...), pos: id.Pos})
			} else if ok {
				id.Parts = append(id.Parts, name)
			} else {
				x = &Field{Pos: t.pos, X: x, Name: name}
			}
		default:
			return x
		}
	}
}

var intervalUnits = map[string]string{
	"YEAR": "YEAR", "YEARS": "YEAR", "MONTH": "MONTH", "MONTHS": "MONTH", "DAY": "DAY", "DAYS": "DAY",
	"HOUR": "HOUR", "HOURS": "HOUR", "MINUTE": "MINUTE", "MINUTES": "MINUTE", "SECOND": "SECOND",
	"SECONDS": "SECOND", "WEEK": "WEEK", "QUARTER": "QUARTER", "MILLISECOND": "MILLISECOND",
}

func (p *parser) intervalUnit() string {
	t := p.tok()
	if t.kind == tIdent {
		if u, ok := intervalUnits[strings.ToUpper(t.text)]; ok {
			p.next()
			return u
		}
	}
	p.fail("an interval unit (YEAR, MONTH, DAY, HOUR, MINUTE, SECOND)")
	return ""
}

func (p *parser) primary() Expr {
	t := p.tok()
	switch t.kind {
	case tNumber:
		p.next()
		return &Literal{Pos: t.pos, Kind: NumberLit, Text: t.text}
	case tString:
		p.next()
		return &Literal{Pos: t.pos, Kind: StringLit, Text: t.text}
	case tQuotedIdent:
		p.next()
		return p.maybeCall(t)
	case tOp:
		if t.text == "(" {
			p.next()
			if p.isKw("SELECT") {
				q := p.query()
				p.wantOp(")")
				return &Subquery{Pos: t.pos, Query: q}
			}
			e := p.expr()
			if p.isOp(",") {
				// a row constructor (a, b): parse as ROW(a, b)
				c := &Call{Pos: t.pos, Name: "ROW", Args: []Expr{e}}
				for p.acceptOp(",") {
					c.Args = append(c.Args, p.expr())
				}
				p.wantOp(")")
				return c
			}
			p.wantOp(")")
			return e
		}
		p.fail("an expression")
	case tEOF:
		p.fail("an expression")
	}
	// identifiers and keywords
	kw := strings.ToUpper(t.text)
	switch kw {
	case "NULL":
		p.next()
		return &Literal{Pos: t.pos, Kind: NullLit}
	case "TRUE", "FALSE":
		p.next()
		return &Literal{Pos: t.pos, Kind: BoolLit, Text: kw}
	case "RUNNING", "FINAL":
		// MATCH_RECOGNIZE's RUNNING/FINAL before a navigation or aggregate:
		// a call FINAL(x) for the planner
		if n := p.peek(1); n.kind == tIdent && p.peek(2).kind == tOp && p.peek(2).text == "(" {
			p.next()
			return &Call{Pos: t.pos, Name: kw, Args: []Expr{p.primary()}}
		}
	case "ARRAY", "MAP":
		// the value constructors ARRAY[a, b] and MAP[k1, v1, k2, v2]
		if n := p.peek(1); n.kind == tOp && n.text == "[" {
			p.next()
			p.next()
			c := &Call{Pos: t.pos, Name: kw}
			if !p.acceptOp("]") {
				for {
					c.Args = append(c.Args, p.expr())
					if p.acceptOp("]") {
						break
					}
					p.wantOp(",")
				}
			}
			return c
		}
	case "DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ":
		if p.peek(1).kind == tString {
			p.next()
			s, _ := p.stringLit("a string")
			return &TypedLiteral{Pos: t.pos, Type: kw, Text: s}
		}
	case "INTERVAL":
		p.next()
		iv := &IntervalLit{Pos: t.pos}
		if p.acceptOp("-") {
			iv.Negative = true
		} else {
			p.acceptOp("+")
		}
		switch p.tok().kind {
		case tString:
			iv.Text, _ = p.stringLit("a quoted interval value")
		case tNumber:
			iv.Text = p.next().text
		default:
			p.fail("a quoted interval value")
		}
		iv.Unit = p.intervalUnit()
		if p.acceptOp("(") {
			p.intLit("a precision")
			p.wantOp(")")
		}
		if p.acceptKw("TO") {
			iv.To = p.intervalUnit()
			if p.acceptOp("(") {
				p.intLit("a precision")
				p.wantOp(")")
			}
		}
		return iv
	case "CASE":
		p.next()
		c := &Case{Pos: t.pos}
		if !p.isKw("WHEN") {
			c.Operand = p.expr()
		}
		for p.acceptKw("WHEN") {
			cond := p.expr()
			p.wantKw("THEN")
			c.Whens = append(c.Whens, When{Cond: cond, Then: p.expr()})
		}
		if len(c.Whens) == 0 {
			p.fail("WHEN")
		}
		if p.acceptKw("ELSE") {
			c.Else = p.expr()
		}
		p.wantKw("END")
		return c
	case "CAST", "TRY_CAST":
		if p.peek(1).kind == tOp && p.peek(1).text == "(" {
			p.next()
			p.next()
			x := p.expr()
			p.wantKw("AS")
			ty := p.dataType()
			p.wantOp(")")
			return &Cast{Pos: t.pos, X: x, Type: ty, Try: kw == "TRY_CAST"}
		}
	case "EXTRACT":
		if p.peek(1).kind == tOp && p.peek(1).text == "(" {
			p.next()
			p.next()
			unit := p.next()
			p.wantKw("FROM")
			x := p.expr()
			p.wantOp(")")
			return &Extract{Pos: t.pos, Unit: strings.ToUpper(unit.text), X: x}
		}
	case "EXISTS":
		p.next()
		p.wantOp("(")
		q := p.query()
		p.wantOp(")")
		return &Subquery{Pos: t.pos, Query: q, Op: "EXISTS"}
	case "ROW":
		if p.peek(1).kind == tOp && p.peek(1).text == "(" {
			p.next()
			return p.maybeCall(t)
		}
	case "CURRENT_TIMESTAMP", "CURRENT_DATE", "CURRENT_TIME", "LOCALTIMESTAMP", "LOCALTIME", "CURRENT_ROW_TIMESTAMP":
		p.next()
		if p.isOp("(") && p.peek(1).kind == tOp && p.peek(1).text == ")" {
			p.next()
			p.next()
		}
		return &Call{Pos: t.pos, Name: kw}
	}
	call := p.peek(1).kind == tOp && p.peek(1).text == "("
	if isReserved(t.text) && !(call && callableKeyword[kw]) {
		p.fail("an expression")
	}
	if !call {
		p.refuseFlinkReserved(t) // a name, not a call
	}
	p.next()
	return p.maybeCall(t)
}

// callableKeyword are reserved words that are also function names.
var callableKeyword = map[string]bool{"LEFT": true, "RIGHT": true, "INTERVAL": false}

// maybeCall turns an identifier followed by "(" into a function call, and
// otherwise starts a (dotted) identifier.
func (p *parser) maybeCall(t token) Expr {
	if !p.isOp("(") || t.kind == tQuotedIdent {
		return &Ident{Pos: t.pos, Parts: []string{t.text}}
	}
	p.next()
	c := &Call{Pos: t.pos, Name: strings.ToUpper(t.text)}
	switch {
	case jsonSyntax[c.Name]:
		p.jsonArgs(c)
	case p.acceptOp(")"):
	case p.isOp("*"):
		p.next()
		c.Star = true
		p.wantOp(")")
	default:
		if p.acceptKw("DISTINCT") {
			c.Distinct = true
		} else {
			p.acceptKw("ALL")
		}
		for {
			a := p.callArg(c.Name)
			if ac, ok := a.(*Call); ok && ac.Name == "$ARGS" {
				c.Args = append(c.Args, ac.Args...)
			} else {
				c.Args = append(c.Args, a)
			}
			if p.isKw("RESPECT") || p.isKw("IGNORE") {
				c.Nulls = strings.ToUpper(p.next().text)
				p.wantKw("NULLS")
				p.wantOp(")")
				break
			}
			if p.acceptOp(")") {
				break
			}
			p.wantOp(",")
		}
	}
	if p.acceptKw("FILTER") {
		p.wantOp("(")
		p.wantKw("WHERE")
		c.Filter = p.expr()
		p.wantOp(")")
	}
	if p.isKw("OVER") {
		ot := p.next()
		c.Over = p.over(ot.pos)
	}
	return c
}

// timeUnits are the units of FLOOR/CEIL(timepoint TO unit), TIMESTAMPADD
// and TIMESTAMPDIFF.
var timeUnits = map[string]bool{"YEAR": true, "QUARTER": true, "MONTH": true, "WEEK": true, "DAY": true,
	"HOUR": true, "MINUTE": true, "SECOND": true, "MILLISECOND": true}

// callArg reads a function argument; TRIM and SUBSTRING/POSITION/OVERLAY's
// keyword forms are rewritten to plain arguments.
func (p *parser) callArg(fn string) Expr {
	switch fn {
	case "SUBSTRING":
		// SUBSTRING(s FROM i [FOR n])
		e := p.expr()
		if p.acceptKw("FROM") {
			c := &Call{Pos: e.ExprPos(), Name: "SUBSTRING", Args: []Expr{e, p.expr()}}
			if p.acceptKw("FOR") {
				c.Args = append(c.Args, p.expr())
			}
			// the caller appends; unwrap by returning a marker call
			return &Call{Pos: c.Pos, Name: "$ARGS", Args: c.Args[:]}
		}
		return e
	case "POSITION":
		e := p.additive()
		if p.acceptKw("IN") {
			return &Call{Pos: e.ExprPos(), Name: "$ARGS", Args: []Expr{e, p.expr()}}
		}
		return e
	case "OVERLAY":
		// OVERLAY(s PLACING r FROM i [FOR n])
		e := p.expr()
		if p.acceptKw("PLACING") {
			args := []Expr{e, p.expr()}
			p.wantKw("FROM")
			args = append(args, p.expr())
			if p.acceptKw("FOR") {
				args = append(args, p.expr())
			}
			return &Call{Pos: e.ExprPos(), Name: "$ARGS", Args: args}
		}
		return e
	case "FLOOR", "CEIL", "CEILING":
		// FLOOR(timepoint TO unit): the unit as a string argument
		e := p.expr()
		if p.acceptKw("TO") {
			u := p.tok()
			unit := strings.ToUpper(u.text)
			if u.kind != tIdent || !timeUnits[unit] {
				p.fail("a time unit (YEAR, QUARTER, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND, MILLISECOND)")
			}
			p.next()
			return &Call{Pos: e.ExprPos(), Name: "$ARGS", Args: []Expr{e, &Literal{Pos: u.pos, Kind: StringLit, Text: unit}}}
		}
		return e
	case "TIMESTAMPADD", "TIMESTAMPDIFF":
		// the unit, a bare word first, as a string argument
		if u := p.tok(); u.kind == tIdent && p.toks[p.i-1].kind == tOp && p.toks[p.i-1].text == "(" &&
			p.peek(1).kind == tOp && p.peek(1).text == "," {
			// a unit the compiler does not know is its error there
			p.next()
			return &Literal{Pos: u.pos, Kind: StringLit, Text: strings.TrimPrefix(strings.ToUpper(u.text), "SQL_TSI_")}
		}
	case "TRIM":
		mode := "BOTH"
		t := p.tok()
		switch {
		case p.acceptKw("BOTH"):
		case p.acceptKw("LEADING"):
			mode = "LEADING"
		case p.acceptKw("TRAILING"):
			mode = "TRAILING"
		}
		var chars Expr = &Literal{Pos: t.pos, Kind: StringLit, Text: " "}
		if p.acceptKw("FROM") {
			return &Call{Pos: t.pos, Name: "$ARGS", Args: []Expr{&Literal{Pos: t.pos, Kind: StringLit, Text: mode}, chars, p.expr()}}
		}
		e := p.expr()
		if p.acceptKw("FROM") {
			return &Call{Pos: t.pos, Name: "$ARGS", Args: []Expr{&Literal{Pos: t.pos, Kind: StringLit, Text: mode}, e, p.expr()}}
		}
		return &Call{Pos: t.pos, Name: "$ARGS", Args: []Expr{&Literal{Pos: t.pos, Kind: StringLit, Text: mode}, chars, e}}
	}
	if p.isKw("DESCRIPTOR") || p.isKw("TABLE") {
		return p.tvfArg()
	}
	return p.expr()
}

func (p *parser) over(pos Pos) *Over {
	o := &Over{Pos: pos}
	if !p.isOp("(") {
		t := p.tok()
		if t.kind == tIdent || t.kind == tQuotedIdent {
			// OVER w: a window of the SELECT's WINDOW clause
			p.next()
			o.Ref, o.Pos = t.text, t.pos
			p.overRefs = append(p.overRefs, o)
			return o
		}
	}
	p.wantOp("(")
	if p.acceptKwThen("PARTITION", "BY") {
		for {
			o.PartitionBy = append(o.PartitionBy, p.expr())
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if p.acceptKwThen("ORDER", "BY") {
		o.OrderBy = p.orderItems()
	}
	if p.isKw("ROWS") || p.isKw("RANGE") {
		f := &Frame{Rows: p.isKw("ROWS")}
		p.next()
		if p.acceptKw("BETWEEN") {
			f.Start = p.bound()
			p.wantKw("AND")
			f.End = p.bound()
		} else {
			f.Start = p.bound()
			f.End = Bound{Kind: CurrentRow}
		}
		o.Frame = f
	}
	p.wantOp(")")
	return o
}

func (p *parser) bound() Bound {
	switch {
	case p.acceptKw("UNBOUNDED", "PRECEDING"):
		return Bound{Kind: UnboundedPreceding}
	case p.acceptKw("UNBOUNDED", "FOLLOWING"):
		return Bound{Kind: UnboundedFollowing}
	case p.acceptKw("CURRENT", "ROW"):
		return Bound{Kind: CurrentRow}
	}
	e := p.additive()
	if p.acceptKw("PRECEDING") {
		return Bound{Kind: Preceding, Offset: e}
	}
	if p.acceptKw("FOLLOWING") {
		return Bound{Kind: Following, Offset: e}
	}
	p.fail("PRECEDING or FOLLOWING")
	return Bound{}
}

// The SQL/JSON functions have clauses rather than plain arguments. The
// parser keeps each call a *Call whose arguments come in a fixed layout,
// every clause a string literal naming the behaviour (defaults filled in),
// so that the compiler and the planner's walks see ordinary arguments and
// ExprString prints the clauses back as written (format.go):
//
//	JSON_EXISTS(json, path, onError)                 onError: TRUE FALSE UNKNOWN ERROR
//	JSON_VALUE(json, path, CAST(NULL AS returning),
//	           emptyMode, emptyDefault, errorMode, errorDefault)
//	                                                 modes: NULL ERROR DEFAULT; defaults NULL unless DEFAULT
//	JSON_QUERY(json, path, wrapper, onEmpty, onError [, CAST(NULL AS returning)])
//	                                                 wrapper: WITHOUT ARRAY, WITH CONDITIONAL ARRAY,
//	                                                 WITH UNCONDITIONAL ARRAY; on*: NULL ERROR EMPTY ARRAY EMPTY OBJECT
//	JSON_OBJECT(onNull, key, value, key, value...)   onNull: NULL ABSENT
//	JSON_ARRAY(onNull, value...)
//	JSON_OBJECTAGG(onNull, key, value)
//	JSON_ARRAYAGG(onNull, value)
//	x IS [NOT] JSON [kind]: Call{Name: "IS JSON" or "IS NOT JSON", Args: x, kind}
var jsonSyntax = map[string]bool{
	"JSON_EXISTS": true, "JSON_VALUE": true, "JSON_QUERY": true, "JSON_OBJECT": true,
	"JSON_ARRAY": true, "JSON_OBJECTAGG": true, "JSON_ARRAYAGG": true,
}

// jsonDefaultOnNull is the ON NULL behaviour of a JSON constructor when
// its call has none: ABSENT for the arrays, NULL for the objects.
func jsonDefaultOnNull(fn string) string {
	if fn == "JSON_ARRAY" || fn == "JSON_ARRAYAGG" {
		return "ABSENT"
	}
	return "NULL"
}

// isJSON reads the kind after x IS [NOT] JSON.
func (p *parser) isJSON(pos Pos, x Expr, not bool) Expr {
	kind := "VALUE"
	for _, k := range []string{"VALUE", "SCALAR", "ARRAY", "OBJECT"} {
		if p.acceptKw(k) {
			kind = k
			break
		}
	}
	name := "IS JSON"
	if not {
		name = "IS NOT JSON"
	}
	return &Call{Pos: pos, Name: name, Args: []Expr{x, &Literal{Pos: pos, Kind: StringLit, Text: kind}}}
}

// jsonArgs reads the arguments and clauses of a SQL/JSON function after
// its "(", through the ")", into c.Args in the layout above.
func (p *parser) jsonArgs(c *Call) {
	flag := func(pos Pos, s string) Expr { return &Literal{Pos: pos, Kind: StringLit, Text: s} }
	null := func(pos Pos) Expr { return &Literal{Pos: pos, Kind: NullLit} }
	switch c.Name {
	case "JSON_EXISTS", "JSON_VALUE", "JSON_QUERY":
		x := p.expr()
		p.wantOp(",")
		path := p.expr()
		c.Args = []Expr{x, path}
		pos := p.tok().pos
		switch c.Name {
		case "JSON_EXISTS":
			onError := "FALSE"
			if b, ok := p.jsonBehaviour("TRUE", "FALSE", "UNKNOWN", "ERROR"); ok {
				onError = b
				p.wantKw("ON", "ERROR")
			}
			c.Args = append(c.Args, flag(pos, onError))
		case "JSON_VALUE":
			ret := &Cast{Pos: pos, X: null(pos), Type: types.StringType}
			if p.acceptKw("RETURNING") {
				ret.Pos = p.tok().pos
				ret.Type = p.dataType()
				if prev := p.toks[p.i-1]; p.isKw("ON") && prev.kind == tIdent && strings.EqualFold(prev.text, "NULL") && !ret.Type.NotNull {
					// the type read NULL ON EMPTY's NULL as its nullability
					p.i--
				}
				if ret.Type.NotNull {
					panic(bail{Errorf(ret.Pos, "the RETURNING type of JSON_VALUE cannot be NOT NULL")})
				}
			}
			c.Args = append(c.Args, ret, flag(pos, "NULL"), null(pos), flag(pos, "NULL"), null(pos))
			seen := map[string]bool{}
			for {
				bpos := p.tok().pos
				mode, ok := p.jsonBehaviour("NULL", "ERROR")
				var def Expr = null(bpos)
				if !ok {
					if !p.acceptKw("DEFAULT") {
						break
					}
					mode, def = "DEFAULT", p.expr()
				}
				at := 3 // ON EMPTY's mode and default
				if p.jsonWhen(c.Name, bpos, seen) == "ERROR" {
					at = 5
				}
				c.Args[at], c.Args[at+1] = flag(bpos, mode), def
			}
		case "JSON_QUERY":
			var ret Expr // RETURNING: a sixth argument, CAST(NULL AS type)
			if p.acceptKw("RETURNING") {
				rpos := p.tok().pos
				t := p.dataType()
				if prev := p.toks[p.i-1]; p.isKw("ON") && prev.kind == tIdent && strings.EqualFold(prev.text, "NULL") && !t.NotNull {
					// the type read NULL ON EMPTY's NULL as its nullability
					p.i--
				}
				if t.NotNull {
					panic(bail{Errorf(rpos, "the RETURNING type of JSON_QUERY cannot be NOT NULL")})
				}
				ret = &Cast{Pos: rpos, X: null(rpos), Type: t}
			}
			wrapper := "WITHOUT ARRAY"
			switch {
			case p.acceptKw("WITHOUT"):
				p.acceptKw("ARRAY")
				p.wantKw("WRAPPER")
			case p.acceptKw("WITH"):
				wrapper = "WITH UNCONDITIONAL ARRAY"
				if p.acceptKw("CONDITIONAL") {
					wrapper = "WITH CONDITIONAL ARRAY"
				} else {
					p.acceptKw("UNCONDITIONAL")
				}
				p.acceptKw("ARRAY")
				p.wantKw("WRAPPER")
			}
			c.Args = append(c.Args, flag(pos, wrapper), flag(pos, "NULL"), flag(pos, "NULL"))
			seen := map[string]bool{}
			for {
				bpos := p.tok().pos
				mode, ok := p.jsonBehaviour("NULL", "ERROR")
				if !ok {
					if !p.isKw("EMPTY") || !(p.isKwAt(1, "ARRAY") || p.isKwAt(1, "OBJECT")) {
						break
					}
					p.next()
					mode = "EMPTY " + strings.ToUpper(p.next().text)
				}
				at := 3 // ON EMPTY's behaviour
				if p.jsonWhen(c.Name, bpos, seen) == "ERROR" {
					at = 4
				}
				c.Args[at] = flag(bpos, mode)
			}
			if ret != nil {
				c.Args = append(c.Args, ret)
			}
		}
	case "JSON_OBJECT", "JSON_OBJECTAGG":
		var kv []Expr
		if !p.isOp(")") && !p.isOnNull() {
			for {
				if p.isKw("KEY") && !p.isKwAt(1, "VALUE") && !(p.peek(1).kind == tOp && p.peek(1).text == ",") {
					p.next() // KEY 'k' VALUE v; a column named key is `KEY VALUE v`
				}
				k := p.expr()
				p.wantKw("VALUE")
				kv = append(kv, k, p.expr())
				if c.Name == "JSON_OBJECTAGG" || !p.acceptOp(",") {
					break
				}
			}
		}
		if c.Name == "JSON_OBJECTAGG" && len(kv) == 0 {
			p.fail("a key")
		}
		pos := p.tok().pos
		c.Args = append([]Expr{flag(pos, p.onNull(c.Name))}, kv...)
	case "JSON_ARRAY", "JSON_ARRAYAGG":
		var vs []Expr
		if !p.isOp(")") && !p.isOnNull() {
			for {
				vs = append(vs, p.expr())
				if c.Name == "JSON_ARRAYAGG" || !p.acceptOp(",") {
					break
				}
			}
		}
		if c.Name == "JSON_ARRAYAGG" && len(vs) == 0 {
			p.fail("an expression")
		}
		pos := p.tok().pos
		c.Args = append([]Expr{flag(pos, p.onNull(c.Name))}, vs...)
	}
	p.wantOp(")")
}

// jsonWhen reads ON EMPTY or ON ERROR, once each per call.
func (p *parser) jsonWhen(fn string, pos Pos, seen map[string]bool) string {
	p.wantKw("ON")
	when := "EMPTY"
	if !p.acceptKw("EMPTY") {
		if !p.acceptKw("ERROR") {
			p.fail("EMPTY or ERROR")
		}
		when = "ERROR"
	}
	if seen[when] {
		panic(bail{Errorf(pos, "%s has two ON %s clauses", fn, when)})
	}
	seen[when] = true
	return when
}

// jsonBehaviour accepts one of the words when ON follows it.
func (p *parser) jsonBehaviour(words ...string) (string, bool) {
	for _, w := range words {
		if p.isKw(w) && p.isKwAt(1, "ON") {
			p.next()
			return w, true
		}
	}
	return "", false
}

func (p *parser) isOnNull() bool {
	return (p.isKw("NULL") || p.isKw("ABSENT")) && p.isKwAt(1, "ON") && p.isKwAt(2, "NULL")
}

// onNull reads [NULL | ABSENT] ON NULL, giving fn's default without it.
func (p *parser) onNull(fn string) string {
	if !p.isOnNull() {
		return jsonDefaultOnNull(fn)
	}
	mode := strings.ToUpper(p.next().text)
	p.next()
	p.next()
	return mode
}
