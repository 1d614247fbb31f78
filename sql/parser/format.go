package parser

import (
	"strings"

	"github.com/weirstream/weir/sql/types"
)

// ExprString prints an expression back as SQL (fully parenthesised binary
// operators), for plans, EXPLAIN and tests.
func ExprString(e Expr) string {
	var b strings.Builder
	writeExpr(&b, e)
	return b.String()
}

// QueryString prints a query back as SQL.
func QueryString(q Query) string {
	var b strings.Builder
	writeQuery(&b, q)
	return b.String()
}

func quoteIdent(s string) string {
	plain := s != "" && !isReserved(s) && !flinkReserved[strings.ToUpper(s)] && isIdentStart(s[0]) && s[0] != '$'
	for i := 0; i < len(s) && plain; i++ {
		plain = isIdentPart(s[i])
	}
	if plain {
		return s
	}
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

func writeList(b *strings.Builder, es []Expr) {
	for i, a := range es {
		if i > 0 {
			b.WriteString(", ")
		}
		writeExpr(b, a)
	}
}

func writeExpr(b *strings.Builder, e Expr) {
	switch e := e.(type) {
	case nil:
		b.WriteString("<nil>")
	case *GroupingSets:
		writeGroupingSets(b, e)
	case *Ident:
		for i, p := range e.Parts {
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(quoteIdent(p))
		}
	case *Literal:
		switch e.Kind {
		case StringLit:
			b.WriteString("'" + strings.ReplaceAll(e.Text, "'", "''") + "'")
		case NullLit:
			b.WriteString("NULL")
		default:
			b.WriteString(e.Text)
		}
	case *TypedLiteral:
		b.WriteString(e.Type + " '" + strings.ReplaceAll(e.Text, "'", "''") + "'")
	case *IntervalLit:
		b.WriteString("INTERVAL ")
		if e.Negative {
			b.WriteByte('-')
		}
		b.WriteString("'" + e.Text + "' " + e.Unit)
		if e.To != "" {
			b.WriteString(" TO " + e.To)
		}
	case *Unary:
		b.WriteString(e.Op)
		if e.Op == "NOT" {
			b.WriteByte(' ')
		}
		writeExpr(b, e.X)
	case *Binary:
		b.WriteByte('(')
		writeExpr(b, e.L)
		b.WriteString(" " + e.Op + " ")
		writeExpr(b, e.R)
		b.WriteByte(')')
	case *Call:
		if writeIsJSON(b, e) {
			break
		}
		if (e.Name == "ARRAY" || e.Name == "MAP") && !e.Distinct && !e.Star && e.Filter == nil && e.Over == nil {
			b.WriteString(e.Name + "[")
			writeList(b, e.Args)
			b.WriteString("]")
			break
		}
		if strings.ContainsAny(e.Name, ".`") {
			b.WriteString(NameString(e.Name) + "(") // a qualified call, db.f(x)
		} else {
			b.WriteString(e.Name + "(")
		}
		if e.Distinct {
			b.WriteString("DISTINCT ")
		}
		if e.Star {
			b.WriteByte('*')
		}
		if !writeJSONArgs(b, e) {
			writeList(b, e.Args)
		}
		if e.Nulls != "" {
			b.WriteString(" " + e.Nulls + " NULLS")
		}
		b.WriteByte(')')
		if e.Filter != nil {
			b.WriteString(" FILTER (WHERE ")
			writeExpr(b, e.Filter)
			b.WriteByte(')')
		}
		if e.Over != nil {
			b.WriteString(" OVER (")
			if len(e.Over.PartitionBy) > 0 {
				b.WriteString("PARTITION BY ")
				writeList(b, e.Over.PartitionBy)
			}
			if len(e.Over.OrderBy) > 0 {
				b.WriteString(" ORDER BY ")
				writeOrder(b, e.Over.OrderBy)
			}
			if f := e.Over.Frame; f != nil {
				if f.Rows {
					b.WriteString(" ROWS BETWEEN ")
				} else {
					b.WriteString(" RANGE BETWEEN ")
				}
				writeBound(b, f.Start)
				b.WriteString(" AND ")
				writeBound(b, f.End)
			}
			b.WriteByte(')')
		}
	case *Case:
		b.WriteString("CASE")
		if e.Operand != nil {
			b.WriteByte(' ')
			writeExpr(b, e.Operand)
		}
		for _, w := range e.Whens {
			b.WriteString(" WHEN ")
			writeExpr(b, w.Cond)
			b.WriteString(" THEN ")
			writeExpr(b, w.Then)
		}
		if e.Else != nil {
			b.WriteString(" ELSE ")
			writeExpr(b, e.Else)
		}
		b.WriteString(" END")
	case *Cast:
		if e.Try {
			b.WriteString("TRY_")
		}
		b.WriteString("CAST(")
		writeExpr(b, e.X)
		b.WriteString(" AS " + e.Type.String() + ")")
	case *Between:
		writeExpr(b, e.X)
		if e.Not {
			b.WriteString(" NOT")
		}
		b.WriteString(" BETWEEN ")
		writeExpr(b, e.Lo)
		b.WriteString(" AND ")
		writeExpr(b, e.Hi)
	case *In:
		writeExpr(b, e.X)
		if e.Not {
			b.WriteString(" NOT")
		}
		b.WriteString(" IN (")
		writeList(b, e.List)
		b.WriteByte(')')
	case *Like:
		writeExpr(b, e.X)
		if e.Not {
			b.WriteString(" NOT")
		}
		if e.Similar {
			b.WriteString(" SIMILAR TO ")
		} else {
			b.WriteString(" LIKE ")
		}
		writeExpr(b, e.Pattern)
		if e.Escape != nil {
			b.WriteString(" ESCAPE ")
			writeExpr(b, e.Escape)
		}
	case *Is:
		writeExpr(b, e.X)
		b.WriteString(" IS ")
		if e.Not {
			b.WriteString("NOT ")
		}
		b.WriteString(e.What)
		if e.From != nil {
			b.WriteString(" FROM ")
			writeExpr(b, e.From)
		}
	case *Index:
		writeExpr(b, e.X)
		b.WriteByte('[')
		writeExpr(b, e.Index)
		b.WriteByte(']')
	case *Field:
		b.WriteByte('(')
		writeExpr(b, e.X)
		b.WriteString(")." + quoteIdent(e.Name))
	case *Extract:
		b.WriteString("EXTRACT(" + e.Unit + " FROM ")
		writeExpr(b, e.X)
		b.WriteByte(')')
	case *Descriptor:
		b.WriteString("DESCRIPTOR")
		writeColumnList(b, e.Cols)
	case *TableArg:
		b.WriteString("TABLE ")
		writeTable(b, e.Table)
	case *NamedArg:
		b.WriteString(e.Name + " => ")
		writeExpr(b, e.X)
	case *Subquery:
		if e.X != nil {
			b.WriteByte('(')
			writeExpr(b, e.X)
			if e.Not {
				b.WriteString(" NOT")
			}
			b.WriteString(" ")
		}
		if e.Op != "" {
			b.WriteString(e.Op + " ")
		}
		b.WriteByte('(')
		writeQuery(b, e.Query)
		b.WriteByte(')')
		if e.X != nil {
			b.WriteByte(')')
		}
	default:
		b.WriteString("?")
	}
}

func writeBound(b *strings.Builder, bd Bound) {
	switch bd.Kind {
	case UnboundedPreceding:
		b.WriteString("UNBOUNDED PRECEDING")
	case UnboundedFollowing:
		b.WriteString("UNBOUNDED FOLLOWING")
	case CurrentRow:
		b.WriteString("CURRENT ROW")
	case Preceding:
		writeExpr(b, bd.Offset)
		b.WriteString(" PRECEDING")
	case Following:
		writeExpr(b, bd.Offset)
		b.WriteString(" FOLLOWING")
	}
}

func writeOrder(b *strings.Builder, items []OrderItem) {
	for i, o := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		writeExpr(b, o.Expr)
		if o.Desc {
			b.WriteString(" DESC")
		}
	}
}

