package parser

import "strings"

// groupItem parses an item of GROUP BY: an expression, or GROUPING SETS
// (...), ROLLUP (...) or CUBE (...). GROUPING, ROLLUP and CUBE stay
// names elsewhere (a column may be called cube); here they start a
// grouping construct only when followed by SETS or "(".
func (p *parser) groupItem() Expr {
	t := p.tok()
	switch {
	case p.isKw("GROUPING") && p.isKwAt(1, "SETS"):
		p.next()
		p.next()
		g := &GroupingSets{Pos: t.pos, Kind: "GROUPING SETS"}
		p.wantOp("(")
		for {
			if (p.isKw("GROUPING") && p.isKwAt(1, "SETS")) || ((p.isKw("ROLLUP") || p.isKw("CUBE")) && p.peek(1).kind == tOp && p.peek(1).text == "(") {
				g.Elems = append(g.Elems, []Expr{p.groupItem()})
			} else {
				g.Elems = append(g.Elems, p.groupingElem())
			}
			if !p.acceptOp(",") {
				break
			}
		}
		p.wantOp(")")
		return g
	case (p.isKw("ROLLUP") || p.isKw("CUBE")) && t.kind == tIdent && p.peek(1).kind == tOp && p.peek(1).text == "(":
		p.next()
		g := &GroupingSets{Pos: t.pos, Kind: strings.ToUpper(t.text)}
		p.wantOp("(")
		for {
			e := p.groupingElem()
			if len(e) == 0 {
				panic(bail{Errorf(p.tok().pos, "%s takes expressions or lists of them, not ()", g.Kind)})
			}
			g.Elems = append(g.Elems, e)
			if !p.acceptOp(",") {
				break
			}
		}
		p.wantOp(")")
		return g
	}
	return p.expr()
}

// groupingElem parses an element of GROUPING SETS, ROLLUP or CUBE: (),
// (a, b) or one expression ((a) is a).
func (p *parser) groupingElem() []Expr {
	t := p.tok()
	if p.isOp("(") && p.peek(1).kind == tOp && p.peek(1).text == ")" {
		p.next()
		p.next()
		return []Expr{}
	}
	e := p.expr()
	// (a, b) parses as a row constructor at the "(": a list here (ROW(a,
	// b) written so is one expression)
	if c, ok := e.(*Call); ok && t.kind == tOp && t.text == "(" && c.Name == "ROW" && c.Pos == t.pos {
		return c.Args
	}
	return []Expr{e}
}

// writeGroupingSets prints g back as SQL.
func writeGroupingSets(b *strings.Builder, g *GroupingSets) {
	b.WriteString(g.Kind + " (")
	for i, el := range g.Elems {
		if i > 0 {
			b.WriteString(", ")
		}
		if len(el) == 1 {
			if _, nested := el[0].(*GroupingSets); nested || g.Kind != "GROUPING SETS" {
				writeExpr(b, el[0])
				continue
			}
		}
		b.WriteByte('(')
		writeList(b, el)
		b.WriteByte(')')
	}
	b.WriteByte(')')
}
