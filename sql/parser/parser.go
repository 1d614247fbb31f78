package parser

import (
	"strconv"
	"strings"

	"github.com/weirstream/weir/sql/types"
)

// Parse parses the `;`-separated statements of text. Empty statements are
// skipped. Errors are *Error with the line and column of the offending token.
func Parse(text string) ([]Stmt, error) {
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	var out []Stmt
	for {
		for p.isOp(";") {
			p.next()
		}
		if p.tok().kind == tEOF {
			return out, nil
		}
		s, err := p.statement()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		if p.tok().kind != tEOF && !p.isOp(";") {
			return nil, p.expected("\";\" or end of input")
		}
	}
}

// ParseExpr parses one scalar expression (for tests and option values).
func ParseExpr(text string) (Expr, error) {
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	var e Expr
	err = p.guard(func() {
		e = p.expr()
		if p.tok().kind != tEOF {
			p.fail("end of input")
		}
	})
	return e, err
}

// ParseType parses a SQL type ("DECIMAL(10, 2)", "STRING NOT NULL").
func ParseType(text string) (types.Type, error) {
	toks, err := lex(text)
	if err != nil {
		return types.Type{}, err
	}
	p := &parser{toks: toks}
	var t types.Type
	err = p.guard(func() {
		t = p.dataType()
		if p.tok().kind != tEOF {
			p.fail("end of the type")
		}
	})
	return t, err
}

func (p *parser) guard(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bail)
			if !ok {
				panic(r)
			}
			err = b.err
		}
	}()
	fn()
	return nil
}

type parser struct {
	toks  []token
	i     int
	depth int // how deep the descent is (MaxDepth)
	// overRefs are the OVER w references not yet resolved by their
	// SELECT's WINDOW clause
	overRefs []*Over
}

// MaxDepth bounds how deeply a statement nests: parentheses, calls,
// subqueries, NOT and signs, nested types each count one. A deeper
// statement is an error rather than a stack overflow of the recursive
// descent (a million parentheses ended the process); sql/expr bounds the
// compiled expression alike.
const MaxDepth = 10_000

// enter goes one level deeper, failing beyond MaxDepth; the caller defers
// leave.
func (p *parser) enter() {
	if p.depth++; p.depth > MaxDepth {
		panic(bail{Errorf(p.tok().pos, "the statement nests more than %d deep: split it", MaxDepth)})
	}
}

func (p *parser) leave() { p.depth-- }

// bail is panicked with a *Error and recovered by statement, so the
// recursive descent reads straight.
type bail struct{ err *Error }

func (p *parser) tok() token { return p.toks[p.i] }
func (p *parser) peek(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) next() token {
	t := p.toks[p.i]
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

func (p *parser) expected(what string) *Error {
	t := p.tok()
	return Errorf(t.pos, "expected %s, found %s", what, t.describe())
}

func (p *parser) fail(what string) { panic(bail{p.expected(what)}) }

// isKw reports whether the current token is the (unquoted) keyword kw.
func (p *parser) isKw(kw string) bool {
	t := p.tok()
	return t.kind == tIdent && strings.EqualFold(t.text, kw)
}
func (p *parser) isKwAt(n int, kw string) bool {
	t := p.peek(n)
	return t.kind == tIdent && strings.EqualFold(t.text, kw)
}
func (p *parser) isOp(op string) bool { t := p.tok(); return t.kind == tOp && t.text == op }

// acceptKwThen accepts kw followed by the words then, which must follow
// it: GROUP without BY is "expected BY", not an error further on.
func (p *parser) acceptKwThen(kw string, then ...string) bool {
	if !p.acceptKw(kw) {
		return false
	}
	p.wantKw(then...)
	return true
}

func (p *parser) acceptKw(kws ...string) bool {
	for i, kw := range kws {
		if !p.isKwAt(i, kw) {
			return false
		}
	}
	for range kws {
		p.next()
	}
	return true
}
func (p *parser) acceptOp(op string) bool {
	if p.isOp(op) {
		p.next()
		return true
	}
	return false
}
func (p *parser) wantKw(kws ...string) {
	for _, kw := range kws {
		if !p.acceptKw(kw) {
			p.fail(kw)
		}
	}
}
func (p *parser) wantOp(op string) {
	if !p.acceptOp(op) {
		p.fail(`"` + op + `"`)
	}
}

// reserved words cannot be bare identifiers or implicit aliases.
var reserved = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`ALL AND AS BETWEEN BY CASE CAST CREATE CROSS DESCRIBE DISTINCT DROP
		ELSE END EXCEPT EXISTS EXPLAIN FALSE FETCH FOR FROM FULL GROUP HAVING IN INNER INSERT INTERSECT
		INTERVAL IS JOIN LEFT LIKE LIMIT NATURAL NOT NULL ON OR ORDER OUTER OVER RIGHT SELECT SET
		SIMILAR TABLE THEN TRUE UNION USING VALUES WHEN WHERE WINDOW WITH ESCAPE MATCH_RECOGNIZE
		PARTITION ROWS RANGE LATERAL EXECUTE BEGIN OFFSET`) {
		reserved[w] = true
	}
}

