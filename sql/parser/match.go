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

// PatternTerm is one variable of a PATTERN with its quantifier: Min..Max
// rows (Max -1: unbounded); Reluctant for a trailing `?`.
type PatternTerm struct {
	Pos       Pos
	Var       string
	Min, Max  int
	Quant     string // the quantifier as written ("", "+", "*?", "{2,3}")
	Reluctant bool
}

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
	for !p.acceptOp(")") {
		m.Pattern = append(m.Pattern, p.patternTerm())
	}
	if len(m.Pattern) == 0 {
		panic(bail{Errorf(m.PatPos, "PATTERN needs at least one variable")})
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

// patternTerm reads a variable and its quantifier. Groups, alternation,
// PERMUTE, exclusions and anchors are refused here, as Flink refuses them.
func (p *parser) patternTerm() PatternTerm {
	t := p.tok()
	switch {
	case p.isOp("("):
		panic(bail{Errorf(t.pos, "pattern groups \"( ... )\" inside PATTERN are not supported (Flink does not support them either)")})
	case p.isOp("|"):
		panic(bail{Errorf(t.pos, "alternation \"|\" in PATTERN is not supported (Flink does not support it either)")})
	case p.isOp("{"), p.isKw("PERMUTE"):
		panic(bail{Errorf(t.pos, "exclusions and PERMUTE in PATTERN are not supported (Flink does not support them either)")})
	}
	name, pos := p.ident("a pattern variable or \")\"")
	pt := PatternTerm{Pos: pos, Var: name, Min: 1, Max: 1}
	q := p.tok()
	switch {
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
		parts = append(parts, quoteIdent(t.Var)+t.Quant)
	}
	return strings.Join(parts, " ")
}

// PatternString prints a PATTERN's terms as written.
func PatternString(ts []PatternTerm) string { return formatPattern(ts) }
