package planner

import (
	"strings"

	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
)

// pushWhereIntoJoins moves the conditions of a WHERE over comma (cross)
// joins into the joins' ON, as Flink's planner does (its filter-into-join
// rule): `FROM auction A, bid B WHERE A.id = B.auction AND ...` (Nexmark q4,
// q9) is then an inner join keyed by A.id = B.auction instead of a cross
// product filtered afterwards, which keeps every row of both inputs under
// one key and compares every pair. For inner joins the result is the same.
//
// Each condition goes to the deepest join of the left-deep chain of cross
// and inner joins whose tables it names (by qualifier: A.id); a condition
// with an unqualified column, or none, goes to the topmost join. Outer
// joins are not entered. s is not changed: a view's query is planned once
// per reference, so the rewrite returns a new Select.
func pushWhereIntoJoins(s *parser.Select, funcs map[string]expr.Function) *parser.Select {
	j, ok := s.From.(*parser.Join)
	if !ok || j.Kind != parser.CrossJoin || s.Where == nil || hasAggregate(s.Where, funcs) || hasOver(s.Where) {
		return s
	}
	// the chain: top, top.Left, ... while cross or inner joins
	var chain []*parser.Join
	for x := j; x != nil; {
		if x.Kind != parser.CrossJoin && x.Kind != parser.InnerJoin {
			break
		}
		c := *x
		chain = append(chain, &c)
		x, _ = x.Left.(*parser.Join)
	}
	for i := 0; i+1 < len(chain); i++ {
		chain[i].Left = chain[i+1]
	}
	aliases := make([]map[string]bool, len(chain))
	for i, c := range chain {
		aliases[i] = map[string]bool{}
		tableAliases(c, aliases[i])
	}
	for _, c := range splitAnd(s.Where) {
		at := 0 // an unqualified column: the topmost join sees every column
		if quals, ok := qualifiers(c, aliases[0]); ok {
			for i := len(chain) - 1; i >= 0; i-- {
				if covers(aliases[i], quals) {
					at = i
					break
				}
			}
		}
		n := chain[at]
		if n.On == nil {
			n.On = c
		} else {
			n.On = &parser.Binary{Pos: c.ExprPos(), Op: "AND", L: n.On, R: c}
		}
		if n.Kind == parser.CrossJoin {
			n.Kind = parser.InnerJoin
		}
	}
	out := *s
	out.From = chain[0]
	out.Where = nil
	return &out
}

// tableAliases adds the names by which te's tables are qualified.
func tableAliases(te parser.TableExpr, into map[string]bool) {
	switch t := te.(type) {
	case *parser.TableRef:
		a := t.Alias
		if a == "" {
			a = lastPart(t.Name)
		}
		into[strings.ToLower(a)] = true
	case *parser.SubqueryTable:
		into[strings.ToLower(t.Alias)] = true
	case *parser.TableFunc:
		into[strings.ToLower(t.Alias)] = true
	case *parser.Join:
		tableAliases(t.Left, into)
		tableAliases(t.Right, into)
	}
}

// qualifiers returns the table aliases e's columns are qualified by; ok is
// false if e reads a column without a known qualifier.
func qualifiers(e parser.Expr, known map[string]bool) (map[string]bool, bool) {
	quals := map[string]bool{}
	ok := true
	walkExpr(e, func(x parser.Expr) bool {
		if id, isID := x.(*parser.Ident); isID {
			if len(id.Parts) >= 2 && known[strings.ToLower(id.Parts[0])] {
				quals[strings.ToLower(id.Parts[0])] = true
			} else {
				ok = false
			}
		}
		if _, isSub := x.(*parser.Subquery); isSub {
			ok = false
			return false
		}
		return true
	})
	return quals, ok
}

func covers(have, need map[string]bool) bool {
	for k := range need {
		if !have[k] {
			return false
		}
	}
	return true
}