func isReserved(s string) bool { return reserved[strings.ToUpper(s)] }

// flinkReserved are words Flink's parser (Calcite's, SQL:2003's reserved
// words) refuses as bare names that weir's grammar does not need as
// keywords: weir refuses them too, so that a file it accepts runs on
// Flink. Quoted (`user`) they are names like any other. These are the
// ones users meet as column names (Flink's documentation quotes `value`
// and `user` for that reason); more of Calcite's reserved words could
// follow.
var flinkReserved = map[string]bool{"USER": true, "CURRENT_USER": true, "SESSION_USER": true, "SYSTEM_USER": true, "VALUE": true}

// refuseFlinkReserved fails on t when it is a bare word that Flink
// reserves, with the way to write it.
func (p *parser) refuseFlinkReserved(t token) {
	if t.kind == tIdent && flinkReserved[strings.ToUpper(t.text)] {
		panic(bail{Errorf(t.pos, "'%s' is a reserved word in Flink SQL: write `%s` (back-quoted) to use it as a name, as Flink requires", t.text, t.text)})
	}
}

// ident reads an identifier (bare or back-quoted).
func (p *parser) ident(what string) (string, Pos) {
	t := p.tok()
	if t.kind == tQuotedIdent || (t.kind == tIdent && !isReserved(t.text)) {
		p.refuseFlinkReserved(t)
		p.next()
		return t.text, t.pos
	}
	p.fail(what)
	return "", Pos{}
}

// columnList reads "a, b, c)" after its "(": the column names of a view,
// a WITH query, a derived table's alias, a primary key, an INSERT, USING
// or DESCRIPTOR.
func (p *parser) columnList() []string {
	var cols []string
	for {
		c, _ := p.ident("a column name")
		cols = append(cols, c)
		if p.acceptOp(")") {
			return cols
		}
		p.wantOp(",")
	}
}

// qualifiedName reads a[.b[.c]] and joins the parts with dots: a
// column's name (WATERMARK FOR); objectName reads a table's.
func (p *parser) qualifiedName(what string) (string, Pos) {
	name, pos := p.ident(what)
	for p.isOp(".") && (p.peek(1).kind == tIdent || p.peek(1).kind == tQuotedIdent) {
		p.next()
		part, _ := p.ident(what)
		name += "." + part
	}
	return name, pos
}

func (p *parser) stringLit(what string) (string, Pos) {
	t := p.tok()
	if t.kind != tString {
		p.fail(what)
	}
	p.next()
	return t.text, t.pos
}

func (p *parser) statement() (s Stmt, err error) {
	err = p.guard(func() { s = p.stmt() })
	return s, err
}

