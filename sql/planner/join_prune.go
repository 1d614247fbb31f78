package planner

import (
	"reflect"
	"strings"

	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
)

// Column pruning below joins, as Calcite's ProjectJoinTransposeRule: a
// join's inputs carry only the columns that the SELECT over it mentions
// (its join conditions, WHERE, select list, GROUP BY, HAVING, ORDER BY,
// subqueries) — Nexmark q4 joins auctions (10 columns) with bids (7) to
// read 4 and 3 of them. Fewer columns make the join's state smaller (it
// keeps every row of both sides) and its rows cheaper to make.
//
// What a SELECT mentions is over-approximated: every name written
// anywhere in its syntax tree (identifiers' parts, USING columns,
// aliases, function names alike), so a column is dropped only if no name
// in the statement is its name; a star item keeps every column (of its
// table).

// colNeed is what a SELECT over a join reads of the join's columns.
type colNeed struct {
	all    bool            // SELECT *
	starOf map[string]bool // t.* (lower-case qualifiers)
	names  map[string]bool // every name written in the SELECT (lower case)
	// valueNames are the names written outside the FOR SYSTEM_TIME AS OF
	// clauses of the joins and outside the derived tables they join
	// (whose names define their columns, not read the join's): a lookup
	// join reads its AS OF attribute's column only as a time attribute
	// (processing time), not as a value
	valueNames map[string]bool
}

// forLookup is need for the probe side of a lookup join, whose AS OF
// column (a PROCTIME() attribute) is not read as a value: the Calc that
// makes the probe rows leaves it out unless the statement reads it
// elsewhere, as Flink leaves an unmaterialized proctime attribute out
// (no clock read per row: Nexmark q13).
func (need *colNeed) forLookup() *colNeed {
	if need == nil {
		return nil
	}
	n := *need
	n.names = need.valueNames
	return &n
}

// noteJoinNeed records, for each join of s's FROM tree (not inside
// derived tables), what s reads of its columns.
func (p *planner) noteJoinNeed(s *parser.Select) {
	j, ok := s.From.(*parser.Join)
	if !ok {
		return
	}
	need := &colNeed{starOf: map[string]bool{}, names: map[string]bool{}}
	for _, it := range s.Items {
		switch {
		case it.Star && it.StarOf == "":
			need.all = true
		case it.Star:
			need.starOf[strings.ToLower(it.StarOf)] = true
		}
	}
	collectNames(reflect.ValueOf(s), need.names, nil)
	need.valueNames = map[string]bool{}
	collectNames(reflect.ValueOf(s), need.valueNames, definitions(j, map[any]bool{}))
	if p.joinNeed == nil {
		p.joinNeed = map[*parser.Join]*colNeed{}
	}
	var mark func(t parser.TableExpr)
	mark = func(t parser.TableExpr) {
		if j, ok := t.(*parser.Join); ok {
			p.joinNeed[j] = need
			mark(j.Left)
			mark(j.Right)
		}
	}
	mark(j)
}

// definitions are the table expressions of j's tree whose FOR SYSTEM_TIME
// AS OF clause (a TableRef's AsOf) or query (a SubqueryTable's Query)
// defines rather than reads: collectNames leaves those fields out.
func definitions(t parser.TableExpr, skip map[any]bool) map[any]bool {
	switch t := t.(type) {
	case *parser.Join:
		definitions(t.Right, definitions(t.Left, skip))
	case *parser.SubqueryTable, *parser.TableRef:
		skip[t] = true
	}
	return skip
}

// definingFields are the fields collectNames leaves out of the nodes in
// its skip set.
var definingFields = map[string]bool{"AsOf": true, "Query": true}

// collectNames adds every string held in the syntax tree v to names (lower
// case), but for the defining fields of the nodes in skip (definitions).
func collectNames(v reflect.Value, names map[string]bool, skip map[any]bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if v.Kind() == reflect.Pointer && skip[v.Interface()] {
			e := v.Elem()
			for i := range e.NumField() {
				if f := e.Type().Field(i); f.IsExported() && !definingFields[f.Name] {
					collectNames(e.Field(i), names, skip)
				}
			}
			return
		}
		collectNames(v.Elem(), names, skip)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				collectNames(v.Field(i), names, skip)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			collectNames(v.Index(i), names, skip)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			collectNames(it.Key(), names, skip)
			collectNames(it.Value(), names, skip)
		}
	case reflect.String:
		names[strings.ToLower(v.String())] = true
	}
}

// pruneJoinInput returns r with only the columns need keeps (r itself if
// it keeps them all).
func pruneJoinInput(r *rel, need *colNeed) *rel {
	if need == nil || need.all {
		return r
	}
	var keep []int
	for i, c := range r.sc.Cols {
		if need.starOf[strings.ToLower(c.Qual)] || need.names[strings.ToLower(c.Name)] {
			keep = append(keep, i)
		}
	}
	if len(keep) == len(r.sc.Cols) {
		return r
	}
	if len(keep) == 0 {
		keep = []int{0} // a side none of whose columns is read (a CROSS JOIN's count): its rows still count
	}
	pr := &projection{}
	for _, i := range keep {
		pr.names = append(pr.names, r.sc.Cols[i].Name)
		pr.exprs = append(pr.exprs, expr.Expr{})
	}
	// over a Calc: one Calc, making only the columns kept
	ec, input, filter := fused(r, "a join input", nil)
	for k, i := range keep {
		pr.exprs[k] = ec.Column(i)
	}
	out := calcRel(input, filter, pr, "Calc(select=["+strings.Join(pr.names, ", ")+"])")
	for k, i := range keep {
		out.sc.Cols[k].Qual = r.sc.Cols[i].Qual
		out.sc.Cols[k].Win = r.sc.Cols[i].Win
	}
	return out
}