func writeQuery(b *strings.Builder, q Query) {
	switch q := q.(type) {
	case *With:
		b.WriteString("WITH ")
		for i, n := range q.Names {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(quoteIdent(n))
			if len(q.Columns[i]) > 0 {
				b.WriteByte(' ')
				writeColumnList(b, q.Columns[i])
			}
			b.WriteString(" AS (")
			writeQuery(b, q.Queries[i])
			b.WriteByte(')')
		}
		b.WriteByte(' ')
		writeQuery(b, q.Body)
	case *Select:
		b.WriteString("SELECT ")
		if q.Distinct {
			b.WriteString("DISTINCT ")
		}
		for i, it := range q.Items {
			if i > 0 {
				b.WriteString(", ")
			}
			switch {
			case it.Star && it.StarOf != "":
				b.WriteString(quoteIdent(it.StarOf))
				for _, f := range it.StarField {
					b.WriteString("." + quoteIdent(f))
				}
				b.WriteString(".*")
			case it.Star:
				b.WriteByte('*')
			default:
				writeExpr(b, it.Expr)
				if it.Alias != "" {
					b.WriteString(" AS " + quoteIdent(it.Alias))
				}
			}
		}
		if q.From != nil {
			b.WriteString(" FROM ")
			writeTable(b, q.From)
		}
		if q.Where != nil {
			b.WriteString(" WHERE ")
			writeExpr(b, q.Where)
		}
		if len(q.GroupBy) > 0 {
			b.WriteString(" GROUP BY ")
			writeList(b, q.GroupBy)
		}
		if q.Having != nil {
			b.WriteString(" HAVING ")
			writeExpr(b, q.Having)
		}
		if len(q.OrderBy) > 0 {
			b.WriteString(" ORDER BY ")
			writeOrder(b, q.OrderBy)
		}
		if q.Limit != nil {
			b.WriteString(" LIMIT ")
			writeExpr(b, q.Limit)
		}
	case *SetOp:
		b.WriteByte('(')
		writeQuery(b, q.Left)
		b.WriteString(") " + q.Op + " ")
		if q.All {
			b.WriteString("ALL ")
		}
		b.WriteByte('(')
		writeQuery(b, q.Right)
		b.WriteByte(')')
	case *Values:
		b.WriteString("VALUES ")
		for i, r := range q.Rows {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('(')
			writeList(b, r)
			b.WriteByte(')')
		}
	}
}