func (p *parser) stmt() Stmt {
	t := p.tok()
	switch {
	case p.isKw("CREATE"):
		return p.create()
	case p.isKw("DROP"):
		return p.drop()
	case p.isKw("INSERT"):
		return p.insert()
	case p.isKw("SELECT"), p.isKw("WITH"), p.isKw("VALUES"), p.isOp("("):
		return &QueryStmt{Query: p.query()}
	case p.isKw("SHOW"):
		p.next()
		return p.show(t.pos)
	case p.isKw("USE"):
		p.next()
		return p.use(t.pos)
	case p.isKw("DESCRIBE"), p.isKw("DESC"):
		p.next()
		name, _ := p.objectName("a table name")
		return &Describe{Pos: t.pos, Name: name}
	case p.isKw("EXPLAIN"):
		p.next()
		for p.isKw("PLAN") || p.isKw("FOR") || p.isKw("CHANGELOG_MODE") || p.isKw("ESTIMATED_COST") || p.isKw("JSON_EXECUTION_PLAN") || (p.isOp(",") && p.i > 0) {
			p.next()
		}
		inner := p.stmt()
		switch inner.(type) {
		case *QueryStmt, *Insert, *StatementSet:
		default:
			panic(bail{Errorf(inner.StmtPos(), "EXPLAIN takes a query, an INSERT or a statement set")})
		}
		return &Explain{Pos: t.pos, Stmt: inner}
	case p.isKw("SET"):
		p.next()
		if p.tok().kind == tEOF || p.isOp(";") {
			return &Set{Pos: t.pos}
		}
		k, _ := p.stringLit("a quoted key ('key' = 'value')")
		p.wantOp("=")
		v, _ := p.stringLit("a quoted value ('key' = 'value')")
		return &Set{Pos: t.pos, Key: k, Value: v}
	case p.isKw("RESET"):
		p.next()
		r := &Reset{Pos: t.pos}
		if p.tok().kind == tString {
			r.Key, _ = p.stringLit("a quoted key")
		}
		return r
	case p.isKw("EXECUTE"):
		p.next()
		if p.acceptKw("STATEMENT", "SET") {
			p.wantKw("BEGIN")
			return p.statementSetBody(t.pos)
		}
		if p.isKw("INSERT") {
			return p.insert()
		}
		if p.isKw("SELECT") {
			return &QueryStmt{Query: p.query()}
		}
		p.fail("STATEMENT SET, INSERT or SELECT")
	case p.isKw("BEGIN"):
		p.next()
		p.wantKw("STATEMENT", "SET")
		p.acceptOp(";")
		return p.statementSetBody(t.pos)
	}
	p.fail("a statement (CREATE, DROP, INSERT, SELECT, SHOW, USE, DESCRIBE, EXPLAIN, SET, EXECUTE)")
	return nil
}

func (p *parser) statementSetBody(pos Pos) Stmt {
	ss := &StatementSet{Pos: pos}
	for {
		for p.acceptOp(";") {
		}
		if p.acceptKw("END") {
			return ss
		}
		if !p.isKw("INSERT") {
			p.fail("INSERT or END")
		}
		ss.Inserts = append(ss.Inserts, p.insert().(*Insert))
	}
}

func (p *parser) create() Stmt {
	pos := p.next().pos
	switch {
	case p.acceptKw("CATALOG"):
		return p.createCatalog(pos)
	case p.acceptKw("DATABASE"):
		return p.createDatabase(pos)
	}
	temporary := p.acceptKw("TEMPORARY")
	system := temporary && p.acceptKw("SYSTEM")
	if system && !p.isKw("FUNCTION") {
		p.fail("FUNCTION")
	}
	switch {
	case p.acceptKw("FUNCTION"):
		cf := &CreateFunction{Pos: pos, Temporary: temporary, System: system}
		cf.IfNotExists = p.acceptKw("IF", "NOT", "EXISTS")
		cf.Name, _ = p.objectName("a function name")
		p.wantKw("AS")
		cf.Identifier, cf.IdentPos = p.stringLit("the function's class name or module path, quoted")
		if p.acceptKw("LANGUAGE") {
			lang, _ := p.ident("a language (JAVA, SCALA, PYTHON, WASM)")
			cf.Language = strings.ToUpper(lang)
		}
		if p.acceptKw("USING") {
			for {
				p.wantKw("JAR")
				path, _ := p.stringLit("a quoted path")
				cf.Using = append(cf.Using, path)
				if !p.acceptOp(",") {
					break
				}
			}
		}
		return cf
	case p.acceptKw("TABLE"):
		ct := &CreateTable{Pos: pos, Temporary: temporary}
		ct.IfNotExists = p.acceptKw("IF", "NOT", "EXISTS")
		ct.Name, _ = p.objectName("a table name")
		parens := p.acceptOp("(")
		for parens {
			p.tableElement(ct)
			if p.acceptOp(")") {
				break
			}
			p.wantOp(",")
		}
		if p.acceptKw("COMMENT") {
			ct.Comment, _ = p.stringLit("a comment string")
		}
		if p.acceptKw("PARTITIONED", "BY") {
			p.wantOp("(")
			for {
				name, _ := p.ident("a column name")
				ct.PartitionedBy = append(ct.PartitionedBy, name)
				if p.acceptOp(")") {
					break
				}
				p.wantOp(",")
			}
		}
		if p.acceptKw("WITH") {
			ct.Options = p.options()
		}
		if lt := p.tok(); p.acceptKw("LIKE") {
			ct.Like = &TableLike{Pos: lt.pos}
			ct.Like.Name, _ = p.objectName("the name of the table to copy")
			if p.acceptOp("(") {
				for {
					ot := p.tok()
					var mode string
					switch {
					case p.acceptKw("INCLUDING"):
						mode = "INCLUDING"
					case p.acceptKw("EXCLUDING"):
						mode = "EXCLUDING"
					case p.acceptKw("OVERWRITING"):
						mode = "OVERWRITING"
					default:
						p.fail("INCLUDING, EXCLUDING or OVERWRITING")
					}
					wt := p.tok()
					if wt.kind != tIdent {
						p.fail("ALL, CONSTRAINTS, GENERATED, OPTIONS, WATERMARKS, PARTITIONS or METADATA")
					}
					p.next()
					ct.Like.Options = append(ct.Like.Options, LikeOption{Pos: ot.pos, Mode: mode, What: strings.ToUpper(wt.text)})
					if p.acceptOp(")") {
						break
					}
					p.wantOp(",")
				}
			}
		}
		if p.acceptKw("AS") {
			ct.AsQuery = p.query()
		}
		if !parens && ct.Like == nil && ct.AsQuery == nil {
			p.fail(`"(", LIKE or AS`)
		}
		return ct
	case p.acceptKw("VIEW"):
		cv := &CreateView{Pos: pos, Temporary: temporary}
		cv.IfNotExists = p.acceptKw("IF", "NOT", "EXISTS")
		cv.Name, _ = p.objectName("a view name")
		if p.acceptOp("(") {
			cv.Columns = p.columnList()
		}
		p.wantKw("AS")
		cv.Query = p.query()
		return cv
	}
	if temporary {
		p.fail("TABLE, VIEW or FUNCTION")
	}
	p.fail("TABLE, VIEW, FUNCTION, CATALOG or DATABASE")
	return nil
}

