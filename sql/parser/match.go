package parser

import (
	"strconv"
	"strings"
)

// MatchRecognize is `input MATCH_RECOGNIZE (...) [AS alias]`: row pattern
// recognition over a table (Flink's MATCH_RECOGNIZE).
type MatchRecognize struct {
	Pos         Pos
	Input       TableExpr
	PartitionBy []Expr
	OrderBy     []OrderItem
	OrderPos    Pos
	Measures    []SelectItem
	// AllRows is ALL ROWS PER MATCH.
	AllRows    bool
	AllRowsPos Pos
	// After is the AFTER MATCH SKIP strategy: "" (the default), "NEXT
	// ROW", "PAST LAST ROW", "FIRST" or "LAST" (with AfterVar).
	After    string
	AfterVar string
	AfterPos Pos
	Pattern  []PatternTerm
	PatPos   Pos
	Within   Expr
	// Subsets are SUBSET u = (a, b), ...: union variables.
	Subsets []Subset
	Define  []Define
	Alias   string
}

// Subset is SUBSET name = (var, ...) of MATCH_RECOGNIZE.
type Subset struct {
	Pos  Pos
	Name string
	Vars []string
}

// PatternTerm is one element of a PATTERN with its quantifier: Min..Max
// repetitions (Max -1: unbounded); Reluctant for a trailing `?`. The
// element is a variable (Var), or, when Alts is set, a parenthesized
// sub-pattern: its alternatives (`(A B | C)`: [[A B] [C]]; a group
// without `|` has one), or PERMUTE(x, y, ...) when Permute is set (Alts
// then holds the permuted elements, one a sequence each). A PATTERN with
// `|` at its top level is one such group without a quantifier.
type PatternTerm struct {
	Pos       Pos
	Var       string
	Alts      [][]PatternTerm
	Permute   bool
	Min, Max  int
	Quant     string // the quantifier as written ("", "+", "*?", "{2,3}")
	Reluctant bool
}

// IsGroup reports whether the term is a sub-pattern rather than a
// variable.
func (t PatternTerm) IsGroup() bool { return t.Alts != nil }

// Define is `var AS condition` of DEFINE.
type Define struct {
	Pos  Pos
	Var  string
	Cond Expr
}

func (t *MatchRecognize) TablePos() Pos { return t.Pos }