// TableString formats a FROM item as SQL.
func TableString(t TableExpr) string {
	var b strings.Builder
	writeTable(&b, t)
	return b.String()
}

func writeTable(b *strings.Builder, t TableExpr) {
	alias := ""
	switch t := t.(type) {
	case *TableRef:
		b.WriteString(NameString(t.Name))
		if t.AsOf != nil {
			b.WriteString(" FOR SYSTEM_TIME AS OF ")
			writeExpr(b, t.AsOf)
		}
		alias = t.Alias
	case *SubqueryTable:
		b.WriteByte('(')
		writeQuery(b, t.Query)
		b.WriteByte(')')
		alias = t.Alias
	case *Join:
		writeTable(b, t.Left)
		if t.Kind == CrossJoin && t.On == nil {
			b.WriteString(", ")
		} else {
			b.WriteString(" " + t.Kind.String() + " JOIN ")
		}
		writeTable(b, t.Right)
		if t.On != nil {
			b.WriteString(" ON ")
			writeExpr(b, t.On)
		}
	case *MatchRecognize:
		writeTable(b, t.Input)
		b.WriteString(" MATCH_RECOGNIZE (PATTERN (" + formatPattern(t.Pattern) + ") ...)")
		alias = t.Alias
	case *TableFunc:
		switch {
		case t.Lateral && t.Name == "UNNEST":
			b.WriteString("UNNEST(")
			writeList(b, t.Args)
			b.WriteString(")")
		case t.Lateral:
			b.WriteString("LATERAL TABLE(" + t.Name + "(")
			writeList(b, t.Args)
			b.WriteString("))")
		default:
			b.WriteString("TABLE(" + t.Name + "(")
			writeList(b, t.Args)
			b.WriteString("))")
		}
		alias = t.Alias
	}
	if alias != "" {
		b.WriteString(" AS " + quoteIdent(alias))
	}
	if tf, ok := t.(*TableFunc); ok && len(tf.Columns) > 0 {
		writeColumnList(b, tf.Columns)
	}
	if st, ok := t.(*SubqueryTable); ok && len(st.Columns) > 0 {
		writeColumnList(b, st.Columns)
	}
}