func (p *parser) options() []Option {
	p.wantOp("(")
	var out []Option
	if p.acceptOp(")") {
		return out
	}
	for {
		k, pos := p.stringLit("a quoted option key")
		p.wantOp("=")
		v, _ := p.stringLit("a quoted option value")
		out = append(out, Option{Pos: pos, Key: k, Value: v})
		if p.acceptOp(")") {
			return out
		}
		p.wantOp(",")
	}
}

func (p *parser) tableElement(ct *CreateTable) {
	t := p.tok()
	switch {
	case p.isKw("WATERMARK"):
		p.next()
		p.wantKw("FOR")
		col, _ := p.qualifiedName("a column name")
		p.wantKw("AS")
		ct.Watermark = &Watermark{Pos: t.pos, Column: col, Expr: p.expr()}
		return
	case p.isKw("PRIMARY"), p.isKw("CONSTRAINT"):
		if p.acceptKw("CONSTRAINT") {
			p.ident("a constraint name")
		}
		p.wantKw("PRIMARY", "KEY")
		p.wantOp("(")
		ct.PrimaryKey = p.columnList()
		p.wantKw("NOT", "ENFORCED")
		return
	}
	name, pos := p.ident("a column name, WATERMARK or PRIMARY KEY")
	col := ColumnDef{Pos: pos, Name: name}
	if p.acceptKw("AS") {
		col.Computed = p.expr()
	} else {
		col.Type = p.dataType()
		if p.acceptKw("PRIMARY", "KEY") {
			p.wantKw("NOT", "ENFORCED")
			ct.PrimaryKey = []string{name}
		}
		if p.acceptKw("METADATA") {
			col.Metadata = name
			if p.acceptKw("FROM") {
				col.Metadata, _ = p.stringLit("a metadata key")
			}
			col.Virtual = p.acceptKw("VIRTUAL")
		}
	}
	if p.acceptKw("COMMENT") {
		col.Comment, _ = p.stringLit("a comment string")
	}
	ct.Columns = append(ct.Columns, col)
}