// matchRecognize parses MATCH_RECOGNIZE (...) after a table primary, if
// there is one.
func (p *parser) matchRecognize(in TableExpr) TableExpr {
	if !p.isKw("MATCH_RECOGNIZE") {
		return in
	}
	m := &MatchRecognize{Pos: p.next().pos, Input: in}
	p.wantOp("(")
	if p.acceptKwThen("PARTITION", "BY") {
		for {
			m.PartitionBy = append(m.PartitionBy, p.expr())
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if p.isKw("ORDER") {
		m.OrderPos = p.tok().pos
		p.wantKw("ORDER", "BY")
		m.OrderBy = p.orderItems()
	}
	if p.acceptKw("MEASURES") {
		for {
			t := p.tok()
			it := SelectItem{Pos: t.pos, Expr: p.expr()}
			p.wantKw("AS")
			it.AliasPos = p.tok().pos
			it.Alias, _ = p.ident("a name for the measure")
			m.Measures = append(m.Measures, it)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if p.isKw("ONE") {
		p.wantKw("ONE", "ROW", "PER", "MATCH")
	} else if p.isKw("ALL") {
		m.AllRows, m.AllRowsPos = true, p.tok().pos
		p.wantKw("ALL", "ROWS", "PER", "MATCH")
	}
	if p.isKw("AFTER") {
		m.AfterPos = p.tok().pos
		p.wantKw("AFTER", "MATCH", "SKIP")
		switch {
		case p.acceptKw("PAST", "LAST", "ROW"):
			m.After = "PAST LAST ROW"
		case p.acceptKw("TO", "NEXT", "ROW"):
			m.After = "NEXT ROW"
		case p.acceptKw("TO", "FIRST"):
			m.After = "FIRST"
			m.AfterVar, _ = p.ident("a pattern variable")
		case p.acceptKw("TO", "LAST"):
			m.After = "LAST"
			m.AfterVar, _ = p.ident("a pattern variable")
		case p.acceptKw("TO"):
			m.After = "LAST"
			m.AfterVar, _ = p.ident("a pattern variable")
		default:
			p.fail("PAST LAST ROW, TO NEXT ROW, TO FIRST v or TO LAST v")
		}
	}
	m.PatPos = p.tok().pos
	p.wantKw("PATTERN")
	p.wantOp("(")
	if p.isOp(")") {
		panic(bail{Errorf(m.PatPos, "PATTERN needs at least one variable")})
	}
	alts := p.patternAlts()
	p.wantOp(")")
	if len(alts) == 1 {
		m.Pattern = alts[0]
	} else {
		m.Pattern = []PatternTerm{{Pos: alts[0][0].Pos, Alts: alts, Min: 1, Max: 1}}
	}
	if p.acceptKw("WITHIN") {
		m.Within = p.expr()
	}
	if p.acceptKw("SUBSET") {
		for {
			t := p.tok()
			name, _ := p.ident("a subset name")
			p.wantOp("=")
			p.wantOp("(")
			ss := Subset{Pos: t.pos, Name: name, Vars: p.columnList()}
			m.Subsets = append(m.Subsets, ss)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	p.wantKw("DEFINE")
	for {
		t := p.tok()
		name, _ := p.ident("a pattern variable")
		p.wantKw("AS")
		m.Define = append(m.Define, Define{Pos: t.pos, Var: name, Cond: p.expr()})
		if !p.acceptOp(",") {
			break
		}
	}
	p.wantOp(")")
	m.Alias = p.alias()
	return m
}

// patternAlts reads alternatives separated by `|`, each a sequence of
// terms, up to a `)` or `,`.
func (p *parser) patternAlts() [][]PatternTerm {
	var alts [][]PatternTerm
	for {
		var seq []PatternTerm
		for !p.isOp(")") && !p.isOp("|") && !p.isOp(",") {
			seq = append(seq, p.patternTerm())
		}
		if len(seq) == 0 {
			panic(bail{Errorf(p.tok().pos, "an empty pattern (an alternative or group without a variable) is not supported")})
		}
		alts = append(alts, seq)
		if !p.acceptOp("|") {
			return alts
		}
	}
}

// patternTerm reads a variable, a parenthesized sub-pattern or PERMUTE,
// and its quantifier. Exclusions and anchors are refused here, as Flink
// refuses them.
func (p *parser) patternTerm() PatternTerm {
	t := p.tok()
	var pt PatternTerm
	switch {
	case p.isOp("{"), p.isOp("^"), p.isOp("$"):
		panic(bail{Errorf(t.pos, "exclusions and anchors in PATTERN are not supported (Flink does not support them either)")})
	case p.acceptOp("("):
		pt = PatternTerm{Pos: t.pos, Alts: p.patternAlts(), Min: 1, Max: 1}
		p.wantOp(")")
	case p.isKw("PERMUTE") && p.peek(1).kind == tOp && p.peek(1).text == "(":
		p.next()
		p.wantOp("(")
		pt = PatternTerm{Pos: t.pos, Permute: true, Min: 1, Max: 1}
		for {
			alts := p.patternAlts()
			if len(alts) == 1 {
				pt.Alts = append(pt.Alts, alts[0])
			} else {
				pt.Alts = append(pt.Alts, []PatternTerm{{Pos: alts[0][0].Pos, Alts: alts, Min: 1, Max: 1}})
			}
			if !p.acceptOp(",") {
				break
			}
		}
		p.wantOp(")")
	default:
		name, pos := p.ident("a pattern variable or \")\"")
		pt = PatternTerm{Pos: pos, Var: name, Min: 1, Max: 1}
	}
	q := p.tok()
	switch {
	case p.isOp("{") && p.peek(1).kind == tOp && p.peek(1).text == "-":
		panic(bail{Errorf(q.pos, "exclusions and anchors in PATTERN are not supported (Flink does not support them either)")})
	case p.acceptOp("*"):
		pt.Min, pt.Max = 0, -1
	case p.acceptOp("+"):
		pt.Min, pt.Max = 1, -1
	case p.acceptOp("?"):
		pt.Min, pt.Max = 0, 1
	case p.acceptOp("{"):
		pt.Min = 0
		if !p.isOp(",") {
			pt.Min = p.intLit("a number of rows")
		}
		pt.Max = pt.Min
		if p.acceptOp(",") {
			pt.Max = -1
			if !p.isOp("}") {
				pt.Max = p.intLit("a number of rows")
			}
		}
		p.wantOp("}")
		if pt.Max >= 0 && pt.Max < pt.Min {
			panic(bail{Errorf(q.pos, "the quantifier {%d,%d} has its maximum below its minimum", pt.Min, pt.Max)})
		}
	default:
		return pt
	}
	if p.isOp("?") && p.tok().off == p.toks[p.i-1].end {
		p.next()
		pt.Reluctant = true
	}
	switch {
	case pt.Min == 0 && pt.Max == -1:
		pt.Quant = "*"
	case pt.Min == 1 && pt.Max == -1:
		pt.Quant = "+"
	case pt.Min == 0 && pt.Max == 1:
		pt.Quant = "?"
	case pt.Max == -1:
		pt.Quant = "{" + strconv.Itoa(pt.Min) + ",}"
	case pt.Min == pt.Max:
		pt.Quant = "{" + strconv.Itoa(pt.Min) + "}"
	default:
		pt.Quant = "{" + strconv.Itoa(pt.Min) + "," + strconv.Itoa(pt.Max) + "}"
	}
	if pt.Reluctant {
		pt.Quant += "?"
	}
	return pt
}

func formatPattern(ts []PatternTerm) string {
	var parts []string
	for _, t := range ts {
		switch {
		case t.Permute:
			var els []string
			for _, a := range t.Alts {
				els = append(els, formatPattern(a))
			}
			parts = append(parts, "PERMUTE("+strings.Join(els, ", ")+")"+t.Quant)
		case t.IsGroup():
			var alts []string
			for _, a := range t.Alts {
				alts = append(alts, formatPattern(a))
			}
			parts = append(parts, "("+strings.Join(alts, " | ")+")"+t.Quant)
		default:
			parts = append(parts, quoteIdent(t.Var)+t.Quant)
		}
	}
	return strings.Join(parts, " ")
}

// PatternString prints a PATTERN's terms as written.
func PatternString(ts []PatternTerm) string { return formatPattern(ts) }