// writeColumnList writes "(a, b, c)", the names quoted where they must be.
func writeColumnList(b *strings.Builder, cols []string) {
	b.WriteByte('(')
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteIdent(c))
	}
	b.WriteByte(')')
}

// flagArg is argument i of c when it is a string literal: a clause of a
// SQL/JSON function (see jsonArgs).
func flagArg(c *Call, i int) (string, bool) {
	if i >= len(c.Args) {
		return "", false
	}
	l, ok := c.Args[i].(*Literal)
	if !ok || l.Kind != StringLit {
		return "", false
	}
	return l.Text, true
}

// writeIsJSON prints x IS [NOT] JSON [kind] (the kind only when not the
// default VALUE).
func writeIsJSON(b *strings.Builder, c *Call) bool {
	kind, ok := flagArg(c, 1)
	if (c.Name != "IS JSON" && c.Name != "IS NOT JSON") || len(c.Args) != 2 || !ok {
		return false
	}
	writeExpr(b, c.Args[0])
	b.WriteString(" " + c.Name)
	if kind != "VALUE" {
		b.WriteString(" " + kind)
	}
	return true
}

// writeJSONArgs prints the arguments and clauses of a SQL/JSON function in
// the layout jsonArgs gives them, leaving out the clauses that say the
// default; false when c is not such a call.
func writeJSONArgs(b *strings.Builder, c *Call) bool {
	if !jsonSyntax[c.Name] {
		return false
	}
	flags := func(idx ...int) ([]string, bool) {
		out := make([]string, len(idx))
		for i, j := range idx {
			f, ok := flagArg(c, j)
			if !ok {
				return nil, false
			}
			out[i] = f
		}
		return out, true
	}
	switch c.Name {
	case "JSON_EXISTS":
		f, ok := flags(2)
		if !ok || len(c.Args) != 3 {
			return false
		}
		writeList(b, c.Args[:2])
		if f[0] != "FALSE" {
			b.WriteString(" " + f[0] + " ON ERROR")
		}
	case "JSON_VALUE":
		if len(c.Args) != 7 {
			return false
		}
		f, ok := flags(3, 5)
		ret, isCast := c.Args[2].(*Cast)
		if !ok || !isCast {
			return false
		}
		writeList(b, c.Args[:2])
		if ret.Type.Kind != types.Varchar || ret.Type.Length != types.MaxLength {
			b.WriteString(" RETURNING " + ret.Type.String())
		}
		for i, when := range []string{"EMPTY", "ERROR"} {
			switch f[i] {
			case "NULL":
			case "DEFAULT":
				b.WriteString(" DEFAULT ")
				writeExpr(b, c.Args[4+2*i])
				b.WriteString(" ON " + when)
			default:
				b.WriteString(" " + f[i] + " ON " + when)
			}
		}
	case "JSON_QUERY":
		f, ok := flags(2, 3, 4)
		if !ok || len(c.Args) != 5 && len(c.Args) != 6 {
			return false
		}
		writeList(b, c.Args[:2])
		if len(c.Args) == 6 {
			ret, ok := c.Args[5].(*Cast)
			if !ok {
				return false
			}
			b.WriteString(" RETURNING " + ret.Type.String())
		}
		if f[0] != "WITHOUT ARRAY" {
			b.WriteString(" " + f[0] + " WRAPPER")
		}
		for i, when := range []string{"EMPTY", "ERROR"} {
			if f[i+1] != "NULL" {
				b.WriteString(" " + f[i+1] + " ON " + when)
			}
		}
	case "JSON_OBJECT", "JSON_OBJECTAGG", "JSON_ARRAY", "JSON_ARRAYAGG":
		f, ok := flags(0)
		object := c.Name == "JSON_OBJECT" || c.Name == "JSON_OBJECTAGG"
		if !ok || (object && len(c.Args)%2 != 1) {
			return false
		}
		rest := c.Args[1:]
		if object {
			for i := 0; i+1 < len(rest); i += 2 {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString("KEY ")
				writeExpr(b, rest[i])
				b.WriteString(" VALUE ")
				writeExpr(b, rest[i+1])
			}
		} else {
			writeList(b, rest)
		}
		if f[0] != jsonDefaultOnNull(c.Name) {
			if len(rest) > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(f[0] + " ON NULL")
		}
	}
	return true
}