// dataType reads a type: Flink's names, ROW<...>/ROW(...), ARRAY<...>,
// MAP<...>, `T ARRAY`, and NOT NULL / NULL.
func (p *parser) dataType() types.Type {
	p.enter()
	defer p.leave()
	t := p.tok()
	if t.kind != tIdent {
		p.fail("a data type")
	}
	p.next()
	name := strings.ToUpper(t.text)
	var ty types.Type
	intArg := func(def int) int {
		if !p.acceptOp("(") {
			return def
		}
		n := p.intLit("a length or precision")
		p.wantOp(")")
		return n
	}
	switch name {
	case "BOOLEAN", "BOOL":
		ty.Kind = types.Boolean
	case "TINYINT":
		ty.Kind = types.TinyInt
	case "SMALLINT":
		ty.Kind = types.SmallInt
	case "INT", "INTEGER":
		ty.Kind = types.Int
	case "BIGINT":
		ty.Kind = types.BigInt
	case "FLOAT", "REAL":
		ty.Kind = types.Float
	case "DOUBLE":
		p.acceptKw("PRECISION")
		ty.Kind = types.Double
	case "DECIMAL", "DEC", "NUMERIC":
		ty = types.DecimalType(10, 0)
		if p.acceptOp("(") {
			ty.Precision = p.intLit("a precision")
			if p.acceptOp(",") {
				ty.Scale = p.intLit("a scale")
			}
			p.wantOp(")")
		}
		if ty.Precision < 1 || ty.Precision > 38 || ty.Scale < 0 || ty.Scale > ty.Precision {
			panic(bail{Errorf(t.pos, "DECIMAL(%d, %d): precision must be 1..38 and scale 0..precision", ty.Precision, ty.Scale)})
		}
	case "CHAR", "CHARACTER":
		if p.acceptKw("VARYING") {
			ty = types.Type{Kind: types.Varchar, Length: intArg(types.MaxLength)}
		} else {
			ty = types.Type{Kind: types.Char, Length: intArg(1)}
		}
	case "VARCHAR":
		ty = types.Type{Kind: types.Varchar, Length: intArg(types.MaxLength)}
	case "STRING":
		ty = types.StringType
	case "BINARY":
		ty = types.Type{Kind: types.Binary, Length: intArg(1)}
	case "VARBINARY":
		ty = types.Type{Kind: types.Varbinary, Length: intArg(types.MaxLength)}
	case "BYTES":
		ty = types.BytesType
	case "DATE":
		ty.Kind = types.Date
	case "TIME":
		ty = types.Type{Kind: types.Time, Precision: intArg(0)}
		p.acceptKw("WITHOUT", "TIME", "ZONE")
	case "TIMESTAMP":
		ty = types.Type{Kind: types.Timestamp, Precision: intArg(6)}
		if p.acceptKw("WITH", "LOCAL", "TIME", "ZONE") {
			ty.Kind = types.TimestampLTZ
		} else {
			p.acceptKw("WITHOUT", "TIME", "ZONE")
		}
	case "TIMESTAMP_LTZ":
		ty = types.Type{Kind: types.TimestampLTZ, Precision: intArg(6)}
	case "ARRAY", "MULTISET":
		p.wantOp("<")
		elem := p.dataType()
		p.wantOp(">")
		ty = types.ArrayOf(elem)
		if name == "MULTISET" {
			ty.Kind = types.Multiset
		}
	case "MAP":
		p.wantOp("<")
		k := p.dataType()
		p.wantOp(",")
		v := p.dataType()
		p.wantOp(">")
		ty = types.MapOf(k, v)
	case "ROW":
		closing := ">"
		if p.acceptOp("(") {
			closing = ")"
		} else {
			p.wantOp("<")
		}
		ty = types.RowOf()
		if !p.acceptOp(closing) {
			for {
				fname, _ := p.ident("a field name")
				f := types.Field{Name: fname, Type: p.dataType()}
				if p.tok().kind == tString {
					f.Description, _ = p.stringLit("a description")
				}
				ty.Fields = append(ty.Fields, f)
				if p.acceptOp(closing) {
					break
				}
				p.wantOp(",")
			}
		}
	case "INTERVAL":
		ty.Kind = types.Interval
		u := strings.ToUpper(p.next().text)
		ty.Months = u == "YEAR" || u == "MONTH"
		if p.acceptKw("TO") {
			p.next()
		}
	default:
		panic(bail{Errorf(t.pos, "expected a data type, found %s", t.describe())})
	}
	for {
		switch {
		case p.acceptKw("NOT", "NULL"):
			ty.NotNull = true
			continue
		case p.isKw("NULL"):
			p.next()
			continue
		case p.isKw("ARRAY"):
			p.next()
			ty = types.ArrayOf(ty)
			continue
		case p.isKw("MULTISET"):
			p.next()
			ty = types.ArrayOf(ty)
			ty.Kind = types.Multiset
			continue
		}
		return ty
	}
}

// The '<' and '>' of ROW<...> are lexed as operators; '>>' never occurs
// since the lexer has no such operator.

func (p *parser) intLit(what string) int {
	t := p.tok()
	if t.kind != tNumber {
		p.fail(what)
	}
	n, err := strconv.Atoi(t.text)
	if err != nil {
		p.fail(what)
	}
	p.next()
	return n
}

func (p *parser) drop() Stmt {
	pos := p.next().pos
	if s, ok := p.dropCatalogOrDatabase(pos); ok {
		return s
	}
	d := &Drop{Pos: pos}
	d.Temporary = p.acceptKw("TEMPORARY")
	d.System = d.Temporary && p.acceptKw("SYSTEM")
	switch {
	case !d.System && p.acceptKw("TABLE"):
	case !d.System && p.acceptKw("VIEW"):
		d.View = true
	case p.acceptKw("FUNCTION"):
		d.Function = true
	case d.System:
		p.fail("FUNCTION")
	case d.Temporary:
		p.fail("TABLE, VIEW or FUNCTION")
	default:
		p.fail("TABLE, VIEW, FUNCTION, CATALOG or DATABASE")
	}
	d.IfExists = p.acceptKw("IF", "EXISTS")
	d.Name, _ = p.objectName("a name")
	return d
}

func (p *parser) insert() Stmt {
	pos := p.next().pos
	ins := &Insert{Pos: pos}
	switch {
	case p.acceptKw("INTO"):
	case p.acceptKw("OVERWRITE"):
		ins.Overwrite = true
	default:
		p.fail("INTO or OVERWRITE")
	}
	ins.TablePos = p.tok().pos
	ins.Table, _ = p.objectName("a table name")
	if p.isOp("(") && !(p.isKwAt(1, "SELECT") || p.isKwAt(1, "WITH") || p.isKwAt(1, "VALUES")) {
		p.next()
		ins.Columns = p.columnList()
	}
	ins.Query = p.query()
	return ins
}

// query: set operations over query terms, then ORDER BY / LIMIT.
func (p *parser) query() Query {
	p.enter()
	defer p.leave()
	if p.isKw("WITH") {
		w := &With{Pos: p.next().pos}
		for {
			name, _ := p.ident("a name for the WITH query")
			var cols []string
			if p.acceptOp("(") {
				cols = p.columnList()
			}
			p.wantKw("AS")
			p.wantOp("(")
			q := p.query()
			p.wantOp(")")
			w.Names, w.Columns, w.Queries = append(w.Names, name), append(w.Columns, cols), append(w.Queries, q)
			if !p.acceptOp(",") {
				break
			}
		}
		w.Body = p.query()
		return w
	}
	q := p.queryTerm()
	for p.isKw("UNION") || p.isKw("EXCEPT") || p.isKw("INTERSECT") || p.isKw("MINUS") {
		t := p.next()
		op := strings.ToUpper(t.text)
		if op == "MINUS" {
			op = "EXCEPT"
		}
		all := p.acceptKw("ALL")
		if !all {
			p.acceptKw("DISTINCT")
		}
		q = &SetOp{Pos: t.pos, Op: op, All: all, Left: q, Right: p.queryTerm()}
	}
	if p.isKw("ORDER") || p.isKw("LIMIT") {
		s, ok := q.(*Select)
		if !ok {
			s = &Select{Pos: q.QueryPos(), Items: []SelectItem{{Star: true}}, From: &SubqueryTable{Pos: q.QueryPos(), Query: q}}
			q = s
		}
		if p.acceptKwThen("ORDER", "BY") {
			s.OrderBy = p.orderItems()
		}
		if p.acceptKw("LIMIT") {
			s.Limit = p.expr()
		}
	}
	return q
}

func (p *parser) queryTerm() Query {
	t := p.tok()
	switch {
	case p.isOp("("):
		p.next()
		q := p.query()
		p.wantOp(")")
		return q
	case p.acceptKw("VALUES"):
		v := &Values{Pos: t.pos}
		for {
			p.acceptKw("ROW")
			p.wantOp("(")
			var row []Expr
			for {
				row = append(row, p.expr())
				if p.acceptOp(")") {
					break
				}
				p.wantOp(",")
			}
			v.Rows = append(v.Rows, row)
			if !p.acceptOp(",") {
				return v
			}
		}
	case p.isKw("SELECT"):
		return p.selectBlock()
	}
	p.fail("SELECT, VALUES or \"(\"")
	return nil
}

func (p *parser) selectBlock() *Select {
	refs := len(p.overRefs)
	s := p.selectBlock1()
	// OVER w: the window of this SELECT's WINDOW w AS (...)
	named := map[string]*Over{}
	if p.acceptKw("WINDOW") {
		for {
			name, pos := p.ident("a window name")
			p.wantKw("AS")
			o := p.over(pos)
			if o.Ref != "" {
				p.fail(`"(" (a window defined by another name is not supported)`)
			}
			if _, dup := named[strings.ToLower(name)]; dup {
				panic(bail{Errorf(pos, "window '%s' is defined twice", name)})
			}
			named[strings.ToLower(name)] = o
			if !p.acceptOp(",") {
				break
			}
		}
	}
	for _, o := range p.overRefs[refs:] {
		w, ok := named[strings.ToLower(o.Ref)]
		if !ok {
			panic(bail{Errorf(o.Pos, "window '%s' is not defined (WINDOW %s AS (...) after the SELECT's HAVING)", o.Ref, o.Ref)})
		}
		pos := o.Pos
		*o = *w
		o.Pos = pos
	}
	p.overRefs = p.overRefs[:refs]
	return s
}

func (p *parser) selectBlock1() *Select {
	s := &Select{Pos: p.next().pos}
	if p.acceptKw("DISTINCT") {
		s.Distinct = true
	} else {
		p.acceptKw("ALL")
	}
	for {
		s.Items = append(s.Items, p.selectItem())
		if !p.acceptOp(",") {
			break
		}
	}
	if p.acceptKw("FROM") {
		s.From = p.fromList()
	}
	if p.acceptKw("WHERE") {
		s.Where = p.expr()
	}
	if p.acceptKwThen("GROUP", "BY") {
		for {
			s.GroupBy = append(s.GroupBy, p.groupItem())
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if p.acceptKw("HAVING") {
		s.Having = p.expr()
	}
	return s
}

func (p *parser) selectItem() SelectItem {
	t := p.tok()
	if p.acceptOp("*") {
		return SelectItem{Pos: t.pos, Star: true}
	}
	// t.*, or t.r.* (or r.*) for the fields of a ROW column r
	n := 0
	for {
		if k := p.peek(n); k.kind != tIdent && k.kind != tQuotedIdent {
			break
		}
		if dot := p.peek(n + 1); dot.kind != tOp || dot.text != "." {
			break
		}
		if star := p.peek(n + 2); star.kind == tOp && star.text == "*" {
			it := SelectItem{Pos: t.pos, Star: true, StarOf: t.text}
			for i := 1; i <= n; i += 2 {
				it.StarField = append(it.StarField, p.peek(i+1).text)
			}
			for range n + 3 {
				p.next()
			}
			return it
		}
		n += 2
	}
	it := SelectItem{Pos: t.pos, Expr: p.expr()}
	if p.acceptKw("AS") {
		it.AliasPos = p.tok().pos
		it.Alias, _ = p.ident("an alias")
	} else if p.tok().kind == tQuotedIdent || (p.tok().kind == tIdent && !isReserved(p.tok().text)) {
		it.AliasPos = p.tok().pos
		it.Alias, _ = p.ident("an alias")
	}
	return it
}

func (p *parser) fromList() TableExpr {
	left := p.joinedTable()
	for p.isOp(",") {
		t := p.next()
		left = &Join{Pos: t.pos, Kind: CrossJoin, Left: left, Right: p.joinedTable()}
	}
	return left
}

func (p *parser) joinedTable() TableExpr {
	left := p.matchRecognize(p.tablePrimary())
	for {
		t := p.tok()
		kind := InnerJoin
		switch {
		case p.acceptKw("JOIN"), p.acceptKw("INNER", "JOIN"):
		case p.acceptKw("LEFT", "OUTER", "JOIN"), p.acceptKw("LEFT", "JOIN"):
			kind = LeftJoin
		case p.acceptKw("RIGHT", "OUTER", "JOIN"), p.acceptKw("RIGHT", "JOIN"):
			kind = RightJoin
		case p.acceptKw("FULL", "OUTER", "JOIN"), p.acceptKw("FULL", "JOIN"):
			kind = FullJoin
		case p.acceptKw("CROSS", "JOIN"):
			kind = CrossJoin
		default:
			return left
		}
		j := &Join{Pos: t.pos, Kind: kind, Left: left, Right: p.matchRecognize(p.tablePrimary())}
		if kind != CrossJoin {
			if p.acceptKw("ON") {
				j.On = p.expr()
			} else if p.acceptKw("USING") {
				p.wantOp("(")
				j.Using = p.columnList()
			} else {
				p.fail("ON or USING")
			}
		}
		left = j
	}
}

func (p *parser) alias() string {
	if p.acceptKw("AS") {
		a, _ := p.ident("an alias")
		return a
	}
	if p.tok().kind == tQuotedIdent || (p.tok().kind == tIdent && !isReserved(p.tok().text)) {
		a, _ := p.ident("an alias")
		return a
	}
	return ""
}

func (p *parser) tablePrimary() TableExpr {
	t := p.tok()
	switch {
	case p.isOp("("):
		p.next()
		if p.isKw("SELECT") || p.isKw("VALUES") || p.isKw("WITH") || p.isOp("(") {
			q := p.query()
			p.wantOp(")")
			st := &SubqueryTable{Pos: t.pos, Query: q, Alias: p.alias()}
			if st.Alias != "" && p.acceptOp("(") {
				// (VALUES ...) AS t(a, b): the alias names the columns
				st.Columns = p.columnList()
			}
			return st
		}
		te := p.fromList()
		p.wantOp(")")
		return te
	case p.isKw("LATERAL"):
		// LATERAL TABLE(f(args)) [AS] t[(a, b)]: a table function per row
		p.next()
		p.wantKw("TABLE")
		p.wantOp("(")
		ft := p.tok()
		name, _ := p.ident("a table function name")
		tf := &TableFunc{Pos: ft.pos, Name: strings.ToUpper(name), Lateral: true}
		p.wantOp("(")
		if !p.acceptOp(")") {
			for {
				tf.Args = append(tf.Args, p.expr())
				if p.acceptOp(")") {
					break
				}
				p.wantOp(",")
			}
		}
		p.wantOp(")")
		p.tableFuncAlias(tf)
		return tf
	case p.isKw("UNNEST") && p.peek(1).kind == tOp && p.peek(1).text == "(":
		// UNNEST(array or map) [AS] t[(a, b)]: its elements as rows
		p.next()
		p.next()
		tf := &TableFunc{Pos: t.pos, Name: "UNNEST", Lateral: true, Args: []Expr{p.expr()}}
		p.wantOp(")")
		p.tableFuncAlias(tf)
		return tf
	case p.isKw("TABLE") && p.peek(1).kind == tOp && p.peek(1).text == "(":
		p.next()
		p.next()
		ft := p.tok()
		name, _ := p.ident("a table function name")
		p.wantOp("(")
		tf := &TableFunc{Pos: ft.pos, Name: strings.ToUpper(name)}
		if !p.acceptOp(")") {
			for {
				tf.Args = append(tf.Args, p.tvfArg())
				if p.acceptOp(")") {
					break
				}
				p.wantOp(",")
			}
		}
		p.wantOp(")")
		tf.Alias = p.alias()
		return tf
	}
	name, pos := p.objectName("a table name, \"(\" or TABLE(...)")
	ref := &TableRef{Pos: pos, Name: name}
	if p.isOp("/") && p.peek(1).kind == tOp && p.peek(1).text == "*" {
		// hints are dropped by the lexer as comments; nothing to do
	}
	if p.acceptKw("FOR", "SYSTEM_TIME", "AS", "OF") {
		ref.AsOf = p.expr()
	}
	ref.Alias = p.alias()
	return ref
}

// tableFuncAlias reads a lateral table function's [AS] t [(a, b)].
func (p *parser) tableFuncAlias(tf *TableFunc) {
	tf.Alias = p.alias()
	if tf.Alias != "" && p.acceptOp("(") {
		tf.Columns = p.columnList()
	}
}

func (p *parser) tvfArg() Expr {
	t := p.tok()
	if (t.kind == tIdent || t.kind == tQuotedIdent) && p.peek(1).kind == tOp && p.peek(1).text == "=>" {
		p.next()
		p.next()
		return &NamedArg{Pos: t.pos, Name: strings.ToUpper(t.text), X: p.tvfArg()}
	}
	if p.acceptKw("TABLE") {
		if p.isOp("(") {
			p.next()
			q := p.query()
			p.wantOp(")")
			return &TableArg{Pos: t.pos, Table: &SubqueryTable{Pos: t.pos, Query: q}}
		}
		name, pos := p.objectName("a table name")
		return &TableArg{Pos: t.pos, Table: &TableRef{Pos: pos, Name: name}}
	}
	if p.isKw("DESCRIPTOR") {
		p.next()
		d := &Descriptor{Pos: t.pos}
		p.wantOp("(")
		d.Cols = p.columnList()
		return d
	}
	return p.expr()
}

func (p *parser) orderItems() []OrderItem {
	var out []OrderItem
	for {
		it := OrderItem{Expr: p.expr()}
		if p.acceptKw("DESC") {
			it.Desc = true
		} else {
			p.acceptKw("ASC")
		}
		if p.acceptKw("NULLS", "FIRST") {
			b := true
			it.NullsFirst = &b
		} else if p.acceptKw("NULLS", "LAST") {
			b := false
			it.NullsFirst = &b
		}
		out = append(out, it)
		if !p.acceptOp(",") {
			return out
		}
	}
}
